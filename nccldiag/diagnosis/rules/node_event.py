"""A failure a node or a rank reported, of a category no other cause of the catalog names: a GPU fault the job's
own kernel raised (Xid 13/31/43, CUDA's 'an illegal memory access was encountered'), driver or firmware errors
of the GPU, CPU lockups, machine checks, power-smoothing or InfoROM wear events.

Evidence: the events of :mod:`nccldiag.diagnosis.events` (check findings that carry their category, Xid codes,
kernel lines and CUDA errors read through ``knowledge/xid.toml``, ``knowledge/kmsg.toml`` and
``knowledge/cuda.toml``) whose category no row of ``knowledge/causes.toml`` names: one diagnosis per category,
as severe as its worst event, with what the table says to do. A category a row names is that row's (the rows
with ``events`` read its events; the others read their own words).
References: the tables' sources (NVIDIA's Xid catalog, the Linux kernel and driver sources, the CUDA runtime's
error enumeration).
"""
from __future__ import annotations

import functools
import sys
from typing import Dict, FrozenSet, List

from nccldiag import knowledge
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "node-event"
TITLE = "Failure reported by a node or a rank"
FIX = "Do what the table row of the event says (the fix names the row): the node's kernel log and the rank's own " \
      "last lines at that time tell more."
CONFIRM = "dmesg -T on the node at the time of the event; the rank's own log"


@functools.lru_cache(maxsize=None)
def named() -> FrozenSet[str]:
    """The categories a row of the catalog names."""
    return frozenset(r["category"] for r in knowledge.rows("causes.toml", "cause"))


def diagnose(inp: Inputs) -> List[Diagnosis]:
    by: Dict[str, List[E.Event]] = {}
    for e in E.events(inp):
        if e.category not in named():
            by.setdefault(e.category, []).append(e)
    out: List[Diagnosis] = []
    for category, found in by.items():
        found = E.ordered(found)
        clues = E.clues_of(found)
        fixes = list(dict.fromkeys(e.fix for e in found if e.fix))
        sure = any(e.confidence == "high" for e in found)
        out.append(C.make(sys.modules[__name__], f"{E.summary(found)}{C.on(C.hosts(clues))}", clues,
                          confidence="high" if sure else "medium", severity=E.worst(found),
                          why=f"reported by the node or the rank; {found[0].where or 'the knowledge tables'} class it "
                              f"{category}",
                          fix=" ".join(fixes[:3]) or FIX, category=category,
                          title=f"{TITLE}: {category.split(':', 1)[-1].replace('-', ' ')}"))
    return out
