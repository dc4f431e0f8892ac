"""A loaded module's version read by hand: ``cat /sys/module/nvidia/version`` and the version under it (or after
a ``#`` on the same line, as a transcript annotates it), or ``grep . /sys/module/*/version``. The peer-memory
module's go to the gdr area's ``peermem_sysfs`` source (``path: value``, as the collection writes it); the
others are read and shown."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context

NAME = "/sys/module/*/version"
WORDS = ("/sys/module/",)
SOURCES = ("peermem_sysfs",)
CONTEXT = True  # a block of it that feeds no source is read and shown all the same
GAPS = 0
UP = False

_PATH = rx.compile(r"(?P<path>/sys/module/(?P<module>[\w-]{1,64})/version)(?::(?P<value>\S{1,64})|"
                   r"[ \t]{1,4}#[ \t]{0,4}(?P<note>[\w.-]{1,64}))?")
_VERSION = rx.compile(r"[ \t]{0,40}(?P<value>\d[\w.-]{0,63})[ \t]{0,40}$")
_PEER = ("nvidia_peermem", "nv_peer_mem")


def anchor(text: str) -> bool:
    return bool(_PATH.search(text))


def member(text: str) -> bool:
    return bool(_VERSION.match(text) or _PATH.search(text))


def versions(lines: List[str]) -> Dict[str, str]:
    """``{path: version}`` of the lines: a path with its value, or a path and the version on the line under it."""
    out: Dict[str, str] = {}
    path = ""
    for line in lines:
        m = _PATH.search(line)
        if m:
            path = m.group("path")
            value = m.group("value") or m.group("note")
            if value:
                out[path], path = value, ""
            continue
        v = _VERSION.match(line)
        if v and path:
            out[path], path = v.group("value"), ""
    return out


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    found = versions(lines)
    peer = {p: v for p, v in found.items() if any(f"/{m}/" in p for m in _PEER)}
    if peer:
        return {"peermem_sysfs": "checked: peer-memory paths\n" + "".join(f"{p}: {v}\n" for p, v in peer.items())}
    return {}
