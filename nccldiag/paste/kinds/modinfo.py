"""``modinfo MODULE``: ``filename:``, ``version:``, ``vermagic:`` ... of an installed kernel module, read by the gdr
area as its module list says (a module ``modinfo`` shows is installed, not loaded)."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, indented, one

NAME = "modinfo"
WORDS = ("vermagic:", "srcversion:")
SOURCES = ("proc_modules",)
CONTEXT = True  # a block of it that feeds no source is read and shown all the same
GAPS = 0
MIN = 3

_FIELD = rx.compile(r"[ \t]{0,40}(?:filename|version|license|description|author|srcversion|alias|depends|retpoline|"
                    r"intree|name|vermagic|sig_id|signer|sig_key|sig_hashalgo|signature|parm|firmware|import_ns|"
                    r"softdep|supported):(?:[ \t]|$)")


def anchor(text: str) -> bool:
    return bool(_FIELD.match(text)) and text.lstrip().startswith(("vermagic:", "srcversion:"))


def member(text: str) -> bool:
    return bool(_FIELD.match(text) or indented(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("proc_modules", lines) if any(line.lstrip().startswith("name:") for line in lines) else {}
