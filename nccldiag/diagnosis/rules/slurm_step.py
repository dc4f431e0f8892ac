"""Slurm refused the job step: srun ran inside an allocation that does not hold what the step asked for (tasks
per node, CPUs per task, memory, GPUs, or the nodes named), so no rank started and nothing was tested.

srun says why in one line: 'srun: error: Unable to create step for job N: <reason>' (older Slurm: 'Unable to
create job step: <reason>'); the reasons seen are 'More processors requested than permitted', 'Memory required
by task is not available', 'Requested node configuration is not available', 'Invalid generic resource (gres)
specification'. 'step creation temporarily disabled, retrying' is srun waiting, not a refusal.

Evidence: that line in any output (a launcher's error line pasted to ``log``, the probe's launch finding that
quotes it).
References: PKUHPC/OpenSCOW#1157, eth-cscs/DLA-Future#337, radical-cybertools/radical.pilot#2109.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "slurm-step-refused"
TITLE = "Slurm refused the job step"
FIX = ("Ask the allocation for what the step needs: salloc/sbatch -N NODES --ntasks-per-node=RANKS (with "
       "--cpus-per-task, --mem or --gpus-per-node as the step needs), or --exclusive for whole nodes; or run "
       "within what the allocation holds ('nccldiag probe --nproc-per-node' no more than its tasks per node).")
CONFIRM = "scontrol show job $SLURM_JOB_ID  (NumNodes, NumCPUs, TRES mem and gres against what the step asks)"

REFUSED = re.compile(r"Unable to create (?:step for job \d+|job step): *(?P<why>[^|\n]+)")

# srun's reason -> what to ask for (first match wins)
_FIXES = (
    (re.compile(r"More processors requested than permitted", re.I),
     "the step asked for more CPUs per node than the allocation holds",
     "Ask salloc/sbatch for the ranks per node: -N NODES --ntasks-per-node=RANKS (times --cpus-per-task if the "
     "ranks use several CPUs), or --exclusive for whole nodes; or give nccldiag probe a --nproc-per-node within "
     "the CPUs per node of 'scontrol show job $SLURM_JOB_ID'."),
    (re.compile(r"Memory required by task is not available", re.I),
     "the step asked for more memory than the allocation has free (another step of the job may hold it)",
     "Ask salloc/sbatch for the memory: --mem=SIZE per node (--mem=0: all of each node's memory) or --exclusive; "
     "and run no other step of the job beside it, or give the step --mem within the allocation's."),
    (re.compile(r"Requested node configuration is not available", re.I),
     "the step asked for nodes, tasks or CPUs per node that the allocation's nodes do not have",
     "Ask salloc/sbatch for the nodes and the layout the step uses: -N NODES --ntasks-per-node=RANKS "
     "--cpus-per-task=C (or --exclusive), and name only nodes of the allocation; or lower nccldiag probe's "
     "--nproc-per-node."),
    (re.compile(r"gres|generic resource|GPU", re.I),
     "the step asked for GPUs (generic resources) the allocation does not hold",
     "Ask salloc/sbatch for the GPUs: --gpus-per-node=N (or --gres=gpu:N), N at least the ranks per node."),
)


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = C.find(inp, REFUSED, ("error", "app", "finding"))
    if not found:
        return []
    m = REFUSED.search(found[0].text)
    why = m.group("why").strip() if m else ""
    what, fix = "the allocation does not hold what the step asked for", None
    for pat, meaning, advice in _FIXES:
        if pat.search(why):
            what, fix = meaning, advice
            break
    return [C.make(sys.modules[__name__], f"Slurm refused the step ({why or 'no reason given'}): no rank started",
                   found, confidence="high", nodes=[], fix=fix,
                   why=f"srun could not create the step: {what}; nothing of NCCL or the network was tested",
                   figures={"srun_reason": why})]
