"""One ``nccldiag log`` end to end: the files named (directories and patterns expanded), each checked before any
is read, read through the prefilter (:mod:`nccldiag.nccl.scan`, several files in parallel; the lines that say
something failed, the failure lexicon's, taken as they are handed over), the node outputs pasted in them found,
the facts judged and the diagnoses concluded; returned, nothing printed. A file that cannot be read is a usage
error naming it."""
from __future__ import annotations

import glob
import os
import stat
import sys
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Dict, List, Optional, Sequence

from nccldiag.model.errors import UsageError


@dataclass
class LogRun:
    """What the logs showed: their facts, the findings judged of them, the diagnoses, the pasted node outputs."""

    facts: Any  # nccldiag.nccl.log.NcclLogFacts
    findings: List[Any]
    diagnoses: Any
    pastes: Any  # nccldiag.diagnosis.pasted.Pasted
    failure_lines: List[Any] = field(default_factory=list)  # nccldiag.knowledge.lexicon.Line


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
    lines: List[Any] = []
    facts, pastes = read(paths, workers, tap, lines)
    findings = checks.judge(facts, require_ib=require_ib, expected_env=expected_env or {})
    runs.apply_policy(spec, findings)
    return LogRun(facts, findings,
                  diagnosis.conclude(logs=facts, log_findings=list(findings), pasted=pastes, spec=spec,
                                     site_lines=site_lines(paths, patterns, tap), failure_lines=lines),
                  pastes, lines)


def read(paths: Sequence[str], workers: Optional[int] = None, stdin_tap=None, failure_lines: Optional[List] = None):
    """Parse the logs at ``paths`` in blocks through the prefilter (memory bounded whatever their size); several
    files in parallel, ``workers`` processes (default: one per core), as one job. Returns the facts and the node
    outputs pasted in the files (:func:`read_pasted`; each file scanned by the worker that parsed it).
    ``stdin_tap`` (a :class:`nccldiag.diagnosis.signature.LineScan`) is fed standard input as it is read;
    ``failure_lines``, where given, gets the lines of the failure lexicon (:mod:`nccldiag.knowledge.lexicon`),
    read from the lines the prefilter hands the parser (every line of a shape is among them)."""
    from nccldiag.diagnosis import pasted
    from nccldiag.nccl import scan

    paths = expand(paths)
    for path in paths:  # every file checked before any is read
        check_log(path)
    if "-" not in paths and len(paths) > 1 and workers != 1:
        try:
            facts, parts = scan.read_paths(paths, workers=workers, each=pasted_in, failure_lines=failure_lines)
        except scan.ReadError as exc:
            raise UsageError(str(exc)) from None
        out = pasted.Pasted()
        for part in parts:
            out.merge(part)
        return facts, out
    return scan.parse_streams(_reading(paths, stdin_tap), failure_lines=failure_lines), read_pasted(paths)


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


def _reading(paths: Sequence[str], stdin_tap=None):
    """``(name, stream)`` of each path in turn, each file open only while it is read."""
    for path in paths:
        if path == "-":
            yield "<stdin>", _Guarded("<stdin>", sys.stdin.buffer, stdin_tap)
            continue
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise UsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
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


def read_pasted(paths: Sequence[str]):
    """The node outputs pasted in the files (ibstat, ulimit -a, a launcher's failure block ...), each file read
    whole apart from the log parser; standard input and files over the size of a paste are not."""
    from nccldiag.diagnosis import pasted

    out = pasted.Pasted()
    for path in paths:
        if path != "-":
            out.merge(pasted_in(path))
    return out


def pasted_in(path: str):
    """The node outputs pasted in the file at ``path`` (none in a file over the size of a paste)."""
    from nccldiag.diagnosis import pasted

    try:
        if os.path.getsize(path) > pasted.MAX_TEXT:
            return pasted.Pasted()
        with open(path, "rb") as fh:
            text = fh.read(pasted.MAX_TEXT + 1).decode("utf-8", "replace")
    except OSError:
        return pasted.Pasted()  # read() has read it or said why not
    return pasted.scan(text, path)
