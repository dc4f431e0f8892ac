"""``/proc/iomem``: the physical address map (``4100000000-43ffffffff : PCI Bus 0000:0a``). No area reads it: it
is read and shown beside the kernel's BAR messages it explains."""
from __future__ import annotations


from nccldiag import rx
from nccldiag.paste.kinds.base import shown_only

NAME = "/proc/iomem"
WORDS = (" : PCI Bus ", " : System RAM", " : Reserved", " : PCI ECAM", " : Kernel code")
SOURCES = ()

_RANGE = rx.compile(r"[ \t]{0,40}[0-9a-fA-F]{4,16}-[0-9a-fA-F]{4,16} : \S")


def anchor(text: str) -> bool:
    return bool(_RANGE.match(text))


member = anchor


sections = shown_only
