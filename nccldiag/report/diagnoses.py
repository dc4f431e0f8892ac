"""Diagnoses as the renderers read them: whatever holds them (the JSON document's dicts or objects), one shape.

A diagnosis joins several pieces of evidence into one verdict
(:mod:`nccldiag.diagnosis`; in a document, ``Diagnosis.to_dict()``). The
file formats only need its text: ``title``, ``nodes`` (nodes and pairs),
``evidence`` (lines: finding ids, log lines with file:line, measured
figures), ``confidence`` (the level and why), ``fix``, ``workaround`` (with
its measured cost), and where present ``severity``, ``summary`` and
``missing`` (the commands that would supply missing evidence).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from nccldiag.model.findings import clean_text, to_jsonable



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


def _evidence_line(e: Any) -> str:
    if hasattr(e, "line") and callable(e.line):
        return _text(e.line())
    if isinstance(e, dict) and "text" in e:
        where = f"{e['host']}: " if e.get("host") else ""
        ref = f"[{e['ref']}] " if e.get("ref") and e.get("kind") != "log" else ""
        kind = f"{e['kind']}: " if e.get("kind") else ""
        return _text(f"{kind}{ref}{where}{e['text']}")
    return _text(e)


def _lines(value: Any) -> List[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)):
        return [_text(value)]
    if isinstance(value, dict):
        return [_text(f"{k}: {v}") for k, v in to_jsonable(value).items()]
    return [_evidence_line(v) for v in value]


def _confidence(value: Any, why: Any) -> str:
    if isinstance(value, dict):
        value, why = value.get("level"), value.get("why") or why
    level = _text(value)
    return f"{level}: {_text(why)}" if why else level


def one(item: Any) -> Dict[str, Any]:
    """One diagnosis in the renderers' shape (lists and strings only)."""
    nodes = _get(item, "nodes")
    nodes = [] if nodes is None else ([nodes] if isinstance(nodes, str) else list(nodes))
    nodes += [p for p in (_get(item, "pairs") or []) if p not in nodes]
    workaround = _text(_get(item, "workaround"))
    cost = _text(_get(item, "workaround_cost"))
    return {
        "title": _text(_get(item, "title")),
        "severity": _text(_get(item, "severity")) or "fail",
        "summary": _text(_get(item, "summary")),
        "nodes": [_text("-".join(map(str, n)) if isinstance(n, (list, tuple)) else n) for n in nodes],
        "evidence": _lines(_get(item, "evidence")),
        "confidence": _confidence(_get(item, "confidence"), _get(item, "confidence_why")),
        "fix": _text(_get(item, "fix")),
        "workaround": workaround + (f" (cost: {cost})" if workaround and cost else ""),
        "missing": [_text(m) for m in (_get(item, "missing") or [])],
    }


def normalize(items: Optional[Iterable[Any]]) -> List[Dict[str, Any]]:
    """Every diagnosis in ``items`` (None: none) in the renderers' shape, in the given order."""
    return [one(i) for i in (items or [])]
