"""NCCL said why, and no cause of the catalog explains it: an NCCL WARN whose message ``knowledge/nccl.toml`` reads
as a cause (a verbs call's failure and its errno, a socket connect refused or timed out, /dev/shm that could not
be extended, a driver too old, a plugin that did not load...) names that cause's category, though no case of it
was seen before.

Evidence: the WARN lines and the 'Last error:' texts quoting them (:func:`nccldiag.diagnosis.events.nccl_warns`),
in any input (a log, a paste, a bundle). A WARN is left to the catalog's causes when a fail or warn diagnosis of
one cites its line or quotes its text, or names its category already: the catalog's cause knows the failure
better. The rest make one diagnosis per category: a warning of medium confidence (the message names the cause; the
table, not a case, says so), citing the lines, the row's meaning and the NCCL source file that prints it. A row
whose message NCCL prints while it carries on (severity ``warn``) counts only beside a failure of the run.

Not a rule of the registry: :func:`nccldiag.diagnosis.diagnose` calls :func:`after` once the catalog's causes have
run, before the unexplained verdict; the lines it cites are then explained.
References: NVIDIA/nccl's source (the table's header names the release and commit read; ``scripts/nccl-messages``
checks the table against a tree).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import FAILURE_LINES, Diagnosis, Evidence
from nccldiag.diagnosis.signs import unexplained_messages
from nccldiag.knowledge import nccl_source

ID = "nccl-warn"
TITLE = "NCCL named the cause"
CONFIRM = ("rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV and read the lines before the WARN; "
           "scripts/nccl-messages shows where NCCL prints it")
FIX = "Do what the NCCL message table's row says (the evidence names it)."
TIER = 0


def after(inp: Inputs, diagnoses: List[Diagnosis]) -> List[Diagnosis]:
    """The diagnoses of the NCCL WARNs that no fail or warn diagnosis of ``diagnoses`` explains."""
    found = E.nccl_warns(inp)
    if not found:
        return []
    by = unexplained_messages(inp, diagnoses, found)
    return [_diagnosis(category, events) for category, events in by.items()]


def _diagnosis(category: str, found: List[E.Event]) -> Diagnosis:
    found = E.ordered(found)
    first = found[0]
    rows = list(dict.fromkeys(e.check for e in found))
    m = nccl_source.message(first.check[len("nccl."):])
    clues = E.clues_of(found)
    d = C.make(sys.modules[__name__], f"{first.what}{C.on(C.hosts(clues))}", clues, confidence="medium",
               severity="warn", category=category,
               why=f"NCCL's own message says so: {m.where} reads it as {category} ({m.file} prints it, NCCL "
                   f"{m.nccl}), and no cause of the catalog explains it",
               fix=" ".join(dict.fromkeys(e.fix for e in found if e.fix)) or FIX,
               title=f"{TITLE}: {category.split(':', 1)[-1].replace('_', ' ').replace('-', ' ')}")
    d.evidence.extend(Evidence("figure", f"the NCCL message table's {row.id}: {row.meaning} (NCCL {row.nccl} "
                                         f"{row.file})", row.where)
                      for row in (nccl_source.message(r[len("nccl."):]) for r in rows[:3]))
    d.tier, d.confirm = TIER, CONFIRM
    failing = sum(1 for e in found if e.severity == "fail")
    if failing:
        # messages NCCL prints only where an operation failed: no all-clear, whatever else the evidence holds
        d.figures = {**(d.figures or {}), FAILURE_LINES: failing}
    return d
