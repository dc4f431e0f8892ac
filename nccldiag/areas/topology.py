"""GPU P2P and topology: how GPUs and NICs connect, and whether P2P works between GPUs.

``nvidia-smi topo -m`` says how each pair is connected (NV# NVLinks, or the
PCIe path: PIX, PXB, PHB, NODE, SYS); ``nvidia-smi topo -p2p r`` (and ``w``)
says whether the driver allows P2P reads (writes) between each GPU pair. NCCL
uses the P2P transport when both agree; otherwise it moves data through host
memory (SHM). A pair joined by NVLink whose P2P is refused makes NCCL stop
with "P2P is disabled between NVLINK connected GPUs"; consumer cards (GeForce)
have no P2P, and where the driver still claims it, collectives hang
(``NCCL_P2P_DISABLE=1`` is then the workaround).

With ``check --p2p-test``, :mod:`nccldiag.node.p2pcopy` runs on the node and
:func:`judge_p2p_copy` sets its measured matrix against these predictions.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from nccldiag import rx
from nccldiag.node import p2pcopy
from nccldiag.areas.base import JSON_LINE_LIMIT, NodeFacts, Source, json_line, section
from nccldiag.model.findings import Finding, error, fail, ok, skip, warn

NAME = "topology"
TITLE = "GPU P2P/topology"

SOURCES = (
    Source("topo_m", "nvidia-smi topo -m", timeout=30, description="GPU/NIC connection matrix"),
    Source("topo_p2p_r", "nvidia-smi topo -p2p r", timeout=30, description="P2P read status per GPU pair"),
    Source("topo_p2p_w", "nvidia-smi topo -p2p w", timeout=30, description="P2P write status per GPU pair"),
)

_EOF = "NCCLDIAG_P2PCOPY_EOF"


def _p2p_test_command(size_mib: int = 32, iters: int = 5) -> str:
    """The node-side command: p2pcopy's source fed to the node's Python on stdin."""
    with open(p2pcopy.__file__, encoding="utf-8") as f:
        code = f.read()
    if any(line.strip() == _EOF for line in code.splitlines()):  # pragma: no cover - guards the heredoc
        raise ValueError("p2pcopy source contains the heredoc delimiter")
    guard = (
        '[ "$(ls "$R"/proc/driver/nvidia/gpus 2>/dev/null | wc -l)" -ge 2 ] || '
        '{ echo \'{"pairs": [], "skipped": "fewer than two NVIDIA GPUs"}\'; exit 0; }\n'
    )
    return guard + (
        f'"${{NCCLDIAG_PYTHON:-python3}}" - --json --size-mib {size_mib} --iters {iters} <<\'{_EOF}\'\n'
        f"{code.rstrip()}\n{_EOF}\n"
    )


def p2p_test_sources() -> Tuple[Source, ...]:
    """The extra source that ``check --p2p-test`` adds to the collection."""
    return (Source("p2p_copy", _p2p_test_command(), timeout=120, line_limit=JSON_LINE_LIMIT,
                   description="verified, timed copies between every GPU pair (torch)"),)


LINE_LIMITS = {"p2p_copy": JSON_LINE_LIMIT}  # read when check --p2p-test collected it: one JSON line

# Connection kinds of ``topo -m``, nearest first (NV# sorts before all).
PCIE_KINDS = ("PIX", "PXB", "PHB", "NODE", "SYS")
P2P_MEANING = {
    "OK": "Status Ok",
    "CNS": "Chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "Topology not supported",
    "NS": "Not supported",
    "DR": "Disabled by regkey",
    "U": "Unknown",
}
# NVML's nvmlGpuP2PStatus_t values, in the same terms.
NVML_P2P = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DR", 5: "NS", 6: "U"}

_MULTI_WORD = (("GPU", "NUMA", "ID"), ("CPU", "Affinity"), ("NUMA", "Affinity"))
_AFFINITY = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


@dataclass
class TopoMatrix:
    """``nvidia-smi topo -m``: the connection between every pair of devices."""

    devices: List[str] = field(default_factory=list)  # column order as printed (GPU0.., NIC0.. or mlx5_N)
    cells: Dict[str, Dict[str, str]] = field(default_factory=dict)  # row -> column -> "NV12"/"PIX"/"X"...
    nic_names: Dict[str, str] = field(default_factory=dict)  # NIC0 -> mlx5_0 (legend of newer drivers)
    cpu_affinity: Dict[str, str] = field(default_factory=dict)
    numa_affinity: Dict[str, str] = field(default_factory=dict)
    gpu_numa_id: Dict[str, str] = field(default_factory=dict)

    @property
    def gpus(self) -> List[str]:
        return [d for d in self.devices if d.startswith("GPU")]

    @property
    def nics(self) -> List[str]:
        return [d for d in self.devices if not d.startswith("GPU")]

    def link(self, a: str, b: str) -> Optional[str]:
        """The cell for a pair, read from either side (a row may be cut)."""
        return self.cells.get(a, {}).get(b) or self.cells.get(b, {}).get(a)

    def nvlinks(self, a: str, b: str) -> int:
        m = re.fullmatch(r"NV(\d+)", self.link(a, b) or "")
        return int(m.group(1)) if m else 0

    def nic_name(self, d: str) -> str:
        return self.nic_names.get(d, d)


@dataclass
class P2PMatrix:
    """``nvidia-smi topo -p2p r|w|n...``: the driver's P2P verdict per GPU pair."""

    gpus: List[str] = field(default_factory=list)
    verdicts: Dict[str, Dict[str, str]] = field(default_factory=dict)  # row -> column -> "OK"/"CNS"...

    def verdict(self, a: str, b: str) -> Optional[str]:
        return self.verdicts.get(a, {}).get(b)


@dataclass
class TopologyFacts:
    topo: Optional[TopoMatrix] = None
    p2p_read: Optional[P2PMatrix] = None
    p2p_write: Optional[P2PMatrix] = None
    p2p_copy: Optional[Dict[str, Any]] = None  # p2pcopy's JSON result
    p2p_copy_error: Optional[str] = None


# ---------------------------------------------------------------- parsers


def _tokens(line: str) -> List[str]:
    """Whitespace tokens with the multi-word column titles joined back."""
    words = line.split()
    out: List[str] = []
    i = 0
    while i < len(words):
        for group in _MULTI_WORD:
            if tuple(words[i : i + len(group)]) == group:
                out.append(" ".join(group))
                i += len(group)
                break
        else:
            out.append(words[i])
            i += 1
    return out


def _header(lines: List[str]) -> Tuple[int, List[str]]:
    """Index and tokens (from ``GPU0`` on) of the header line.

    The header is the first line with a ``GPU0`` token not followed by ``X``
    (in the ``GPU0`` row the self cell ``X`` follows it). Anything before
    ``GPU0`` on that line (a prompt or the command pasted onto it) is dropped.
    """
    for i, line in enumerate(lines):
        toks = _tokens(line)
        if "GPU0" in toks:
            at = toks.index("GPU0")
            if at + 1 >= len(toks) or toks[at + 1] != "X":
                return i, toks[at:]
    return -1, []


def parse_topo_m(text: Optional[str]) -> Optional[TopoMatrix]:
    """The matrix of ``nvidia-smi topo -m`` (tabs, spaces, old or new NIC names).

    Rows are matched to the header's device columns; the cells after them go
    to the affinity columns in order (NIC rows have none). ``SOC``, the old
    name of ``SYS``, is read as ``SYS``. Returns None when there is no header.
    """
    if not text or not text.strip():
        return None
    lines = text.splitlines()
    hi, header = _header(lines)
    if hi < 0:
        return None
    cols = [t for t in header if t not in _AFFINITY]
    extra = [t for t in header if t in _AFFINITY]
    m = TopoMatrix(devices=cols)
    colset = set(cols)
    for line in lines[hi + 1 :]:
        stripped = line.strip()
        if stripped.startswith("Legend"):
            break
        toks = stripped.split()
        if not toks or toks[0] not in colset:
            continue
        name, rest = toks[0], toks[1:]
        row = {}
        for col, cell in zip(cols, rest):
            row[col] = "SYS" if cell == "SOC" else cell
        m.cells[name] = row
        for title, value in zip(extra, rest[len(cols) :]):
            target = {"CPU Affinity": m.cpu_affinity, "NUMA Affinity": m.numa_affinity, "GPU NUMA ID": m.gpu_numa_id}
            target[title][name] = value
    for line in lines:
        lm = re.match(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$", line)
        if lm:
            m.nic_names[lm.group(1)] = lm.group(2)
    return m if m.cells else None


def parse_topo_p2p(text: Optional[str]) -> Optional[P2PMatrix]:
    """Per-pair verdicts of ``nvidia-smi topo -p2p`` (OK, NS, CNS, GNS, TNS, DR, U; X for self)."""
    if not text or not text.strip():
        return None
    lines = text.splitlines()
    hi, header = _header(lines)
    if hi < 0:
        return None
    gpus = [t for t in header if re.fullmatch(r"GPU\d+", t)]
    m = P2PMatrix(gpus=gpus)
    for line in lines[hi + 1 :]:
        toks = line.split()
        if not toks or toks[0] not in gpus:
            if line.strip().startswith("Legend"):
                break
            continue
        m.verdicts[toks[0]] = dict(zip(gpus, toks[1:]))
    return m if m.verdicts else None


def parse_p2p_copy(text: Optional[str]) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """``(result, error)`` from the last JSON line :mod:`nccldiag.node.p2pcopy` printed."""
    if not text or not text.strip():
        return None, None
    for line in reversed(text.strip().splitlines()):
        if line.strip().startswith("{"):
            data, why = json_line(line.strip())
            if why is not None:
                return None, f"the P2P copy test's output could not be read: {why}"
            return (data, None) if isinstance(data, dict) else (None, "the P2P copy test printed no object")
    return None, "the P2P copy test printed no result: " + text.strip().splitlines()[-1][:200]


def parse(raw: Mapping[str, Optional[str]]) -> TopologyFacts:
    f = TopologyFacts()
    f.topo = parse_topo_m(section(raw, "topo_m"))
    f.p2p_read = parse_topo_p2p(section(raw, "topo_p2p_r"))
    f.p2p_write = parse_topo_p2p(section(raw, "topo_p2p_w"))
    f.p2p_copy, f.p2p_copy_error = parse_p2p_copy(section(raw, "p2p_copy"))
    return f


# ---------------------------------------------------------------- judgement

_CONSUMER = rx.compile(r"GeForce|\bRTX\s+(?:40|50)[5-9]0\b", re.I)


def is_consumer(name: Optional[str]) -> bool:
    """GeForce cards (RTX 40xx/50xx included): NVIDIA does not enable P2P on them."""
    return bool(name and _CONSUMER.search(name))


def _gpu_names(node: Optional[NodeFacts]) -> Dict[str, str]:
    gpu = node.get("gpu") if node is not None else None
    return {f"GPU{g.index}": g.name for g in getattr(gpu, "gpus", None) or [] if g.name}


def _nvml_p2p(node: Optional[NodeFacts]) -> Dict[str, P2PMatrix]:
    """NVML's P2P status (from the gpu area), as matrices, when nvidia-smi gave none."""
    gpu = node.get("gpu") if node is not None else None
    snap = getattr(gpu, "nvml", None) or {}
    out: Dict[str, P2PMatrix] = {}
    for cap, pairs in (snap.get("p2p") or {}).items():
        if not isinstance(pairs, dict):
            continue
        m = P2PMatrix()
        for key, value in pairs.items():
            try:
                a, b = (int(x) for x in str(key).split(","))
            except ValueError:
                continue
            m.verdicts.setdefault(f"GPU{a}", {})[f"GPU{b}"] = NVML_P2P.get(value, "U")
        m.gpus = sorted({g for r in m.verdicts.values() for g in r} | set(m.verdicts), key=lambda g: int(g[3:]))
        out[cap] = m
    return out


def _gpu_list(facts: TopologyFacts, node: Optional[NodeFacts]) -> List[str]:
    for src in (facts.p2p_read, facts.topo):
        if src is not None and src.gpus:
            return list(src.gpus)
    names = _gpu_names(node)
    return sorted(names, key=lambda g: int(g[3:]))


def _why_no_gpu(facts: TopologyFacts, node: Optional[NodeFacts]) -> str:
    from nccldiag.areas.gpu import others_naming_gpus

    others = others_naming_gpus(node)
    if facts.topo is None and facts.p2p_read is None:
        base = "GPU topology not collected (nvidia-smi topo -m)"
    else:
        base = "not present: nvidia-smi topo lists no GPU"
    return base + (f"; other outputs name GPUs: {'; '.join(others)}" if others else "")


def _summary(topo: TopoMatrix) -> Finding:
    gpus = topo.gpus
    kinds = Counter(topo.link(a, b) or "?" for i, a in enumerate(gpus) for b in gpus[i + 1 :])
    parts = [f"{k} x{n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]
    nearest: Dict[str, Any] = {}
    for g in gpus:
        best = None
        for nic in topo.nics:
            kind = topo.link(g, nic)
            if kind in PCIE_KINDS and (best is None or PCIE_KINDS.index(kind) < PCIE_KINDS.index(best[1])):
                best = (topo.nic_name(nic), kind)
        if best:
            nearest[g] = list(best)
    msg = f"{len(gpus)} GPUs, {len(topo.nics)} NICs; GPU pairs: {', '.join(parts) or 'none'}"
    ev = [f"{g}: nearest NIC {n[0]} ({n[1]})" for g, n in nearest.items()]
    ev += [f"{g}: CPU affinity {topo.cpu_affinity[g]}, NUMA {topo.numa_affinity.get(g, '?')}" for g in gpus if g in topo.cpu_affinity]
    return ok(NAME, "topology.matrix", msg, actual={"pairs": dict(kinds), "nearest_nic": nearest}, evidence=ev)


def judge(facts: Optional[TopologyFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "topology.p2p", "no topology outputs came back")]
    gpus = _gpu_list(facts, node)
    findings: List[Finding] = []
    if facts.topo is not None:
        findings.append(_summary(facts.topo))
    if len(gpus) < 2:
        findings.append(skip(NAME, "topology.p2p", "single GPU: no GPU pairs" if gpus else _why_no_gpu(facts, node)))
        return findings
    findings.extend(judge_p2p(facts, node, gpus))
    asked = bool(node.options.get("p2p_test")) if node is not None else False
    if facts.p2p_copy is not None or facts.p2p_copy_error or asked:
        findings.extend(judge_p2p_copy(facts.p2p_copy, facts.topo, _p2p_ok_pairs(facts, node), _nvlink_speed(node),
                                       facts.p2p_copy_error))
    return findings


def _pair_verdicts(facts: TopologyFacts, node: Optional[NodeFacts], gpus: List[str]) -> Tuple[Dict[Tuple[str, str], List[str]], str]:
    """``({(a, b): ["read GNS", ...]}, source)`` for every unordered pair, worst first."""
    mats = {"read": facts.p2p_read, "write": facts.p2p_write}
    source = "nvidia-smi topo -p2p"
    if not any(mats.values()):
        nv = _nvml_p2p(node)
        mats = {"read": nv.get("read"), "write": nv.get("write")}
        source = "NVML"
    out: Dict[Tuple[str, str], List[str]] = {}
    if not any(mats.values()):
        return out, ""
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            seen = []
            for cap, m in mats.items():
                if m is None:
                    continue
                for x, y in ((a, b), (b, a)):
                    v = m.verdict(x, y)
                    if v and v not in ("OK", "X"):
                        seen.append(f"{cap} {v}")
            out[(a, b)] = sorted(set(seen))
    return out, source


def _p2p_ok_pairs(facts: TopologyFacts, node: Optional[NodeFacts]) -> Dict[Tuple[int, int], bool]:
    verdicts, _ = _pair_verdicts(facts, node, _gpu_list(facts, node))
    out = {}
    for (a, b), bad in verdicts.items():
        ia, ib = int(a[3:]), int(b[3:])
        out[(ia, ib)] = out[(ib, ia)] = not bad
    return out


def _nvlink_speed(node: Optional[NodeFacts]) -> Optional[float]:
    gpu = node.get("gpu") if node is not None else None
    speeds = [s for g in getattr(gpu, "nvlink", None) or [] for s in g.links.values() if s]
    return max(speeds) if speeds else None


def judge_p2p(facts: TopologyFacts, node: Optional[NodeFacts], gpus: List[str]) -> List[Finding]:
    verdicts, source = _pair_verdicts(facts, node, gpus)
    if not verdicts:
        return [skip(NAME, "topology.p2p", "no P2P status: 'nvidia-smi topo -p2p r' printed nothing (old driver?) and NVML is not available")]
    names = _gpu_names(node)
    bad = {pair: v for pair, v in verdicts.items() if v}
    if not bad:
        return [ok(NAME, "topology.p2p", f"P2P OK between all {len(verdicts)} GPU pairs ({source})")]
    topo = facts.topo
    nvl = {p: v for p, v in bad.items() if topo is not None and topo.nvlinks(*p)}
    pcie = {p: v for p, v in bad.items() if p not in nvl}
    out: List[Finding] = []

    def fmt(pairs: Mapping[Tuple[str, str], List[str]]) -> str:
        shown = [f"{a}-{b} ({', '.join(v)}{', ' + topo.link(a, b) if topo and topo.link(a, b) else ''})" for (a, b), v in pairs.items()]
        return ", ".join(shown[:6]) + (f" and {len(shown) - 6} more" if len(shown) > 6 else "")

    evidence = [f"{source}: {a}->{b}/{b}->{a}: {', '.join(v)} ({'; '.join(P2P_MEANING.get(x.split()[1], x) for x in v)})" for (a, b), v in bad.items()][:12]
    if nvl:
        out.append(
            fail(
                NAME,
                "topology.p2p_nvlink",
                f"P2P refused between NVLink-connected GPUs: {fmt(nvl)}",
                actual={f"{a}-{b}": v for (a, b), v in nvl.items()},
                expected="OK between every NV# pair",
                evidence=evidence,
                fix="NCCL stops with 'P2P is disabled between NVLINK connected GPUs'. The links are there but the "
                "driver refuses P2P: check 'nvidia-smi nvlink --status' (gpu.nvlink), nvidia-fabricmanager on NVSwitch "
                "systems, NVreg_* options under /etc/modprobe.d; reset the GPUs or reboot.",
            )
        )
    if pcie:
        consumer = sorted({names[g] for p in pcie for g in p if is_consumer(names.get(g))})
        codes = {x.split()[1] for v in pcie.values() for x in v}
        if consumer or codes & {"CNS", "GNS"}:
            why = (
                f"{', '.join(consumer)}: NVIDIA does not enable P2P on consumer cards. " if consumer else
                "the driver reports the chipset or GPU cannot do P2P. "
            )
        elif "DR" in codes:
            why = "P2P is disabled by a driver registry key (NVreg_RegistryDwords in /etc/modprobe.d). "
        else:
            why = "the PCIe path does not allow P2P, often an IOMMU in translated mode or PCIe ACS redirect on a switch (see the iommu and pcie checks). "
        # GNS (the GPU model offers no P2P) or consumer cards: how those GPUs ship, said as information
        by_design = codes <= {"GNS", "OK"} or (consumer and len(consumer) == len({names.get(g) for p in pcie for g in p}))
        out.append(
            (ok if by_design else warn)(
                NAME,
                "topology.p2p",
                (f"P2P not offered between {len(pcie)} of {len(verdicts)} GPU pairs, as these GPUs ship "
                 f"(NCCL uses its SHM transport for them): {fmt(pcie)}") if by_design else
                f"P2P not available between {len(pcie)} of {len(verdicts)} GPU pairs: {fmt(pcie)}",
                actual={f"{a}-{b}": v for (a, b), v in pcie.items()},
                expected="OK",
                evidence=evidence,
                fix=why + "NCCL uses its SHM transport for these pairs instead (copies staged through host memory, "
                "slower than direct P2P). If collectives hang on these GPUs, run with NCCL_P2P_DISABLE=1.",
            )
        )
    return out


def _fmt_gbps(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.1f}"


def _matrix_line(p: Mapping[str, Any], topo: Optional[TopoMatrix]) -> str:
    a, b = f"GPU{p.get('src')}", f"GPU{p.get('dst')}"
    kind = f" ({topo.link(a, b) or '?'})" if topo is not None else ""
    data = "data ok" if p.get("verified") else "DATA WRONG"
    return f"{a}->{b}{kind}: {_fmt_gbps(p.get('gbps'))} GB/s, peer access {p.get('can_access_peer')}, {data}"


def judge_p2p_copy(
    result: Optional[Mapping[str, Any]],
    topo: Optional[TopoMatrix] = None,
    p2p_ok: Optional[Mapping[Tuple[int, int], bool]] = None,
    nvlink_gbps: Optional[float] = None,
    parse_error: Optional[str] = None,
) -> List[Finding]:
    """The measured copy matrix against the topology's prediction (pure).

    Data must arrive intact on every pair (fail otherwise). NVLink pairs must
    copy well above what the host link allows: at least 40 % of their link
    count times the per-link rate (``nvlink_gbps``, 20 GB/s when unknown) and
    1.5x the host link. A pair the driver calls P2P-capable, over PCIe, must
    copy faster than staging through host memory would (60 % of the slower of
    source D2H and destination H2D); slower means no direct path is used.
    """
    if result is None:
        if parse_error:
            return [error(NAME, "topology.p2p_copy", parse_error)]
        return [error(NAME, "topology.p2p_copy", "the P2P copy test was asked for but gave no output (timed out?)",
                      fix="Run 'python3 -m nccldiag.node.p2pcopy' on the node to see why; raise --command-timeout.")]
    if result.get("error"):
        msg = str(result["error"])
        if "no CUDA device" in msg:
            return [skip(NAME, "topology.p2p_copy", f"P2P copy test: {msg}")]
        return [error(NAME, "topology.p2p_copy", f"P2P copy test could not run: {msg}",
                      fix="The test needs torch with CUDA in the Python nccldiag runs on the node (--python).")]
    pairs = [p for p in result.get("pairs") or [] if isinstance(p, dict)]
    if not pairs:
        return [skip(NAME, "topology.p2p_copy", "P2P copy test: fewer than two devices")]
    p2p_ok = p2p_ok or {}
    links = {d.get("index"): d for d in result.get("devices") or [] if isinstance(d, dict)}
    per_link = nvlink_gbps or 20.0
    findings: List[Finding] = []
    wrong = [p for p in pairs if not p.get("verified")]
    matrix = [_matrix_line(p, topo) for p in pairs]
    if wrong:
        findings.append(
            fail(
                NAME,
                "topology.p2p_copy",
                f"{len(wrong)} of {len(pairs)} GPU-to-GPU copies failed or arrived wrong: "
                + ", ".join(f"GPU{p['src']}->GPU{p['dst']}" for p in wrong[:8]),
                actual={f"GPU{p['src']}->GPU{p['dst']}": p.get("error") or f"{p.get('mismatches')} wrong" for p in wrong},
                expected="every element equal after every copy",
                evidence=[p.get("error") or "" for p in wrong[:8]],
                fix="Copies that complete with wrong data are the IOMMU/ACS failure mode: boot with iommu=pt (or "
                "disable VT-d/AMD-Vi on bare metal) and disable ACS redirect on the PCIe switches (see the iommu and "
                "pcie checks). Until fixed, NCCL_P2P_DISABLE=1 avoids the corrupt path.",
            )
        )
    else:
        findings.append(ok(NAME, "topology.p2p_copy", f"data verified on all {len(pairs)} GPU-to-GPU copies", evidence=matrix))
    slow: List[str] = []
    for p in pairs:
        if not p.get("verified") or p.get("gbps") is None:
            continue
        a, b, gbps = p["src"], p["dst"], float(p["gbps"])
        src, dst = links.get(a) or {}, links.get(b) or {}
        host = [v for v in (src.get("d2h_gbps"), dst.get("h2d_gbps")) if isinstance(v, (int, float))]
        host_link = min(host) if host else None
        n = topo.nvlinks(f"GPU{a}", f"GPU{b}") if topo is not None else 0
        if n:
            floor = 0.4 * n * per_link
            if host_link:
                floor = max(floor, 1.5 * host_link)
            if p.get("can_access_peer") is False:
                slow.append(f"GPU{a}->GPU{b} (NV{n}): torch reports no peer access")
            elif gbps < floor:
                slow.append(f"GPU{a}->GPU{b} (NV{n}): {gbps:.1f} GB/s, expected >= {floor:.0f} GB/s over NVLink")
        elif (p.get("can_access_peer") or p2p_ok.get((a, b))) and host_link and gbps < 0.6 * host_link:
            slow.append(
                f"GPU{a}->GPU{b} ({topo.link(f'GPU{a}', f'GPU{b}') if topo else 'PCIe'}): {gbps:.1f} GB/s, no faster "
                f"than staging through host memory (host link {host_link:.1f} GB/s)"
            )
    if slow:
        findings.append(
            warn(
                NAME,
                "topology.p2p_bandwidth",
                f"{len(slow)} GPU pair(s) copy slower than their topology predicts: " + "; ".join(slow[:4]),
                actual=slow,
                evidence=matrix,
                fix="An NVLink pair at PCIe speed is not using its links (check gpu.nvlink and, on NVSwitch systems, "
                "nvidia-fabricmanager); a P2P pair at host-staged speed crosses a path that does not forward P2P "
                "well (IOMMU, ACS, CPU root complex): compare with NCCL_P2P_LEVEL and the iommu/pcie checks.",
            )
        )
    elif result.get("backend") == "cuda":
        findings.append(ok(NAME, "topology.p2p_bandwidth", "copy bandwidth matches the topology on every pair", evidence=matrix))
    return findings


def summarize(facts: Optional[TopologyFacts]) -> Dict[str, Optional[str]]:
    """The GPU-GPU link kinds, compared across nodes (one node wired differently shows up)."""
    if facts is None or facts.topo is None:
        return {}
    topo = facts.topo
    gpus = topo.gpus
    kinds = Counter(topo.link(a, b) or "?" for i, a in enumerate(gpus) for b in gpus[i + 1 :])
    return {"gpu_links": ",".join(f"{k}x{n}" for k, n in sorted(kinds.items())) or None}
