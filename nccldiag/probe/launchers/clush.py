"""``--launcher clush``: torchrun on every node, all started by one ClusterShell ``clush`` run on this machine.

What admins do on clusters with neither MPI nor Slurm: ``clush -w NODES
torchrun ...``. clush reaches every node with OpenSSH (``ssh_config``, the
agent, ``--ssh-config`` and ``-i`` as given), all at once (its fan-out is the
number of nodes: the ranks of a collective must all be up together), and
labels each line with its node (``node: line``), which binds the line's
records to that node. Every node is sent the same command; it picks its own
torchrun (its node rank, its interface) by its own host name, found when
the run was prepared. Staging, the setting's directory, reaping, logs and
clean-up go over SSH as with torchrun. A rank that died is told by
torchrun's root-cause block, which clush labels with its node.

The launch has no watchdog of its own: its parent is the session of clush's
SSH connection, which ends with the launch, so it cannot tell a run that
ended from a run whose nccldiag is gone. The run directory's watchdog, left
when the run was prepared over nccldiag's own connection (which lasts the
run), covers every node, as it covers mpirun's other nodes.
"""
from __future__ import annotations

import shlex
from typing import Dict, List

from nccldiag import rx
from nccldiag.model.errors import UsageError
from nccldiag.probe import launch
from nccldiag.probe.launchers.base import OverSSH, Tagging
from nccldiag.probe.launchers import torchrun

HERE = "clush"  # the launch's place in a setting's run: clush runs on this machine


def ssh_words(options, host) -> str:
    """The OpenSSH options clush gives ssh: those nccldiag's own connections use."""
    words = ["-oBatchMode=yes", f"-oConnectTimeout={int(options.connect_timeout)}"]
    if options.config_path:
        words += ["-F", options.config_path]
    for f in options.identity_files:
        words += ["-i", f]
    if options.accept_new_host_keys:
        words.append("-oStrictHostKeyChecking=accept-new")
    if host.port:
        words.append(f"-p{int(host.port)}")
    return " ".join(shlex.quote(w) for w in words)


def by_own_name(spec, nodes, prep) -> str:
    """sh that runs, on whichever node it lands, that node's torchrun (its node rank and interface)."""
    from dataclasses import replace

    spec = replace(spec, watchdog=0)  # see the module's docstring
    names = [prep.hostnames.get(n.name, n.name) for n in nodes]
    if len(set(names)) < len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        return (f"echo {shlex.quote(f'nccldiag: several nodes call themselves {dup[0]}: clush cannot tell them apart; use --launcher torchrun')} "
                f">&2; exit {launch.REFUSED}")
    cases = " ".join(f"{shlex.quote(own)}) {torchrun.command(spec, len(nodes), i, prep.ifnames.get(n.name))} ;;"
                     for i, (own, n) in enumerate(zip(names, nodes)))
    return (f"case \"$(hostname)\" in {cases} *) echo \"nccldiag: $(hostname) is none of this run's nodes\" >&2; "
            f"exit {launch.REFUSED} ;; esac")


class Clush(OverSSH):
    name = "clush"
    tagging = Tagging("clush", rx.compile(r"^([^\s:]+): "), by_node=True)  # clush's label: ``node: line``

    def refuse(self, opts, hosts, nodes) -> None:
        for what, values in (("user", {h.user for h in hosts}), ("port", {h.port for h in hosts})):
            if len(values) > 1:
                raise UsageError(f"--launcher clush gives every node the same ssh {what}: the hosts name "
                                 f"{', '.join(sorted(str(v or 'none') for v in values))}; use --launcher torchrun")

    def commands(self, spec, nodes, prep, bounds, name: str = "nccldiag-probe") -> Dict[str, str]:
        first = nodes[0]
        argv = ["clush", "-w", ",".join(n.name for n in nodes), "-f", str(len(nodes)), "-S", "--nostdin",
                "-u", str(bounds.watchdog), "-o", ssh_words(first.options, first.host)]
        if first.host.user:
            argv += ["-l", first.host.user]
        return {HERE: "exec env PYTHONUNBUFFERED=1 " + " ".join(shlex.quote(a) for a in argv) + " -- "
                + shlex.quote(by_own_name(spec, nodes, prep))}

    def setting_dir(self, nodes, prep, setting: str, opts) -> str:
        from nccldiag.transport.nodes import run_all

        # on the nodes, over SSH, before clush starts the ranks (one round trip each, fanout at a time)
        run_all(nodes, OverSSH.setting_dir(self, nodes, prep, setting, opts) + "true", opts.ssh.command_timeout,
                opts.fanout)
        return ""

    def starts_on(self, nodes) -> list:
        from nccldiag.transport.nodes import LaunchHere

        return [LaunchHere(HERE)]

    def deaths(self, text: str) -> List[Dict[str, object]]:
        """torchrun's root-cause blocks in clush's labelled output, each with the node that wrote it."""
        per: Dict[str, List[str]] = {}
        for line in (text or "").splitlines():
            node, sep, rest = line.partition(": ")
            if sep and node and " " not in node:
                per.setdefault(node, []).append(rest)
        return [dict(d, node=node) for node, lines in per.items() for d in torchrun.root_cause("\n".join(lines))]


LAUNCHER = Clush()
