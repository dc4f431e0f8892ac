"""``nccldiag log FILE...``: read NCCL logs you already have and say what they show.

Exit codes: 0 the logs parsed and show no failure, 1 they show a failure
(a WARN with an error result, a watchdog timeout, a Socket fallback under
``--require-ib`` ...), 2 usage error (a file that cannot be read, a bad
option). Messages go to stderr; ``--json -`` keeps stdout for JSON alone.
"""
from __future__ import annotations

import os
import stat
import sys
from typing import BinaryIO, Dict, List, Sequence, Tuple

import click

from nccldiag.cli.options import CONTEXT



class _LogUsageError(Exception):
    """A file or option the command cannot use; reported as one line with exit code 2."""


def open_logs(paths: Sequence[str]) -> List[Tuple[str, BinaryIO]]:
    """``(name, binary stream)`` for each path (``-`` is stdin), all opened before any is read.

    Raises with the path in the message; nothing is read into memory here: the
    parser reads each stream line by line.
    """
    out: List[Tuple[str, BinaryIO]] = []
    try:
        for path in paths:
            if path == "-":
                out.append(("<stdin>", sys.stdin.buffer))
                continue
            if os.path.isdir(path):
                raise _LogUsageError(f"{path}: is a directory, expected an NCCL log file")
            try:
                fh = open(path, "rb")
            except OSError as exc:
                raise _LogUsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
            out.append((path, fh))
            mode = os.fstat(fh.fileno()).st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
                # /dev/zero and the like never end; pipes (a process substitution, '-') are read as logs
                raise _LogUsageError(f"{path}: is a device or socket, expected an NCCL log file")
    except _LogUsageError:
        close_logs(out)
        raise
    return out


def close_logs(streams: Sequence[Tuple[str, BinaryIO]]) -> None:
    for name, stream in streams:
        if name != "<stdin>":
            stream.close()


def parse_files(paths: Sequence[str]):
    """Parse the logs at ``paths`` in blocks through the prefilter (memory bounded whatever their size)."""
    from nccldiag.nccl import scan

    streams = open_logs(paths)
    try:
        return scan.parse_streams(_reading(streams))
    finally:
        close_logs(streams)


def _reading(streams: Sequence[Tuple[str, BinaryIO]]):
    for name, stream in streams:
        yield name, _Guarded(name, stream)


class _Guarded:
    """A stream whose read errors (EIO, a vanished NFS file) become a usage error naming the file."""

    def __init__(self, name: str, stream: BinaryIO) -> None:
        self.name, self.stream = name, stream

    def readline(self, size: int = -1) -> bytes:
        try:
            return self.stream.readline(size)
        except OSError as exc:
            raise _LogUsageError(f"{self.name}: cannot read NCCL log: {exc.strerror or exc}") from None

    def read(self, size: int = -1) -> bytes:
        try:
            return self.stream.read(size)
        except OSError as exc:
            raise _LogUsageError(f"{self.name}: cannot read NCCL log: {exc.strerror or exc}") from None


def parse_expect(values: Sequence[str]) -> Dict[str, str]:
    """``--expect KEY=VAL[,KEY=VAL]`` -> dict."""
    env: Dict[str, str] = {}
    for v in values:
        for item in v.split(","):
            item = item.strip()
            if not item:
                continue
            key, sep, val = item.partition("=")
            if not sep or not key.strip():
                raise _LogUsageError(f"--expect {item!r}: expected KEY=VALUE, e.g. NCCL_IB_DISABLE=1")
            env[key.strip()] = val.strip()
    return env


def _write_json(data: dict, path: str) -> None:
    from nccldiag.report.jsonout import write_json

    try:
        write_json(data, path)
    except OSError as exc:
        raise _LogUsageError(f"--json {path}: cannot write: {exc.strerror or exc}") from None


@click.command("log", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "json_path", metavar="PATH|-", default=None, help="Write the report as JSON ('-' for stdout).")
@click.option("--require-ib", is_flag=True,
              help="Inter-node traffic must use InfiniBand/RoCE: a Socket fallback fails.")
@click.option("--expect", "expect", multiple=True, metavar="KEY=VAL[,KEY=VAL]",
              help="NCCL variables the job set (e.g. NCCL_IB_DISABLE=1); differing echoed values fail (repeatable).")
@click.option("--channels", "include_channels", is_flag=True, help="Include the channel lines in the JSON (the first 1000; every line is counted).")
@click.option("-v", "--verbose", is_flag=True, help="Show all evidence lines and the skipped checks.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
def log(files, json_path, require_ib, expect, include_channels, verbose, color):
    """Read NCCL logs (NCCL_DEBUG=INFO) and report versions, networks, transports and failures.

    nccl-tests result tables and perftest outputs in the same files are read
    too: wrong results fail, and their figures are reported. So are NCCL RAS
    reports (ncclras, text or JSON): dead, missing and failed ranks fail.

    \b
    nccldiag log nccl.*.log                 one file per process (NCCL_DEBUG_FILE=nccl.%h.%p.log)
    nccldiag log job.out --require-ib       a job's stdout; Socket fallback is a failure
    nccldiag log job.out --json -           JSON on stdout

    FILE '-' reads standard input (paste, then Ctrl-D).

    Exit codes: 0 no failure in the logs, 1 the logs show a failure (a
    failing finding or verdict), 2 usage error.
    """
    from nccldiag.nccl import checks as nccl_checks
    from nccldiag.report import log_report as report
    from nccldiag.report.console import console

    try:
        expected = parse_expect(expect)
        facts = parse_files(files)
        findings = nccl_checks.judge(facts, require_ib=require_ib, expected_env=expected)
        diagnosed = report.diagnose(facts, findings)
        if json_path:
            _write_json(report.to_json(facts, findings, include_channels, diagnosed), json_path)
    except _LogUsageError as exc:
        click.echo(f"nccldiag: error: {exc}", err=True)
        sys.exit(2)
    if json_path != "-":
        report.render(facts, findings, console(color=color), verbose=verbose, diagnosed=diagnosed)
    elif not facts.nccl_lines:
        click.echo(f"nccldiag: {report.no_nccl_lines(facts)}", err=True)
    sys.exit(report.exit_code(findings, diagnosed))
