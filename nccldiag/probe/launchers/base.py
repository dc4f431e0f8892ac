"""What a launcher is (:class:`Launcher`), and the behaviour most launchers share (:class:`OverSSH`).

A launcher knows: the nodes a run reaches (over SSH, through Slurm, this
machine), how they are prepared, the command each place runs for one
setting (pure: ``--dry-run`` prints it), what a setting's directory needs
before the launch, where the launch runs (on the nodes, or here), which rank
each line of output speaks for, how it stops a run, and the words it uses
for a rank that died. Everything else of a run (streaming, the deadline,
reaping, logs, analysis) is the same for every launcher.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Protocol, Sequence, Tuple

from nccldiag.probe import counters, launch

if TYPE_CHECKING:
    from nccldiag.inventory import Host
    from nccldiag.probe import results, runner
    from nccldiag.probe.plan import Bounds


@dataclass(frozen=True)
class Tagging:
    """How a launcher whose one stream carries many ranks' lines marks each line: ``pattern`` matches the mark
    at the start of the line, its first group naming the rank (``[1,r]<stdout>:``, ``r: ``) or, ``by_node``,
    the node (``host: ``) that wrote it. ``adds``: records the launch writes beside the collectives planned (a
    check of the launcher's own). ``name``: how a run directory keeps it. :class:`~nccldiag.probe.results.Gate`
    reads it."""

    name: str
    pattern: "re.Pattern[str]"
    by_node: bool = False
    adds: Tuple[str, ...] = ()


class Launcher(Protocol):
    name: str
    jobs: bool  # isolate can start its jobs with it
    installed: bool  # the ranks run the nccldiag installed here; nothing is staged
    counts: bool  # the nodes' error counters are read around each setting
    here: bool  # every rank runs on this machine: no hosts, or this one alone
    allocation: bool  # it runs inside a Slurm allocation, which a command's --partition/--nodes/... ask for
    tagging: Optional[Tagging]  # how its one stream marks each line's rank or node (None: a stream
    # per node, of that node's ranks)

    def nodes(self, hosts: Sequence["Host"], opts) -> list:
        """The nodes the run reaches (not yet connected); a usage error when it cannot reach them this way."""

    def refuse(self, opts, hosts: Sequence["Host"], nodes: Sequence) -> None:
        """Refuse, before any node is contacted, what the launch would refuse later (a usage error)."""

    def prepare(self, live: Sequence, opts, run_id: str, watchdog: int) -> "runner.Prepared":
        """Stage the worker and find each node's interface and the rendezvous port (``opts.dry_run``: nothing
        is contacted; the interface and the port are what the run would find out)."""

    def ranks(self, opts, hosts: Sequence["Host"], nodes: Sequence, nproc: int) -> Tuple[int, str]:
        """``(ranks per node, note)`` when the count was not given: what the launch can hold."""

    def commands(self, spec: launch.LaunchSpec, nodes: Sequence, prep: "runner.Prepared",
                 bounds: "Bounds", name: str = "nccldiag-probe") -> Dict[str, str]:
        """Where -> the sh it runs for one setting (pure: printed by ``--dry-run``); ``name``: what the
        launch is called where the launcher names it (srun's step)."""

    def setting_dir(self, nodes: Sequence, prep: "runner.Prepared", setting: str, opts) -> str:
        """Make the setting's directory on every node: the sh to put before each command, or ``""`` when
        the launcher made it itself (one step per node)."""

    def rank0(self, nodes: Sequence):
        """The node that gets rank 0 of a launch on ``nodes`` (it serves the rendezvous)."""

    def starts_on(self, nodes: Sequence) -> Optional[list]:
        """Where the commands run when not on the nodes themselves (srun, clush: this machine), else None."""

    def launched(self, nodes: Sequence, nproc: int, collectives: Tuple[str, ...]) -> "results.Launched":
        """The ranks one setting launches, on which node, and how each line of output names its rank."""

    def stop(self, name: str, sr: "runner.SettingRun", wait: float) -> None:
        """Stop what the launch left running beyond the nodes' own processes (srun: its step), after a job."""

    def deaths(self, text: str) -> List[Dict[str, object]]:
        """Ranks this launcher's output says were killed by a signal (pure)."""

    def each(self, nodes: Sequence, command: str, timeout: float, fanout: int, name: str) -> Dict[str, str]:
        """``command`` on every node: each node's output, for the nodes where it ran."""

    def cleanup(self, nodes: Sequence, prep: "runner.Prepared", opts) -> Dict[str, str]:
        """Remove the run directories; host -> why it failed."""

    def abort(self, nodes: Sequence, run_id: str, prep: Optional["runner.Prepared"], opts) -> None:
        """Kill every process of the run and remove its directories, whatever stopped the run."""


class OverSSH:
    """The behaviour of a launcher whose nodes are reached over SSH, each starting its own ranks."""

    name = "ssh"
    jobs = False
    installed = False
    counts = True
    here = False
    allocation = False
    tagging = None

    def nodes(self, hosts, opts) -> list:
        from nccldiag.transport.nodes import SSHNode

        return [SSHNode(h, opts.ssh) for h in hosts]

    def refuse(self, opts, hosts, nodes) -> None:
        return None

    def prepare(self, live, opts, run_id: str, watchdog: int):
        from nccldiag.probe import runner

        if getattr(opts, "dry_run", False):
            return runner.Prepared(run_id, os.path.join(opts.shared_dir or "/tmp", run_id), live[0].name, 29400,
                                   {n.name: opts.ifname for n in live}, {}, {},
                                   {n.name: {"torch": True} for n in live}, {n.name: n.name for n in live})
        return runner.prepare(live, opts.python, getattr(opts, "ifname", None), getattr(opts, "shared_dir", None),
                              timeout=opts.ssh.command_timeout, run_id=run_id, fanout=opts.fanout, watchdog=watchdog)

    def ranks(self, opts, hosts, nodes, nproc: int) -> Tuple[int, str]:
        return nproc, ""

    def commands(self, spec, nodes, prep, bounds, name: str = "nccldiag-probe") -> Dict[str, str]:
        raise NotImplementedError

    def setting_dir(self, nodes, prep, setting: str, opts) -> str:
        path = prep.rundir + "/" + setting
        return launch.owned_rundir(prep.rundir) + f"mkdir -p {shlex.quote(path)} && " + counters.counters_before(path)

    def rank0(self, nodes):
        return nodes[0]

    def starts_on(self, nodes) -> Optional[list]:
        return None

    def launched(self, nodes, nproc: int, collectives):
        from nccldiag.probe import results

        return results.Launched(tuple(n.name for n in nodes), nproc, collectives, self.tagging)

    def stop(self, name: str, sr, wait: float) -> None:
        return None

    def deaths(self, text: str) -> List[Dict[str, object]]:
        return []  # a launcher that tells of a dead rank says how, in its own words

    def each(self, nodes, command: str, timeout: float, fanout: int, name: str) -> Dict[str, str]:
        from nccldiag.transport.nodes import run_all

        return {name: r.stdout or "" for name, r in run_all(nodes, command, timeout, fanout).items()
                if r.error is None}

    def cleanup(self, nodes, prep, opts) -> Dict[str, str]:
        from nccldiag.probe import runner

        # a shared run directory is one directory: the first node removes it
        return runner.cleanup(list(nodes)[:1] if getattr(opts, "shared_dir", None) else nodes, prep.rundir,
                              timeout=min(15.0, opts.ssh.command_timeout), fanout=opts.fanout)

    def abort(self, nodes, run_id: str, prep, opts) -> None:
        from nccldiag.probe import runner

        runner.reap_all(nodes, run_id, opts.fanout)
        shared = getattr(opts, "shared_dir", None)
        runner.cleanup(list(nodes)[:1] if shared else nodes, os.path.join(shared or "/tmp", run_id),
                       fanout=opts.fanout)


def by_hostname(nodes: Sequence, prep) -> Dict[str, Optional[str]]:
    """Each node's own host name -> its interface towards rank 0 (what mpirun and srun commands carry)."""
    return {prep.hostnames.get(n.name, n.name): prep.ifnames.get(n.name) for n in nodes}
