"""``lsmod`` (or ``/proc/modules``): the loaded kernel modules, under ``Module  Size  Used by``, read by the gdr
area (is the GPUDirect RDMA peer-memory module loaded?)."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "lsmod"
WORDS = ("Used by",)
SOURCES = ("proc_modules",)
GAPS = 0
UP = False

_HEADER = rx.compile(r"[ \t]{0,40}Module[ \t]{1,40}Size[ \t]{1,40}Used by")
_ROW = rx.compile(r"[ \t]{0,40}\w{1,64}[ \t]{1,40}\d{1,12}[ \t]{1,40}\d{1,6}(?:[ \t]|$)")


def anchor(text: str) -> bool:
    return bool(_HEADER.match(text))


def member(text: str) -> bool:
    return bool(_ROW.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("proc_modules", lines)
