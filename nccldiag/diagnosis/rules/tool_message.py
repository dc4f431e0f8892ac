"""A launcher or a test tool said why, and no cause of the catalog explains it: a message of Open MPI (mpirun, its
BTLs), UCX, MPICH's Hydra, Slurm (srun, slurmstepd) or perftest whose row of ``knowledge/launchers.toml`` names a
cause (the openib BTL's or UCX's locked memory, UCX's or perftest's completion with an error status, the tcp BTL's
'No route to host', mpirun's slots, slurmstepd's OOM kill or time limit) names that cause's category.

Evidence: the lines :func:`nccldiag.diagnosis.toolmsg.found` reads, in any input. A line is left to the catalog's
causes when a fail or warn diagnosis of one cites it or quotes its text, or names its category already: the
catalog's cause knows the failure better. The rest make one diagnosis per category, as severe as the worst of its
messages and as sure as the surest, citing the lines, the row and the source file that prints the message. A row
whose message the tool prints while the job may go on (severity ``warn``: the openib BTL that could not start)
counts only beside a failure of the run.

Not a rule of the registry: :func:`nccldiag.diagnosis.diagnose` calls :func:`after` once the catalog's causes and
NCCL's WARNs have been read, before the unexplained verdict; the lines it cites are then explained.
References: the tools' sources (open-mpi/ompi, openpmix/prrte, openucx/ucx, pmodels/mpich, SchedMD/slurm,
linux-rdma/perftest, linux-rdma/rdma-core at the commits the table's rows name).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis import toolmsg
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import FAILURE_LINES, Diagnosis, Evidence
from nccldiag.diagnosis.signs import unexplained_messages

ID = "tool-message"
TITLE = "A launcher or test tool named the cause"
CONFIRM = "the fix of the table row the evidence names; the tool's own lines before and after the message"
FIX = "Do what the launcher message table's row says (the evidence names it)."
TIER = 0


def events(inp: Inputs) -> List[E.Event]:
    """The tools' messages whose row names a cause, as events (kept on ``inp``)."""
    known = getattr(inp, "_tool_messages", None)
    if known is None:
        known = []
        for row, c in toolmsg.found(inp):
            who = E.besides_host(c)
            known.append(E.Event(row["category"], row["severity"], toolmsg.what(row) + (f" on {who}" if who else ""),
                                 c, "tool." + row["id"], rank=1, confidence=row["confidence"], fix=row["fix"],
                                 where=row["where"]))
        inp._tool_messages = known  # type: ignore[attr-defined]
    return known


def after(inp: Inputs, diagnoses: List[Diagnosis]) -> List[Diagnosis]:
    """The diagnoses of the tools' messages that no fail or warn diagnosis of ``diagnoses`` explains."""
    found = events(inp)
    if not found:
        return []
    by = unexplained_messages(inp, diagnoses, found, fail_shows_failure=True)
    return [_diagnosis(category, events) for category, events in by.items()]


def _diagnosis(category: str, found: List[E.Event]) -> Diagnosis:
    found = E.ordered(found)
    first = found[0]
    rows = {r["id"]: r for r in (toolmsg.row_by_id(e.check[len("tool."):]) for e in found)}
    clues = E.clues_of(found)
    row = rows[first.check[len("tool."):]]
    sure = any(e.confidence == "high" for e in found)
    d = C.make(sys.modules[__name__], f"{first.what}{C.on(C.hosts(clues))}", clues,
               confidence="high" if sure else "medium", severity=E.worst(found), category=category,
               why=f"the tool's own message says so: {row['where']} reads it as {category} "
                   f"({row['source'][0]['repo']} {row['source'][0]['file']} prints it), and no cause of the catalog "
                   "explains it",
               fix=" ".join(dict.fromkeys(e.fix for e in found if e.fix)) or FIX,
               title=f"{TITLE}: {category.split(':', 1)[-1].replace('_', ' ').replace('-', ' ')}")
    d.evidence.extend(Evidence("figure", f"the launcher message table's {r['id']}: {r['meaning']} "
                                         f"({r['source'][0]['repo']} {r['source'][0]['file']})", r["where"])
                      for r in list(rows.values())[:3])
    # a message of what followed from another failure (a prolog that failed for what it ran) comes after the causes
    d.tier, d.confirm = (1 if all(r.get("symptom") for r in rows.values()) else TIER), CONFIRM
    failing = sum(1 for e in found if e.severity == "fail")
    if failing:
        # messages a tool prints only where the job or test failed: no all-clear, whatever else the evidence holds
        d.figures = {**(d.figures or {}), FAILURE_LINES: failing}
    return d
