"""What an NCCL probe reads from its nodes to derive the expected bandwidth (I/O edge).

The same sources and parsers as ``nccldiag check`` (the ``ib`` and ``gpu``
areas), limited to what the expectation needs: IB/RoCE port rates
(``/sys/class/infiniband``, ``ibstat``), the GPUs' PCIe links
(``nvidia-smi --query-gpu``) and their NVLinks (``nvidia-smi nvlink
--status``). One round trip per node, ``fanout`` nodes at a time, each bounded
by ``timeout``; a node that does not answer simply has no facts, and its
bandwidth lines say that no expectation could be derived.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

from nccldiag.areas import gpu, infiniband, nvlink
from nccldiag.areas.base import Sections
from nccldiag.collect import script, sections
from nccldiag.transport.nodes import run_all

SOURCES = {"ib": (infiniband, ("ib_sysfs", "ibstat")), "gpu": (gpu, ("gpu_query", "nvlink_status"))}


def node_script(mark: str = "") -> str:
    wanted = [s for area, names in SOURCES.values() for s in area.SOURCES if s.name in names]
    return script.build_script(wanted, [a.NAME for a, _ in SOURCES.values()], mark)


def parse(text: str, mark: str) -> Dict[str, Any]:
    """Area facts (``{"ib": IbFacts, "gpu": GpuFacts, "nvlink": NvlinkFacts}``) from the script's output."""
    secs, _rcs, _cut = sections.split_sections(text, mark, script.source_names(node_script()))
    return from_sections(secs)


def from_sections(secs: Dict[str, Any]) -> Dict[str, Any]:
    """Area facts from the sources' texts; the nvlink area reads the same ``nvidia-smi nvlink --status``
    text as the gpu area (for a site spec's NVLink keys)."""
    out = {key: area.parse(Sections.bounded({n: secs.get(n) for n in names}, [area]))
           for key, (area, names) in SOURCES.items()}
    out["nvlink"] = nvlink.parse(Sections.bounded({"nvlink_status": secs.get("nvlink_status")}, [nvlink]))
    return out


def collect(nodes: Sequence, timeout: float, fanout: int = 64,
            keep: Optional[Callable[[str, Dict[str, Optional[str]]], None]] = None) -> Dict[str, Dict[str, Any]]:
    """``{host: {"ib": ..., "gpu": ...}}`` for the nodes that answered; ``keep(host, sources)`` receives the
    texts each node's facts are parsed from (the run directory keeps them)."""
    mark = sections.new_mark()  # one mark for every node: each node's output is read on its own
    got = run_all(nodes, "sh -s", timeout, fanout, stdin=node_script(mark))
    out: Dict[str, Dict[str, Any]] = {}
    for name, r in got.items():
        if r.error is not None or not r.stdout:
            continue
        secs, _rcs, _cut = sections.split_sections(r.stdout, mark, script.source_names(node_script()))
        wanted = {n: secs.get(n) for _area, names in SOURCES.values() for n in names}
        if keep is not None:
            keep(name, wanted)
        out[name] = from_sections(wanted)
    return out
