"""A CPU frequency governor read by hand (``cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor``), the
output under its command: the limits area's ``cpufreq`` source."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, command, elided, one

NAME = "cpufreq governor"
WORDS = ("scaling_governor",)
SOURCES = ("cpufreq",)
UP = False  # the output is found under its command (the anchor)
GAPS = 0

_COMMAND = rx.compile(r"scaling_governor")
_GOVERNOR = rx.compile(r"[ \t]{0,40}(?:performance|powersave|ondemand|conservative|schedutil|userspace)[ \t]{0,40}$")


def anchor(text: str) -> bool:
    return bool(_COMMAND.search(text)) and not text.lstrip().startswith("/")


def member(text: str) -> bool:
    return bool(_GOVERNOR.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    out = [line for line in lines if member(line)]
    return one("cpufreq", out) if any(_GOVERNOR.match(line) for line in out) else {}
