"""``ibstat``: a ``CA 'mlx5_0'`` block per HCA, its ports indented under it (infiniband-diags); pasted flush left,
its fields are read by their names."""
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
# the fields ibstat prints under a CA and its ports, read indented or not (a paste trimmed flush left)
_FIELD = re.compile(r"[ \t]{0,40}(?:CA type|Number of ports|Firmware version|Hardware version|Node GUID|"
                    r"System image GUID|State|Physical state|Rate|Base lid|LMC|SM lid|Capability mask|Port GUID|"
                    r"Link layer):(?:[ \t]|$)")


def anchor(text: str) -> bool:
    return bool(_CA.match(text))


def member(text: str) -> bool:
    return bool(_CA.match(text) or _PORT.match(text) or (indented(text) and KEY_VALUE.match(text)) or
                _FIELD.match(text) or elided(text))


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
