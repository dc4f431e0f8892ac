"""nccl-tests built without MPI (make MPI=1 not used, or an old build left in place): under mpirun every process
runs its own one-node test, so the output holds one summary per process, sizes repeat, and the bandwidth is a
single node's: the network was never tested.

Evidence: more 'Avg bus bandwidth' summaries in one output than runs started in it.
References: NVIDIA/nccl-tests#27, #182 ('Did you compile the nccl-tests with MPI=1?').
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "nccltests-no-mpi"
TITLE = "nccl-tests ran as independent one-node tests"
FIX = ("Rebuild nccl-tests with MPI: 'make clean; make MPI=1 MPI_HOME=<mpi prefix> NCCL_HOME=<nccl prefix>' and "
       "launch the new binaries with mpirun; one run then prints one summary for all its ranks.")
CONFIRM = "ldd ./build/all_reduce_perf | grep -i mpi  (a build with MPI links libmpi)"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    for ls in inp.log_sets():
        for run in ls.facts.nccl_tests:
            if run.summaries > max(1, run.headers):
                ev = [Evidence("log", f"{run.summaries} 'Avg bus bandwidth' summaries in one output of "
                                      f"{max(1, run.headers)} run(s)", run.source)]
                return [C.make(sys.modules[__name__], f"nccl-tests printed {run.summaries} separate summaries: each "
                               "process ran its own test, the network was not tested", extra=ev, nodes=[],
                               severity="warn", confidence="medium",
                               why="a run over several processes prints one summary; one per process means they "
                                   "did not form one job (nccl-tests without MPI support)")]
    return []
