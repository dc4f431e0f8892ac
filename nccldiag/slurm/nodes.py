"""Slurm's view of its nodes (pure): ``scontrol show node --oneliner`` parsed, hosts matched to node names.

A host in a hostfile may be a Slurm node name, an address or an alias. It is
matched by what Slurm and this machine say, never by what the node says: to
the node whose NodeName, NodeHostName or NodeAddr it is, then to the node
whose NodeAddr one of the host's resolved addresses is (a Slurm step's own
node, when the collection ran through srun, comes first: ``feedback.py``).
The host name a node reports is its own claim: a failing node that calls
itself by a healthy node's name would get that node drained. A host that
matches nothing has no Slurm node, and nccldiag never drains or resumes on
its behalf; nor does it for a Slurm node that two hosts match
(:func:`shared_nodes`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

from nccldiag import rx

REASON_PREFIX = "nccldiag:"

# States in which srun cannot start a step on the node (the node is skipped and
# reported unchecked, never failing).
UNAVAILABLE = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN",
               "FUTURE", "UNKNOWN", "REBOOT_ISSUED", "INVALID_REG")

_KV = rx.compile(r"(?<!\w)(\w+)=(.*?)(?=(?<!\s)\s+\w+=|$)")


@dataclass
class SlurmNode:
    name: str
    addr: str = ""
    hostname: str = ""
    state: str = ""  # e.g. IDLE, IDLE+DRAIN, DOWN*+DRAIN
    reason: str = ""
    extra: Dict[str, str] = field(default_factory=dict)

    @property
    def flags(self) -> List[str]:
        return [f.rstrip("*~#!%$@^-") for f in self.state.replace("*", "+NOT_RESPONDING").split("+") if f]

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.flags

    @property
    def available(self) -> bool:
        return not any(f in UNAVAILABLE for f in self.flags)

    @property
    def ours(self) -> bool:
        """Drained by nccldiag: its reason starts with nccldiag's prefix."""
        return self.reason.startswith(REASON_PREFIX)


def parse_show_node(text: str) -> List[SlurmNode]:
    """Nodes from ``scontrol show node --oneliner`` (one node a line, ``Key=Value`` words).

    ``Reason=`` is free text (spaces, commas, ``=``): it runs up to its
    ``[user@time]`` stamp, or to the end of the line.
    """
    nodes: List[SlurmNode] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("NodeName="):
            continue
        kv: Dict[str, str] = {}
        reason = ""
        at = line.find(" Reason=")
        if at >= 0:
            # free text, commas, spaces and '=' included, up to its "[user@time]" stamp
            rest = line[at + len(" Reason="):]
            m = re.search(r" \[[^\]\s]*@[^\]\s]*\]", rest)
            reason = (rest[:m.start()] if m else rest).strip()
            line = line[:at] + (rest[m.end():] if m else "")
        for k, v in _KV.findall(line):
            kv[k] = v.strip()
        nodes.append(SlurmNode(
            name=kv.get("NodeName", ""), addr=kv.get("NodeAddr", ""), hostname=kv.get("NodeHostName", ""),
            state=kv.get("State", ""), reason=reason,
            extra={k: v for k, v in kv.items() if k not in ("NodeName", "NodeAddr", "NodeHostName", "State")},
        ))
    return [n for n in nodes if n.name]


def match_hosts(
    hosts: Sequence[str],
    nodes: Sequence[SlurmNode],
    addresses: Optional[Mapping[str, Iterable[str]]] = None,
) -> Dict[str, str]:
    """``{host: Slurm node name}`` for every host that is a Slurm node.

    ``addresses`` maps a host to the addresses it resolves to on this machine.
    """
    by_name = {n.name: n for n in nodes}
    by_hostname = {n.hostname: n for n in nodes if n.hostname}
    by_addr = {n.addr: n for n in nodes if n.addr}
    out: Dict[str, str] = {}
    for h in hosts:
        found = by_name.get(h) or by_hostname.get(h) or by_addr.get(h)
        if found is None and addresses:
            found = next((by_addr[a] for a in addresses.get(h, ()) if a in by_addr), None)
        if found is not None:
            out[h] = found.name
    return out


def shared_nodes(names: Mapping[str, str]) -> Dict[str, List[str]]:
    """``{Slurm node: [hosts]}`` for every node that more than one host of ``names`` (``{host: node}``) maps to:
    which of them is the node cannot be told, so none of them drains or resumes it."""
    hosts: Dict[str, List[str]] = {}
    for h, n in names.items():
        hosts.setdefault(n, []).append(h)
    return {n: hs for n, hs in hosts.items() if len(hs) > 1}
