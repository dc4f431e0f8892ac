"""The GPU Operator's driver container not ready: in a pod listing ('kubectl get pods -n gpu-operator'), the driver
daemonset's pod on a node (nvidia-driver-daemonset-..., or nvidia-gpu-driver-<os>-... of an NVIDIADriver resource)
is failing or not ready (READY 0/2 with restarts, CrashLoopBackOff, Init:Error). Every other operand on that node
(the container toolkit, the device plugin, GPU feature discovery, DCGM, the validator) waits in Init for the
driver, so the node offers no GPU; the driver container's own log says why it does not come up (a kernel it has no
packages for, a download that fails, a driver already installed on the host, an Xid at load).

Evidence: the failure lexicon's ``pod-failing`` lines whose pod is the driver daemonset's.
References: NVIDIA GPU Operator documentation, 'Troubleshooting the NVIDIA GPU Operator', 'GPU Operator pods are
stuck in Init' (tests/cases/node-gpuoperator-docs-operand-pods-init-driver-daemonset-not-ready: the operands in
Init:0/1 behind nvidia-driver-daemonset 0/2 Running with 3 restarts); the GPU Operator's driver daemonset and
NVIDIADriver custom resource (the pod names).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "gpu-driver-pod-not-ready"
TITLE = "GPU Operator's driver container not ready"
FIX = ("Read why the driver container does not come up: 'kubectl logs -n gpu-operator <driver pod> -c "
       "nvidia-driver-ctr' (and -c k8s-driver-manager), 'kubectl describe pod' for its events, 'dmesg | grep -iE "
       "\"nvrm|xid\"' on the node; the usual causes are a kernel the driver image has no packages for (pre-compiled "
       "drivers, or a kernel-headers download that fails), a driver already installed on the host "
       "(driver.enabled=false then), and a proxy or mirror the container cannot reach. The operands start once it is "
       "ready.")
CONFIRM = "kubectl get pods -n gpu-operator -o wide; kubectl logs -n gpu-operator <nvidia-driver-daemonset pod> -c nvidia-driver-ctr"

DRIVER_POD = rx.compile(r"(?:^|[^\w-])(?P<pod>nvidia-(?:gpu-)?driver-(?:daemonset|[a-z]{2,20}\d[\w.]{0,20})-[\w.-]{1,80})\s")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    lines = [(line, m) for line in inp.failure_lines or [] if line.shape == "pod-failing"
             for m in [DRIVER_POD.search(line.text)] if m]
    if not lines:
        return []
    ev = [Evidence("log", line.text.strip(), line.ref, line.host) for line, _ in lines[:3]]
    pods = ", ".join(dict.fromkeys(m.group("pod") for _, m in lines))
    return [C.make(sys.modules[__name__], f"the GPU Operator's driver container is failing or not ready ({pods}): "
                   "the operands that need the driver wait for it and the node offers no GPU", extra=ev,
                   nodes=sorted({line.host for line, _ in lines if line.host}), confidence="medium",
                   why=("the pod listing shows the driver daemonset's pod not ready or crash-looping; every other "
                        "GPU Operator pod of the node waits in Init until the driver is loaded"))]
