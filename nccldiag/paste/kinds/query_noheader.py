"""``nvidia-smi --query-gpu=index,... --format=csv,noheader``: the command, then a row per GPU with no header (the
fields are the command's), the gpu area's ``gpu_query`` source. A row with more cells than the command asked (a
poster's note after the value: ``1, Reset   <= GPU is unusable, reset required``) is read in its first cells."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, one

NAME = "nvidia-smi --query-gpu (noheader)"
WORDS = ("--query-gpu=",)
SOURCES = ("gpu_query",)
GAPS = 0
UP = False

_FIELD = r"[a-z_]{2,40}(?:\.[a-z_]{1,40}){0,4}"
_COMMAND = rx.compile(r"[ \t]{0,4}(?:sudo[ \t]{1,4})?nvidia-smi[ \t]{1,4}(?:[^\n]{0,200}?[ \t])?--query-gpu=(?P<fields>index"
                      r"(?:,[ \t]{0,2}" + _FIELD + r"){1,60})[ \t][^\n]{0,200}?--format=csv,(?:[a-z]{1,10},){0,3}noheader\b")
_ROW = rx.compile(r"[ \t]{0,4}[0-9]{1,3},[^\n]{1,600}$")


def anchor(text: str) -> bool:
    return bool(_COMMAND.match(text))


def member(text: str) -> bool:
    return bool(_ROW.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    m = _COMMAND.match(lines[0]) if lines else None
    if m is None:
        return {}
    fields = [f.strip() for f in m.group("fields").split(",")]
    rows = []
    for line in lines[1:]:
        if elided(line):
            rows.append(line)
            continue
        cells = line.split(",")
        if len(cells) < len(fields):
            continue
        rows.append(",".join(cells[:len(fields)]).rstrip())
    return one("gpu_query", [", ".join(fields)] + rows) if any(not elided(r) for r in rows) else {}
