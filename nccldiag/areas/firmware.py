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
way). HCA firmware is compared there as ``ib.firmware`` (sysfs ``fw_ver``) and ``firmware.hca_firmware``
(``ethtool -i``, ``flint``, ``mlxfwmanager`` output in ``sw_versions``).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.areas import kernlog, smiq
from nccldiag.areas.base import NodeFacts, Source, section, parsed
from nccldiag.areas.nvlink import FM_SOURCE, parse_fm
from nccldiag.areas.pcie import node_rdma
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "firmware"
TITLE = "Firmware/versions"

VERSIONS_SOURCE = Source(
    "sw_versions",
    '[ -d "$R/sys/class/infiniband" ] || exit 0; '
    "if command -v ofed_info >/dev/null 2>&1; then echo \"ofed: $(ofed_info -s 2>/dev/null | head -n 1)\"; fi; "
    "if command -v dpkg-query >/dev/null 2>&1; then dpkg-query -W -f='rdma-core: ${Version}\\n' rdma-core 2>/dev/null; "
    "elif command -v rpm >/dev/null 2>&1; then rpm -q --qf 'rdma-core: %{VERSION}-%{RELEASE}\\n' rdma-core 2>/dev/null; fi; "
    # firmware and PSID of each RDMA netdev's PCI function (one ioctl each)
    'if command -v ethtool >/dev/null 2>&1; then for n in "$R"/sys/class/infiniband/*/device/net/*; do '
    '[ -e "$n" ] && ethtool -i "${n##*/}" 2>/dev/null; done | head -n 600; fi; true',
    timeout=15,
    description="MLNX_OFED/DOCA (ofed_info -s) and rdma-core package versions, and ethtool -i of each RDMA netdev "
                "(firmware and PSID), on nodes with RDMA devices",
)

SOURCES = (smiq.SOURCE, FM_SOURCE, VERSIONS_SOURCE, kernlog.SOURCE)

_INFOROM = rx.compile(r"infoROM is corrupted at gpu (\S+)", re.I)
_FW_LINE = rx.compile(r"mlx\d_core (\S+?): firmware version: (\S+)")
# mlx4/mlx5 and other HCA drivers asking for newer firmware ("LSO not supported, please upgrade to later FW version")
# (the driver's word, then the request after it: two searches, each linear in the line)
_HCA_DRIVER_WORD = rx.compile(r"mlx\d|bnxt|irdma|qed", re.I)
_FW_OLD = rx.compile(r"upgrade to (?:a )?(?:later|newer) (?:FW|firmware)|"
                     r"(?:FW|firmware) (?:version )?\S* ?(?:is )?(?:too old|not supported|older than)", re.I)


def asks_newer_firmware(msg: str) -> bool:
    """Whether a kernel message of an HCA driver asks for newer firmware."""
    m = _HCA_DRIVER_WORD.search(msg)
    return bool(m and _FW_OLD.search(msg, m.end()))

_HCA_WORDS = ("mlx", "bnxt", "irdma", "qed")


# NIC drivers whose ethtool -i names an RDMA-capable function's firmware (NVIDIA/Mellanox, Broadcom, Intel E810,
# Marvell, Amazon EFA, HiSilicon, AMD Pensando)
_HCA_DRIVER = rx.compile(r"^(?:mlx\d_core|bnxt_en|ice|irdma|qede|efa|hns3|ionic)\b")
_FLINT_CMD = rx.compile(r"\b(?:mst)?flint\b.{0,512}?\s-d\s+(\S+)")


@dataclass
class HcaFirmware:
    """One HCA's firmware as a tool printed it (``ethtool -i``, ``flint``/``mstflint q``, ``mlxfwmanager``/``mlxup``)."""

    tool: str
    device: Optional[str] = None  # PCI function or the tool's device name
    fw: Optional[str] = None  # the running firmware
    fw_image: Optional[str] = None  # flint: the image burned in flash when it differs from the running one
    psid: Optional[str] = None
    model: Optional[str] = None  # mlxfwmanager's Device Type, ethtool's driver

    @property
    def group(self) -> str:
        """What HCAs of one kind share: the device type, else the PSID (one board type), else the driver."""
        return self.model if self.tool == "mlxfwmanager" and self.model else (
            f"PSID {self.psid}" if self.psid else (self.model or "HCA"))


def parse_hca_tools(text: Optional[str]) -> List[HcaFirmware]:
    """HCA firmware records from ``ethtool -i`` blocks, ``flint``/``mstflint -d DEV q`` and ``mlxfwmanager``/``mlxup``
    device blocks, in any mix; never raises."""
    out: List[HcaFirmware] = []
    cur: Optional[HcaFirmware] = None
    device: Optional[str] = None  # from a flint command line
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = _FLINT_CMD.search(line)
        if m:
            device, cur = m.group(1), None
            continue
        m = re.match(r"^Device #\d+:", line)
        if m:
            cur = HcaFirmware("mlxfwmanager")
            out.append(cur)
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep:
            m = re.match(r"^FW\s+(\S+)", line)  # mlxfwmanager: "FW   16.24.4020   N/A" (current, available)
            if m and cur is not None and cur.tool == "mlxfwmanager" and m.group(1) != "N/A":
                cur.fw = m.group(1)
            continue
        if key == "driver":
            cur = HcaFirmware("ethtool -i", model=value) if _HCA_DRIVER.match(value) else None
            if cur is not None:
                out.append(cur)
            continue
        if cur is not None and cur.tool == "ethtool -i":
            if key == "firmware-version":
                m = re.match(r"^(\S+)(?:\s+\((\S+)\))?", value)
                if m and m.group(1) != "N/A":
                    cur.fw, cur.psid = m.group(1), m.group(2)
            elif key == "bus-info" and value:
                cur.device = value
            continue
        if key in ("image type", "fw version", "fw version(running)"):
            if cur is None or cur.tool != "flint" or (key == "fw version" and cur.fw_image) or (
                    key == "image type" and (cur.fw or cur.fw_image)):
                cur = HcaFirmware("flint", device=device)
                out.append(cur)
            if key == "fw version" and value and value != "N/A":
                cur.fw_image = value
            elif key == "fw version(running)" and value and value != "N/A":
                cur.fw = value
            continue
        if cur is None:
            continue
        if key == "psid" and value and value != "N/A":
            cur.psid = value
        elif cur.tool == "mlxfwmanager" and key == "device type" and value:
            cur.model = value
        elif cur.tool == "mlxfwmanager" and key == "pci device name" and value:
            cur.device = value
    for r in out:
        if r.tool == "flint":
            r.fw = r.fw or r.fw_image
            if r.fw == r.fw_image:
                r.fw_image = None
    return [r for r in out if r.fw]


@dataclass
class FirmwareFacts:
    vbios: Dict[str, str] = field(default_factory=dict)  # GPU -> VBIOS
    inforom: Dict[str, str] = field(default_factory=dict)  # GPU -> InfoROM image version
    models: Dict[str, str] = field(default_factory=dict)  # GPU -> product name
    corrupted: List[str] = field(default_factory=list)  # warning lines
    smi_absent: Optional[str] = None  # why there is no nvidia-smi -q report (smiq.why_absent)
    smi_read: bool = False
    smi_whole: bool = False  # the report has its header or its "GPU <bus>" lines, where the infoROM warning would be
    driver: Optional[str] = None
    fm_version: Optional[str] = None
    ofed: Optional[str] = None
    rdma_core: Optional[str] = None
    hca_fw_log: Dict[str, str] = field(default_factory=dict)  # PCI function -> firmware (kernel log)
    hca_fw_complaints: List[str] = field(default_factory=list)  # the HCA driver asking for newer firmware
    hca_fw_tools: List[HcaFirmware] = field(default_factory=list)  # ethtool -i, flint, mlxfwmanager (sw_versions)
    collected: List[str] = field(default_factory=list)  # this area's sources present in the raw output


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


def parse_smi(text: Optional[str], f: FirmwareFacts, q: Optional[smiq.SmiQ] = None) -> None:
    q = smiq.parse_q(text) if q is None else q
    if q is None or not q.gpus:
        f.smi_absent = smiq.why_absent(text, "GPU VBIOS and InfoROM versions")
    if q is None:
        return
    f.corrupted = [w for w in q.warnings if _INFOROM.search(w)]
    if not q.gpus and not f.corrupted:
        return  # nvidia-smi printed only its own failure: no infoROM verdict either
    f.smi_read = True
    # "no infoROM warning" is said only of a whole report: nvidia-smi prints the warning above the GPUs, so an
    # excerpt of a GPU's block (or text that only looks like one) says nothing about it
    f.smi_whole = q.driver is not None or any(g.bus_id for g in q.gpus)
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
    parse_smi(raw.get(smiq.SOURCE.name), f, parsed(raw, smiq.SOURCE.name, smiq.parse_q))
    fm = parse_fm(section(raw, FM_SOURCE.name))
    f.fm_version = fm.version if fm else None
    parse_versions(section(raw, VERSIONS_SOURCE.name), f)
    f.hca_fw_tools = parse_hca_tools(section(raw, VERSIONS_SOURCE.name))
    f.collected = [s.name for s in SOURCES if raw.get(s.name) is not None]
    for when, msg in parsed(raw, kernlog.SOURCE.name, kernlog.parse).lines:
        low = msg.lower()  # _FW_LINE and _FW_OLD match only lines with these words
        if ("firmware" not in low and "fw" not in low) or not any(w in low for w in _HCA_WORDS):
            continue
        m = _FW_LINE.search(msg)
        if m:
            f.hca_fw_log[m.group(1).lower()] = m.group(2)
        elif asks_newer_firmware(msg) and len(f.hca_fw_complaints) < 16:
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
    elif facts.smi_whole:
        out.append(ok(NAME, "firmware.inforom", "no infoROM warning from nvidia-smi"))
    elif facts.smi_read:
        out.append(skip(NAME, "firmware.inforom", "no infoROM verdict: the nvidia-smi -q output is an excerpt (no "
                        "header, no 'GPU <bus>' line), and nvidia-smi prints its infoROM warning above the GPUs"))
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
    tools = {}
    for r in facts.hca_fw_tools:
        tools.setdefault(r.device or f"{r.tool} #{len(tools)}", r)  # one record per device, the first read
    evidence = [f"{d}: {r.fw}" + (f" (PSID {r.psid})" if r.psid else "") + (f", {r.fw_image} in flash" if r.fw_image
                else "") + f" [{r.tool}]" for d, r in tools.items()]
    if not per and tools:
        source = ", ".join(sorted({r.tool for r in tools.values()}))
        for r in tools.values():
            per.setdefault(r.group, Counter())[r.fw] += 1
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
        return [skip(NAME, "firmware.hca", _why_no_hca_fw(facts, node))]
    mixed = {m: c for m, c in per.items() if len(c) > 1}
    text = "; ".join(f"{m}: " + ", ".join(f"{v} on {n}" for v, n in c.most_common()) for m, c in per.items())
    if mixed:
        return [warn(NAME, "firmware.hca", f"HCAs of one model run different firmware ({source}): {text}",
                     actual={m: dict(c) for m, c in mixed.items()}, expected="one firmware per HCA model",
                     evidence=evidence,
                     fix="Flash every HCA of the model to the same firmware (mlxfwmanager -u, or the vendor bundle) "
                     "and reset them (mlxfwreset or reboot).")]
    return [ok(NAME, "firmware.hca", f"one firmware per HCA model ({source}): {text}", evidence=evidence)]


def _why_no_hca_fw(facts: FirmwareFacts, node: Optional[NodeFacts]) -> str:
    """Why no HCA firmware was found: not collected, no RDMA hardware, or hardware whose firmware no source gave."""
    ib = node.get("ib") if node is not None else None
    rdma, why = node_rdma(node)
    if rdma:
        return (f"no HCA firmware information: the node has {why}, but no collected source gave their firmware "
                "(sysfs fw_ver of the ib area; ethtool -i, flint/mstflint q or mlxfwmanager output in sw_versions; "
                "mlx5_core 'firmware version' kernel log lines)")
    if ib is None and VERSIONS_SOURCE.name not in facts.collected and kernlog.SOURCE.name not in facts.collected:
        return ("no HCA firmware information: not collected (the ib area's ib_sysfs, sw_versions and kernel_log; "
                "'ethtool -i NETDEV' or 'flint -d DEV q' output can be saved as sw_versions)")
    if rdma is False:
        return "no HCA firmware information: no RDMA device"
    return "no HCA firmware information (no RDMA source collected)"


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
        # HCA firmware as ethtool -i, flint or mlxfwmanager printed it (sysfs fw_ver is compared as ib.firmware)
        "hca_firmware": "; ".join(f"{g} {'/'.join(sorted(v))}" for g, v in sorted(_tool_groups(facts).items())) or None,
    }


def _tool_groups(facts: FirmwareFacts) -> Dict[str, set]:
    out: Dict[str, set] = {}
    seen = set()
    for r in facts.hca_fw_tools:
        key = r.device or id(r)
        if key in seen:
            continue
        seen.add(key)
        out.setdefault(r.group, set()).add(r.fw)
    return out
