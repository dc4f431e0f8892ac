"""Different hosts with the same host name (or the same name up to the first '.'): NCCL takes their ranks for
ranks of one host and connects them with CUDA IPC or shared memory (P2P/IPC, SHM) across machines, which
fails ('unhandled cuda error') or hangs.

Evidence: one host name whose ranks sit on the same CUDA device twice, connected by P2P or SHM. A host name
redacted before the log was posted (``node-xxx``, ``<redacted>``) tells nothing: every host got it.
References: horovod/horovod#110; NVIDIA/nccl#187 (host hash from the name before the first '.').
"""
from __future__ import annotations

import sys
from typing import Dict, List, Set, Tuple

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.nccl import grammar

ID = "duplicate-hostname"
TITLE = "Different hosts with the same host name"
FIX = ("Give every node a unique host name (and a unique short name before the first '.'): 'hostnamectl "
       "set-hostname', or in containers --hostname / the pod's hostname; NCCL_HOSTID can override NCCL's host "
       "identity where renaming is not possible.")
CONFIRM = "hostname -s on every node of the job: they must all differ"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    out: List[Diagnosis] = []
    for ls in inp.log_sets():
        # host -> cudaDev -> ranks seen on it, from P2P/SHM channel lines (the ranks NCCL took for one host's)
        devs: Dict[Tuple[str, str], Set[int]] = {}
        lines = []
        for ch in ls.facts.channels:
            if ch.transport not in ("P2P", "SHM") or not ch.at.host or grammar.anonymised_host(ch.at.host):
                continue
            for rank, dev in ((ch.src, ch.src_dev), (ch.dst, ch.dst_dev)):
                if rank is None or dev is None:
                    continue
                devs.setdefault((ch.at.host, dev), set()).add(rank)
            lines.append(ch)
        # more ranks than GPUs under one host name, two of them on one GPU: not one host (several communicators
        # of one host reuse rank numbers, so they never count more ranks than GPUs)
        clash = {}
        for host in {h for h, _ in devs}:
            mine = {k: v for k, v in devs.items() if k[0] == host}
            ranks = set().union(*mine.values())
            if len(ranks) > len(mine):
                clash.update({k: v for k, v in mine.items() if len(v) > 1})
        if not clash:
            continue
        (host, dev), ranks = next(iter(sorted(clash.items())))
        found = [C.Clue("error", ch.text, ch.at, ch.text, ch.at.host) for ch in lines
                 if {ch.src, ch.dst} & ranks][:4]
        out.append(C.make(sys.modules[__name__], f"ranks {', '.join(map(str, sorted(ranks)))} all report host {host} "
                          f"and CUDA device {dev}: they are on different machines with one host name", found,
                          nodes=[host], confidence="medium",
                          why="one host cannot hold two ranks on the same GPU, yet NCCL joined them with P2P/SHM",
                          alternatives=["duplicate_gpu_rank: two ranks really on one GPU (NCCL then says 'Duplicate "
                                        "GPU detected')"]))
    return out
