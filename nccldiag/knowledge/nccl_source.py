"""The WARN messages of an NCCL source tree, and the NCCL message table (``nccl.toml``) held to them (pure).

:func:`warns` reads the format string of every ``WARN(...)`` call of a C/C++ file: its string literals joined
(``"a" "b"`` is ``"ab"``), the ``<inttypes.h>`` macros between them written as the conversion they stand for
(``"%" PRIu64`` is ``%lu``), a macro's parameter spliced between them as ``%s``, a call whose first argument is no literal kept as :data:`NOT_LITERAL`. :func:`check`
compares the table with the messages of a tree both ways: each row's ``text`` is one of the tree's format strings;
each of the tree's format strings has a row or is covered by an ``[[ignored]]`` entry (its ``file`` glob and its
``text`` expression). ``scripts/nccl-messages`` runs it on a tree at hand (a checkout, or a git directory and a
commit).
"""
from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Pattern, Sequence, Tuple

from nccldiag import knowledge, rx

TABLE = "nccl.toml"
NONE = "none"  # the category of a message that names no cause by itself
MAX_LINE = 4096  # the characters of a message a pattern is run on
NOT_LITERAL = "<not a literal>"
EXTENSIONS = (".cc", ".cu", ".h", ".cpp", ".c", ".hpp", ".cuh")

_CALL = rx.compile(r"(?<![\w.])WARN\(")
_PRI = rx.compile(r"PRI([diouxX])(8|16|32|64|PTR|MAX|LEAST\d+|FAST\d+)")
_NAME = rx.compile(r"[A-Za-z_]\w*")
_NAME_MARK = "\0name"
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": "\r", "0": "\0", "?": "?"}


@dataclass(frozen=True)
class Warn:
    """One ``WARN(...)`` call: its file (relative to the tree), line, and format string."""

    file: str
    line: int
    text: str


def _literal(src: str, i: int) -> Tuple[str, int]:
    """The text of the string literal starting at ``src[i] == '"'`` and the index after it."""
    out = []
    i += 1
    while i < len(src) and src[i] != '"':
        ch = src[i]
        if ch == "\\" and i + 1 < len(src):
            out.append(_ESCAPES.get(src[i + 1], src[i + 1]))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out), i + 1


def _format(src: str, i: int) -> str:
    """The format string of a call whose arguments start at ``src[i]``: literals and PRI macros up to the first
    comma or closing parenthesis; :data:`NOT_LITERAL` when the first argument is something else."""
    parts: List[str] = []
    n = len(src)
    while i < n:
        ch = src[i]
        if ch.isspace():
            i += 1
        elif src.startswith("//", i):
            i = src.find("\n", i) if src.find("\n", i) >= 0 else n
        elif src.startswith("/*", i):
            end = src.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch == '"':
            text, i = _literal(src, i)
            parts.append(text)
        elif ch in ",)":
            break
        else:
            m = _PRI.match(src, i)
            if m is not None:
                parts.append(("l" if m.group(2) in ("64", "PTR", "MAX") else "") + m.group(1))  # "%" PRIu64: %lu
                i = m.end()
                continue
            m = _NAME.match(src, i)
            if m is None:
                return NOT_LITERAL
            parts.append(_NAME_MARK)  # a macro's parameter spliced between literals ("Call to " name " failed")
            i = m.end()
    if not parts or all(p == _NAME_MARK for p in parts):
        return NOT_LITERAL
    return "".join("%s" if p == _NAME_MARK else p for p in parts)


def warns(path: str, src: str) -> List[Warn]:
    """Every ``WARN(...)`` call of one file's text ``src`` (the macro's own ``#define`` is no call)."""
    out = []
    for m in _CALL.finditer(src):
        start = src.rfind("\n", 0, m.start()) + 1
        if src[start:m.start()].lstrip().startswith("#define"):
            continue
        out.append(Warn(path, src.count("\n", 0, m.start()) + 1, _format(src, m.end())))
    return out


_RESULT = rx.compile(r'case\s+(nccl\w+)\s*:\s*return\s+"((?:[^"\\\n]|\\.)*)"\s*;')
_ERROR_STRING = rx.compile(r"const char\*\s*ncclGetErrorString\s*\(")


def results(src: str) -> Dict[str, str]:
    """What ``ncclGetErrorString`` returns for each result (``{"ncclSystemError": "unhandled system error ..."}``),
    read from the C of the file that defines it (``src/init.cc``); ``{}`` where the file has no such function."""
    m = _ERROR_STRING.search(src)
    if m is None:
        return {}
    end = src.find("\n}", m.end())
    return {name: _literal(f'"{text}"', 0)[0] for name, text in _RESULT.findall(src, m.end(), end if end > 0 else len(src))}


def covered(ignored: Sequence[Dict], w: Warn) -> Dict:
    """The first ``[[ignored]]`` entry covering ``w`` (its ``file`` glob matches and its ``text`` expression, where
    given, is found in the format string), or ``{}``."""
    for entry in ignored:
        if not fnmatch.fnmatch(w.file, entry.get("file", "*")):
            continue
        if entry.get("text") and re.search(entry["text"], w.text) is None:
            continue
        return entry
    return {}


@dataclass
class Report:
    """What :func:`check` found."""

    warns: List[Warn]
    rows_missing: List[Dict]  # rows whose text is no format string of the tree
    uncovered: List[Warn]  # format strings with neither a row nor an ignored entry
    by_row: Dict[str, List[Warn]]  # row id -> the calls printing its text
    by_ignored: Dict[int, List[Warn]]  # index of the ignored entry -> the calls it covers
    unused_ignored: List[Dict]  # ignored entries that cover nothing

    @property
    def ok(self) -> bool:
        return not self.rows_missing and not self.uncovered and not self.unused_ignored


def check(rows: Sequence[Dict], ignored: Sequence[Dict], found: Iterable[Warn]) -> Report:
    """The table (``rows``, ``ignored``) against the format strings ``found`` in a tree, both ways."""
    found = list(found)
    texts: Dict[str, List[Warn]] = {}
    for w in found:
        texts.setdefault(w.text, []).append(w)
    by_row = {r["id"]: [w for t in _texts(r) for w in texts.get(t, [])] for r in rows}
    missing = [r for r in rows if not all(t in texts for t in _texts(r))]
    rowed = {t for r in rows for t in _texts(r)}
    by_ignored: Dict[int, List[Warn]] = {}
    uncovered = []
    for w in found:
        if w.text in rowed:
            continue
        entry = covered(ignored, w)
        if not entry:
            uncovered.append(w)
            continue
        by_ignored.setdefault(ignored.index(entry), []).append(w)
    unused = [e for i, e in enumerate(ignored) if i not in by_ignored]
    return Report(found, missing, uncovered, by_row, by_ignored, unused)


def _texts(row: Dict) -> List[str]:
    """The format strings of a row: its ``text``, and ``also`` (the same message printed by other calls)."""
    return [row["text"]] + list(row.get("also", []))


# ---- the table's rows, matched against a WARN's message ---------------------------------------------------------

# a printf conversion: flags, width, precision, length, type
CONVERSION = rx.compile(r"%[-+ #0]{0,4}[0-9*]{0,3}(?:\.[0-9*]{1,3})?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspm%]")
_FILL = {"s": "mlx5_0", "d": "12", "i": "12", "u": "3", "x": "1f", "X": "1F", "o": "7", "p": "0x7f3a2c000000",
         "m": "No such device", "c": "c", "e": "1e3", "f": "1.5", "g": "1.5", "E": "1E3", "G": "1.5", "%": "%"}


def fill(text: str) -> str:
    """``text`` (a format string) with each conversion replaced by a value of its type, as NCCL would print it."""
    return CONVERSION.sub(lambda m: _FILL[m.group()[-1]], text)


def shape(text: str) -> Pattern[str]:
    """An expression matching ``text`` (a format string) printed with any values: its literal parts as written,
    each conversion anything."""
    parts = CONVERSION.split(text)
    return re.compile(".*?".join(re.escape(p) for p in parts), re.S)


@dataclass(frozen=True)
class Message:
    """One row of the table, compiled."""

    id: str
    pattern: Pattern[str]
    category: str
    severity: str
    meaning: str
    fix: str
    file: str
    nccl: str
    where: str  # nccl.toml:<line>


@functools.lru_cache(maxsize=None)
def messages() -> Tuple[Message, ...]:
    """The rows of ``nccl.toml``, in order."""
    release = knowledge.header(TABLE)["nccl"]
    return tuple(Message(r["id"], rx.compile(r["pattern"]), r["category"], r["severity"], r["meaning"],
                         r.get("fix", ""), r["file"], r.get("nccl", release), r["where"])
                 for r in knowledge.rows(TABLE))


def message_of(text: str) -> Optional[Message]:
    """The row of a WARN's message ``text`` (what follows 'NCCL WARN '): the first whose pattern it matches."""
    text = text[:MAX_LINE]
    return next((m for m in messages() if m.pattern.search(text)), None)


def message(row_id: str) -> Message:
    """The row ``row_id`` of the table."""
    return next(m for m in messages() if m.id == row_id)
