"""all_to_all, list form: chunk j of rank r's input lands in slot r of rank j.

busbw = algbw * (n-1)/n (nccl-tests src/alltoall.cu).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .base import Buffers, Collective, Ctx, filled, pattern, ring_fraction, zeros


class AllToAll(Collective):
    name = "all_to_all"
    chunked = True

    def bus_factor(self, world: int) -> float:
        return ring_fraction(world)

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        n = count * ctx.world
        inp = pattern(ctx.rank, 0, n, ctx.device) if data else zeros(n, ctx.device)
        out = filled(n, ctx.device)
        ins, outs = list(inp.split(count)), list(out.split(count))
        return Buffers(
            call=lambda: dist.all_to_all(outs, ins),
            output=out,
            expected=lambda: torch.cat(
                [pattern(r, ctx.rank * count, count, ctx.device) for r in range(ctx.world)]
            ),
        )


COLLECTIVE = AllToAll()
