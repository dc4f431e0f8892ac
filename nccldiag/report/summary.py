"""A report document on the terminal (``nccldiag report RUN_DIR``): the verdict first, then the details."""
from __future__ import annotations

from typing import Any, Dict, List

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.model.findings import SEVERITY, Status
from nccldiag.report import matrix as tmatrix

_RANK = {s.value: SEVERITY[s] for s in Status}
CELL_STYLE = {"works": "ok", "hang": "hang", "error": "fail", "wrong": "wrong", "not used": "muted", "?": "muted",
              "not run": "muted", "ok": "ok", "incomplete": "warn", "not-run": "muted"}


def transport_table(doc: Dict[str, Any]) -> Table:
    """The transport matrix of a probe document as a rich table."""
    m = tmatrix.build(doc)
    t = Table(header_style="bold", box=None, pad_edge=False)
    t.add_column("setting", no_wrap=True)
    for c in m.columns:
        t.add_column(c, no_wrap=True)
    t.add_column("busbw GB/s", justify="right", no_wrap=True)
    if any(r.expected for r in m.rows):
        t.add_column("% expected", justify="right", no_wrap=True)
    for r in m.rows:
        cells = [Text(r.cells[c], style=CELL_STYLE.get(r.cells[c], "")) for c in m.columns]
        bw = "-" if r.busbw is None else f"{r.busbw:.2f}"
        extra = [("-" if r.percent is None else f"{r.percent:.0f}%")] if any(x.expected for x in m.rows) else []
        t.add_row(Text(r.setting, style="bold"), *cells, bw, *extra)
    return t


def _findings(con: Console, found: List[Dict[str, Any]], verbose: bool) -> None:
    floor = _RANK["ok"] if verbose else _RANK["warn"]
    seen = set()
    for f in sorted(found, key=lambda f: -_RANK.get(f.get("status"), 0)):
        if _RANK.get(f.get("status"), 0) < floor or (f.get("check"), f.get("host"), f.get("message")) in seen:
            continue
        seen.add((f.get("check"), f.get("host"), f.get("message")))
        st = str(f.get("status"))
        con.print(Text.assemble((f" {st.upper():5} ", st), " ", (str(f.get("check")), "bold"), " ",
                                (str(f.get("host") or ""), "cyan"), "  ", str(f.get("message") or "")))
        if st != "ok":
            for line in (f.get("evidence") or [])[: None if verbose else 4]:
                con.print(Text(f"        | {line}", style="muted"))
            if f.get("fix"):
                con.print(Text(f"        fix: {f['fix']}"))


def _diagnoses(con: Console, doc: Dict[str, Any], verbose: bool) -> None:
    unchecked = (doc.get("diagnosis_summary") or {}).get("unchecked_nodes") or []
    render_diagnoses(con, doc.get("diagnoses") or [], verbose, unchecked)


def render_diagnoses(con: Console, items: List[Dict[str, Any]], verbose: bool = False,
                     unchecked: List[str] = ()) -> None:
    """Diagnoses as a document holds them: title, nodes, the verdict, fix and workaround; -v the evidence."""
    from nccldiag.report.diagnoses import headline, normalize

    text, style = headline(items, unchecked=unchecked)
    con.print(Text(text, style=f"bold {style}"))
    con.print(Text("Diagnoses", style="bold"))
    if not items:
        con.print(Text("  no diagnosis: the evidence shows nothing broken", style="ok"))
    for d in normalize(items):
        sev = d["severity"]
        con.print(Text.assemble("  ", (f"{sev.upper():4}", {"fail": "fail", "warn": "warn"}.get(sev, "muted")), " ",
                                (d["title"], "bold"), (f"  [{d['confidence']}]" if d["confidence"] and verbose else ""),
                                ("  " + ", ".join(d["nodes"]) if d["nodes"] else "", "cyan")))
        if d["summary"]:
            con.print(Text(f"       {d['summary']}"))
        if verbose:
            for line in d["evidence"]:
                con.print(Text(f"       | {line}", style="muted"))
        if d["fix"]:
            con.print(Text(f"       fix: {d['fix']}"))
        if d["workaround"]:
            con.print(Text(f"       workaround: {d['workaround']}"))
        if d["confirm"]:
            con.print(Text(f"       confirm: {d['confirm']}", style="muted"))
        for a in d["alternatives"] if verbose else []:
            con.print(Text(f"       or: {a}", style="muted"))
        for m in d["missing"]:
            con.print(Text(f"       to confirm, run: {m}", style="muted"))


def render(doc: Dict[str, Any], con: Console, verbose: bool = False) -> None:
    schema = str(doc.get("schema") or "")
    if schema.startswith("nccldiag.isolate/"):
        from nccldiag.report import isolate_report

        isolate_report.render(doc, con, verbose)
        return
    head = f"{schema}, nccldiag {doc.get('nccldiag_version')}, {doc.get('generated_at')}"
    if schema.startswith("nccldiag.check/"):
        nodes = doc.get("nodes") or []
        counts = (doc.get("summary") or {}).get("by_status") or {}
        con.print(Text.assemble((f"check: {len(nodes)} node(s)", "bold"), "  ",
                                ", ".join(f"{v} {k}" for k, v in counts.items() if v), (f"  ({head})", "muted")))
        _diagnoses(con, doc, verbose)
        t = Table(header_style="bold", pad_edge=False)
        t.add_column("node", no_wrap=True)
        areas = doc.get("areas") or []
        for a in areas:
            t.add_column(a, no_wrap=True)
        for n in nodes:
            cells = [Text(str((n.get("areas") or {}).get(a) or "-"), style=str((n.get("areas") or {}).get(a) or "muted"))
                     for a in areas]
            t.add_row(str(n.get("host")), *cells)
        con.print(t)
        _findings(con, [f for n in nodes for f in n.get("findings") or []], verbose)
    elif schema.startswith("nccldiag.probe/"):
        settings = doc.get("settings") or []
        worked = [s.get("name") for s in settings if s.get("status") == "ok"]
        con.print(Text.assemble((f"probe: {doc.get('backend')} via {doc.get('launcher')}, "
                                 f"{len(doc.get('hosts') or [])} node(s)", "bold"),
                                f"  {len(worked)} of {len(settings)} setting(s) worked", (f"  ({head})", "muted")))
        _diagnoses(con, doc, verbose)
        if settings:
            con.print(transport_table(doc))
        _findings(con, list(doc.get("findings") or []) + [f for s in settings for f in s.get("findings") or []],
                  verbose)
    else:
        con.print(Text.assemble((f"log: {len(doc.get('files') or [])} file(s)", "bold"), (f"  ({head})", "muted")))
        _diagnoses(con, doc, verbose)
        _findings(con, list(doc.get("findings") or []), verbose)
    if doc.get("note"):
        con.print(Text(str(doc["note"]), style="muted"))
    con.print(Text(f"exit {doc.get('exit_code')}", style="muted"))
