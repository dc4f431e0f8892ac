"""``ibstat``: a ``CA 'mlx5_0'`` block per HCA, its ports indented under it (infiniband-diags); pasted flush left,
its fields are read by their names. A poster who kept only a port's lines (``Port 1:`` and its ``State:`` and
``Physical state:``, the CA's lines cut or elided with ``...``) pasted a block of it too: one that names a port's
state is read, under a CA the paste does not name."""
from __future__ import annotations

from typing import Dict, List, Set

from nccldiag import rx
from nccldiag.paste.kinds.base import KEY_VALUE, Context, elided, indented, one

NAME = "ibstat"
WORDS = ("CA '", "Port ")
SOURCES = ("ibstat",)
GAPS = 1
MIN = 3

_CA = rx.compile(r"[ \t]{0,40}CA '([^']{1,200})'[ \t]{0,40}$")
_PORT = rx.compile(r"[ \t]{0,40}Port \d{1,4}:[ \t]{0,40}$")
# the fields ibstat prints under a CA and its ports, read indented or not (a paste trimmed flush left)
_FIELD = rx.compile(r"[ \t]{0,40}(?:CA type|Number of ports|Firmware version|Hardware version|Node GUID|"
                    r"System image GUID|State|Physical state|Rate|Base lid|LMC|SM lid|Capability mask|Port GUID|"
                    r"Link layer):(?:[ \t]|$)")


_STATE = rx.compile(r"[ \t]{0,40}(?:State|Physical state):[ \t]{0,40}\S")


def anchor(text: str) -> bool:
    return bool(_CA.match(text) or _PORT.match(text))


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
    if not any(_CA.match(line) for line in lines) and not any(_STATE.match(line) for line in lines):
        return {}  # a 'Port N:' line with no CA above and no port state under it is no ibstat block
    return one("ibstat", lines)
