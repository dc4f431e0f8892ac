"""``/proc/PID/limits`` (``Max locked memory  65536  65536  bytes``), read by the limits area."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "/proc/PID/limits"
WORDS = ("Max locked memory",)
SOURCES = ("proc_limits",)
GAPS = 0
MIN = 2

_HEADER = rx.compile(r"[ \t]{0,40}Limit[ \t]{1,40}Soft Limit[ \t]{1,40}Hard Limit")
_ROW = rx.compile(r"[ \t]{0,40}Max [a-z ]{2,40}[ \t]{1,40}\S{1,30}[ \t]{1,40}\S{1,30}")


def anchor(text: str) -> bool:
    return bool(_ROW.match(text)) and "Max locked memory" in text


def member(text: str) -> bool:
    return bool(_HEADER.match(text) or _ROW.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("proc_limits", lines)
