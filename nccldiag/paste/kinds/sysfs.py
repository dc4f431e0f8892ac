"""Files dumped with their names: ``==> /sys/class/infiniband/mlx5_0/ports/1/state <==`` headers (``head``, ``tail``,
the collection's own dumps) or ``grep . /sys/...`` / ``grep -s`` lines (``/sys/.../counters/link_downed:0``). Each
file goes to the source that collects it on a node: InfiniBand device and port files to ``ib_sysfs``, their
counters to ``ib_counters``, PCIe AER counters to ``aer_sysfs``, ``/proc/*/limits`` to ``proc_limits``,
``limits.conf`` to ``limits_conf``, a CPU's governor to ``cpufreq``, ``/proc/cmdline`` to ``proc_cmdline``, the
peer-memory module's files to ``peermem_sysfs``."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, joined

NAME = "files"
WORDS = ("==> /", "/sys/class/", "/sys/devices/")
SOURCES = ("ib_sysfs", "ib_counters", "aer_sysfs", "proc_limits", "limits_conf", "cpufreq", "proc_cmdline",
           "peermem_sysfs")
GAPS = 1
MIN = 1

_HEADER = rx.compile(r"[ \t]{0,4}==> (?P<path>/\S{1,1000}) <==")
_GREP = rx.compile(r"[ \t]{0,4}(?P<path>/(?:sys|proc)/\S{1,1000}):\S")
# (source, what a path of it holds), in this order: the first that fits takes the file
_ROUTES = (
    ("ib_counters", rx.compile(r"/infiniband/[^/]{1,100}/ports/\d{1,4}/(?:hw_)?counters/")),
    ("ib_sysfs", rx.compile(r"/sys/class/infiniband/|/sys/bus/pci/devices/|/sys/class/net/|/sys/class/drm/|"
                            r"/infiniband/")),
    ("aer_sysfs", rx.compile(r"/aer_(?:dev|rootport)_")),
    ("proc_limits", rx.compile(r"^/proc/[^/]{1,20}/limits$")),
    ("limits_conf", rx.compile(r"^/etc/security/limits")),
    ("cpufreq", rx.compile(r"/cpufreq/")),
    ("proc_cmdline", rx.compile(r"^/proc/cmdline$")),
    ("peermem_sysfs", rx.compile(r"/sys/module/(?:nvidia_peermem|nv_peer_mem)/|/sys/kernel/mm/memory_peers/")),
)


def route(path: str) -> str:
    return next((source for source, rx in _ROUTES if rx.search(path)), "")


def anchor(text: str) -> bool:
    m = _HEADER.match(text) or _GREP.match(text)
    return bool(m and route(m.group("path")))


def member(text: str) -> bool:
    return bool(text.strip())


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    out: Dict[str, List[str]] = {}
    source = ""
    for line in lines:
        m = _HEADER.match(line) or _GREP.match(line)
        if m:
            source = route(m.group("path")) or source
        if source:
            out.setdefault(source, []).append(line)
    # the InfiniBand dumps of a node hold the counters beside the devices: a block of both feeds both sources
    if "ib_sysfs" in out and "ib_counters" in out:
        everything = joined(lines)
        return {"ib_sysfs": everything, "ib_counters": everything}
    return {s: joined(ls) for s, ls in out.items() if joined(ls).strip()}
