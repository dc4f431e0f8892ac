"""Running a local command with its output streamed line by line."""
from __future__ import annotations

import os
import subprocess
import threading
import time
from typing import Callable, Mapping, Optional, Sequence

from nccldiag.transport.base import COMMAND_TIMEOUT, LOCAL, ExecResult, TransportError
from nccldiag.transport.local import DRAIN_TIMEOUT, kill_group


def run_streaming(
    argv: Sequence[str],
    timeout: float,
    on_line: Optional[Callable[[str], None]] = None,
    cancel: Optional[threading.Event] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    host: str = "localhost",
    stdin_text: Optional[str] = None,
) -> ExecResult:
    """Run ``argv`` in its own session; kill it and all it started on timeout or cancel.

    After a kill, output still in the pipes is read for at most
    :data:`~nccldiag.transport.local.DRAIN_TIMEOUT` seconds, so a process that
    escaped the kill and holds the pipes open does not delay the result.
    ``stdin_text``, when given, is written to the process's standard input
    (then closed) from a thread of its own.
    """
    full_env = dict(os.environ)
    full_env.update(env or {})
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL if stdin_text is None else subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=full_env, cwd=cwd, start_new_session=True,
        )
    except OSError as exc:
        return ExecResult(host, None, error=TransportError(LOCAL, f"cannot run {argv[0]}: {exc.strerror or exc}", host))
    out_lines, err_chunks = [], []

    def read_out() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            out_lines.append(line)
            if on_line is not None:
                on_line(line)

    def read_err() -> None:
        assert proc.stderr is not None
        err_chunks.append(proc.stderr.read())

    def write_in() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write((stdin_text or "").encode())
            proc.stdin.close()
        except OSError:
            pass

    readers = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
    if stdin_text is not None:
        threading.Thread(target=write_in, daemon=True).start()
    for r in readers:
        r.start()
    deadline = start + timeout
    stopped = None
    while True:
        try:
            proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            stopped = f"timed out after {timeout:g} s"
        elif cancel is not None and cancel.is_set():
            stopped = "cancelled"
        if stopped:
            kill_group(proc)
            proc.wait()
            break
    for r in readers:
        r.join(DRAIN_TIMEOUT if stopped else 5)
    stderr = b"".join(err_chunks).decode("utf-8", "replace")
    result = ExecResult(host, proc.returncode if not stopped else None, "\n".join(list(out_lines)), stderr, time.monotonic() - start)
    if stopped:
        result.error = TransportError(COMMAND_TIMEOUT, f"command {stopped}", host)
    return result
