"""The blocks found in a paste, judged as ``check --bundle`` judges a node's outputs (pure).

The blocks of one host are that host's outputs: its sections (``{source: text}``) are one node of a bundle
whose return codes list those sources alone, given to :func:`nccldiag.check.engine.analyze_node` with every node
area: the same parsers and judges, on the same text, so a finding reads the same whichever way its evidence
came (an area none of whose sources was pasted says nothing, as in a bundle of a few outputs). Where a host's
paste holds one source twice (``ibstat`` before and after a fix), each is judged as a node of its own; the
kernel log's and the fabric manager's lines are one log, whatever their blocks.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from nccldiag.areas import all_areas, kind
from nccldiag.check.engine import analyze_node
from nccldiag.model.findings import Finding, Status
from nccldiag.model.raw import RawNode
from nccldiag.paste.reader import Block

ONE_LOG = ("kernel_log", "iommu_dmesg", "pcie_dmesg", "gdr_dmesg", "fabricmanager")  # joined across blocks
PASTED_HOST = "pasted"  # the name a node of no known host is judged under


def _groups(blocks: Sequence[Block]) -> Dict[str, List[Tuple[Dict[str, str], List[Block]]]]:
    """Each host's nodes: ``(sections, the blocks they come from)``."""
    out: Dict[str, List[Tuple[Dict[str, str], List[Block]]]] = {}
    for b in blocks:
        if not b.sections:
            continue
        nodes = out.setdefault(b.host or "", [])
        for sections, made in nodes:
            if all(s in ONE_LOG or s not in sections for s in b.sections):
                for s, text in b.sections.items():
                    sections[s] = sections.get(s, "") + text
                made.append(b)
                break
        else:
            nodes.append((dict(b.sections), [b]))
    return out


def judge(blocks: Sequence[Block]) -> Tuple[List[Finding], Dict[str, Dict[str, Any]]]:
    """The failing and warning findings of the blocks (each with its host, or None, and where it was pasted),
    and every host's facts (``""``: no host)."""
    areas = [a for a in all_areas() if kind(a) == "node"]
    findings: List[Finding] = []
    facts: Dict[str, Dict[str, Any]] = {}
    for host, nodes in _groups(blocks).items():
        for sections, made in nodes:
            raw = RawNode(host=host or PASTED_HOST, sections=dict(sections), rcs={s: 0 for s in sections})
            report = analyze_node(raw, areas)
            for f in report.findings:
                if f.status not in (Status.FAIL, Status.WARN):
                    continue
                f.host = host or None
                where = _where(f, made, areas)
                if where:
                    f.evidence = [where] + list(f.evidence or [])
                findings.append(f)
            facts.setdefault(host, {}).update({k: v for k, v in report.facts.items() if v is not None})
    return findings, facts


def _where(f: Finding, made: Sequence[Block], areas: Sequence[Any]) -> Optional[str]:
    """Where the outputs the finding judged were pasted: ``pasted: ibstat at job.log:120-136``."""
    area = next((a for a in areas if a.NAME == f.area), None)
    names = {s.name for s in getattr(area, "SOURCES", ())} | set(getattr(area, "LINE_LIMITS", {}))
    at = [b for b in made if names & set(b.sections)] or list(made)
    return "pasted: " + ", ".join(f"{b.kind} at {b.where()}" for b in at[:3]) if at else None
