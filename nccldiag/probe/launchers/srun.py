"""``--launcher srun``: every rank one task of one srun step, run on this machine inside the allocation.

No SSH: every per-node command (staging, reaping, logs) is a one-task srun
step on its node (:class:`SlurmNode`). srun lays the
tasks out in Slurm's node order and labels each line with its task, which
is the rank. A step that did not end by itself is cancelled by name.
"""
from __future__ import annotations

import shlex
import threading
import uuid
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from nccldiag import rx
from nccldiag.model.errors import UsageError
from nccldiag.probe import launch
from nccldiag.probe.launchers.base import OverSSH, Tagging, by_hostname
from nccldiag.transport.base import ExecResult
from nccldiag.transport.local import LocalTransport
from nccldiag.transport.stream import run_streaming

HERE = "srun"  # the launch's place in a setting's run: srun runs on this machine


class SlurmNode:
    """A node reached through Slurm: each command is a one-task ``srun`` step on it, inside allocation ``job``.

    Staging, interface discovery, reaping, log fetching and clean-up go the
    same way as over SSH, so the probe needs no SSH to the nodes.
    """

    remote = True
    holds_session = False  # each command is a step of its own, whose slurmstepd ends with it

    def __init__(self, host, slurm_name: str, address: str, job: str, order: int = 0):
        self.host = host
        self.name = host.name
        self.slurm_name = slurm_name
        self.address: Optional[str] = address or None
        self.job = job
        self.order = order  # its place in Slurm's node order, in which srun lays out the tasks of a step

    def _argv(self, command: str, timeout: float, stdin: bool) -> list:
        from nccldiag.slurm import commands

        return commands.srun_step([self.slurm_name], 1, timeout, job=self.job, input_all=stdin,
                                  name="nccldiag-probe") + ["sh", "-c", command]

    def connect(self) -> "SlurmNode":
        return self

    def run(self, command: str, timeout: float, stdin: Optional[str] = None) -> ExecResult:
        return LocalTransport(self.name).run(self._argv(command, timeout, stdin is not None), timeout, stdin=stdin)

    def stream(self, command: str, timeout: float, on_line: Callable[[str], None], cancel: threading.Event) -> ExecResult:
        return run_streaming(self._argv(command, timeout, False), timeout, on_line, cancel, host=self.name)

    def close(self) -> None:
        pass


def allocation_grant(opts):
    """What the allocation the run is in grants per node, when nccldiag runs inside it (salloc, sbatch);
    None for an allocation nccldiag asked for itself (whole nodes) or when Slurm's variables do not say."""
    import os

    from nccldiag.slurm import grant

    return grant.read(os.environ, opts.slurm_job) if opts.slurm_job else None


def fit_allocation(granted, nodes: Sequence, wanted: int, explicit: bool) -> Tuple[int, str]:
    """``(ranks per node, note)`` that the allocation holds on ``nodes``; a count given explicitly that it
    cannot hold is a usage error saying what to ask salloc for."""
    from nccldiag.slurm import grant

    try:
        r = grant.ranks_per_node(granted, [getattr(n, "slurm_name", n.name) for n in nodes], wanted, explicit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return r.count, r.note


def _ordered(nodes: Sequence) -> list:
    """The nodes in the order srun gives them tasks: the first node's tasks are ranks 0.., and so on.

    srun lays tasks out in Slurm's node order (the order of ``scontrol show
    node``, that of slurm.conf), whatever order ``--nodelist`` gives. A node
    Slurm does not list sorts after the others (its ``order`` is past theirs), by name.
    """
    return sorted(nodes, key=lambda n: (getattr(n, "order", 0), getattr(n, "slurm_name", n.name)))


def command(
    spec: launch.LaunchSpec,
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
    env = launch.node_env(spec, same)
    if same is None and any(ifnames.values()):
        env["NCCLDIAG_IFNAMES"] = ",".join(f"{h}={i}" for h, i in ifnames.items() if i)
    env["MASTER_ADDR"] = spec.rdzv_host
    env["MASTER_PORT"] = str(int(spec.rdzv_port))
    argv = commands.srun_step(list(nodes), spec.nproc_per_node, timeout, job=job, kill_on_bad_exit=True,
                              chdir=spec.rundir, name=name, label=True)
    argv += [spec.python, "-m", "nccldiag.node.worker", "--bootstrap", "slurm"] + list(spec.worker_args)
    return f"exec env {launch.env_words(env)} " + " ".join(shlex.quote(a) for a in argv)


class Srun(OverSSH):
    name = "srun"
    jobs = True
    allocation = True
    tagging = Tagging("srun", rx.compile(r"^ *(\d+): "))  # --label: ``r: line``

    def nodes(self, hosts, opts) -> list:
        """The hosts as Slurm nodes (name and NodeAddr), each command an srun step in ``opts.slurm_job``."""
        from nccldiag.slurm import client
        from nccldiag.slurm.client import resolve_all
        from nccldiag.slurm.nodes import match_hosts

        if not opts.slurm_job:
            raise UsageError("--launcher srun runs inside an allocation: run nccldiag under salloc/sbatch, "
                             "or ask for one with --partition/--nodes/...")
        known = client.show_nodes()
        names = match_hosts([h.name for h in hosts], known, addresses=resolve_all([h.name for h in hosts], known))
        missing = [h.name for h in hosts if h.name not in names]
        if missing:
            raise UsageError(f"--launcher srun: {', '.join(missing[:5])} {'is' if len(missing) == 1 else 'are'} not "
                             "Slurm node(s) (no NodeName, NodeHostName or NodeAddr matches)")
        addr = {n.name: n.addr for n in known}
        order = {n.name: i for i, n in enumerate(known)}
        return [SlurmNode(h, names[h.name], addr.get(names[h.name], ""), opts.slurm_job,
                          order.get(names[h.name], len(known))) for h in hosts]

    def refuse(self, opts, hosts, nodes) -> None:
        granted = allocation_grant(opts)
        explicit = getattr(opts, "nproc_per_node", None) or (hosts[0].slots if hosts and hosts[0].slots else None)
        if granted is not None and explicit:
            fit_allocation(granted, nodes, explicit, True)  # refused here, before any node is contacted

    def ranks(self, opts, hosts, nodes, nproc: int) -> Tuple[int, str]:
        granted = allocation_grant(opts)
        return fit_allocation(granted, nodes, nproc, False) if granted is not None else (nproc, "")

    def commands(self, spec, nodes, prep, bounds, name: str = "nccldiag-probe") -> Dict[str, str]:
        return {HERE: command(spec, [n.slurm_name for n in nodes], by_hostname(nodes, prep),
                                          nodes[0].job, bounds.timeout, name=name)}

    def setting_dir(self, nodes, prep, setting: str, opts) -> str:
        from nccldiag.transport.nodes import run_all

        # the setting's directory on every node first (one step each, fanout at a time)
        mkdir = launch.owned_rundir(prep.rundir) + f"mkdir -p {shlex.quote(prep.rundir + '/' + setting)}"
        run_all(nodes, mkdir, opts.ssh.command_timeout, opts.fanout)
        return ""

    def rank0(self, nodes):
        return _ordered(nodes)[0]

    def starts_on(self, nodes) -> list:
        from nccldiag.transport.nodes import LaunchHere

        return [LaunchHere(HERE)]

    def launched(self, nodes, nproc: int, collectives):
        from nccldiag.probe import results

        return results.Launched(tuple(n.name for n in _ordered(nodes)), nproc, collectives, self.tagging)

    def stop(self, name: str, sr, wait: float) -> None:
        """Cancel the steps called ``name`` (or ``name-...``) until squeue no longer lists them; after a job
        that ended by itself, nothing."""
        from nccldiag.slurm import client

        nr = sr.nodes.get(HERE) if sr is not None else None
        if sr is not None and not (sr.timed_out or nr is None or nr.error is not None or nr.rc != 0):
            return
        left = client.end_steps(lambda n: n == name or n.startswith(name + "-"), wait=wait)
        if left and sr is not None:
            sr.survivors[HERE] = [f"step {i} ({name}) still listed by squeue after scancel" for i in left]

    def deaths(self, text: str) -> List[Dict[str, object]]:
        return []

    def each(self, nodes, command: str, timeout: float, fanout: int, name: str) -> Dict[str, str]:
        """``command`` on every node as ONE srun step (a task per node; Slurm's tree does the fan-out); a node
        whose task did not finish goes through a step of its own."""
        from nccldiag.collect import srun as srun_transport
        from nccldiag.slurm import commands

        nodes = list(nodes)
        if not nodes:
            return {}
        mark = uuid.uuid4().hex[:12]
        ours = {n.slurm_name: n.name for n in nodes}
        wrapped = (f"printf '@@nccldiag:%s:node %s@@\\n' {mark} \"${{SLURMD_NODENAME:-$(hostname)}}\"; {command}; "
                   f"printf '\\n@@nccldiag:%s:done@@\\n' {mark}")
        argv = commands.srun_step([n.slurm_name for n in nodes], 1, timeout, job=nodes[0].job, label=True,
                                  name=name) + ["sh", "-c", wrapped]
        r = LocalTransport(HERE).run(argv, timeout)
        out: Dict[str, str] = {}
        expected = srun_transport.task_nodes([n.slurm_name for n in nodes], {n.slurm_name: n.order for n in nodes})
        for task in srun_transport.demux((r.stdout or "").splitlines(), mark, expected).values():
            if task.done and task.node in ours:
                out[ours[task.node]] = "\n".join(task.lines)
        missed = [n for n in nodes if n.name not in out]
        if missed:
            out.update(OverSSH.each(self, missed, command, timeout, fanout, name))
        return out


LAUNCHER = Srun()
