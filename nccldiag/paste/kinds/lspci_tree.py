"""``lspci -tv``: the PCI tree (``+-1d.4-[0a]--+-00.0  NVIDIA Corporation ...``). No area reads it (the tree says
where a device sits, not whether it works): it is read and shown beside the findings."""
from __future__ import annotations


from nccldiag import rx
from nccldiag.paste.kinds.base import shown_only

NAME = "lspci -tv"
WORDS = ("]--", "+-0", "\\-0")
SOURCES = ()

_TREE = rx.compile(r"[ \t|]{0,200}(?:[+\\]-|-\[)[0-9a-fA-F]{2}")


def anchor(text: str) -> bool:
    return bool(_TREE.match(text)) and ("--" in text or "-[" in text)


def member(text: str) -> bool:
    return bool(_TREE.match(text)) or text.strip() == "|"


sections = shown_only
