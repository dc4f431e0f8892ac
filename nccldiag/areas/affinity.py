"""HCA-GPU affinity: a NIC close to every GPU, on the GPU's NUMA node.

NCCL sends each GPU's inter-node traffic through the NIC nearest to it in
the PCIe tree. GPUDirect RDMA is fast when that NIC sits under the same
PCIe switch (``PIX``: one switch, ``PXB``: several switches, in
``nvidia-smi topo -m``) and slow through the CPU (``PHB``), across NUMA
nodes of a socket (``NODE``) or across the socket link (``SYS``). ClusterMAX
classes a NIC as a fabric NIC when it is PIX/PXB/PHB to a GPU.

- ``affinity.nic_distance``: on a system where some GPU has a NIC at
  PIX/PXB (built for GPUDirect RDMA), every GPU should have one; a GPU whose
  nearest NIC is further away (PHB, NODE, SYS) warns, naming it. A system
  where no GPU has a PIX/PXB NIC is reported as such (GPUDirect RDMA there
  goes through the CPU by design).
- ``affinity.numa``: the NUMA node of each GPU's nearest NIC
  (``/sys/class/infiniband/<dev>/device/numa_node``) against the GPU's NUMA
  affinity in ``topo -m``; a mismatch, or a NIC whose NUMA node the kernel
  does not know (-1) on a multi-node system, warns.

The matrix is the ``topology`` area's ``topo_m`` source (listed here too).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from nccldiag.areas import topology
from nccldiag.areas.base import NodeFacts, Source, section
from nccldiag.model.findings import Finding, ok, skip, warn

NAME = "affinity"
TITLE = "HCA-GPU affinity"

NUMA_SOURCE = Source(
    "nic_numa",
    '[ -d "$R/sys/class/infiniband" ] || exit 0; for d in "$R"/sys/class/infiniband/*; do n=; '
    'read n 2>/dev/null <"$d/device/numa_node"; echo "${d##*/} ${n:--}"; done',
    description="NUMA node of each RDMA device (sysfs)",
)
_TOPO = next(s for s in topology.SOURCES if s.name == "topo_m")

SOURCES = (_TOPO, NUMA_SOURCE)

CLOSE = ("PIX", "PXB")


@dataclass
class AffinityFacts:
    topo: Optional[topology.TopoMatrix] = None
    nic_numa: Dict[str, Optional[int]] = field(default_factory=dict)


def parse_numa(text: Optional[str]) -> Dict[str, Optional[int]]:
    out: Dict[str, Optional[int]] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                out[parts[0]] = None
    return out


def parse(raw) -> AffinityFacts:
    return AffinityFacts(topology.parse_topo_m(section(raw, _TOPO.name)), parse_numa(section(raw, NUMA_SOURCE.name)))


def nearest(topo: topology.TopoMatrix) -> Dict[str, Tuple[Optional[str], List[str]]]:
    """GPU -> (nearest PCIe kind, the NICs at that distance)."""
    out: Dict[str, Tuple[Optional[str], List[str]]] = {}
    for g in topo.gpus:
        best, nics = None, []
        for nic in topo.nics:
            kind = topo.link(g, nic)
            if kind not in topology.PCIE_KINDS:
                continue
            if best is None or topology.PCIE_KINDS.index(kind) < topology.PCIE_KINDS.index(best):
                best, nics = kind, [topo.nic_name(nic)]
            elif kind == best:
                nics.append(topo.nic_name(nic))
        out[g] = (best, nics)
    return out


def judge(facts: Optional[AffinityFacts], node: NodeFacts) -> List[Finding]:
    topo = facts.topo if facts is not None else None
    if topo is None or not topo.gpus:
        return [skip(NAME, "affinity.nic_distance", "no nvidia-smi topo -m matrix with GPUs")]
    if not topo.nics:
        return [skip(NAME, "affinity.nic_distance", f"{len(topo.gpus)} GPUs and no NIC in nvidia-smi topo -m")]
    near = nearest(topo)
    ev = [f"{g}: nearest NIC {', '.join(n) or '?'} ({k or '?'})" for g, (k, n) in near.items()]
    out: List[Finding] = []
    capable = [g for g, (k, _) in near.items() if k in CLOSE]
    if not capable:
        out.append(ok(NAME, "affinity.nic_distance", "no GPU shares a PCIe switch with a NIC: GPUDirect RDMA goes through "
                      "the CPU on this system by design", evidence=ev))
    else:
        far = {g: k for g, (k, _) in near.items() if k not in CLOSE}
        if far:
            out.append(warn(NAME, "affinity.nic_distance", f"{len(far)} of {len(near)} GPUs have no NIC under their PCIe "
                            "switch while others do: " + ", ".join(f"{g} nearest {k or 'none'}" for g, k in far.items()),
                            actual=far, expected="a NIC at PIX/PXB for every GPU", evidence=ev,
                            fix="Move a NIC into the PCIe switch of these GPUs (the server's GPU-NIC rail layout), or "
                            "accept that their inter-node traffic crosses the CPU; check that no NIC is missing or "
                            "disabled (ib area) before moving hardware."))
        else:
            out.append(ok(NAME, "affinity.nic_distance", f"every GPU has a NIC at PIX/PXB ({len(near)} GPUs)", evidence=ev))
    out.extend(_judge_numa(facts, near))
    return out


def _judge_numa(facts: AffinityFacts, near: Dict[str, Tuple[Optional[str], List[str]]]) -> List[Finding]:
    topo = facts.topo
    gpu_numa = {}
    for g in topo.gpus:
        v = (topo.numa_affinity.get(g) or "").strip()
        if v.isdigit():
            gpu_numa[g] = int(v)
    if not gpu_numa or not facts.nic_numa:
        return [skip(NAME, "affinity.numa", "NUMA nodes of the GPUs (topo -m) or of the NICs (sysfs) not known")]
    multi = len(set(gpu_numa.values())) > 1
    bad, unknown, ev = {}, [], []
    for g, (k, nics) in near.items():
        if g not in gpu_numa:
            continue
        for nic in nics:
            if nic not in facts.nic_numa:
                continue
            n = facts.nic_numa[nic]
            ev.append(f"{g} NUMA {gpu_numa[g]}, {nic} ({k}) NUMA {n if n is not None else '?'}")
            if n is None or n < 0:
                if multi and nic not in unknown:
                    unknown.append(nic)
            elif n != gpu_numa[g]:
                bad[g] = f"{nic} on NUMA {n}, GPU on {gpu_numa[g]}"
    if not ev:
        return [skip(NAME, "affinity.numa", "the GPUs' nearest NICs are not among the RDMA devices in sysfs")]
    if bad or unknown:
        parts = [f"{g}: {v}" for g, v in bad.items()] + [f"{n}: NUMA node unknown to the kernel (-1)" for n in unknown]
        return [warn(NAME, "affinity.numa", "NIC and GPU on different NUMA nodes: " + "; ".join(parts), actual=bad or unknown,
                     expected="each GPU's nearest NIC on the GPU's NUMA node", evidence=ev,
                     fix="A NUMA node of -1 means the firmware's ACPI tables (SRAT/_PXM) do not place the device: update "
                     "the BIOS, or enable its NUMA-per-socket option. A real mismatch means the NIC is in a slot of the "
                     "other socket: move it, or pin the ranks with NCCL_IB_HCA to the closer NIC.")]
    return [ok(NAME, "affinity.numa", f"each GPU's nearest NIC is on the GPU's NUMA node ({len(gpu_numa)} GPUs)", evidence=ev)]


def summarize(facts: Optional[AffinityFacts]) -> Dict[str, Optional[str]]:
    if facts is None or facts.topo is None or not facts.topo.gpus or not facts.topo.nics:
        return {}
    kinds = sorted({k or "none" for k, _ in nearest(facts.topo).values()})
    return {"nearest_nic": "/".join(kinds)}
