"""An InfiniBand/RoCE port down, disabled, polling, flapping or at a degraded rate. A flapping link shows as
NCCL's 'Got async event : port error' over and over, with RDMA operations timing out (error 12) until the job
hangs; a process placed on a Down port cannot connect.

Evidence: the ``ib`` port-state and rate checks (ibstat, sysfs, ibv_devinfo, rdma link), the link of a fabric
interface in use as the link tools show it (``ib.port_link``: ifconfig's 'no carrier', ip link's NO-CARRIER,
ethtool's 'Link detected: no'), link-flap counters, asynchronous port events in NCCL's log. A port pasted beside a run that failed is a suspect; beside a run that worked it says
nothing of the run; pasted with no run beside it, a port the paste shows in use (:func:`_in_use`) is named.
References: NVIDIA/nccl#905 ('a flapping link'); microsoft/mscclpp#493.
"""
from __future__ import annotations

import sys
from typing import List, Tuple

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs, signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import FAILURE_LINES, Diagnosis
from nccldiag.model.findings import Finding

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
    back: List[Finding] = []  # pasted Down at one reading and Active at the last one
    if pasted and not _run_failed(inp):
        # a port shown in a paste beside a run that did not fail says nothing; a paste alone names the ports in use
        kept, back = ([], []) if _beside_a_run(inp) else _in_use(inp, pasted)
        node = [f for f in node if f not in pasted or any(f is k for k in kept)]
        pasted = kept
    fatal = ibverbs.device_fatal(inp)
    events = [c for c in ibverbs.port_events(inp) if c not in fatal]  # a fatal device is hca-firmware's
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node] + events
    if not found:
        return []
    flapping = len(events) > 1 or bool(events) and bool([c for c in ibverbs.completions(inp) if c.status in (12, 13)])
    came_back = bool(back) and len(back) == len(node) and not events
    what = ("an IB link is flapping: the HCA keeps reporting port errors" if events else
            "an IB/RoCE port went Down and came back between the readings pasted (a link that flaps, or one "
            "brought up in between)" if came_back else
            "a fabric interface in use has no link" if node and all(f.check == "ib.port_link" for f in node) else
            "a link keeps going down and coming back (flapping)" if node and all(
                f.check == "ibcounters.link_flaps" for f in node) else
            "an IB/RoCE port is not Active at full rate")
    return [C.make(sys.modules[__name__], what + C.on(C.hosts(found)), found,
                   confidence="high" if (node and len(pasted) < len(node)) or flapping else "medium",
                   why=("NCCL received asynchronous port-error events from the HCA" if events else
                        "the port state or rate read on the node is not Active at full rate"),
                   severity="fail" if events or any(f.status.value == "fail" for f in node) else "warn",
                   # a port that came back is a warning, but its Down readings say the link failed: no all-clear
                   figures={FAILURE_LINES: len(back)} if came_back else None)]


def _beside_a_run(inp: Inputs) -> bool:
    """Whether a log of the run sits beside the paste (NCCL's lines, a benchmark's results, a communicator)."""
    return any(ls.facts.nccl_lines or ls.facts.nccl_tests or ls.facts.inits for ls in inp.log_sets())


def _in_use(inp: Inputs, pasted: List[Finding]) -> Tuple[List[Finding], List[Finding]]:
    """The pasted port-state findings of ports the paste shows in use: a port Down and not ``Disabled`` (a port
    switched off is off on purpose), unless another port of the same adapter (one CA, or one System image GUID:
    the two ports of a dual-port card are two CAs of one GUID) is Active, which makes it the adapter's spare port,
    perhaps without a cable on purpose. A RoCE port reads ``Disabled`` with its netdev switched off or without carrier
    alike (the mlx4, mlx5, bnxt_re, irdma, qedr and mana drivers): it is in use where no port of the node is Active. A host's facts are its last reading of each output: a port found Down by
    one reading and Active in the facts was pasted twice or more with its state changing (``rdma link`` run again
    while the link flaps); it is in use, and comes second in what is returned too. A pasted kernel log's links
    flapping (a link or cable module up and down again as many times as the link-flap check fails on) are in use.
    Each port is compared with its own node's readings only: another node's port of the same name is another port,
    but one Active on another node pasted is cabled there, and so in use here too (not a spare beside its sibling).
    Where the paste holds an RDMA test told which HCA to use (``ib_write_bw -d mlx5_0``), the ports of the other HCAs
    are not what the test ran on."""
    by_host = {h: list(getattr(facts.get("ib"), "ports", None) or []) for h, facts in inp.pasted.facts.items()}
    tested = {dev for _, dev in inp.pasted.rdma_test_device}  # the HCAs the pasted RDMA tests were told to use
    out: List[Finding] = []
    back: List[Finding] = []
    for f in pasted:
        if f.check == "ib.port_link":  # judged in use already (areas/netdev.py: switched on, addressed or a fabric port)
            out.append(f)
            continue
        if f.check == "ibcounters.link_flaps" and f.status.value == "fail":
            # a link (or a cable module) that came up and went down again, time after time, is cabled and in use:
            # a spare port without a cable never comes up
            out.append(f)
            continue
        if f.check != "ib.port_state":
            continue
        ports = by_host.get(f.host or "", [])  # the finding's own node's ports: another node's of the same name are not it
        port = next((p for p in ports if f.message.startswith(p.name + " ") or f.message.startswith(p.name + ":")),
                    None)
        if port is not None and port.active and _down(f):
            out.append(f)
            back.append(f)
            continue
        if port is None or port.active or port.state is None:
            continue
        if tested and port.device not in tested:
            continue  # the RDMA test pasted ran on another HCA: this one's state is not what failed
        if port.phys_state == "Disabled" and (not port.roce or any(p.active for p in ports)):
            # an IB port Disabled was switched off; a RoCE port reads Disabled switched off or unplugged alike,
            # in use where no RDMA port of the node has a link
            continue
        siblings = [p for p in ports if p is not port and (p.device == port.device or (
            port.system_guid and p.system_guid == port.system_guid))]
        elsewhere = any(p.active and p.name == port.name for h, others in by_host.items() if h != (f.host or "")
                        for p in others)
        if any(p.active for p in siblings) and not elsewhere:
            continue
        out.append(f)
    return out, back


def _down(f: Finding) -> bool:
    """Whether a port-state finding reads the port not Active and not Disabled (its own reading, not the facts)."""
    return ("State Down" in f.message or "State Init" in f.message) and "Physical state Disabled" not in f.message


def _run_failed(inp: Inputs) -> bool:
    """Whether the logs show the run failing or not finishing (a port in a pasted ibstat is then a suspect)."""
    if any(ls.facts.summary is not None and ls.facts.summary.failures for ls in inp.log_sets()):
        return True
    return bool(signs.unfinished(inp))
