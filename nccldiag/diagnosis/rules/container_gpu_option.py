"""A container started without the option that gives it the node's GPUs: a shell transcript shows the command
(``singularity exec``/``apptainer run`` without ``--nv``, ``docker run``/``podman run`` without ``--gpus``, the
NVIDIA runtime or a CDI device) and, right after it, the program inside failing to reach the driver: NVML's
'Driver/library version mismatch' or 'Failed to initialize NVML' (the container's own user-space driver libraries,
or none, against the host's kernel module), 'NVIDIA-SMI has failed', 'no CUDA-capable device is detected', no
nvidia-smi at all.

Apptainer binds the host's driver libraries and GPU devices into a container only with ``--nv`` (or ``--nvccli``);
without it, the libraries of the image (or none) meet the host's kernel module. Docker and Podman give GPUs with
``--gpus``, ``--runtime=nvidia`` or ``--device nvidia.com/gpu=...``. What the program says then (a version
mismatch, no driver) is not the node's fault: the node's driver is fine outside the container.

Evidence: the paste reader's pairs of a container command without a GPU option and the GPU failure printed after
it, before the next prompt (:mod:`nccldiag.paste.reader`).
References: NCAR HPC documentation, 'Working with containers' (tests/cases/node-ncar-docs-casper-singularity-exec-
without-nv-nvml-driver-library-mismatch: the same command works with --nv); Apptainer user guide, 'GPU Support'
(--nv, --nvccli); Docker documentation, 'GPUs' (--gpus).
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "container-gpu-option-missing"
TITLE = "Container started without its GPU option"
FIX = ("Start the container with the option that gives it the node's GPUs and driver libraries: Apptainer/"
       "Singularity 'exec --nv' (or '--nvccli'); Docker 'run --gpus all' (the NVIDIA Container Toolkit installed); "
       "Podman 'run --device nvidia.com/gpu=all' (CDI); in a job script or launcher wrapper, the same option on its "
       "container command.")
CONFIRM = "run the same command with the GPU option (singularity exec --nv IMAGE nvidia-smi; docker run --rm --gpus all IMAGE nvidia-smi) and nvidia-smi on the host"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    pairs = list(inp.pasted.container_no_gpu) if inp.pasted is not None else []
    if not pairs:
        return []
    ev: List[Evidence] = []
    for command, failure in pairs[:2]:
        ev.append(Evidence("log", f"{command.text}  (a container started without a GPU option)",
                           f"{command.path}:{command.lineno}", command.host))
        ev.append(Evidence("log", failure.text, f"{failure.path}:{failure.lineno}", failure.host))
    nodes = sorted({c.host for c, _ in pairs if c.host})
    said = pairs[0][1].text
    return [C.make(sys.modules[__name__], f"a container was started without the option that gives it the node's "
                   f"GPUs{C.on(nodes)}, and the program in it could not use the driver: {said[:160]}", extra=ev,
                   nodes=nodes, confidence="high",
                   why=("the command that started the container has no GPU option (Apptainer's --nv, Docker's "
                        "--gpus, the NVIDIA runtime, a CDI device), and right after it the program inside failed to "
                        "reach the NVIDIA driver: without the option the container gets neither the host's driver "
                        "libraries nor its GPU devices"),
                   alternatives=["cuda_driver_mismatch: a driver updated on the host without a reboot gives the same "
                                 "'Driver/library version mismatch' outside the container too; nvidia-smi on the host "
                                 "tells"])]
