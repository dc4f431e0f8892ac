"""NVIDIA Xid events in the kernel log, classified by what they ask of the admin.

The NVIDIA driver logs every GPU error it sees as ``NVRM: Xid (PCI:<bus>):
<code>, ...``. NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors)
gives each code a cause and an action. Three kinds matter at bring-up:

- hardware or driver faults that take the GPU out of service until it is
  reset, or for good (48 double-bit ECC, 79 fallen off the bus, 94/95
  contained/uncontained ECC, 119/120 GSP errors, 154 recovery action
  changed, ...): drain the node;
- application errors (13, 31, 43, 45, 68, 109): a job's own fault, the GPU
  is fine unless they repeat across jobs;
- memory bookkeeping (63: a row was marked for remapping; 92: a high rate of
  single-bit errors): the ``gpuhealth`` area judges the state it leaves.

The events are those since boot that the kernel ring buffer still holds
(the shared ``kernel_log`` source, see :mod:`nccldiag.areas.kernlog`).
Each is mapped to its GPU index through the ``gpu`` area's bus ids, or the
``NVRM: GPU at PCI:`` lines the driver prints with an Xid.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from nccldiag.areas import kernlog
from nccldiag.areas.base import NodeFacts
from nccldiag.areas.smiq import norm_bus
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "xid"
TITLE = "Xid events"

SOURCES = (kernlog.SOURCE,)

CATALOGUE = "NVIDIA Xid catalogue, docs.nvidia.com/deploy/xid-errors"

# code -> (kind, meaning). Kinds: "drain" (fail), "app" (warn, the job's fault), "memory" (warn: judged by
# gpuhealth), anything not listed: "other" (warn, look it up).
CODES: Dict[int, tuple] = {
    13: ("app", "graphics engine exception"),
    31: ("app", "GPU memory page fault"),
    32: ("app", "invalid or corrupted push buffer stream"),
    43: ("app", "GPU stopped processing"),
    45: ("app", "preemptive cleanup, due to previous errors"),
    48: ("drain", "double-bit ECC error (DBE)"),
    61: ("drain", "internal micro-controller breakpoint/warning"),
    62: ("drain", "internal micro-controller halt"),
    63: ("memory", "ECC page retirement or row remapping recording event"),
    64: ("drain", "ECC page retirement or row remapper recording failure"),
    68: ("app", "video processor exception"),
    74: ("drain", "NVLink error"),
    79: ("drain", "GPU has fallen off the bus"),
    92: ("memory", "high single-bit ECC error rate"),
    94: ("drain", "contained ECC error"),
    95: ("drain", "uncontained ECC error"),
    109: ("app", "context switch timeout"),
    119: ("drain", "GSP RPC timeout"),
    120: ("drain", "GSP error"),
    140: ("drain", "unrecovered ECC error"),
    154: ("drain", "GPU recovery action changed"),
}

_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\):\s*(\d+),\s*(.*)")
_GPU_AT = re.compile(r"NVRM: GPU at PCI:([0-9A-Fa-f:.]+):\s*(GPU-[0-9a-fA-F-]+)")
_THE_GPU = re.compile(r"NVRM: The NVIDIA GPU ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)")
_OFF_BUS = re.compile(r"NVRM: GPU ([0-9A-Fa-f:.]+): GPU has fallen off the bus")
# 154 says what the driver now asks for; "to 0x0 (None)" clears it
_RECOVERY_NONE = re.compile(r"to 0x0+ \(None\)", re.I)


@dataclass
class XidEvent:
    bus: str  # normalised dddd:bb:dd.f
    code: int
    text: str  # the rest of the message
    when: str  # time prefix as printed ("" when none)
    line: str

    @property
    def kind(self) -> str:
        kind = CODES.get(self.code, ("other", ""))[0]
        if self.code == 154 and _RECOVERY_NONE.search(self.text):
            return "memory"
        return kind

    @property
    def meaning(self) -> str:
        return CODES.get(self.code, ("other", "not in nccldiag's table"))[1]


@dataclass
class XidFacts:
    events: List[XidEvent] = field(default_factory=list)
    uuids: Dict[str, str] = field(default_factory=dict)  # bus -> GPU UUID (NVRM: GPU at PCI lines)
    log_read: Optional[bool] = None  # see kernlog.KernelLog.read
    log_lines: Optional[int] = None


def parse_events(log: kernlog.KernelLog) -> XidFacts:
    f = XidFacts(log_read=log.read, log_lines=log.total)
    notice_bus: Optional[str] = None  # the GPU of the driver's multi-line "fallen off the bus" notice
    for when, msg in log.lines:
        m = _XID.search(msg)
        if m:
            f.events.append(XidEvent(norm_bus(m.group(1)), int(m.group(2)), m.group(3).strip(), when,
                                     kernlog.short(f"{when} {msg}".strip())))
            continue
        m = _THE_GPU.search(msg)
        if m:
            notice_bus = norm_bus(m.group(1))
        if "fallen off the bus" in msg:
            m = _OFF_BUS.search(msg)
            bus = norm_bus(m.group(1)) if m else notice_bus
            # the driver's notice without an Xid line: as Xid 79 on that GPU, once
            if bus and not any(e.bus == bus and e.code == 79 for e in f.events):
                f.events.append(XidEvent(bus, 79, "GPU has fallen off the bus (driver notice, no Xid line)", when,
                                         kernlog.short(f"{when} {msg}".strip())))
            continue
        m = _GPU_AT.search(msg)
        if m:
            f.uuids[norm_bus(m.group(1))] = m.group(2)
    return f


def parse(raw) -> XidFacts:
    return parse_events(kernlog.parse(raw.get(kernlog.SOURCE.name)))


def _gpu_names(facts: XidFacts, node: Optional[NodeFacts]) -> Dict[str, str]:
    """bus -> "GPU3 (0000:9b:00.0)" where the gpu area knows the index, else the bus id."""
    names: Dict[str, str] = {}
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


def judge(facts: Optional[XidFacts], node: NodeFacts) -> List[Finding]:
    if facts is None or facts.log_read is None:
        return [skip(NAME, "xid.events", "the kernel log was not collected")]
    if facts.log_read is False:
        return [skip(NAME, "xid.events", "the kernel log is unreadable on this node (dmesg and journalctl -k refused)",
                     fix="Run the check as root, or allow it: sysctl kernel.dmesg_restrict=0, or add the user to the "
                         "systemd-journal (or adm) group.")]
    if not facts.events:
        n = f" ({facts.log_lines} lines read)" if facts.log_lines is not None else ""
        return [ok(NAME, "xid.events", f"no Xid events in the kernel log since boot{n}", actual=0, expected=0)]
    names = _gpu_names(facts, node)
    per_gpu: "OrderedDict[str, List[XidEvent]]" = OrderedDict()
    for e in facts.events:
        per_gpu.setdefault(e.bus, []).append(e)
    findings: List[Finding] = []
    for kind, check in (("drain", "xid.critical"), ("memory", "xid.memory"), ("other", "xid.other"), ("app", "xid.application")):
        rows = []
        evidence: List[str] = []
        codes: Dict[str, Dict[int, int]] = {}
        for bus, events in per_gpu.items():
            mine = [e for e in events if e.kind == kind]
            if not mine:
                continue
            counts: Dict[int, int] = {}
            for e in mine:
                counts[e.code] = counts.get(e.code, 0) + 1
            name = names.get(bus, bus)
            codes[name] = counts
            last = mine[-1]
            parts = ", ".join(f"Xid {c} ({CODES.get(c, ('', 'unlisted'))[1]}) x{n}" for c, n in counts.items())
            rows.append(f"{name}: {parts}; last {last.when or 'at an unknown time'}")
            evidence.extend(e.line for e in mine[:2])
            if len(mine) > 2:
                evidence.append(last.line)
        if not rows:
            continue
        msg = "; ".join(rows)
        if kind == "drain":
            findings.append(fail(NAME, check, f"Xid events that take a GPU out of service since boot: {msg}",
                                 actual=codes, expected="no Xid 48/64/74/79/94/95/119/120/140/154", evidence=evidence[:12],
                                 fix="Drain the node. Reset the GPU (nvidia-smi -r -i <index>, or reboot) and run "
                                     "'dcgmi diag -r 3'; if the Xid returns (79 or 48/95 repeating, 64), replace the GPU. "
                                     f"Per-code actions: {CATALOGUE}."))
        elif kind == "memory":
            findings.append(warn(NAME, check, f"GPU memory error bookkeeping events since boot: {msg}",
                                 actual=codes, expected=0, evidence=evidence[:12],
                                 fix="See gpuhealth.row_remap and gpuhealth.ecc for the state they left: a pending row "
                                     f"remap needs a GPU reset. {CATALOGUE}."))
        elif kind == "other":
            findings.append(warn(NAME, check, f"Xid events nccldiag does not classify: {msg}",
                                 actual=codes, expected=0, evidence=evidence[:12],
                                 fix=f"Look the code up in the {CATALOGUE}, and act on its recommended action."))
        else:
            findings.append(warn(NAME, check, f"application Xid events since boot (a job's fault, not the GPU's "
                                 f"unless they repeat across jobs): {msg}",
                                 actual=codes, expected=0, evidence=evidence[:12],
                                 fix="Check the job that ran then (pid and name are in the lines); if these codes come "
                                     "back with different jobs, run 'dcgmi diag -r 3' on the node."))
    return findings


def summarize(facts: Optional[XidFacts]) -> Dict[str, Optional[str]]:
    return {}
