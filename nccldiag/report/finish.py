"""The end of every command that makes a report: the table, ``report.json`` in the run directory, the report files.

In that order, whatever the command (check, probe, isolate, log, report):
the table first (unless the JSON document goes to stdout), so that a file
that cannot be written never hides it; then the document into the run
directory, so that ``nccldiag report RUN_DIR`` renders it again byte for
byte; then ``--json/--junit/--prom/--html``, all rendered from the one
document.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional

from nccldiag import rundir
from nccldiag.report.outputs import Outputs, reader_may_leave


def finish(doc: Dict[str, Any], outs: Outputs, table: Optional[Callable[[], None]] = None,
           run_dir: Optional[str] = None) -> str:
    """Show ``table`` (a function printing the terminal view), keep ``doc`` in ``run_dir``, write ``outs``.

    Returns why the run directory could not be written ('' when it was, or when there is none); a report
    file that cannot be written is a usage error (exit 2), raised after the table and the run directory.
    """
    if table is not None and not outs.stdout_json:
        with reader_may_leave():
            table()
    failed = ""
    if run_dir and os.path.isdir(run_dir):
        try:
            rundir.save_report(run_dir, doc)
        except OSError as exc:
            failed = f"{exc.strerror or exc}"
    outs.write(doc)
    return failed


def warn_unkept(run_dir: Optional[str], failed: str) -> None:
    """The warning of a run whose report.json could not be written (on stderr)."""
    if failed:
        import click

        click.echo(f"nccldiag: warning: run directory {run_dir}: cannot write: {failed}", err=True)
