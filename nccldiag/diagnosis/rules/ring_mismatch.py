"""The ranks computed different rings: NCCL's 'ring N does not loop back to start (a != b)' at init, after which
NCCL returns an internal error. Each rank builds the rings from every rank's topology; they close only when all
ranks compute the same graph. They do not when the ranks run different NCCL versions, when a setting that shapes
the graph differs or lies (NCCL_HOSTID making two hosts one, graph or topology variables set on some ranks), or
through a defect of NCCL's topology detection (NCCL 2.19 read PCI link speeds a system did not populate, fixed in
2.20).

Evidence: that WARN in any output; the NCCL versions and the variables NCCL echoed say which.
References: NVIDIA/nccl#1020 (2.19.3, fixed in 2.20), NVIDIA/nccl#879 (NCCL_HOSTID), NVIDIA/nccl#179.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "ring-not-closed"
TITLE = "Ranks computed different rings"
FIX = ("Run one NCCL version with the same NCCL_* settings on every rank, unset NCCL_HOSTID unless each host's value "
       "differs, and upgrade NCCL to the latest release (topology-detection defects such as 2.19's are fixed).")
CONFIRM = ("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH on every rank: compare 'NCCL version' and the 'set by "
           "environment' lines; rerun with the latest NCCL")
RING_OPEN = rx.compile(r"ring \d+ does not loop back to start")
# variables that shape the graph every rank must agree on
GRAPH_VARS = ("NCCL_HOSTID", "NCCL_TOPO_FILE", "NCCL_GRAPH_FILE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",
              "NCCL_CROSS_NIC", "NCCL_ALGO", "NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, RING_OPEN, ("warn", "last-error", "error", "app"))
    if not found:
        return []
    versions = C.nccl_versions(inp)
    if len({C.version_tuple(v) for v in versions}) > 1:
        return [C.make(sys.modules[__name__], f"ranks run different NCCL versions ({', '.join(versions)}) and "
                       f"built different rings{C.on(C.hosts(found))}", found, confidence="high",
                       category="version_mismatch",
                       why="NCCL's ring did not close and the log shows more than one NCCL version",
                       fix="Run one NCCL version on every rank (same container image, same nvidia-nccl wheel).")]
    hostid = C.env_values(inp, "NCCL_HOSTID")
    if hostid:
        return [C.make(sys.modules[__name__], f"NCCL_HOSTID={hostid[0]} is set and the ranks' rings do not close"
                       f"{C.on(C.hosts(found))}", found, confidence="medium", category="nccl_env_misconfig",
                       why="NCCL_HOSTID decides which ranks NCCL takes for one host; set alike on different hosts "
                           "it makes them one, and the ranks' graphs disagree",
                       fix="Unset NCCL_HOSTID (or give every host its own value).")]
    shaping = [v for v in GRAPH_VARS if v != "NCCL_HOSTID" and C.env_values(inp, v)]
    old = [v for v in versions if C.version_tuple(v) < (2, 20, 0)]
    why = ("NCCL's ring did not close: the ranks computed different graphs"
           + (f"; NCCL {', '.join(old)} predates the 2.20 fix of uninitialised PCI link speeds" if old else "")
           + (f"; {', '.join(shaping)} set: check every rank has the same value" if shaping else ""))
    return [C.make(sys.modules[__name__], f"NCCL's rings do not close: the ranks computed different graphs"
                   f"{C.on(C.hosts(found))}", found, confidence="medium" if old else "low", why=why,
                   alternatives=["version_mismatch: different NCCL versions on the ranks (compare 'NCCL version' "
                                 "lines of every rank)",
                                 "nccl_env_misconfig: a graph setting (NCCL_HOSTID, NCCL_TOPO_FILE, ...) differing "
                                 "between ranks"],
                   missing=[] if versions else ["the NCCL version of every rank (NCCL_DEBUG=INFO prints it)"])]
