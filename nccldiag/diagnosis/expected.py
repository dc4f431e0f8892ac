"""Expected bandwidth, derived from what the nodes report (pure).

Never a per-SKU table: the expectation is the line rate of the slowest
segment on the path the collective takes, each segment read from the node:

- inter-node, NCCL: the IB/RoCE ports in use (NCCL's ``NET/IB : Using`` line
  where a log names them, else every active port) x their active rate; and the
  PCIe links that feed those NICs (one GPU link per NIC);
- intra-node, NCCL: NVLink per GPU (active links x per-link rate as
  ``nvidia-smi nvlink --status`` reports it), or without NVLink the GPU's PCIe
  link (generation x width);
- gloo: the socket interface's speed as the kernel reports it
  (``/sys/class/net/IF/speed``).

Figures are GB/s in one direction, the unit nccl-tests' busbw uses, so a ring
collective's busbw can reach the bottleneck's rate but not exceed it. Two-node
figures are compared only under ``NCCL_ALGO=Ring``: with two nodes tree
algorithms report busbw above the line rate (nccl-tests#196, nccl#812).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

# GB/s per lane and direction after line coding: Gen1/2 8b/10b, Gen3+ 128b/130b (Gen6 FLIT, approximate).
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
# NVLink per-link GB/s per direction by generation, for nodes that report links without a rate.
NVLINK_LINK_GBPS = {1: 20.0, 2: 25.0, 3: 25.0, 4: 25.0, 5: 50.0}
MIN_SIZE = 256 << 20  # smaller messages are latency-bound and say nothing about the line rate
FLOOR = 0.70  # healthy runs reach 77-96% of the line rate (docs/diagnoses.md lists the published figures)


@dataclass
class Segment:
    name: str  # "IB/RoCE", "socket", "NVLink", "PCIe"
    gbps: float  # GB/s, one direction
    basis: str  # how it was derived, in words
    host: Optional[str] = None

    def text(self) -> str:
        return f"{self.name} {self.gbps:.1f} GB/s ({self.basis}" + (f" on {self.host})" if self.host else ")")


@dataclass
class Expectation:
    scope: str  # inter-node | intra-node
    segments: List[Segment]
    notes: List[str] = field(default_factory=list)

    @property
    def bottleneck(self) -> Segment:
        return min(self.segments, key=lambda s: s.gbps)

    @property
    def gbps(self) -> float:
        return self.bottleneck.gbps

    def to_dict(self) -> Dict[str, Any]:
        b = self.bottleneck
        return {"scope": self.scope, "gbps": round(self.gbps, 3),
                "bottleneck": {"segment": b.name, "host": b.host, "basis": b.basis},
                "segments": [{"segment": s.name, "gbps": round(s.gbps, 3), "basis": s.basis, "host": s.host}
                             for s in self.segments],
                "notes": list(self.notes)}


def pcie_gbps(gen: Optional[int], width: Optional[int]) -> Optional[float]:
    if not gen or not width or gen not in PCIE_LANE_GBPS:
        return None
    return PCIE_LANE_GBPS[gen] * width


# --------------------------------------------------------------------------- segments of one node


def network_segment(host: str, ib: Any, used: Optional[Sequence[str]] = None) -> Optional[Segment]:
    """The IB/RoCE ports in use (``used``: ``mlx5_0:1`` names from NCCL's log) x their active rate."""
    ports = [p for p in getattr(ib, "ports", None) or [] if p.active and p.rate]
    if used:
        wanted = {u if ":" in u else f"{u}:1" for u in used}
        chosen = [p for p in ports if f"{p.device}:{p.port}" in wanted]
        how = "used by NCCL"
    else:
        # NCCL's choice not seen: the fabric is the largest class of active ports (link layer and rate);
        # a frontend or storage port of another class (a 40 GbE port, a bond) is left out
        classes: Dict[tuple, list] = {}
        for p in ports:
            classes.setdefault((p.link_layer, p.rate), []).append(p)
        chosen = max(classes.values(), key=lambda ps: (len(ps), ps[0].rate)) if classes else []
        how = f"active {chosen[0].link_layer or ''}".rstrip() if chosen else "active"
    if not chosen:
        return None
    total = sum(p.rate for p in chosen) / 8.0
    rates = sorted({p.rate for p in chosen})
    rate_s = "/".join(f"{r:g}" for r in rates)
    return Segment("IB/RoCE", total, f"{len(chosen)} port{'s' if len(chosen) != 1 else ''} {how} x {rate_s} Gb/s",
                   host)


def socket_segment(host: str, ifname: Optional[str], speed_mbps: Optional[int]) -> Optional[Segment]:
    if not speed_mbps or speed_mbps <= 0:
        return None
    return Segment("socket", speed_mbps / 8000.0, f"{ifname or 'interface'} at {speed_mbps} Mb/s", host)


def nvlink_segment(host: str, gpu: Any) -> Optional[Segment]:
    """Per GPU: active NVLinks x per-link rate, the least-linked GPU of the node."""
    best = None
    for g in getattr(gpu, "nvlink", None) or []:
        active = [r for r in g.links.values() if r]
        if not active:
            continue
        rates = sorted(set(active))
        count, note = len(active), ""
        top = max(g.links) + 1
        if top > len(g.links) and len(rates) == 1:
            # the output skipped lines ('[...]'): links are numbered from 0, an inactive one is listed as such
            count, note = top, f" (links 0-{top - 1}; {len(g.links)} listed)"
        gbps = count * rates[0] if note else sum(active)
        cand = Segment("NVLink", gbps, f"GPU{g.index}: {count} active links x "
                                       f"{'/'.join(f'{r:g}' for r in rates)} GB/s{note}", host)
        if best is None or cand.gbps < best.gbps:
            best = cand
    return best


def pcie_segment(host: str, gpu: Any, per: int = 1) -> Optional[Segment]:
    """The slowest GPU's PCIe link (generation x width); ``per`` links in parallel (one per NIC)."""
    best = None
    for g in getattr(gpu, "gpus", None) or []:
        gen = g.gen
        note = ""
        if g.gen_max and (gen is None or gen < g.gen_max):
            gen, note = g.gen_max, f" (current Gen{g.gen} is an idle downclock)" if g.gen else ""
        width = g.width or g.width_max
        bw = pcie_gbps(gen, width)
        if bw is None:
            continue
        cand = Segment("PCIe", bw * per, (f"{per} x " if per > 1 else "") + f"GPU{g.index} Gen{gen} x{width}{note}",
                       host)
        if best is None or cand.gbps < best.gbps:
            best = cand
    return best


# --------------------------------------------------------------------------- a run's expectation


def expect(node_facts: Mapping[str, Mapping[str, Any]], hosts: Sequence[str], backend: str = "nccl",
           network: Optional[str] = None, used_ports: Optional[Mapping[str, Sequence[str]]] = None,
           iface_speeds: Optional[Mapping[str, Optional[int]]] = None,
           ifnames: Optional[Mapping[str, Optional[str]]] = None) -> Optional[Expectation]:
    """The expected busbw of a collective over ``hosts``, or None where the nodes did not report enough.

    ``network``: the NET NCCL used (``IB``, ``Socket``), from its log.
    """
    hosts = list(dict.fromkeys(hosts))
    multi = len(hosts) > 1
    segs: List[Segment] = []
    notes: List[str] = []
    speeds = iface_speeds or {}
    names = ifnames or {}
    if backend == "gloo":
        if not multi:
            return None  # loopback: the kernel reports no speed for lo
        for h in hosts:
            s = socket_segment(h, names.get(h), speeds.get(h))
            if s is None:
                return None
            segs.append(s)
        return Expectation("inter-node", segs, notes)
    for h in hosts:
        facts = node_facts.get(h) or {}
        gpu = facts.get("gpu")
        intra = nvlink_segment(h, gpu) or pcie_segment(h, gpu)
        if intra is not None:
            segs.append(intra)
        elif not multi:
            return None
        if not multi:
            continue
        if network and network.lower().startswith("socket"):
            s = socket_segment(h, names.get(h), speeds.get(h))
            if s is None:
                return None
            segs.append(s)
            continue
        net = network_segment(h, facts.get("ib"), (used_ports or {}).get(h))
        if net is None:
            return None
        segs.append(net)
        nics = int(net.basis.split(" ", 1)[0])
        feed = pcie_segment(h, gpu, per=max(1, nics))
        if feed is not None:
            feed.name = "PCIe (GPU-NIC)"
            segs.append(feed)
    if not segs:
        return None
    return Expectation("inter-node" if multi else "intra-node", segs, notes)


# --------------------------------------------------------------------------- measured against expected


@dataclass
class Comparison:
    measured: float  # busbw GB/s
    size: int
    expectation: Optional[Expectation]
    comparable: bool
    why_not: str = ""
    collective: str = "all_reduce"
    floor: float = FLOOR  # the share of the expectation below which the figure is low (a spec's busbw_share)

    @property
    def percent(self) -> Optional[float]:
        if self.expectation is None or self.expectation.gbps <= 0:
            return None
        return 100.0 * self.measured / self.expectation.gbps

    @property
    def below(self) -> bool:
        p = self.percent
        return self.comparable and p is not None and p < self.floor * 100

    def text(self) -> str:
        if self.expectation is None:
            return f"{self.measured:.2f} GB/s ({self.why_not or 'no expectation'})"
        b = self.expectation.bottleneck
        s = f"{self.measured:.2f} / {self.expectation.gbps:.1f} GB/s = {self.percent:.0f}% (bottleneck: {b.text()})"
        return s if self.comparable else s + f"; not judged: {self.why_not}"

    def to_dict(self) -> Dict[str, Any]:
        return {"collective": self.collective, "measured_gbps": round(self.measured, 3), "size": self.size,
                "expected": self.expectation.to_dict() if self.expectation else None,
                "percent": None if self.percent is None else round(self.percent, 1),
                "comparable": self.comparable, "why_not": self.why_not, "below": self.below, "floor": self.floor}


def compare(measured: float, size: int, expectation: Optional[Expectation], nnodes: int,
            algo: Optional[str] = None, nvls: bool = False, collective: str = "all_reduce",
            min_size: int = MIN_SIZE, backend: str = "nccl", floor: float = FLOOR) -> Comparison:
    """``measured`` busbw at ``size`` against ``expectation``, and whether the comparison is fair.

    Not judged (shown, never a diagnosis): messages below ``min_size``; two
    nodes without ``NCCL_ALGO=Ring``; NVLS (NVLink SHARP reduces in the
    switch, so all_reduce busbw exceeds the per-GPU link rate).
    """
    why = ""
    if expectation is None:
        why = "the nodes did not report the rates to derive an expectation"
    elif size < min_size:
        why = f"largest message {size >> 20} MiB is below {min_size >> 20} MiB, latency-bound"
    elif backend == "nccl" and nnodes == 2 and (algo or "").lower() != "ring":
        why = "two nodes without NCCL_ALGO=Ring: tree busbw can exceed the line rate"
    elif nvls:
        why = "NVLS in use: in-switch reduction lifts busbw above the per-GPU link rate"
    return Comparison(measured, size, expectation, comparable=not why, why_not=why, collective=collective,
                      floor=floor)
