"""What every launcher's command is built on (pure: the commands are printed by ``--dry-run``); each launcher
module (:mod:`nccldiag.probe.launchers`) builds its own command from these pieces.

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
from typing import Dict, List, Mapping, Optional

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


def env_words(env: Mapping[str, str]) -> str:
    """``K=V`` words for ``env`` on an sh command line, each value quoted."""
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
    """Run ``inner`` as the leader of a new session, under a watchdog.

    The watchdog polls once a second, as long as the launcher lives, whether
    the shell's parent (sshd's session, or nccldiag itself on this machine)
    still exists and whether ``watchdog`` seconds have passed. If the parent
    is gone it kills every process marked with the run and removes the run
    directory, even when the launcher ended in the same second (ranks whose
    output went to a closed SSH channel die of it); at the deadline it kills
    them. Its output goes nowhere, so it never holds the SSH channel open.
    """
    q = shlex.quote(rundir)
    launcher = f"setsid -w sh -c {shlex.quote('exec ' + inner)}"
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
