"""PyTorch distributed's own failure messages, read through ``knowledge/torch.toml`` (pure).

A log in which only torch speaks (a training log, a forum paste, a logbook excerpt: no NCCL INFO line) still names
its cause: c10d's store that could not listen or be reached, gloo's ranks that could not connect, CUDA that torch
could not initialise, a program that mixed devices. Each line a program printed (the log reader keeps a line holding
a word of the table as an error line, :mod:`nccldiag.nccl.grammar`) is read by the first row whose pattern matches
it; :func:`found` gives the lines whose row names a cause, each with its row, and
:func:`nccldiag.diagnosis.events._of_torch` makes them events of the row's category.

A row that is a victim (a peer gone, a collective others never joined) or names no cause (``none``: a wrapper of
another message, a retry, the launcher's table) makes no event: the causes that read those lines themselves
(remote-peer, hang, killed-by-signal) keep them as the symptoms they are, below any cause found beside them.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Pattern, Tuple

from nccldiag import knowledge
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs

TABLE = "torch.toml"
NONE = "none"
KINDS = ("app", "error", "warn", "last-error")  # where the log reader keeps a program's lines


def _rows() -> Tuple[Tuple[Dict, Pattern[str]], ...]:
    return tuple((r, re.compile(r["pattern"])) for r in knowledge.rows(TABLE))


ROWS = _rows()
WORDS: Tuple[str, ...] = tuple(dict.fromkeys(w for r, _ in ROWS for w in r["words"]))
_ANY_WORD = re.compile("|".join(re.escape(w) for w in sorted(WORDS, key=len, reverse=True)))


def row_of(text: str) -> Optional[Dict]:
    """The row of the first family whose pattern matches ``text``, None when none does."""
    if _ANY_WORD.search(text) is None:
        return None
    return next((r for r, p in ROWS if p.search(text)), None)


def names_cause(row: Dict) -> bool:
    """Whether the row's message is evidence of a cause: not a victim's, and its category is not ``none``."""
    return not row.get("victim") and row["category"] != NONE


def found(inp: Inputs) -> List[Tuple[Dict, C.Clue]]:
    """The lines of the inputs whose row names a cause, each with its row, in the order the reader keeps them."""
    out: List[Tuple[Dict, C.Clue]] = []
    for c in C.find(inp, _ANY_WORD, KINDS):
        row = row_of(c.text)
        if row is not None and names_cause(row):
            out.append((row, c))
    return out


def what(row: Dict) -> str:
    """The message in a few words: its text up to the first placeholder (''The client socket has timed out
    after ...'')."""
    head = row["text"].split("{")[0].strip().rstrip(":(").strip()
    return f"PyTorch: '{head[:90]}{' ...' if '{' in row['text'] or len(head) > 90 else ''}'"
