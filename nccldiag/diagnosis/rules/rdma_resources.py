"""RDMA resources exhausted: NCCL's verbs calls that pin memory or create queues (ibv_reg_mr, ibv_reg_dmabuf_mr,
ibv_create_qp, ibv_create_cq) fail, most often with ENOMEM ('Cannot allocate memory'), while the locked-memory limit
is already unlimited where the processes ran. The limit is then not the cause (rule ``memlock``, which this one
explains): what ran out is what the HCA and its driver can give (queue pairs, completion queues, memory
translation entries), asked for by many connections (all-to-all at scale opens channels to every peer) and large
buffers (NCCL_BUFFSIZE, a framework's large registration, GPUDirect RDMA registering GPU memory).

Evidence: the ibv failures the ``memlock`` rule reads, with a limit shown unlimited in the same texts and none shown
low: a pasted ``ulimit -a`` whose ``max locked memory`` is ``unlimited``, a launcher's command that ran
``ulimit -l unlimited``, ``--ulimit memlock=-1``, ``LimitMEMLOCK=infinity``, ``memlock unlimited``
(:data:`nccldiag.paste.ends.MEMLOCK_UNLIMITED`), or the ``limits.memlock`` check passing on the nodes.
References: NVIDIA/nccl#638 (ibv_create_qp failing for all-to-all on 4 nodes with GDR, memlock unlimited),
NVIDIA/nccl#1191 (ibv_create_cq ENOMEM for all-to-all on 700 nodes under 'ulimit -l unlimited'); NCCL
src/misc/ibvwrap.cc ('Call to %s failed with error %s'); NCCL environment docs (NCCL_IB_QPS_PER_CONNECTION,
NCCL_NCHANNELS_PER_NET_PEER, NCCL_BUFFSIZE).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence
from nccldiag.diagnosis import signs
from nccldiag.model.findings import Status

ID = "rdma-resources-exhausted"
TITLE = "RDMA resources exhausted (memlock is unlimited)"
FIX = ("Ask the HCA for fewer resources per process: fewer connections per peer (NCCL_NCHANNELS_PER_NET_PEER=1, "
       "NCCL_IB_QPS_PER_CONNECTION=1, PXN on so that one NIC per node talks to each peer), smaller buffers "
       "(NCCL_BUFFSIZE), fewer ranks per NIC; read the kernel log of the node at the failure (mlx5 'failed "
       "allocating' or firmware syndrome lines) and the HCA's limits ('ibv_devinfo -v': max_qp, max_cq, max_mr).")
WORKAROUND = "NCCL_NET_GDR_LEVEL=LOC (no GPU memory registered with the HCA) when the failures come with GPUDirect RDMA"
CONFIRM = ("ulimit -l inside the launcher (mpirun ... bash -c 'ulimit -l'): unlimited; dmesg -T | grep -iE "
           "'mlx5|ib_core' at the time of the failure")


def unlimited(inp: Inputs) -> List:
    """The lines and findings that show the locked-memory limit unlimited where the job ran."""
    lines = list(inp.pasted.memlock_unlimited) if inp.pasted is not None else []
    ok = [f for f in inp.check_findings("limits.memlock", Status.OK)
          if f.check == "limits.memlock" and f.status == Status.OK]
    return lines + ok


def diagnose(inp: Inputs) -> List[Diagnosis]:
    warns, text = signs.rdma_failures(inp)
    if not warns and not text:
        return []
    shown = unlimited(inp)
    # a low limit shown anywhere (a check's finding, a program's 'current: 64 kbytes') leaves it to memlock
    low = signs.memlock_low(inp) or any("RLIMIT_MEMLOCK" in c.text or "max locked memory" in c.text for c in text)
    if not shown or low:
        return []
    found = [C.Clue("warn", w.message, w.at, w.text, w.at.host) for w in warns] + text
    fns = sorted({w.detail.get("fn", "ibv call") for w in warns}) or ["memory registration"]
    extra: List[Evidence] = []
    for x in shown[:2]:
        if hasattr(x, "lineno"):
            extra.append(Evidence("log", x.cite(), f"{x.path}:{x.lineno}", x.host))
        else:
            extra += finding_evidence(x, 1)
    return [C.make(sys.modules[__name__], f"{', '.join(fns)} failed with the locked-memory limit unlimited"
                   f"{C.on(C.hosts(found))}", found, confidence="medium", extra=extra,
                   why=("the RDMA call failed while the limit it usually hits is unlimited where the job ran: the "
                        "HCA's or its driver's resources ran out for the connections and buffers asked, not the "
                        "limit"),
                   alternatives=["memlock_limit: a limit lower inside the launcher's sessions than the one shown "
                                 "('ulimit -l' under mpirun/srun tells)"])]
