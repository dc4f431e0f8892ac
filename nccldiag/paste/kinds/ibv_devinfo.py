"""``ibv_devinfo`` (and ``-v``): an ``hca_id:`` block per device, its ports indented under it; a fragment that
starts at a port (``port: 1`` / ``state: PORT_ACTIVE (4)``) too."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import KEY_VALUE, Context, elided, indented, one

NAME = "ibv_devinfo"
WORDS = ("hca_id:", "PORT_ACTIVE", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE_DEFER")
SOURCES = ("ibv_devinfo",)
GAPS = 1
MIN = 3

_HCA = rx.compile(r"[ \t]{0,40}hca_id:[ \t]{0,40}\S")
_STATE = rx.compile(r"[ \t]{0,40}state:[ \t]{0,40}PORT_[A-Z_]{2,20}[ \t]{0,4}\(\d{1,2}\)")
_GID = rx.compile(r"[ \t]{0,40}GID\[[ \t]{0,4}\d{1,4}\]:")
# ibv_devinfo's fields are lower case with underscores ('fw_ver:', 'phys_port_cnt:', 'port:'): read indented or not
# (a paste trimmed flush left)
_FIELD = rx.compile(r"[ \t]{0,40}[a-z][a-z0-9_]{1,40}:[ \t]{1,40}\S")


def anchor(text: str) -> bool:
    return bool(_HCA.match(text) or _STATE.match(text))


def member(text: str) -> bool:
    return bool(_HCA.match(text) or (indented(text) and (KEY_VALUE.match(text) or _GID.match(text))) or
                _FIELD.match(text) or _GID.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("ibv_devinfo", lines)
