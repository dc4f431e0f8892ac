"""A GPU lost or broken: it fell off the bus (Xid 79), needs a reset (GSP errors, NV_ERR_RESET_REQUIRED), or
nvidia-smi cannot reach it; every job that touches it fails ('CUDA-capable device(s) is/are busy or
unavailable', 'unknown error') or hangs.

Evidence: the events of category ``gpu_lost_xid`` (:mod:`nccldiag.diagnosis.events`: Xid codes of that category
in the ``xid`` check or in kernel lines of any output, the driver's "fallen off the bus" notice, GSP timeouts,
"Reset required", Xid 45 followed by tasks hung in the kernel on its node, nvidia-smi or another NVIDIA tool hung
in the kernel beside Xid errors, CUDA's 'unknown error' of a rank,
medium), nvidia-smi's "Unable to determine the device handle
... Unknown Error", CUDA's devices-unavailable error. A GPU the driver could not initialise is ``gpu-init-failed``;
memory errors are ``gpu-memory-errors``.

Beside NVLink errors (``nvlink-error``) the knowledge table's class decides which is the cause: a GPU lost with a
worse class (a reboot, the hardware: Xid 79) than the NVLink errors' (a GPU reset) is the cause; lost with no worse
class (Xid 154 "GPU Reset Required", a GSP timeout after an NVLink error), it is what the NVLink error left, a
symptom listed after it. Both diagnoses name each other.
References: NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors); NVIDIA/open-gpu-kernel-modules#387.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "gpu-lost"
TITLE = "GPU lost or needing a reset"
FIX = ("Drain the node and reset the GPU ('nvidia-smi -r -i <id>' with nothing using it) or reboot; if it comes "
       "back and falls off again, check its seating, power and cooling (temperature under load) and the PCIe slot "
       "(AER errors on its root port), then replace the GPU. Send 'nvidia-bug-report.sh' output with an RMA.")
WORKAROUND = "exclude the GPU (CUDA_VISIBLE_DEVICES) or the node until it is repaired"
CONFIRM = "nvidia-smi; dmesg | grep -E 'NVRM: Xid|fallen off'"

LOST = rx.compile(
    r"fallen off the bus|GPU is lost|Unable to determine the device handle for GPU|NV_ERR_RESET_REQUIRED|"
    r"Reset required|GPU requires reset|GPU has fallen|GPU (?:reset|recovery) (?:required|needed)|GSP (?:RPC )?timeout")
UNAVAILABLE = rx.compile(r"busy or unavailable|cudaErrorDevicesUnavailable|CUDA_ERROR_DEVICE_UNAVAILABLE")
TEXT_RANK = 3  # what the words alone ask: a GPU reset (areas/xid.py's class 'reset')


def diagnose(inp: Inputs) -> List[Diagnosis]:
    ev = [e for e in E.of(inp, "gpu_lost_xid") if not e.check.startswith("xid.driver_init")]
    sure = [e for e in ev if e.confidence == "high"]
    told = E.clues_of(sure)
    # the words of a lost GPU where no event says it (an Xid finding's codes are its events)
    lost = [c for c in C.find(inp, LOST, ("warn", "last-error", "app", "error", "kernel", "finding"))
            if not any(c is t for t in told) and (c.finding is None or not c.finding.check.startswith("xid."))]
    busy = [c for c in C.find(inp, UNAVAILABLE, ("warn", "last-error", "app", "error"))
            if not any(c is t for t in told)]
    busy += [c for c in E.clues_of(e for e in ev if e.confidence != "high") if not any(c is b for b in busy + told)]
    found = told + lost
    if not found and not busy:
        return []
    if found:
        conf, why = "high", "the driver or nvidia-smi reports the GPU lost or in need of a reset"
    else:
        conf, why = "medium", ("CUDA found the GPU busy or unavailable, or met an unknown error in work already on it: a "
                               "GPU in a state that needs a reset, or one held by another process in exclusive "
                               "compute mode")
    summary = f"a GPU is lost or needs a reset{C.on(C.hosts(found + busy))}"
    nvlink = E.of(inp, "nvlink_error")
    tier = 0
    if nvlink:
        mine = max([e.rank for e in ev] + ([TEXT_RANK] if lost or busy else []))
        theirs = max(e.rank for e in nvlink)
        tier = 1 if mine <= theirs else 0
        summary += (f", after NVLink errors ({E.summary(nvlink, 2)}): the NVLink error is the cause" if tier else
                    f"; NVLink errors too ({E.summary(nvlink, 2)}), a lesser fault than the GPU's")
    d = C.make(sys.modules[__name__], summary, found + busy, confidence=conf, why=why,
               alternatives=(["nvlink_error: the GPU was reset or stopped answering after an NVLink error; "
                              "'nvidia-smi nvlink -s' and the Xid lines' order tell"] if nvlink else []) +
               ([] if found else ["another process holds the GPU in EXCLUSIVE_PROCESS compute mode: 'nvidia-smi -q -d "
                                  "COMPUTE' and 'nvidia-smi' tell them apart"]))
    d.tier = tier
    return [d]
