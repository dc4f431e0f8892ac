"""A job monitor's or scheduler's lines that say how long a job has been running (``PULSE: tr11-176B-ml is running
for 1-07:27:33 since ...``; Slurm's elapsed time, ``[days-]hours:minutes:seconds``), with the lines of the same
monitor about other jobs between them (``... is waiting to be scheduled``). No area reads them: they are read and
shown, and the hang cause reads them (a job its monitor says is running while the job itself prints nothing)."""
from __future__ import annotations


from nccldiag import rx
from nccldiag.diagnosis.signs import RUNNING
from nccldiag.paste.kinds.base import shown_only

NAME = "job monitor"
WORDS = ("running for ",)
SOURCES = ()
CONTEXT = True
GAPS = 4  # blank lines between a monitor's lines (a paste's spacing, a wrapped line's pieces) are no job's line
UP = False

# a name starts where a name can (no name character before it): one start per name, not per character
_OTHER = rx.compile(r"(?<![\w.:@/+-])[\w.:@/+-]{1,200} is (?:still )?(?:waiting to be scheduled|pending|queued|running)\b")


def anchor(text: str) -> bool:
    return bool(RUNNING.search(text[:2000]))


def member(text: str) -> bool:
    return bool(RUNNING.search(text[:2000]) or _OTHER.search(text[:2000]))


sections = shown_only

