"""CUDA runtime, driver or libraries that do not fit together: NCCL or the framework built for a newer CUDA than
the driver supports ('API call is not supported in the installed CUDA driver', 'CUDA driver version is
insufficient for CUDA runtime version', 'forward compatibility was attempted on non supported HW'), a kernel
module and userspace driver of different versions ('Driver/library version mismatch').

Evidence: those errors in any output, the kernel's 'NVRM: API mismatch' (with the versions named, elided
'XXX.XX' or reworded); the events of category ``cuda_driver_mismatch`` (the ``xid.driver_version`` finding: the API
mismatch, GSP firmware of another version than the module, two of the driver's modules of different versions; the
CUDA errors of ``knowledge/cuda.toml``); NCCL's build CUDA ('NCCL version X+cudaY.Z') newer than the driver's
('cudaDriverVersion'), beside a failure.
References: NVIDIA/nccl#496; CUDA compatibility guide.
"""
from __future__ import annotations

import re
import sys
from typing import List, Optional

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence, log_evidence

ID = "cuda-driver-mismatch"
TITLE = "CUDA, driver or libraries do not fit together"
FIX = ("Install a driver that supports the CUDA the job's NCCL/framework was built for (CUDA 12.x needs driver "
       "525+, 12.4+ needs 550+ for all features, 12.8 needs 570+), or use a build for the installed driver's CUDA; "
       "after a driver update reboot (or reload the kernel module) so that module and libraries match.")
CONFIRM = "nvidia-smi (driver and its CUDA version) against the 'NCCL version X+cudaY' line and torch.version.cuda"

MISMATCH = rx.compile(r"API call is not supported in the installed CUDA driver|"
                      r"CUDA driver version is insufficient for CUDA runtime version|"
                      r"forward compatibility was attempted on non supported HW|"
                      r"unsupported display driver / cuda driver combination|Driver/library version mismatch|"
                      r"provided PTX was compiled with an unsupported toolchain|cudaErrorInsufficientDriver|"
                      r"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE|cudaErrorCallRequiresNewerDriver|"
                      r"NVML library version mismatch|driver/library version mismatch|NVRM: API mismatch|"
                      r"wasn't built with CUDA runtime >= [\d.]+ or if the installed CUDA driver <", re.I)


# The kernel module and the user-space libraries of two driver versions (NVML's and the kernel's words for it).
_SPLIT = rx.compile(r"Driver/library version mismatch|NVML library version mismatch|NVRM: API mismatch", re.I)


def _newer_build(inp: Inputs) -> Optional[Evidence]:
    """NCCL built for a CUDA the driver cannot run: of a newer major version ('NCCL version 2.x+cuda12.4' with
    cudaDriverVersion 11080), or before CUDA 11 of a newer minor one. Within a major version from 11 on, a build of
    a newer minor version runs on the older driver (CUDA's minor version compatibility: NCCL 2.26.5+cuda12.9 on a
    12.8 driver in a run that worked, tests/cases/gpu-tinygrad45-...-healthy)."""
    for ls in inp.log_sets():
        f = ls.facts
        drivers = [n for n in f.notes if n.kind == "cuda_driver"]
        if not drivers or not f.versions:
            continue
        m = re.search(r"cudaDriverVersion (\d+)", drivers[0].text)
        built = next((v for v in f.versions if v.cuda), None)
        if not m or built is None:
            continue
        drv = int(m.group(1))
        major, minor = (int(x) for x in built.cuda.split(".")[:2])
        if major > drv // 1000 or major < 11 and major * 1000 + minor * 10 > drv:
            return log_evidence(built.at, f"{built.text}  (built for CUDA {built.cuda}; the driver supports "
                                          f"{drv // 1000}.{drv % 1000 // 10})")
    return None


def diagnose(inp: Inputs) -> List[Diagnosis]:
    told = E.clues_of(E.of(inp, "cuda_driver_mismatch"))
    found = told + [c for c in C.find(inp, MISMATCH, ("warn", "last-error", "app", "error", "kernel"))
                    if not any(c is t for t in told)]
    newer = _newer_build(inp)
    failed = bool(C.find(inp, r".", ("app",))) or any(w.failure for ls in inp.log_sets() for w in ls.facts.warns)
    if not found and not (newer and failed):
        return []
    split = found and all(_SPLIT.search(c.text) for c in found)
    return [C.make(sys.modules[__name__],
                   ("the NVIDIA kernel module and the driver's user-space libraries are of different versions"
                    if split else "the CUDA the job was built for does not fit the installed driver")
                   + C.on(C.hosts(found)), found, extra=[newer] if newer else [],
                   confidence="high" if found else "medium",
                   why=("the loaded kernel module is not the version of the driver's libraries (a driver updated "
                        "without a reboot or a module reload, or a module built for another version)" if split else
                        "CUDA said the driver does not provide what the build needs" if found else
                        "NCCL was built for a newer CUDA than the driver supports, and the run failed"))]
