"""Running commands on this machine: the default with no hostfile."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Mapping, Optional, Sequence, Union

from nccldiag.transport.base import COMMAND_TIMEOUT, LOCAL, ExecResult, TransportError


def kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and everything it started (it leads its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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
            out, err_text = proc.communicate()
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
