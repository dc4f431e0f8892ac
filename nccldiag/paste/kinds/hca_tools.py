"""The HCA firmware tools: ``mlxfwmanager``/``mlxup`` device blocks (``Device #1:``, ``PSID:``, ``FW  16.24.4020``),
``flint -d DEV q``, ``ethtool -i``: the firmware area's ``sw_versions`` source."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, indented, one

NAME = "HCA firmware tools"
WORDS = ("PSID:", "Device #", "FW Version:")
SOURCES = ("sw_versions",)
GAPS = 1

_FIRST = rx.compile(r"[ \t]{0,40}(?:Device #\d{1,4}:|PSID:[ \t]|FW Version:[ \t]|Image type:[ \t])")
_LINE = rx.compile(r"[ \t]{0,40}(?:-{3,80}|[A-Za-z][\w ()/.-]{0,60}:|FW[ \t]|PXE[ \t]|UEFI[ \t])")


def anchor(text: str) -> bool:
    return bool(_FIRST.match(text))


def member(text: str) -> bool:
    return bool(_LINE.match(text) or indented(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("sw_versions", lines)
