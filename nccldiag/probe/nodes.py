"""Where probe ranks run: a node over SSH, or this machine.

Both give the same operations (run a command, stream a command's output
line by line), so the probe runner does not care which.
"""
from __future__ import annotations

import os
import socket
import threading
from typing import Callable, Dict, Optional, Sequence

from nccldiag.inventory import Host
from nccldiag.transport.base import ExecResult, TransportError
from nccldiag.transport.local import LocalTransport
from nccldiag.transport.ssh import SSHConnection, SSHOptions
from nccldiag.transport.stream import run_streaming
from nccldiag.transport.task import fan_out


class LocalNode:
    """This machine."""

    remote = False
    holds_session = True  # a command's parent lives as long as nccldiag: a watchdog can watch it

    def __init__(self, name: Optional[str] = None):
        self.name = name or socket.gethostname()
        self.address = "127.0.0.1"

    def connect(self) -> "LocalNode":
        return self

    def run(self, command: str, timeout: float, stdin: Optional[str] = None) -> ExecResult:
        return LocalTransport(self.name).run(command, timeout, stdin=stdin)

    def stream(self, command: str, timeout: float, on_line: Callable[[str], None], cancel: threading.Event) -> ExecResult:
        return run_streaming(["sh", "-c", command], timeout, on_line, cancel, host=self.name)


    def close(self) -> None:
        pass


class SSHNode:
    """A node reached over SSH: one connection for the whole probe."""

    remote = True
    holds_session = True  # a command's parent is sshd's session, which lives as long as the connection

    def __init__(self, host: Host, options: SSHOptions):
        self.host = host
        self.name = host.name
        self.options = options
        self.conn = SSHConnection(host.name, options, user=host.user, port=host.port)
        self.address: Optional[str] = None

    def connect(self) -> "SSHNode":
        self.conn.connect()
        t = self.conn.transport
        try:
            self.address = t.getpeername()[0] if t is not None else None
        except (OSError, AttributeError, TypeError):
            self.address = None
        if not self.address or self.address.startswith("127.") or self.conn.proxied:
            # through a proxy the peer address is not the node's: ask the node
            r = self.conn.run("hostname -I 2>/dev/null || hostname -i", timeout=10)
            words = (r.stdout or "").split()
            self.address = words[0] if words else self.name
        return self

    def run(self, command: str, timeout: float, stdin: Optional[str] = None) -> ExecResult:
        return self.conn.run(command, timeout=timeout, stdin=stdin)

    def stream(self, command: str, timeout: float, on_line: Callable[[str], None], cancel: threading.Event) -> ExecResult:
        return self.conn.run(command, timeout=timeout, on_line=on_line, cancel=cancel)


    def close(self) -> None:
        self.conn.close()


class SlurmNode:
    """A node reached through Slurm: each command is a one-task ``srun`` step on it, inside allocation ``job``.

    Staging, interface discovery, reaping, log fetching and clean-up go the
    same way as over SSH, so the probe needs no SSH to the nodes.
    """

    remote = True
    holds_session = False  # each command is a step of its own, whose slurmstepd ends with it

    def __init__(self, host: Host, slurm_name: str, address: str, job: str, order: int = 0):
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


class LaunchHere(LocalNode):
    """Where ``--launcher srun`` runs: srun itself runs on this machine and starts every rank."""

    remote = False


def connect_all(nodes: Sequence, fanout: int) -> Dict[str, str]:
    """Connect ``nodes``, ``fanout`` at a time, each bounded by its SSH timeouts; returns host -> why not."""
    unreachable: Dict[str, str] = {}

    def connect(n) -> None:
        try:
            n.connect()
        except TransportError as exc:
            unreachable[n.name] = exc.message

    fan_out(list(nodes), connect, fanout)
    return unreachable


def worker_files() -> Dict[str, str]:
    """The files a node needs to run the worker: the ``nccldiag.node`` package, no more."""
    import nccldiag

    root = os.path.dirname(os.path.abspath(nccldiag.__file__))
    files = {"nccldiag/__init__.py": os.path.join(root, "__init__.py")}
    node = os.path.join(root, "node")
    for dirpath, _dirs, names in os.walk(node):
        for n in names:
            if n.endswith(".py"):
                full = os.path.join(dirpath, n)
                files[os.path.relpath(full, os.path.dirname(root))] = full
    return files

