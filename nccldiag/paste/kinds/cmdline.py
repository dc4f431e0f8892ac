"""``/proc/cmdline``: the kernel's command line (``BOOT_IMAGE=... root=... intel_iommu=on``), read by the iommu area."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "/proc/cmdline"
WORDS = ("BOOT_IMAGE=", " root=")
SOURCES = ("proc_cmdline",)
GAPS = 0
UP = False

_LINE = rx.compile(r"[ \t]{0,4}(?:BOOT_IMAGE=\S{1,400}[ \t]|initrd=\S{1,400}[ \t]|\S{1,400}[ \t]{1,4}root=\S)")


def anchor(text: str) -> bool:
    return bool(_LINE.match(text)) and ("BOOT_IMAGE=" in text or " ro" in text or " rw" in text)


def member(text: str) -> bool:
    return False


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("proc_cmdline", lines)
