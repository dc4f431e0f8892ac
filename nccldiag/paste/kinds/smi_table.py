"""``nvidia-smi``'s table (the ``| NVIDIA-SMI 535.129.03  Driver Version: ...`` box, its GPUs and processes) and the
warnings it prints after it (``WARNING: infoROM is corrupted at gpu ...``), read as the report's text."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "nvidia-smi"
WORDS = ("NVIDIA-SMI ",)
SOURCES = ("nvidia_smi_full",)
GAPS = 1
MIN = 3

_HEAD = rx.compile(r"[ \t]{0,40}\|[ \t]{0,4}NVIDIA-SMI[ \t]{1,4}\d")
_ROW = rx.compile(r"[ \t]{0,40}[|+]")
_DATE = rx.compile(r"[ \t]{0,40}[A-Z][a-z]{2}[ \t]{1,2}[A-Z][a-z]{2}[ \t]{1,2}\d{1,2}[ \t]\d\d:\d\d:\d\d[ \t]\d{4}[ \t]{0,40}$")
SAYS = rx.compile(r"[ \t]{0,40}(?:WARNING|ERROR|Unable to determine the device handle|Failed to initialize NVML|"
                  r"NVIDIA-SMI has failed|No devices were found|Unable to|Failed)\b")


def anchor(text: str) -> bool:
    return bool(_HEAD.match(text))


def member(text: str) -> bool:
    return bool(_ROW.match(text) or _DATE.match(text) or SAYS.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("nvidia_smi_full", lines)
