"""A table of programs' messages, read line by line (pure).

A message table of ``knowledge/`` (``torch.toml``, ``launchers.toml``) holds one row a message: the words a line of
it must hold, a pattern that reads it, its category and the source that prints it. :class:`MessageTable` reads a
line by the first row whose pattern matches it (and, for a row with ``above``, whose one number it names is above
the other: :meth:`MessageTable.row_of`) and gives the lines of the inputs whose
row names a cause, each with its row (:meth:`MessageTable.found`). What names a cause is the table's own: the
reader that builds it says (:mod:`nccldiag.diagnosis.torchmsg`, :mod:`nccldiag.diagnosis.toolmsg`).
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Match, Optional, Pattern, Tuple

from nccldiag import knowledge, rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs

KINDS = ("app", "error", "warn", "last-error", "kernel", "failure")  # where the log reader keeps a program's lines


def _holds(row: Dict, m: Optional[Match[str]]) -> bool:
    """Whether a row's pattern matched, and the numbers it names in ``above`` (the names of two of its groups,
    [a, b]) say a > b: a row that reads a count only where it exceeds another (more workers than the world size)."""
    if m is None:
        return False
    above = row.get("above")
    return not above or int(m.group(above[0])) > int(m.group(above[1]))


def _one_gpu(row: Dict, clue: C.Clue, inp: Inputs) -> bool:
    """Whether the row's message says two GPUs cannot reach each other (``two_gpus``) and the text of ``clue`` lists
    the node's GPUs and lists one: a node with one GPU prints it with nothing wrong."""
    path = getattr(clue.at, "source", None)
    return bool(row.get("two_gpus")) and inp.pasted is not None and path is not None and inp.pasted.lists_one_gpu(path)


class MessageTable:
    """The rows of the message table ``table`` of ``knowledge/``, each with its compiled pattern; ``names_cause``
    says whether a row's message is evidence of a cause."""

    def __init__(self, table: str, names_cause: Callable[[Dict], bool]) -> None:
        self.table = table
        self.names_cause = names_cause
        self.rows: Tuple[Tuple[Dict, knowledge.Expr], ...] = tuple(
            (r, knowledge.Expr(r["pattern"])) for r in knowledge.rows(table))
        self.words: Tuple[str, ...] = tuple(dict.fromkeys(w for r, _ in self.rows for w in r["words"]))
        self.any_word = rx.compile("|".join(re.escape(w) for w in sorted(self.words, key=len, reverse=True)))

    def row_of(self, text: str) -> Optional[Dict]:
        """The row of the first family whose pattern matches ``text``, None when none does."""
        if self.any_word.search(text) is None:
            return None
        return next((r for r, p in self.rows if _holds(r, p.search(text))), None)

    def found(self, inp: Inputs) -> List[Tuple[Dict, C.Clue]]:
        """The lines of the inputs whose row names a cause, each with its row, in the order the reader keeps them."""
        out: List[Tuple[Dict, C.Clue]] = []
        for c in C.find(inp, self.any_word, KINDS):
            row = self.row_of(c.text)
            if row is not None and self.names_cause(row) and not _one_gpu(row, c, inp):
                out.append((row, c))
        return out
