"""Fabric Manager down: on an NVSwitch system (HGX, DGX) the GPUs join the NVLink fabric only once NVIDIA Fabric
Manager has set it up. When it is not running, failed to start (its version differs from the driver's, its
pre-check refused), or was restarted without a GPU reset, CUDA answers 'system not yet initialized' and NCCL's NVLS
(NVLink SHARP) set-up fails with 'invalid argument'; jobs fail at init or hang.

Evidence: the fabric manager finding of ``check`` (service failed or inactive, version mismatch, pre-check
refusal, fabric state not completed); the events of category ``fabric_manager`` (cudaErrorSystemNotReady, 'system
not yet initialized', in any output); the fabric manager's own failures in any output: its start failing or
refused (systemd's 'Failed to start NVIDIA fabric manager service.'), a config item with an invalid value, a wait
for it that timed out (a VM's or container's init waiting for 'FM starting NvLink Inband'), NVLSM (the NVLink subnet
manager it starts on NVLink 5 systems) that cannot open the MAD devices because ib_umad is not loaded, its start
wrapper printing its usage (arguments refused: a caller of the interface before 570.158.01); nvidia-smi -q's Fabric
'Status' of an NVML error ('Insufficient Resources': the GPU could not join its NVLink partition or clique); an NVLS
WARN in NCCL's log (medium: the same WARN also comes from an NCCL defect, see ``nvls-multicast``).
References: NVIDIA Fabric Manager user guide (start order, driver version match, NVLSM on NVLink 5 systems);
NVIDIA/nccl#1338; linux-rdma/rdma-core libibumad/umad.c at e3aa8d9 (get_abi_version's 'is ib_umad module loaded?');
NVIDIA/gpu-driver-container#383 (the start wrapper's options since driver 570.158.01).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "fabric-manager"
TITLE = "Fabric Manager not running or not in step with the GPUs"
FIX = ("Bring Fabric Manager up in step with the driver: its version must equal the driver's "
       "('nv-fabricmanager --version' vs 'nvidia-smi'); 'systemctl status nvidia-fabricmanager' and its journal say "
       "why it stopped (on NVL5 systems such as HGX B200 it also needs the ib_umad module and NVLSM). After a "
       "Fabric Manager restart reset the GPUs (or reboot) so that they join the fabric; 'nvidia-smi -q' shows "
       "Fabric State Completed when they have.")
WORKAROUND = "NCCL_NVLS_ENABLE=0 avoids NVLink SHARP only; collectives over NVLink still need the fabric"
CONFIRM = "systemctl status nvidia-fabricmanager; nvidia-smi -q | grep -A3 -i fabric"

NOT_READY = rx.compile(r"system not yet initiali[sz]ed|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY")
FM_TEXT = rx.compile(r"(?i)(?:fabric ?manager|nv-fabricmanager|nvidia-fabricmanager)[^\n]{0,200}?"
                     r"(?:cannot be started|failed|not running|inactive|don'?t match|mismatch|error|"
                     r"invalid (?:value|argument|config))|"
                     # a wait for it that timed out ('timeout waiting for: FM starting NvLink Inband')
                     r"(?:timeout|timed out) waiting for:? {0,3}(?:FM|fabric ?manager)\b|"
                     r"\bFM starting NvLink Inband\b[^\n]{0,80}(?:timeout|timed out)|"
                     # systemd's own line when the unit's start failed ('Failed to start %s.' with the unit's
                     # Description, 'NVIDIA fabric manager service', or its name with it on newer systemd)
                     r"[Ff]ailed to start {1,3}(?:nvidia-fabricmanager\.service|NVIDIA fabric ?manager)|"
                     # NVLSM, the NVLink subnet manager Fabric Manager starts on NVLink 5 systems, that cannot open
                     # the MAD devices: libibumad's 'can't read ABI version from %s/%s (%m): is ib_umad module
                     # loaded?' (linux-rdma/rdma-core libibumad/umad.c), prefixed with the program's name
                     r"\bnvlsm\b[^\n]{0,200}?can't read ABI version from|"
                     # the start wrapper of Fabric Manager 570+ printing its usage: it refused its arguments (a
                     # caller of the older interface, which took the configuration file as a bare argument)
                     r"\bNVIDIA Fabric Manager Start Script\s*$")
# nvidia-smi -q's Fabric section: a Status that is an NVML error (Insufficient Resources: no partition or clique)
FABRIC_STATUS = rx.compile(r"^\s{0,40}Status\s{1,60}:\s{0,4}Insufficient Resources\s*$")



def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = C.findings(inp, "nvlink.fabric")
    told = E.clues_of(E.of(inp, "fabric_manager"))
    ready = told + [c for c in C.find(inp, NOT_READY) if not any(c is t for t in told)]
    text = C.find(inp, FM_TEXT, ("error", "kernel", "app", "warn", "last-error")) + \
        C.find(inp, FABRIC_STATUS, ("error",))
    nvls = [] if signs.nvls_defect(inp) or C.find(inp, r"IMEX|imex") else signs.nvls_failures(inp)
    nvls += [] if nvls else signs.stopped_at_nvls(inp)
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
