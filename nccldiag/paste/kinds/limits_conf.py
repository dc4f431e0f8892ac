"""``/etc/security/limits.conf`` (and ``limits.d``): ``* soft memlock unlimited`` rows among their comments, read by
the limits area."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "limits.conf"
WORDS = ("memlock",)
SOURCES = ("limits_conf",)
GAPS = 2
MIN = 1

_ROW = rx.compile(r"[ \t]{0,40}[\w*@%:-]{1,64}[ \t]{1,40}(?:soft|hard|-)[ \t]{1,40}[a-z_]{2,20}[ \t]{1,40}\S")
_MEMLOCK = rx.compile(r"[ \t]{0,40}[\w*@%:-]{1,64}[ \t]{1,40}(?:soft|hard|-)[ \t]{1,40}memlock[ \t]{1,40}\S")
_COMMENT = rx.compile(r"[ \t]{0,40}#")
_DUMP = rx.compile(r"[ \t]{0,4}==> /etc/security/limits")


def anchor(text: str) -> bool:
    return bool(_MEMLOCK.match(text))


def member(text: str) -> bool:
    return bool(_ROW.match(text) or _COMMENT.match(text) or _DUMP.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("limits_conf", lines)
