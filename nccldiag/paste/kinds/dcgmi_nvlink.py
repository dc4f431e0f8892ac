"""``dcgmi nvlink -s`` (``--link-status``): each GPU's and NVSwitch's link states (``gpuId 0:`` then ``U U D _``),
under DCGM's ``NvLink Link Status`` box and above its ``Key: Up=U, Down=D, Disabled=X, Not Supported=_``; read by
the DCGM area's ``dcgmi_nvlink`` source."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.areas.dcgm import ENTITY, STATES
from nccldiag.paste.kinds.base import Context, one

NAME = "dcgmi nvlink"
WORDS = ("gpuId ", "physicalId ", "NvLink Link Status", "Up=U")
SOURCES = ("dcgmi_nvlink",)
GAPS = 1

_FRAME = rx.compile(r"[ \t]{0,40}(?:\+-{4,80}\+|\|[ \t]{0,10}NvLink Link Status[ \t]{0,10}\||GPUs:|NvSwitches:|"
                    r"No NvSwitches found\.|Key: Up=U, Down=D.{0,80})[ \t]{0,40}$")


def anchor(text: str) -> bool:
    return bool(ENTITY.match(text))


def member(text: str) -> bool:
    return bool(ENTITY.match(text) or STATES.match(text) or _FRAME.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("dcgmi_nvlink", lines)
