"""The peer-memory module built against another RDMA stack or kernel: loading nv_peer_mem / nvidia-peermem fails
with 'Unknown symbol ib_register_peer_memory_client', 'disagrees about version of symbol', 'Invalid module
format'; without it there is no GPUDirect RDMA.

Evidence: kernel lines of the module (the ``gdr`` check's kernel-log finding, or lines in a log).
References: Mellanox/nv_peer_memory#84; NVIDIA driver README (nvidia-peermem needs MLNX_OFED's ib_core).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "peermem-build"
TITLE = "Peer-memory module built for another RDMA stack or kernel"
FIX = ("Rebuild and reinstall the peer-memory module against the RDMA stack and kernel that are loaded: reinstall "
       "the NVIDIA driver after MLNX_OFED/DOCA (nvidia-peermem is built against the ib_core present at install), "
       "or rebuild nv_peer_mem for the running kernel; then 'modprobe nvidia-peermem'.")
CONFIRM = "modprobe nvidia-peermem; dmesg | tail; modinfo nvidia-peermem | grep -E 'vermagic|depends'"

BUILD = re.compile(r"(?:nv_peer_mem|nvidia[-_]peermem)\S*:? .*(?:Unknown symbol|disagrees about version|"
                   r"Invalid module format|version magic|Invalid argument|could not insert|Exec format error)"
                   r"|(?:Unknown symbol|could not insert).*(?:nv_peer_mem|nvidia[-_]peermem|peer_memory_client)")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, BUILD, ("kernel", "error", "finding"))
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"the peer-memory module does not load{C.on(C.hosts(found))}: it was "
                   "built for another RDMA stack or kernel", found, confidence="high",
                   why="the kernel refused the module's symbols: it does not match the ib_core or kernel loaded")]
