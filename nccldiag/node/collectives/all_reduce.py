"""all_reduce (sum): every rank ends with the sum of all ranks' data.

busbw = algbw * 2(n-1)/n (nccl-tests src/all_reduce.cu). torch's all_reduce
is in place, so the input buffer is also the output.
"""
from __future__ import annotations

import torch.distributed as dist

from .base import Buffers, Collective, Ctx, pattern, pattern_sum, zeros


class AllReduce(Collective):
    name = "all_reduce"
    redop = "sum"

    def bus_factor(self, world: int) -> float:
        return 2.0 * (world - 1) / world

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        buf = pattern(ctx.rank, 0, count, ctx.device) if data else zeros(count, ctx.device)
        return Buffers(
            call=lambda: dist.all_reduce(buf, op=dist.ReduceOp.SUM),
            output=buf,
            expected=lambda: pattern_sum(ctx.world, 0, count, ctx.device),
        )


COLLECTIVE = AllReduce()
