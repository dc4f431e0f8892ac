"""``sysctl net.ipv4.conf`` lines (``net.ipv4.conf.all.rp_filter = 2``): the roce area's ``arp_sysctl`` source."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "sysctl"
WORDS = ("net.ipv4.conf.",)
SOURCES = ("arp_sysctl",)
GAPS = 0

_LINE = rx.compile(r"[ \t]{0,40}net\.ipv4\.conf\.[\w.-]{1,200}[ \t]{0,4}=[ \t]{0,4}-?\d")


def anchor(text: str) -> bool:
    return bool(_LINE.match(text))


member = anchor


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("arp_sysctl", lines)
