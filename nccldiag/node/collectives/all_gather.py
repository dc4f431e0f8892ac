"""all_gather, list form: rank j's chunk lands in slot j of every rank's list.

The list holds views of one contiguous buffer, filled with a sentinel so a
slot nobody wrote is counted wrong. busbw = algbw * (n-1)/n
(nccl-tests src/all_gather.cu).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .base import Buffers, Collective, Ctx, filled, pattern, ring_fraction, zeros


class AllGather(Collective):
    name = "all_gather"
    chunked = True

    def bus_factor(self, world: int) -> float:
        return ring_fraction(world)

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        inp = pattern(ctx.rank, 0, count, ctx.device) if data else zeros(count, ctx.device)
        out = filled(count * ctx.world, ctx.device)
        slots = list(out.split(count))
        return Buffers(
            call=lambda: dist.all_gather(slots, inp),
            output=out,
            expected=lambda: torch.cat([pattern(r, 0, count, ctx.device) for r in range(ctx.world)]),
        )


COLLECTIVE = AllGather()
