"""Launch commands for probes (pure: they are printed by ``--dry-run``).

Every remote command is built from validated host names and shell-quoted
values only. Each launch runs under ``setsid -w`` so that the launcher and
every rank it starts share one process group that can be killed as a unit,
and carries ``NCCLDIAG_RUN=<id>`` in its environment so that any process of
the run can be found (and killed) even if it left the group.

A watchdog beside each launch keeps the ranks from outliving nccldiag: when
the process that started the launch is gone (nccldiag was killed, or its SSH
connection dropped) it kills every process of the run and removes the run
directory, and past the run's deadline it kills them in any case.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

RUN_MARK = "NCCLDIAG_RUN"


@dataclass
class LaunchSpec:
    run_id: str
    rundir: str  # where the worker package is on every node (PYTHONPATH)
    python: str = "python3"
    nproc_per_node: int = 1
    rdzv_host: str = "127.0.0.1"
    rdzv_port: int = 29400
    env: Dict[str, str] = field(default_factory=dict)  # setting + debug variables, same on every node
    worker_args: List[str] = field(default_factory=list)
    join_timeout: int = 30
    use_installed: bool = False  # the local launcher runs the installed nccldiag
    watchdog: int = 0  # seconds after which the node kills the run itself (0: no watchdog)


def _env_words(env: Mapping[str, str]) -> str:
    return " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items())


TMP = "tmp"  # the run directory's own temporary directory: TMPDIR of the launcher and every rank


def node_env(spec: LaunchSpec, ifname: Optional[str]) -> Dict[str, str]:
    # TMPDIR inside the run directory: what torchrun and the ranks leave there (torchelastic_*) goes with it
    env = {RUN_MARK: spec.run_id, "PYTHONUNBUFFERED": "1", "TMPDIR": f"{spec.rundir}/{TMP}"}
    if not spec.use_installed:
        env["PYTHONPATH"] = spec.rundir
    if ifname:
        env.setdefault("GLOO_SOCKET_IFNAME", ifname)
        env.setdefault("NCCL_SOCKET_IFNAME", ifname)
    env.update(spec.env)
    if ifname and "NCCL_SOCKET_IFNAME" in spec.env:
        env["NCCL_SOCKET_IFNAME"] = spec.env["NCCL_SOCKET_IFNAME"]
    return env


REFUSED = 3  # exit status of a staging command that refused the run directory (its reason on stderr)


def make_rundir(rundir: str) -> str:
    """sh that creates the run directory so that it cannot have existed before, or refuses.

    ``mkdir`` without ``-p`` fails on anything already at the path (a
    directory, a file, a link), so a directory a local user made there first,
    with files planted for the ranks to import or links for nccldiag to write
    through, is never used: the node is refused with the reason on stderr.
    The parent must be owned by root or this user and not writable by others
    unless sticky (as ``/tmp`` is): in any other parent a user could move the
    new directory away and put theirs in its place. Created mode 700 under
    ``umask 077``; nothing else may enter it.
    """
    q = shlex.quote(rundir)
    parent = os.path.dirname(rundir.rstrip("/")) or "/"
    base = shlex.quote(parent)
    return (
        f"umask 077; [ -d {base} ] || {{ echo \"nccldiag: {_sq(parent)} is not a directory on $(hostname)\" >&2; "
        f"exit {REFUSED}; }}; "
        f"[ -z \"$(find -H {base} -maxdepth 0 \\( \\( ! -user 0 ! -user \"$(id -u)\" \\) -o "
        f"\\( -perm /022 ! -perm -1000 \\) \\) -print 2>/dev/null)\" ] || "
        f"{{ echo \"nccldiag: {_sq(parent)} on $(hostname) belongs to another user, or others may write in it "
        f"without the sticky bit: the run directory is not staged there\" >&2; exit {REFUSED}; }}; "
        f"if [ -e {q} ] || [ -h {q} ]; then echo \"nccldiag: {_sq(rundir)} already exists on $(hostname) and this "
        f"run did not make it: refusing to use it (someone else created it first; remove it after a look)\" >&2; "
        f"exit {REFUSED}; fi; "
        f"mkdir -m 700 -- {q} {shlex.quote(rundir + '/' + TMP)} || exit {REFUSED}; "
    )


def owned_rundir(rundir: str) -> str:
    """sh that goes on only if ``rundir`` is this user's own directory, not a link, closed to everyone else.

    Every command that works in a run directory starts with it, so one that
    another user made or opened is never entered, written or removed.
    """
    q = shlex.quote(rundir)
    return (
        f"{{ [ -d {q} ] && [ ! -h {q} ] && [ -O {q} ] && [ -z \"$(find {q} -maxdepth 0 -perm /077 2>/dev/null)\" ]; }} || "
        f"{{ echo \"nccldiag: {_sq(rundir)} on $(hostname) is not this run's own directory (missing, a link, "
        f"another user's, or open to others): refusing to use it\" >&2; exit {REFUSED}; }}; "
    )


def _sq(text: str) -> str:
    """``text`` for inside a double-quoted sh string: no expansion, no end of the string."""
    return re.sub(r'([\\$`"])', r"\\\1", text)


def wrap(inner: str, rundir: str, run_id: str = "", watchdog: int = 0) -> str:
    """Run ``inner`` as the leader of a new session, recording its PGID, under a watchdog.

    The watchdog polls once a second, as long as the launcher lives, whether
    the shell's parent (sshd's session, or nccldiag itself on this machine)
    still exists and whether ``watchdog`` seconds have passed. If the parent
    is gone it kills every process marked with the run and removes the run
    directory, even when the launcher ended in the same second (ranks whose
    output went to a closed SSH channel die of it); at the deadline it kills
    them. Its output goes nowhere, so it never holds the SSH channel open.
    """
    q = shlex.quote(rundir)
    body = f"echo $$ > {q}/launcher.pgid; exec {inner}"
    launcher = f"setsid -w sh -c {shlex.quote(body)}"
    if not watchdog or not run_id:
        return f"{owned_rundir(rundir)}cd {q} && exec {launcher}"
    guard = (
        f"_n={int(watchdog)}; "
        "while [ $_n -gt 0 ] && kill -0 $_w 2>/dev/null && kill -0 $_l 2>/dev/null; do sleep 1; _n=$((_n-1)); done; "
        f"if ! kill -0 $_w 2>/dev/null; then {kill_command(run_id)}; rm -rf -- {q}; "
        f"elif kill -0 $_l 2>/dev/null; then {kill_command(run_id)}; fi"
    )
    return (f"{owned_rundir(rundir)}cd {q} && _w=$PPID && {{ {launcher} & _l=$!; "
            f"( {guard} ) </dev/null >/dev/null 2>&1 & wait $_l; }}")


def rundir_watchdog(rundir: str, run_id: str, seconds: int) -> str:
    """sh that leaves a watchdog beside a run directory just staged, and returns at once (no output).

    As long as the directory is there, it polls once a second whether the
    staging shell's parent (sshd's session, which lives as long as
    nccldiag's connection to the node) still exists. When that parent is
    gone (nccldiag was killed, even during staging, or its connection
    dropped), or ``seconds`` have passed, it kills every process of the run
    and of its jobs and removes the directory, if it is still this user's
    own. The nodes that run no launcher of their own (mpirun's other nodes)
    are covered too: every node that holds a run directory has one.
    """
    q = shlex.quote(rundir)
    guard = (
        f"_n={int(seconds)}; "
        f"while [ $_n -gt 0 ] && [ -d {q} ] && kill -0 $_w 2>/dev/null; do sleep 1; _n=$((_n-1)); done; "
        f"[ -d {q} ] || exit 0; {kill_command(run_id, jobs=True)}; "
        f"if [ -d {q} ] && [ ! -h {q} ] && [ -O {q} ]; then rm -rf -- {q}; fi"
    )
    return f"_w=$PPID; ( {guard} ) </dev/null >/dev/null 2>&1 & "


def torchrun_command(spec: LaunchSpec, nnodes: int, node_rank: int, ifname: Optional[str]) -> str:
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
        spec.python, "-m", "torch.distributed.run",
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
    inner = f"env {_env_words(node_env(spec, ifname))} " + " ".join(shlex.quote(a) for a in argv)
    return wrap(inner, spec.rundir, spec.run_id, spec.watchdog)


def local_command(spec: LaunchSpec, ifname: Optional[str] = None) -> List[str]:
    """argv for all ranks on this machine (``--launcher local``)."""
    return [
        spec.python, "-m", "torch.distributed.run", "--standalone",
        f"--nproc-per-node={spec.nproc_per_node}", "--max-restarts=0", "--monitor-interval=0.2",
        "-m", "nccldiag.node.worker",
    ] + list(spec.worker_args)


def mpi_hostfile(hosts: Sequence[str], slots: int) -> str:
    return "".join(f"{h} slots={slots}\n" for h in hosts)


def mpirun_command(
    spec: LaunchSpec,
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
    env = node_env(spec, same)
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
    inner = f"env {_env_words(env)} " + " ".join(shlex.quote(a) for a in argv)
    return wrap(inner, spec.rundir, spec.run_id, spec.watchdog), mpi_hostfile(hosts, spec.nproc_per_node)


def srun_command(
    spec: LaunchSpec,
    nodes: Sequence[str],
    ifnames: Mapping[str, Optional[str]],
    job: str,
    timeout: float,
    name: str = "nccldiag-probe",
) -> str:
    """The srun command, run on this machine, that starts every rank of one setting: one task per rank.

    ``nodes`` are Slurm node names; ``ifnames`` maps each node's own host name
    to its interface towards rank 0. Each task is one rank (srun sets
    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the worker's ``--bootstrap
    slurm`` maps them to RANK, WORLD_SIZE, LOCAL_RANK), with rank 0's node
    address and port as MASTER_ADDR/MASTER_PORT. ``--kill-on-bad-exit`` ends
    every rank when one fails; the step's time limit is ``timeout`` rounded
    up to minutes, and nccldiag's own deadline stops it sooner. ``name`` is
    the step's name (``squeue --steps``), by which it can be cancelled.
    ``--label`` puts each line's task number (its rank) in front of it, which
    binds the rank's records to the node srun started it on.
    """
    from nccldiag.slurm import commands

    names = {v for v in ifnames.values() if v}
    same = names.pop() if len(names) == 1 and all(ifnames.values()) else None
    env = node_env(spec, same)
    if same is None and any(ifnames.values()):
        env["NCCLDIAG_IFNAMES"] = ",".join(f"{h}={i}" for h, i in ifnames.items() if i)
    env["MASTER_ADDR"] = spec.rdzv_host
    env["MASTER_PORT"] = str(int(spec.rdzv_port))
    argv = commands.srun_step(list(nodes), spec.nproc_per_node, timeout, job=job, kill_on_bad_exit=True,
                              chdir=spec.rundir, name=name, label=True)
    argv += [spec.python, "-m", "nccldiag.node.worker", "--bootstrap", "slurm"] + list(spec.worker_args)
    return f"exec env {_env_words(env)} " + " ".join(shlex.quote(a) for a in argv)


def _marked_pids(run_id: str, jobs: bool = False) -> str:
    """sh that sets ``$_p`` to the pids whose environment holds the run's marker (one grep for all).

    ``jobs``: the markers of the run's jobs too (``<run_id>-<n>``, as ``isolate`` gives each job).
    """
    mark = f"^{RUN_MARK}={run_id}" + ("\\(-[0-9][0-9]*\\)\\{0,1\\}$" if jobs else "$")
    return (f"_p=$(grep -lsaz {shlex.quote(mark)} /proc/[0-9]*/environ 2>/dev/null "
            "| sed -n 's|^/proc/\\([0-9]*\\)/environ$|\\1|p' | grep -vx \"$$\")")


def kill_command(run_id: str, jobs: bool = False) -> str:
    """Kill every process of run ``run_id`` on a node (they carry the marker in their environment)."""
    return _marked_pids(run_id, jobs) + '; [ -n "$_p" ] && kill -9 $_p 2>/dev/null; true'


def survivors_command(run_id: str, wait: float = 2.0) -> str:
    """List ``pid cmdline`` of processes of run ``run_id`` still alive on a node.

    Run right after :func:`kill_command`: processes still exiting from the
    kill are waited for, up to ``wait`` seconds, and one whose command line
    is already gone (it is exiting) is not listed.
    """
    polls = max(1, int(wait / 0.1))
    return (
        f"_i=0; while :; do {_marked_pids(run_id)}; [ -z \"$_p\" ] || [ $_i -ge {polls} ] && break; "
        "_i=$((_i+1)); sleep 0.1; done; for _q in $_p; do [ -d /proc/$_q ] || continue; "
        "_c=$(tr '\\0' ' ' < /proc/$_q/cmdline 2>/dev/null | cut -c1-200); [ -n \"$_c\" ] || continue; "
        "printf '%s %s\\n' \"$_q\" \"$_c\"; done; true"
    )


def iface_command(peer: str) -> str:
    """Print the interface a node uses to reach ``peer`` (its own if it holds it)."""
    q = shlex.quote(peer)
    return (
        f"d=$(ip -o addr show to {q} 2>/dev/null | awk '{{print $2; exit}}'); "
        f"[ -n \"$d\" ] || d=$(ip -o route get {q} 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n1); "
        "echo \"iface=$d\"; "
        "echo \"self=$(getent ahosts \"$(hostname)\" 2>/dev/null | awk '{print $1}' | sort -u | tr '\\n' ' ')\"; "
        "echo \"hostname=$(hostname)\""
    )
