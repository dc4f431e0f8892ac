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

from typing import Dict

from nccldiag.diagnosis.msgtable import KINDS, MessageTable  # noqa: F401  (KINDS: where the reader looks)

TABLE = "torch.toml"
NONE = "none"


def names_cause(row: Dict) -> bool:
    """Whether the row's message is evidence of a cause: not a victim's, and its category is not ``none``."""
    return not row.get("victim") and row["category"] != NONE


_TABLE = MessageTable(TABLE, names_cause)
ROWS = _TABLE.rows
row_of = _TABLE.row_of  # the row of the first family whose pattern matches a text, None when none does
found = _TABLE.found  # the lines of the inputs whose row names a cause, each with its row


def what(row: Dict) -> str:
    """The message in a few words, behind the program that prints it (the row's ``program``, PyTorch by default):
    its text up to the first placeholder (''The client socket has timed out after ...'')."""
    head = row["text"].split("{")[0].strip().rstrip(":(").strip()
    return f"{row.get('program', 'PyTorch')}: '{head[:90]}{' ...' if '{' in row['text'] or len(head) > 90 else ''}'"
