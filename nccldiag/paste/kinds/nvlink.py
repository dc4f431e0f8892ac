"""``nvidia-smi nvlink -s`` (``Link 0: 25 GB/s``, ``<inactive>``) and ``-e`` (``Link 0: Replay Errors: 0``): a
``GPU 0: NVIDIA A100 (UUID: ...)`` line per GPU, its links indented under it."""
from __future__ import annotations

import re
from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, one

NAME = "nvidia-smi nvlink"
WORDS = ("(UUID: GPU-", "Link 0: ", "<inactive>", "links are inactive")
SOURCES = ("nvlink_status", "nvlink_errors")
GAPS = 1

_GPU = rx.compile(r"[ \t]{0,40}GPU \d{1,3}: .{1,200}")
_LINK = rx.compile(r"[ \t]{1,40}Link \d{1,3}: ")
_NVML = rx.compile(r"[ \t]{0,40}NVML: ")
_ERRORS = rx.compile(r"Link \d{1,3}: [A-Za-z ]{1,40}Errors?:", re.I)


def anchor(text: str) -> bool:
    return bool(_LINK.match(text) or (_GPU.match(text) and ("UUID" in text or "NVIDIA" in text or "Tesla" in text)))


def member(text: str) -> bool:
    return bool(_GPU.match(text) or _LINK.match(text) or _NVML.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    if not any(_LINK.match(line) or _NVML.match(line) for line in lines):
        return {}
    return one("nvlink_errors" if any(_ERRORS.search(line) for line in lines) else "nvlink_status", lines)
