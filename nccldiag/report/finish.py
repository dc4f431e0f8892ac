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
from nccldiag.atomic import collector_paused, plain
from nccldiag.model.findings import clean_text
from nccldiag.model.secrets import redact
from nccldiag.report.outputs import Outputs, reader_may_leave


def _cleaned(nodes: Callable[[], Iterable[Dict[str, Any]]]) -> Callable[[], Iterable[Dict[str, Any]]]:
    """``nodes`` with each node's part cleaned as it is made, none of them held once the next is asked for."""
    def each() -> Iterable[Dict[str, Any]]:
        for entry in nodes():
            entry = clean_text(entry)
            yield entry
            entry = None  # let go before the next is made
    return each


def plain_cleaned(doc: Dict[str, Any]) -> Dict[str, Any]:
    """``clean_text(plain(doc))`` in one walk: the document as a JSON reader gets it back
    (:func:`nccldiag.atomic.plain`), every string cleaned (:func:`clean_text`), for :func:`finish` with
    ``cleaned=True``. Each walk copies every dict and list of the document; the log report of a 200 MiB job stdout
    holds 36,000 of them (its records): 0.12 s for the two walks, 0.07 s for the one. A part that is not plain
    already (a subclass, an object, a dict with a key that is no string) is made plain, then cleaned, as before.
    The cyclic collector is paused meanwhile, as in :func:`nccldiag.atomic.plain`."""
    with collector_paused():
        return _plain_cleaned(doc)


_NUMBERS = frozenset((int, float, bool, type(None)))  # kept as they are by both walks


def _plain_cleaned(value: Any) -> Any:
    t = type(value)
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:  # plain() writes this dict through the encoder and back: so here
                return clean_text(plain(value))
            tv = type(v)
            out[redact(k) if k.isprintable() else clean_text(k)] = \
                v if tv in _NUMBERS else redact(v) if tv is str and v.isprintable() else _plain_cleaned(v)
        return out
    if t is list or t is tuple:
        return [v if type(v) in _NUMBERS else redact(v) if type(v) is str and v.isprintable() else _plain_cleaned(v)
                for v in value]
    if t is str:
        return clean_text(value)
    if t in _NUMBERS:
        return value
    return clean_text(plain(value))


def finish(doc: Dict[str, Any], outs: Outputs, view: Optional[Callable[[Dict[str, Any]], None]] = None,
           run_dir: Optional[str] = None, kept: Optional[Callable[[str], None]] = None,
           nodes: Optional[Callable[[], Iterable[Dict[str, Any]]]] = None, cleaned: bool = False) -> None:
    """Print ``view(doc)`` (the terminal view), keep ``doc`` in ``run_dir``, write ``outs``.

    Every string of the document is cleaned first (:func:`clean_text`: no terminal escape, no control
    character, no secret it quotes), for the view and for every file alike: this is the one way a report
    leaves nccldiag, so ``nccldiag report`` on the stored document prints the same bytes. ``kept(why)`` is told, before the files are written,
    why the run directory could not be written ('' when it was, or when there is none). A report file that
    cannot be written is a usage error (exit 2), raised after the table and the run directory.

    With ``nodes`` (a check of many nodes: ``doc["nodes"]`` left empty), ``nodes()`` makes each node's part of
    the document in order as it is written, so the whole document is never held (``report.json`` and
    ``--json``); the view is then given the document with the nodes it needs made by its caller. ``cleaned``:
    ``doc`` comes from :func:`plain_cleaned`, its strings cleaned already.
    """
    if not cleaned:
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
