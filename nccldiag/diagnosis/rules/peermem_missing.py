"""GPUDirect RDMA unavailable because the peer-memory module is not loaded: NCCL logs 'GPU Direct RDMA Disabled
for HCA ... (no module)' (or without a reason, NCCL 2.12+ when DMA-BUF is not usable either), uses NET/IB without
/GDRDMA, and inter-node bandwidth drops; registering GPU memory fails 'Bad address' where GDR was forced.

Evidence: the ``gdr`` check's module finding; a shell's ``lsmod | grep nv_peer_mem`` (or nvidia_peermem) that
printed nothing, in a pasted transcript (fail where a pasted ``modinfo`` shows the module installed: it did not load
at boot, Mellanox/nv_peer_memory#46); NCCL's 'GPU Direct RDMA Disabled for HCA' lines on IB/RoCE HCAs;
kmod's answer that the module is not installed for the running kernel, 'modprobe: FATAL: Module nvidia_peermem not
found in directory /lib/modules/<release>' (kmod tools/modprobe.c) or 'modinfo: ERROR: Module nv_peer_mem not found.'
(tools/modinfo.c), and the nv_peer_mem service's 'Module nv_peer_mem does not exist' and 'Failed to load nv_peer_mem'
(Mellanox/nv_peer_memory's init script nv_peer_mem; the journal of Mellanox/nv_peer_memory#51 after a kernel upgrade
the module was not rebuilt for, and #119 after its DKMS build failed): the module is not there to load;
ibv_reg_mr failing with EFAULT ('Bad address', errno 14), or with EOPNOTSUPP ('Operation not supported', errno 95)
where the provider has no way to pin GPU memory (EFA without a peer-memory bridge), as NCCL or another GPU
communication library reports it: UCCL's perror of its GPU buffer's registration, 'RDMA buffer MR registration
failed: Operation not supported' (uccl-project/uccl ep/src/rdma.cpp at da914a2, after ibv_reg_mr of a device
pointer; tests/cases/net-blogs49-tosshi-zenn-uccl-ep-efa-gpu-mr-registration-errno95-no-peer-memory).
References: NVIDIA GPUDirect RDMA docs (nvidia-peermem); Mellanox/nv_peer_memory.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.nccl.facts import Loc

ID = "peermem-missing"
TITLE = "Peer-memory module not loaded: no GPUDirect RDMA"
FIX = ("Load the peer-memory module on every node: 'modprobe nvidia-peermem' (driver 470+; nv_peer_mem with older "
       "MLNX_OFED) and list it in /etc/modules-load.d so it loads at boot; or use DMA-BUF instead (NVIDIA open "
       "kernel module, Linux 5.12+, NCCL 2.13+).")
WORKAROUND = "none needed for correctness: NCCL stages through host memory, at a cost in inter-node bandwidth"
CONFIRM = "lsmod | grep -E 'nvidia_peermem|nv_peer_mem'"

NO_MODULE = rx.compile(r"GPU Direct RDMA Disabled for HCA \S+ '(?:mlx|ib|roce|bnxt|irdma|rdma)[^']*'(?: \(no module\))?\s*$|"
                       r"GPU Direct RDMA Disabled for HCA [^\n]{0,300}?\(no module\)|no peermem|nv_peer_mem(?:ory)? (?:is )?not loaded|"
                       r"nvidia[-_]peermem (?:is )?not loaded")
# kmod and the nv_peer_mem service saying the module is not installed for the running kernel: nothing to load
NOT_INSTALLED = rx.compile(r"\bModule (?:nvidia[-_]peermem|nv_peer_mem) (?:not found\b|does not exist)|"
                           r"\bFailed to load (?:nvidia[-_]peermem|nv_peer_mem)\b")
BAD_ADDRESS = rx.compile(r"ibv_reg_(?:mr|dmabuf_mr)\w{0,40} failed[^\n]{0,300}?(?:Bad address|errno 14)|"
                         r"\bRDMA buffer MR registration failed: Bad address")
# the provider refused to pin GPU memory at all (EOPNOTSUPP): no peer-memory bridge, and no DMA-BUF path used
NOT_SUPPORTED = rx.compile(r"\bRDMA buffer MR registration failed: Operation not supported")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = [f for f in C.findings(inp, "gdr.peermem") if f.check == "gdr.peermem"]
    lines = C.find(inp, NO_MODULE, ("error", "warn", "last-error")) + \
        [C.Clue("error", g.text, g.at, g.text, g.at.host) for ls in inp.log_sets() for g in ls.facts.gdr
         if not g.enabled and NO_MODULE.search(g.text)]
    fault = C.find(inp, BAD_ADDRESS, ("warn", "last-error", "error"))
    refused = C.find(inp, NOT_SUPPORTED, ("warn", "last-error", "error", "app"))
    missing = C.find(inp, NOT_INSTALLED, ("error", "warn", "last-error", "kernel", "app"))
    split = gdr_split(inp)
    absent, installed = _lsmod_absent(inp)
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node] + fault + refused + missing + lines + \
        absent
    if split and not found:
        return [C.make(sys.modules[__name__], "GPUDirect RDMA works on some ranks' side and not on others': the "
                       "peer-memory module is missing where it does not", split, confidence="medium",
                       why="the same kind of IB connection uses /GDRDMA at one end and not at the other",
                       alternatives=["gdr_unused: a GPU-NIC distance that differs between the nodes (topology)"])]
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"GPUDirect RDMA off: the peer-memory module is not loaded"
                   f"{C.on(C.hosts(found))}", found,
                   confidence="high" if node or fault or missing or absent else "medium",
                   why=("the module is not loaded" if node else "NCCL found no peer-memory support for the HCA"
                        if lines else "the HCA could not register GPU memory (EFAULT): no peer-memory module"
                        if fault else "the RDMA provider refused to register GPU memory (EOPNOTSUPP): no peer-memory "
                        "bridge, and the program registers GPU memory with ibv_reg_mr, not DMA-BUF"
                        if refused else "the module is not installed for the running kernel: modprobe or modinfo "
                        "cannot find it under /lib/modules/$(uname -r) (not built for this kernel, or left out of the "
                        "node's image)" if missing else "'lsmod | grep' for the module printed nothing"
                        + (", though the module is installed (modinfo shows it): it was not loaded at boot"
                           if installed else "")),
                   severity="fail" if fault or refused or installed or any(f.status.value == "fail" for f in node)
                   else "warn",
                   alternatives=[] if node else ["gdr_unused: DMA-BUF not usable or NCCL settings; 'lsmod' tells"]
                   + (["the program built without its DMA-BUF path (UCCL: USE_DMABUF=1): it then registers GPU "
                       "memory without the peer-memory module"] if refused else []))]


def _lsmod_absent(inp: Inputs):
    """A shell's 'lsmod | grep <peer-memory module>' that printed nothing (the paste reader's reading), and whether
    a pasted 'modinfo' shows the module installed: installed and not loaded, it did not load at boot (no
    /etc/modules-load.d entry, or a driver or OS update that dropped it)."""
    if inp.pasted is None:
        return [], False
    absent = [C.Clue("error", x.text.strip(), Loc(x.path, x.lineno, x.host), x.text.strip(), x.host)
              for x in inp.pasted.peermem_absent]
    installed = any(m in ("nvidia_peermem", "nv_peer_mem", "nvidia-peermem")
                    for areas in inp.pasted.facts.values() for m in getattr(areas.get("gdr"), "modinfo", None) or [])
    return absent, bool(absent) and installed


def gdr_split(inp: Inputs) -> List[C.Clue]:
    """IB connections with GPUDirect RDMA on some ranks' side and without it on others' (NCCL_NET_GDR_LEVEL not
    turning it off): the nodes of the second kind lack the peer-memory module."""
    out: List[C.Clue] = []
    for ls in inp.log_sets():
        if ls.env.get("NCCL_NET_GDR_LEVEL") or ls.facts.env_values().get("NCCL_NET_GDR_LEVEL"):
            continue
        ib = [c for c in ls.facts.channels if c.transport == "NET" and (c.net or "").lower().startswith("ib")]
        with_gdr = [c for c in ib if c.gdrdma]
        without = [c for c in ib if not c.gdrdma]
        if with_gdr and without:
            out += [C.Clue("error", c.text, c.at, c.text, c.at.host) for c in (without[:2] + with_gdr[:1])]
    return out
