"""Findings: what a check concludes about one node (or the whole cluster).

A finding carries the status, a one-line message that states the actual value
against the expected one, the evidence lines it was judged from, and the fix.
Findings are plain data: checks produce them, reports render them.
"""
from __future__ import annotations

import copy
import dataclasses
import enum
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from nccldiag.model.secrets import redact


class Status(str, enum.Enum):
    """Outcome of one check. Ordered by severity (see ``SEVERITY``)."""

    OK = "ok"
    SKIP = "skip"  # nothing to check here (hardware absent, area not selected)
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"  # could not be checked (host unreachable, command timed out)

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


SEVERITY = {Status.SKIP: 0, Status.OK: 1, Status.WARN: 2, Status.ERROR: 3, Status.FAIL: 4}


def worst(statuses: Iterable[Status], default: Status = Status.SKIP) -> Status:
    """The most severe status of ``statuses`` (``default`` when empty)."""
    result = None
    for s in statuses:
        if result is None or SEVERITY[s] > SEVERITY[result]:
            result = s
    return default if result is None else result


# Escape sequences (CSI, OSC up to its terminator, two-byte ESC forms) and every other control
# character but tab and newline: text from nodes and files never drives the reader's terminal.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Characters a terminal shows as nothing that change what the reader sees: bidirectional overrides,
# embeddings and isolates (text shown in another order than it is), zero-width characters and line
# separators (two strings that look the same). They are shown as their code (``\u202e``), never obeyed.
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]")
_SUSPECT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
                      "\ufeff\ufff9-\ufffb]")
_suspect = _SUSPECT.search


def clean_text(value: Any) -> Any:
    """``value`` with terminal escapes and control characters removed, invisible formatting characters
    (bidi, zero-width) shown as their code, and the secrets it quotes masked (:func:`secrets.redact`):
    strings, and lists, tuples and dicts of them (keys too), at any depth. Text that needs no cleaning is
    returned as it is."""
    t = type(value)
    if t is str:
        if value.isprintable() or not _suspect(value):  # printable: none of the characters cleaned here
            return redact(value)
    elif t is list:
        return [v if type(v) in _CLEAN else redact(v) if type(v) is str and v.isprintable() else clean_text(v)
                for v in value]
    elif t is dict:
        return {(redact(k) if type(k) is str and k.isprintable() else clean_text(k)):
                (v if type(v) in _CLEAN else redact(v) if type(v) is str and v.isprintable() else clean_text(v))
                for k, v in value.items()}
    if isinstance(value, str):
        if not _suspect(value):
            return redact(value)
        value = _CONTROLS.sub("", _ESCAPES.sub("", value))
        return redact(_INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", value))
    if isinstance(value, (list, tuple)):
        return type(value)(clean_text(v) for v in value)
    if isinstance(value, dict):
        return {clean_text(k): clean_text(v) for k, v in value.items()}
    return value


_CLEAN = frozenset((int, float, bool, type(None)))  # values with no text to clean


@dataclass
class Finding:
    """One judged fact.

    ``check`` is a stable dotted id (``iommu.mode``, ``ib.port_state``) that
    JSON consumers and ``docs/checks.md`` use; ``area`` groups checks into the
    columns of the report.
    """

    area: str
    check: str
    status: Status
    message: str
    actual: Any = None
    expected: Any = None
    evidence: List[str] = field(default_factory=list)
    fix: str = ""
    host: Optional[str] = None

    def __post_init__(self) -> None:
        # findings quote what nodes and files said: keep the words, drop what a terminal would obey
        self.message = clean_text(self.message)
        self.actual = clean_text(self.actual)
        self.expected = clean_text(self.expected)
        self.evidence = clean_text(self.evidence)
        self.fix = clean_text(self.fix)
        self.host = clean_text(self.host)

    def to_dict(self) -> dict:
        """The finding as :func:`dataclasses.asdict` gives it (values copied), with the status's value."""
        return {"area": self.area, "check": self.check, "status": self.status.value, "message": self.message,
                "actual": _copied(self.actual), "expected": _copied(self.expected),
                "evidence": _copied(self.evidence), "fix": self.fix, "host": self.host}


_ATOMS = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    """``value`` as :func:`dataclasses.asdict` copies a field: containers copied, dataclasses made dicts."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is list:
        return [_copied(v) for v in value]
    if kind is dict:
        return {_copied(k): _copied(v) for k, v in value.items()}
    if kind is tuple:
        return tuple(_copied(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return copy.deepcopy(value)


def ok(area: str, check: str, message: str, **kw: Any) -> Finding:
    return Finding(area, check, Status.OK, message, **kw)


def warn(area: str, check: str, message: str, **kw: Any) -> Finding:
    return Finding(area, check, Status.WARN, message, **kw)


def fail(area: str, check: str, message: str, **kw: Any) -> Finding:
    return Finding(area, check, Status.FAIL, message, **kw)


def skip(area: str, check: str, message: str, **kw: Any) -> Finding:
    return Finding(area, check, Status.SKIP, message, **kw)


def error(area: str, check: str, message: str, **kw: Any) -> Finding:
    return Finding(area, check, Status.ERROR, message, **kw)


def to_jsonable(obj: Any) -> Any:
    """Turn facts (dataclasses, enums, tuples, sets) into JSON-friendly values."""
    t = type(obj)
    if t is str or t is int or t is float or t is bool or obj is None:
        return obj
    if t is list or t is tuple:
        return [v if type(v) in _PLAIN else to_jsonable(v) for v in obj]
    if t is dict:
        return {(k if type(k) is str else str(k)): (v if type(v) in _PLAIN else to_jsonable(v))
                for k, v in obj.items()}
    names = _FIELDS.get(t)
    if names is None:
        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(obj)) \
            if dataclasses.is_dataclass(obj) and not isinstance(obj, type) else ()
    if names:
        return {name: to_jsonable(getattr(obj, name)) for name in names}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = [to_jsonable(v) for v in obj]
        return sorted(items, key=str) if isinstance(obj, (set, frozenset)) else items
    return obj


_PLAIN = frozenset((str, int, float, bool, type(None)))
_FIELDS: Dict[type, Tuple[str, ...]] = {}  # a dataclass's field names, in order (none: not a dataclass)


# Exit codes shared by check, probe and log (Nagios-like, shifted so click's usage error keeps 2).
EXIT_OK = 0
EXIT_UNHEALTHY = 1  # something failed: fix it
EXIT_USAGE = 2  # bad option, hostfile, bundle, log file
EXIT_UNCHECKED = 3  # nothing failed, but the verdict is incomplete
EXIT_INTERNAL = 4  # nccldiag itself failed: a bug, not a verdict on any node


def exit_code(statuses: Iterable[Status], incomplete: bool = False) -> int:
    """1 if anything failed; else 3 if something could not be checked (an error, or ``incomplete``); else 0."""
    seen = set(statuses)
    if Status.FAIL in seen:
        return EXIT_UNHEALTHY
    if Status.ERROR in seen or incomplete:
        return EXIT_UNCHECKED
    return EXIT_OK
