"""The blocks found in a paste, judged as ``check --bundle`` judges a node's outputs (pure).

The blocks of one host are that host's outputs: its sections (``{source: text}``) are one node of a bundle
whose return codes list those sources alone, given to :func:`nccldiag.check.engine.analyze_node` with every node
area: the same parsers and judges, on the same text, so a finding reads the same whichever way its evidence
came (an area none of whose sources was pasted says nothing, as in a bundle of a few outputs). Where a host's
paste holds one source twice (``ibstat`` before and after a fix), each is judged as a node of its own, and a port
Down at one reading and Active at its last is a warning with both readings (:func:`_came_back`); the kernel log's
and the fabric manager's lines are one log, whatever their blocks.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

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


Judged = Dict[Tuple[str, int], FrozenSet[str]]  # (file, first line) of a block -> the areas that judged it


def judge(blocks: Sequence[Block]) -> Tuple[List[Finding], Dict[str, Dict[str, Any]], Judged]:
    """The failing and warning findings of the blocks (each with its host, or None, and where it was pasted),
    every host's facts (``""``: no host), and the areas that judged each block: those that gave a verdict (a
    finding not ``skip``) on its node. An area that read a block and skipped every check (a table without its
    header, values without their section) judged nothing of it: a failure line in it is the lexicon's."""
    areas = [a for a in all_areas() if kind(a) == "node"]
    findings: List[Finding] = []
    facts: Dict[str, Dict[str, Any]] = {}
    judged: Judged = {}
    for host, nodes in _groups(blocks).items():
        readings: List[Tuple[List[Finding], Dict[str, Any], str]] = []  # each node's findings, ports, where pasted
        for sections, made in nodes:
            raw = RawNode(host=host or PASTED_HOST, sections=dict(sections), rcs={s: 0 for s in sections})
            pod = next((b.pod for b in made if b.pod), "")  # read inside a pod: its interfaces are the pod's own
            report = analyze_node(raw, areas, {"pod": pod} if pod else None)
            verdicts = frozenset(f.area for f in report.findings if f.status is not Status.SKIP)
            for b in made:
                judged[(b.path, b.lineno)] = verdicts
            mine: List[Finding] = []
            for f in report.findings:
                if f.status not in (Status.FAIL, Status.WARN):
                    continue
                f.host = host or None
                where = _where(f, made, areas)
                if where:
                    f.evidence = [where] + list(f.evidence or [])
                mine.append(f)
            findings.extend(mine)
            ib = report.facts.get("ib")
            ports = {p.name: p for p in getattr(ib, "ports", None) or []}
            readings.append((mine, ports, "pasted: " + ", ".join(f"{b.kind} at {b.where()}" for b in made[:3])))
            kept = facts.setdefault(host, {})
            kept.update(_added(kept, {k: v for k, v in report.facts.items() if v is not None}))
        _came_back(readings)
    return findings, facts, judged


def _added(kept: Dict[str, Any], new: Dict[str, Any]) -> Dict[str, Any]:
    """A host's facts of a later reading, which add to those of its readings before: a port read again replaces
    its earlier reading, a port not read again (an ``ibstat`` of one CA, or one cut before its ports) keeps it."""
    before, after = kept.get("ib"), new.get("ib")
    if before is None or after is None or not getattr(before, "ports", None):
        return new
    names = {p.name for p in after.ports}
    ports = [p for p in before.ports if p.name not in names] + list(after.ports)
    return {**new, "ib": dataclasses.replace(after, ports=ports)}


def _came_back(readings: Sequence[Tuple[List[Finding], Dict[str, Any], str]]) -> None:
    """A port pasted Down (or Init) and read Active at its last reading (``ibstat`` before and after a fix, ``rdma
    link`` run again while the link flaps) is a warning, with both readings: the link went down and came back. A port
    still not Active at its last reading stays a failure. The readings are a host's nodes in the order pasted."""
    for i, (found, _, _) in enumerate(readings):
        for f in found:
            if f.check != "ib.port_state" or f.status is not Status.FAIL:
                continue
            name = next((n for n in readings[i][1] if f.message.startswith((n + " ", n + ":"))), None)
            later = [(ports[name], where) for _, ports, where in readings[i + 1:] if name in ports]
            if name is None or readings[i][1][name].active or not later or not later[-1][0].active:
                continue
            port, where = later[-1]
            f.status = Status.WARN
            f.message += ("; Active at the last reading pasted: the link went down and came back (a flap, or a port "
                          "brought up in between)")
            f.evidence = list(f.evidence or []) + [where, port.summary()] + list(port.lines[:2])


def _where(f: Finding, made: Sequence[Block], areas: Sequence[Any]) -> Optional[str]:
    """Where the outputs the finding judged were pasted: ``pasted: ibstat at job.log:120-136``."""
    area = next((a for a in areas if a.NAME == f.area), None)
    names = {s.name for s in getattr(area, "SOURCES", ())} | set(getattr(area, "LINE_LIMITS", {}))
    at = [b for b in made if names & set(b.sections)] or list(made)
    return "pasted: " + ", ".join(f"{b.kind} at {b.where()}" for b in at[:3]) if at else None
