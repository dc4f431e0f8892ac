"""``ps`` and ``top`` process listings with a state column: ``ps aux`` (``auxc``, ``auxf``), ``ps -el``,
``ps -eo pid,stat,wchan:32,cmd`` and other ``-o`` lists, ``top -b``'s task table. A header naming ``PID``, a state
column (``STAT`` or ``S``) and the command last, then a row per process. No area reads it: it is read and shown, and
a process in uninterruptible sleep (state ``D``) is an event (:func:`nccldiag.diagnosis.signs.ps_stuck`)."""
from __future__ import annotations

from nccldiag.diagnosis.signs import ps_header, ps_row
from nccldiag.paste.kinds.base import shown_only

NAME = "ps"
WORDS = ("PID",)
SOURCES = ()
CONTEXT = True
GAPS = 0
UP = False


def anchor(text: str) -> bool:
    return ps_header(text) is not None


def member(text: str) -> bool:
    return ps_header(text) is not None or ps_row(text)


sections = shown_only
