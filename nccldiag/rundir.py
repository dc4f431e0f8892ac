"""Run directories: what a ``check``, ``probe`` or ``isolate`` run keeps, written as it arrives.

:class:`Run` is the one writer of a run directory; what each line holds is
encoded beside the type it encodes (``probe/records.py`` for probe and
isolate, the check engine's node report for check). Layout (every file is
JSON or JSON lines)::

    run.json        what ran: command, run id, hosts, options (written first)
    nodes.jsonl     check: one line per node as it is collected and judged
    raw/            check: the node outputs as a bundle (``check --bundle`` reads it; :meth:`Run.bundle`)
    records.jsonl   probe, isolate: every rank's records as they come
    settings.jsonl  probe: one line per setting once it has ended (how each node's launcher ended)
    nccl-logs/      probe: the NCCL logs fetched from the nodes, per setting and host
    facts.jsonl     probe (NCCL): per node, the outputs its expected bandwidth is derived from
    rounds.jsonl    isolate: one line per round once it has ended
    report.json     the report document, written at the end of the run

Ctrl-C or a crash keeps every line already written; ``nccldiag report
RUN_DIR`` renders the report again from ``report.json`` (or, where the run did
not reach its end, from what it kept). Run directories live under
``$XDG_STATE_HOME/nccldiag/<command>/`` by default (``~/.local/state/...``),
never in the working tree.
"""
from __future__ import annotations

import json
import os
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional

from nccldiag.atomic import json_loads, pieces, streamed, write_text
from nccldiag.model.errors import UsageError

if TYPE_CHECKING:
    from nccldiag.bundle import Bundle

META = "run.json"
REPORT = "report.json"
RAW = "raw"
EARLIER = (META, "records.jsonl")  # what a run leaves first in its directory: there, the directory is not new
LIMIT = 1 << 30  # the most of one file a report reads back (records of a long run stay far below)
COMMANDS = ("check", "probe", "isolate")


def new_run_id() -> str:
    """``nccldiag-<UTC-less local time>-<6 hex>``: the name of a run, of its directory and of its processes."""
    return f"nccldiag-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:6]}"


def state_dir(command: str) -> str:
    """``$XDG_STATE_HOME/nccldiag/<command>`` (``~/.local/state/nccldiag/<command>``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "nccldiag", command)


def prepare(path: str, option: str = "--run-dir") -> str:
    """Check, before any work, that ``path`` can become a new run directory; its absolute path.

    An existing directory is taken only if it is empty, this user's, closed
    to other users' writes and not a link (:func:`nccldiag.atomic.check_own_dir`);
    in any case nobody else may be able to replace it through a directory
    above it (:func:`nccldiag.atomic.check_parents`).
    """
    from nccldiag.atomic import Unsafe, check_output_dir

    path = os.path.abspath(path)
    try:
        check_output_dir(path)
    except Unsafe as exc:
        raise UsageError(f"{option} {path}: {exc.strerror}") from None
    if os.path.lexists(path):
        if any(os.path.exists(os.path.join(path, name)) for name in EARLIER):
            raise UsageError(f"{option} {path}: holds an earlier run; give a new directory")
        if os.listdir(path):
            raise UsageError(f"{option} {path}: is not empty; give a new or empty directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"{option} {path}: cannot write in it")
        return path
    parent = os.path.dirname(path)
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot create it (no write access to {parent})")
    return path


def create(path: str, meta: Dict[str, Any]) -> str:
    """Make the run directory (owner only, so that it cannot have existed before, or the empty one
    :func:`prepare` accepted, checked again) and write ``run.json``.

    Raises :class:`nccldiag.atomic.Unsafe` (an ``OSError``) when something
    else stands at the path by now.
    """
    from nccldiag.atomic import own_dir

    own_dir(path)
    write_text(os.path.join(path, META), json.dumps(meta, indent=2, default=str) + "\n")
    return path


class Lines:
    """A JSON-lines file appended to, one flushed line per value (safe across threads)."""

    def __init__(self, path: str):
        from nccldiag.atomic import create_new

        self.path = path
        self._lock = threading.Lock()
        # a new file: never one planted at the name, never through a link
        self._f = os.fdopen(create_new(path, os.O_WRONLY | os.O_APPEND), "w", encoding="utf-8")

    def add(self, value: Dict[str, Any]) -> None:
        with self._lock:
            self._f.write(json.dumps(value, default=str) + "\n")
            self._f.flush()

    def close(self) -> None:
        with self._lock:
            self._f.close()


class Run:
    """One run directory, and its only writer: ``run.json``, its JSON-lines files, its other files, ``report.json``.

    ``path`` is the directory the user gave (checked by :func:`prepare` before
    any work) or None for ``$XDG_STATE_HOME/nccldiag/<command>/<run id>``.
    Nothing is written before :meth:`create`.
    """

    def __init__(self, command: str, path: Optional[str] = None, run_id: Optional[str] = None):
        if command not in COMMANDS:
            raise ValueError(f"no run directory for a {command!r} run")
        self.command = command
        self.run_id = run_id or new_run_id()
        self.path = os.path.abspath(path) if path else os.path.join(state_dir(command), self.run_id)
        self.created = False
        self._lines: Dict[str, Lines] = {}
        self._lock = threading.Lock()

    @classmethod
    def given(cls, command: str, path: Optional[str], option: str = "--run-dir") -> "Run":
        """The run of ``command`` in ``path`` (refused before any work, see :func:`prepare`), or in the state
        directory without one."""
        return cls(command, prepare(path, option) if path else None)

    def create(self, meta: Dict[str, Any]) -> "Run":
        """Make the directory and write ``run.json`` (``command``, ``run_id`` and ``started`` added).

        Raises ``OSError`` when the directory cannot be made or written.
        """
        create(self.path, {"command": self.command, "run_id": self.run_id,
                           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **meta})
        self.created = True
        return self

    def file(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    def lines(self, name: str) -> "Lines":
        """The JSON-lines file ``name`` of the run, made new at its first use."""
        with self._lock:
            if name not in self._lines:
                self._lines[name] = Lines(self.file(name))
            return self._lines[name]

    def write(self, relpath: str, text: str) -> None:
        """The file of the run at ``relpath``, written whole (its directories made, owner only)."""
        path = self.file(relpath)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write_text(path, text)

    def bundle(self) -> "Bundle":
        """``raw/``: the nodes' outputs as a bundle, each node written as it arrives, here or by the shard
        worker that collected it (the handle goes to the worker)."""
        from nccldiag.bundle import Bundle

        return Bundle(self.file(RAW))

    def save_report(self, doc: Dict[str, Any], nodes: Optional[Callable[[], Iterable[Dict[str, Any]]]] = None) -> str:
        return save_report(self.path, doc, nodes)

    def close(self) -> None:
        for lines in self._lines.values():
            lines.close()


def read_text(path: str, limit: int = LIMIT) -> Optional[str]:
    """The text of a regular file of a run directory (never through a link, a FIFO or a device); None if absent.

    Anything else at that name is a usage error naming it: a run directory is read, never trusted.
    """
    from nccldiag.atomic import NotRegular, TooLarge, read_regular

    try:
        return read_regular(path, limit)
    except FileNotFoundError:
        return None
    except (NotRegular, TooLarge) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from None


MAX_LINE = 64 << 20  # bytes of one JSON line read back (a node's sources in facts.jsonl are the largest)


def iter_lines(path: str, limit: int = LIMIT, max_line: int = MAX_LINE) -> Iterator[Dict[str, Any]]:
    """The objects of a JSON-lines file of a run directory, one at a time as they are read: the file is never
    held whole, so what a reader keeps is what it holds (a records file of 100 MB took 1 GB decoded at once).
    Opened as :func:`read_text` opens a file; a line longer than ``max_line`` bytes, one that is no JSON object
    (a last line cut by a crash) or one nested too deep (:func:`nccldiag.atomic.json_loads`) is left out; at
    most ``limit`` bytes are read."""
    from nccldiag.atomic import NotRegular, TooLarge, open_regular

    try:
        f = open_regular(path, limit)
    except FileNotFoundError:
        return
    except (NotRegular, TooLarge) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    with f:
        left = limit
        while left > 0:
            line = f.readline(min(max_line + 1, left))
            if not line:
                return
            left -= len(line)
            if len(line) > max_line:  # an overlong line: the rest of it skipped, never held
                while line and not line.endswith(b"\n") and left > 0:
                    line = f.readline(min(max_line, left))
                    left -= len(line)
                continue
            try:
                v = json_loads(line)
            except ValueError:
                continue
            if isinstance(v, dict):
                yield v


def read_lines(path: str) -> List[Dict[str, Any]]:
    """The objects of a JSON-lines file (:func:`iter_lines`), in a list: for the files a run writes one line to
    per setting, node or round, never for its records."""
    return list(iter_lines(path))


def save_report(path: str, doc: Dict[str, Any], nodes: Optional[Callable[[], Iterable[Dict[str, Any]]]] = None) -> str:
    """``report.json`` of the run directory ``path``: the document every format is rendered from; its path.
    With ``nodes`` (``doc["nodes"]`` left empty), each node's part is made as it is written
    (:func:`nccldiag.atomic.streamed`), so that the whole document is never held."""
    target = os.path.join(path, REPORT)
    write_text(target, pieces(doc) if nodes is None else streamed(doc, nodes()))
    return target


def read_meta(path: str) -> Dict[str, Any]:
    p = os.path.join(path, META)
    text = read_text(p, 16 << 20)
    if text is None:
        raise UsageError(f"{path}: not a run directory (no {META})")
    try:
        meta = json_loads(text)
    except ValueError as exc:
        raise UsageError(f"{p}: cannot read it: {exc}") from None
    if not isinstance(meta, dict) or meta.get("command") not in COMMANDS:
        raise UsageError(f"{p}: not the run.json of a check, probe or isolate run")
    return meta


def read_report(path: str) -> Optional[Dict[str, Any]]:
    """``report.json`` of a finished run; None when the run did not reach its end."""
    p = os.path.join(path, REPORT)
    text = read_text(p)
    if text is None:
        return None
    try:
        doc = json_loads(text)
    except ValueError as exc:
        raise UsageError(f"{p}: cannot read it: {exc}") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("nccldiag."):
        raise UsageError(f"{p}: not an nccldiag report")
    return doc
