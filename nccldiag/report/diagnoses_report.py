"""The "Diagnoses" section every report opens with, from the report document.

The engines attach the diagnoses (:func:`nccldiag.diagnosis.attach`); a
document carries them as ``diagnoses`` (``Diagnosis.to_dict()``) and
``diagnosis_summary``. This module serialises them into a document and
renders them from it, for the terminal (summary first: healthy and failing
nodes, the transport paths that worked, then each diagnosis in a few lines;
``-v`` adds its evidence) and, through :func:`view`, for the file formats.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from rich.console import Console
from rich.text import Text

from nccldiag.diagnosis.model import fails_run
from nccldiag.report.findings import fold

TOP = 5
_STYLE = {"fail": "fail", "warn": "warn", "info": "muted"}


def to_json(diags: Sequence[Any], s: Any) -> Dict[str, Any]:
    """The document's ``diagnoses`` and ``diagnosis_summary`` from those an engine attached."""
    if s is None:
        raise ValueError("the report was not diagnosed: the engine attaches its diagnoses (diagnosis.attach)")
    return {"diagnoses": [d.to_dict() for d in diags], "diagnosis_summary": s.to_dict()}


def verdict_exit_code(code: int, diags: Sequence[Any]) -> int:
    """An exit code that follows the verdict: a failing diagnosis, or one that cites lines saying something failed
    that no cause explains (:func:`nccldiag.diagnosis.model.fails_run`), makes it 1 (unhealthy), as a failing finding
    does."""
    return 1 if any(fails_run(d) for d in diags) and code in (0, 3) else code


def evidence_line(e: Dict[str, Any]) -> str:
    """One piece of evidence as ``Evidence.line()`` wrote it: ``kind: [ref] host: text``."""
    where = f"{e['host']}: " if e.get("host") else ""
    ref = f"[{e['ref']}] " if e.get("ref") and e.get("kind") != "log" else ""
    return f"{e.get('kind')}: {ref}{where}{e.get('text')}"


def view(d: Dict[str, Any]) -> Dict[str, Any]:
    """One document diagnosis in the shape the file formats print: strings and lists of strings."""
    conf = d.get("confidence") or {}
    level, why = (conf.get("level") or "", conf.get("why") or "") if isinstance(conf, dict) else (str(conf), "")
    nodes = list(d.get("nodes") or []) + [p for p in d.get("pairs") or [] if p not in (d.get("nodes") or [])]
    workaround, cost = d.get("workaround") or "", d.get("workaround_cost") or ""
    return {
        "title": str(d.get("title") or ""), "severity": str(d.get("severity") or "fail"),
        "summary": str(d.get("summary") or ""), "nodes": [str(n) for n in nodes],
        "evidence": [evidence_line(e) if isinstance(e, dict) else str(e) for e in d.get("evidence") or []],
        "level": str(level), "confidence": f"{level}: {why}" if why else str(level), "why": str(why),
        "fix": str(d.get("fix") or ""), "workaround": workaround + (f" (cost: {cost})" if workaround and cost else ""),
        "missing": [str(m) for m in d.get("missing") or []], "confirm": str(d.get("confirm") or ""),
        "alternatives": [str(a) for a in d.get("alternatives") or []],
        "defined_at": str(d.get("defined_at") or ""),
    }


def headline(items: Sequence[Dict[str, Any]], empty: bool = False, unchecked: Sequence[str] = (),
             interrupted: bool = False) -> Tuple[str, str]:
    """``(text, style)`` of the report's first line: the verdict in plain words, where, and how sure.

    The first fail or warn diagnosis names it; with none, the run shows nothing broken (and says so only then:
    the diagnoses already hold an ``unexplained`` verdict wherever a finding fails or warns unexplained).
    ``empty``: the input held nothing to judge, which is no all-clear; ``unchecked``: nodes that could not be
    checked, which no verdict covers; ``interrupted``: the run stopped before its end, so what never ran is
    judged by nobody.
    """
    ds = [view(d) for d in items]
    top = next((d for d in ds if d["severity"] in ("fail", "warn")), None)
    if top is None and unchecked:
        names = ", ".join(list(unchecked)[:6]) + (f" and {len(unchecked) - 6} more" if len(unchecked) > 6 else "")
        return f"Verdict: not checked: {names}; nothing broken on the others", "error"
    if top is None and interrupted:
        return "Verdict: not finished: the run stopped before its end; nothing broken in what it did", "error"
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


def _summary(doc: Dict[str, Any]) -> Dict[str, Any]:
    return doc.get("diagnosis_summary") or {}


def print_headline(doc: Dict[str, Any], con: Console, empty: bool = False, unchecked: bool = False) -> None:
    """The report's first line: the verdict (see :func:`headline`); ``unchecked``: name the nodes not checked."""
    text, style = headline(doc.get("diagnoses") or [], empty,
                           _summary(doc).get("unchecked_nodes") or [] if unchecked else [],
                           interrupted=bool(doc.get("interrupted")))
    con.print(Text(text, style=f"bold {style}"))


def bandwidth_line(bandwidth: Dict[str, Any], setting: str) -> Optional[Text]:
    """``busbw vs expected: ...`` for one probe setting (``diagnosis_summary.bandwidth``), or None without a figure."""
    from nccldiag.diagnosis.expected import FLOOR

    c = (bandwidth or {}).get(setting)
    if not c:
        return None
    exp = c.get("expected")
    if not exp:
        return Text(f"  busbw {c['measured_gbps']:.2f} GB/s: no expectation ({c['why_not']})", style="muted")
    b = exp["bottleneck"]
    style = "warn" if c["below"] else ("ok" if c["comparable"] else "muted")
    whence = (f"expected by {b['basis']}" if b["segment"] == "site spec" else
              f"bottleneck {b['segment']}: {b['basis']}" + (f" on {b['host']}" if b.get("host") else ""))
    floor = c.get("floor")
    low = f", low below {floor:.0%}" if floor is not None and abs(floor - FLOOR) > 1e-9 else ""
    line = Text.assemble("  busbw ", (f"{c['measured_gbps']:.2f} / {exp['gbps']:.1f} GB/s = {c['percent']:.0f}% of expected",
                                      style),
                         f" ({c['collective']}, {whence}{low})")
    if not c["comparable"]:
        line.append(f"; not judged: {c['why_not']}", style="muted")
    return line


def render(doc: Dict[str, Any], con: Console, verbose: bool = False, paths: bool = True,
           empty: bool = False, head: bool = True) -> None:
    """The diagnoses of the document ``doc``. ``empty``: the input held nothing to judge (the headline says so
    instead of "nothing broken"); ``head``: print the verdict line first (a report that opens with it already
    says no)."""
    diags: List[Dict[str, Any]] = list(doc.get("diagnoses") or [])
    s = _summary(doc)
    if head:
        print_headline(doc, con, empty, unchecked=True)
    con.print(Text("Diagnoses", style="bold"))
    healthy, warned = s.get("healthy_nodes") or [], s.get("warned_nodes") or []
    failing, unchecked = s.get("failing_nodes") or [], s.get("unchecked_nodes") or []
    if healthy or failing or unchecked or warned:
        parts: List[Any] = [(f"{len(healthy)} healthy", "ok"), (f" ({fold(healthy)})" if healthy else ""), ", "]
        if warned:
            parts += [(f"{len(warned)} with warnings", "warn"), f" ({fold(warned)}), "]
        parts += [(f"{len(failing)} failing", "fail" if failing else ""), (f" ({fold(failing)})" if failing else "")]
        if unchecked:
            parts += [", ", (f"{len(unchecked)} not checked ({fold(unchecked)})", "error")]
        con.print(Text.assemble("  nodes: ", *parts))
    ok_paths, bad_paths = s.get("working_paths") or [], s.get("failing_paths") or []
    if paths and (ok_paths or bad_paths):
        if ok_paths:
            con.print(Text.assemble("  worked: ", ("; ".join(ok_paths), "ok")))
        if bad_paths:
            con.print(Text.assemble("  failed: ", ("; ".join(bad_paths), "fail")))
    if not diags and not empty:
        con.print(Text("  no diagnosis: the evidence shows nothing broken", style="ok"))
    shown = diags if verbose else diags[:TOP]
    for x in shown:
        d, nodes = view(x), [str(n) for n in x.get("nodes") or []]
        con.print(Text.assemble("  ", (f"{d['severity'].upper():4}", _STYLE.get(d["severity"], "")), " ",
                                (d["title"], "bold"), f"  [{d['level']} confidence]",
                                ("  " + fold(nodes) if nodes else "", "cyan")))
        con.print(Text(f"       {d['summary']}"))
        if verbose:
            con.print(Text(f"       why {d['level']}: {d['why']}", style="muted"))
            for e in d["evidence"]:
                con.print(Text(f"       | {e}", style="muted"))
        con.print(Text(f"       fix: {d['fix']}"))
        if d["workaround"]:
            con.print(Text(f"       workaround: {d['workaround']}"))
        if d["confirm"]:
            con.print(Text(f"       confirm: {d['confirm']}", style="muted"))
        if d["defined_at"]:
            con.print(Text(f"       the site's cause, defined at {d['defined_at']}", style="muted"))
        for a in d["alternatives"] if verbose else []:
            con.print(Text(f"       or: {a}", style="muted"))
        for m in d["missing"]:
            con.print(Text(f"       to confirm, run: {m}", style="muted"))
    if len(diags) > len(shown):
        con.print(Text(f"  ... {len(diags) - len(shown)} more (-v shows all, with evidence)", style="muted"))
    elif diags and not verbose:
        con.print(Text("  (-v shows the evidence)", style="muted"))
    con.print()
