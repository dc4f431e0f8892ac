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
from typing import Any, Callable, Dict, Iterable, Optional

import click

from nccldiag import rundir
from nccldiag.model.findings import clean_text
from nccldiag.report.outputs import Outputs, reader_may_leave


def _cleaned(nodes: Callable[[], Iterable[Dict[str, Any]]]) -> Callable[[], Iterable[Dict[str, Any]]]:
    """``nodes`` with each node's part cleaned as it is made, none of them held once the next is asked for."""
    def each() -> Iterable[Dict[str, Any]]:
        for entry in nodes():
            entry = clean_text(entry)
            yield entry
            entry = None  # let go before the next is made
    return each


def finish(doc: Dict[str, Any], outs: Outputs, view: Optional[Callable[[Dict[str, Any]], None]] = None,
           run_dir: Optional[str] = None, kept: Optional[Callable[[str], None]] = None,
           nodes: Optional[Callable[[], Iterable[Dict[str, Any]]]] = None) -> None:
    """Print ``view(doc)`` (the terminal view), keep ``doc`` in ``run_dir``, write ``outs``.

    Every string of the document is cleaned first (:func:`clean_text`: no terminal escape, no control
    character, no secret it quotes), for the view and for every file alike: this is the one way a report
    leaves nccldiag, so ``nccldiag report`` on the stored document prints the same bytes. ``kept(why)`` is told, before the files are written,
    why the run directory could not be written ('' when it was, or when there is none). A report file that
    cannot be written is a usage error (exit 2), raised after the table and the run directory.

    With ``nodes`` (a check of many nodes: ``doc["nodes"]`` left empty), ``nodes()`` makes each node's part of
    the document in order as it is written, so the whole document is never held (``report.json`` and
    ``--json``); the view is then given the document with the nodes it needs made by its caller.
    """
    doc = clean_text(doc)
    if nodes is not None:
        nodes = _cleaned(nodes)
    if view is not None and not outs.stdout_json:
        with reader_may_leave():
            view(doc)
    failed = ""
    written = None
    if run_dir and os.path.isdir(run_dir):
        try:
            written = rundir.save_report(run_dir, doc, nodes)  # --json is the same text: copied, not made again
        except (OSError, ValueError) as exc:
            failed = f"{getattr(exc, 'strerror', None) or exc}"
    if kept is not None:
        kept(failed)
    elif failed:
        click.echo(f"nccldiag: warning: run directory {run_dir}: cannot write: {failed}", err=True)
    outs.write(doc, nodes, written)
