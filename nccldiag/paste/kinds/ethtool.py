"""``ethtool -S DEV`` (``NIC statistics:`` and a ``name: value`` line per counter): the ibcounters area's
``ib_counters`` source reads the RoCE NIC's error counters in it."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, one

NAME = "ethtool -S"
WORDS = ("NIC statistics:",)
SOURCES = ("ib_counters",)
GAPS = 0
UP = False

_HEAD = rx.compile(r"[ \t]{0,40}NIC statistics:[ \t]{0,40}$")
_COUNTER = rx.compile(r"[ \t]{1,40}[\w.\[\]-]{1,100}:[ \t]{0,4}-?\d")


def anchor(text: str) -> bool:
    return bool(_HEAD.match(text))


def member(text: str) -> bool:
    return bool(_COUNTER.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("ib_counters", lines)
