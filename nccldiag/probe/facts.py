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
from nccldiag.collect import script, sections
from nccldiag.transport.base import TransportError
from nccldiag.transport.task import fan_out

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
    out = {key: area.parse({n: secs.get(n) for n in names}) for key, (area, names) in SOURCES.items()}
    out["nvlink"] = nvlink.parse({"nvlink_status": secs.get("nvlink_status")})
    return out


def collect(nodes: Sequence, timeout: float, fanout: int = 64,
            keep: Optional[Callable[[str, Dict[str, Optional[str]]], None]] = None) -> Dict[str, Dict[str, Any]]:
    """``{host: {"ib": ..., "gpu": ...}}`` for the nodes that answered; ``keep(host, sources)`` receives the
    texts each node's facts are parsed from (the run directory keeps them)."""
    out: Dict[str, Dict[str, Any]] = {}

    def one(node) -> None:
        mark = sections.new_mark()
        try:
            r = node.run("sh -s", timeout, stdin=node_script(mark))
        except TransportError:
            return
        if r.error is None and r.stdout:
            secs, _rcs, _cut = sections.split_sections(r.stdout, mark, script.source_names(node_script()))
            wanted = {n: secs.get(n) for _area, names in SOURCES.values() for n in names}
            if keep is not None:
                keep(node.name, wanted)
            out[node.name] = from_sections(wanted)

    fan_out(list(nodes), one, fanout)
    return out
