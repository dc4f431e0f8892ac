"""The link tools' view of network interfaces: ``ifconfig`` (Linux net-tools; FreeBSD's, whose record a web page may
run into one line), ``ip link`` / ``ip addr`` (``3: ib0: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 2044 ...`` and the
indented lines under it), ``ip -br link`` / ``ip -br addr`` and ``ethtool DEV`` (``Settings for eth2:`` ...
``Link detected: no``): the ``ib`` area's ``netdev_link`` source (:mod:`nccldiag.areas.netdev`)."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, indented, one

NAME = "netdev link"
WORDS = ("flags=", "NO-CARRIER", "LOWER_UP", "<BROADCAST", "<LOOPBACK", "Settings for ", "Link detected:")
SOURCES = ("netdev_link",)
GAPS = 1
UP = False

_IFCONFIG = rx.compile(r"[ \t]{0,8}(?:[A-Za-z][\w.:-]{0,40}: flags=(?:0x)?[0-9a-fA-F]{1,8}<|"
                       r"[^\n]{0,200}?\s[A-Za-z][\w.:-]{0,40}: flags=(?:0x)?[0-9a-fA-F]{1,8}<[A-Z,]{0,300}>[^\n]{0,2000}?"
                       r"\bstatus: )")
_IP_LINK = rx.compile(r"[ \t]{0,8}\d{1,6}:[ \t]+[^\s:@]{1,40}(?:@\S{1,60})?:[ \t]+<[A-Z0-9_,-]{0,300}>[ \t]+mtu[ \t]")
_IP_BR = rx.compile(r"[ \t]{0,8}[^\s:@]{1,40}(?:@\S{1,60})?[ \t]+(?:UP|DOWN|UNKNOWN|LOWERLAYERDOWN|DORMANT)[ \t]+"
                    r"(?:[0-9a-f:]{17,59}[ \t]+)?<[A-Z0-9_,-]{0,300}>")
_ETHTOOL = rx.compile(r"[ \t]{0,8}Settings for [^\s:]{1,40}:[ \t]*$")


def anchor(text: str) -> bool:
    return bool(_IFCONFIG.match(text) or _IP_LINK.match(text) or _IP_BR.match(text) or _ETHTOOL.match(text))


def member(text: str) -> bool:
    return bool(anchor(text) or indented(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("netdev_link", lines)
