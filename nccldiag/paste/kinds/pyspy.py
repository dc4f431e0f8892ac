"""``py-spy dump --pid PID`` (and ``--native``): a ``Thread <id> (active|idle): "<name>"`` line per thread, several
threads of one stack listed together as a tool's output groups them, then the stack's frames indented
(``broadcast (torch/distributed/distributed_c10d.py:1191)``). No area reads it: it is read and shown, and the hang
cause reads where each stack waits (:func:`nccldiag.diagnosis.signs.py_stacks`)."""
from __future__ import annotations


from nccldiag import rx
from nccldiag.diagnosis.signs import PY_FRAME, PY_THREAD
from nccldiag.paste.kinds.base import elided, shown_only

NAME = "py-spy dump"
WORDS = (" (active", " (idle")
SOURCES = ()
CONTEXT = True
GAPS = 1
UP = False
_NATIVE = rx.compile(r"[ \t]{0,8}native frames:|[ \t]{2,40}\S")


def anchor(text: str) -> bool:
    return bool(PY_THREAD.match(text))


def member(text: str) -> bool:
    return bool(PY_THREAD.match(text) or PY_FRAME.match(text) or _NATIVE.match(text) or elided(text))


sections = shown_only
