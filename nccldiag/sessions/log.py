"""One ``nccldiag log`` end to end: the files named (directories and patterns expanded), each checked before any
is read, read through the prefilter (:mod:`nccldiag.nccl.scan`, several files in parallel), the node outputs
pasted in them found, the facts judged and the diagnoses concluded; returned, nothing printed. A file that cannot
be read is a usage error naming it."""
from __future__ import annotations

import glob
import os
import stat
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, List, Optional, Sequence

from nccldiag.model.errors import UsageError


@dataclass
class LogRun:
    """What the logs showed: their facts, the findings judged of them, the diagnoses, the pasted node outputs."""

    facts: Any  # nccldiag.nccl.log.NcclLogFacts
    findings: List[Any]
    diagnoses: Any
    pastes: Any  # nccldiag.paste.Pasted


def run(paths: Sequence[str], workers: Optional[int] = None, require_ib: bool = False,
        expected_env: Optional[Dict[str, str]] = None, spec: Any = None) -> LogRun:
    """The logs at ``paths`` read (:func:`read`), judged (``require_ib``: a Socket fallback fails;
    ``expected_env``: variables the job set, whose echoed values must match) and diagnosed; ``spec``: a site
    spec whose ``[[cause]]`` rows name lines the site knows (each file read once more for them) and whose
    ``[severity]`` applies to the findings."""
    from nccldiag import diagnosis
    from nccldiag.diagnosis import signature
    from nccldiag.nccl import checks
    from nccldiag.spec import causes, runs

    patterns = causes.patterns(spec.causes) if spec is not None else []
    tap = signature.LineScan("<stdin>", patterns) if patterns else None
    facts, pastes = read(paths, workers, tap)
    findings = checks.judge(facts, require_ib=require_ib, expected_env=expected_env or {})
    runs.apply_policy(spec, findings)
    return LogRun(facts, findings,
                  diagnosis.conclude(logs=facts, log_findings=list(findings), pasted=pastes, spec=spec,
                                     site_lines=site_lines(paths, patterns, tap)),
                  pastes)


def read(paths: Sequence[str], workers: Optional[int] = None, stdin_tap=None):
    """Parse the logs at ``paths`` in blocks through the prefilter (memory bounded whatever their size); several
    files in parallel, ``workers`` processes (default: one per core), as one job. Returns the facts and the node
    outputs pasted in the files and standard input (:mod:`nccldiag.paste`: each text searched as it is read, by
    the process that parses it; what was found judged once for all, so that one host's outputs pasted in several
    files are one node). ``stdin_tap`` (a :class:`nccldiag.diagnosis.signature.LineScan`) is fed standard input
    as it is read."""
    from nccldiag import paste
    from nccldiag.nccl import scan

    paths = expand(paths)
    for path in paths:  # every file checked before any is read
        check_log(path)
    if "-" not in paths and len(paths) > 1 and workers != 1:
        try:
            facts, parts = scan.read_paths(paths, workers=workers, each=pasted_in)
        except scan.ReadError as exc:
            raise UsageError(str(exc)) from None
        return facts, paste.judged(paste.merged(parts))
    readers: List[Any] = []
    facts = scan.parse_streams(_reading(paths, stdin_tap, readers))
    return facts, paste.judged(paste.merged([r.end() for r in readers]))


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
                raise UsageError(f"{path}: is a directory with no files in it, expected NCCL logs")
            out += files
        elif any(c in path for c in "*?["):
            files = sorted(p for p in glob.glob(path) if os.path.isfile(p))
            if not files:
                raise UsageError(f"{path}: no file matches")
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
        raise UsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
    with fh:
        mode = os.fstat(fh.fileno()).st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        # /dev/zero and the like never end; pipes (a process substitution, '-') are read as logs
        raise UsageError(f"{path}: is a device or socket, expected an NCCL log file")


def _reading(paths: Sequence[str], stdin_tap=None, readers: Optional[List[Any]] = None):
    """``(name, stream)`` of each path in turn, each file open only while it is read; where ``readers`` is given,
    a :class:`nccldiag.paste.Reader` of each is appended to it and fed what is read."""
    from nccldiag import paste

    for path in paths:
        name = "<stdin>" if path == "-" else path
        taps = [] if readers is None else [paste.Reader(name)]
        if readers is not None:
            readers.append(taps[0])
        if path == "-":
            yield name, _Guarded(name, sys.stdin.buffer, _Tee(taps + ([stdin_tap] if stdin_tap is not None else [])))
            continue
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise UsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
        with fh:
            yield path, _Guarded(path, fh, _Tee(taps))


class _Tee:
    """Feeds what is read to each of ``taps`` (objects with ``feed(bytes)``)."""

    def __init__(self, taps: List[Any]) -> None:
        self.taps = taps

    def feed(self, data: bytes) -> None:
        for tap in self.taps:
            tap.feed(data)


class _Guarded:
    """A stream whose read errors (EIO, a vanished NFS file) become a usage error naming the file; ``tap``, where
    given, is fed what is read (standard input is read once: a site's patterns see it as the reader does)."""

    def __init__(self, name: str, stream: BinaryIO, tap=None) -> None:
        self.name, self.stream, self.tap = name, stream, tap

    def readline(self, size: int = -1) -> bytes:
        try:
            data = self.stream.readline(size)
        except OSError as exc:
            raise UsageError(f"{self.name}: cannot read NCCL log: {exc.strerror or exc}") from None
        if self.tap is not None:
            self.tap.feed(data)
        return data

    def read(self, size: int = -1) -> bytes:
        try:
            data = self.stream.read(size)
        except OSError as exc:
            raise UsageError(f"{self.name}: cannot read NCCL log: {exc.strerror or exc}") from None
        if self.tap is not None:
            self.tap.feed(data)
        return data


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
            raise UsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
    return out


def pasted_in(path: str):
    """What the file at ``path`` holds of node outputs and processes' ends, not judged yet
    (:func:`nccldiag.paste.read_file`; run by the worker that parsed the file)."""
    from nccldiag import paste

    return paste.read_file(path)
