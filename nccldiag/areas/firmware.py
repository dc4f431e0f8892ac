"""Firmware and software versions: GPU VBIOS and InfoROM, HCA firmware, OFED/rdma-core, fabric manager.

Within a node:

- ``firmware.inforom``: nvidia-smi's ``WARNING: infoROM is corrupted at gpu
  ...`` (the GPU's configuration store is damaged; NVIDIA support replaces or
  reflashes the board);
- ``firmware.gpu``: GPUs of one model run one VBIOS;
- ``firmware.hca``: HCAs of one model run one firmware (``fw_ver`` of the
  ``ib`` area, else the ``mlx5_core ...: firmware version:`` lines of the
  kernel log);
- ``firmware.fabricmanager``: the fabric manager's version equals the
  driver's exactly (the fabric manager refuses to run against another
  driver; NVIDIA Fabric Manager user guide).

Across nodes, :func:`summarize` offers the VBIOS and InfoROM image per GPU
model, OFED, rdma-core and the fabric manager version to
:mod:`nccldiag.areas.consistency`, which names the node that differs and the
majority value (ibdiagnet and ClusterMAX check uniform firmware the same
way). HCA firmware is compared there as ``ib.firmware``.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from nccldiag.areas import kernlog, smiq
from nccldiag.areas.base import NodeFacts, Source, section
from nccldiag.areas.nvlink import FM_SOURCE, parse_fm
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "firmware"
TITLE = "Firmware/versions"

VERSIONS_SOURCE = Source(
    "sw_versions",
    '[ -d "$R/sys/class/infiniband" ] || exit 0; '
    "if command -v ofed_info >/dev/null 2>&1; then echo \"ofed: $(ofed_info -s 2>/dev/null | head -n 1)\"; fi; "
    "if command -v dpkg-query >/dev/null 2>&1; then dpkg-query -W -f='rdma-core: ${Version}\\n' rdma-core 2>/dev/null; "
    "elif command -v rpm >/dev/null 2>&1; then rpm -q --qf 'rdma-core: %{VERSION}-%{RELEASE}\\n' rdma-core 2>/dev/null; fi; true",
    timeout=15,
    description="MLNX_OFED/DOCA (ofed_info -s) and rdma-core package versions, on nodes with RDMA devices",
)

SOURCES = (smiq.SOURCE, FM_SOURCE, VERSIONS_SOURCE, kernlog.SOURCE)

_INFOROM = re.compile(r"infoROM is corrupted at gpu (\S+)", re.I)
_FW_LINE = re.compile(r"mlx\d_core (\S+?): firmware version: (\S+)")
# mlx4/mlx5 and other HCA drivers asking for newer firmware ("LSO not supported, please upgrade to later FW version")
_FW_OLD = re.compile(r"(?:mlx\d|bnxt|irdma|qed)\w*.*(?:upgrade to (?:a )?(?:later|newer) (?:FW|firmware)|"
                     r"(?:FW|firmware) (?:version )?\S* ?(?:is )?(?:too old|not supported|older than))", re.I)


@dataclass
class FirmwareFacts:
    vbios: Dict[str, str] = field(default_factory=dict)  # GPU -> VBIOS
    inforom: Dict[str, str] = field(default_factory=dict)  # GPU -> InfoROM image version
    models: Dict[str, str] = field(default_factory=dict)  # GPU -> product name
    corrupted: List[str] = field(default_factory=list)  # warning lines
    smi_absent: Optional[str] = None  # why there is no nvidia-smi -q report (smiq.why_absent)
    smi_read: bool = False
    driver: Optional[str] = None
    fm_version: Optional[str] = None
    ofed: Optional[str] = None
    rdma_core: Optional[str] = None
    hca_fw_log: Dict[str, str] = field(default_factory=dict)  # PCI function -> firmware (kernel log)
    hca_fw_complaints: List[str] = field(default_factory=list)  # the HCA driver asking for newer firmware


def parse_versions(text: Optional[str], f: FirmwareFacts) -> None:
    for line in (text or "").splitlines():
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if not value or "not installed" in value or value.startswith("no packages"):
            continue
        if key == "ofed":
            f.ofed = value.rstrip(":")
        elif key == "rdma-core":
            f.rdma_core = value


def parse_smi(text: Optional[str], f: FirmwareFacts) -> None:
    q = smiq.parse_q(text)
    if q is None or not q.gpus:
        f.smi_absent = smiq.why_absent(text, "GPU VBIOS and InfoROM versions")
    if q is None:
        return
    f.corrupted = [w for w in q.warnings if _INFOROM.search(w)]
    if not q.gpus and not f.corrupted:
        return  # nvidia-smi printed only its own failure: no infoROM verdict either
    f.smi_read = True
    f.driver = q.driver
    for i, g in enumerate(q.gpus):
        name = g.bus_id or f"GPU {i}"
        if g.get("VBIOS Version"):
            f.vbios[name] = g.get("VBIOS Version")
        if g.get("Inforom Version/Image Version"):
            f.inforom[name] = g.get("Inforom Version/Image Version")
        if g.get("Product Name"):
            f.models[name] = g.get("Product Name")


def parse(raw) -> FirmwareFacts:
    f = FirmwareFacts()
    parse_smi(raw.get(smiq.SOURCE.name), f)
    fm = parse_fm(section(raw, FM_SOURCE.name))
    f.fm_version = fm.version if fm else None
    parse_versions(section(raw, VERSIONS_SOURCE.name), f)
    for when, msg in kernlog.parse(raw.get(kernlog.SOURCE.name)).lines:
        m = _FW_LINE.search(msg)
        if m:
            f.hca_fw_log[m.group(1).lower()] = m.group(2)
        elif _FW_OLD.search(msg) and len(f.hca_fw_complaints) < 16:
            f.hca_fw_complaints.append(kernlog.short(f"{when} {msg}".strip()))
    return f


def _driver(facts: FirmwareFacts, node: Optional[NodeFacts]) -> Optional[str]:
    gpu = node.get("gpu") if node is not None else None
    return facts.driver or getattr(gpu, "driver_version", None)


def _by_model(values: Dict[str, str], models: Dict[str, str]) -> Dict[str, Counter]:
    out: Dict[str, Counter] = {}
    for gpu, v in values.items():
        out.setdefault(models.get(gpu, "GPU"), Counter())[v] += 1
    return out


def judge(facts: Optional[FirmwareFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "firmware.gpu", "no version outputs came back")]
    return _judge_gpu(facts) + _judge_hca(facts, node) + _judge_fm(facts, node)


def _judge_gpu(facts: FirmwareFacts) -> List[Finding]:
    out: List[Finding] = []
    if facts.corrupted:
        out.append(fail(NAME, "firmware.inforom", f"infoROM corrupted on {len(facts.corrupted)} GPUs: "
                        + ", ".join(_INFOROM.search(w).group(1) for w in facts.corrupted), actual=facts.corrupted,
                        expected="no infoROM warning", evidence=facts.corrupted,
                        fix="The GPU's infoROM (its configuration and error-record store) is damaged: ECC and page "
                        "retirement records may be lost. Drain the node and open a case with NVIDIA or the system "
                        "vendor to reflash or replace the board."))
    elif facts.smi_read:
        out.append(ok(NAME, "firmware.inforom", "no infoROM warning from nvidia-smi"))
    if not facts.vbios:
        if not facts.smi_read:
            out.append(skip(NAME, "firmware.gpu", facts.smi_absent or smiq.why_absent(None, "GPU VBIOS and InfoROM versions")))
        return out
    mixed = {m: c for m, c in _by_model(facts.vbios, facts.models).items() if len(c) > 1}
    if mixed:
        ev = [f"GPU {g}: {facts.models.get(g, '?')} VBIOS {v}" for g, v in facts.vbios.items()]
        out.append(warn(NAME, "firmware.gpu", "GPUs of one model run different VBIOS versions: " + "; ".join(
            f"{m}: " + ", ".join(f"{v} on {n}" for v, n in c.most_common()) for m, c in mixed.items()),
            actual={m: dict(c) for m, c in mixed.items()}, expected="one VBIOS per GPU model", evidence=ev,
            fix="Flash the GPUs to the same VBIOS with the system vendor's firmware bundle (nvfwupd or the "
            "vendor tool); mixed VBIOS versions run with different clocks and power limits."))
    else:
        parts = ", ".join(f"{m} VBIOS {next(iter(c))} on {sum(c.values())}" for m, c in _by_model(facts.vbios, facts.models).items())
        out.append(ok(NAME, "firmware.gpu", parts, actual=sorted(set(facts.vbios.values()))))
    return out


def _judge_hca(facts: FirmwareFacts, node: Optional[NodeFacts]) -> List[Finding]:
    per: Dict[str, Counter] = {}
    ib = node.get("ib") if node is not None else None
    seen = set()
    for p in getattr(ib, "ports", None) or []:
        if p.fw_ver and p.device not in seen:
            seen.add(p.device)
            per.setdefault(p.hca_type or "HCA", Counter())[p.fw_ver] += 1
    source = "sysfs fw_ver"
    if not per and facts.hca_fw_log:
        source = "kernel log"
        for fn, fw in facts.hca_fw_log.items():
            # one model per firmware major number (28 = ConnectX-7, 22 = ConnectX-6 Dx, ...)
            per.setdefault(f"ConnectX firmware {fw.split('.')[0]}.x", Counter())[fw] += 1
    if facts.hca_fw_complaints:
        return [warn(NAME, "firmware.hca", f"the HCA driver asks for newer firmware: {facts.hca_fw_complaints[0]}",
                     actual=facts.hca_fw_complaints[0], expected="firmware the driver supports",
                     evidence=facts.hca_fw_complaints[:8],
                     fix="Update the HCA firmware to what the driver supports (mlxfwmanager --online -u, or the OEM's "
                         "image for OEM cards, matched by PSID), the same on every node, and reset the HCA or reboot.")]
    if not per:
        return [skip(NAME, "firmware.hca", "no HCA firmware versions (no RDMA device)")]
    mixed = {m: c for m, c in per.items() if len(c) > 1}
    text = "; ".join(f"{m}: " + ", ".join(f"{v} on {n}" for v, n in c.most_common()) for m, c in per.items())
    if mixed:
        return [warn(NAME, "firmware.hca", f"HCAs of one model run different firmware ({source}): {text}",
                     actual={m: dict(c) for m, c in mixed.items()}, expected="one firmware per HCA model",
                     fix="Flash every HCA of the model to the same firmware (mlxfwmanager -u, or the vendor bundle) "
                     "and reset them (mlxfwreset or reboot).")]
    return [ok(NAME, "firmware.hca", f"one firmware per HCA model ({source}): {text}")]


def _judge_fm(facts: FirmwareFacts, node: Optional[NodeFacts]) -> List[Finding]:
    if not facts.fm_version:
        return []
    driver = _driver(facts, node)
    if not driver:
        return [skip(NAME, "firmware.fabricmanager", f"fabric manager {facts.fm_version}, driver version unknown")]
    if driver != facts.fm_version:
        return [fail(NAME, "firmware.fabricmanager", f"fabric manager {facts.fm_version} with driver {driver}",
                     actual=facts.fm_version, expected=driver,
                     fix=f"Install the fabric manager of the driver's exact version (nvidia-fabricmanager-{driver}) and "
                     "restart it; the fabric manager does not start against another driver version.")]
    return [ok(NAME, "firmware.fabricmanager", f"fabric manager {facts.fm_version} matches the driver",
               actual=facts.fm_version, expected=driver)]


def summarize(facts: Optional[FirmwareFacts]) -> Dict[str, Optional[str]]:
    if facts is None:
        return {}
    def per_model(values: Dict[str, str]) -> Optional[str]:
        by = _by_model(values, facts.models)
        return "; ".join(f"{m} {'/'.join(sorted(c))}" for m, c in sorted(by.items())) or None
    return {
        "vbios": per_model(facts.vbios),
        "inforom": per_model(facts.inforom),
        "ofed": facts.ofed,
        "rdma_core": facts.rdma_core,
        "fabricmanager": facts.fm_version,
    }
