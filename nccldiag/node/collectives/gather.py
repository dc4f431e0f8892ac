"""gather to rank 0: rank j's chunk lands in slot j of the root's list.

Only the root verifies. busbw = algbw * (n-1)/n (nccl-tests src/gather.cu).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .base import Buffers, Collective, Ctx, filled, pattern, ring_fraction, zeros


class Gather(Collective):
    name = "gather"
    chunked = True
    root = 0

    def bus_factor(self, world: int) -> float:
        return ring_fraction(world)

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        inp = pattern(ctx.rank, 0, count, ctx.device) if data else zeros(count, ctx.device)
        is_root = ctx.rank == self.root
        out = filled(count * ctx.world, ctx.device) if is_root else None
        slots = list(out.split(count)) if out is not None else None
        return Buffers(
            call=lambda: dist.gather(inp, gather_list=slots, dst=self.root),
            output=out,
            expected=(lambda: torch.cat([pattern(r, 0, count, ctx.device) for r in range(ctx.world)]))
            if is_root else None,
        )


COLLECTIVE = Gather()
