"""``nvidia-smi topo -m`` (the GPU/NIC matrix: ``NV12``, ``PIX``, ``SYS`` ...) and ``topo -p2p r|w`` (``OK``,
``CNS``, ``GNS`` ...), under their ``GPU0 GPU1 ...`` header, with the legend after them."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, command, one

NAME = "nvidia-smi topo"
WORDS = ("GPU0",)
SOURCES = ("topo_m", "topo_p2p_r", "topo_p2p_w")
GAPS = 1
MIN = 2

# the header; the command glued before it where a prompt ate the line break ('nvidia-smi topo -m    GPU0  GPU1')
_HEADER = rx.compile(r"[ \t]{0,40}(?:nvidia-smi[^\t]{0,100}?[ \t]{1,40})?GPU0[ \t]{1,20}(?:GPU1|CPU Affinity|NIC0|mlx\d)")
_ROW = rx.compile(r"[ \t]{0,40}(?:GPU\d{1,3}|NIC\d{1,3}|mlx\d_\w{1,20}|\w{1,40})[ \t]{1,20}(?:X|NV\d{1,3}|PIX|PXB|PHB|"
                  r"NODE|SYS|SOC|PCI|OK|CNS|GNS|TNS|NS|U|DR)\b")
_LEGEND = rx.compile(r"[ \t]{0,40}(?:Legend:|NIC Legend:|[A-Z#]{1,4}[ \t]{1,8}=[ \t]|NIC\d{1,3}:)")
_P2P = rx.compile(r"[ \t](?:OK|CNS|GNS|TNS|NS)\b")
_NV = rx.compile(r"[ \t](?:NV\d{1,3}|PIX|PXB|PHB|NODE|SYS|SOC)\b")
_W = rx.compile(r"-p2p[ \t]{1,4}w")


def anchor(text: str) -> bool:
    return bool(_HEADER.match(text))


def member(text: str) -> bool:
    return bool(_HEADER.match(text) or _ROW.match(text) or _LEGEND.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    rows = [line for line in lines if _ROW.match(line)]
    if not rows:
        return {}
    if any(_NV.search(r) for r in rows):
        return one("topo_m", lines)
    if any(_P2P.search(r) for r in rows):
        return one("topo_p2p_w" if command(context, _W) else "topo_p2p_r", lines)
    return {}
