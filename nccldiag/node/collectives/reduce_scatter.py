"""reduce_scatter (sum), list form: rank j ends with the sum over ranks of chunk j.

busbw = algbw * (n-1)/n (nccl-tests src/reduce_scatter.cu).
"""
from __future__ import annotations

import torch.distributed as dist

from .base import Buffers, Collective, Ctx, filled, pattern, pattern_sum, ring_fraction, zeros


class ReduceScatter(Collective):
    name = "reduce_scatter"
    redop = "sum"
    chunked = True

    def bus_factor(self, world: int) -> float:
        return ring_fraction(world)

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        n = count * ctx.world
        inp = pattern(ctx.rank, 0, n, ctx.device) if data else zeros(n, ctx.device)
        chunks = list(inp.split(count))
        out = filled(count, ctx.device)
        return Buffers(
            call=lambda: dist.reduce_scatter(out, chunks, op=dist.ReduceOp.SUM),
            output=out,
            expected=lambda: pattern_sum(ctx.world, ctx.rank * count, count, ctx.device),
        )


COLLECTIVE = ReduceScatter()
