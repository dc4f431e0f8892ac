"""What nccldiag knows, as data: one TOML file of rows per table, beside this module.

Each table is an array of tables (``[[row]]``) in a file of this package,
with the source it was checked against named in the file's header. A row is
read as a plain ``dict`` with ``where`` added: the file and line that define
it (``xid.toml:41``), which findings and diagnoses cite. Rows a site adds
(its spec) are read with the same function from their own text.
The package data is read once per run, and each table, once parsed, is kept
(marshalled) in the user's cache directory (:func:`nccldiag.hscache.directory`,
``NCCLDIAG_CACHE_DIR=off`` for none), named by a digest of its text and the
Python reading it: a later run loads it instead of parsing the TOML again.
"""
from __future__ import annotations

import functools
import marshal
import os
import re
import sys
from importlib import resources
from typing import Any, Callable, Dict, List, Optional, Tuple

from nccldiag import rx
from nccldiag import rx
from nccldiag.model.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on Python 3.9/3.10 only
    try:
        import tomli as _toml
    except ImportError:
        _toml = None

_LINE_COL = rx.compile(r"\(at line (\d+), column (\d+)\)")

__all__ = ["Row", "header", "loads", "rows", "rows_of_text"]

Row = Dict[str, Any]

_HEADER = rx.compile(r"^\s*\[\[\s*([A-Za-z0-9_.-]+)\s*\]\]\s*(#.*)?$")


# The shape of any TOML nccldiag reads (its own tables, a site's spec and causes): none has a key of more than 4
# parts ("nic.MT4129.rate_gbps") or values nested more than 2 deep. tomllib spends time and memory that grow with
# the square of a dotted key's parts (100 KB of "a.a.a..." took 3 GB), and recurses once per level of nesting
# (500 levels end in a RecursionError), so a text past these bounds is refused before it is parsed.
MAX_KEY_PARTS = 8
MAX_NESTING = 8

# What the bounds are counted on: each string and comment, matched whole; a string left open runs to the end of
# its line (or of the text, for a multi-line one), which the parser refuses anyway. Every alternative starts at
# its own character and never gives back what it took, so one pass costs the text's length.
_TOML_SKIP = rx.compile(r'"""(?:[^"\\]|\\.|"(?!""))*(?:"{3,5}|\Z)'
                        r"|'''(?:[^']|'(?!''))*(?:'{3,5}|\Z)"
                        r'|"(?:[^"\\\n]|\\[^\n])*"?'
                        r"|'[^'\n]*'?"
                        r"|#[^\n]*", re.S)
_TOML_KEY = rx.compile(r"[^=,\[\]{}\n]+")  # a run of text between the marks that end a key
_BRACKET = rx.compile(r"[\[\]{}]")
_OPEN = {"[": 1, "{": 1, "]": -1, "}": -1}


def bound(text: str, where: str) -> None:
    """Raise :class:`UsageError` naming ``where:line`` if a key of ``text`` has more than
    :data:`MAX_KEY_PARTS` parts or its arrays and inline tables nest more than :data:`MAX_NESTING` deep."""
    # each string becomes one character ("s", its newlines kept), each comment nothing: the structure is left
    bare = _TOML_SKIP.sub(lambda m: "" if m.group().startswith("#") else "s" + "\n" * m.group().count("\n"), text)
    for m in _TOML_KEY.finditer(bare):
        if m.group().count(".") >= MAX_KEY_PARTS:
            raise UsageError(f"{where}:{bare.count(chr(10), 0, m.start()) + 1}: a key of {m.group().count('.') + 1} "
                             f"parts: refused (no key nccldiag reads has more than {MAX_KEY_PARTS})")
    depth = 0
    for m in _BRACKET.finditer(bare):
        depth += _OPEN[m.group()]
        if depth > MAX_NESTING + 2:  # a table header's [[ ]] on top of the values' own
            raise UsageError(f"{where}:{bare.count(chr(10), 0, m.start()) + 1}: arrays or inline tables nested "
                             f"more than {MAX_NESTING} deep: refused")


def loads(text: str, where: str) -> Dict[str, Any]:
    """A TOML text's data. A syntax error, a key of too many parts or values nested too deep (:func:`bound`),
    and a float that is no number (``nan``, ``inf``: every comparison with it is false, so a limit of ``nan``
    would let everything pass) are a :class:`UsageError` naming ``where:line``."""
    if _toml is None:
        raise UsageError(f"{where}: reading TOML on Python {sys.version_info[0]}.{sys.version_info[1]} needs the "
                         "tomli package (pip install tomli); Python 3.11 and later have it built in")
    bound(text, where)
    try:
        return _toml.loads(text, parse_float=_finite)
    except _toml.TOMLDecodeError as exc:
        msg = str(exc)
        m = _LINE_COL.search(msg)
        raise UsageError(f"{where}:{m.group(1) if m else '?'}: not valid TOML: "
                         f"{_LINE_COL.sub('', msg).strip().rstrip('.')}") from None
    except _NotFinite as exc:
        word = exc.args[0]
        m = re.search(r"(?<![\w.\"'+-])" + re.escape(word) + r"\b", text)
        line = text.count("\n", 0, m.start()) + 1 if m else "?"
        raise UsageError(f"{where}:{line}: {word} is no number: refused (a limit or a figure must be a number; "
                         "every comparison with nan or inf is false, so it would let everything pass)") from None


class _NotFinite(ValueError):
    """A TOML float that is ``nan`` or ``inf``."""


def _finite(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _NotFinite(text)
    return value


def _header_lines(text: str, key: str) -> List[int]:
    """The line (1-based) of each ``[[key]]`` header, in file order, outside multi-line strings."""
    out: List[int] = []
    in_string = None
    for n, line in enumerate(text.splitlines(), 1):
        if in_string:
            if in_string in line:
                in_string = None
            continue
        m = _HEADER.match(line)
        if m and m.group(1) == key:
            out.append(n)
            continue
        for delim in ('"""', "'''"):
            if line.count(delim) % 2 == 1:
                in_string = delim
    return out


def rows_of_text(text: str, key: str, where: str) -> Tuple[List[Row], Dict[str, Any]]:
    """``(rows, top)``: each ``[[key]]`` row of a TOML text with ``where`` set to ``"<where>:<line>"``, and
    the file's other top-level keys. A syntax error is a ``UsageError`` naming ``where:line``."""
    data = loads(text, where)
    found = data.get(key, [])
    lines = _header_lines(text, key)
    out: List[Row] = []
    for i, row in enumerate(found if isinstance(found, list) else []):
        r = dict(row) if isinstance(row, dict) else {"value": row}
        r["where"] = f"{where}:{lines[i]}" if i < len(lines) else where
        out.append(r)
    return out, {k: v for k, v in data.items() if k != key}


KEPT = b"nccldiag-knowledge-1"  # changes when what a kept table holds, or how a text is read, changes


@functools.lru_cache(maxsize=None)
def _table(name: str, key: str) -> Tuple[Tuple[Row, ...], Tuple[Tuple[str, Any], ...]]:
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    path = _kept_path(name, key, text.encode("utf-8"))
    if path is not None:
        kept = _kept(path)
        if kept is not None:
            return kept
    found, top = rows_of_text(text, key, name)
    table = tuple(found), tuple(sorted(top.items()))
    if path is not None:
        from nccldiag import hscache

        try:
            hscache.keep(path, marshal.dumps(table))
        except ValueError:  # a value marshal cannot write (a TOML date): read from the text each run
            pass
    return table


def _kept_path(name: str, key: str, raw: bytes) -> Optional[str]:
    """Where the table ``key`` of package file ``name`` (its text, encoded: ``raw``) is kept once read: a file of the
    user's cache directory (:func:`nccldiag.hscache.directory`) named by a digest of the text, the table's name
    and key and the Python that reads it; None where nothing is kept (``NCCLDIAG_CACHE_DIR=off``). Parsing the
    package's TOML takes about 0.1 s of CPU each run; loading the tables kept, about 2 ms."""
    from nccldiag import hscache

    where = hscache.directory("knowledge")
    if where is None:
        return None
    import hashlib

    h = hashlib.sha256(KEPT)
    for part in (sys.version.encode(), name.encode(), key.encode(), raw):
        h.update(b"%d:" % len(part) + part)
    return os.path.join(where, h.hexdigest() + ".marshal")


def _kept(path: str) -> Optional[Tuple[Tuple[Row, ...], Tuple[Tuple[str, Any], ...]]]:
    """The table kept at ``path``, or None (missing, not this user's, open to others, or not of this shape)."""
    from nccldiag import hscache

    data = hscache.read_kept(path)
    if data is None:
        return None
    try:
        table = marshal.loads(data)
    except (EOFError, ValueError, TypeError):  # truncated or damaged
        return None
    if (type(table) is tuple and len(table) == 2 and type(table[0]) is tuple and type(table[1]) is tuple
            and all(type(r) is dict and type(r.get("where")) is str for r in table[0])):
        return table
    return None


def rows(name: str, key: str = "row") -> List[Row]:
    """The rows of package table ``name`` (e.g. ``"xid.toml"``), each a fresh ``dict`` (callers may keep it)."""
    return [dict(r) for r in _table(name, key)[0]]


def header(name: str, key: str = "row") -> Dict[str, Any]:
    """The top-level keys of package table ``name`` besides its rows (its ``source``, ``checked``...)."""
    return dict(_table(name, key)[1])


def kept(kind: str, key: bytes, make: Callable[[], Any], type_: type) -> Any:
    """``make()``, a value ``marshal`` writes (of type ``type_``), kept in the user's cache directory (its folder
    ``kind``) under a digest of ``kind``, ``key`` and the Python that made it, and read from there by later runs
    (nothing kept where ``NCCLDIAG_CACHE_DIR=off``); a file missing, damaged, of another type, not this user's or open
    to others is made again. Kept once per process too."""
    got = _made.get((kind, key))
    if got is not None:
        return got
    from nccldiag import hscache

    path = None
    where = hscache.directory(kind)
    if where is not None:
        import hashlib

        h = hashlib.sha256(KEPT)
        for part in (sys.version.encode(), kind.encode(), key):
            h.update(b"%d:" % len(part) + part)
        path = os.path.join(where, h.hexdigest() + ".marshal")
        data = hscache.read_kept(path)
        if data is not None:
            try:
                got = marshal.loads(data)
            except (EOFError, ValueError, TypeError):  # truncated or damaged
                got = None
            if type(got) is not type_:
                got = None
    if got is None:
        got = make()
        if path is not None:
            hscache.keep(path, marshal.dumps(got))
    _made[(kind, key)] = got
    return got


_made: Dict[Tuple[str, bytes], Any] = {}


class Expr:
    """A table row's regular expression, compiled when a line first reaches it.

    A run reads a few of the tables' rows: the others' words are in none of its lines (each table hands a row only
    the lines holding one of its words), so compiling every row when a table loads costs each run the whole table
    (a tenth of a short log's CPU). It answers as the :class:`re.Pattern` of ``re.compile(pattern, flags)``
    does: ``pattern`` and ``flags`` at once, anything else (``search``, ``match``, ``finditer``, ``sub``,
    ``groupindex``...) from the compiled expression, which is then kept on the object, so that later calls are
    the compiled expression's own."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        # re.compile's own flags: a str expression is Unicode unless told ASCII
        self.flags = flags | (re.UNICODE if isinstance(pattern, str) and not flags & re.ASCII else 0)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = rx.compile(self.pattern, self.flags)
        for attr in _PATTERN_ATTRS:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __getstate__(self) -> Tuple[str, int]:
        return self.pattern, self.flags

    def __setstate__(self, state: Tuple[str, int]) -> None:
        self.pattern, self.flags = state

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Expr, re.Pattern)):
            return (self.pattern, self.flags) == (other.pattern, other.flags)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.pattern, self.flags))

    def __repr__(self) -> str:
        return f"knowledge.Expr({self.pattern!r})"


_PATTERN_ATTRS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner",
                  "groups", "groupindex")
