"""The kernel log, read once and shared by the areas that look for events in it.

Not a check area: the source and the line splitter behind ``xid`` (NVIDIA
Xid events and the driver's lost-GPU notices, whose continuation lines come
indented and without a time stamp), ``pcie_errors`` (AER lines) and
``ibcounters`` (link flaps: mlx5, netdev carrier, ``NIC Link is Up/Down``).
Each lists :data:`SOURCE`; the collection script runs it once. The node
keeps only the lines those areas read (one ``awk`` pass over ``dmesg``, or
``journalctl -k -b`` where ``dmesg`` is restricted), the last 4000 of them,
and a last line counting what was read, so that "no event" is told apart
from "no kernel log".

Lines come in every prefix the tools print: ``[  12.34]``, ``dmesg -T``
(``[Sun Feb 23 16:24:18 2025]``), ``--time-format=iso``, ``--decode``
(``kern  :warn  : ``), syslog and journal (``Sep 19 16:18:02 host kernel:``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from nccldiag.areas.base import Source

# What the areas read; kept in one place so the node filters once.
PATTERN = (
    r"NVRM: Xid|NVRM: GPU at PCI|AER|[Cc]orrected error|Uncorrect|PCIe Bus Error|"
    r"Link (DOWN|INIT|ACTIVE|down|up)|Link is ([Uu]p|[Dd]own)|[Ll]ost carrier|[Gg]ained carrier|carrier (lost|on|off)|"
    r"Port module event|firmware version|FW version|fallen off the bus|The NVIDIA GPU|installed in this system has|"
    r"probe routine failed"
)
_MARK = "nccldiag: kernel log"

SOURCE = Source(
    "kernel_log",
    "{ dmesg 2>/dev/null || journalctl -k -b --no-pager 2>/dev/null || echo 'nccldiag: kernel log unreadable'; } "
    f"| awk '/^nccldiag: / {{ print; next }} {{ n++ }} /{PATTERN}/ {{ print }} "
    f"END {{ print \"{_MARK} lines \" n+0 }}' | tail -n 4000",
    timeout=20,
    description="kernel log lines of Xid events, PCIe AER errors and link state changes (dmesg, else journalctl -k)",
)

_PREFIXES = (
    re.compile(r"^kern\s*:\s*\w+\s*:\s*"),  # dmesg --decode
    re.compile(r"^\[\s*[^\]]*\]\s*"),  # [ 12.3] or [Sun Feb 23 16:24:18 2025]
    re.compile(r"^\d{4}-\d\d-\d\dT[\d:,.]+(?:[+-]\d\d:?\d\d|Z)?\s+"),  # iso
    re.compile(r"^[A-Z][a-z]{2}\.?\s+\d+\s+[\d:]+\s+\S+\s+\S+?(?:\[\d+\])?:\s*"),  # syslog / journal
    re.compile(r"^\w+\.?\s+\d+\s+[\d:]+\s+\S+\s+\S+?(?:\[\d+\])?:\s*"),  # localised month ("jan.")
)


@dataclass
class KernelLog:
    lines: List[Tuple[str, str]] = field(default_factory=list)  # (time prefix as printed, message)
    read: Optional[bool] = None  # True: read; False: unreadable on the node; None: not collected
    total: Optional[int] = None  # lines the node read


# the prefixes as one expression: the first that matches, in the order above (group 1: --decode's)
_PREFIX = re.compile("|".join(f"({p.pattern[1:]})" for p in _PREFIXES))


def split_line(line: str) -> Tuple[str, str]:
    """``(time prefix, message)``; the prefix is "" when the line has none."""
    rest = line.rstrip()
    stamp = []
    match = _PREFIX.match
    for _ in range(3):
        m = match(rest)
        if not m:
            break
        if m.lastindex != 1:  # the facility:level of --decode is no time
            stamp.append(m.group(0).strip())
        rest = rest[m.end():]
    return " ".join(stamp), rest.strip()


def parse(text: Optional[str]) -> KernelLog:
    k = KernelLog()
    if text is None or not text.strip():
        return k
    k.read = True
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith(_MARK):
            if s.endswith("unreadable"):
                k.read = False
            m = re.search(r"lines (\d+)$", s)
            if m:
                k.total = int(m.group(1))
            continue
        k.lines.append(split_line(s))
    if k.read is False and k.lines:
        k.read = True
    return k


def short(line: str, limit: int = 240) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."
