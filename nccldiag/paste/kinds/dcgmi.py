"""``dcgmi diag``'s result table (``| GPU Memory | Fail - GPU: 0 |``, ``| Error | GPU 3 has uncorrectable memory
errors ...``), a result wrapped over several rows of its cell kept whole; read by the GPU health area's
``dcgmi_diag`` source."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "dcgmi diag"
WORDS = ("| Diagnostic", "Deployment", "| GPU Memory", "Fail - GPU", "Pass - GPU", "| Error ", "| Warning ")
SOURCES = ("dcgmi_diag",)
GAPS = 0
MIN = 1

_ROW = rx.compile(r"[ \t]{0,40}\|.{0,400}\|[ \t]{0,40}$")
_RULE = rx.compile(r"[ \t]{0,40}\+[-=+]{4,400}[ \t]{0,40}$")
_CELL = rx.compile(r"[ \t]{0,40}\|[ \t]{0,40}(?:Diagnostic|Deployment|GPU Memory|Error|Warning|Memory|PCIe|NVLink|"
                   r"Diagnostic|Targeted|SM Stress|Memory Bandwidth|Software|Integration|Hardware|Stress|Info|"
                   r"Blacklist|Denylist|NVML Library|CUDA Main Library|Permissions|Persistence Mode|Environment|"
                   r"Page Retirement|Graphics Processes|Inforom|EUD|Pulse Test)\b[^|]{0,200}\|")


def anchor(text: str) -> bool:
    return bool(_CELL.match(text)) or ("Fail - GPU" in text and bool(_ROW.match(text)))


def member(text: str) -> bool:
    return bool(_ROW.match(text) or _RULE.match(text) or text.lstrip().startswith("|"))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("dcgmi_diag", lines)
