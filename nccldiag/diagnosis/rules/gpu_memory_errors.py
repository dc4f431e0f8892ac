"""GPU memory errors: uncorrectable ECC errors (Xid 48, 94, 95), row remapping pending or failed (Xid 63/64,
nvidia-smi -q 'Remapped Rows: Pending Yes'), retired pages pending, a high single-bit error rate (Xid 92). The
faulty rows stay in use until the GPU is reset; a job on the GPU fails ('uncorrectable ECC error encountered')
or the device plugin marks it unhealthy.

Evidence: the ``gpuhealth`` checks; the events of category ``gpu_ecc_rowremap`` (:mod:`nccldiag.diagnosis.events`:
the ``xid`` check's codes and Xid lines in any output read through ``knowledge/xid.toml``, CUDA's ECC error); ECC
and row-remap words in any output, DCGM's included ('GPU 3 has uncorrectable memory errors and row remappings are
pending', DCGM_FR_PENDING_ROW_REMAP and its neighbours in dcgm_errors.h).
References: NVIDIA A100/H100 row remapping guide; NVIDIA Xid catalog.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "gpu-memory-errors"
TITLE = "GPU memory errors (ECC, row remapping)"
FIX = ("Drain the node and reset the GPU (or reboot) so that the pending row remap takes effect; if remapping "
       "failed or uncorrectable errors come back, replace the GPU.")
WORKAROUND = "exclude the GPU (CUDA_VISIBLE_DEVICES) or the node until it is reset"
CONFIRM = "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT"

ECC = rx.compile(r"uncorrectable ECC error|ECC error encountered|cudaErrorECCUncorrectable|CUDA_ERROR_ECC_UNCORRECTABLE|"
                 r"Row ?[Rr]emap(?:ping)? (?:failure|pending)|(?:DBE|double bit) ECC error|"
                 # DCGM's failure messages (dcgm_errors.h: DCGM_FR_PENDING_ROW_REMAP, _UNCORRECTABLE_ROW_REMAP,
                 # _ROW_REMAP_FAILURE, _CUDA_DBE, _DBE_PENDING_PAGE_RETIREMENTS), a table cell cut where it wraps
                 r"GPU \d{1,4} ha[sd] (?:uncorrectable )?memory errors and (?:row|\d{1,9} rows)|"
                 r"row remappings? (?:are|is) pending|double-bit ECC error has occurr?ed|"
                 r"Pending page retirements together with a DBE")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = C.findings(inp, "gpuhealth.row_remap") + C.findings(inp, "gpuhealth.ecc") + \
        C.findings(inp, "gpuhealth.retired")
    ev = E.of(inp, "gpu_ecc_rowremap")
    told = E.clues_of(ev)
    ecc = [c for c in C.find(inp, ECC, ("warn", "last-error", "app", "error", "kernel"))
           if not any(c is t for t in told)]
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node] + told + ecc
    if not found:
        return []
    failed = any(f.status.value == "fail" for f in node) or E.worst(ev) == "fail" and bool(ev) or bool(ecc)
    return [C.make(sys.modules[__name__], f"GPU memory errors{C.on(C.hosts(found))}: the GPU needs a reset",
                   found, confidence="high", why="the GPU reports uncorrectable memory errors or a pending row remap",
                   severity="fail" if failed else "warn")]
