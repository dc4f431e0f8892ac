"""``nvidia-smi dmon``: a header naming the columns (``# gpu   pwr  gtemp  mtemp     sm    mem ...``, ``-s u``'s
``# gpu     sm    mem    enc    dec``; ``-o DT`` puts ``#Date`` and ``Time`` first), its units line (``# Idx     W
C ...``), then a row per GPU per sample. No area reads it: it is read and shown (a sampled utilisation, power and
clock reading says nothing broken or healthy by itself)."""
from __future__ import annotations


from nccldiag import rx
from nccldiag.paste.kinds.base import shown_only

NAME = "nvidia-smi dmon"
WORDS = ("gpu ",)
SOURCES = ()
CONTEXT = True
GAPS = 1
UP = False

# the columns dmon names (nvidia-smi's dmon groups p, u, c, v, m, e, t): a header holds 'gpu' and one of them
_HEAD = rx.compile(
    r"[ \t]{0,40}(?:#[ \t]{0,4})?(?:Date[ \t]{1,12})?(?:Time[ \t]{1,12})?gpu[ \t]{1,12}"
    r"(?:pwr|gtemp|mtemp|sm|mem|enc|dec|jpg|ofa|mclk|pclk|pviol|tviol|fb|bar1|ccpm|sbecc|dbecc|pci|rxpci|txpci)\b")
# the units line: '# Idx     W      C      C      %      %      %      %    MHz    MHz'
_UNITS = rx.compile(r"[ \t]{0,40}(?:#[ \t]{0,4})?(?:YYYYMMDD[ \t]{1,12})?(?:HH:MM:SS[ \t]{1,12})?Idx\b")
# a sample: the GPU's index, then numbers or '-' ('    0     96      0      0      0', '0  4  40  -  2  -')
_ROW = rx.compile(r"[ \t]{0,40}(?:\d{8}[ \t]{1,12})?(?:\d{2}:\d{2}:\d{2}[ \t]{1,12})?\d{1,3}"
                  r"(?:[ \t]{1,16}(?:-?\d{1,9}(?:\.\d{1,4})?|-|N/A)){1,30}[ \t]{0,8}$")


def anchor(text: str) -> bool:
    return bool(_HEAD.match(text))


def member(text: str) -> bool:
    return bool(_HEAD.match(text) or _UNITS.match(text) or _ROW.match(text))


sections = shown_only
