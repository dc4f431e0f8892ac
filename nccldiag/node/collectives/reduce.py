"""reduce (sum) to rank 0: the root ends with the sum; other ranks verify nothing.

busbw = algbw (nccl-tests src/reduce.cu). torch reduces in place.
"""
from __future__ import annotations

import torch.distributed as dist

from .base import Buffers, Collective, Ctx, pattern, pattern_sum, zeros


class Reduce(Collective):
    name = "reduce"
    redop = "sum"
    root = 0

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        buf = pattern(ctx.rank, 0, count, ctx.device) if data else zeros(count, ctx.device)
        is_root = ctx.rank == self.root
        return Buffers(
            call=lambda: dist.reduce(buf, dst=self.root, op=dist.ReduceOp.SUM),
            output=buf if is_root else None,
            expected=(lambda: pattern_sum(ctx.world, 0, count, ctx.device)) if is_root else None,
        )


COLLECTIVE = Reduce()
