"""``nvidia-bug-report.sh``'s log (``nvidia-bug-report.log``): its section headers (``*** /proc/driver/nvidia/version``,
``/usr/bin/nvidia-smi --query``). The sections' contents are read by the kinds of what they hold (kernel lines,
``nvidia-smi -q``, ``lspci``, ...); the headers themselves are shown, no area judging them."""
from __future__ import annotations


from nccldiag import rx
from nccldiag.paste.kinds.base import shown_only

NAME = "nvidia-bug-report"
WORDS = ("nvidia-bug-report", "*** /", "____________________________________________")
SOURCES = ()
GAPS = 0
UP = False

_HEADER = rx.compile(r"[ \t]{0,4}(?:\*\*\* /\S{1,300}|_{40,200}[ \t]{0,4}$|Start of NVIDIA bug report log file|"
                     r"nvidia-bug-report\.sh (?:will now collect|Version))")


def anchor(text: str) -> bool:
    return bool(_HEADER.match(text)) and ("nvidia-bug-report" in text or text.lstrip().startswith("*** /"))


member = _HEADER.match


sections = shown_only
