"""``show_gids``: the GID table of every RDMA port (Mellanox OFED), under its ``DEV PORT INDEX GID`` header."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, one

NAME = "show_gids"
WORDS = ("INDEX", "n_gids_found")
SOURCES = ("show_gids",)
GAPS = 0
MIN = 2

_HEADER = rx.compile(r"[ \t]{0,40}DEV[ \t]{1,20}PORT[ \t]{1,20}INDEX[ \t]{1,20}GID")
_RULE = rx.compile(r"[ \t]{0,40}---[ \t]{1,20}----")
_ROW = rx.compile(r"[ \t]{0,40}\S{1,100}[ \t]{1,20}\d{1,4}[ \t]{1,20}\d{1,5}[ \t]{1,20}[0-9a-fA-F]{4}:")
_COUNT = rx.compile(r"[ \t]{0,40}n_gids_found=\d{1,6}")


def anchor(text: str) -> bool:
    return bool(_HEADER.match(text) or _COUNT.match(text))


def member(text: str) -> bool:
    return bool(_HEADER.match(text) or _RULE.match(text) or _ROW.match(text) or _COUNT.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("show_gids", lines)
