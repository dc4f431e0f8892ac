"""barrier: no data; the check is that every rank gets through, the sweep its latency.

With NCCL the barrier is an all_reduce on this rank's GPU, named explicitly
so torch does not have to guess the device.
"""
from __future__ import annotations

import torch.distributed as dist

from .base import Buffers, Collective, Ctx


class Barrier(Collective):
    name = "barrier"
    sized = False

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        if ctx.backend == "nccl":
            return Buffers(call=lambda: dist.barrier(device_ids=[ctx.local_rank]))
        return Buffers(call=lambda: dist.barrier())


COLLECTIVE = Barrier()
