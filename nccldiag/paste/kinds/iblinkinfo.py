"""``iblinkinfo`` (infiniband-diags, rdma-core ``infiniband-diags/iblinkinfo.c``): a ``CA: name:`` or ``Switch: 0xGUID
name:`` header per node, then a line per port, ``LID PORT[EXT] ==( WIDTH SPEED STATE/ PHYSSTATE)==> LID PORT[EXT]
"remote" ( notes )`` (with ``-l``, the node's GUID and name lead every port line). The ibcounters area's
``iblinkinfo`` source reads the links in it: the ``Could be ...`` notes of a link that came up narrower or slower
than both its ends support, and the links that are not Active."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, one

NAME = "iblinkinfo"
WORDS = ("==(",)
SOURCES = ("iblinkinfo",)
GAPS = 1

# a port line: '2   17[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       4    1[  ] "n02 HCA-1" ( )',
# '2    1[  ] ==(                Down/ Polling)==>             [  ] "" ( )'
# (a CA's port line leads with its port GUID; with -l every line leads with the node's GUID and description)
_PORT = rx.compile(r"[ \t]{0,40}(?:0x[0-9a-fA-F]{1,16}[ \t]{1,40}(?:\"[^\"\n]{0,300}\"[ \t]{1,40})?)?"
                   r"(?:\d{1,6}[ \t]{1,12})?\d{1,4}\[[^\]\n]{0,8}\][ \t]{1,8}==\([^)\n]{0,80}/[^)\n]{0,40}\)==>")
# the node headers: 'CA: n02 HCA-1:', 'Switch: 0x506b4b0300820910 MF0;SB7700:MSB7700/U1:'
_NODE = rx.compile(r"[ \t]{0,40}(?:CA|Switch|Router):[ \t]{1,8}\S.{0,300}:[ \t]{0,8}$")


def anchor(text: str) -> bool:
    return bool(_PORT.match(text))


def member(text: str) -> bool:
    return bool(_PORT.match(text) or _NODE.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("iblinkinfo", lines)
