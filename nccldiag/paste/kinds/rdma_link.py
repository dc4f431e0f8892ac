"""``rdma link`` (iproute2): ``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ib0``, a line per port."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "rdma_link"
WORDS = ("physical_state",)
SOURCES = ("rdma_link",)
GAPS = 0

_LINK = rx.compile(r"[ \t]{0,40}(?:\d{1,6}/\d{1,4}:[ \t]{0,4})?link \S{1,100}/\d{1,4}[ \t].{0,400}?\bstate[ \t]{1,4}\S")


def anchor(text: str) -> bool:
    return bool(_LINK.match(text))


member = anchor


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("rdma_link", lines)
