"""Registry of the probed collectives, one module each (as nccl-tests keeps one file per test).

Names are listed here without importing the modules, so that the admin host
can validate ``--collectives`` without torch; ``load`` imports a module
(and torch) only inside a rank.
"""
from __future__ import annotations

import importlib
from typing import List, Sequence

#: Run order: the simplest collectives first, so a broken setup fails early
#: on the one that is easiest to reason about; barrier last.
NAMES: List[str] = [
    "all_reduce",
    "broadcast",
    "reduce",
    "all_gather",
    "all_gather_into_tensor",
    "gather",
    "scatter",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
    "sendrecv",
    "barrier",
]

#: The record name of the MPI allreduce a rank checks MPI with first, under ``--bootstrap mpi`` (worker.py).
MPI_CHECK = "mpi_allreduce"


def select(spec: str | Sequence[str] | None) -> List[str]:
    """Validated collective names from ``"a,b"`` / a list / ``None`` or ``"all"`` (every one).

    Order follows ``NAMES`` and duplicates are dropped, so every rank runs
    the same sequence whatever order the user typed.
    """
    if spec is None:
        return list(NAMES)
    words = spec.split(",") if isinstance(spec, str) else list(spec)
    wanted = {w.strip() for w in words if w.strip()}
    if not wanted or "all" in wanted:
        return list(NAMES)
    unknown = sorted(wanted - set(NAMES))
    if unknown:
        raise ValueError(f"unknown collective(s) {', '.join(unknown)}; known: {', '.join(NAMES)}")
    return [n for n in NAMES if n in wanted]


def load(name: str):
    """The ``Collective`` object of ``name`` (imports torch)."""
    if name not in NAMES:
        raise ValueError(f"unknown collective {name!r}")
    return importlib.import_module(f"{__name__}.{name}").COLLECTIVE
