"""The fabric manager's log (``/var/log/fabricmanager.log``: ``[Dec 19 2024 22:08:53] [INFO] [tid 1570] ...``) and
its unit's journal (``nv-fabricmanager[1120]: ...``, ``nvidia-fabricmanager-start.sh[4753]: ...``), and a line
naming it (``fabric manager config file item: ... has an invalid value``): the nvlink area's ``fabricmanager``
source."""
from __future__ import annotations

import re
from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one
from nccldiag.paste.kinds.systemctl import STATE, UNIT

NAME = "fabric manager log"
WORDS = ("[tid ", "fabricmanager", "fabric manager", "Fabric Manager", "nv-fabricmanager")
SOURCES = ("fabricmanager",)
KEEP_TIME = True  # the journal's lines keep their time and host, as the node's source holds them
GAPS = 1
MIN = 1

_LOG = rx.compile(r"[ \t]{0,4}\[[A-Z][a-z]{2} \d{1,2} \d{4} \d\d:\d\d:\d\d\] \[(?:INFO|ERROR|WARNING|WARN|FATAL|DEBUG)\] "
                  r"\[tid \d{1,10}\]")
_HEAD = rx.compile(r"[ \t]{0,4}Fabric Manager Log initializing")
_NAMED = rx.compile(r"(?:nv-fabricmanager|nvidia-fabricmanager|fabric ?manager)", re.I)
_CONTINUED = rx.compile(r"[ \t]{0,4}(?:Message payload details|[A-Z][\w ]{0,40}:)")


_COMMAND = rx.compile(r"[ \t]{0,4}(?:sudo[ \t]{1,4})?(?:systemctl|journalctl|cat|tail|head|less|grep|service|"
                      r"nv-fabricmanager[ \t]{1,4}-)\b")


def anchor(text: str) -> bool:
    if _COMMAND.match(text) or UNIT.match(text) or STATE.match(text):
        return False  # the command that shows the log, not the log
    return bool(_LOG.match(text) or _HEAD.match(text) or _NAMED.search(text[:400]))


def member(text: str) -> bool:
    if _COMMAND.match(text) or UNIT.match(text) or STATE.match(text):
        return False
    return bool(_LOG.match(text) or _HEAD.match(text) or _NAMED.search(text[:400]) or _CONTINUED.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("fabricmanager", lines)
