"""TOML for specs: reading with the line of every key, and writing values.

Reading is ``tomllib`` (Python 3.11+) or ``tomli`` (the same parser, for
3.9 and 3.10). Neither says where a key was, so :func:`key_lines` finds the
line of every table header and key itself: findings and errors name
``site.toml:14``.
"""
from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Tuple

from nccldiag import knowledge, rx
from nccldiag.model.findings import clean_text

Path_ = Tuple[str, ...]

_BARE = rx.compile(r"[A-Za-z0-9_-]+")


def loads(text: str, where: str) -> Tuple[Dict[str, Any], Dict[Path_, int]]:
    """``(data, lines)`` of a TOML text, read as every TOML text is (:func:`nccldiag.knowledge.loads`: its
    shape bounded, a syntax error or a float that is no number a :class:`UsageError` naming ``where:line``)."""
    return knowledge.loads(text, where), key_lines(text)


def _split_key(text: str) -> Tuple[Path_, str]:
    """The dotted key at the start of ``text`` (bare and quoted parts) and the rest of the text."""
    parts: List[str] = []
    s = text.lstrip()
    while True:
        s = s.lstrip()
        if s.startswith('"'):
            m = re.match(r'"((?:[^"\\]|\\.)*)"', s)
            if not m:
                return tuple(parts), s
            try:
                parts.append(json.loads('"' + m.group(1) + '"'))
            except ValueError:
                parts.append(m.group(1))
            s = s[m.end():]
        elif s.startswith("'"):
            end = s.find("'", 1)
            if end < 0:
                return tuple(parts), s
            parts.append(s[1:end])
            s = s[end + 1:]
        else:
            m = _BARE.match(s)
            if not m:
                return tuple(parts), s
            parts.append(m.group())
            s = s[m.end():]
        s = s.lstrip()
        if s.startswith("."):
            s = s[1:]
            continue
        return tuple(parts), s


def key_lines(text: str) -> Dict[Path_, int]:
    """``{key path: line}`` for every table header and ``key = value`` line (1-based).

    Lines inside multi-line strings and arrays are not read as keys. Enough
    for locating keys in a file ``tomllib`` has already accepted.
    """
    lines: Dict[Path_, int] = {}
    table: Path_ = ()
    in_string = None  # the delimiter of an open multi-line string
    depth = 0  # open brackets of a multi-line array
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if in_string:
            if in_string in s:
                in_string = None
            continue
        if depth:
            depth += s.count("[") - s.count("]")
            depth = max(depth, 0)
            continue
        if not s or s.startswith("#"):
            continue
        if s.startswith("["):
            inner = s[2:] if s.startswith("[[") else s[1:]
            path, rest = _split_key(inner)
            if path and rest.lstrip().startswith("]"):
                table = path
                lines.setdefault(table, n)
            continue
        path, rest = _split_key(s)
        if not path or not rest.startswith("="):
            continue
        full = table + path
        lines.setdefault(full, n)
        value = rest[1:].strip()
        for delim in ('"""', "'''"):
            if value.startswith(delim) and value.count(delim) == 1:
                in_string = delim
        if value.startswith("[") and not in_string:
            depth = max(value.count("[") - value.count("]"), 0)
    return lines


def line_of(lines: Dict[Path_, int], path: Path_) -> int:
    """The line of ``path``, else of the nearest table above it that has one, else 1."""
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return 1


# ---- writing -------------------------------------------------------------------------------------------------


# what TOML forbids raw in a basic string beyond JSON's escapes (DEL), and what a terminal would obey or show as
# nothing (C1 controls, bidi and zero-width characters): written as \uXXXX, read back as the same character
_UNSEEN = rx.compile("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]")


def _basic_string(text: str) -> str:
    return _UNSEEN.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def key(text: str) -> str:
    """A TOML key: bare where it can be, else a basic string."""
    return text if _BARE.fullmatch(text) else _basic_string(text)


def comment(text: str) -> str:
    """``text`` as it may stand in a TOML comment, shown in a terminal: one line, no control character, no
    escape sequence, invisible characters shown as their code."""
    return " ".join(clean_text(str(text)).split())


def value(v: Any) -> str:
    """A TOML value from str, bool, int or float (the only types a spec holds)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"no TOML value for {v}")
        return str(int(v)) + ".0" if v.is_integer() else repr(v)
    if isinstance(v, str):
        # JSON's escapes (\" \\ \n \t \uXXXX) are TOML basic-string escapes too
        return _basic_string(v)
    raise TypeError(f"no TOML value for {type(v).__name__}")
