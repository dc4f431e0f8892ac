"""Nodes Slurm has taken out of service: a pasted ``sinfo -R`` (``--list-reasons``) lists the nodes that are down,
drained or draining, each with the reason Slurm set ('Not responding', 'Kill task failed', a node health check's
words) or an admin gave ('Memory errors'). Those nodes run no job until someone resumes them; the reason is where
to start.

Evidence: the rows the paste reader read under a typed ``sinfo -R`` (:func:`nccldiag.paste.ends.sinfo_reasons`):
its header ``REASON [USER TIMESTAMP [STATE]] NODELIST`` and the rows under it, also when a page rendered each cell
on a line of its own. A header with no row (no node out of service) is nothing. A reason that says the drain was
planned (maintenance, an upgrade, a reboot asked for) is a warning: the node is out of service on purpose. A reason
slurmctld set with a message of the launcher table (knowledge/launchers.toml, the rows of 'Slurm slurmctld') names that
message's cause, also as sinfo prints it by default, cut to the 20 characters of its REASON column ('%20E': 'gres/gpu
count repor' for 'gres/gpu count reported lower than configured (0 < 4)'): the diagnosis takes the row's category.
References: Slurm's sinfo(1) ('-R, --list-reasons: List reasons nodes are in the down, drained, fail or failing
state'; its default format '%20E %9u %19H %N'); HP XC System Software user's guide, 'Reporting Reasons for Downed,
Drained, and Draining Nodes' (tests/cases/node-hpxc-manual-sinfo-r-memory-errors-not-responding-nodes);
tests/cases/node-gaps62e-slinkycontainers14-sinfo-r-gres-gpu-count-repor-slurmd-pyxis-without-nvml (a cut reason).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import toolmsg
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "slurm-node-out-of-service"
TITLE = "Nodes Slurm has taken out of service"
FIX = ("Start from the reason Slurm gives for each node: check the node ('nccldiag check <node>', its kernel log, "
       "'scontrol show node <node>' for the full reason and since when), fix what it names (a node not responding: "
       "slurmd, its network, the node itself; memory or GPU errors: the hardware), then return it to service with "
       "'scontrol update nodename=<node> state=resume'.")
CONFIRM = "sinfo -R; scontrol show node <node> | grep -E 'State|Reason'"

PLANNED = rx.compile(r"maint|upgrad|updat|reboot|planned|reserv|power.?save|testing", re.I)

#: sinfo's default format of --list-reasons, "%20E %9u %19H %N" (Slurm's sinfo(1), the default formats): the reason
#: cut to 20 characters
REASON_WIDTH = 20
#: the least of a message's words a cut reason must hold to be read as that message
LEAST_CUT = 10
WORD_START = rx.compile(r"(?:^|\s)(?=\S)")


def _slurmctld_rows() -> List[dict]:
    return [r for r, _ in toolmsg.ROWS if r["tool"].startswith("Slurm slurmctld") and toolmsg.names_cause(r)]


def row_of_reason(reason: str):
    """The launcher table's row of slurmctld's message that ``reason`` is, whole or cut by sinfo to its REASON
    column (the cut's words from one of its word starts on begin the row's text up to its first conversion), or
    None."""
    rows = _slurmctld_rows()
    whole = toolmsg.row_of(reason)
    if whole is not None and whole in rows:
        return whole
    if len(reason) != REASON_WIDTH:
        return None
    for row in rows:
        lead = toolmsg.CONVERSION.split(row["text"])[0]
        for m in WORD_START.finditer(reason):
            tail = reason[m.end():]
            if len(tail) >= LEAST_CUT and lead.startswith(tail):
                return row
    return None


def diagnose(inp: Inputs) -> List[Diagnosis]:
    rows = list(inp.pasted.slurm_reasons) if inp.pasted is not None else []
    if not rows:
        return []
    faults = [r for r in rows if not PLANNED.search(r[1])]
    ev = [Evidence("log", f"{line.text}  (sinfo -R: reason, nodes)", f"{line.path}:{line.lineno}", line.host)
          for line, _, _ in (faults or rows)[:6]]
    said = "; ".join(f"{nodes} ({reason})" for _, reason, nodes in (faults or rows)[:6])
    named = [row_of_reason(reason) for _, reason, _ in faults]
    row = named[0] if named and all(r is not None and r["category"] == named[0]["category"] for r in named) else None
    why = ("'sinfo -R' lists the nodes that are down, drained or failing with the reason for each: they run no job "
           "until they are resumed" + ("" if faults else "; every reason says the drain was planned"))
    if row is not None:
        why += (f"; every reason is slurmctld's {toolmsg.what(row).split(': ', 1)[1]} ({row['tool']}), which "
                f"means: {row['meaning']}")
    return [C.make(sys.modules[__name__], f"Slurm has taken nodes out of service: {said}"
                   + (f" and {len(rows) - 6} more" if len(rows) > 6 else ""), extra=ev,
                   nodes=list(dict.fromkeys(nodes for _, _, nodes in faults or rows)),
                   severity="fail" if faults else "warn", confidence="high" if row is None else row["confidence"],
                   why=why, fix=row["fix"] if row is not None else None,
                   category=row["category"] if row is not None else None)]
