"""``--launcher torchrun`` (isolate: ``ssh``): torchrun on every node over SSH, static rendezvous on the first.

Node ``i`` runs ranks ``i*nproc ..`` and streams them itself, so each
node's output speaks for its own ranks. A rank that died is told by
torchrun's "Root Cause (first observed failure)" block.
"""
from __future__ import annotations

import re
from typing import Dict, List

from nccldiag.probe import launch
from nccldiag.probe.launchers.base import OverSSH

_ROOT_CAUSE = re.compile(r"Root Cause \(first observed failure\):(?P<block>(?:\n.*){0,8})")
_RC_RANK = re.compile(r"^\s*rank\s*:\s*(?P<rank>\d+)(?: \(local_rank: (?P<local>\d+)\))?", re.M)
_RC_EXIT = re.compile(r"^\s*exitcode\s*:\s*(?P<code>-?\d+)(?: \(pid: (?P<pid>\d+)\))?(?:\s+\((?P<sig>SIG\w+)\))?", re.M)
STOP_SIGNALS = {1, 2, 15}  # SIGHUP, SIGINT, SIGTERM: a stop asked for, not a death


def root_cause(text: str) -> List[Dict[str, object]]:
    """Ranks torchrun's root-cause blocks say were killed by a signal (pure): ``rank``, ``signal``, ``name``,
    ``local_rank``. A signal that asks a process to stop is left out: torchrun sends it to the ranks it stops
    after another rank failed."""
    out: List[Dict[str, object]] = []
    for m in _ROOT_CAUSE.finditer(text or ""):
        block = m.group("block")
        r, e = _RC_RANK.search(block), _RC_EXIT.search(block)
        if not r or not e or int(e.group("code")) >= 0 or -int(e.group("code")) in STOP_SIGNALS:
            continue
        out.append({"rank": int(r.group("rank")), "local_rank": int(r.group("local")) if r.group("local") else None,
                    "signal": -int(e.group("code")), "name": e.group("sig") or f"signal {-int(e.group('code'))}"})
    return out


class Torchrun(OverSSH):
    name = "torchrun"
    jobs = True

    def commands(self, spec, nodes, prep, bounds, name: str = "nccldiag-probe") -> Dict[str, str]:
        return {n.name: launch.torchrun_command(spec, len(nodes), i, prep.ifnames.get(n.name))
                for i, n in enumerate(nodes)}

    def deaths(self, text: str) -> List[Dict[str, object]]:
        return root_cause(text)


LAUNCHER = Torchrun()
