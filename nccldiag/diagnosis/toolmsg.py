"""The messages of the launchers and test tools beside NCCL, read through ``knowledge/launchers.toml`` (pure).

A job's log often holds no line of NCCL's and no torch message: only what Open MPI's mpirun or its BTLs, UCX, MPICH's
Hydra, Slurm's srun and slurmstepd, or perftest printed when it failed. Each line a program printed (the log reader
keeps a line holding a word of the table as an error line, :mod:`nccldiag.nccl.grammar`) is read by the first row
whose pattern matches it; :func:`found` gives the lines whose row names a cause, each with its row, and
:mod:`nccldiag.diagnosis.rules.tool_message` makes them diagnoses of the row's category where no cause of the
catalog explains them. A row of category ``none`` (a message whose cause its source does not establish) makes none:
its line stays a line of the failure lexicon, said unexplained.
"""
from __future__ import annotations

from typing import Dict

from nccldiag import rx
from nccldiag.diagnosis.msgtable import KINDS, MessageTable  # noqa: F401  (KINDS: where the reader looks)

TABLE = "launchers.toml"
NONE = "none"


def names_cause(row: Dict) -> bool:
    """Whether the row's message is evidence of a cause: its category is not ``none``."""
    return row["category"] != NONE


_TABLE = MessageTable(TABLE, names_cause)
ROWS = _TABLE.rows
row_of = _TABLE.row_of  # the row of the first family whose pattern matches a text, None when none does
found = _TABLE.found  # the lines of the inputs whose row names a cause, each with its row


CONVERSION = rx.compile(r"%[-0-9.]*(?:ll|l|z|h)?(?:ps|[sdiuxXpmf])")  # a printf conversion of a row's text


def what(row: Dict) -> str:
    """The message in a few words: the tool and its text, its conversions shown as '...' ('Slurm slurmstepd: 'STEP
    ... ON ... CANCELLED AT ... DUE TO TIME LIMIT'')."""
    text = CONVERSION.sub("...", row["text"]).strip(" =*")
    return f"{row['tool'].split(' (')[0]}: '{text[:100]}{' ...' if len(text) > 100 else ''}'"


_BY_ID = {r["id"]: r for r, _ in ROWS}


def row_by_id(row_id: str) -> Dict:
    """The row of id ``row_id``."""
    return _BY_ID[row_id]
