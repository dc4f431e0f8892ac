"""A RoCE GID table NCCL cannot use as it is: no RoCE v2 GID with an IPv4 address, or a sparse table (entries
starting above index 0, as Kubernetes macvlan pods get) that NCCL before 2.26 fails to search, or a link-local
GID picked for traffic between subnets.

Evidence: the ``ib`` check's GID findings (show_gids, ibv_devinfo, sysfs), NCCL picking a fe80 GID
('GID 0 (80FE/...)') beside an RDMA failure, a GID table change during the run ('Got async event : GID table
change') followed by failed RDMA operations; retry-exceeded completions (error 12/13) on RoCE ports only, or beside
GID evidence (a GID finding, NCCL's GID lines), or a retry-exceeded completion whose own WARN names link-local (fe80::)
local and remote GIDs (NCCL prints them only for an Ethernet link layer). Among InfiniBand ports with no word of a GID, the same timeouts are
NICs that cannot reach each other (``ib-timeout``: fabrics not connected, routing).
References: NVIDIA/nccl#1587 (sparse GID tables), #769, #394 and #1819 (GID table change).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "roce-gid"
TITLE = "RoCE GID table or selection unusable"
FIX = ("Give each RoCE port a RoCE v2 GID for its IPv4 address (the interface needs the address), and let NCCL pick "
       "it: NCCL 2.26+ handles sparse tables; with an older NCCL set NCCL_IB_GID_INDEX per node to the index "
       "'show_gids' lists for that v2 IPv4 entry (NCCL_IB_ROCE_VERSION_NUM=2).")
CONFIRM = "show_gids"
LINK_LOCAL = rx.compile(r"\bGID \d+ \((?:80FE|fe80)/", re.I)
GID_WORDS = rx.compile(r"\bGID (?:\d|index|table)|\bgid_index\b|show_gids")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    timeouts = [c for c in ibverbs.completions(inp) if c.status in (12, 13)]
    changed = C.find(inp, ibverbs.GID_CHANGE, ("warn", "last-error", "error", "kernel"))
    broken = [c.clue for c in ibverbs.completions(inp)] + [c.clue for c in ibverbs.calls(inp)]
    if changed and broken:
        found = changed[:2] + broken[:2]
        return [C.make(sys.modules[__name__], f"the RoCE GID table changed during the run{C.on(C.hosts(changed))}, "
                       "and RDMA operations failed after it", found, confidence="medium",
                       why=("the HCA reported a GID table change (an address of the RDMA netdev removed, re-added or "
                            "reassigned while the job ran): the queue pairs NCCL set up on the old GID stop working"),
                       fix=("Keep the addresses of the RDMA netdevs fixed while jobs run (no DHCP renewal, "
                            "NetworkManager or cloud-init reconfiguring them), check 'show_gids' is the same before and "
                            "after, and restart the job."),
                       alternatives=["ib_qp_timeout_routing: the NICs cannot reach each other at all (the failures "
                                     "start before any GID change)"])]
    linked = [c for c in timeouts if c.link_local]
    if linked and not C.env_values(inp, "NCCL_IB_GID_INDEX"):
        found = [c.clue for c in linked]
        gids = sorted({g for c in linked for g in (c.local_gid, c.remote_gid) if g})
        return [C.make(sys.modules[__name__], f"RoCE transfers time out{C.on(C.hosts(found))}: the queue pairs run "
                       f"on link-local GIDs ({', '.join(gids[:2])})", found, confidence="high",
                       why=("NCCL names the GIDs of a failed completion only on an Ethernet (RoCE) port, and these are "
                            "IPv6 link-local (fe80::) entries: the MAC-derived GID at index 0, which NCCL and its IB "
                            "plugin use unless NCCL_IB_GID_INDEX says otherwise (NCCL before 2.21 always); peers whose "
                            "HCAs answer on another RoCE version or subnet never see that traffic, so every retry "
                            "is exhausted"),
                       fix=("Run NCCL on the RoCE v2 GID that carries each port's IPv4 address: 'show_gids' lists it "
                            "(v2, with the address); set NCCL_IB_GID_INDEX to that index on every node (the same "
                            "index on all of them) or use NCCL 2.21+, which picks it; check 'ib_write_bw -x <index>' "
                            "between the two hosts."),
                       alternatives=["ib_qp_timeout_routing: the NICs cannot reach each other on any GID (cabling, "
                                     "routing); 'ib_write_bw' with the v2 index tells"])]
    gids = bool(C.findings(inp, "ib.roce_gid")) or bool(C.find(inp, GID_WORDS, ("warn", "last-error", "error")))
    if timeouts and (ibverbs.roce_only(inp) or ibverbs.roce(inp) and gids) and not ibverbs.port_events(inp) and \
            not C.env_values(inp, "NCCL_IB_GID_INDEX"):
        found = [c.clue for c in timeouts]
        return [C.make(sys.modules[__name__], f"RoCE transfers time out{C.on(C.hosts(found))}: the nodes do not "
                       "share a usable GID, traffic class or route", found, confidence="medium",
                       why="on RoCE, retries exceeded from the start most often mean the two ends use GIDs (RoCE "
                           "version, subnet) or traffic classes that do not reach each other",
                       alternatives=["ib_qp_timeout_routing: NICs not cabled into one fabric or a rail-only "
                                     "fabric; 'ib_write_bw' between the two hosts tells"])]
    node = C.findings(inp, "ib.roce_gid")
    failing = [c.clue for c in ibverbs.calls(inp) if c.fn == "ibv_modify_qp"]
    link = C.find(inp, LINK_LOCAL, ("error", "warn")) if failing and not C.env_values(inp, "NCCL_IB_GID_INDEX") else []
    if link:
        link += failing
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node] + link
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"the RoCE GID table or the GID chosen cannot carry NCCL's traffic"
                   f"{C.on(C.hosts(found))}", found, confidence="high" if link else "medium",
                   why=("NCCL chose a link-local GID and connecting failed" if link else
                        "the GID table read on the node lacks what NCCL needs"),
                   severity="fail" if link or any(f.status.value == "fail" for f in node) else "warn")]
