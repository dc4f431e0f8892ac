"""A report document on the terminal, whichever command made it (``nccldiag report RUN_DIR``)."""
from __future__ import annotations

from typing import Any, Dict

from rich.console import Console


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
