"""``nvidia-smi -q``: the whole per-GPU report, read once and shared.

Not a check area: the format module behind the areas that judge what the
full report says (``gpuhealth``: ECC, row remapping, clock events;
``nvlink``: fabric state; ``pcie_errors``: replay counters; ``firmware``:
VBIOS and InfoROM). Each of them lists :data:`SOURCE` in its ``SOURCES``;
the collection script runs a source once however many areas name it.

The report is an indented tree (``Key : value`` lines, sections as bare
keys), one ``GPU <bus id>`` block per GPU. :func:`parse_q` turns it into
``{"Section/Sub/Key": value}`` per GPU. It reads every driver's layout seen
so far (before 460 to 595: ``Clocks Throttle Reasons`` became ``Clocks
Event Reasons`` in 535; keys are looked up whatever their case, for the
``Ecc Mode`` and ``Replays since reset`` of old drivers), pasted excerpts whose GPU line was cut (one GPU with no
bus id), ``[...]`` elisions, excerpts trimmed flush left (indented again by their
section titles), and the warnings nvidia-smi prints before the report
(``WARNING: infoROM is corrupted at gpu ...``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from nccldiag import rx
from nccldiag.areas.base import Source

SOURCE = Source(
    "nvidia_smi_full",
    "command -v nvidia-smi >/dev/null 2>&1 || exit 0; nvidia-smi -q 2>&1 | head -n 30000",
    timeout=30,
    description="nvidia-smi -q, whole (ECC, row remapping, clock events, fabric state, PCIe replays, VBIOS, InfoROM)",
)

_GPU = rx.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_WARNING = rx.compile(r"^\s*(WARNING|ERROR|Unable|Failed|NVIDIA-SMI has failed)\b.*", re.I)


@dataclass
class QGpu:
    bus_id: Optional[str]  # normalised dddd:bb:dd.f, lower case; None when the excerpt lost its GPU line
    fields: Dict[str, str] = field(default_factory=dict)  # "Section/Sub/Key" -> value as printed

    def raw(self, key: str) -> Optional[str]:
        """The value of ``key`` as printed ("N/A" included); the key's case is free (``Ecc Mode`` of old drivers
        is ``ECC Mode``, ``Replays since reset`` is ``Replays Since Reset``)."""
        v = self.fields.get(key)
        if v is None:
            v = self._lowered()[0].get(key.lower())
        return v

    def _lowered(self) -> Tuple[Dict[str, str], List[Tuple[str, str, str]]]:
        """``fields`` by lower-case key (the first of keys that differ only in case), and as
        ``(lower-case key, key, value)``; made once the fields are all read."""
        low = self.__dict__.get("_low")
        if low is None or low[0] != len(self.fields):
            index: Dict[str, str] = {}
            rows = []
            for k, val in self.fields.items():
                lk = k.lower()
                index.setdefault(lk, val)
                rows.append((lk, k, val))
            low = self.__dict__["_low"] = (len(self.fields), index, rows)
        return low[1], low[2]

    def get(self, *keys: str) -> Optional[str]:
        """The first of ``keys`` present (layouts differ between drivers); "N/A" reads as absent."""
        for k in keys:
            v = self.raw(k)
            if v is not None and v not in ("N/A", "[N/A]", ""):
                return v
        return None

    def section(self, prefix: str) -> Dict[str, str]:
        """The keys under ``prefix/`` (without it), the prefix's case free."""
        p = prefix.rstrip("/").lower() + "/"
        n = len(p)
        return {k[n:]: v for lk, k, v in self._lowered()[1] if lk.startswith(p)}

    @property
    def label(self) -> str:
        return f"GPU {self.bus_id}" if self.bus_id else "GPU (bus id not in the output)"


@dataclass
class SmiQ:
    header: Dict[str, str] = field(default_factory=dict)  # Driver Version, CUDA Version, Attached GPUs
    gpus: List[QGpu] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)  # lines nvidia-smi printed about itself

    @property
    def driver(self) -> Optional[str]:
        return self.header.get("Driver Version")


def norm_bus(text: str) -> str:
    """``00000000:19:00.0`` -> ``0000:19:00.0``; ``0000:9b:00`` (Xid form) -> ``0000:9b:00.0``."""
    t = text.strip().lower()
    m = re.match(r"^([0-9a-f]{1,8}):([0-9a-f]{2}):([0-9a-f]{2})(?:\.([0-9a-f]))?$", t)
    if not m:
        return t
    return f"{int(m.group(1), 16):04x}:{m.group(2)}:{m.group(3)}.{m.group(4) or '0'}"


def parse_q(text: Optional[str]) -> Optional[SmiQ]:
    """The report as trees per GPU; None when the text holds no ``Key : value`` line."""
    if not text or not text.strip():
        return None
    q = SmiQ()
    cur: Optional[QGpu] = None
    stack: List[tuple] = []  # (indent, name)
    seen_kv = False
    lines = text.expandtabs(4).splitlines()
    if _flat(lines):
        lines = _indented(lines)
    for raw in lines:
        line = raw.rstrip()
        if not line.strip():
            continue
        m = _GPU.match(line.strip()) if len(line) - len(line.lstrip()) == 0 else None
        if m:
            cur = QGpu(norm_bus(m.group(1)))
            q.gpus.append(cur)
            stack = []
            continue
        stripped = line.strip()
        if stripped in ("[...]", "...", "[snip]") or stripped.startswith(("=====", "|", "+-")):
            continue
        if _WARNING.match(line) and " : " not in line:
            q.warnings.append(stripped)
            continue
        indent = len(line) - len(line.lstrip())
        key, sep, value = stripped.partition(":")
        key = key.strip()
        if not sep:
            # a section title: "    Clocks Event Reasons"
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, key))
            continue
        seen_kv = True
        value = value.strip()
        if cur is None and indent == 0:
            q.header[key] = value
            continue
        if cur is None:
            # an excerpt that starts inside a GPU block
            cur = QGpu(None)
            q.gpus.append(cur)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([s[1] for s in stack] + [key])
        cur.fields.setdefault(path, value)
    return q if seen_kv or q.warnings else None


# the sections nvidia-smi -q nests under another (ECC Errors > Volatile > SRAM ..., Remapped Rows > Histogram)
_CHILDREN = {"volatile": "ecc errors", "aggregate": "ecc errors", "histogram": "remapped rows",
             "sram sources": "ecc errors"}


def _flat(lines: List[str]) -> bool:
    """Whether an excerpt was trimmed flush left: a section title and ``Key : value`` lines, none indented."""
    body = [ln for ln in lines if ln.strip()]
    if any(ln[:1] in (" ", "\t") for ln in body) or not any(" : " in ln for ln in body):
        return False
    return any(":" not in ln and not _GPU.match(ln.strip()) and not ln.startswith(("=", "|", "+")) for ln in body)


def _indented(lines: List[str]) -> List[str]:
    """A flush-left excerpt indented again as nvidia-smi prints it: the keys under the section title above them,
    a section nvidia-smi nests (``Volatile`` under ``ECC Errors``) under its parent."""
    out: List[str] = []
    top: Optional[str] = None
    depth = 0
    for ln in lines:
        text = ln.strip()
        if not text or _GPU.match(text) or ":" in text or text.startswith(("=", "|", "+", "[")):
            out.append(("    " * depth + text) if ":" in text and top is not None else ln)
            continue
        parent = _CHILDREN.get(text.lower())
        if parent is not None and top is not None and top.lower() == parent:
            out.append("    " + text)
            depth = 2
        else:
            top, depth = text, 1
            out.append(text)
    return out


COMMAND = "nvidia-smi -q"


def why_absent(text: Optional[str], what: str) -> str:
    """Why a report holds no ``what`` (e.g. "ECC state"): "not collected", "not present", "could not read" or
    "not in the report", with the command or nvidia-smi's own words."""
    if text is None:
        return f"{what} not collected ({COMMAND}, source {SOURCE.name})"
    if not text.strip():
        return f"{what} not present: nvidia-smi is not installed (the {COMMAND} output is empty)"
    q = parse_q(text)
    if q is None or not q.gpus:
        said = (q.warnings[0] if q and q.warnings else text.strip().splitlines()[0])[:160]
        return f"{what}: could not read {COMMAND}, it printed no GPU report ({said})"
    return f"{what} not in the report (the {COMMAND} output holds no such section)"


def to_int(text: Optional[str]) -> Optional[int]:
    m = re.match(r"^\s*(-?\d+)", text or "")
    return int(m.group(1)) if m else None


def to_float(text: Optional[str]) -> Optional[float]:
    m = re.match(r"^\s*(-?\d+(?:\.\d+)?)", text or "")
    return float(m.group(1)) if m else None
