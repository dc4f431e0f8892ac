"""``systemctl status UNIT``: the unit's state (``Active: active (running)``, ``Active: failed``) and the journal
lines after it. ``nvidia-fabricmanager`` is read by the nvlink area (its ``fabricmanager`` source reads the same
``Active:`` line and log); other units (``nvidia-persistenced``, ``openibd`` ...) are read and shown, no area judging
them."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, indented, one

NAME = "systemctl status"
WORDS = ("Loaded: ", "Active: ", ".service - ")
SOURCES = ("fabricmanager",)
CONTEXT = True  # a block of it that feeds no source is read and shown all the same
GAPS = 1
MIN = 2

UNIT = rx.compile(r"[ \t]{0,40}(?:[●○×*↻][ \t]{1,4})?(?P<unit>[\w@.-]{1,200}\.service)(?:[ \t]{1,4}-[ \t]|[ \t]{0,4}$)")
STATE = rx.compile(r"[ \t]{1,40}(?:Loaded|Active|Main PID|Process|Tasks|Memory|CPU|CGroup|Docs|Status|TriggeredBy|"
                    r"Drop-In|Invocation|IO):[ \t]")
_TREE = rx.compile(r"[ \t]{1,40}[└├│]")
_JOURNAL = rx.compile(r"[A-Za-z]{3}\.?[ \t]{1,2}\d{1,2}[ \t]\d\d:\d\d:\d\d[ \t]\S{1,253}[ \t]\S{1,100}:")


def anchor(text: str) -> bool:
    return (bool(STATE.match(text)) and text.lstrip().startswith(("Loaded:", "Active:"))) or \
        (bool(UNIT.match(text)) and " - " in text)


def member(text: str) -> bool:
    return bool(UNIT.match(text) or STATE.match(text) or _TREE.match(text) or _JOURNAL.match(text)
                or (indented(text) and not text.lstrip().startswith("#")))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    unit = next((m.group("unit") for m in map(UNIT.match, lines) if m), "") or context.command
    if "fabricmanager" in unit or "fabric-manager" in unit:
        return one("fabricmanager", lines)
    return {}
