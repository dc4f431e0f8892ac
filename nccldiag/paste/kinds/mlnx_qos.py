"""``mlnx_qos -i DEV``: trust state, PFC per priority, ``dscp2prio`` (the roce area's ``roce_qos`` source)."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, indented, one

NAME = "mlnx_qos"
WORDS = ("Priority trust state", "PFC configuration", "dscp2prio")
SOURCES = ("roce_qos",)
GAPS = 1

_FIRST = rx.compile(r"[ \t]{0,40}(?:Priority trust state|PFC configuration|dscp2prio mapping|DCBX mode|"
                    r"={3,40} show configuration for device)")
_LINE = rx.compile(r"[ \t]{0,40}(?:[A-Za-z][\w ()/-]{0,60}:|={3,40}|tc: |priority |enabled |buffer |prio:|ECN )")


def anchor(text: str) -> bool:
    return bool(_FIRST.match(text))


def member(text: str) -> bool:
    return bool(_LINE.match(text) or indented(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("roce_qos", lines)
