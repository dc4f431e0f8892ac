"""all_gather_into_tensor: rank j's chunk lands at offset j*count of one tensor.

busbw = algbw * (n-1)/n (nccl-tests src/all_gather.cu).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .base import Buffers, Collective, Ctx, filled, pattern, ring_fraction, zeros

# Newer torch renamed it all_gather_single (same arguments) and warns on the old name.
_call = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


class AllGatherIntoTensor(Collective):
    name = "all_gather_into_tensor"
    chunked = True

    def bus_factor(self, world: int) -> float:
        return ring_fraction(world)

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        inp = pattern(ctx.rank, 0, count, ctx.device) if data else zeros(count, ctx.device)
        out = filled(count * ctx.world, ctx.device)
        return Buffers(
            call=lambda: _call(out, inp),
            output=out,
            expected=lambda: torch.cat([pattern(r, 0, count, ctx.device) for r in range(ctx.world)]),
        )


COLLECTIVE = AllGatherIntoTensor()
