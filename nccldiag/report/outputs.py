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
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Tuple, Union

import click

from nccldiag.model import registry
from nccldiag.model.errors import UsageError

@dataclass(frozen=True)
class Format:
    """A report file format: its option (``--<name>``), and the module whose ``render(doc) -> str`` makes it from
    the report document: one of ``nccldiag.report`` by its short name, or any module by its dotted path."""

    name: str
    module: str
    help: str
    metavar: str = "PATH"
    needs: Optional[Tuple[str, str]] = None  # a library it needs importable, and the install hint


# The formats every command that makes a report offers, in this order. A new format is its module and a line here.
FORMATS: Tuple[Format, ...] = (
    Format("json", "jsonout", "Write the report as JSON ('-' for stdout, with no table).", metavar="PATH|-"),
    Format("junit", "junit", "Write JUnit XML: a test case per node × check (probe: per setting × collective)."),
    Format("prom", "prom", "Write Prometheus text exposition (node_exporter textfile collector)."),
    Format("html", "html", "Write one self-contained HTML report (no network needed to view it).",
           needs=("matplotlib", "pip install 'nccldiag[html]'")),
)


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


def options():
    """The click options for the report files of a command (one per format of :data:`FORMATS`)."""

    def deco(f):
        for fmt in reversed(FORMATS):
            f = click.option(f"--{fmt.name}", f"{fmt.name}_path", metavar=fmt.metavar, default=None, help=fmt.help)(f)
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
    """The report files a command was asked for: format name -> path ('-' for stdout, JSON only)."""

    paths: Dict[str, str] = field(default_factory=dict)

    @classmethod
    def pop(cls, kw: Dict) -> "Outputs":
        """The paths from a command's keyword arguments (removed from ``kw``)."""
        paths = {fmt.name: kw.pop(f"{fmt.name}_path", None) for fmt in FORMATS}
        return cls({k: v for k, v in paths.items() if v})

    def items(self) -> List[Tuple[Format, str]]:
        return [(fmt, self.paths[fmt.name]) for fmt in FORMATS if self.paths.get(fmt.name)]

    @property
    def stdout_json(self) -> bool:
        return self.paths.get("json") == "-"

    def validate(self) -> None:
        """Refuse, before any work, a path that cannot be written or a format that cannot be made."""
        seen: Dict[str, str] = {}
        for fmt, path in self.items():
            opt = f"--{fmt.name}"
            if path == "-" and fmt.name != "json":
                raise UsageError(f"{opt} -: only --json writes to stdout; give a file name")
            check_output_file(path, opt)
            if path != "-":
                if path in seen:
                    raise UsageError(f"{opt} {path}: the same file as {seen[path]}")
                seen[path] = opt
            if fmt.needs and importlib.util.find_spec(fmt.needs[0]) is None:
                raise UsageError(f"{opt} needs the {fmt.needs[0]} library: {fmt.needs[1]}")

    def write(self, doc: Dict, nodes: Optional[Callable[[], Iterable[Dict]]] = None,
              json_text: Optional[str] = None) -> None:
        """Every requested file from the report document ``doc``. With ``nodes`` (``doc``'s ``nodes`` left
        empty), ``nodes()`` makes its nodes' parts in order: JSON is written as they are made, one at a
        time; the other formats get the whole document, made once. ``json_text``: a file that already holds
        the document's JSON text (the run directory's ``report.json``), copied instead of made again."""
        from nccldiag.atomic import pieces, streamed
        from nccldiag.report import jsonout

        whole: List[Dict] = []

        def full() -> Dict:
            if not whole:
                whole.append(doc if nodes is None else dict(doc, nodes=list(nodes())))
            return whole[0]

        for fmt, path in self.items():
            opt = f"--{fmt.name}"
            try:
                if fmt.name == "json" and json_text is not None:
                    text = _chunks(json_text)
                elif fmt.name == "json" and nodes is not None:
                    text = streamed(doc, nodes())
                elif fmt.name == "json" and path != "-":
                    text = pieces(doc)  # a JSON file is written piece by piece, never held whole
                else:
                    text = registry.load(fmt.module, "nccldiag.report").render(full())
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


def _chunks(path: str, size: int = 1 << 20) -> Iterable[str]:
    """The text of the file at ``path``, a piece at a time."""
    with open(path, encoding="utf-8") as f:
        while True:
            piece = f.read(size)
            if not piece:
                return
            yield piece


def _echo(text: Union[str, Iterable[str]]) -> None:
    """``text`` (or its pieces, as they come) on stdout."""
    if isinstance(text, str):
        click.echo(text, nl=False)
        return
    out = click.get_text_stream("stdout")
    for piece in text:
        out.write(piece)
    out.flush()
