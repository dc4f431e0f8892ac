"""``lspci`` (``-vvv``, ``-nn``, ``-D``; or a ``grep`` of its device lines): a device line
(``0000:3b:00.0 3D controller: NVIDIA Corporation ...``), its capabilities indented under it."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, indented, one

NAME = "lspci"
WORDS = ("PCI bridge", "controller: ", "Capabilities: [", "LnkSta:", "LnkCap:", "ACSCtl:", "ACSCap:")
SOURCES = ("lspci",)
GAPS = 1

_DEVICE = rx.compile(r"[ \t]{0,4}(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7][ \t][A-Za-z][\w ./-]{0,60}"
                     r"(?:\[[0-9a-f]{4}\])?:[ \t]")
_CAPABILITY = rx.compile(r"[ \t]{1,20}(?:Capabilities: \[|LnkSta:|LnkCap:|ACSCtl:|ACSCap:)")
# a bridge's ACS line with its indentation gone (a host prefix or a paste took it): its bits name it alone
_ACS = rx.compile(r"[ \t]{0,20}ACSC(?:tl|ap):[ \t]{1,8}SrcValid[+-][ \t]")
# a link register line with its indentation gone ('lspci -vvv | grep -i speed', or a page that lost the
# indentation): 'LnkSta: Speed 8GT/s (downgraded), Width x2 (downgraded)'; its Speed/Port word names it alone
_LINK = rx.compile(r"[ \t]{0,20}Lnk(?:Cap|Sta|Ctl2):[ \t]{1,8}(?:Port #|Speed |Target Link Speed)")
# a register's continuation line of bits with its indentation gone: 'ClockPM+ Surprise- LLActRep- BwNot-' under
# LnkCap, 'TrErr- Train- SlotClk+ DLActive-' under LnkSta; three or more bits, each a name and its + or -
_BITS = rx.compile(r"[ \t]{0,20}(?:[A-Za-z][\w/.]{0,24}[+-][ \t]{1,4}){2,12}[A-Za-z][\w/.]{0,24}[+-][ \t]{0,4}$")


def anchor(text: str) -> bool:
    return bool(_DEVICE.match(text) or _CAPABILITY.match(text) or _ACS.match(text) or _LINK.match(text))


def member(text: str) -> bool:
    return bool(_DEVICE.match(text) or indented(text) or elided(text) or _ACS.match(text) or _LINK.match(text)
                or _BITS.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("lspci", lines)
