"""GPUs: inventory, driver and CUDA version, PCIe link, NVLink link states.

Four views of the same GPUs, because each fails differently:

- ``nvidia-smi --query-gpu`` (or ``nvidia-smi -q`` when the query fails) is
  the inventory as the driver sees it;
- the PCI devices in sysfs (vendor 0x10de, display class) are the GPUs the
  bus sees, so a node whose driver is not loaded, or which lost a GPU off the
  bus, still shows how many GPUs it should have;
- ``nvidia-smi nvlink --status`` gives each link's speed or ``<inactive>``;
  one dead link on an otherwise connected GPU slows every ring through it;
- NVML (nvidia-ml-py, when importable) repeats the inventory and adds the
  P2P status NCCL itself asks for (read by the topology area).
"""
from __future__ import annotations

import csv
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from nccldiag import rx
from nccldiag.areas.base import JSON_LINE_LIMIT, NodeFacts, Source, json_line, section
from nccldiag.node import node_program
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "gpu"
TITLE = "GPUs"

QUERY_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "driver_version",
    "memory.total",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "persistence_mode",
)

# Lines the snippets print about the command itself (not its output).
_META = "nccldiag:"

_QUERY_CMD = (
    "if ! command -v nvidia-smi >/dev/null 2>&1; then echo 'nccldiag: nvidia-smi not found'; else "
    f"nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} --format=csv 2>&1; echo \"nccldiag: rc=$?\"; fi"
)

# The -q header carries the CUDA version; the whole -q output is kept only
# when --query-gpu fails (old drivers), as the fallback inventory.
_Q_CMD = (
    "command -v nvidia-smi >/dev/null 2>&1 || exit 0; "
    "if nvidia-smi --query-gpu=index --format=csv,noheader >/dev/null 2>&1; "
    "then nvidia-smi -q 2>&1 | head -n 8; else nvidia-smi -q 2>&1 | head -n 4000; fi"
)

_PCI_CMD = (
    'for d in "$R"/sys/bus/pci/devices/*; do [ -r "$d/vendor" ] || continue; '
    '[ "$(cat "$d/vendor")" = 0x10de ] || continue; c=$(cat "$d/class" 2>/dev/null); '
    "case $c in 0x0300*|0x0302*) ;; *) continue;; esac; drv=-; "
    '[ -e "$d/driver" ] && drv=$(basename "$(readlink "$d/driver")"); '
    'printf "%s %s %s %s %s\\n" "${d##*/}" "$c" "$(cat "$d/device" 2>/dev/null)" "$drv" '
    '"$(cat "$d/numa_node" 2>/dev/null || echo -)"; done'
)

_NVML_PY = node_program("nvml")

SOURCES = (
    Source("gpu_query", _QUERY_CMD, timeout=30, description="nvidia-smi --query-gpu inventory (CSV)"),
    Source("nvidia_smi_q", _Q_CMD, timeout=30, description="nvidia-smi -q header (CUDA version); all of it if --query-gpu fails"),
    Source("nvlink_status", "nvidia-smi nvlink --status", timeout=30, description="NVLink link speeds"),
    Source("pci_gpus", _PCI_CMD, description="NVIDIA display/3D PCI devices in sysfs, with bound driver"),
    # no NVIDIA driver loaded: nothing for NVML to say, and no interpreter started for it
    Source("nvml", '[ -d "$R/proc/driver/nvidia" ] || exit 0; "${NCCLDIAG_PYTHON:-python3}" -c ' + "'" + _NVML_PY + "'",
           timeout=30, line_limit=JSON_LINE_LIMIT,
           description="NVML snapshot through nvidia-ml-py (only where the NVIDIA driver is loaded)"),
)


@dataclass
class Gpu:
    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    bus_id: Optional[str] = None  # normalised: dddd:bb:dd.f, lower case
    memory_mib: Optional[int] = None
    gen: Optional[int] = None
    gen_max: Optional[int] = None
    width: Optional[int] = None
    width_max: Optional[int] = None
    persistence: Optional[str] = None
    recovery_action: Optional[str] = None  # nvidia-smi's gpu_recovery_action (R550+), where the query named it


@dataclass
class NvLinkGpu:
    index: int
    name: Optional[str] = None
    uuid: Optional[str] = None
    links: Dict[int, Optional[float]] = field(default_factory=dict)  # link -> GB/s, None when inactive

    @property
    def active(self) -> List[int]:
        return [l for l, s in self.links.items() if s is not None]

    @property
    def inactive(self) -> List[int]:
        return [l for l, s in self.links.items() if s is None]


@dataclass
class PciGpu:
    bus_id: str
    pci_class: str = ""
    device_id: str = ""
    driver: Optional[str] = None  # "nvidia", "vfio-pci", "nouveau", None when unbound
    numa_node: Optional[int] = None


@dataclass
class GpuFacts:
    gpus: List[Gpu] = field(default_factory=list)
    inventory_from: Optional[str] = None  # "query-gpu" | "nvidia-smi -q" | "nvml"
    driver_version: Optional[str] = None
    cuda_version: Optional[str] = None
    attached: Optional[int] = None  # "Attached GPUs" of nvidia-smi -q
    smi_found: Optional[bool] = None  # None: the section did not come back
    smi_error: Optional[str] = None  # what nvidia-smi printed instead of data
    nvlink: List[NvLinkGpu] = field(default_factory=list)
    pci_gpus: List[PciGpu] = field(default_factory=list)
    nvml: Optional[Dict[str, Any]] = None
    nvml_error: Optional[str] = None
    query_collected: bool = True  # the gpu_query source came back (a hand-built bundle may lack it)
    lost: List[str] = field(default_factory=list)  # nvidia-smi's "Unable to determine the device handle for GPU <bus>" lines
    pci_collected: bool = True  # the pci_gpus source came back

    @property
    def model(self) -> Optional[str]:
        names = Counter(g.name for g in self.gpus if g.name)
        return names.most_common(1)[0][0] if names else None

    @property
    def models(self) -> List[Tuple[str, int]]:
        """Every GPU model with its count, most common first (``[("NVIDIA RTX A6000", 1), ...]``)."""
        names = Counter(g.name for g in self.gpus if g.name)
        return sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))

    def models_text(self) -> str:
        """``8x NVIDIA H100 80GB HBM3`` or, mixed, ``1x NVIDIA RTX A6000 + 1x NVIDIA GeForce RTX 3090``."""
        ms = self.models
        if len(ms) <= 1:
            return f"{len(self.gpus)}x {self.model or 'GPU'}"
        return " + ".join(f"{n}x {name}" for name, n in ms)


# ---------------------------------------------------------------- parsers


# a bus id starts where a run of hex digits starts: never tried again inside the run, so linear in the text
_BUS_ID = rx.compile(r"(?<![0-9A-Fa-f])(?:([0-9A-Fa-f]+):)?([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])")


def norm_bus_id(text: Optional[str]) -> Optional[str]:
    """``00000000:53:00.0`` (nvidia-smi) and ``0000:53:00.0`` (sysfs) to one form."""
    if not text:
        return None
    m = _BUS_ID.search(text.strip())
    if not m:
        return None
    dom = int(m.group(1), 16) if m.group(1) else 0
    return f"{dom:04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}".lower()


def _no_unit(column: str) -> str:
    """``memory.total`` from ``memory.total [MiB]``."""
    return column[:column.index("[")].rstrip() if column.endswith("]") and "[" in column else column


def _int(text: Optional[str]) -> Optional[int]:
    m = re.match(r"\s*(\d+)", text or "")
    return int(m.group(1)) if m else None


def _value(text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    v = text.strip()
    return None if v in ("", "[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]") else v


def parse_query_csv(text: Optional[str]) -> tuple:
    """``(gpus, driver_version, error_text)`` from ``--query-gpu`` CSV.

    The header, when present, names the columns (any subset of fields, units
    in brackets); without it the columns are :data:`QUERY_FIELDS`. Lines that
    are not CSV rows (``NVIDIA-SMI has failed ...``) become the error text.
    """
    gpus: List[Gpu] = []
    drivers: List[str] = []
    errors: List[str] = []
    columns: List[str] = list(QUERY_FIELDS)
    for raw_line in (text or "").splitlines():
        line = raw_line.strip()
        if not line or line.startswith(_META):
            continue
        try:
            cells = next(csv.reader([line], skipinitialspace=True))
        except (csv.Error, StopIteration):
            errors.append(line)
            continue
        cells = [c.strip() for c in cells]
        if cells and cells[0] == "index":
            columns = [_no_unit(c) for c in cells]
            continue
        if len(cells) < 2 or not cells[0].isdigit():
            errors.append(line)
            continue
        row = dict(zip(columns, cells))
        g = Gpu(index=int(cells[0]))
        g.name = _value(row.get("name"))
        g.uuid = _value(row.get("uuid"))
        g.bus_id = norm_bus_id(_value(row.get("pci.bus_id") or row.get("gpu_bus_id")))
        g.memory_mib = _int(_value(row.get("memory.total")))
        g.gen = _int(_value(row.get("pcie.link.gen.current")))
        g.gen_max = _int(_value(row.get("pcie.link.gen.max")))
        g.width = _int(_value(row.get("pcie.link.width.current")))
        g.width_max = _int(_value(row.get("pcie.link.width.max")))
        g.persistence = _value(row.get("persistence_mode"))
        action = _value(row.get("gpu_recovery_action"))
        g.recovery_action = action.split()[0] if action else None
        d = _value(row.get("driver_version"))
        if d:
            drivers.append(d)
        gpus.append(g)
    driver = Counter(drivers).most_common(1)[0][0] if drivers else None
    return gpus, driver, ("\n".join(errors[:10]) or None)


def _q_line(line: str) -> Optional[Tuple[int, str, Optional[str]]]:
    """``(indent, key, value)`` of a ``nvidia-smi -q`` line (``    Bus Id : 00000000:53:00.0``); ``value`` is
    None on a section title (no colon)."""
    text = line.strip()
    if not text or text.startswith(":"):
        return None
    key, colon, value = text.partition(":")
    return len(line) - len(line.lstrip()), key.rstrip(), value.strip() if colon else None


def parse_smi_q(text: Optional[str]) -> dict:
    """``nvidia-smi -q``: header values and one :class:`Gpu` per ``GPU <busid>`` block.

    Keys are located by their path of section titles (``PCI/GPU Link Info/
    PCIe Generation/Max``), found from indentation, so a block cut short just
    leaves the later fields empty.
    """
    out: dict = {"driver": None, "cuda": None, "attached": None, "gpus": []}
    stack: List[tuple] = []  # (indent, title)
    gpu: Optional[Gpu] = None
    for line in (text or "").splitlines():
        if not line.strip() or line.startswith("="):
            continue
        gm = re.match(r"^GPU\s+([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$", line)
        if gm:
            stack = []
            gpu = Gpu(index=len(out["gpus"]), bus_id=norm_bus_id(gm.group(1)))
            out["gpus"].append(gpu)
            continue
        q = _q_line(line.replace("\t", "    "))
        if q is None:
            continue
        indent, key, value = q
        if indent == 0:
            stack = []
            if key == "Driver Version":
                out["driver"] = _value(value)
            elif key == "CUDA Version":
                out["cuda"] = _value(value)
            elif key == "Attached GPUs":
                out["attached"] = _int(value)
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if value is None:
            stack.append((indent, key))
            continue
        if gpu is None:
            continue
        path = "/".join([t for _, t in stack] + [key])
        v = _value(value)
        if path == "Product Name":
            gpu.name = v
        elif path == "GPU UUID":
            gpu.uuid = v
        elif path == "Persistence Mode":
            gpu.persistence = v
        elif path == "PCI/Bus Id":
            gpu.bus_id = norm_bus_id(v) or gpu.bus_id
        elif path == "PCI/GPU Link Info/PCIe Generation/Max":
            gpu.gen_max = _int(v)
        elif path == "PCI/GPU Link Info/PCIe Generation/Current":
            gpu.gen = _int(v)
        elif path == "PCI/GPU Link Info/Link Width/Max":
            gpu.width_max = _int(v)
        elif path == "PCI/GPU Link Info/Link Width/Current":
            gpu.width = _int(v)
        elif path == "FB Memory Usage/Total":
            gpu.memory_mib = _int(v)
    return out


_NVL_GPU = rx.compile(r"^\s*GPU\s+(\d+):\s*(.*?)(?:\s*\(UUID:\s*([^)]+)\))?\s*$")
_NVL_LINK = rx.compile(r"^\s*Link\s+(\d+):\s*(.*?)\s*$")


def parse_nvlink_status(text: Optional[str]) -> List[NvLinkGpu]:
    """``nvidia-smi nvlink --status``: per GPU, each link's GB/s or None (``<inactive>``).

    Lines that are not link speeds (``[snip]``, error counters of ``nvlink -e``)
    are ignored; an empty output is a node without NVLink.
    """
    out: List[NvLinkGpu] = []
    cur: Optional[NvLinkGpu] = None
    for line in (text or "").splitlines():
        m = _NVL_GPU.match(line)
        if m:
            cur = NvLinkGpu(int(m.group(1)), m.group(2) or None, m.group(3))
            out.append(cur)
            continue
        m = _NVL_LINK.match(line)
        if not m or cur is None:
            continue
        link, rest = int(m.group(1)), m.group(2)
        sm = re.match(r"([\d.]+)\s*GB/s$", rest)
        if sm:
            cur.links[link] = float(sm.group(1))
        elif "inactive" in rest.lower():
            cur.links[link] = None
    return out


def parse_pci_gpus(text: Optional[str]) -> List[PciGpu]:
    """Lines ``<bdf> <class> <device> <driver|-> <numa|->`` from the sysfs walk."""
    out: List[PciGpu] = []
    for line in (text or "").splitlines():
        parts = line.split()
        if not parts:
            continue
        bdf = norm_bus_id(parts[0])
        if bdf is None:
            continue
        drv = parts[3] if len(parts) > 3 and parts[3] != "-" else None
        numa = None
        if len(parts) > 4 and re.fullmatch(r"-?\d+", parts[4]) and int(parts[4]) >= 0:
            numa = int(parts[4])
        out.append(PciGpu(bdf, parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else "", drv, numa))
    return out


def parse_nvml(text: Optional[str]) -> tuple:
    """``(snapshot, error)`` from the NVML snippet's JSON line."""
    if not text or not text.strip():
        return None, None
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            data, why = json_line(line)
            if why is not None:
                return None, f"NVML output could not be read: {why}"
            if not isinstance(data, dict):
                return None, "NVML output is not an object"
            if data.get("error"):
                return None, str(data["error"])
            return data, None
    return None, text.strip().splitlines()[-1][:200]


def _cuda_from_nvml(value: Any) -> Optional[str]:
    if isinstance(value, int) and value > 0:
        return f"{value // 1000}.{(value % 1000) // 10}"
    return None


def _gpus_from_nvml(snap: Mapping[str, Any]) -> List[Gpu]:
    out = []
    for d in snap.get("gpus") or []:
        if not isinstance(d, dict) or not isinstance(d.get("index"), int):
            continue
        out.append(
            Gpu(d["index"], d.get("name"), d.get("uuid"), norm_bus_id(d.get("bus_id")), d.get("memory_mib"),
                d.get("gen"), d.get("gen_max"), d.get("width"), d.get("width_max"))
        )
    return out


# nvidia-smi cannot reach a GPU it knows: "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error"
# (or "GPU is lost"): the GPU fell off the bus or stopped answering, not a driver fault
_LOST = rx.compile(r"Unable to determine the device handle for GPU\s*([0-9A-Fa-f:.]+)|GPU is lost", re.I)


def parse(raw: Mapping[str, Optional[str]]) -> GpuFacts:
    f = GpuFacts()
    query = raw.get("gpu_query")
    if query is not None:
        f.smi_found = "nvidia-smi not found" not in query
        gpus, driver, err = parse_query_csv(query)
        f.driver_version = driver
        f.lost = [l.strip() for l in (err or "").splitlines() if _LOST.search(l)]
        rc = re.search(r"^nccldiag: rc=(\d+)", query, re.M)
        if gpus:
            f.gpus, f.inventory_from = gpus, "query-gpu"
        elif f.smi_found:
            if err:
                f.smi_error = err
            elif rc is None:
                f.smi_error = "nvidia-smi did not finish (it hung or was killed)"
            elif rc.group(1) != "0":
                f.smi_error = f"nvidia-smi exited with status {rc.group(1)}"
    q = parse_smi_q(section(raw, "nvidia_smi_q"))
    f.cuda_version = q["cuda"]
    f.attached = q["attached"]
    f.driver_version = f.driver_version or q["driver"]
    if not f.gpus and q["gpus"]:
        f.gpus, f.inventory_from = q["gpus"], "nvidia-smi -q"
        f.smi_error = None
    if not f.gpus and query is None:
        # no inventory collected (a hand-built bundle): the full nvidia-smi -q of the health areas lists the GPUs too
        full = parse_smi_q(section(raw, "nvidia_smi_full"))
        if full["gpus"]:
            f.gpus, f.inventory_from = full["gpus"], "nvidia-smi -q"
            f.driver_version = f.driver_version or full["driver"]
            f.cuda_version = f.cuda_version or full["cuda"]
    f.query_collected = query is not None
    f.pci_collected = raw.get("pci_gpus") is not None
    f.nvlink = parse_nvlink_status(section(raw, "nvlink_status"))
    if not f.gpus and query is None and any(g.name or g.uuid for g in f.nvlink):
        # ... and so does nvidia-smi nvlink --status ("GPU 0: <name> (UUID: GPU-...)"), so that its links are judged
        f.gpus = [Gpu(g.index, g.name, g.uuid) for g in f.nvlink]
        f.inventory_from = "nvidia-smi nvlink --status"
    f.pci_gpus = parse_pci_gpus(section(raw, "pci_gpus"))
    f.nvml, f.nvml_error = parse_nvml(section(raw, "nvml"))
    if f.nvml:
        f.driver_version = f.driver_version or f.nvml.get("driver")
        f.cuda_version = f.cuda_version or _cuda_from_nvml(f.nvml.get("cuda"))
        if not f.gpus:
            f.gpus = _gpus_from_nvml(f.nvml)
            f.inventory_from = "nvml" if f.gpus else None
        if not f.nvlink:
            for d in _gpus_from_nvml(f.nvml):
                states = next((g.get("nvlink") for g in f.nvml["gpus"] if g.get("index") == d.index), None) or []
                if any(states):  # all-disabled lists are GPUs without NVLink
                    f.nvlink.append(NvLinkGpu(d.index, d.name, d.uuid, {i: (0.0 if s else None) for i, s in enumerate(states)}))
    return f


# ---------------------------------------------------------------- judgement

_DRIVER_FIX = (
    "Load the NVIDIA driver: check 'lsmod | grep nvidia', 'dmesg | grep -i nvrm' and that the installed driver "
    "matches the running kernel (DKMS build); reinstall it or reboot into the kernel it was built for."
)


def _gpu_line(g: Gpu) -> str:
    link = ""
    if g.gen is not None or g.width is not None:
        link = f" PCIe gen{g.gen or '?'}/{g.gen_max or '?'} x{g.width or '?'}/{g.width_max or '?'}"
    mem = f" {g.memory_mib} MiB" if g.memory_mib else ""
    return f"GPU{g.index} {g.name or '?'} {g.bus_id or '?'}{mem}{link}"


def _missing_from_smi(facts: GpuFacts) -> List[PciGpu]:
    seen = {g.bus_id for g in facts.gpus if g.bus_id}
    if not seen:
        return []
    return [p for p in facts.pci_gpus if p.bus_id not in seen]


def judge(facts: Optional[GpuFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "gpu.present", "no GPU outputs came back")]
    nvml = _judge_nvml(facts)
    return _judge(facts, node) + nvml


def _judge(facts: GpuFacts, node: NodeFacts) -> List[Finding]:
    pci = facts.pci_gpus
    if not facts.gpus and not pci and facts.lost:
        return [_lost_finding(facts)]
    if not facts.gpus and not pci:
        if facts.smi_found and facts.smi_error:
            return [
                fail(
                    NAME,
                    "gpu.driver",
                    "nvidia-smi is installed but fails, and no GPU is listed",
                    evidence=facts.smi_error.splitlines()[:4],
                    fix=_DRIVER_FIX,
                )
            ]
        if facts.nvml_error and _NVML_INIT in facts.nvml_error:
            return []  # the driver is loaded (the NVML snapshot only runs then) and NVML says why it fails: see gpu.nvml
        return [skip(NAME, "gpu.present", _why_no_gpu(facts, node))]
    findings: List[Finding] = []
    if not facts.gpus:
        drivers = sorted({p.driver or "none" for p in pci})
        if facts.smi_found is False:
            why = "nvidia-smi is not installed"
        elif facts.smi_error:
            why = "nvidia-smi fails"
        else:
            why = "nvidia-smi lists no GPU"
        return [
            fail(
                NAME,
                "gpu.driver",
                f"{len(pci)} NVIDIA GPU(s) on the PCI bus but {why} (driver bound: {', '.join(drivers)})",
                actual={"pci_gpus": len(pci), "drivers": drivers},
                expected="the nvidia driver loaded and nvidia-smi listing every GPU",
                evidence=[f"{p.bus_id} class {p.pci_class} device {p.device_id} driver {p.driver or '-'}" for p in pci[:8]]
                + (facts.smi_error or "").splitlines()[:3],
                fix=_DRIVER_FIX,
            )
        ]
    n = len(facts.gpus)
    cut = ""
    if facts.inventory_from == "nvidia-smi -q" and facts.attached and facts.attached > n:
        cut = f"; nvidia-smi -q reports {facts.attached} attached but its output held {n} GPU blocks"
    findings.append(
        ok(
            NAME,
            "gpu.inventory",
            f"{facts.models_text()}, driver {facts.driver_version or '?'}, CUDA {facts.cuda_version or '?'}"
            f" (from {facts.inventory_from}{cut})" + (", mixed GPU models" if len(facts.models) > 1 else ""),
            actual={"count": n, "model": facts.model if len(facts.models) <= 1 else [m for m, _ in facts.models],
                    "driver": facts.driver_version, "cuda": facts.cuda_version},
            evidence=[_gpu_line(g) for g in facts.gpus],
        )
    )
    if facts.lost:
        findings.append(_lost_finding(facts))
    findings.extend(_judge_missing(facts))
    findings.extend(_judge_pcie_width(facts))
    findings.extend(_judge_persistence(facts))
    findings.extend(_judge_nvlink(facts))
    findings.extend(_judge_recovery(facts))
    return findings


# nvidia-smi's gpu_recovery_action (drivers R550 and later): what the driver asks before the GPU is usable again.
# NVIDIA's Xid catalog and nvidia-smi's help name the values: None, Reset (a GPU reset), Reboot (a node reboot),
# Drain P2P (stop peer-to-peer work, then reset), Drain and Reset (drain the GPU's work, then reset).
_RECOVERY = {"reset": "a GPU reset", "reboot": "a reboot of the node", "drain": "its work drained, then a reset"}


def _judge_recovery(facts: GpuFacts) -> List[Finding]:
    asked = [(g, _RECOVERY.get((g.recovery_action or "").lower())) for g in facts.gpus
             if g.recovery_action and g.recovery_action.lower() not in ("none", "n/a", "[n/a]")]
    if not asked:
        return []
    worst = "reboot" if any((g.recovery_action or "").lower() == "reboot" for g, _ in asked) else "reset"
    return [fail(NAME, "gpu.recovery_action",
                 "GPU recovery required: " + "; ".join(f"GPU{g.index} asks for {what or g.recovery_action}"
                                                       for g, what in asked)
                 + " (nvidia-smi's gpu_recovery_action): the GPU is unusable until then",
                 actual={"category": "gpu_lost_xid", "class": worst,
                         "gpus": {f"GPU{g.index}": g.recovery_action for g, _ in asked}},
                 expected="gpu_recovery_action None on every GPU",
                 evidence=[f"GPU{g.index}: gpu_recovery_action {g.recovery_action}" for g, _ in asked],
                 fix="Drain the node; stop what uses the GPU and reset it (nvidia-smi -r -i <index>) or reboot the node, "
                     "as the action says; read the Xid lines of its kernel log for what made the driver ask "
                     "(dmesg | grep -E 'NVRM: Xid'). A GPU that asks again after the reset goes for repair.")]


def others_naming_gpus(node: Optional[NodeFacts]) -> List[str]:
    """What other collected outputs of the node say of its GPUs (an Xid line, a full -q, NVLink status), so that no
    skip claims there is none."""
    out: List[str] = []
    if node is None:
        return out
    xid = node.get("xid")
    buses = sorted({e.bus for e in getattr(xid, "events", None) or [] if getattr(e, "bus", "")})
    if buses:
        out.append(f"the kernel log's Xid lines name {', '.join(buses[:4])}")
    health = node.get("gpuhealth")
    if getattr(health, "gpus", None):
        out.append(f"nvidia-smi -q lists {len(health.gpus)} GPU(s)")
    links = getattr(node.get("nvlink"), "links", None)
    if links:
        out.append(f"nvidia-smi nvlink --status lists {len(links)} GPU(s)")
    return out


def _why_no_gpu(facts: GpuFacts, node: Optional[NodeFacts]) -> str:
    """Why there is no GPU to judge: not collected, not present, or what another output says instead."""
    others = others_naming_gpus(node)
    if not facts.query_collected and not facts.pci_collected:
        return ("GPU inventory not collected (nvidia-smi --query-gpu, and the sysfs PCI scan)"
                + (f"; other outputs name GPUs: {'; '.join(others)}" if others else ""))
    if others:
        return f"nvidia-smi and the PCI scan list no GPU, but {'; '.join(others)}: see those areas"
    if facts.smi_found is False:
        return "not present: no NVIDIA GPU on the PCI bus, and nvidia-smi is not installed"
    if not facts.pci_collected:
        return "not present: nvidia-smi lists no GPU (the sysfs PCI scan was not collected)"
    return "not present: no NVIDIA GPU on the PCI bus, and nvidia-smi lists none"


def _lost_finding(facts: GpuFacts) -> Finding:
    buses = [norm_bus_id(m.group(1)) or m.group(1) for m in (_LOST.search(l) for l in facts.lost) if m and m.group(1)]
    return fail(NAME, "gpu.lost", f"nvidia-smi cannot reach {', '.join(buses) or 'a GPU'}: the GPU is lost from the bus "
                "or stopped answering (not a driver fault)", actual=buses or facts.lost[:4], expected="every GPU answers",
                evidence=facts.lost[:8],
                fix="The driver knows the GPU but cannot talk to it: look for Xid 79 / 'fallen off the bus' in dmesg; "
                "check its seating, power cables and cooling under load; reset it (nvidia-smi -r) or reboot. If it drops "
                "off again, reseat it in another slot or replace it.")


# The NVML snapshot's own words (nccldiag/node/nvml.py): nvidia-ml-py missing on the node is a view not taken; a
# failing nvmlInit, where the driver is loaded, is the library every CUDA and NCCL process asks failing.
_NVML_ABSENT = "nvidia-ml-py not importable"
_NVML_INIT = "nvmlInit failed"
# NVML's error strings (nvmlErrorString) that mean the GPUs or the driver cannot serve, and what each means
_NVML_MEANS = (
    (rx.compile(r"GPU is lost|Unknown Error", re.I),
     "NVML cannot reach the GPUs: a GPU lost from the bus, or, inside a container, its access to the GPU devices removed",
     "On the host: look for Xid 79 / 'fallen off the bus' in dmesg and reset or reboot. In a container whose host is "
     "fine: its device access was dropped by a cgroup update (systemctl daemon-reload, a resource change); restart the "
     "container, and follow the NVIDIA Container Toolkit's guidance for this error."),
    (rx.compile(r"version mismatch", re.I),
     "the loaded NVIDIA kernel module and the user-space driver library are different versions",
     "Reboot into the installed driver, or reload the kernel module (rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia, "
     "then modprobe nvidia) after an upgrade; check 'cat /proc/driver/nvidia/version' against 'dkms status'."),
    (rx.compile(r"Driver Not Loaded|Uninitialized", re.I),
     "NVML finds no usable NVIDIA driver", _DRIVER_FIX),
)


def _judge_nvml(facts: GpuFacts) -> List[Finding]:
    """What the NVML snapshot said instead of a snapshot: never dropped."""
    err = facts.nvml_error
    if not err:
        return []
    if err.startswith(_NVML_ABSENT):
        return [skip(NAME, "gpu.nvml", f"no NVML snapshot (NVML's P2P status not read): {err}")]
    if _NVML_INIT not in err:
        return [warn(NAME, "gpu.nvml", "the NVML snapshot did not come back readable", evidence=[err],
                     fix="Run the snapshot by hand on the node (python3 -c 'import pynvml; pynvml.nvmlInit()') and "
                     "read what it prints.")]
    for pattern, meaning, fix in _NVML_MEANS:
        if pattern.search(err):
            return [fail(NAME, "gpu.nvml", f"NVML fails to initialise: {meaning}", actual=err,
                         expected="nvmlInit succeeds where the NVIDIA driver is loaded", evidence=[err], fix=fix)]
    return [fail(NAME, "gpu.nvml", "NVML fails to initialise although the NVIDIA driver is loaded: CUDA and NCCL "
                 "processes ask the same library", actual=err,
                 expected="nvmlInit succeeds where the NVIDIA driver is loaded", evidence=[err],
                 fix="Read NVML's error: check that libnvidia-ml.so.1 matches the loaded driver "
                 "(cat /proc/driver/nvidia/version), the permissions of /dev/nvidia*, and 'dmesg | grep NVRM'.")]


def _judge_missing(facts: GpuFacts) -> List[Finding]:
    missing = _missing_from_smi(facts)
    if not missing:
        if facts.pci_gpus and len(facts.pci_gpus) >= len(facts.gpus):
            return [ok(NAME, "gpu.count", f"all {len(facts.pci_gpus)} NVIDIA GPUs on the PCI bus are visible to the driver")]
        return []
    passthrough = [p for p in missing if p.driver and p.driver.startswith("vfio")]
    lost = [p for p in missing if p not in passthrough]
    ev = [f"{p.bus_id} device {p.device_id} driver {p.driver or '-'}" for p in missing]
    if lost:
        return [
            fail(
                NAME,
                "gpu.count",
                f"nvidia-smi lists {len(facts.gpus)} GPUs but {len(facts.pci_gpus)} are on the PCI bus; "
                f"missing: {', '.join(p.bus_id for p in lost)}",
                actual=len(facts.gpus),
                expected=len(facts.pci_gpus),
                evidence=ev,
                fix="A GPU on the bus that the driver does not list has usually fallen off the bus or failed to "
                "initialise: look for Xid 79/'fallen off the bus' in 'dmesg', reset it ('nvidia-smi -r -i N') or "
                "reboot; if it persists, the GPU or its riser/baseboard needs service.",
            )
        ]
    return [
        warn(
            NAME,
            "gpu.count",
            f"{len(passthrough)} GPU(s) bound to vfio-pci are not usable on this host: {', '.join(p.bus_id for p in passthrough)}",
            actual=len(facts.gpus),
            expected=len(facts.pci_gpus),
            evidence=ev,
            fix="If these GPUs should serve jobs on this host, unbind them from vfio-pci and bind them to nvidia.",
        )
    ]


def _judge_pcie_width(facts: GpuFacts) -> List[Finding]:
    narrow = [g for g in facts.gpus if g.width and g.width_max and g.width < g.width_max]
    known = [g for g in facts.gpus if g.width and g.width_max]
    if narrow:
        return [
            warn(
                NAME,
                "gpu.pcie_width",
                f"{len(narrow)} GPU(s) run a narrower PCIe link than they support: "
                + ", ".join(f"GPU{g.index} x{g.width} of x{g.width_max}" for g in narrow),
                actual={f"GPU{g.index}": g.width for g in narrow},
                expected={f"GPU{g.index}": g.width_max for g in narrow},
                evidence=[_gpu_line(g) for g in narrow],
                fix="A degraded link width is a seating, riser or slot fault (not a power state, unlike the link "
                "generation, which drops at idle): reseat the GPU or check the slot; host<->GPU and PCIe P2P "
                "bandwidth drop in proportion.",
            )
        ]
    if known:
        return [ok(NAME, "gpu.pcie_width", f"PCIe link width at its maximum on all {len(known)} GPUs")]
    return []


def _judge_persistence(facts: GpuFacts) -> List[Finding]:
    off = [g for g in facts.gpus if g.persistence and g.persistence.lower() == "disabled"]
    if not off:
        return []
    return [
        warn(
            NAME,
            "gpu.persistence",
            f"persistence mode is disabled on {len(off)} of {len(facts.gpus)} GPUs",
            actual="Disabled",
            expected="Enabled",
            fix="Run nvidia-persistenced (systemctl enable --now nvidia-persistenced) or 'nvidia-smi -pm 1': without "
            "it the driver tears the GPUs down between processes, and every job start pays the re-initialisation.",
        )
    ]


def _judge_nvlink(facts: GpuFacts) -> List[Finding]:
    with_links = [g for g in facts.nvlink if g.links]
    if not with_links:
        return []
    any_active = any(g.active for g in with_links)
    broken = [g for g in with_links if g.inactive and (g.active or any_active)]
    if broken:
        return [
            fail(
                NAME,
                "gpu.nvlink",
                "inactive NVLink links: "
                + "; ".join(f"GPU{g.index} link {','.join(map(str, g.inactive))} ({len(g.active)} of {len(g.links)} up)" for g in broken),
                actual={"category": "nvlink_error", "inactive": {f"GPU{g.index}": g.inactive for g in broken}},
                expected="every NVLink link of every GPU active",
                evidence=[f"GPU {g.index}: {g.name or ''} Link {l}: <inactive>" for g in broken for l in g.inactive][:16],
                fix="A link down on a GPU whose other links are up is a hardware or fabric fault: check "
                "'nvidia-smi nvlink -e' error counters and dmesg Xids, on NVSwitch systems the nvidia-fabricmanager "
                "service; reset the GPUs or reboot, then have the baseboard serviced if the link stays down.",
            )
        ]
    if not any_active:
        sxm = any("SXM" in (g.name or "") for g in with_links)
        make = fail if sxm else warn
        return [
            make(
                NAME,
                "gpu.nvlink",
                f"no NVLink link is active on any of {len(with_links)} GPUs",
                actual={"category": "nvlink_error", "active": 0} if sxm else 0,
                expected="links active (SXM/NVSwitch systems); none on PCIe cards without a bridge",
                fix="On SXM boards the links must be up: check nvidia-fabricmanager (NVSwitch systems), dmesg Xids, "
                "and reset or reboot. On PCIe cards this only means no NVLink bridge is fitted.",
            )
        ]
    speeds = sorted({s for g in with_links for s in g.links.values() if s})
    rate = f" at {', '.join(f'{s:g}' for s in speeds)} GB/s" if speeds else ""
    return [ok(NAME, "gpu.nvlink", f"all {sum(len(g.links) for g in with_links)} NVLink links active on {len(with_links)} GPUs{rate}")]


def summarize(facts: Optional[GpuFacts]) -> Dict[str, Optional[str]]:
    if facts is None:
        return {}
    count = max(len(facts.gpus), facts.attached or 0) or (len(facts.pci_gpus) or None)
    return {
        "driver": facts.driver_version,
        "cuda": facts.cuda_version,
        "model": facts.model if len(facts.models) <= 1 else " + ".join(m for m, _ in facts.models),
        "count": None if count is None else str(count),
    }
