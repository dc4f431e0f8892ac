"""broadcast from rank 0: every rank ends with rank 0's data.

Non-roots start with their own (different) data, so a rank that received
nothing shows mismatches. busbw = algbw (nccl-tests src/broadcast.cu).
"""
from __future__ import annotations

import torch.distributed as dist

from .base import Buffers, Collective, Ctx, pattern, zeros


class Broadcast(Collective):
    name = "broadcast"
    root = 0

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        buf = pattern(ctx.rank, 0, count, ctx.device) if data else zeros(count, ctx.device)
        return Buffers(
            call=lambda: dist.broadcast(buf, src=self.root),
            output=buf,
            expected=lambda: pattern(self.root, 0, count, ctx.device),
        )


COLLECTIVE = Broadcast()
