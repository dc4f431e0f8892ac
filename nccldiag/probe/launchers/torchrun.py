"""``--launcher torchrun`` (isolate: ``ssh``): torchrun on every node over SSH, static rendezvous on the first.

Node ``i`` runs ranks ``i*nproc ..`` and streams them itself, so each
node's output speaks for its own ranks. A rank that died is told by
an entry of torchrun's failure table: its "Root Cause (first observed
failure)" block, or one of its other "Failures" (a rank another rank's
exit beat to the agent's poll).
"""
from __future__ import annotations

import re
import shlex
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.probe import launch
from nccldiag.probe.launchers.base import OverSSH

# one entry of torchrun's failure table ('[1]:' then its time, host, rank, exitcode, error_file, traceback lines),
# under "Failures:" or "Root Cause (first observed failure):"
_ENTRY = rx.compile(r"^[ \t]*\[\d{1,6}\]:[ \t]*$(?P<block>(?:\n.*){0,8})", re.M)
_ENTRY_END = rx.compile(r"^[ \t]*(?:\[\d{1,6}\]:|Root Cause|Failures:|[-=]{8})", re.M)
_RC_RANK = rx.compile(r"^\s*rank\s*:\s*(?P<rank>\d+)(?: \(local_rank: (?P<local>\d+)\))?", re.M)
_RC_EXIT = rx.compile(r"^\s*exitcode\s*:\s*(?P<code>-?\d+)(?: \(pid: (?P<pid>\d+)\))?(?:\s+\((?P<sig>SIG\w+)\))?", re.M)
STOP_SIGNALS = {1, 2, 15}  # SIGHUP, SIGINT, SIGTERM: a stop asked for, not a death


def root_cause(text: str) -> List[Dict[str, object]]:
    """Ranks torchrun's failure tables say were killed by a signal (pure): ``rank``, ``signal``, ``name``,
    ``local_rank``, each rank once. Every entry counts, the root cause's and the other failures': when a killed
    rank's peer exits on the broken connection within the same poll of the agent, torchrun may name the peer
    the root cause and list the killed rank among the failures. A signal that asks a process to stop is left
    out: torchrun sends it to the ranks it stops after another rank failed."""
    out: List[Dict[str, object]] = []
    seen = set()
    for m in _ENTRY.finditer(text or ""):
        block = m.group("block")
        end = _ENTRY_END.search(block)
        block = block[:end.start()] if end else block
        r, e = _RC_RANK.search(block), _RC_EXIT.search(block)
        if not r or not e or int(e.group("code")) >= 0 or -int(e.group("code")) in STOP_SIGNALS:
            continue
        rank = int(r.group("rank"))
        if rank in seen:
            continue
        seen.add(rank)
        out.append({"rank": rank, "local_rank": int(r.group("local")) if r.group("local") else None,
                    "signal": -int(e.group("code")), "name": e.group("sig") or f"signal {-int(e.group('code'))}"})
    return out


def command(spec: launch.LaunchSpec, nnodes: int, node_rank: int, ifname: Optional[str]) -> str:
    """The torchrun command for one node: static rendezvous, node rank = its index in the host list.

    Static rendezvous needs no host-name matching: rank 0's agent serves the
    store on ``rdzv_host:rdzv_port`` (an address, as the first node was
    reached), every other agent connects to it, and each node's rank is
    given. c10d rendezvous instead resolves the node's own host name to
    decide which agent hosts the store, and fails on nodes whose name does
    not resolve. The store's ``timeout`` bounds both the wait for every node
    to join and each connect attempt.
    """
    argv = [
        spec.python, "-m", "nccldiag.node.torchrun",
        f"--nnodes={nnodes}",
        f"--nproc-per-node={spec.nproc_per_node}",
        "--rdzv-backend=static",
        f"--node-rank={int(node_rank)}",
        f"--master-addr={spec.rdzv_host}",
        f"--master-port={int(spec.rdzv_port)}",
        f"--rdzv-id={spec.run_id}",
        f"--rdzv-conf=timeout={int(spec.join_timeout)}",
        "--max-restarts=0",
        "--monitor-interval=0.2",
        "-m", "nccldiag.node.worker",
    ] + list(spec.worker_args)
    inner = f"env {launch.env_words(launch.node_env(spec, ifname))} " + " ".join(shlex.quote(a) for a in argv)
    return launch.wrap(inner, spec.rundir, spec.run_id, spec.watchdog)


class Torchrun(OverSSH):
    name = "torchrun"
    jobs = True

    def commands(self, spec, nodes, prep, bounds, name: str = "nccldiag-probe") -> Dict[str, str]:
        return {n.name: command(spec, len(nodes), i, prep.ifnames.get(n.name))
                for i, n in enumerate(nodes)}

    def deaths(self, text: str) -> List[Dict[str, object]]:
        return root_cause(text)


LAUNCHER = Torchrun()
