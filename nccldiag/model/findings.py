"""Findings: what a check concludes about one node (or the whole cluster).

A finding carries the status, a one-line message that states the actual value
against the expected one, the evidence lines it was judged from, and the fix.
Findings are plain data: checks produce them, reports render them.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional


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

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["status"] = self.status.value
        return d


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
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = [to_jsonable(v) for v in obj]
        return sorted(items, key=str) if isinstance(obj, (set, frozenset)) else items
    return obj


# Exit codes shared by check, probe and log (Nagios-like, shifted so click's usage error keeps 2).
EXIT_OK = 0
EXIT_UNHEALTHY = 1  # something failed: fix it
EXIT_USAGE = 2  # bad option, hostfile, bundle, log file
EXIT_UNCHECKED = 3  # nothing failed, but the verdict is incomplete


def exit_code(statuses: Iterable[Status], incomplete: bool = False) -> int:
    """1 if anything failed; else 3 if something could not be checked (an error, or ``incomplete``); else 0."""
    seen = set(statuses)
    if Status.FAIL in seen:
        return EXIT_UNHEALTHY
    if Status.ERROR in seen or incomplete:
        return EXIT_UNCHECKED
    return EXIT_OK
