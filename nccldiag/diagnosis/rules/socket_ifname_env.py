"""NCCL_SOCKET_IFNAME set to an interface that does not exist on some node (or matches nothing there): NCCL on
that node finds no interface, then fails with an internal error, 'no socket interface found', or connects with an
uninitialised address ('family 59936 is neither AF_INET nor AF_INET6'). Only the nodes lacking the interface
fail; the others wait.

Evidence: NCCL_SOCKET_IFNAME echoed by NCCL beside a no-interface or garbled-address failure; an NCCL internal
error at init on some hosts only (medium: the environment was not logged).
References: NVIDIA/nccl#1837; NVIDIA/nccl-tests#219.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.diagnosis.signs import NO_IFACE

ID = "socket-ifname-env"
TITLE = "NCCL_SOCKET_IFNAME names an interface a node lacks"
FIX = ("Set NCCL_SOCKET_IFNAME to an interface every node has ('ip -br link' on each), or to a prefix that matches "
       "each node's data interface (NCCL_SOCKET_IFNAME=en matches enp4s0 and enp6s0; '=eth0' matches exactly with "
       "'=' first); unset it to let NCCL choose.")
CONFIRM = "on each node: ip -br addr | grep <NCCL_SOCKET_IFNAME>"

GARBLED = rx.compile(r"family \d+ is neither AF_INET|neither AF_INET\(2\) nor AF_INET6")
INTERNAL = rx.compile(r"internal error|ncclInternalError|Internal check failed")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    names = C.env_values(inp, "NCCL_SOCKET_IFNAME")
    broken = C.find(inp, NO_IFACE, ("warn", "last-error", "error")) + C.find(inp, GARBLED, ("warn", "last-error",
                                                                                          "error", "app"))
    if names and broken:
        return [C.make(sys.modules[__name__], f"NCCL_SOCKET_IFNAME={', '.join(names)} matches no interface"
                       f"{C.on(C.hosts(broken))}", broken, confidence="high",
                       why="NCCL was told which interface to use and found none by that name")]
    garbled = C.find(inp, GARBLED, ("warn", "last-error", "error", "app"))
    if garbled and not names and not C.find(inp, NO_IFACE, ("warn", "last-error", "error")):
        # ranks that read each other's bootstrap messages wrong: different NCCL versions on the nodes
        return [C.make(sys.modules[__name__], "ranks exchanged bootstrap addresses they could not read (a garbled "
                       f"address family){C.on(C.hosts(garbled))}: different NCCL versions on the nodes", garbled,
                       confidence="medium", category="version_mismatch", title="NCCL versions differ across nodes",
                       fix=("Run one NCCL everywhere: compare 'python -c \"import torch; print(torch.cuda.nccl.version())\"' "
                            "and the 'NCCL version' line of every node; remove stray nvidia-nccl-cu11/cu12 wheels and "
                            "system copies found first on LD_LIBRARY_PATH."),
                       why="a peer's bootstrap message decoded as an address of an unknown family: the two sides "
                           "do not share one NCCL's message layout",
                       alternatives=["nccl_env_misconfig: NCCL_SOCKET_IFNAME matching no interface on one node gives "
                                     "the same garbled address; NCCL_DEBUG=INFO shows which"])]
    # an internal error at init on some hosts only: the node that differs (its interfaces) is the usual cause
    internal = [c for c in C.find(inp, INTERNAL, ("app", "last-error", "warn")) if c.host]
    all_hosts = set()
    for ls in inp.log_sets():
        for r in list(ls.facts.nccl_tests) + list(ls.facts.nccl_tests_no_result):
            all_hosts.update(r.hosts)
        all_hosts.update(p.host for p in ls.facts.procs)
    failing = set(C.hosts(internal))
    if internal and all_hosts and failing and failing < all_hosts:
        return [C.make(sys.modules[__name__], f"NCCL failed at init with an internal error on {', '.join(sorted(failing))} "
                       "only: its configuration differs (NCCL_SOCKET_IFNAME naming an interface it lacks is the usual "
                       "cause)", internal, confidence="low",
                       why="the other hosts of the same run did not fail: what differs is that host's set-up",
                       alternatives=["version_mismatch: a different NCCL on that host; compare 'NCCL version' lines"])]
    return []
