"""``df`` (``-h``, ``-k``, ``-P``): the row of ``/dev/shm``, read by the limits area as the collection's
``df -Pk /dev/shm`` line (sizes in KiB)."""
from __future__ import annotations

import re
from typing import Dict, List, Optional

from nccldiag.paste.kinds.base import Context

NAME = "df"
WORDS = ("Mounted on",)
SOURCES = ("shm",)
CONTEXT = True  # a block of it that feeds no source is read and shown all the same
GAPS = 0
UP = False

_HEADER = re.compile(r"[ \t]{0,40}Filesystem[ \t]{1,40}(?P<unit>Size|1K-blocks|1024-blocks)[ \t]{1,40}Used[ \t]{1,40}"
                     r"Avail")
_ROW = re.compile(r"[ \t]{0,40}(?P<fs>\S{1,200})[ \t]{1,40}(?P<size>[\d.]{1,20}[KMGTP]?i?)[ \t]{1,40}"
                  r"(?P<used>[\d.]{1,20}[KMGTP]?i?)[ \t]{1,40}(?P<avail>[\d.]{1,20}[KMGTP]?i?)[ \t]{1,40}"
                  r"(?P<pct>\d{1,3}%|-)[ \t]{1,40}(?P<mnt>/\S{0,200})[ \t]{0,40}$")
_UNITS = {"": 1, "K": 1, "M": 1024, "G": 1024 ** 2, "T": 1024 ** 3, "P": 1024 ** 4}


def anchor(text: str) -> bool:
    return bool(_HEADER.match(text))


def member(text: str) -> bool:
    return bool(_ROW.match(text))


def kib(size: str, human: bool) -> Optional[int]:
    m = re.fullmatch(r"([\d.]{1,20})([KMGTP]?)i?", size)
    if not m:
        return None
    try:
        value = float(m.group(1))
    except ValueError:
        return None
    return int(value * _UNITS[m.group(2)]) if human or m.group(2) else int(value)


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    head = next((_HEADER.match(line) for line in lines if _HEADER.match(line)), None)
    if head is None:
        return {}
    human = head.group("unit") == "Size"
    for line in lines:
        m = _ROW.match(line)
        if m and m.group("mnt") == "/dev/shm":
            size = kib(m.group("size"), human)
            if size is not None:
                return {"shm": f"{m.group('fs')} {size} 0 {size} 0% /dev/shm\n"}
    return {}
