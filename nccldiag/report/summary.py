"""A report document on the terminal, whichever command made it (``nccldiag report RUN_DIR``); the transport
matrix of a probe."""
from __future__ import annotations

from typing import Any, Dict

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.report import matrix as tmatrix

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


def render(doc: Dict[str, Any], con: Console, verbose: bool = False) -> None:
    """Any report document on the terminal, through its command's view: the live run and ``nccldiag report
    RUN_DIR`` print the same bytes."""
    from nccldiag.report import check_report, isolate_report, log_report, probe_report

    schema = str(doc.get("schema") or "")
    kind = schema.split("/")[0].split(".")[-1] if schema.startswith("nccldiag.") else ""
    views = {"check": check_report.render, "probe": probe_report.render, "log": log_report.render,
             "isolate": isolate_report.render}
    if kind not in views:
        raise ValueError(f"no terminal view of a {schema or 'schema-less'} document")
    views[kind](doc, con, verbose)
