"""Kernel lines: ``dmesg`` (with any of its time prefixes), ``journalctl -k``, ``/var/log/messages``,
``kern.log``, a ``grep`` of them, a console's lines. Read line by line, not as a block of one shape: a line is a
kernel line when it holds a time prefix only the kernel's tools print (``[ 12.34]``, ``[  +0.000004]``,
``[Tue Apr 15 16:50:03 2025]``, ``kern  :warn  :``, a syslog line of ``kernel:``) or when it holds the words of a
row of ``knowledge/kmsg.toml`` (or of the kernel-log greps of the iommu, pcie and gdr areas) and reads as the
kernel writes (its time, or a driver's name first: ``NVRM:``, ``mlx5_core 0000:...:``). The lines keep their own
time (the areas read it), without what surrounds them (quote marks, a file name, a host).

Their sections are those a node collects from its kernel log: ``kernel_log`` (every line; the areas ``xid``,
``kernel``, ``pcie_errors``, ``ibcounters`` and ``firmware`` read the rows of ``kmsg.toml`` in it), and, where
lines hold their words, ``iommu_dmesg``, ``pcie_dmesg`` and ``gdr_dmesg`` (the greps their sources run)."""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from nccldiag import rx
from nccldiag.areas import kernlog
from nccldiag.paste.kinds.base import Context, joined
from nccldiag.paste.lines import COMMAND, Peeled

NAME = "kernel log"
MODE = "lines"  # found line by line (see :func:`classify`), not by a block's shape
SOURCES = ("kernel_log", "iommu_dmesg", "pcie_dmesg", "gdr_dmesg")

# the dmesg greps of the areas' sources (iommu.py, pcie.py, gdr.py), as Python reads them
IOMMU = rx.compile(r"iommu|dmar|amd-vi|smmu|default domain type|io_page_fault", re.I)
PCIE = rx.compile(r"PCIe bandwidth, limited by")
GDR = rx.compile(r"peermem|nv_peer_mem|peer_mem", re.I)
# (source, its grep, the lines it keeps: the first n, or the last n where negative)
_GREPS = (("iommu_dmesg", IOMMU, 300), ("pcie_dmesg", PCIE, 200), ("gdr_dmesg", GDR, -50))

_KERNEL_TIME = rx.compile(r"\[[ \t]{0,12}[+\d]|\[[A-Z][a-z]{2} |(?:kern|user|daemon|syslog)[ \t]{0,4}:")
# what the kernel's messages start with (the driver or subsystem that writes them)
_SUBSYSTEM = rx.compile(r"(?:NVRM|nvidia(?:-[\w-]{1,30})?|nv_peer_mem|nvidia_peermem|mlx\d_core|mlx\d_\d{1,4}|mlx\d_ib|"
                        r"pcieport|pci|nfs|iommu|DMAR|AMD-Vi|AER|ib_\w{1,20}|infiniband|hfi1|irdma|bnxt_\w{1,20}|"
                        r"i40e|ice|ixgbe|xhci_hcd|EDAC|mce|rcu|watchdog|INFO: task|BUG|Out of memory|Memory cgroup|"
                        r"oom-kill|oom_reaper|Call Trace|\[<[0-9a-f]|systemd-networkd)\b")


# what is not a literal of an expression: a class, a group, an escape, a repeated character
_NOT_LITERAL = rx.compile(r"\[[^\]]{0,512}\]|\([^)]{0,512}\)|\\.|.[*+?]")


def _literals(pattern: str) -> List[str]:
    """The longest literal piece of each alternative of a keep expression (``Link (DOWN|down)`` -> ``Link ``)."""
    out: List[str] = []
    depth, start, parts = 0, 0, []
    for i, c in enumerate(pattern):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    parts.append(pattern[start:])
    for part in parts:
        runs = re.findall(r"[A-Za-z0-9 :_\-/]{3,}", _NOT_LITERAL.sub("\0", part))
        if runs:
            out.append(max(runs, key=len))
    return out


WORDS: Tuple[str, ...] = tuple(dict.fromkeys(
    [w for p in [m.keep for m in kernlog.MESSAGES] + list(kernlog.CONTEXT) for w in _literals(p)]
    + ["NVRM", "kernel: ", "iommu", "IOMMU", "DMAR", "AMD-Vi", "smmu", "SMMU", "Default domain type",
       "io_page_fault", "PCIe bandwidth, limited by", "peermem", "nv_peer_mem", "peer_mem"]))
_KEEP = rx.compile(kernlog.PATTERN)


def said(text: str) -> bool:
    """Whether a message holds words the kernel-log areas read (a line another kind's anchor also is stays the
    kernel's then)."""
    return _said(text)


def _said(text: str) -> bool:
    """Whether a message holds words the kernel-log areas read."""
    return bool(_KEEP.search(text) or any(rx.search(text) for _, rx, _ in _GREPS))


def _own_time(layers) -> Optional[int]:
    """Where the line's own time starts among its layers: at the first time only the kernel's tools print
    (dmesg's, ``--decode``'s, a syslog line of ``kernel:``), else at the last time (a time a log shipper put
    before the line comes first); None without a time."""
    times = [i for i, la in enumerate(layers) if la.kind == "time"]
    if not times:
        return None
    return next((i for i in times if _KERNEL_TIME.match(layers[i].text) or " kernel:" in layers[i].text), times[-1])


# a command typed, as a transcript shows it: a tool the paste kinds read, or a launcher or shell that runs a job
# (never the kernel's line that names a program first: 'python3 invoked oom-killer', 'bash (1234): ...')
_LAUNCHED = rx.compile(r"[ \t]{0,4}(?:sudo[ \t]{1,4})?(?:mpirun|mpiexec|srun|sbatch|salloc|torchrun|deepspeed|bash|sh|"
                       r"python3?|docker|kubectl|echo)(?:[ \t]{1,4}(?!invoked\b|\(|\[)|$)")


def typed(layers, text: str) -> bool:
    """Whether a line is a shell's, not the kernel's, whatever time is before it: a prompt or a root's ``# ``
    behind the time (a transcript stamped line by line), or a command as typed (``lsmod | grep nv_peer``, ``bash
    -c 'ulimit -l unlimited && ...'``)."""
    if any(la.kind in ("prompt", "comment") for la in layers):
        return True
    if _LAUNCHED.match(text) is None:
        m = COMMAND.match(text)
        if m is None or text[m.end():m.end() + 1] not in ("", " ", "\t"):
            return False
    return not _said(text)


def classify(p: Peeled) -> Optional[int]:
    """How many of the line's layers surround it (the rest, its own time included, is the kernel's line); None
    when it is no kernel line: a shell's line (:func:`typed`) is none, whatever time it has."""
    layers = p.layers
    first = _own_time(layers)
    text = p.text
    if first is not None and typed(layers[first:], text):
        return None
    if first is not None:
        stamp = "".join(la.text for la in layers[first:])
        if _KERNEL_TIME.match(stamp) or " kernel:" in stamp:
            return first
        if _said(text) and (_SUBSYSTEM.match(text) or "kernel" in stamp):
            return first
        if _said(text) and stamp[:1].isalpha():  # syslog: another daemon's line with the words ('ib6: lost carrier')
            return first
        return None
    if _said(text) and _SUBSYSTEM.match(text.lstrip()):
        return len(layers)
    return None


_WRITER = rx.compile(r"[ \t]{0,8}([\w.-]{1,40}):[ \t]")


def same_writer(text: str, anchor: str) -> bool:
    """Whether two lines without a time start with the same driver's name (``NVRM: ...``): one message the
    kernel wrote over several lines, as pasted without dmesg's times."""
    a, b = _WRITER.match(text), _WRITER.match(anchor)
    return bool(a and b and a.group(1) == b.group(1))


def continues(text: str) -> bool:
    """A line the kernel wrote as the continuation of the one before it (indented: ``   NVRM: BAR1 is 0M``)."""
    return text[:1] in (" ", "\t") and bool(text.strip())


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    text = joined(lines)
    if not text.strip():
        return {}
    out = {"kernel_log": text}
    for source, rx, keep in _GREPS:
        kept = [line for line in lines if rx.search(line) and "Adding to iommu group" not in line]
        if kept:
            out[source] = joined(kept[:keep] if keep > 0 else kept[keep:])
    return out
