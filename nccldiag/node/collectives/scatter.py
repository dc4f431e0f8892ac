"""scatter from rank 0: slot j of the root's list lands on rank j.

The root fills slot j with rank j's pattern, so a chunk delivered to the
wrong rank is counted wrong. busbw = algbw * (n-1)/n (nccl-tests src/scatter.cu).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .base import Buffers, Collective, Ctx, filled, pattern, ring_fraction, zeros


class Scatter(Collective):
    name = "scatter"
    chunked = True
    root = 0

    def bus_factor(self, world: int) -> float:
        return ring_fraction(world)

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        slots = None
        if ctx.rank == self.root:
            src = (torch.cat([pattern(r, 0, count, ctx.device) for r in range(ctx.world)])
                   if data else zeros(count * ctx.world, ctx.device))
            slots = list(src.split(count))
        out = filled(count, ctx.device)
        return Buffers(
            call=lambda: dist.scatter(out, scatter_list=slots, src=self.root),
            output=out,
            expected=lambda: pattern(ctx.rank, 0, count, ctx.device),
        )


COLLECTIVE = Scatter()
