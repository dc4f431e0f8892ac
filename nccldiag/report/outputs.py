"""The report files a run writes (--json, --junit, --prom, --html): checked before, written after.

Every format is rendered from the one report document (the JSON object), so
``nccldiag report RUN_DIR`` writes the same bytes as the live run. Paths are
checked before any work (a usage error, exit 2); files are written through
:mod:`nccldiag.atomic` after the table is printed.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Union

import click

from nccldiag.model.errors import UsageError

# option, what it needs importable, the install hint
_NEEDS = {"--html": ("matplotlib", "pip install 'nccldiag[html]'")}


def check_output_file(path, option: str) -> None:
    """Refuse, before any work, an output file that cannot be written (a usage error, exit 2)."""
    if not path or path == "-":
        return
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory, expected a file name")
    if os.path.exists(path) and not os.path.isfile(path):
        return  # a FIFO or a device such as /dev/stdout is written in place
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot write in {parent}")


def options(kinds: Tuple[str, ...] = ("json", "junit", "prom", "html")):
    """The click options for the report files of a command."""
    helps = {
        "json": click.option("--json", "json_path", metavar="PATH|-", default=None,
                             help="Write the report as JSON ('-' for stdout, with no table)."),
        "junit": click.option("--junit", "junit_path", metavar="PATH", default=None,
                              help="Write JUnit XML: a test case per node × check (probe: per setting × collective)."),
        "prom": click.option("--prom", "prom_path", metavar="PATH", default=None,
                             help="Write Prometheus text exposition (node_exporter textfile collector)."),
        "html": click.option("--html", "html_path", metavar="PATH", default=None,
                             help="Write one self-contained HTML report (no network needed to view it)."),
    }

    def deco(f):
        for k in reversed(kinds):
            f = helps[k](f)
        return f

    return deco


@contextlib.contextmanager
def reader_may_leave():
    """Around printing the table: a reader that closed stdout (``| head``) ends the table, not the run.

    The run directory and the report files are still written and the exit code
    is still the run's. rich answers a closed stdout by pointing it at
    /dev/null and raising ``SystemExit(1)``; a plain write raises BrokenPipeError.
    """
    try:
        yield
    except BrokenPipeError:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except SystemExit as exc:
        if exc.code != 1:
            raise


@dataclass
class Outputs:
    json: Optional[str] = None
    junit: Optional[str] = None
    prom: Optional[str] = None
    html: Optional[str] = None

    @classmethod
    def pop(cls, kw: Dict) -> "Outputs":
        """The paths from a command's keyword arguments (removed from ``kw``)."""
        return cls(kw.pop("json_path", None), kw.pop("junit_path", None), kw.pop("prom_path", None),
                   kw.pop("html_path", None))

    def items(self) -> List[Tuple[str, str]]:
        return [(opt, path) for opt, path in (("--json", self.json), ("--junit", self.junit), ("--prom", self.prom),
                                              ("--html", self.html)) if path]

    @property
    def stdout_json(self) -> bool:
        return self.json == "-"

    def validate(self) -> None:
        """Refuse, before any work, a path that cannot be written or a format that cannot be made."""
        seen: Dict[str, str] = {}
        for opt, path in self.items():
            if path == "-" and opt != "--json":
                raise UsageError(f"{opt} -: only --json writes to stdout; give a file name")
            check_output_file(path, opt)
            if path != "-":
                if path in seen:
                    raise UsageError(f"{opt} {path}: the same file as {seen[path]}")
                seen[path] = opt
            need = _NEEDS.get(opt)
            if need and importlib.util.find_spec(need[0]) is None:
                raise UsageError(f"{opt} needs the {need[0]} library: {need[1]}")

    def write(self, doc: Dict, nodes: Optional[Callable[[], Iterable[Dict]]] = None) -> None:
        """Every requested file from the report document ``doc``. With ``nodes`` (``doc``'s ``nodes`` left
        empty), ``nodes()`` makes its nodes' parts in order: JSON is written as they are made, one at a
        time; the other formats get the whole document, made once."""
        from nccldiag.report import jsonout

        renderers: Dict[str, Callable[[Dict], str]] = {"--json": jsonout.dumps, "--junit": _junit,
                                                       "--prom": _prom, "--html": _html}
        whole: List[Dict] = []

        def full() -> Dict:
            if not whole:
                whole.append(doc if nodes is None else dict(doc, nodes=list(nodes())))
            return whole[0]

        for opt, path in self.items():
            try:
                if opt == "--json" and nodes is not None:
                    text = jsonout.streamed(doc, nodes())
                elif opt == "--json" and path != "-":
                    text = jsonout.pieces(doc)  # a JSON file is written piece by piece, never held whole
                else:
                    text = renderers[opt](full())
            except ValueError as exc:
                raise UsageError(f"{opt}: {exc}") from None
            try:
                if path == "-":
                    _echo(text)
                else:
                    jsonout.write_file(text, path)
            except ValueError as exc:
                raise UsageError(f"{opt}: {exc}") from None
            except OSError as exc:
                raise UsageError(f"{opt} {path}: cannot write: {exc.strerror or exc}") from None


def _echo(text: Union[str, Iterable[str]]) -> None:
    """``text`` (or its pieces, as they come) on stdout."""
    if isinstance(text, str):
        click.echo(text, nl=False)
        return
    out = click.get_text_stream("stdout")
    for piece in text:
        out.write(piece)
    out.flush()


def _junit(doc: Dict) -> str:
    from nccldiag.report import junit

    return junit.render(doc)


def _prom(doc: Dict) -> str:
    from nccldiag.report import prom

    return prom.render(doc)


def _html(doc: Dict) -> str:
    from nccldiag.report import html

    return html.render(doc)
