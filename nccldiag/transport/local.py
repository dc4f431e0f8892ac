"""Running commands on this machine: the default with no hostfile."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import List, Mapping, Optional, Sequence, Tuple, Union

import psutil

from nccldiag.transport.base import COMMAND_TIMEOUT, LOCAL, ExecResult, TransportError


# After a kill, how long output still in the pipes is read; anything that
# escaped the kill and still holds a pipe open does not delay the result longer.
DRAIN_TIMEOUT = 1.0


def _tree(pid: int) -> List[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root] + root.children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def kill_tree(pid: int) -> None:
    """Kill process ``pid``, every descendant and the process group it leads.

    Descendants are collected before anything is killed, so that children
    which moved to a group of their own (GNU ``timeout`` does) are not
    orphaned out of reach; the group kill catches what detached from the tree.
    """
    procs = _tree(pid)
    for p in procs:  # stop first: nothing forks between collecting and killing
        try:
            p.suspend()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    procs += [p for p in _tree(pid) if p not in procs]
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for p in procs:
        try:
            p.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass


def kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and everything it started (it leads its own session)."""
    kill_tree(proc.pid)


def _drain(proc: subprocess.Popen) -> Tuple[bytes, bytes]:
    """What is left in the pipes of a killed ``proc``, read for at most DRAIN_TIMEOUT."""
    try:
        out, err = proc.communicate(timeout=DRAIN_TIMEOUT)
    except subprocess.TimeoutExpired:
        # something that escaped the kill still holds the pipes: stop reading
        for f in (proc.stdout, proc.stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        try:
            proc.wait(DRAIN_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        out, err = b"", b""
    return out or b"", err or b""


class LocalTransport:
    """Runs commands with ``sh`` in a session of their own, bounded by a timeout."""

    def __init__(self, host: str = "localhost"):
        self.host = host

    def run(
        self,
        command: Union[str, Sequence[str]],
        timeout: float,
        stdin: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
    ) -> ExecResult:
        argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
        full_env = dict(os.environ)
        full_env.update(env or {})
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=full_env,
                start_new_session=True,
            )
        except OSError as exc:
            err = TransportError(LOCAL, f"cannot run {argv[0]}: {exc.strerror or exc}", self.host)
            return ExecResult(self.host, None, error=err, elapsed=time.monotonic() - start)
        try:
            out, err_text = proc.communicate(stdin.encode() if stdin is not None else None, timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            out, err_text = _drain(proc)
            elapsed = time.monotonic() - start
            return ExecResult(
                self.host,
                None,
                out.decode("utf-8", "replace"),
                err_text.decode("utf-8", "replace"),
                elapsed,
                TransportError(COMMAND_TIMEOUT, f"command timed out after {timeout:g} s", self.host),
            )
        return ExecResult(
            self.host,
            proc.returncode,
            out.decode("utf-8", "replace"),
            err_text.decode("utf-8", "replace"),
            time.monotonic() - start,
        )

    def close(self) -> None:
        pass
