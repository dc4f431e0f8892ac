"""An InfiniBand/RoCE port down, disabled, polling, flapping or at a degraded rate. A flapping link shows as
NCCL's 'Got async event : port error' over and over, with RDMA operations timing out (error 12) until the job
hangs; a process placed on a Down port cannot connect.

Evidence: the ``ib`` port-state and rate checks (ibstat, sysfs, ibv_devinfo), link-flap counters, asynchronous
port events in NCCL's log.
References: NVIDIA/nccl#905 ('a flapping link'); microsoft/mscclpp#493.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs, signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "ib-port-down"
TITLE = "IB/RoCE port down, flapping or degraded"
FIX = ("Bring the port up at full rate: check the cable and transceiver (swap them), the switch port and its "
       "counters, the subnet manager (IB: 'sminfo'), and the netdev for RoCE ('ip link set <dev> up'); a port that "
       "flaps needs its cable or transceiver replaced. Until then keep NCCL off it: NCCL_IB_HCA=^<hca>.")
WORKAROUND = "NCCL_IB_HCA listing only the ports that are Active at full rate"
CONFIRM = "ibstat; ibstatus; cat /sys/class/infiniband/*/ports/*/{state,phys_state,rate}"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = [f for f in C.findings(inp, "ib.port_")] + C.findings(inp, "ibcounters.link_flaps")
    pasted = [f for f in node if inp.pasted is not None and any(f is g for g in inp.pasted.findings)]
    if pasted and not _run_failed(inp):
        node = [f for f in node if f not in pasted]  # a port shown in a paste beside a run that worked says nothing
        pasted = []
    fatal = ibverbs.device_fatal(inp)
    events = [c for c in ibverbs.port_events(inp) if c not in fatal]  # a fatal device is hca-firmware's
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node] + events
    if not found:
        return []
    flapping = len(events) > 1 or bool(events) and bool([c for c in ibverbs.completions(inp) if c.status in (12, 13)])
    what = ("an IB link is flapping: the HCA keeps reporting port errors" if events else
            "an IB/RoCE port is not Active at full rate")
    return [C.make(sys.modules[__name__], what + C.on(C.hosts(found)), found,
                   confidence="high" if (node and len(pasted) < len(node)) or flapping else "medium",
                   why=("NCCL received asynchronous port-error events from the HCA" if events else
                        "the port state or rate read on the node is not Active at full rate"),
                   severity="fail" if events or any(f.status.value == "fail" for f in node) else "warn")]


def _run_failed(inp: Inputs) -> bool:
    """Whether the logs show the run failing or not finishing (a port in a pasted ibstat is then a suspect)."""
    if any(ls.facts.summary is not None and ls.facts.summary.failures for ls in inp.log_sets()):
        return True
    return bool(signs.unfinished(inp))
