"""NCCL's IB transport using ports of two link layers: an Ethernet port with RoCE (a bond, a front-end or storage
port) taken beside InfiniBand HCAs, because NCCL_IB_HCA does not restrict the devices to the fabric's. NCCL spreads
its channels over every device it lists, so the traffic given to the RoCE port runs at that network's speed (the
book's example: 'would almost certainly lead to a low bandwidth') or cannot reach the peers' InfiniBand ports at all.

Evidence: one 'NET/IB : Using' line (behind NCCL's prefix or pasted without it) whose devices end in both '/IB' and
'/RoCE': a warning, the run's own failure (if any) is judged by the causes that read it.
References: Stas Bekman, Machine Learning Engineering Open Book, 'Network Debug' (the mlx5_bond_0 example,
tests/cases/net-mlengineering-nccl-net-ib-mlx5-bond-roce-included-low-bandwidth); NCCL env docs (NCCL_IB_HCA).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "ib-hca-mixed-link-layers"
TITLE = "NCCL uses an Ethernet (RoCE) port beside its InfiniBand HCAs"
FIX = ("Restrict NCCL to the fabric's HCAs: NCCL_IB_HCA=^=<the RoCE port> (e.g. ^=mlx5_bond_0) or the IB HCAs listed "
       "explicitly (NCCL_IB_HCA==mlx5_0,mlx5_1,...); then check with NCCL_DEBUG=INFO that the 'NET/IB : Using' line "
       "lists only '/IB' ports, and that all-reduce bandwidth reaches the fabric's.")
CONFIRM = "ibstat | grep -e \"CA '\" -e 'Link layer'  (the ports NCCL lists, with their link layer)"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found: List[C.Clue] = []
    roce: List[str] = []
    for ls in inp.log_sets():
        for n in ls.facts.nets:
            links = {d.link for d in n.devices}
            if "IB" in links and "RoCE" in links:
                found.append(C.Clue("error", n.text, n.at, n.text, n.at.host))
                roce += [d.name for d in n.devices if d.link == "RoCE" and d.name not in roce]
    if not found:
        return []
    return [C.make(sys.modules[__name__], f"NCCL's IB transport lists RoCE port(s) {', '.join(roce[:4])} beside "
                   f"InfiniBand HCAs{C.on(C.hosts(found))}", found[:1], confidence="medium", severity="warn",
                   why="the devices of one 'NET/IB : Using' line are of two link layers: an Ethernet port with RoCE "
                       "next to the InfiniBand HCAs is a host's other network (bond, front-end, storage), and the "
                       "channels NCCL gives it run at that network's speed or cannot reach the peers' IB ports",
                   alternatives=["a deliberate dual-fabric set-up: then the peers must have the same RoCE network "
                                 "and the bandwidth tells whether it holds"])]
