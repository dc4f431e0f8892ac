"""``dkms status``: ``nvidia/570.133.07, 5.15.0-94-generic, x86_64: installed``, a line per module and kernel. No area
reads it: it is read and shown (which driver is built for which kernel)."""
from __future__ import annotations


from nccldiag import rx
from nccldiag.paste.kinds.base import shown_only

NAME = "dkms status"
WORDS = (": installed", ": built", ": added")
SOURCES = ()
GAPS = 0

_ROW = rx.compile(r"[ \t]{0,40}[\w.+-]{1,100}[/,][ \t]?[\w.+~-]{1,100},[ \t][\w.+~-]{1,100}(?:,[ \t][\w.-]{1,40})?:[ \t]"
                  r"(?:installed|built|added)")


def anchor(text: str) -> bool:
    return bool(_ROW.match(text))


member = anchor


sections = shown_only
