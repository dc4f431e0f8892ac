"""Diagnoses as report values: whatever produced them (dicts or objects), one JSON shape.

A diagnosis joins several pieces of evidence into one verdict. The reports
only need its fields: ``title``, ``nodes`` (the nodes or pairs it concerns),
``evidence`` (lines: finding ids, log lines with file:line, measured
figures), ``confidence`` (a word, and why), ``fix`` and ``workaround``. Any
object with those attributes, or a dict with those keys, is accepted.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from nccldiag.model.findings import clean_text, to_jsonable

FIELDS = ("title", "nodes", "evidence", "confidence", "fix", "workaround")


def _get(item: Any, name: str) -> Any:
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return clean_text(value)
    value = to_jsonable(value)
    if isinstance(value, dict):
        return clean_text("; ".join(f"{k}: {v}" for k, v in value.items() if v not in (None, "")))
    return clean_text(str(value))


def _lines(value: Any) -> List[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        return [_text(value)]
    value = to_jsonable(value)
    if isinstance(value, dict):
        return [_text(f"{k}: {v}") for k, v in value.items()]
    return [_text(v) for v in value]


def one(item: Any) -> Dict[str, Any]:
    """One diagnosis as a JSON object with every field of :data:`FIELDS` (lists and strings)."""
    nodes = _get(item, "nodes")
    return {
        "title": _text(_get(item, "title")),
        "nodes": [] if nodes is None else ([_text(nodes)] if isinstance(nodes, str) else
                                           [_text("-".join(map(str, n)) if isinstance(n, (list, tuple)) else n)
                                            for n in nodes]),
        "evidence": _lines(_get(item, "evidence")),
        "confidence": _text(_get(item, "confidence")),
        "fix": _text(_get(item, "fix")),
        "workaround": _text(_get(item, "workaround")),
    }


def normalize(items: Optional[Iterable[Any]]) -> List[Dict[str, Any]]:
    """Every diagnosis in ``items`` (None: none) in the report's JSON shape, in the given order."""
    return [one(i) for i in (items or [])]
