"""The kernel log, read once and shared by the areas that look for events in it.

Not a check area: the source, the line splitter and the table of kernel
messages that mean a failure (``nccldiag/knowledge/kmsg.toml``: the NVIDIA
driver's, mlx5's and the IB core's, PCIe's, and the kernel's own detectors),
which the areas judge: ``xid`` (Xid events, the lost-GPU notice, the driver
failing to initialise a GPU, GSP timeouts), ``pcie_errors`` (AER, BARs left
unassigned, hot-plug links down), ``ibcounters`` (link flaps, HCA firmware
failures), ``kernel`` (hung tasks, the OOM killer, lockups, machine checks)
and ``firmware`` (HCA firmware versions). Each lists :data:`SOURCE`; the
collection script runs it once. The node keeps only the lines whose words
the table names (one ``awk`` pass over ``dmesg``, or ``journalctl -k -b``
where ``dmesg`` is restricted; :data:`PATTERN` is every row's and every
context line's ``keep``), the last 4000 of them, and a last line counting
what was read, so that "no event" is told apart from "no kernel log".

Lines come in every prefix the tools print: ``[  12.34]``, ``dmesg -T``
(``[Sun Feb 23 16:24:18 2025]``), ``dmesg -H`` (``[  +0.000844]``),
``--time-format=iso``, ``--decode`` (``kern  :warn  : ``), syslog and
journal (``Sep 19 16:18:02 host kernel:``), a pdsh host (``node7: ``). The
messages are searched, never anchored, so a prefix nccldiag does not know
still reads; so does an anonymised or damaged address (``PCI:...``,
``xxxx``, ``<redacted>``): the event counts, on a device nobody named.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from nccldiag import knowledge, rx
from nccldiag.areas.base import Source
from nccldiag.model.findings import Finding, fail, ok, skip, warn

TABLE = "kmsg.toml"
MAX_LINE = 4096  # the kernel's own records are under 1 KiB; longer lines are cut before any expression sees them


@dataclass(frozen=True)
class Message:
    """One row of the table: a kernel message that means a failure (or clears one)."""

    id: str
    area: str
    check: str
    severity: str  # "fail" | "warn" | "varies" (the area's own reader decides)
    category: str
    keep: str  # the node-side words (POSIX ERE, read alike by Python)
    pattern: knowledge.Expr
    meaning: str
    fix: str
    source: str
    where: str  # kmsg.toml:<line>
    reader: str = ""  # "" judged by judge_rows; else the owning area's reader
    resolves: str = ""  # the row whose earlier events with the same key this one clears
    implied_by: Tuple[str, ...] = ()
    event: bool = True  # whether the diagnosis takes this row's lines and findings as events (diagnosis.events)
    # a warn row whose task (its "dev"), reported again and again, is a failure once the line's own seconds (group
    # "secs") plus the time between its first and last report reach this many seconds (0: never)
    fail_blocked_s: int = 0


@dataclass(frozen=True)
class Check:
    id: str
    none: str  # what the ok finding says there is none of
    found: str  # what the failing finding says was found
    where: str


def _load() -> Tuple[Tuple[Message, ...], Dict[str, Check], Tuple[str, ...]]:
    messages = tuple(Message(
        id=r["id"], area=r["area"], check=r["check"], severity=r["severity"], category=r["category"],
        keep=r["keep"], pattern=knowledge.Expr(r["pattern"]), meaning=r["meaning"], fix=r["fix"], source=r["source"],
        where=r["where"], reader=r.get("reader", ""), resolves=r.get("resolves", ""),
        implied_by=tuple(r.get("implied_by", ())), event=bool(r.get("event", True)),
        fail_blocked_s=int(r.get("fail_blocked_s", 0))) for r in knowledge.rows(TABLE))
    checks = {c["id"]: Check(c["id"], c["none"], c["found"], c["where"]) for c in knowledge.rows(TABLE, "check")}
    context = tuple(c["keep"] for c in knowledge.rows(TABLE, "context"))
    return messages, checks, context


MESSAGES, CHECKS, CONTEXT = _load()
BY_ID: Dict[str, Message] = {m.id: m for m in MESSAGES}
# the checks whose rows the diagnosis reads by their own words, not as events (every row of the check: event false)
NO_EVENT_CHECKS = frozenset(c for c in CHECKS if all(not m.event for m in MESSAGES if m.check == c))

# What the areas read; one expression, so that the node filters once and by the table's own words.
PATTERN = "|".join([m.keep for m in MESSAGES] + list(CONTEXT))
_MARK = "nccldiag: kernel log"

SOURCE = Source(
    "kernel_log",
    "{ dmesg 2>/dev/null || journalctl -k -b --no-pager 2>/dev/null || echo 'nccldiag: kernel log unreadable'; } "
    f"| awk '/^nccldiag: / {{ print; next }} {{ n++ }} /{PATTERN}/ {{ print }} "
    f"END {{ print \"{_MARK} lines \" n+0 }}' | tail -n 4000",
    timeout=20,
    description="kernel log lines of the failures nccldiag/knowledge/kmsg.toml names (Xid events, the NVIDIA "
                "driver's, PCIe AER and BAR, mlx5, hung tasks, OOM kills, lockups, machine checks) and of link "
                "state changes (dmesg, else journalctl -k)",
)

_PREFIXES = (
    rx.compile(r"^kern\s*:\s*\w+\s*:\s*"),  # dmesg --decode
    rx.compile(r"^\[[^\]]*\]\s*"),  # [ 12.3] or [Sun Feb 23 16:24:18 2025]
    rx.compile(r"^\d{4}-\d\d-\d\dT[\d:,.]+(?:[+-]\d\d:?\d\d|Z)?\s+"),  # iso
    # syslog / journal: the host may be left out ("Mar 27 17:40:36 kernel: NVRM: ..."); a host ends in no colon
    rx.compile(r"^[A-Z][a-z]{2}\.?\s+\d+\s+[\d:]+\s+(?:\S+(?<!:)\s+)?\S+?(?:\[\d+\])?:\s*"),
    rx.compile(r"^\w+\.?\s+\d+\s+[\d:]+\s+(?:\S+(?<!:)\s+)?\S+?(?:\[\d+\])?:\s*"),  # localised month ("jan.")
)


@dataclass
class Event:
    """A line of the log read as one row of the table (plain data: the row by its id)."""

    row: str  # the row's id (Message.id)
    when: str  # the time prefix as printed ("" when none)
    text: str  # the message, prefix removed
    line: str  # the line as evidence (prefix kept, cut at 240 characters)
    key: str = ""  # the pattern's group "key" ("" when it has none)
    device: str = ""  # the device the line names ("" when none: an unnamed device)
    groups: Dict[str, str] = field(default_factory=dict)
    blocked_s: Optional[float] = None  # a repeated row's task: how long it was blocked at least, by its reports

    @property
    def message(self) -> Message:
        return BY_ID[self.row]

    @property
    def severity(self) -> str:
        """The row's severity; "fail" for a task of a ``fail_blocked_s`` row blocked at least that long."""
        limit = self.message.fail_blocked_s
        if limit and self.blocked_s is not None and self.blocked_s >= limit:
            return "fail"
        return self.message.severity


@dataclass
class KernelLog:
    lines: List[Tuple[str, str]] = field(default_factory=list)  # (time prefix as printed, message)
    read: Optional[bool] = None  # True: read; False: unreadable on the node; None: not collected
    total: Optional[int] = None  # lines the node read


# the prefixes as one expression: the first that matches, in the order above (group 1: --decode's)
_PREFIX = rx.compile("|".join(f"({p.pattern[1:]})" for p in _PREFIXES))


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
        s = line.strip()[:MAX_LINE]
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


# ---- reading the table's messages ------------------------------------------------------------------------

_BDF = rx.compile(r"\b([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\b")
_PCI = rx.compile(r"PCI:([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\b")
_GPU_N = rx.compile(r"\bGPU\d{1,3}\b")
_KEEP = rx.compile(PATTERN)  # a line none of these words is in is no row's


def bus(text: str) -> str:
    """The first PCI address in ``text``, as ``dddd:bb:dd.f`` ("" when it names none, or a damaged one)."""
    m = _BDF.search(text)
    if m:
        return f"{int(m.group(1), 16):04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}".lower()
    m = _PCI.search(text)
    if m:
        return f"{int(m.group(1), 16):04x}:{m.group(2)}:{m.group(3)}.0".lower()
    return ""


def _device(msg: Message, text: str, groups: Mapping[str, str]) -> str:
    if groups.get("dev"):
        return groups["dev"]
    found = bus(text)
    if found:
        return found
    if msg.resolves or any(m.resolves == msg.id for m in MESSAGES):
        return groups.get("key", "")
    m = _GPU_N.search(text)
    return m.group(0) if m else ""


def reads(line: str) -> bool:
    """Whether a row of ``knowledge/kmsg.toml`` reads the kernel line ``line`` (as collected or pasted, its time
    stamp first): the kernel areas judge the lines their rows read, and only those."""
    return read_line(*split_line(line[:MAX_LINE])) is not None


def read_line(when: str, text: str) -> Optional[Event]:
    """The event of the first row whose pattern ``text`` matches, None when no row reads it."""
    if not _KEEP.search(text):
        return None
    for msg in MESSAGES:
        m = msg.pattern.search(text)
        if m:
            groups = {k: v for k, v in m.groupdict().items() if v}
            return Event(msg.id, when, text, short(f"{when} {text}".strip()), groups.get("key", ""),
                         _device(msg, text, groups), groups)
    return None


def events(log: KernelLog) -> List[Event]:
    """Every line of ``log`` the table reads, in order: a later line of a resolving row clears the earlier
    events with its key (a BAR assigned after its failure, an NFS server OK again), and rows implied by others
    count only where those others have no event. Read once per log."""
    known = getattr(log, "_events", None)  # read once: kept on the log, not a field of it
    if known is not None:
        return known
    out: List[Event] = []
    record = _Record()
    for when, text in log.lines:
        ev = read_line(when, text)
        if "Hardware Error]" in text:
            record.line(text, ev)
        if ev is None:
            continue
        if ev.message.resolves:
            out = [e for e in out if not (e.message.id == ev.message.resolves and e.key == ev.key)]
            continue
        out.append(ev)
    record.end()
    seen = {e.message.id for e in out}
    out = [e for e in out if not (set(e.message.implied_by) & seen) and id(e) not in record.said_better]
    _blocked(out)
    log._events = out  # type: ignore[attr-defined]
    return out


_CPER_TYPE = rx.compile(r"\bError \d{1,3}, type: (corrected|recoverable|fatal|info)\b")
_CPER_SECTION = rx.compile(r"\bsection_type: (.{1,40})$")
_CPER_DEVICE = rx.compile(r"\bdevice_id: ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b")
_CPER_SEVERITY = {"corrected": "corrected", "info": "corrected", "recoverable": "non-fatal", "fatal": "fatal"}


class _Record:
    """A firmware's APEI record as the kernel prints it ('[Hardware Error]: ' lines, drivers/firmware/efi/cper.c):
    each PCIe section's event takes the section's severity ('Error N, type: ...') and device ('device_id: ...'),
    and the record's opening line ('Hardware error from APEI ...') is said better by its PCIe sections when it
    has no section of another type (then the AER reader, not the machine-check row, reads it)."""

    def __init__(self) -> None:
        self.opening: Optional[Event] = None
        self.pcie = False
        self.other = False
        self.severity = ""
        self.section: Optional[Event] = None
        self.said_better: Set[int] = set()

    def end(self) -> None:
        if self.opening is not None and self.pcie and not self.other:
            self.said_better.add(id(self.opening))
        self.opening, self.pcie, self.other, self.section = None, False, False, None

    def line(self, text: str, ev: Optional[Event]) -> None:
        if ev is not None and ev.row == "ghes-hardware-error":
            self.end()
            self.opening = ev
            return
        if ev is not None and ev.row == "pci-aer-firmware-section":
            self.pcie = True
            ev.groups["severity"] = _CPER_SEVERITY.get(self.severity, "")
            self.section = ev
            return
        m = _CPER_TYPE.search(text)
        if m:
            self.severity, self.section = m.group(1), None
            return
        m = _CPER_SECTION.search(text)
        if m:
            self.other = True
            return
        m = _CPER_DEVICE.search(text)
        if m and self.section is not None and not self.section.device:
            self.section.device = bus(m.group(1))


# the dated prefixes, each with the part of the prefix its date is: dmesg -T, ISO 8601 (to the second), syslog's
_DATES = (("%a %b %d %H:%M:%S %Y", lambda t: " ".join(t.split()[:5])), ("%Y-%m-%dT%H:%M:%S", lambda t: t[:19]),
          ("%b %d %H:%M:%S", lambda t: " ".join(t.split()[:3])))
_MONOTONIC = rx.compile(r"^\[\s*(\d{1,10}(?:\.\d{1,9})?)\]$")
_EPOCH = datetime(1900, 1, 1)


def seconds(when: str) -> Optional[Tuple[str, float]]:
    """A time prefix as ``(its kind, seconds)``: the kernel's monotonic stamp ('[ 1234.56]', seconds since boot) or
    a date ('[Sat Mar  4 04:10:52 2023]' of dmesg -T, ISO 8601, syslog's 'Mar  4 04:10:52'); None when it is none
    of these. Two stamps compare only when of one kind."""
    when = when.strip()
    m = _MONOTONIC.match(when)
    if m:
        return "monotonic", float(m.group(1))
    text = when.strip("[]").strip()
    for fmt, part in _DATES:
        try:
            return fmt, (datetime.strptime(part(text), fmt) - _EPOCH).total_seconds()
        except ValueError:
            continue
    return None


def _blocked(found: List[Event]) -> None:
    """Each task of a ``fail_blocked_s`` row gets how long it was blocked at least: the seconds its line says plus
    the time from its first report to its last. The hung-task detector reports a task in state D only when it was
    not scheduled once since the detector's last look, so reports of one task at later times are one stretch of
    time it never ran."""
    tasks: Dict[Tuple[str, str], List[Event]] = {}
    for e in found:
        if e.message.fail_blocked_s and e.device:
            tasks.setdefault((e.row, e.device), []).append(e)
    for evs in tasks.values():
        own = max(float(e.groups.get("secs", 0) or 0) for e in evs)
        first, last = seconds(evs[0].when), seconds(evs[-1].when)
        span = last[1] - first[1] if first and last and first[0] == last[0] and last[1] >= first[1] else 0.0
        for e in evs:
            e.blocked_s = own + span


def area_events(log: KernelLog, area: str, reader: Optional[str] = None) -> List[Event]:
    """The events of ``area``'s rows (only those of ``reader`` when given: "" for the rows judged alike)."""
    return [e for e in events(log) if e.message.area == area and (reader is None or e.message.reader == reader)]


def checks_of(area: str) -> List[str]:
    """The check ids of ``area``'s rows judged by :func:`judge_rows`, in table order."""
    out: List[str] = []
    for m in MESSAGES:
        if m.area == area and not m.reader and m.check not in out:
            out.append(m.check)
    return out


def category_of(check: str) -> str:
    """The category of a check's rows (every row of one check has the same: tests/unit/test_knowledge_kmsg.py)."""
    return next(m.category for m in MESSAGES if m.check == check)


def not_read(area: str, check: str, read: Optional[bool]) -> Optional[Finding]:
    """The skip of a check whose kernel log was not collected or could not be read; None when it was read."""
    if read is None:
        return skip(area, check, "the kernel log was not collected (dmesg, or journalctl -k)")
    if read is False:
        return skip(area, check, "could not read the kernel log on this node (dmesg and journalctl -k refused)",
                    fix="Run the check as root, or allow it: sysctl kernel.dmesg_restrict=0, or add the user to the "
                        "systemd-journal (or adm) group.")
    return None


def finding(area: str, check: str, found: Sequence[Event], read: Optional[bool], total: Optional[int],
            name: Callable[[str], str] = lambda d: d, status: Optional[str] = None) -> Finding:
    """One check's finding from its events: skip when the log was not read, ok when it has none, else the
    worst severity of its rows (or ``status``) with the lines cited, per device. ``actual`` carries the category
    and the events per device and row."""
    skipped = not_read(area, check, read)
    if skipped is not None:
        return skipped
    info = CHECKS[check]
    category = category_of(check)
    if not found:
        lines = f" ({total} lines read)" if total is not None else ""
        return ok(area, check, f"{info.none} in the kernel log since boot{lines}", actual=0, expected=0)
    per: Dict[str, List[Event]] = {}
    for e in found:
        per.setdefault(name(e.device) if e.device else "an unnamed device", []).append(e)
    rows: List[str] = []
    evidence: List[str] = []
    counts: Dict[str, Dict[str, int]] = {}
    for dev, evs in per.items():
        n: Dict[str, int] = {}
        for e in evs:
            n[e.message.id] = n.get(e.message.id, 0) + 1
        counts[dev] = n
        what = ", ".join(f"{BY_ID[i].meaning} x{c}" for i, c in n.items())
        held = max((e.blocked_s for e in evs if e.blocked_s and e.severity == "fail"), default=0)
        if held:
            what += f", not run once for at least {held / 60:.0f} minutes"
        rows.append(f"{dev}: {what}; last {evs[-1].when or 'at an unknown time'}")
        evidence.extend(e.line for e in evs[:2])
        if len(evs) > 2:
            evidence.append(evs[-1].line)
    worst = status or ("fail" if any(e.severity == "fail" for e in found) else "warn")
    fixes: List[str] = []
    for e in found:
        text = f"{e.message.fix} ({e.message.where})"
        if text not in fixes:
            fixes.append(text)
    make = fail if worst == "fail" else warn
    return make(area, check, f"{info.found}: " + "; ".join(rows), actual={"category": category, "events": counts},
                expected=0, evidence=evidence[:12], fix=" ".join(fixes))


def judge_rows(area: str, found: Iterable[Event], read: Optional[bool], total: Optional[int],
               name: Callable[[str], str] = lambda d: d) -> List[Finding]:
    """A finding per check of ``area``'s rows judged alike (:func:`checks_of`), from the area's events."""
    found = list(found)
    return [finding(area, check, [e for e in found if e.message.check == check], read, total, name)
            for check in checks_of(area)]
