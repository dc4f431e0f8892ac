"""Verdicts sent back to Slurm (pure): which nodes to drain, with what reason, and which to resume.

* A node whose check failed is drained with the reason ``nccldiag: <what failed>``.
* A node whose failures are all of checks a site spec's ``[drain]`` does not
  drain for is held: neither drained nor resumed.
* A node that could not be checked is drained only when asked
  (``--drain-unchecked``), with the reason ``nccldiag: unchecked: <why>``.
* A drained node is resumed only when its reason starts with ``nccldiag:``
  (nccldiag drained it) and it passed this time. A node drained by anyone
  else is never touched, and neither is a node that is not drained.
* A host that is no Slurm node is never drained or resumed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

from nccldiag.slurm.nodes import REASON_PREFIX, SlurmNode

REASON_PREFIX_UNCHECKED = REASON_PREFIX + " unchecked:"
REASON_MAX = 120  # characters; sinfo -R shows the first 20 by default, the rest with -o '%E'


@dataclass
class NodeVerdict:
    """One checked host as the verdicts see it."""

    host: str
    status: str  # "pass" | "fail" | "unchecked" | "held" (fails only checks a site spec's [drain] does not drain for)
    failed: Sequence[str] = ()  # the check ids that failed (or why it is unchecked)


@dataclass
class Action:
    node: str  # the Slurm node name
    host: str  # the host as given
    action: str  # "drain" | "resume" | "keep"
    reason: str = ""
    why: str = ""  # for "keep": why nothing is done

    def to_dict(self) -> dict:
        return {"node": self.node, "host": self.host, "action": self.action, "reason": self.reason, "why": self.why}


def _clean(text: str) -> str:
    """Reason text: printable ASCII only, one line, no quotes (it is shown by sinfo and read by admins)."""
    out = "".join(c if 32 <= ord(c) < 127 and c not in "\"'`\\" else " " for c in text)
    return " ".join(out.split())


def reason_for(v: NodeVerdict) -> str:
    what = ", ".join(v.failed) if v.failed else "check failed"
    text = f"{REASON_PREFIX} " + ("unchecked: " if v.status == "unchecked" else "") + _clean(what)
    return text if len(text) <= REASON_MAX else text[:REASON_MAX - 3] + "..."


def to_drain(verdicts: Sequence[NodeVerdict], names: Mapping[str, str], drain_unchecked: bool = False) -> List[Action]:
    """The nodes to drain: every failing host that is a Slurm node (and unchecked ones when asked)."""
    out: List[Action] = []
    for v in verdicts:
        node = names.get(v.host)
        if node is None:
            continue
        if v.status == "fail" or (v.status == "unchecked" and drain_unchecked):
            out.append(Action(node, v.host, "drain", reason_for(v)))
    return out


def to_resume(verdicts: Sequence[NodeVerdict], names: Mapping[str, str],
              nodes: Mapping[str, SlurmNode]) -> List[Action]:
    """Nodes nccldiag drained earlier that pass now (resume), and drained ones left alone (keep, with why)."""
    out: List[Action] = []
    for v in verdicts:
        name = names.get(v.host)
        sn: Optional[SlurmNode] = nodes.get(name) if name else None
        if sn is None or not sn.drained:
            continue
        if not sn.ours:
            out.append(Action(sn.name, v.host, "keep", why=f"drained by someone else ({sn.reason or 'no reason'})"))
        elif v.status == "held":
            out.append(Action(sn.name, v.host, "keep", why="does not pass (fails " + ", ".join(v.failed)
                              + ", which the site spec's [drain] does not drain for)"))
        elif v.status != "pass":
            out.append(Action(sn.name, v.host, "keep", why=f"does not pass ({v.status})"))
        else:
            out.append(Action(sn.name, v.host, "resume", reason=sn.reason))
    return out


def index(nodes: Sequence[SlurmNode]) -> Dict[str, SlurmNode]:
    return {n.name: n for n in nodes}
