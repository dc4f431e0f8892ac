"""``nccldiag log FILE...``: read NCCL logs you already have and say what they show.

Exit codes: 0 the logs parsed and show no failure, 1 they show a failure
(a WARN with an error result, a watchdog timeout, a Socket fallback under
``--require-ib`` ...), 2 usage error (a file that cannot be read, a bad
option). Messages go to stderr; ``--json -`` keeps stdout for JSON alone.
"""
from __future__ import annotations

import glob
import os
import stat
import sys
from typing import BinaryIO, Dict, List, Optional, Sequence

import click

from nccldiag.cli.options import CONTEXT, causes_option
from nccldiag.report import outputs



class _LogUsageError(Exception):
    """A file or option the command cannot use; reported as one line with exit code 2."""


def expand(paths: Sequence[str]) -> List[str]:
    """The files ``paths`` name: a directory gives its files (sorted; not those of its subdirectories, nor hidden
    ones), a pattern that is no file's name (``'logs/nccl.*.log'``, quoted) the files it matches."""
    out: List[str] = []
    for path in paths:
        if path == "-" or os.path.exists(path) and not os.path.isdir(path):
            out.append(path)
        elif os.path.isdir(path):
            files = sorted(os.path.join(path, n) for n in os.listdir(path)
                           if not n.startswith(".") and os.path.isfile(os.path.join(path, n)))
            if not files:
                raise _LogUsageError(f"{path}: is a directory with no files in it, expected NCCL logs")
            out += files
        elif any(c in path for c in "*?["):
            files = sorted(p for p in glob.glob(path) if os.path.isfile(p))
            if not files:
                raise _LogUsageError(f"{path}: no file matches")
            out += files
        else:
            out.append(path)  # missing: check_log names it
    return out


def check_log(path: str) -> None:
    """Raise a usage error naming ``path`` unless it is a file (or pipe) that can be read; nothing is read."""
    if path == "-":
        return
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise _LogUsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
    with fh:
        mode = os.fstat(fh.fileno()).st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        # /dev/zero and the like never end; pipes (a process substitution, '-') are read as logs
        raise _LogUsageError(f"{path}: is a device or socket, expected an NCCL log file")


def parse_files(paths: Sequence[str], workers: Optional[int] = None, stdin_tap=None):
    """Parse the logs at ``paths`` in blocks through the prefilter (memory bounded whatever their size); several
    files in parallel, ``workers`` processes (default: one per core), as one job. Returns the facts and the node
    outputs pasted in the files (:func:`read_pasted`; each file scanned by the worker that parsed it).
    ``stdin_tap`` (a :class:`nccldiag.diagnosis.signature.LineScan`) is fed standard input as it is read."""
    from nccldiag.diagnosis import pasted
    from nccldiag.nccl import scan

    paths = expand(paths)
    for path in paths:  # every file checked before any is read
        check_log(path)
    if "-" not in paths and len(paths) > 1 and workers != 1:
        try:
            facts, parts = scan.read_paths(paths, workers=workers, each=_pasted_in)
        except scan.ReadError as exc:
            raise _LogUsageError(str(exc)) from None
        out = pasted.Pasted()
        for part in parts:
            out.merge(part)
        return facts, out
    return scan.parse_streams(_reading(paths, stdin_tap)), read_pasted(paths)


def _reading(paths: Sequence[str], stdin_tap=None):
    """``(name, stream)`` of each path in turn, each file open only while it is read."""
    for path in paths:
        if path == "-":
            yield "<stdin>", _Guarded("<stdin>", sys.stdin.buffer, stdin_tap)
            continue
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise _LogUsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
        with fh:
            yield path, _Guarded(path, fh)


class _Guarded:
    """A stream whose read errors (EIO, a vanished NFS file) become a usage error naming the file; ``tap``, where
    given, is fed what is read (standard input is read once: a site's patterns see it as the reader does)."""

    def __init__(self, name: str, stream: BinaryIO, tap=None) -> None:
        self.name, self.stream, self.tap = name, stream, tap

    def readline(self, size: int = -1) -> bytes:
        try:
            data = self.stream.readline(size)
        except OSError as exc:
            raise _LogUsageError(f"{self.name}: cannot read NCCL log: {exc.strerror or exc}") from None
        if self.tap is not None:
            self.tap.feed(data)
        return data

    def read(self, size: int = -1) -> bytes:
        try:
            data = self.stream.read(size)
        except OSError as exc:
            raise _LogUsageError(f"{self.name}: cannot read NCCL log: {exc.strerror or exc}") from None
        if self.tap is not None:
            self.tap.feed(data)
        return data


def read_pasted(paths: Sequence[str]):
    """The node outputs pasted in the files (ibstat, ulimit -a, a launcher's failure block ...), each file read
    whole apart from the log parser; standard input and files over the size of a paste are not."""
    from nccldiag.diagnosis import pasted

    out = pasted.Pasted()
    for path in paths:
        if path != "-":
            out.merge(_pasted_in(path))
    return out


def _pasted_in(path: str):
    """The node outputs pasted in the file at ``path`` (none in a file over the size of a paste)."""
    from nccldiag.diagnosis import pasted

    try:
        if os.path.getsize(path) > pasted.MAX_TEXT:
            return pasted.Pasted()
        with open(path, "rb") as fh:
            text = fh.read(pasted.MAX_TEXT + 1).decode("utf-8", "replace")
    except OSError:
        return pasted.Pasted()  # parse_files has read it or said why not
    return pasted.scan(text, path)


def site_lines(paths: Sequence[str], patterns, stdin_tap=None) -> List:
    """The lines of the files given that a site's ``[[cause]]`` patterns match: each file read once more, line by
    line, whatever its size; standard input as ``stdin_tap`` saw it."""
    from nccldiag.diagnosis import signature

    out: List = []
    if not patterns:
        return out
    for path in expand(paths):
        if path == "-":
            out += stdin_tap.finish() if stdin_tap is not None else []
            continue
        try:
            with open(path, "rb") as fh:
                out += signature.lines_in(_Guarded(path, fh), path, patterns)
        except OSError as exc:
            raise _LogUsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
    return out


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


@click.command("log", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@outputs.options()
@click.option("--require-ib", is_flag=True,
              help="Inter-node traffic must use InfiniBand/RoCE: a Socket fallback fails.")
@click.option("--expect", "expect", multiple=True, metavar="KEY=VAL[,KEY=VAL]",
              help="NCCL variables the job set (e.g. NCCL_IB_DISABLE=1); differing echoed values fail (repeatable).")
@click.option("--channels", "include_channels", is_flag=True, help="Include the channel lines in the JSON (the first 1000; every line is counted).")
@click.option("-v", "--verbose", is_flag=True, help="Show all evidence lines and the skipped checks.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Processes reading several files at once (default: one per core; 1: one process).")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="A site spec (default $NCCLDIAG_SPEC): its [[cause]] rows name failure lines the site knows, and "
                   "its [severity] applies to the log's findings (docs/spec.md).")
@causes_option
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
def log(files, require_ib, expect, include_channels, verbose, color, workers, spec_path, causes_path, **kw):
    """Read NCCL logs (NCCL_DEBUG=INFO) and report versions, networks, transports and failures.

    nccl-tests result tables and perftest outputs in the same files are read
    too: wrong results fail, and their figures are reported. So are NCCL RAS
    reports (ncclras, text or JSON): dead, missing and failed ranks fail.

    \b
    nccldiag log nccl.*.log                 one file per process (NCCL_DEBUG_FILE=nccl.%h.%p.log)
    nccldiag log logs/                      every file of a directory, read in parallel
    nccldiag log job.out --require-ib       a job's stdout; Socket fallback is a failure
    nccldiag log job.out --json -           JSON on stdout

    FILE '-' reads standard input (paste, then Ctrl-D).

    Exit codes: 0 no failure in the logs, 1 the logs show a failure (a
    failing finding or verdict), 2 usage error.
    """
    from nccldiag import diagnosis
    from nccldiag.diagnosis import signature
    from nccldiag.nccl import checks as nccl_checks
    from nccldiag.spec import causes, model, runs
    from nccldiag.report import log_report as report
    from nccldiag.report.console import console
    from nccldiag.report.finish import finish
    from nccldiag.report.jsonout import plain

    from nccldiag.model.errors import UsageError

    outs = outputs.Outputs.pop(kw)
    try:
        outs.validate()
        expected = parse_expect(expect)
        spec = model.load_given(spec_path, causes_path)
        patterns = causes.patterns(spec.causes) if spec is not None else []
        tap = signature.LineScan("<stdin>", patterns) if patterns else None
        facts, pastes = parse_files(files, workers, tap)
        findings = nccl_checks.judge(facts, require_ib=require_ib, expected_env=expected)
        runs.apply_policy(spec, findings)
        doc = plain(report.to_json(facts, findings, diagnosis.conclude(logs=facts, log_findings=list(findings),
                                                                       pasted=pastes, spec=spec,
                                                                       site_lines=site_lines(files, patterns, tap)),
                                   include_channels))
        finish(doc, outs, lambda d: report.render(d, console(color=color), verbose=verbose))
    except (_LogUsageError, UsageError) as exc:
        click.echo(f"nccldiag: error: {exc}", err=True)
        sys.exit(2)
    if outs.stdout_json and not facts.nccl_lines:
        click.echo(f"nccldiag: {report.no_nccl_lines(facts)}", err=True)
    sys.exit(doc["exit_code"])
