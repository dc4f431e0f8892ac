"""The RDMA devices, or the rights to use them, not given to the container or pod: NCCL cannot open the HCA
(ibv_open_device, /dev/infiniband/uverbs* missing or not permitted), libibverbs finds no provider for it, or
aws-ofi-nccl's libfabric finds no EFA device (aws-ofi-nccl before 1.15 warns 'OFI fi_getinfo() call failed: No data
available', later an INFO 'No eligible providers were found'), or 'fi_info -p <provider>' answers 'fi_getinfo: -61
(No data available)' (the Slingshot CXI devices not given to the container); NCCL falls back to sockets or fails.

Evidence: those errors in any output. 'IB present but sockets used' without them is ``ib-unused-sockets``.
References: NVIDIA k8s-rdma-shared-dev-plugin; Kubernetes RDMA device plugin docs; aws-ofi-nccl README (EFA in
containers: /dev/infiniband, the vpc.amazonaws.com/efa resource); CSCS Alps Container Engine documentation, 'Resource
hook' (tests/cases/net-cscs-docs-container-fi-info-cxi-fi-getinfo-61-no-data); aws/aws-ofi-nccl a8380ba1,
src/nccl_ofi_rdma.cpp (FI_ENODATA from fi_getinfo lowered from that WARN to the INFO; the WARN of 1.14 in
tests/cases/net-gaps62c-awsofinccl1020-p5-container-fi-getinfo-no-data-dev-infiniband-not-exposed).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs, signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.diagnosis.signs import log_failed

ID = "rdma-device-hidden"
TITLE = "RDMA devices not available inside the container"
FIX = ("Give the container the RDMA devices and the right to pin memory: docker run --device=/dev/infiniband "
       "--cap-add=IPC_LOCK (--ulimit memlock=-1), or in Kubernetes the RDMA/EFA device-plugin resource "
       "(rdma/hca, vpc.amazonaws.com/efa) with the IPC_LOCK capability; install the userspace providers (libibverbs, "
       "rdma-core, libmlx5 / libfabric with EFA) in the image.")
CONFIRM = "inside the container: ls -l /dev/infiniband; ibv_devinfo; fi_info -p efa"


def _ib_wanted(inp: Inputs) -> List[str]:
    """What says the job meant to use IB: NCCL_IB_DISABLE=0, NCCL_IB_HCA, NCCL_NET=IB echoed by NCCL."""
    out = []
    if "0" in C.env_values(inp, "NCCL_IB_DISABLE"):
        out.append("NCCL_IB_DISABLE=0")
    out += [f"NCCL_IB_HCA={v}" for v in C.env_values(inp, "NCCL_IB_HCA")]
    out += [f"NCCL_NET={v}" for v in C.env_values(inp, "NCCL_NET") if v.lower().startswith("ib")]
    return out


# NCCL lists the HCA but cannot open it (its /dev/infiniband/uverbs* node not given to the container, or not
# permitted): NCCL skips it, so the nodes' HCA sets differ and channels on it have no peer (NVIDIA/nccl#2428)
NCCL_UNOPENED = rx.compile(r"NET/IB\s*: Unable to open device \S+")


def _unopened(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, NCCL_UNOPENED, ("warn", "last-error", "error", "app"))
    if not found:
        return []
    failed = any(log_failed(ls.facts) for ls in inp.log_sets())
    return [C.make(sys.modules[__name__], f"NCCL cannot open an RDMA device it lists{C.on(C.hosts(found))}", found,
                   confidence="medium", severity="fail" if failed else "warn",
                   why="NCCL skips an HCA it cannot open, so the ranks' HCA sets differ: a job across nodes fails "
                       "on the mismatch, or hangs where NCCL_IGNORE_NET_MISMATCH hides it",
                   alternatives=["nccl_env_misconfig: NCCL_IB_HCA naming a device of another node"])]


def diagnose(inp: Inputs) -> List[Diagnosis]:
    opened = [c.clue for c in ibverbs.calls(inp) if c.fn in ("ibv_open_device", "ibv_get_device_list")]
    found = C.find(inp, signs.HIDDEN, ("warn", "last-error", "error", "app")) + opened
    wanted = _ib_wanted(inp)
    none = [C.Clue("error", n.text, n.at, n.text, n.at.host) for ls in inp.log_sets() for n in ls.facts.notes
            if n.kind == "ib_no_device"] if wanted else []
    if none and not found:
        return [C.make(sys.modules[__name__], f"NCCL found no IB device although the job asked for IB "
                       f"({', '.join(wanted)}){C.on(C.hosts(none))}", none, confidence="medium",
                       why="NCCL was told to use IB and saw no RDMA device where it ran: inside a container, the "
                           "devices were not passed in",
                       alternatives=["ib_port_down: no device at all on the host itself (driver not loaded, HCA "
                                     "down); 'ibv_devinfo' on the host tells"])]
    if not found:
        return _unopened(inp)
    return [C.make(sys.modules[__name__], f"the RDMA devices cannot be used inside the container"
                   f"{C.on(C.hosts(found))}", found, confidence="high" if opened else "medium",
                   why="opening the HCA or its provider failed where the job runs",
                   alternatives=["memlock_limit: a container without IPC_LOCK/memlock fails at memory registration "
                                 "instead; 'ulimit -l' inside it tells"])]
