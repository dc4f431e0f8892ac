"""NVIDIA Xid events in the kernel log, classified by what they ask of the admin.

The NVIDIA driver logs every GPU error it sees as ``NVRM: Xid (PCI:<bus>):
<code>, ...`` (``(PCI:<bus> GPU-I:<n> GPU-CI:<n>)`` on a MIG instance, no
``PCI:`` in old drivers; an address anonymised or damaged, ``(PCI:...)``,
counts on "an unnamed GPU"). The codes are the rows of
``nccldiag/knowledge/xid.toml``: every code of NVIDIA's Xid catalog
(docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), checked
against it, each with the catalog's columns and nccldiag's class, category
and action (:data:`ROWS`, :data:`CODES`). The classes make the findings:

- ``reset``, ``reboot``, ``hardware``: the GPU is out of service until it is
  reset, the node rebooted, or the hardware serviced (48 double-bit ECC, 74
  and 144-150 NVLink, 79 fallen off the bus, 95 uncontained ECC, 119/120 GSP,
  ...): ``xid.critical``, drain the node;
- ``job``: the job's own fault (13, 31, 43, ...): ``xid.application``;
- ``driver``: driver or firmware errors the catalog ignores at once and
  investigates in software (37, 38, 44, 66, 67, 160, 161): ``xid.driver``;
- ``memory``: memory bookkeeping (63 a row remap recorded, 92 a high
  single-bit rate): ``xid.memory``, judged by ``gpuhealth``;
- ``other``: codes whose catalog action is to watch or investigate, and
  codes outside the table: ``xid.other``; ``unused``, codes the catalog marks
  unused on A100 to GB200, too;
- ``info``: test messages and a recovery action cleared (154 to ``None``):
  named in the ok finding only.

The driver's text refines the class: Xid 45 "caused by previous Xid N"
takes N's class (an NVLink error's channel cleanup is the NVLink error);
NVLink 5 codes 144-150 marked ``Nonfatal`` are ``other``; 154 takes the
recovery action it names (``GPU Reset Required``, ``Node Reboot Required``,
``Drain and Reset``, ``Drain P2P``, ``None``); ``RST: Yes`` or ``D-RST:
Yes`` in a memory error (the driver's reset-required and drain-and-reset
flags) makes it a reset.

A GPU can also be lost with no Xid line at all: the driver's multi-line
notice ``NVRM: The NVIDIA GPU <bdf>`` / ``NVRM: (PCI ID: ...) installed in
this system has`` / ``NVRM: fallen off the bus and is not responding to
commands.`` (continuation lines indented, without a time stamp) is read as
Xid 79 on that GPU. The Kubernetes device plugin relays the Xid events NVML hands its health check to its own
log (``XidCriticalError: Xid=79 on Device=GPU-<uuid>; marking device as unhealthy.``, behind klog's prefix): each
is read as that Xid on the GPU of that UUID. A cluster's operators record the Xid that made them take a node out of
service as its reason in the batch scheduler's node list (PBS's ``pbsnodes -l``: ``x3014c0s19b0n0  offline,resv-exclusive
Xid 74 -- GPUs need reseat``): each is read as that Xid on that node, its GPU not named. An Xid quoted without the
driver's prefix but with the message the driver prints after the code (``Xid 149, NETIR_LINK_DOWN Fatal XC0 i0 Link 14``,
``Xid 79, pid=...``), as a training run's log or a monitor's alert quotes it, is read as that Xid, its GPU not named;
the code alone in prose (``Xid 13 is an application fault``) is not an event. The driver's other messages of a failure are rows of
``nccldiag/knowledge/kmsg.toml`` (area ``xid``), judged alike by
:func:`nccldiag.areas.kernlog.judge_rows`: a GPU it could not initialise
(``RmInitAdapter failed``, a probe that failed: ``xid.driver_init``), a
version mismatch with its clients or between its own parts (``xid.driver_version``), a module built for
another kernel (``xid.driver_module``), GSP timeouts
without their Xid 119/120 line (``xid.gsp``), a GPU that needs a reset
(``xid.reset_required``), calls that fail because the GPU is lost from the bus
(``NV_ERR_GPU_IS_LOST``, status ``0x0000000f``: ``xid.gpu_lost``), allocations that failed (``xid.driver_alloc``), and the NVSwitch driver's SXids
(``nvidia-nvswitchN: SXid (PCI:...): <code>, Fatal`` fails, ``Non-fatal`` warns: ``xid.nvswitch``).

The events are those since boot that the kernel ring buffer still holds
(the shared ``kernel_log`` source, see :mod:`nccldiag.areas.kernlog`).
Each is mapped to its GPU index through the ``gpu`` area's bus ids, or the
``NVRM: GPU at PCI:`` lines the driver prints with an Xid.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from nccldiag import knowledge, rx
from nccldiag.areas import kernlog
from nccldiag.areas.base import NodeFacts, parsed
from nccldiag.areas.smiq import norm_bus
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "xid"
TITLE = "Xid events"

SOURCES = (kernlog.SOURCE,)

CATALOGUE = "NVIDIA Xid catalog, docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
TABLE = "xid.toml"


def _load():
    buckets = {b["name"]: b["action"] for b in knowledge.rows(TABLE, "bucket")}
    rows = {r["code"]: r for r in knowledge.rows(TABLE)}
    codes = {}
    for code, r in rows.items():
        meaning = r.get("meaning") or f"{r['mnemonic'].split(' /')[0]}, unused on A100 to GB200"
        codes[code] = (r["class"], meaning, r.get("action") or buckets.get(r["immediate"], ""))
    return rows, codes


# code -> its row of nccldiag/knowledge/xid.toml (the catalog's columns, nccldiag's class and category, where)
ROWS: Dict[int, Dict] = {}
# code -> (class, meaning, the catalog's immediate action in words). Classes: see the module text.
CODES: Dict[int, Tuple[str, str, str]] = {}
ROWS, CODES = _load()

# What the class asks of the admin, for the docs and the findings
CLASSES = {
    "reset": "GPU reset", "reboot": "node reboot", "hardware": "hardware", "job": "job", "driver": "driver",
    "memory": "memory bookkeeping", "other": "watch", "unused": "unused in the catalog", "info": "information",
}
DRAIN = ("reset", "reboot", "hardware")
NVLINK5 = range(144, 151)

_NOTICE = "(driver notice, no Xid line)"
UNNAMED = "an unnamed GPU"  # an Xid line whose address is absent, anonymised or damaged ("PCI:...")

_XID = kernlog.BY_ID["nvrm-xid"].pattern  # group key: what the parentheses hold; group code
# the device plugin's relay of an Xid event (group code; group key: the device's UUID, GPU-... or MIG-...)
_PLUGIN_XID = kernlog.BY_ID["device-plugin-xid"].pattern
# the operators' reason for a node out of service, in the scheduler's node list (group key: the node; group code)
_NODE_REASON_XID = kernlog.BY_ID["scheduler-node-reason-xid"].pattern
# an Xid quoted without the driver's prefix, its message kept (group code; no GPU named)
_QUOTED_XID = kernlog.BY_ID["quoted-xid"].pattern
# an Xid a node health check found in the kernel log and failed on (group code; no GPU named)
_CHECK_XID = kernlog.BY_ID["health-check-found-xid"].pattern
_BUS_IN = rx.compile(r"^\s*(?:PCI:\s*)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)(?![0-9A-Fa-f:])")
_GPU_AT = rx.compile(r"NVRM: GPU at PCI:([0-9A-Fa-f:.]+):\s*(GPU-[0-9a-fA-F-]+)")
_THE_GPU = rx.compile(r"NVRM: The NVIDIA GPU ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)")
_OFF_BUS = rx.compile(r"NVRM: GPU ([0-9A-Fa-f:.]+): GPU has fallen off the bus")
_CAUSED = rx.compile(r"caused by previous Xid (\d+)", re.I)
_NONFATAL = rx.compile(r"\bNon-?fatal\b", re.I)
_RESET_FLAG = rx.compile(r"\b(?:D-)?RST: Yes\b", re.I)
# 154: "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"
_RECOVERY_TO = rx.compile(r"\bto (?:0x[0-9a-f]+\s*)?\(?([A-Za-z][A-Za-z0-9 ]*?)\)?\s*\.?\s*$", re.I)
_RECOVERY_CLASS = (("none", "info"), ("reboot", "reboot"), ("reset", "reset"), ("drain", "reset"))


def recovery_action(text: str) -> Optional[str]:
    """The action an Xid 154 line changes to (``GPU Reset Required``, ``None``, ...), None when unreadable."""
    m = _RECOVERY_TO.search(text)
    return m.group(1).strip() if m else None


@dataclass
class XidEvent:
    bus: str  # normalised dddd:bb:dd.f ("" when the driver named none; the UUID where the device plugin relays it,
    # the node where a scheduler's node list does)
    code: int
    text: str  # the rest of the message
    when: str  # time prefix as printed ("" when none)
    line: str

    @property
    def cause(self) -> Optional[int]:
        """N of "caused by previous Xid N" (Xid 45 lines of recent drivers)."""
        m = _CAUSED.search(self.text)
        return int(m.group(1)) if m else None

    @property
    def kind(self) -> str:
        kind = CODES.get(self.code, ("other",))[0]
        cause = self.cause
        if cause is not None and cause != self.code and cause in CODES:
            kind = XidEvent(self.bus, cause, "", self.when, self.line).kind
        if self.code in NVLINK5 and _NONFATAL.search(self.text):
            return "other"
        if self.code == 154:
            action = (recovery_action(self.text) or "").lower()
            return next((k for word, k in _RECOVERY_CLASS if word in action), "reset")
        if kind not in DRAIN and _RESET_FLAG.search(self.text):
            return "reset"
        return kind

    @property
    def meaning(self) -> str:
        return label(self.code, self.text)


def label(code: int, text: str = "") -> str:
    """``Xid 79 (GPU has fallen off the bus)``; chains and recovery actions named."""
    meaning = CODES.get(code, ("", "not in the catalog table"))[1]
    m = _CAUSED.search(text)
    if m:
        meaning += f", caused by Xid {m.group(1)} ({CODES.get(int(m.group(1)), ('', 'not in the table'))[1]})"
    if code == 154 and recovery_action(text):
        meaning += f" to {recovery_action(text)}"
    if code in NVLINK5 and _NONFATAL.search(text):
        meaning += ", non-fatal"
    return f"Xid {code} ({meaning})"


@dataclass
class XidFacts:
    events: List[XidEvent] = field(default_factory=list)
    uuids: Dict[str, str] = field(default_factory=dict)  # bus -> GPU UUID (NVRM: GPU at PCI lines)
    log_read: Optional[bool] = None  # see kernlog.KernelLog.read
    log_lines: Optional[int] = None
    kmsg: List[kernlog.Event] = field(default_factory=list)  # the driver's other failure messages (kmsg.toml rows)


def xid_bus(inside: str) -> str:
    """The GPU an Xid line's parentheses name (``PCI:0000:9b:00``, ``0000:01:00``, ``PCI:0000:3b:00 GPU-I:01``),
    normalised; "" when they name none or a damaged one (``PCI:...``, ``PCI:xxxx:xx:xx``, ``<redacted>``)."""
    m = _BUS_IN.match(inside)
    return norm_bus(m.group(1)) if m else ""


def parse_events(log: kernlog.KernelLog) -> XidFacts:
    f = XidFacts(log_read=log.read, log_lines=log.total, kmsg=kernlog.area_events(log, NAME, ""))
    notice_bus: Optional[str] = None  # the GPU of the driver's last multi-line "The NVIDIA GPU <bdf>" notice
    for when, msg in log.lines:
        m = _XID.search(msg)
        if m:
            bus, code = xid_bus(m.group("key")), int(m.group("code"))
            if code == 79:  # the notice printed before its Xid line is the same event
                f.events = [e for e in f.events if not (e.code == 79 and e.bus == bus and _NOTICE in e.text)]
            f.events.append(XidEvent(bus, code, msg[m.end():].lstrip(" ,").strip(), when,
                                     kernlog.short(f"{when} {msg}".strip())))
            continue
        m = _PLUGIN_XID.search(msg) or _NODE_REASON_XID.search(msg)
        if m:  # the plugin names the GPU by its UUID, the scheduler's node list the node: neither names its bus
            f.events.append(XidEvent(m.group("key"), int(m.group("code")), msg[m.end():].lstrip(" ;-").strip(), when,
                                     kernlog.short(f"{when} {msg}".strip())))
            continue
        m = _QUOTED_XID.search(msg) or _CHECK_XID.search(msg)
        if m:  # the GPU is not named
            said = msg[m.start("msg"):] if "msg" in m.re.groupindex else msg[m.start():]
            f.events.append(XidEvent("", int(m.group("code")), said.strip(), when,
                                     kernlog.short(f"{when} {msg}".strip())))
            continue
        m = _THE_GPU.search(msg)
        if m:
            notice_bus = norm_bus(m.group(1))
        if "fallen off the bus" in msg:
            m = _OFF_BUS.search(msg)
            bus = norm_bus(m.group(1)) if m else (notice_bus or "")
            # the driver's notice without an Xid line: as Xid 79 on that GPU, once
            if not any(e.bus == bus and e.code == 79 for e in f.events):
                f.events.append(XidEvent(bus, 79, f"GPU has fallen off the bus {_NOTICE}", when,
                                         kernlog.short(f"{when} {msg}".strip())))
            continue
        m = _GPU_AT.search(msg)
        if m:
            f.uuids[norm_bus(m.group(1))] = m.group(2)
    return f


def parse(raw) -> XidFacts:
    return parse_events(parsed(raw, kernlog.SOURCE.name, kernlog.parse))


def _gpu_names(facts: XidFacts, node: Optional[NodeFacts]) -> Dict[str, str]:
    """bus -> "GPU3 (0000:9b:00.0)" where the gpu area knows the index, else the bus id."""
    names: Dict[str, str] = {"": UNNAMED}
    gpu = node.get("gpu") if node is not None else None
    for g in getattr(gpu, "gpus", None) or []:
        bus = getattr(g, "bus_id", None)
        if bus:
            names[norm_bus(bus)] = f"GPU{g.index} ({norm_bus(bus)})"
        uuid = getattr(g, "uuid", None)
        for b, u in facts.uuids.items():
            if uuid and u == uuid and b not in names:
                names[b] = f"GPU{g.index} ({b})"
    return names


def _rows(per_gpu: "OrderedDict[str, List[XidEvent]]", names: Dict[str, str], kinds) -> tuple:
    rows: List[str] = []
    evidence: List[str] = []
    codes: Dict[str, Dict[int, int]] = {}
    for bus, events in per_gpu.items():
        mine = [e for e in events if e.kind in kinds]
        if not mine:
            continue
        counts: "OrderedDict[str, int]" = OrderedDict()
        for e in mine:
            counts[e.meaning] = counts.get(e.meaning, 0) + 1
        name = names.get(bus, bus)
        codes[name] = {}
        for e in mine:
            codes[name][e.code] = codes[name].get(e.code, 0) + 1
        last = mine[-1]
        rows.append(f"{name}: " + ", ".join(f"{m} x{n}" for m, n in counts.items())
                    + f"; last {last.when or 'at an unknown time'}")
        evidence.extend(e.line for e in mine[:2])
        if len(mine) > 2:
            evidence.append(last.line)
    return rows, evidence, codes


def _actions(events: List[XidEvent]) -> str:
    seen: "OrderedDict[int, str]" = OrderedDict()
    for e in events:
        code = e.cause if e.cause in CODES and e.code == 45 else e.code
        if code in CODES and code not in seen:
            seen[code] = CODES[code][2]
    return "; ".join(f"Xid {c}: {a} ({ROWS[c]['where']})" for c, a in seen.items())


def judge(facts: Optional[XidFacts], node: NodeFacts) -> List[Finding]:
    facts = facts if facts is not None else XidFacts()
    names = _gpu_names(facts, node)
    # a GSP timeout printed with its Xid 119/120 line is that event, judged with the Xid codes
    gsp = any(e.code in (119, 120) for e in facts.events)
    kmsg = [e for e in facts.kmsg if not (gsp and e.message.check == "xid.gsp")]
    return _judge_xid(facts, names) + kernlog.judge_rows(NAME, kmsg, facts.log_read, facts.log_lines,
                                                          lambda d: names.get(d, d))


def _judge_xid(facts: XidFacts, names: Dict[str, str]) -> List[Finding]:
    if facts.log_read is None:
        return [skip(NAME, "xid.events", "the kernel log was not collected (dmesg, or journalctl -k)")]
    if facts.log_read is False:
        return [skip(NAME, "xid.events", "could not read the kernel log on this node (dmesg and journalctl -k refused)",
                     fix="Run the check as root, or allow it: sysctl kernel.dmesg_restrict=0, or add the user to the "
                         "systemd-journal (or adm) group.")]
    per_gpu: "OrderedDict[str, List[XidEvent]]" = OrderedDict()
    for e in facts.events:
        per_gpu.setdefault(e.bus, []).append(e)
    acted = [e for e in facts.events if e.kind != "info"]
    if not acted:
        n = f" ({facts.log_lines} lines read)" if facts.log_lines is not None else ""
        rows, evidence, _ = _rows(per_gpu, names, ("info",))
        info = f"; informational only: {'; '.join(rows)}" if rows else ""
        what = "no Xid events that need action" if rows else "no Xid events"
        return [ok(NAME, "xid.events", f"{what} in the kernel log since boot{n}{info}",
                   actual=0, expected=0, evidence=evidence[:6])]
    findings: List[Finding] = []
    for kinds, check in ((DRAIN, "xid.critical"), (("memory",), "xid.memory"), (("other", "unused"), "xid.other"),
                         (("driver",), "xid.driver"), (("job",), "xid.application")):
        rows, evidence, codes = _rows(per_gpu, names, kinds)
        if not rows:
            continue
        msg = "; ".join(rows)
        mine = [e for e in facts.events if e.kind in kinds]
        actions = _actions(mine)
        if check == "xid.critical":
            reboot = any(e.kind == "reboot" for e in mine)
            findings.append(fail(NAME, check, f"Xid events that take a GPU out of service since boot: {msg}",
                                 actual=codes, expected="no Xid of the GPU reset, node reboot or hardware class",
                                 evidence=evidence[:12],
                                 fix="Drain the node. " + ("Reboot it" if reboot else "Reset the GPU (nvidia-smi -r -i "
                                     "<index>, or reboot)") + " and run 'dcgmi diag -r 3'; if the Xid returns (79, or "
                                     f"48/95 repeating, 64), replace the GPU. The catalog's actions: {actions}. "
                                     f"{CATALOGUE}."))
        elif check == "xid.memory":
            findings.append(warn(NAME, check, f"GPU memory error bookkeeping events since boot: {msg}",
                                 actual=codes, expected=0, evidence=evidence[:12],
                                 fix="See gpuhealth.row_remap and gpuhealth.ecc for the state they left: a pending row "
                                     f"remap needs a GPU reset. {CATALOGUE}."))
        elif check == "xid.other":
            findings.append(warn(NAME, check, f"Xid events to watch (the catalog asks to investigate if they repeat, "
                                 f"or nccldiag's table does not list them): {msg}",
                                 actual=codes, expected=0, evidence=evidence[:12],
                                 fix=(f"The catalog's actions: {actions}. " if actions else "")
                                 + f"Look unlisted codes up in the {CATALOGUE}, and act on its recommended action."))
        elif check == "xid.driver":
            findings.append(warn(NAME, check, f"driver or GPU firmware errors since boot: {msg}",
                                 actual=codes, expected=0, evidence=evidence[:12],
                                 fix="The catalog asks for no action at once: if they repeat, update the driver and "
                                     "collect nvidia-bug-report.sh for NVIDIA support."))
        else:
            findings.append(warn(NAME, check, f"application Xid events since boot (a job's fault, not the GPU's "
                                 f"unless they repeat across jobs): {msg}",
                                 actual=codes, expected=0, evidence=evidence[:12],
                                 fix="Check the job that ran then (pid and name are in the lines); if these codes come "
                                     "back with different jobs, run 'dcgmi diag -r 3' on the node."))
    return findings


def summarize(facts: Optional[XidFacts]) -> Dict[str, Optional[str]]:
    return {}
