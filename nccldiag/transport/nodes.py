"""A node the probe works on (:class:`Node`), and the one way to run a command on many (:func:`run_all`).

This machine (:class:`LocalNode`) and a node over SSH (:class:`SSHNode`)
give the same operations: connect, run a command, stream a command's
output line by line, close. So do the nodes other packages define (the srun
launcher's Slurm nodes, each command a step), so the probe does not care
which.
"""
from __future__ import annotations

import socket
import threading
from typing import Callable, Dict, Optional, Protocol, Sequence

from nccldiag.transport.base import ExecResult, TransportError
from nccldiag.transport.local import LocalTransport
from nccldiag.transport.ssh import SSHConnection, SSHOptions
from nccldiag.transport.stream import run_streaming
from nccldiag.transport.task import fan_out


class Node(Protocol):
    name: str
    address: Optional[str]  # where the other nodes reach it (rank 0's rendezvous), once connected
    remote: bool  # not this machine
    holds_session: bool  # a command's parent lives as long as nccldiag's hold on the node: a watchdog can watch it

    def connect(self) -> "Node":
        """Reach the node; raises :class:`TransportError`."""

    def run(self, command: str, timeout: float, stdin: Optional[str] = None) -> ExecResult:
        """``command`` under sh, bounded by ``timeout``."""

    def stream(self, command: str, timeout: float, on_line: Callable[[str], None],
               cancel: threading.Event) -> ExecResult:
        """``command``, each line of its stdout handed to ``on_line`` as it comes, until it ends, the timeout
        passes or ``cancel`` is set."""

    def close(self) -> None:
        """Let go of the node."""


class LocalNode:
    """This machine."""

    remote = False
    holds_session = True  # a command's parent lives as long as nccldiag: a watchdog can watch it

    def __init__(self, name: Optional[str] = None):
        self.name = name or socket.gethostname()
        self.address: Optional[str] = "127.0.0.1"

    def connect(self) -> "LocalNode":
        return self

    def run(self, command: str, timeout: float, stdin: Optional[str] = None) -> ExecResult:
        return LocalTransport(self.name).run(command, timeout, stdin=stdin)

    def stream(self, command: str, timeout: float, on_line: Callable[[str], None], cancel: threading.Event) -> ExecResult:
        return run_streaming(["sh", "-c", command], timeout, on_line, cancel, host=self.name)

    def close(self) -> None:
        pass


class SSHNode:
    """A node reached over SSH: one connection for the whole run. ``host`` has ``name``, ``user``, ``port``
    (an :class:`~nccldiag.inventory.Host`)."""

    remote = True
    holds_session = True  # a command's parent is sshd's session, which lives as long as the connection

    def __init__(self, host, options: SSHOptions):
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


class LaunchHere(LocalNode):
    """Where a launcher that starts every rank from this machine runs (srun, clush), named after it."""

    remote = False


def connect_all(nodes: Sequence[Node], fanout: int) -> Dict[str, str]:
    """Connect ``nodes``, ``fanout`` at a time, each bounded by its own timeouts; returns host -> why not."""
    unreachable: Dict[str, str] = {}

    def connect(n: Node) -> None:
        try:
            n.connect()
        except TransportError as exc:
            unreachable[n.name] = exc.message

    fan_out(list(nodes), connect, fanout)
    return unreachable


def run_all(nodes: Sequence[Node], command: str, timeout: float, fanout: int = 64,
            stdin: Optional[str] = None) -> Dict[str, ExecResult]:
    """``command`` on every node, ``fanout`` at a time, each bounded by ``timeout``: name -> its result, in
    node order. A node that could not be reached has its :class:`TransportError` in ``error``."""
    def one(node: Node) -> ExecResult:
        try:
            return node.run(command, timeout, stdin=stdin)
        except TransportError as exc:
            return ExecResult(node.name, None, error=exc)

    nodes = list(nodes)
    return {n.name: r for n, r in zip(nodes, fan_out(nodes, one, fanout))}
