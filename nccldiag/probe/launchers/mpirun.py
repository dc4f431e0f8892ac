"""``--launcher mpirun``: Open MPI's mpirun on the first node starts every rank over its own SSH.

mpirun maps ``nproc`` ranks per node in host order and tags each line with
its rank (``--tag-output``); the interface map it carries names the nodes by
their own host names. A rank that died is told by "mpirun noticed that process rank N ...
exited on signal S", naming its node.
"""
from __future__ import annotations

import re
import shlex
from typing import Dict, List

from nccldiag.probe import launch
from nccldiag.probe.launchers.base import OverSSH, by_hostname
from nccldiag.probe.launchers.torchrun import STOP_SIGNALS

# at the start of a line: a rank's own stderr comes through mpirun tagged ([1,r]<stderr>:), never bare
_MPI_SIGNAL = re.compile(r"^mpirun noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<node>\S+) "
                         r"exited on signal (?P<signum>\d+)(?: \((?P<name>[^)]*)\))?", re.M)


def noticed(text: str) -> List[Dict[str, object]]:
    """Ranks mpirun says were killed by a signal (pure), each with the ``node`` mpirun names."""
    out: List[Dict[str, object]] = []
    for m in _MPI_SIGNAL.finditer(text or ""):
        sig = int(m.group("signum"))
        if sig not in STOP_SIGNALS:
            out.append({"rank": int(m.group("rank")), "local_rank": None, "signal": sig,
                        "name": f"signal {sig}" + (f" ({m.group('name')})" if m.group("name") else ""),
                        "node": m.group("node")})
    return out


class Mpirun(OverSSH):
    name = "mpirun"

    def commands(self, spec, nodes, prep, bounds, name: str = "nccldiag-probe") -> Dict[str, str]:
        cmd, hostfile = launch.mpirun_command(spec, [n.name for n in nodes], by_hostname(nodes, prep),
                                              as_root=True, timeout=bounds.launcher)
        write = f"printf %s {shlex.quote(hostfile)} > {shlex.quote(spec.rundir)}/hostfile && "
        return {nodes[0].name: write + cmd}

    def launched(self, nodes, nproc: int, collectives):
        from nccldiag.probe import results

        return results.Launched(tuple(n.name for n in nodes), nproc, collectives, tagged="mpirun")

    def deaths(self, text: str) -> List[Dict[str, object]]:
        return noticed(text)


LAUNCHER = Mpirun()
