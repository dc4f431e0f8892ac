"""NCCL's system error with nothing that says which call: a program reports ``unhandled system error``
(``ncclSystemError``, NCCL error 2) out of ncclCommInitRank, ncclGroupEnd or a collective, and no NCCL WARN of the
run names the failing call (the job ran without NCCL_DEBUG, or the log kept only the framework's error).

What it can be, as NCCL's own words say: ncclGetErrorString's 'unhandled system error (run with NCCL_DEBUG=INFO for
details)' and the documentation's 'ncclSystemError: System call (socket, malloc, munmap, etc) failed'
(src/init.cc; NCCL user guide, Troubleshooting, 'Errors'): a system call NCCL made failed. At initialisation those
are its /dev/shm segments (a container's 64 MB /dev/shm, or one it may not write), its bootstrap and network
sockets (no usable interface in a container's network namespace, a port refused), and the locked memory and
queues of RDMA. The cause is named as that category, low confidence, with the next steps that tell them apart;
never "nothing broken". A cause of the catalog that the same evidence shows (a WARN, a node's finding, a one-node
run whose system calls are those of /dev/shm) comes first: this one is a symptom (tier 1) and those explain it.

References: NVIDIA/nccl#473, HRNet/DEKR#18 (a bare 'unhandled system error' in Docker, fixed by --ipc=host);
NVIDIA/nccl-tests#14 (the same error, fixed by host networking); NCCL src/init.cc (ncclGetErrorString).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "nccl-system-error"
TITLE = "NCCL failed a system call (which one not logged)"
FIX = ("Rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET,SHM): the WARN before the error names the call and "
       "its errno. Meanwhile check what NCCL's system calls need where the job runs: /dev/shm large and writable "
       "('df -h /dev/shm', mode 1777; docker --ipc=host or --shm-size=1g, a memory-backed emptyDir in Kubernetes), "
       "a network interface NCCL can use (docker --network=host, NCCL_SOCKET_IFNAME), and the limits "
       "('ulimit -l' unlimited for RDMA, 'ulimit -n').")
CONFIRM = "NCCL_DEBUG=INFO <the job> 2>&1 | grep -B2 -A4 'NCCL WARN'"

SYSTEM_ERROR = rx.compile(r"unhandled system error|ncclSystemError|NCCL Error 2\b|System call \(socket, malloc")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found: List[C.Clue] = []
    for ls in inp.log_sets():
        f = ls.facts
        # a WARN of NCCL's (but the missing libibverbs of a node without IB) names the failing call itself
        if any(w.failure or w.kind != "ibverbs_missing" for w in f.warns) or any(oc.failed for oc in f.orphan_chains):
            continue
        found += [C.Clue("app", a.message, a.at, a.text, a.at.host) for a in f.app_errors
                  if SYSTEM_ERROR.search(a.message or a.text)]
        found += [C.Clue("error", e.text, e.at, e.text, e.at.host) for e in f.errors if SYSTEM_ERROR.search(e.text)]
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"NCCL failed a system call{C.on(C.hosts(found))} and the log does not "
                   "say which (/dev/shm, a socket or a limit)", found, confidence="low",
                   why=("NCCL returned ncclSystemError: a system call it made failed (its /dev/shm segments, its "
                        "sockets, RDMA's locked memory); no NCCL WARN in the evidence names the call"),
                   missing=["rerun with NCCL_DEBUG=INFO: the WARN before the error names the call and its errno",
                            "df -h /dev/shm and ls -ld /dev/shm where the job runs (a container's is 64 MB)",
                            "ulimit -l and ulimit -n as the launcher's processes see them"],
                   alternatives=["shm_too_small: in a container without --ipc=host or --shm-size, the most common",
                                 "socket_ifname_wrong: no usable network interface in the container's namespace",
                                 "memlock_limit: RDMA's locked memory, where the job uses InfiniBand or RoCE"])]
