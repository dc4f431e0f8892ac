"""The RDMA devices, or the rights to use them, not given to the container or pod: NCCL cannot open the HCA
(ibv_open_device, /dev/infiniband/uverbs* missing or not permitted), libibverbs finds no provider for it, or
aws-ofi-nccl's libfabric finds no EFA device; NCCL falls back to sockets or fails.

Evidence: those errors in any output. 'IB present but sockets used' without them is ``ib-unused-sockets``.
References: NVIDIA k8s-rdma-shared-dev-plugin; Kubernetes RDMA device plugin docs; aws-ofi-nccl README (EFA in
containers: /dev/infiniband, the vpc.amazonaws.com/efa resource).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "rdma-device-hidden"
TITLE = "RDMA devices not available inside the container"
CATEGORY = "rdma_device_not_in_container"
FIX = ("Give the container the RDMA devices and the right to pin memory: docker run --device=/dev/infiniband "
       "--cap-add=IPC_LOCK (--ulimit memlock=-1), or in Kubernetes the RDMA/EFA device-plugin resource "
       "(rdma/hca, vpc.amazonaws.com/efa) with the IPC_LOCK capability; install the userspace providers (libibverbs, "
       "rdma-core, libmlx5 / libfabric with EFA) in the image.")
CONFIRM = "inside the container: ls -l /dev/infiniband; ibv_devinfo; fi_info -p efa"

HIDDEN = re.compile(r"/dev/infiniband\S*.*(?:No such file|Permission denied|not permitted|cannot open|failed)|"
                    r"(?:Failed to open|cannot open|Unable to open) (?:device )?/dev/infiniband|"
                    r"couldn't load driver 'lib\w+-rdmav\d+'|No eligible providers? (?:were )?found|"
                    r"fi_getinfo(?: call)? failed.*(?:No data available|-61|ENODATA)|"
                    r"(?:EFA|efa) (?:device|provider)s? (?:not found|not available|unavailable)|"
                    r"Unable to (?:find|open) (?:an? )?(?:RDMA|IB|EFA) device|NET/OFI.*[Nn]o NICs? (?:found|available)")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    opened = [c.clue for c in ibverbs.calls(inp) if c.fn in ("ibv_open_device", "ibv_get_device_list")]
    found = C.find(inp, HIDDEN, ("warn", "last-error", "error", "app")) + opened
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"the RDMA devices cannot be used inside the container"
                   f"{C.on(C.hosts(found))}", found, confidence="high" if opened else "medium",
                   why="opening the HCA or its provider failed where the job runs",
                   alternatives=["memlock_limit: a container without IPC_LOCK/memlock fails at memory registration "
                                 "instead; 'ulimit -l' inside it tells"])]
