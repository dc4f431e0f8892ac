"""Fabric Manager down: on an NVSwitch system (HGX, DGX) the GPUs join the NVLink fabric only once NVIDIA Fabric
Manager has set it up. When it is not running, failed to start (its version differs from the driver's, its
pre-check refused), or was restarted without a GPU reset, CUDA answers 'system not yet initialized' and NCCL's NVLS
(NVLink SHARP) set-up fails with 'invalid argument'; jobs fail at init or hang.

Evidence: the fabric manager finding of ``check`` (service failed or inactive, version mismatch, pre-check
refusal, fabric state not completed); cudaErrorSystemNotReady ('system not yet initialized') in any output; an
NVLS WARN in NCCL's log (medium: the same WARN also comes from an NCCL defect, see ``nvls-multicast``).
References: NVIDIA Fabric Manager user guide (start order, driver version match); NVIDIA/nccl#1338.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "fabric-manager"
TITLE = "Fabric Manager not running or not in step with the GPUs"
CATEGORY = "fabric_manager"
FIX = ("Bring Fabric Manager up in step with the driver: its version must equal the driver's "
       "('nv-fabricmanager --version' vs 'nvidia-smi'); 'systemctl status nvidia-fabricmanager' and its journal say "
       "why it stopped (on NVL5 systems such as HGX B200 it also needs the ib_umad module and NVLSM). After a "
       "Fabric Manager restart reset the GPUs (or reboot) so that they join the fabric; 'nvidia-smi -q' shows "
       "Fabric State Completed when they have.")
WORKAROUND = "NCCL_NVLS_ENABLE=0 avoids NVLink SHARP only; collectives over NVLink still need the fabric"
CONFIRM = "systemctl status nvidia-fabricmanager; nvidia-smi -q | grep -A3 -i fabric"

NOT_READY = re.compile(r"system not yet initiali[sz]ed|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY")
FM_TEXT = re.compile(r"(?i)(?:fabric ?manager|nv-fabricmanager|nvidia-fabricmanager)[^\n]*"
                     r"(?:cannot be started|failed|not running|inactive|don'?t match|mismatch|error)")


NVLS_TEXT = re.compile(r"(?:NVLS|NVLink SHARP|nvls\.cc)[^\n]*(?:[Ff]ail|[Ee]rror|invalid|not supported|cannot)|"
                       r"(?:[Ff]ail|[Ee]rror)[^\n]*(?:NVLS|NVLink SHARP)|Fabric Manager or NVSwitches")


def nvls_failures(inp: Inputs) -> List[C.Clue]:
    """NCCL's NVLS set-up failures: the WARN kind, CUDA failures in its nvls source file, and the words NCCL 2.2x
    prints ('Failed to bind NVLink SHARP (NVLS) Multicast memory ... Fabric Manager or NVSwitches')."""
    out = []
    for c in C.find(inp, r".", ("warn", "last-error")):
        w = c.warn
        if w is not None and (w.kind == "nvls" or "nvls" in (w.file or "").lower()):
            out.append(c)
    out += [c for c in C.find(inp, NVLS_TEXT, ("warn", "last-error", "error", "app")) if c not in out]
    # 'no algorithm ... NCCL_ALGO was set to NVLS' is the environment's doing, not an NVLS set-up failure
    return [c for c in out if not _ASKED.search(c.text)]


_ASKED = re.compile(r"NCCL_ALGO|no algorithm/protocol")


def nvls_defect(inp: Inputs) -> bool:
    """NCCL 2.26.0 to 2.26.4: NVLS buffer set-up fails 'invalid argument' with drivers before CUDA 12.4's
    (fixed in 2.26.5, pytorch/pytorch#150852)."""
    return any((2, 26, 0) <= C.version_tuple(v) < (2, 26, 5) for v in C.nccl_versions(inp))


def stopped_at_nvls(inp: Inputs) -> List[C.Clue]:
    """A log whose init stopped right after NVLS set-up (the last set-up line is an NVLS one): an NVLS buffer
    registration that never returned."""
    from nccldiag.diagnosis.rules import unexplained

    out = []
    for ls in inp.log_sets():
        f = ls.facts
        nv = [n for n in f.nvls if n.kind == "comm"]
        if not nv or unexplained.stopped_in_init(f) is None:
            continue
        last_other = max([c.at.lineno for c in f.channels[-50:]] + [c.at.lineno for c in f.connected[-50:]] + [0])
        if nv[-1].at.lineno > last_other:
            out.append(C.Clue("error", nv[-1].text, nv[-1].at, nv[-1].text, nv[-1].at.host))
    return out


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = C.findings(inp, "nvlink.fabric")
    ready = C.find(inp, NOT_READY)
    text = C.find(inp, FM_TEXT, ("error", "kernel", "app", "warn", "last-error"))
    nvls = [] if nvls_defect(inp) or C.find(inp, r"IMEX|imex") else nvls_failures(inp)
    nvls += [] if nvls else stopped_at_nvls(inp)
    if not (node or ready or text or nvls):
        return []
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node] + ready + text + nvls
    if node or ready or text:
        conf, why = "high", ("the fabric manager is not running or the GPUs are not in the fabric"
                             if node or text else "CUDA says the system is not yet initialised: on an NVSwitch "
                             "system that is the fabric not set up by Fabric Manager")
    else:
        conf, why = "medium", ("NCCL's NVLink SHARP buffer set-up failed; on an NVSwitch system that is most often "
                               "Fabric Manager not (re)started in step with the GPUs")
    failed = any(f.status.value == "fail" for f in node) or bool(ready or text or nvls)
    return [C.make(sys.modules[__name__], f"Fabric Manager / NVLink fabric not ready{C.on(C.hosts(found))}",
                   found, confidence=conf, why=why, severity="fail" if failed else "warn",
                   alternatives=[] if node else ["nvls_multicast: an NCCL defect, IMEX channel set-up or a container "
                                                 "that does not expose /dev/nvidia-caps gives the same NVLS WARN; "
                                                 "'systemctl status nvidia-fabricmanager' and NCCL_NVLS_ENABLE=0 "
                                                 "tell them apart"])]
