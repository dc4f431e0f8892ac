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

from typing import Any, Dict, Iterable, List, Optional, Sequence

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
        "category": _text(_get(item, "category")),
        "confirm": _text(_get(item, "confirm")),
        "alternatives": [_text(a) for a in (_get(item, "alternatives") or [])],
        "level": _text(_level(_get(item, "confidence"))),
    }


def _level(value: Any) -> Any:
    return value.get("level") if isinstance(value, dict) else value


def headline(items: Optional[Iterable[Any]], empty: bool = False,
             unchecked: Sequence[str] = ()) -> "tuple[str, str]":
    """``(text, style)`` of the report's first line: the verdict in plain words, where, and how sure.

    The first fail or warn diagnosis names it; with none, the run shows nothing broken (and says so only then:
    the diagnoses already hold an ``unexplained`` verdict wherever a finding fails or warns unexplained).
    ``empty``: the input held nothing to judge, which is no all-clear; ``unchecked``: nodes that could not be
    checked, which no verdict covers.
    """
    ds = normalize(items)
    top = next((d for d in ds if d["severity"] in ("fail", "warn")), None)
    if top is None and unchecked:
        names = ", ".join(list(unchecked)[:6]) + (f" and {len(unchecked) - 6} more" if len(unchecked) > 6 else "")
        return f"Verdict: not checked: {names}; nothing broken on the others", "error"
    if top is None and empty:
        return "Verdict: nothing to judge: the input holds no NCCL line, error or result", "warn"
    if top is None and ds:
        more = f" (and {len(ds) - 1} more)" if len(ds) > 1 else ""
        return f"Verdict: no fault found; noted: {ds[0]['title']}{more}", "ok"
    if top is None:
        return "Verdict: nothing broken", "ok"
    where = f" on {', '.join(top['nodes'][:6])}" + (f" and {len(top['nodes']) - 6} more" if len(top["nodes"]) > 6
                                                    else "") if top["nodes"] else ""
    sure = f" ({top['level']} confidence)" if top["level"] else ""
    return f"Verdict: {top['severity'].upper()} {top['title']}{where}{sure}", top["severity"]


def normalize(items: Optional[Iterable[Any]]) -> List[Dict[str, Any]]:
    """Every diagnosis in ``items`` (None: none) in the renderers' shape, in the given order."""
    return [one(i) for i in (items or [])]
