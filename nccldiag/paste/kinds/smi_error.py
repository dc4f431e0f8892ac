"""What ``nvidia-smi`` prints when it cannot report (``Failed to initialize NVML: Driver/library version
mismatch``, ``NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver``, ``Unable to
determine the device handle for GPU0000:01:00.0: Unknown Error``, ``No devices were found``): on a node, the whole
output of each ``nvidia-smi`` query the collection runs, which the GPU area reads as the driver's failure."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, joined

NAME = "nvidia-smi failure"
WORDS = ("Failed to initialize NVML", "NVIDIA-SMI has failed", "Unable to determine the device handle",
         "No devices were found")
SOURCES = ("gpu_query", "nvidia_smi_q", "nvidia_smi_full")
GAPS = 0
UP = False

_SAYS = rx.compile(r"[ \t]{0,40}(?:Failed to initialize NVML: |NVIDIA-SMI has failed |Unable to determine the device "
                   r"handle for GPU|No devices were found)")


def anchor(text: str) -> bool:
    return bool(_SAYS.match(text))


member = anchor


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    text = joined(lines)
    return {s: text for s in SOURCES} if text.strip() else {}
