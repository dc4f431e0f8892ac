"""reduce_scatter_tensor (sum): rank j ends with the sum over ranks of elements j*count..

busbw = algbw * (n-1)/n (nccl-tests src/reduce_scatter.cu).
"""
from __future__ import annotations

import torch.distributed as dist

from .base import Buffers, Collective, Ctx, filled, pattern, pattern_sum, ring_fraction, zeros

# Newer torch renamed it reduce_scatter_single (same arguments) and warns on the old name.
_call = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


class ReduceScatterTensor(Collective):
    name = "reduce_scatter_tensor"
    redop = "sum"
    chunked = True

    def bus_factor(self, world: int) -> float:
        return ring_fraction(world)

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        n = count * ctx.world
        inp = pattern(ctx.rank, 0, n, ctx.device) if data else zeros(n, ctx.device)
        out = filled(count, ctx.device)
        return Buffers(
            call=lambda: _call(out, inp, op=dist.ReduceOp.SUM),
            output=out,
            expected=lambda: pattern_sum(ctx.world, ctx.rank * count, count, ctx.device),
        )


COLLECTIVE = ReduceScatterTensor()
