"""Nodes Slurm has taken out of service: a pasted ``sinfo -R`` (``--list-reasons``) lists the nodes that are down,
drained or draining, each with the reason Slurm set ('Not responding', 'Kill task failed', a node health check's
words) or an admin gave ('Memory errors'). Those nodes run no job until someone resumes them; the reason is where
to start.

Evidence: the rows the paste reader read under a typed ``sinfo -R`` (:func:`nccldiag.paste.ends.sinfo_reasons`):
its header ``REASON [USER TIMESTAMP [STATE]] NODELIST`` and the rows under it, also when a page rendered each cell
on a line of its own. A header with no row (no node out of service) is nothing. A reason that says the drain was
planned (maintenance, an upgrade, a reboot asked for) is a warning: the node is out of service on purpose.
References: Slurm's sinfo(1) ('-R, --list-reasons: List reasons nodes are in the down, drained, fail or failing
state'); HP XC System Software user's guide, 'Reporting Reasons for Downed, Drained, and Draining Nodes'
(tests/cases/node-hpxc-manual-sinfo-r-memory-errors-not-responding-nodes).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "slurm-node-out-of-service"
TITLE = "Nodes Slurm has taken out of service"
FIX = ("Start from the reason Slurm gives for each node: check the node ('nccldiag check <node>', its kernel log, "
       "'scontrol show node <node>' for the full reason and since when), fix what it names (a node not responding: "
       "slurmd, its network, the node itself; memory or GPU errors: the hardware), then return it to service with "
       "'scontrol update nodename=<node> state=resume'.")
CONFIRM = "sinfo -R; scontrol show node <node> | grep -E 'State|Reason'"

PLANNED = re.compile(r"maint|upgrad|updat|reboot|planned|reserv|power.?save|testing", re.I)


def diagnose(inp: Inputs) -> List[Diagnosis]:
    rows = list(inp.pasted.slurm_reasons) if inp.pasted is not None else []
    if not rows:
        return []
    faults = [r for r in rows if not PLANNED.search(r[1])]
    ev = [Evidence("log", f"{line.text}  (sinfo -R: reason, nodes)", f"{line.path}:{line.lineno}", line.host)
          for line, _, _ in (faults or rows)[:6]]
    said = "; ".join(f"{nodes} ({reason})" for _, reason, nodes in (faults or rows)[:6])
    return [C.make(sys.modules[__name__], f"Slurm has taken nodes out of service: {said}"
                   + (f" and {len(rows) - 6} more" if len(rows) > 6 else ""), extra=ev,
                   nodes=list(dict.fromkeys(nodes for _, _, nodes in faults or rows)),
                   severity="fail" if faults else "warn", confidence="high",
                   why=("'sinfo -R' lists the nodes that are down, drained or failing with the reason for each: they "
                        "run no job until they are resumed" + ("" if faults else "; every reason says the drain was "
                                                               "planned")))]
