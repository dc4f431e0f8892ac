"""PCIe errors: AER counters of GPUs and NICs, GPU replay counters, AER events in the kernel log.

Beside the link width and speed (``pcie``, ``gpu.pcie_width``), a link can
be up at full width and still lose packets. Three views:

- ``pcie_errors.aer``: the kernel's AER counters of every NVIDIA (GPU,
  NVSwitch) and Mellanox (NIC) function
  (``/sys/bus/pci/devices/*/aer_dev_{correctable,nonfatal,fatal}``, kernel
  sysfs ABI ``sysfs-bus-pci-devices-aer_stats``). A fatal error fails, a
  non-fatal one warns; no published tool sets a threshold for correctable
  errors, so nccldiag warns above 100 per function since boot (a link that
  keeps correcting is a link about to fail).
- ``pcie_errors.replays``: ``Replays Since Reset`` and ``Replay Number
  Rollovers`` of each GPU (``nvidia-smi -q``). DCGM's health watch warns
  above 8 replays a minute; nccldiag averages the count over the node's
  uptime, which can only understate the rate, and warns on any rollover.
- ``pcie_errors.kernel_log``: AER events the kernel logged
  (``PCIe Bus Error: severity=...``; older kernels ``AER: Corrected error
  received``; ``AER: device recovery failed`` and ``can't recover`` as fatal),
  per reporting port, from the shared ``kernel_log`` source.
- ``pcie_errors.bar``: device BARs (0 to 5) the kernel could not assign
  (``BAR 1: no space for``, ``failed to assign``, ``can't assign; no space``,
  ``can't claim BAR``) and not assigned later in the log, and the NVIDIA
  driver's ``BARn is 0M``: a device without its MMIO space cannot be used (a
  GPU missing from ``nvidia-smi``, a NIC from ``ibstat``). A GPU's or RDMA
  NIC's (by the ``gpu`` and ``pcie`` areas' inventories, or the driver's own
  line) fails; another device's warns. Bridge windows, expansion ROMs and
  SR-IOV VF BARs are left out: they fail on healthy servers.
- ``pcie_errors.link_down``: hot-plug slots whose link went down
  (``pciehp: Slot(N): Link Down``) (**warn**).

The kernel messages are rows of ``nccldiag/knowledge/kmsg.toml`` (area
``pcie_errors``), each with its source.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.areas import kernlog, smiq
from nccldiag.areas.base import NodeFacts, Source, section, parsed
from nccldiag.model.findings import Finding, fail, ok, skip, warn
from nccldiag.spec import thresholds

NAME = "pcie_errors"
TITLE = "PCIe errors"

AER_SOURCE = Source(
    "aer_sysfs",
    '[ -d "$R/sys/bus/pci/devices" ] || exit 0; '
    'u=; read u _ 2>/dev/null <"$R/proc/uptime"; echo "uptime: $u"; set --; '
    'for d in "$R"/sys/bus/pci/devices/*; do [ -r "$d/aer_dev_correctable" ] || continue; v=; read v 2>/dev/null <"$d/vendor"; '
    'case "$v" in 0x10de|0x15b3) ;; *) continue;; esac; c=; read c 2>/dev/null <"$d/class"; echo "device: ${d##*/} $v $c"; '
    'set -- "$@" "$d/aer_dev_correctable" "$d/aer_dev_nonfatal" "$d/aer_dev_fatal"; done; '
    '[ $# -gt 0 ] && grep -sH . "$@" | head -n 20000; true',
    timeout=15,
    description="AER error counters of NVIDIA and Mellanox PCI functions (sysfs), and the uptime",
)

SOURCES = (AER_SOURCE, smiq.SOURCE, kernlog.SOURCE)

CORRECTABLE_LIMIT = 100  # nccldiag's own: no anchor publishes an AER threshold
REPLAYS_PER_MIN = 8.0  # DCGM health watch (DcgmHealthWatch.cpp)
_KINDS = {"aer_dev_correctable": "correctable", "aer_dev_nonfatal": "nonfatal", "aer_dev_fatal": "fatal"}


@dataclass
class AerDevice:
    bdf: str
    vendor: Optional[str] = None
    pci_class: Optional[str] = None
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)  # kind -> {name: n}

    def total(self, kind: str) -> int:
        d = self.counts.get(kind, {})
        tot = [v for k, v in d.items() if k.startswith("TOTAL_ERR")]
        return tot[0] if tot else sum(d.values())

    @property
    def label(self) -> str:
        what = {"0x10de": "NVIDIA", "0x15b3": "Mellanox"}.get(self.vendor or "", "")
        return f"{self.bdf}" + (f" ({what})" if what else "")


@dataclass
class AerEvent:
    port: str
    severity: str  # "corrected" | "nonfatal" | "fatal"
    line: str


@dataclass
class PcieErrorFacts:
    devices: List[AerDevice] = field(default_factory=list)
    aer_collected: bool = False
    uptime_s: Optional[float] = None
    replays: Dict[str, tuple] = field(default_factory=dict)  # GPU -> (replays, rollovers)
    replays_absent: Optional[str] = None  # why there are none (smiq.why_absent)
    events: List[AerEvent] = field(default_factory=list)
    log_read: Optional[bool] = None
    log_lines: Optional[int] = None
    bar: List[kernlog.Event] = field(default_factory=list)  # BARs left unassigned (resolved ones cleared)
    kmsg: List[kernlog.Event] = field(default_factory=list)  # the other rows of this area (hot-plug links down)


_HEADER = rx.compile(r"^==> (\S+) <==$")
_GREP = rx.compile(r"^(/\S+/(aer_dev_\w+)):(.*)$")
_BDF = rx.compile(r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])/aer_dev_\w+$")


def parse_aer(text: Optional[str]) -> PcieErrorFacts:
    """The source's ``path:Name value`` lines, or the ``==> path <==`` form of a fixture tree."""
    f = PcieErrorFacts()
    if text is None:
        return f
    f.aer_collected = True
    devs: Dict[str, AerDevice] = {}
    cur_path = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("uptime:"):
            v = smiq.to_float(line.split(":", 1)[1])
            f.uptime_s = v
            continue
        if line.startswith("device:"):
            parts = line.split()[1:]
            if parts:
                d = devs.setdefault(parts[0].lower(), AerDevice(parts[0].lower()))
                d.vendor = parts[1] if len(parts) > 1 else None
                d.pci_class = parts[2] if len(parts) > 2 else None
            continue
        m = _HEADER.match(line)
        if m:
            cur_path = m.group(1)
            continue
        m = _GREP.match(line)
        if m:
            path, value = m.group(1), m.group(3)
        elif cur_path:
            path, value = cur_path, line
        else:
            continue
        b = _BDF.search(path)
        if not b:
            continue
        kind = _KINDS.get(path.rsplit("/", 1)[-1])
        parts = value.split()
        if kind is None or len(parts) != 2 or not parts[1].isdigit():
            continue
        d = devs.setdefault(b.group(1).lower(), AerDevice(b.group(1).lower()))
        d.counts.setdefault(kind, {})[parts[0]] = int(parts[1])
    f.devices = list(devs.values())
    return f


_AER_DETAIL = kernlog.BY_ID["pci-aer-bus-error"]  # "PCIe Bus Error: severity=..."
_AER_RECEIVED = kernlog.BY_ID["pci-aer-received"]  # "AER: ... error received"
_AER_FAILED = kernlog.BY_ID["pci-aer-recovery-failed"]  # "AER: device recovery failed", "can't recover"
_FW_SECTION = kernlog.BY_ID["pci-aer-firmware-section"]  # an APEI record's "section_type: PCIe error"
_FW_STATUS = kernlog.BY_ID["pci-aer-firmware-status"]  # "aer_status: 0x..., aer_mask: 0x..." after the firmware
UNKNOWN = "of unknown severity"  # the kernel's line after a firmware's record that was not in the log


def _sev(word: str) -> str:
    w = word.lower()
    if "fatal" in w and "non-fatal" not in w:
        return "fatal"
    if "non-fatal" in w or "uncorrect" in w:
        return "nonfatal"
    return "corrected"


def parse_events(log: kernlog.KernelLog) -> List[AerEvent]:
    """One event per ``PCIe Bus Error`` line; ``error received`` lines count where no such line follows them;
    a recovery that failed is a fatal event on its device. Firmware-first errors: one event per PCIe section of
    a firmware's APEI record (its severity and device read from the record), the kernel's ``aer_status`` line
    that follows it on that device being the same event; an ``aer_status`` line without its record is an event
    of unknown severity."""
    events: List[AerEvent] = []
    pending: Optional[AerEvent] = None
    section: Optional[AerEvent] = None
    for e in kernlog.area_events(log, NAME, "aer"):
        where = e.device or kernlog.bus(e.text) or "?"
        if e.message is _FW_SECTION:
            section = AerEvent(where, _sev(e.groups.get("severity", "")), e.line)
            events.append(section)
        elif e.message is _FW_STATUS:
            if section is not None and section.port in (where, "?"):
                section.port = where
            else:
                events.append(AerEvent(where, UNKNOWN, e.line))
            section = None
        elif e.message is _AER_FAILED:
            events.append(AerEvent(where, "fatal", e.line))
        elif e.message is _AER_DETAIL:
            pending = None
            events.append(AerEvent(where, _sev(e.groups.get("severity", "")), e.line))
        else:
            if pending is not None:
                events.append(pending)
            pending = AerEvent(where, _sev(e.groups.get("severity", "")), e.line)
    if pending is not None:
        events.append(pending)
    # an "error received" line followed by its "PCIe Bus Error" line is one event
    return events


def parse(raw) -> PcieErrorFacts:
    f = parse_aer(section(raw, AER_SOURCE.name))
    q = parsed(raw, smiq.SOURCE.name, smiq.parse_q)
    for i, g in enumerate(q.gpus if q else []):
        r = smiq.to_int(g.get("PCI/Replays Since Reset"))  # "Replays since reset" before 460: the case is free
        if r is not None:
            f.replays[g.bus_id or f"GPU {i}"] = (r, smiq.to_int(g.get("PCI/Replay Number Rollovers")) or 0)
    if not f.replays:
        f.replays_absent = smiq.why_absent(raw.get(smiq.SOURCE.name), "GPU replay counters")
    log = parsed(raw, kernlog.SOURCE.name, kernlog.parse)
    f.log_read, f.log_lines = log.read, log.total
    f.events = parse_events(log)
    f.bar = kernlog.area_events(log, NAME, "bar")
    f.kmsg = kernlog.area_events(log, NAME, "")
    return f


def judge(facts: Optional[PcieErrorFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "pcie_errors.aer", "no PCIe error outputs came back")]
    return (_judge_aer(facts, node) + _judge_replays(facts, node) + _judge_log(facts) + [_judge_bar(facts, node)]
            + kernlog.judge_rows(NAME, facts.kmsg, facts.log_read, facts.log_lines))


def _judge_aer(facts: PcieErrorFacts, node: Optional[NodeFacts] = None) -> List[Finding]:
    corr_limit, src = thresholds.value(node, "aer_correctable", CORRECTABLE_LIMIT)
    devs = [d for d in facts.devices if d.counts]
    if not devs:
        why = "no NVIDIA or Mellanox function reports AER counters" if facts.aer_collected else "AER counters were not collected"
        return [skip(NAME, "pcie_errors.aer", why + " (kernel before 5.7, AER off, or no such device)")]
    ev = []
    fatal = [d for d in devs if d.total("fatal")]
    nonfatal = [d for d in devs if d.total("nonfatal")]
    corr = [d for d in devs if d.total("correctable") > corr_limit]
    for d in fatal + nonfatal + corr:
        nz = {k: {n: v for n, v in c.items() if v and not n.startswith("TOTAL")} for k, c in d.counts.items()}
        ev.append(f"{d.label}: " + "; ".join(f"{k} " + ", ".join(f"{n} {v}" for n, v in c.items()) for k, c in nz.items() if c))
    actual = {d.label: {k: d.total(k) for k in ("correctable", "nonfatal", "fatal")} for d in fatal + nonfatal + corr}
    fix = ("Reseat the device and its riser or cable, check the slot's PCIe generation setting in the BIOS, and update "
           "the device firmware; a GPU or NIC that keeps logging uncorrectable errors should be replaced. The counters "
           "reset at reboot.")
    if fatal:
        return [fail(NAME, "pcie_errors.aer", f"fatal PCIe errors on {', '.join(d.label for d in fatal)}", actual=actual,
                     expected="0 fatal", evidence=ev, fix=fix)]
    if nonfatal or corr:
        what = []
        if nonfatal:
            what.append(f"uncorrectable (non-fatal) errors on {', '.join(d.label for d in nonfatal)}")
        if corr:
            what.append(f"more than {corr_limit} correctable errors on {', '.join(d.label for d in corr)}")
        return [warn(NAME, "pcie_errors.aer", "PCIe " + "; ".join(what), actual=actual,
                     expected=f"0 uncorrectable, at most {corr_limit} correctable{src}", evidence=ev, fix=fix)]
    total = sum(d.total("correctable") for d in devs)
    return [ok(NAME, "pcie_errors.aer", f"no uncorrectable PCIe errors on {len(devs)} GPU/NIC functions"
               + (f" ({total} correctable)" if total else ""), actual=0, expected=0)]


def _judge_replays(facts: PcieErrorFacts, node: Optional[NodeFacts] = None) -> List[Finding]:
    per_min, src = thresholds.value(node, "pcie_replays_per_minute", REPLAYS_PER_MIN)
    if not facts.replays:
        return [skip(NAME, "pcie_errors.replays", facts.replays_absent or "GPU replay counters not in the report")]
    minutes = facts.uptime_s / 60 if facts.uptime_s else None
    ev = [f"GPU {g}: Replays Since Reset {r}, Rollovers {o}" for g, (r, o) in facts.replays.items() if r or o]
    rolled = [g for g, (r, o) in facts.replays.items() if o]
    fast = [g for g, (r, o) in facts.replays.items() if minutes and r / minutes > per_min]
    if rolled or fast:
        return [warn(NAME, "pcie_errors.replays", "PCIe replays on " + ", ".join(f"GPU {g}" for g in rolled + fast)
                     + (f" (more than {per_min:g} a minute since boot)" if fast else " (the replay counter rolled over)"),
                     actual={g: facts.replays[g][0] for g in rolled + fast}, expected=f"at most {per_min:g} a minute{src}",
                     evidence=ev, fix="Replays are packets the link resent: a marginal link (riser, retimer, slot). Reseat "
                     "the GPU, check the slot in the BIOS, and watch 'nvidia-smi -q -d PCIE' under load.")]
    total = sum(r for r, _ in facts.replays.values())
    rate = f", {total / minutes:.2f} a minute since boot" if minutes and total else ""
    return [ok(NAME, "pcie_errors.replays", f"PCIe replays on {len(facts.replays)} GPUs: {total} in all{rate}",
               actual=total, evidence=ev)]


def _judge_log(facts: PcieErrorFacts) -> List[Finding]:
    if facts.log_read is None:
        return [skip(NAME, "pcie_errors.kernel_log", "the kernel log was not collected")]
    if facts.log_read is False:
        return [skip(NAME, "pcie_errors.kernel_log", "the kernel log is unreadable on this node")]
    if not facts.events:
        return [ok(NAME, "pcie_errors.kernel_log", "no PCIe AER events in the kernel log since boot", actual=0, expected=0)]
    per: Dict[str, Dict[str, int]] = {}
    for e in facts.events:
        per.setdefault(e.port, {}).setdefault(e.severity, 0)
        per[e.port][e.severity] += 1
    msg = "; ".join(f"{p}: " + ", ".join(f"{n} {s}" for s, n in d.items()) for p, d in per.items())
    ev = [e.line for e in facts.events[-10:]]
    fix = ("The port named is the one that reported; the device below it is in the lines that follow the event "
           "(dmesg | grep -A3 AER). Reseat that device and its riser, check the BIOS PCIe settings, update its firmware.")
    sev = {e.severity for e in facts.events}
    if "fatal" in sev:
        return [fail(NAME, "pcie_errors.kernel_log", f"fatal PCIe AER events in the kernel log: {msg}", actual=per,
                     expected=0, evidence=ev, fix=fix)]
    return [warn(NAME, "pcie_errors.kernel_log", f"PCIe AER events in the kernel log since boot: {msg}", actual=per,
                 expected=0, evidence=ev, fix=fix)]


def known_devices(node: Optional[NodeFacts]) -> Dict[str, str]:
    """bus -> "GPU" or "RDMA NIC", from the ``gpu`` area (nvidia-smi's GPUs and the NVIDIA PCI functions of
    sysfs, which lists the GPUs the driver could not take) and the ``pcie`` area's lspci."""
    out: Dict[str, str] = {}
    if node is None:
        return out
    gpu = node.get("gpu")
    for g in list(getattr(gpu, "gpus", None) or []) + list(getattr(gpu, "pci_gpus", None) or []):
        if getattr(g, "bus_id", None):
            out[smiq.norm_bus(g.bus_id)] = "GPU"
    pcie = node.get("pcie")
    for d in getattr(pcie, "devices", None) or []:
        if d.is_nvidia_gpu:
            out[smiq.norm_bus(d.bdf)] = "GPU"
        elif d.is_rdma_nic:
            out.setdefault(smiq.norm_bus(d.bdf), "RDMA NIC")
    return out


def _judge_bar(facts: PcieErrorFacts, node: Optional[NodeFacts] = None) -> Finding:
    known = known_devices(node)
    found = facts.bar
    lost = [e for e in found if e.message.severity == "fail" or e.device in known]
    name = (lambda d: f"{known[d]} {d}" if d in known else d)
    return kernlog.finding(NAME, "pcie_errors.bar", found, facts.log_read, facts.log_lines, name,
                           status="fail" if lost else "warn")


def summarize(facts: Optional[PcieErrorFacts]) -> Dict[str, Optional[str]]:
    return {}
