"""``ulimit -a`` (bash's table: ``max locked memory (kbytes, -l) 64``), read by the limits area."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "ulimit -a"
WORDS = ("-l)",)
SOURCES = ("ulimit",)
GAPS = 0
MIN = 3

_LIMIT = rx.compile(r"[ \t]{0,40}[A-Za-z][A-Za-z -]{0,40}?[ \t]{1,20}\((?:[^()]{0,40}?,[ \t]{0,4})?-[a-zA-Z]\)[ \t]{1,40}"
                    r"\S{1,40}[ \t]{0,40}$")


def anchor(text: str) -> bool:
    return bool(_LIMIT.match(text)) and "-l)" in text


member = _LIMIT.match


def enough(texts: List[str]) -> bool:
    """Three rows of the table, or its locked-memory row alone (the row an admin quotes; no other tool prints it)."""
    rows = [t for t in texts if t.strip()]
    return len(rows) >= MIN or any("max locked memory" in t for t in rows)


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("ulimit", lines)
