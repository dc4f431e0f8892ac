"""sendrecv on a ring: every rank sends to rank+1 and receives from rank-1.

As in nccl-tests src/sendrecv.cu, busbw = algbw. Both directions are posted
together (batch_isend_irecv) so that no rank blocks in a send its peer has
not yet matched. Needs two ranks: a rank does not send to itself.
"""
from __future__ import annotations

import torch.distributed as dist

from .base import Buffers, Collective, Ctx, filled, pattern, zeros


class SendRecv(Collective):
    name = "sendrecv"
    min_world = 2

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        peer_to = (ctx.rank + 1) % ctx.world
        peer_from = (ctx.rank - 1) % ctx.world
        inp = pattern(ctx.rank, 0, count, ctx.device) if data else zeros(count, ctx.device)
        out = filled(count, ctx.device)

        def call() -> None:
            ops = [dist.P2POp(dist.isend, inp, peer_to), dist.P2POp(dist.irecv, out, peer_from)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()

        return Buffers(call=call, output=out, expected=lambda: pattern(peer_from, 0, count, ctx.device))


COLLECTIVE = SendRecv()
