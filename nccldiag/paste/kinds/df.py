"""``df`` (``-h``, ``-k``, ``-P``): the row of ``/dev/shm``, read by the limits area as the collection's
``df -Pk /dev/shm`` line (sizes in KiB).

The row is read under its header, and alone as well where its sizes carry their unit (``shm  64M  0  64M  0%
/dev/shm``): what ``df -h | grep shm`` prints, and what a post quotes of it. A row alone whose sizes have no unit is
not read: without the header its unit (KiB or bytes) is unknown."""
from __future__ import annotations

import re
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.paste.kinds.base import Context

NAME = "df"
WORDS = ("Mounted on", "/dev/shm")
SOURCES = ("shm",)
CONTEXT = True  # a block of it that feeds no source is read and shown all the same
GAPS = 0
UP = False

_HEADER = rx.compile(r"[ \t]{0,40}Filesystem[ \t]{1,40}(?P<unit>Size|1K-blocks|1024-blocks)[ \t]{1,40}Used[ \t]{1,40}"
                     r"Avail")
# df pads the file system's column to the longest name it lists: the gap after it may be wide
_ROW = rx.compile(r"[ \t]{0,40}(?P<fs>\S{1,200})[ \t]{1,200}(?P<size>[\d.]{1,20}[KMGTP]?i?)[ \t]{1,40}"
                  r"(?P<used>[\d.]{1,20}[KMGTP]?i?)[ \t]{1,40}(?P<avail>[\d.]{1,20}[KMGTP]?i?)[ \t]{1,40}"
                  r"(?P<pct>\d{1,3}%|-)[ \t]{1,40}(?P<mnt>/\S{0,200})[ \t]{0,40}$")
_HUMAN = rx.compile(r"[\d.]{1,20}[KMGTP]i?")
_UNITS = {"": 1, "K": 1, "M": 1024, "G": 1024 ** 2, "T": 1024 ** 3, "P": 1024 ** 4}


def _shm_row(text: str) -> Optional["re.Match[str]"]:
    """The row of /dev/shm alone, its size in human units (``64M``)."""
    m = _ROW.match(text)
    return m if m and m.group("mnt") == "/dev/shm" and _HUMAN.fullmatch(m.group("size")) else None


def anchor(text: str) -> bool:
    return bool(_HEADER.match(text) or _shm_row(text))


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
    human = head is None or head.group("unit") == "Size"
    for line in lines:
        m = _ROW.match(line) if head is not None else _shm_row(line)
        if m and m.group("mnt") == "/dev/shm":
            size = kib(m.group("size"), human)
            if size is not None:
                return {"shm": f"{m.group('fs')} {size} 0 {size} 0% /dev/shm\n"}
    return {}
