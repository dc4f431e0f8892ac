"""``ibstatus``: an ``Infiniband device 'mlx5_0' port 1 status:`` block per port (infiniband-diags), read by the
same parser as ``ibstat``."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import KEY_VALUE, Context, elided, indented, one

NAME = "ibstatus"
WORDS = ("Infiniband device '",)
SOURCES = ("ibstat",)
GAPS = 1
MIN = 3

_DEVICE = rx.compile(r"[ \t]{0,40}Infiniband device '[^']{1,200}' port \d{1,4} status:[ \t]{0,40}$")


def anchor(text: str) -> bool:
    return bool(_DEVICE.match(text))


# the fields ibstatus prints under a port, read indented or not (a paste trimmed flush left)
_FIELD = rx.compile(r"[ \t]{0,40}(?:default gid|base lid|sm lid|state|phys state|rate|link_layer):(?:[ \t]|$)")


def member(text: str) -> bool:
    return bool(_DEVICE.match(text) or (indented(text) and KEY_VALUE.match(text)) or _FIELD.match(text) or
                elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("ibstat", lines)
