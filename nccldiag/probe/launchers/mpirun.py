"""``--launcher mpirun``: Open MPI's mpirun on the first node starts every rank over its own SSH.

mpirun maps ``nproc`` ranks per node in host order and tags each line with
its rank (``--tag-output``); the interface map it carries names the nodes by
their own host names. A rank that died is told by "mpirun noticed that process rank N ...
exited on signal S", naming its node.
"""
from __future__ import annotations

import re
import shlex
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from nccldiag import rx
from nccldiag.node.collectives import MPI_CHECK
from nccldiag.probe import launch
from nccldiag.probe.launchers.base import OverSSH, Tagging, by_hostname
from nccldiag.probe.launchers.torchrun import STOP_SIGNALS

# at the start of a line: a rank's own stderr comes through mpirun tagged ([1,r]<stderr>:), never bare
_MPI_SIGNAL = rx.compile(r"^mpirun noticed that process rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<node>\S+) "
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


def mpi_hostfile(hosts: Sequence[str], slots: int) -> str:
    return "".join(f"{h} slots={slots}\n" for h in hosts)


def command(
    spec: launch.LaunchSpec,
    hosts: Sequence[str],
    ifnames: Mapping[str, Optional[str]],
    ssh_args: str = "-o BatchMode=yes -o ConnectTimeout=10",
    as_root: bool = False,
    timeout: Optional[int] = None,
) -> Tuple[str, str]:
    """``(command, hostfile text)`` for mpirun started on the first host.

    ``ifnames`` maps each node's own host name to the interface it reaches
    rank 0 on. Every variable goes with ``-x NAME`` (set in mpirun's own
    environment; its parser does not understand quotes); when the nodes name
    their interfaces differently, ``NCCLDIAG_IFNAMES`` carries the map and
    each rank picks its own. The SSH options are given to both Open MPI 4
    (``plm_rsh_args``) and 5 (``plm_ssh_args``) through the environment, where
    each ignores the other's name.
    """
    names = {v for v in ifnames.values() if v}
    same = names.pop() if len(names) == 1 and all(ifnames.values()) else None
    env = launch.node_env(spec, same)
    if same is None and names | {v for v in ifnames.values() if v}:
        env["NCCLDIAG_IFNAMES"] = ",".join(f"{h}={i}" for h, i in ifnames.items() if i)
    env["OMPI_MCA_plm_rsh_args"] = ssh_args
    env["PRTE_MCA_plm_ssh_args"] = ssh_args
    env["OMPI_MCA_plm_rsh_no_tree_spawn"] = "1"
    env["PRTE_MCA_plm_ssh_no_tree_spawn"] = "1"
    # Open MPI's session directories (ompi.*, prterun.*) inside the run directory, on every node
    env["OMPI_MCA_orte_tmpdir_base"] = env["TMPDIR"]
    env["PRTE_MCA_prte_tmpdir_base"] = env["TMPDIR"]
    if same:
        env["OMPI_MCA_btl_tcp_if_include"] = same
        env["OMPI_MCA_oob_tcp_if_include"] = same
    if as_root:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    exported = [k for k in env if not k.startswith(("OMPI_", "PRTE_"))]
    argv = ["mpirun", "--hostfile", "hostfile", "-np", str(len(hosts) * spec.nproc_per_node),
            "--map-by", f"ppr:{spec.nproc_per_node}:node", "--bind-to", "none", "--tag-output"]
    if timeout:
        argv += ["--timeout", str(int(timeout))]
    for k in exported:
        argv += ["-x", k]
    argv += [spec.python, "-m", "nccldiag.node.worker", "--bootstrap", "mpi"] + list(spec.worker_args)
    inner = f"env {launch.env_words(env)} " + " ".join(shlex.quote(a) for a in argv)
    return launch.wrap(inner, spec.rundir, spec.run_id, spec.watchdog), mpi_hostfile(hosts, spec.nproc_per_node)


class Mpirun(OverSSH):
    name = "mpirun"
    # --tag-output: ``[1,r]<stdout>:``; the ranks check MPI itself first (the worker's --bootstrap mpi)
    tagging = Tagging("mpirun", rx.compile(r"^\[\d+,(\d+)\]<stdout>: ?"), adds=(MPI_CHECK,))

    def commands(self, spec, nodes, prep, bounds, name: str = "nccldiag-probe") -> Dict[str, str]:
        cmd, hostfile = command(spec, [n.name for n in nodes], by_hostname(nodes, prep),
                                              as_root=True, timeout=bounds.launcher)
        write = f"printf %s {shlex.quote(hostfile)} > {shlex.quote(spec.rundir)}/hostfile && "
        return {nodes[0].name: write + cmd}

    def deaths(self, text: str) -> List[Dict[str, object]]:
        return noticed(text)


LAUNCHER = Mpirun()
