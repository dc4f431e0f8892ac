"""``nvidia-smi --query-gpu=... --format=csv``: its header (``index, name, pci.bus_id, ...``) and a row per GPU, the
gpu area's ``gpu_query`` source."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, one

NAME = "nvidia-smi --query-gpu"
WORDS = ("pci.bus_id", "index,", "index, ", "name, ", "vbios_version", "pcie.link", "memory.used", "driver_version")
SOURCES = ("gpu_query",)
GAPS = 0
UP = False

_FIELD = r"(?:[a-z_]{2,40}(?:\.[a-z_]{1,40}){0,4}(?: \[[^\]]{1,20}\])?)"
_HEADER = rx.compile(r"[ \t]{0,4}" + _FIELD + r"(?:,[ \t]{0,2}" + _FIELD + r"){1,60}[ \t]{0,4}$")
_ROW = rx.compile(r"[ \t]{0,4}[^,\s][^,]{0,200}(?:,[^,]{0,200}){1,60}$")


def anchor(text: str) -> bool:
    return bool(_HEADER.match(text)) and any(w in text for w in ("index", "name", "pci.bus_id", "uuid", "serial"))


def member(text: str) -> bool:
    return bool(_ROW.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    if len(lines) < 2:
        return {}
    width = lines[0].count(",")
    rows = [line for line in lines[1:] if line.count(",") == width or elided(line)]
    return one("gpu_query", [lines[0]] + rows) if any(not elided(r) for r in rows) else {}
