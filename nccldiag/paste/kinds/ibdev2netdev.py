"""``ibdev2netdev``: ``mlx5_0 port 1 ==> ib0 (Up)``, one line per port (Mellanox OFED); an annotation after it
(``# CX-7 1/8``) is read past."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "ibdev2netdev"
WORDS = ("==>",)
SOURCES = ("ibdev2netdev",)
GAPS = 0

_LINE = rx.compile(r"[ \t]{0,40}\S{1,100}[ \t]{1,20}port[ \t]{1,20}\d{1,4}[ \t]{1,20}==>[ \t]{1,20}\S{1,100}[ \t]{1,20}"
                   r"\([A-Za-z]{1,20}\)")


def anchor(text: str) -> bool:
    return bool(_LINE.match(text))


member = anchor


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("ibdev2netdev", lines)
