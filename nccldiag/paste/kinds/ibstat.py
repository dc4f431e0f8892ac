"""``ibstat``: a ``CA 'mlx5_0'`` block per HCA, its ports indented under it (infiniband-diags)."""
from __future__ import annotations

import re
from typing import Dict, List, Set

from nccldiag.paste.kinds.base import KEY_VALUE, Context, elided, indented, one

NAME = "ibstat"
WORDS = ("CA '",)
SOURCES = ("ibstat",)
GAPS = 1
MIN = 3

_CA = re.compile(r"[ \t]{0,40}CA '([^']{1,200})'[ \t]{0,40}$")
_PORT = re.compile(r"[ \t]{0,40}Port \d{1,4}:[ \t]{0,40}$")


def anchor(text: str) -> bool:
    return bool(_CA.match(text))


def member(text: str) -> bool:
    return bool(_CA.match(text) or _PORT.match(text) or (indented(text) and KEY_VALUE.match(text)) or elided(text))


def restarts(lines: List[str]) -> List[int]:
    """Where ``ibstat`` was run again with no prompt between (a CA named a second time): each run is a reading."""
    seen: Set[str] = set()
    out: List[int] = []
    for i, line in enumerate(lines):
        m = _CA.match(line)
        if m is None:
            continue
        if m.group(1) in seen:
            out.append(i)
            seen = set()
        seen.add(m.group(1))
    return out


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("ibstat", lines)
