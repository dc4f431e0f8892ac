"""NVLink SHARP (NVLS) multicast set-up failing for a reason other than Fabric Manager: a known NCCL defect
(2.26.0 to 2.26.4 with drivers older than CUDA 12.4's: 'invalid argument' at NVLS buffer set-up, fixed in
2.26.5), an IMEX channel missing on multi-node NVLink (GB200 NVL), or CUDA multicast not supported by the driver.

Evidence: an NVLS WARN in NCCL's log with one of those NCCL versions, IMEX errors, or cuMulticast* failures.
References: pytorch/pytorch#150852; NCCL release notes 2.26.5; NVIDIA IMEX guide.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "nvls-multicast"
TITLE = "NVLink SHARP (multicast) set-up failed"
FIX = ("Upgrade NCCL to 2.26.5 or newer (the NVLS set-up defect of 2.26.0-2.26.4 with drivers before CUDA 12.4), "
       "or the driver; on multi-node NVLink (GB200 NVL) give the job an IMEX channel (/dev/nvidia-caps-imex-channels, "
       "the nvidia-imex service running on every node).")
WORKAROUND = "NCCL_NVLS_ENABLE=0 (collectives run without NVLink SHARP; a few percent of bandwidth on NVSwitch systems)"
CONFIRM = "NCCL_NVLS_ENABLE=0 <the job>: it works without NVLS if this is the cause"

IMEX = rx.compile(r"IMEX|imex channel|nvidia-caps-imex")
MULTICAST = rx.compile(r"cuMulticast\w*|CU_DEVICE_ATTRIBUTE_MULTICAST|multicast (?:object|support)[^\n]{0,300}?(?:fail|not)")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    nvls = signs.nvls_failures(inp)
    imex = C.find(inp, IMEX, ("warn", "last-error", "error", "app"))
    mc = C.find(inp, MULTICAST, ("warn", "last-error", "error", "app"))
    defect = nvls and signs.nvls_defect(inp)
    if not (defect or (imex and nvls) or mc):
        return []
    if defect:
        versions = [v for v in C.nccl_versions(inp) if (2, 26, 0) <= C.version_tuple(v) < (2, 26, 5)]
        what = f"NCCL {', '.join(versions)} failed to set up NVLS buffers: a defect fixed in NCCL 2.26.5"
        conf, why = "high", "this NCCL version's NVLS set-up fails 'invalid argument' with drivers older than 12.4's"
        found = nvls
    elif imex:
        what, conf, why, found = ("NVLS set-up failed for want of an IMEX channel", "high",
                                  "the NVLS failure names IMEX", imex + nvls)
    else:
        what, conf, why, found = ("CUDA multicast objects could not be created", "medium",
                                  "CUDA's multicast calls failed: the driver or GPU does not support them", mc)
    return [C.make(sys.modules[__name__], what + C.on(C.hosts(found)), found, confidence=conf, why=why,
                   alternatives=["fabric_manager: Fabric Manager down gives the same NVLS WARN; "
                                 "'nvidia-smi -q' Fabric State tells them apart"])]
