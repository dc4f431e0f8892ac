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
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Tuple

from nccldiag.model.errors import UsageError
from nccldiag.nccl.unwrap import Unwrapping


@dataclass
class LogRun:
    """What the logs showed: their facts, the findings judged of them, the diagnoses, the pasted node outputs."""

    facts: Any  # nccldiag.nccl.log.NcclLogFacts
    findings: List[Any]
    diagnoses: Any
    pastes: Any  # nccldiag.paste.Pasted
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
    paths, left = listing(paths)
    facts, pastes = read(paths, workers, tap, lines)
    findings = checks.judge(facts, require_ib=require_ib, expected_env=expected_env or {}) + skipped(left)
    runs.apply_policy(spec, findings)
    return LogRun(facts, findings,
                  diagnosis.conclude(logs=facts, log_findings=list(findings), pasted=pastes, spec=spec,
                                     site_lines=site_lines(paths, patterns, tap), failure_lines=lines),
                  pastes, lines)


def skipped(left: Sequence[Tuple[str, str]]) -> List[Any]:
    """A warning naming each entry of a directory or pattern that was not read (:func:`listing`): what a log
    file there would have said is not in the verdict."""
    from nccldiag.model.findings import warn

    if not left:
        return []
    return [warn("nccl", "nccl.file_skipped", f"{len(left)} entr{'y' if len(left) == 1 else 'ies'} of the "
                 "directories or patterns given not read as logs: " + "; ".join(f"{p}: {why}" for p, why in left[:8])
                 + (f"; and {len(left) - 8} more" if len(left) > 8 else ""),
                 evidence=[f"{p}: {why}" for p, why in left[:50]],
                 fix="Read a file that is not a regular file of the directory by naming it on its own, after a look "
                     "at where it leads.")]


def read(paths: Sequence[str], workers: Optional[int] = None, stdin_tap=None, failure_lines: Optional[List] = None):
    """Parse the logs at ``paths`` in blocks through the prefilter (memory bounded whatever their size); several
    files in parallel, ``workers`` processes (default: one per core), as one job. Returns the facts and the node
    outputs pasted in the files and standard input (:mod:`nccldiag.paste`: each text searched as it is read, by
    the process that parses it; what was found judged once for all, so that one host's outputs pasted in several
    files are one node). ``stdin_tap`` (a :class:`nccldiag.diagnosis.signature.LineScan`) is fed standard input
    as it is read; ``failure_lines``, where given, gets the lines of the failure lexicon
    (:mod:`nccldiag.knowledge.lexicon`), read from the lines the prefilter hands the parser (every line of a
    shape is among them)."""
    from nccldiag import paste
    from nccldiag.nccl import scan

    paths = expand(paths)
    for path in paths:  # every file checked before any is read
        check_log(path)
    if "-" not in paths and len(paths) > 1 and workers != 1:
        try:
            facts, parts = scan.read_paths(paths, workers=workers, each=pasted_in, failure_lines=failure_lines)
        except scan.ReadError as exc:
            raise UsageError(str(exc)) from None
        return facts, paste.judged(paste.merged(parts))
    readers: List[Any] = []
    facts = scan.parse_streams(_reading(paths, stdin_tap, readers), failure_lines=failure_lines)
    return facts, paste.judged(paste.merged([r.end() for r in readers]))


def expand(paths: Sequence[str]) -> List[str]:
    """The files ``paths`` name (:func:`listing`), without what was left out of the directories and patterns."""
    return listing(paths)[0]


# what lies under these is the kernel's, never a log: a read of /proc/kmsg waits for the next kernel message
KERNEL_TREES = ("/proc", "/sys", "/dev")


def listing(paths: Sequence[str]) -> Tuple[List[str], List[Tuple[str, str]]]:
    """The files ``paths`` name, and ``(path, why)`` of each entry of a directory or match of a pattern left out.

    A directory gives its files (sorted; not those of its subdirectories, nor hidden ones), a pattern that is no
    file's name (``'logs/nccl.*.log'``, quoted) the files it matches. A directory or pattern may be someone
    else's, so of what it holds only regular files are taken: a FIFO, a device or a socket is left out, and so
    is a symbolic link unless it leads to a regular file inside the directory that holds it (a link to
    /etc/shadow or /proc/kmsg is named, never read). A path given by itself is taken as it is (a pipe, ``-``,
    a process substitution): :func:`check_log` judges it."""
    out: List[str] = []
    left: List[Tuple[str, str]] = []
    for path in paths:
        if path == "-" or os.path.exists(path) and not os.path.isdir(path):
            out.append(path)
        elif os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if not n.startswith("."))
            files = [p for p in (os.path.join(path, n) for n in names) if _taken(p, path, left)]
            if not files and not left:
                raise UsageError(f"{path}: is a directory with no files in it, expected NCCL logs")
            if not files:
                raise UsageError(f"{path}: holds no regular file to read as an NCCL log ("
                                 + "; ".join(f"{os.path.basename(p)}: {why}" for p, why in left[:4]) + ")")
            out += files
        elif any(c in path for c in "*?["):
            files = [p for p in sorted(glob.glob(path)) if not os.path.isdir(p)
                     and _taken(p, os.path.dirname(p) or ".", left)]
            if not files:
                raise UsageError(f"{path}: no file matches")
            out += files
        else:
            out.append(path)  # missing: check_log names it
    return out, left


def _taken(path: str, within: str, left: List[Tuple[str, str]]) -> bool:
    """Whether ``path``, an entry of the directory ``within``, is read as a log; if not and it is no
    subdirectory, ``(path, why)`` is added to ``left``."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        left.append((path, f"cannot be read ({exc.strerror or exc})"))
        return False
    if stat.S_ISDIR(st.st_mode):
        return False
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(path)
        home = os.path.realpath(within)
        if os.path.commonpath([home, target]) != home or _kernel(target):
            left.append((path, f"a symbolic link out of {within} (to {target}): not followed"))
            return False
        try:
            st = os.stat(target)
        except OSError as exc:
            left.append((path, f"a symbolic link that leads nowhere ({exc.strerror or exc})"))
            return False
        if stat.S_ISDIR(st.st_mode):
            return False
    if not stat.S_ISREG(st.st_mode):
        left.append((path, f"not a regular file ({_kind(st.st_mode)}): not read"))
        return False
    if _kernel(os.path.realpath(path)):
        left.append((path, "a file of the kernel's, not a log: not read"))
        return False
    return True


def _kernel(path: str) -> bool:
    return any(path == t or path.startswith(t + "/") for t in KERNEL_TREES)


def _kind(mode: int) -> str:
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")


def check_log(path: str) -> None:
    """Raise a usage error naming ``path`` unless it is a file (or pipe) that can be read. Nothing is opened: a
    named pipe opened and closed here would let its writer start, write into a pipe with no reader and die of
    SIGPIPE, and the read that follows would then wait for a writer that is gone."""
    if path == "-":
        return
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise UsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        # /dev/zero and the like never end; pipes (a process substitution, '-') are read as logs
        raise UsageError(f"{path}: is a device or socket, expected an NCCL log file")
    if stat.S_ISDIR(mode):
        raise UsageError(f"{path}: is a directory, expected an NCCL log file")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{path}: cannot read NCCL log: {os.strerror(13)}")


def _reading(paths: Sequence[str], stdin_tap=None, readers: Optional[List[Any]] = None):
    """``(name, stream, reader)`` of each path in turn, each file open only while it is read; where ``readers`` is
    given, ``reader`` is a :class:`nccldiag.paste.Reader` of it, appended to ``readers``, that the prefilter feeds
    what it reads (with the words found in the same pass), else None."""
    from nccldiag import paste

    for path in paths:
        name = "<stdin>" if path == "-" else path
        reader = None if readers is None else paste.Reader(name)  # fed by the prefilter (scan.feed)
        if reader is not None:
            readers.append(reader)
        if path == "-":
            yield name, _Guarded(name, Unwrapping(sys.stdin.buffer), stdin_tap), reader
            continue
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise UsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
        with fh:
            yield path, _Guarded(path, Unwrapping(fh)), reader


class _Guarded:
    """A stream whose read errors (EIO, a vanished NFS file) become a usage error naming the file; ``tap``, where
    given, is fed what is read (standard input is read once: a site's patterns see it as the reader does)."""

    def __init__(self, name: str, stream: BinaryIO, tap=None) -> None:
        self.name, self.stream, self.tap = name, stream, tap

    def readline(self, size: int = -1) -> bytes:
        return self._read(self.stream.readline, size)

    def read(self, size: int = -1) -> bytes:
        return self._read(self.stream.read, size)

    def _read(self, how, size: int) -> bytes:
        try:
            data = how(size)
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
                out += signature.lines_in(_Guarded(path, Unwrapping(fh)), path, patterns)
        except OSError as exc:
            raise UsageError(f"{path}: cannot read NCCL log: {exc.strerror or exc}") from None
    return out


def pasted_in(path: str):
    """What the file at ``path`` holds of node outputs and processes' ends, not judged yet
    (:func:`nccldiag.paste.read_file`; run by the worker that parsed the file)."""
    from nccldiag import paste

    return paste.read_file(path)
