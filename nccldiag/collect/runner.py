"""Running the collection script on nodes (the I/O edge of ``check``/``collect``).

One SSH connection per host, one login and one round trip for all its data:
the script goes to ``sh -s`` on the node's standard input, its sections come
back on standard output. The node-to-node SSH test, when asked for, runs
within the same script, in the background from its start, its output the
script's last section.
"""
from __future__ import annotations

import dataclasses
import shlex
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable, List, Optional, Sequence

from nccldiag.areas import mesh
from nccldiag.areas.base import Source
from nccldiag.collect.script import HEARTBEAT, MESH_SECTION, build_script, source_names, with_mesh
from nccldiag.collect.sections import new_mark, split_sections
from nccldiag.model.raw import RawNode, released
from nccldiag.inventory import Host
from nccldiag.transport.base import COMMAND_TIMEOUT, NO_OUTPUT, PROTOCOL, ExecResult, TransportError
from nccldiag.transport.task import fan_out
from nccldiag.transport import sshconfig
from nccldiag.transport.local import LocalTransport
from nccldiag.transport.ssh import LoginGate, SSHConnection, SSHOptions


WHOLE_RUN = 4  # the collection on one node is bounded at this many --command-timeout
POLL = 1.0  # seconds between two reads of what a node sent (SSHConnection.run's poll)
LOGINS_QUEUED = 8  # logins one process keeps in progress while they queue (LoginGate's floor)


@dataclass
class CollectOptions:
    ssh: SSHOptions = field(default_factory=SSHOptions)
    fanout: int = 64
    python: str = "python3"
    import_torch: bool = False  # import torch even on nodes without NVIDIA GPUs
    mesh: str = "first"  # "none" | "first" (first host to every other) | "all" (every ordered pair)
    mesh_timeout: int = 5
    extra_sources: Sequence[Source] = ()
    mark: str = field(default_factory=new_mark)  # this run's section markers (NCCLDIAG_MARK)
    transport: str = "ssh"  # "ssh" | "srun" (one Slurm step on every node, no SSH)
    slurm_job: Optional[str] = None  # srun: the allocation the step runs in (None: srun asks for one)
    alloc: Optional[object] = None  # srun outside an allocation: slurm.commands.AllocRequest
    # the logins this process has in progress at once (collect_hosts makes one for its hosts)
    gate: Optional[LoginGate] = field(default=None, repr=False, compare=False)


def sources_of(areas: Sequence[ModuleType], extra: Sequence[Source] = ()) -> List[Source]:
    out: List[Source] = []
    for a in areas:
        out.extend(a.SOURCES)
    out.extend(extra)
    return out


def script_for(areas: Sequence[ModuleType], extra: Sequence[Source] = (), mark: str = "") -> str:
    """The collection script; with ``mark`` (a run's ``opts.mark``) written into it, never sent otherwise."""
    return build_script(sources_of(areas, extra), [a.NAME for a in areas], mark)


def _script_env(opts: CollectOptions) -> dict:
    env = {"NCCLDIAG_PYTHON": opts.python}
    if opts.import_torch:
        env["NCCLDIAG_IMPORT_TORCH"] = "1"
    return env


def _to_raw(host: str, result: ExecResult, mark: str, script: str) -> RawNode:
    """The node from the script's output. A collection cut short keeps the sections that came (the engine
    judges the areas whose sources all ended and marks the others not checked), with its cause: a timeout
    (``extra["timeout"]``), or the transport's error (output over the cap, a connection lost, a channel
    closed with no exit status)."""
    sections, rcs, truncated = split_sections(result.stdout, mark, source_names(script))
    node = RawNode(host=host, sections=sections, rcs=rcs, truncated=truncated, elapsed=result.elapsed)
    error = result.error
    lost = error is not None and error.kind == PROTOCOL and result.rc is None and error.message.startswith(
        "connection lost while running")
    if lost:  # the connection went with no exit status: said below as what it means for the collection
        error = None
    if error is None and not sections and not truncated:
        # not one line of the script came: the session ended before it ran, which says nothing of the node
        error = _no_output(host, result)
    if error is None and truncated and (result.rc == -1 or lost):
        # sshd's session ended without the script's exit status: the channel died under it
        error = TransportError(PROTOCOL, "the channel closed before the collection ended (no exit status: "
                                         "the node's sshd session was killed or the connection dropped)", host)
    if error is not None:
        if sections:
            node.truncated = True
        if sections and error.kind == COMMAND_TIMEOUT:
            # the script started but did not finish in time: keep what came
            node.extra["timeout"] = error.message
        else:
            node.error = error.to_dict()
    return node


def _no_output(host: str, result: ExecResult) -> TransportError:
    said = next((line.strip() for line in result.stderr.splitlines() if line.strip()), "")
    quoted = f"; it said: {said[:200]}" if said else ""
    if result.rc is None or result.rc < 0:
        return TransportError(PROTOCOL, "the channel closed before the collection script printed anything (no exit "
                                        f"status: the node's sshd session was killed or the connection dropped){quoted}",
                              host)
    return TransportError(NO_OUTPUT, f"the session ended (exit status {result.rc}) before the collection script "
                                     f"printed anything: the login did not run it{quoted}", host)


def collect_local(script: str, opts: CollectOptions, host: Optional[str] = None) -> RawNode:
    """Run the script on this machine with ``sh``."""
    import socket

    name = host or socket.gethostname()
    t = LocalTransport(name)
    result = t.run(["sh", "-s"], timeout=opts.ssh.command_timeout, stdin=script, env=_script_env(opts))
    node = _to_raw(name, result, opts.mark, script)
    node.extra["transport"] = "local"
    return node


def collect_host(host: Host, script: str, opts: CollectOptions, mesh_targets: Sequence[str] = ()) -> RawNode:
    """Connect to one host, run the script (and the mesh test), never raise.

    The node-to-node test runs within the script's own login (:func:`~nccldiag.collect.script.with_mesh`):
    its section is the script's last, and the node's bound on the whole grows by the test's own."""
    start = time.monotonic()
    conn = SSHConnection(host.name, opts.ssh, user=host.user, port=host.port)
    try:
        conn.connect()
    except TransportError as exc:
        node = RawNode(host=host.name, error=exc.to_dict(), elapsed=time.monotonic() - start)
        node.extra["transport"] = "ssh"
        return node
    connected = time.monotonic()
    whole = opts.ssh.command_timeout * WHOLE_RUN
    if mesh_targets:
        bound = mesh.command_timeout(len(mesh_targets), opts.mesh_timeout)
        # the test's section, while it waits, sends a blank line well within the silence bound
        beat = max(1, min(HEARTBEAT, int(opts.ssh.command_timeout) // 3))
        script = with_mesh(script, mesh.build_command(mesh_targets, opts.mesh_timeout), bound, beat)
        whole += bound
    try:
        env = _script_env(opts)
        command = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " sh -s"
        # a node that keeps sending is working, however loaded it is: it is stopped once it has been
        # silent for --command-timeout, and in any case at WHOLE_RUN times that. Both count from the
        # script's first marker: before it the node's login runs (its shell's startup files, which on a
        # shared home may queue on a lock), bounded by --login-timeout
        result = conn.run(command, timeout=whole, stdin=script, idle_timeout=opts.ssh.command_timeout,
                          start_marker=start_marker(opts.mark), start_timeout=login_timeout(opts.ssh),
                          what="script", poll=POLL, gate=opts.gate)
    finally:
        conn.close()
    node = _to_raw(host.name, result, opts.mark, script)
    node.elapsed = time.monotonic() - start
    node.extra.update({"transport": "ssh", "connect_s": round(connected - start, 3), "notes": conn.notes})
    if result.started is not None:
        node.extra["login_s"] = round(result.started, 3)
    if mesh_targets:
        node.extra["mesh_targets"] = list(mesh_targets)
        if MESH_SECTION not in node.rcs:
            # the script was cut off before the test's section ended: what it said so far is all there is
            node.extra["mesh_cut"] = True
            node.sections.setdefault(MESH_SECTION, "")
    return node


def start_marker(mark: str) -> bytes:
    """What the collection script prints first (its first source's begin marker): the login is over."""
    return f"@@nccldiag{':' + mark if mark else ''}:begin ".encode()


LOGIN = 2  # a login may take this many --command-timeout before the script starts, unless --login-timeout says


def login_timeout(ssh: SSHOptions) -> float:
    return ssh.login_timeout if ssh.login_timeout is not None else ssh.command_timeout * LOGIN


def timed_out(node: RawNode) -> bool:
    """The node's collection was stopped at a bound (login, silence or the whole), not refused or lost."""
    return bool(node.extra.get("timeout")) or bool(node.error and node.error.get("kind") == COMMAND_TIMEOUT)


def _timeout_message(node: RawNode) -> str:
    return str(node.extra.get("timeout") or (node.error or {}).get("message", ""))


def mesh_plan(hosts: Sequence[Host], mode: str) -> dict:
    names = [h.name for h in hosts]
    if mode == "none" or len(names) < 2:
        return {}
    if mode == "all":
        return {n: [t for t in names if t != n] for n in names}
    return {names[0]: names[1:]}


def resolve(hosts: Sequence[Host], opts: CollectOptions) -> None:
    """Every name not yet looked up, at once, each within the connect timeout (into ``opts.ssh.resolved``): a
    DNS server slow to say no costs the run one connect timeout, not one per --fanout hosts."""
    todo = [h.name for h in hosts if h.name not in opts.ssh.resolved]
    if todo:
        from nccldiag.transport.ssh import resolve_names

        opts.ssh.resolved.update(resolve_names(todo, opts.ssh.connect_timeout))


def for_hosts(hosts: Sequence[Host], opts: CollectOptions) -> CollectOptions:
    """``opts`` whose connections share their hosts' SSH settings (one ``ssh -G`` per group of hosts the
    configuration cannot tell apart, :class:`~nccldiag.transport.sshconfig.HostConfigs`) and one
    :class:`~nccldiag.transport.ssh.LoginGate`: up to ``opts.fanout`` logins in progress at once while they
    are quick, :data:`LOGINS_QUEUED` while they queue (a shared home's shell start-up under a lock)."""
    if opts.ssh.configs is None:
        configs = sshconfig.HostConfigs(opts.ssh.config_path, [(h.name, h.user, h.port) for h in hosts])
        opts = dataclasses.replace(opts, ssh=dataclasses.replace(opts.ssh, configs=configs))
    if opts.gate is None:
        opts = dataclasses.replace(opts, gate=LoginGate(opts.fanout, LOGINS_QUEUED))
    return opts


def collect_hosts(
    hosts: Sequence[Host],
    script: str,
    opts: CollectOptions,
    on_node: Optional[Callable[[RawNode], None]] = None,
    release: bool = False,
    plan: Optional[dict] = None,
) -> List[RawNode]:
    """Collect from every host, ``opts.fanout`` at a time, in hostfile order.

    With ``release`` each node's outputs are let go once ``on_node`` has seen it (judged it, written it
    out): the nodes returned are :func:`~nccldiag.model.raw.released` ones, and at most about twice
    ``opts.fanout`` nodes' outputs are held at any time, however many hosts there are. ``plan``: the
    node-to-node test's targets by host, where the caller planned it over more hosts than ``hosts``."""
    plan = mesh_plan(hosts, opts.mesh) if plan is None else plan
    resolve(hosts, opts)
    opts = for_hosts(hosts, opts)

    def task(h: Host) -> RawNode:
        return collect_host(h, script, opts, plan.get(h.name, ()))

    held: dict = {}  # host -> its first try, which timed out: reported after its retry
    keep = released if release else None

    def done(h: Host, node: RawNode) -> None:
        if timed_out(node):
            held[h.name] = node
        elif on_node is not None:
            on_node(node)

    second: dict = {}

    def retried(h: Host, node: RawNode) -> None:
        first = held.pop(h.name)
        node.extra["tries"] = [_timeout_message(first)] + ([_timeout_message(node)] if timed_out(node) else [])
        if on_node is not None:
            on_node(node)
        second[h.name] = released(node) if release else node

    try:
        nodes = fan_out(list(hosts), task, opts.fanout, done, keep=keep)
        # a node stopped at a bound is tried once more, on a fresh connection, once the others are done: a
        # login that queued behind the others' (a shared home's ~/.bashrc under a lock) finds the queue gone
        again = [h for h in hosts if h.name in held]
        if again:
            fan_out(again, task, opts.fanout, retried, keep=keep)
    finally:
        for first in list(held.values()):  # not tried again (interrupted): the first try stands
            first.extra["tries"] = [_timeout_message(first)]
            if on_node is not None:
                on_node(first)
    return [second.get(n.host, n) for n in nodes]


def collect_srun(
    hosts: Sequence[Host],
    script: str,
    opts: CollectOptions,
    on_node: Optional[Callable[[RawNode], None]] = None,
    release: bool = False,
) -> List[RawNode]:
    """Collect from every host as one ``srun`` step (no SSH); hosts matched to Slurm's node names first.
    ``release``: as for :func:`collect_hosts`."""
    from nccldiag.slurm import client
    from nccldiag.slurm.nodes import match_hosts
    from nccldiag.collect import srun

    names_given = [h.name for h in hosts]
    slurm_nodes = client.show_nodes()
    names = match_hosts(names_given, slurm_nodes, addresses=client.resolve_all(names_given, slurm_nodes))
    by_name = {n.name: n for n in slurm_nodes}
    unavailable = {}
    for h, n in names.items():
        sn = by_name[n]
        if not sn.available and not (opts.slurm_job and sn.flags and set(sn.flags) <= {"ALLOCATED", "MIXED", "DRAIN", "COMPLETING"}):
            unavailable[h] = f"Slurm node {n} is {sn.state}" + (f" (reason: {sn.reason})" if sn.reason else "")
        elif not opts.slurm_job and "ALLOCATED" in sn.flags:
            # every CPU of it is another job's: a step there would wait for that job to end
            unavailable[h] = f"Slurm node {n} is {sn.state}: all its CPUs are allocated to other jobs"
    return srun.collect(
        names_given, names, unavailable, script, _script_env(opts), opts.mark,
        command_timeout=opts.ssh.command_timeout,
        whole_run=opts.ssh.command_timeout * WHOLE_RUN + (opts.alloc.wait if opts.alloc and not opts.slurm_job else 0.0),
        job=opts.slurm_job, req=opts.alloc, on_node=on_node,
        order={n.name: i for i, n in enumerate(slurm_nodes)}, release=release,
    )
