"""A defect of NCCL itself: results wrong only for buffers of 2 GiB and more (an overflow of 32-bit sizes, fixed in
later releases), or a failure the NCCL release notes list for the version in use (:data:`KNOWN`). Wrong results at
ordinary sizes point at the hardware path instead (see the fix of the nccl-tests finding).

Evidence: nccl-tests '#wrong' or out-of-bounds values at sizes of 2 GiB and more only; a known failure's words
with an NCCL version in its range.
References: NVIDIA/nccl-tests#37; vllm-project/vllm#3688 (NCCL 2.18.1); NCCL release notes.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "nccl-defect"
TITLE = "NCCL defect at large sizes"
FIX = ("Upgrade NCCL to the latest release (large-buffer overflows of old releases are fixed), and until then keep "
       "single collectives below 2 GiB (split the buffer).")
CONFIRM = "the same nccl-tests run with the latest NCCL (LD_LIBRARY_PATH to its build): results right at every size"
BIG = 1 << 31
# (first affected, first fixed, the words of the failure, what it is)
KNOWN = (
    ((2, 18, 1), (2, 18, 3), rx.compile(r"Cuda failure (?:\d+ )?'invalid argument'"),
     "NCCL 2.18.1 fails CUDA calls with 'invalid argument' beside CUDA IPC buffers (custom all-reduce kernels)"),
)


def _known(inp: Inputs) -> List[Diagnosis]:
    out: List[Diagnosis] = []
    versions = C.nccl_versions(inp)
    for first, fixed, words, what in KNOWN:
        hit = [v for v in versions if first <= C.version_tuple(v) < fixed]
        found = C.find(inp, words, ("warn", "last-error", "app", "error")) if hit else []
        if found:
            out.append(C.make(sys.modules[__name__], f"{what}: fixed in NCCL {'.'.join(map(str, fixed))}", found,
                              confidence="medium", why=f"NCCL {', '.join(hit)} and the failure its release notes list",
                              fix=f"Upgrade NCCL to {'.'.join(map(str, fixed))} or newer (the framework's NCCL wheel, "
                                  "e.g. nvidia-nccl-cu12, or LD_PRELOAD a newer libnccl.so)."))
    return out


def diagnose(inp: Inputs) -> List[Diagnosis]:
    out: List[Diagnosis] = _known(inp)
    for ls in inp.log_sets():
        for run in ls.facts.nccl_tests:
            wrong = run.wrong_rows
            bad_sizes = [r.size for r in wrong]
            oob_only_big = (run.out_of_bounds or 0) > 0 and not wrong and run.rows and \
                all(r.size >= BIG for r in run.rows)
            if not (bad_sizes and all(s >= BIG for s in bad_sizes)) and not oob_only_big:
                continue
            if any(r.size < BIG for r in wrong):
                continue
            sizes = sorted({r.size for r in run.rows if r.size >= BIG})
            ev = [Evidence("log", f"{run.name or 'nccl-tests'}: wrong results at {', '.join(f'{s >> 30} GiB' for s in sizes[:4])}"
                                  f" ({run.out_of_bounds or 0} out-of-bounds values)", run.source)]
            out.append(C.make(sys.modules[__name__], "results are wrong only at buffers of 2 GiB and more: an NCCL "
                              "defect with large sizes", extra=ev, nodes=[], confidence="medium",
                              why="ordinary sizes are right and only buffers past 2^31 bytes come back wrong",
                              alternatives=["gpu_ecc_rowremap: GPU memory errors corrupt data at any size; "
                                            "'nvidia-smi -q -d ECC' tells"]))
    return out
