"""The check engine: from raw node outputs to findings, per node and for the cluster.

This is the pure middle of ``nccldiag check``: the same function judges a live
collection and a saved bundle.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Dict, List, Mapping, Optional, Sequence

from nccldiag.areas import kernlog, kind, mesh
from nccldiag.areas.base import NodeFacts, Sections, bounded
from nccldiag.knowledge import lexicon
from nccldiag.model.raw import RawNode, ReleasedNode
from nccldiag.model.findings import Finding, Status, error, skip, warn, worst
from nccldiag.model.findings import exit_code as findings_exit_code

# Exit codes (documented in the README).

SCHEMA = "nccldiag.check/1"


@dataclass
class NodeReport:
    host: str
    findings: List[Finding] = field(default_factory=list)
    facts: Dict[str, Any] = field(default_factory=dict)
    elapsed: float = 0.0
    reachable: bool = True
    # what the cluster areas compare of the node (:func:`summarize`), kept when its facts are let go
    summary: Optional[Dict[str, Optional[str]]] = None
    # the lines of its outputs that say something failed (knowledge/lexicon.py) and no area judges
    failure_lines: List[Any] = field(default_factory=list)

    @property
    def status(self) -> Status:
        return worst(f.status for f in self.findings)

    def area_status(self, area: str) -> Optional[Status]:
        found = [f.status for f in self.findings if f.area == area]
        return worst(found) if found else None

    def to_line(self) -> Dict[str, Any]:
        """Its line of a check run directory's ``nodes.jsonl``, written as the node is judged."""
        return {"host": self.host, "status": self.status.value, "reachable": self.reachable,
                "elapsed_s": round(self.elapsed, 3), "findings": [f.to_dict() for f in self.findings]}


@dataclass
class CheckReport:
    nodes: List[NodeReport]
    areas: List[str]
    started: float = field(default_factory=time.time)
    elapsed: float = 0.0
    inventory_notes: List[str] = field(default_factory=list)
    cluster_areas: List[str] = field(default_factory=list)
    slurm: Optional[Dict[str, Any]] = None  # nodes to drain, and what --drain / --resume-healthy did
    # attached by diagnosis.attach once the run is judged: the verdicts every view of the report renders
    diagnoses: List[Any] = field(default_factory=list)
    diagnosis_summary: Any = None

    @property
    def findings(self) -> List[Finding]:
        return [f for n in self.nodes for f in n.findings]

    @property
    def exit_code(self) -> int:
        return exit_code(self.nodes)

    @property
    def columns(self) -> List[str]:
        """Report columns: every area, a cluster area only where it said something."""
        said = {f.area for f in self.findings}
        return [a for a in self.areas if a in said or a not in self.cluster_areas]


def exit_code(nodes: Sequence[NodeReport]) -> int:
    """1 if any check failed; else 3 if some host could not be checked; else 0."""
    return findings_exit_code((f.status for n in nodes for f in n.findings),
                              incomplete=any(not n.reachable for n in nodes))


def collected(raw: RawNode, area: ModuleType) -> bool:
    """Whether any output of ``area`` was collected on the node. A bundle assembled from pasted outputs holds a
    few sources only: what it lacks was not collected (its return codes list what was), which is not a fault
    of the node. A live node has a return code for every source it ran."""
    if not raw.rcs:
        return True
    names = [s.name for s in getattr(area, "SOURCES", ())]
    return not names or any(n in raw.rcs or n in raw.sections for n in names)


def analyze_node(raw: RawNode, areas: Sequence[ModuleType], options: Optional[Mapping[str, Any]] = None,
                 spec: Optional[Any] = None) -> NodeReport:
    """Judge how one node was reached, then parse and judge its raw outputs (pure); with a site ``spec``
    (:class:`nccldiag.spec.model.Spec`), compare the node with it and apply its policy."""
    if isinstance(raw, ReleasedNode):  # its outputs are gone: judging it would report what never was
        raise ValueError(f"{raw.host}: judged after its outputs were released")
    options = dict(options or {})
    report = NodeReport(host=raw.host, elapsed=raw.elapsed)
    for area in areas:
        if kind(area) == "transport":
            report.findings.extend(area.judge_transport(raw))
    if raw.error and not raw.sections:
        report.reachable = False
        for f in report.findings:
            f.host = raw.host
        return report
    if spec is not None and spec.thresholds:
        options["thresholds"] = dict(spec.thresholds)  # read by the areas whose limits they replace
    node = NodeFacts(host=raw.host, options=options)
    node_areas = [a for a in areas if kind(a) == "node"]
    for area in node_areas:
        cut = _cut_sources(raw, area)
        if cut:  # judged on part of its output, an area could pass (or fail) for what never came
            report.findings.append(_not_checked(raw, area, cut))
        else:
            report.findings.extend(_stopped_sources(raw, area))
    # every line bounded; what several areas parse alike is parsed once
    sections = Sections(bounded(raw.sections, node_areas))
    for area in node_areas:
        try:
            node.facts[area.NAME] = area.parse(sections)
        except Exception as exc:  # a parser bug must not hide the other areas
            report.findings.append(
                error(area.NAME, f"{area.NAME}.parse", f"could not parse {area.NAME} outputs: {type(exc).__name__}: {exc}")
            )
            node.facts[area.NAME] = None
    for area in node_areas:
        if any(f.area == area.NAME and f.check.endswith((".not_checked", ".source_missing")) for f in report.findings):
            node.facts[area.NAME] = None  # part of an output: no other area or node compares it either
    for area in node_areas:
        if any(f.area == area.NAME and f.check.endswith((".parse", ".not_checked", ".source_missing"))
               for f in report.findings):
            continue
        try:
            found = area.judge(node.facts.get(area.NAME), node)
        except Exception as exc:
            found = [error(area.NAME, f"{area.NAME}.judge", f"could not judge {area.NAME}: {type(exc).__name__}: {exc}")]
        if not collected(raw, area) and any(f.status in (Status.FAIL, Status.WARN, Status.ERROR) for f in found):
            # what the area says of outputs that were never collected is no verdict on the node
            found = [skip(area.NAME, f"{area.NAME}.collected", f"{area.TITLE}: not checked, none of its outputs is "
                          f"in this bundle ({', '.join(s.name for s in area.SOURCES)})")]
        report.findings.extend(found)
    if spec is not None:
        from nccldiag.spec import compare, policy

        by_name = {a.NAME: a for a in areas}
        report.findings.extend(compare.judge(spec, node.facts, by_name,
                                             lambda name: collected(raw, by_name[name])))
        policy.apply(spec, report.findings)
    for f in report.findings:
        f.host = raw.host
    report.facts = node.facts
    report.failure_lines = failure_lines(raw, node_areas, report.findings)
    return report


def failure_lines(raw: RawNode, node_areas: Sequence[ModuleType], findings: Sequence[Finding] = ()) -> List[Any]:
    """The lines of the outputs of ``node_areas`` on the node that are of a shape of the failure lexicon
    (:mod:`nccldiag.knowledge.lexicon`), each attributed to the node and its source, but for those an area
    judged (its findings say what they are):

    - a kernel line a row of ``knowledge/kmsg.toml`` reads (``kernel_log``, judged by the kernel areas); a kernel
      line no row reads is no area's, whatever its shape's ``judged_by`` (the kernel areas know the messages of
      their rows only: a line of a failure none of them knows is unexplained, never healthy);
    - a line of another source, of a shape whose row names, in ``judged_by``, an area that reads the source;
    - the lines of a shape of which an area that reads the source quotes one in a finding (``findings``);
    - the lines of a shape read in pastes only (``pasted_only``: a kernel stack's frame, whose header line the
      kernel areas read in a node's own log)."""
    readers: Dict[str, set] = {}
    for area in node_areas:
        for s in getattr(area, "SOURCES", ()):
            readers.setdefault(s.name, set()).add(area.NAME)
    quoted = {(f.area, got.id) for f in findings for text in [f.message, *(f.evidence or [])]
              for got in [lexicon.shape_of(str(text))] if got is not None}
    out: List[Any] = []
    read: Dict[Any, List[Any]] = {}  # the lines of each distinct text, read once (sources often print the same)
    for source, text in raw.sections.items():
        if source not in readers or not text:
            continue
        skip = kernlog.reads if source == kernlog.SOURCE.name else None
        key = (text, skip is None)
        if key not in read:
            read[key] = lexicon.lines_in(text, source, raw.host, skip)
        for line in (replace(x, source=source, more=list(x.more)) for x in read[key]):
            if lexicon.shape(line.shape).pasted_only:
                continue  # in a node's own output the lines around it say what it is (a kernel stack's header)
            judges = set() if skip is not None else readers[source] & set(lexicon.shape(line.shape).judged_by)
            if not judges and not any((a, line.shape) in quoted for a in readers[source]):
                out.append(line)
    return lexicon.ordered(out)


def _cut_sources(raw: RawNode, area: ModuleType) -> List[str]:
    """The sources of ``area`` that did not end on a node whose collection was cut short (none otherwise)."""
    if not (raw.truncated or raw.error):
        return []
    return [s.name for s in getattr(area, "SOURCES", ()) if s.name not in raw.rcs]


# the exit status of a source the collection script stopped at its bound: timeout's own, or its SIGKILL 2 s later
STOPPED = {124: "no answer", 137: "no answer (killed)"}


def _stopped_sources(raw: RawNode, area: ModuleType) -> List[Finding]:
    """For each source of ``area`` that the node's collection script stopped at its bound (a file that never
    returns, a hung tool), a warning naming it; and the area not checked (skip, with the reason), since it would
    be judged without what that source says."""
    stopped = [s for s in getattr(area, "SOURCES", ()) if raw.rcs.get(s.name) in STOPPED]
    if not stopped:
        return []
    said = [f"{s.description or s.name}: {STOPPED[raw.rcs[s.name]]} in {s.timeout} s" for s in stopped]
    out = [warn(area.NAME, f"{area.NAME}.source_stopped", f"{one} (source {s.name}, stopped at its bound)",
                actual="no answer",
                fix="Look at what the source reads on the node: a file that never returns (a FIFO, a hung network "
                    "file system) or a hung tool or driver.") for s, one in zip(stopped, said)]
    out.append(skip(area.NAME, f"{area.NAME}.source_missing", f"{area.TITLE}: not checked, a source it needs gave no "
                    f"answer ({'; '.join(said[:4])}{' ...' if len(said) > 4 else ''})", actual="not checked"))
    return out


def _not_checked(raw: RawNode, area: ModuleType, cut: List[str]) -> Finding:
    from nccldiag.transport.base import COMMAND_TIMEOUT, FIXES

    if raw.error:
        kind = str(raw.error.get("kind") or "")
        cause, fix = str(raw.error.get("message") or kind), str(raw.error.get("fix") or FIXES.get(kind, ""))
    elif raw.extra.get("timeout"):
        cause, fix = str(raw.extra["timeout"]), FIXES[COMMAND_TIMEOUT]
    else:
        cause, fix = "the output ended early", ""
    shown = ", ".join(cut[:4]) + (f" and {len(cut) - 4} more" if len(cut) > 4 else "")
    return error(area.NAME, f"{area.NAME}.not_checked",
                 f"not checked: the collection was cut short before {shown} ended ({cause})",
                 actual="not checked", fix=fix)


def summarize(node: NodeReport, areas: Sequence[ModuleType]) -> Dict[str, Optional[str]]:
    """``{"area.key": value}`` from each node area's ``summarize``: what the cluster areas compare of a node.

    An area whose ``summarize`` fails leaves its keys out of the comparison and says so on the node: an error
    finding ``<area>.summarize``, never silence."""
    s: Dict[str, Optional[str]] = {}
    for area in areas:
        fn = getattr(area, "summarize", None)
        facts = node.facts.get(area.NAME)
        if fn is None or facts is None or kind(area) != "node":
            continue
        try:
            got = {f"{area.NAME}.{k}": None if v is None else str(v) for k, v in (fn(facts) or {}).items()}
        except Exception as exc:  # a bug in one area must not hide the others, nor pass unseen
            node.findings.append(error(area.NAME, f"{area.NAME}.summarize",
                                       f"could not compare {area.NAME} with the other nodes: {type(exc).__name__}: "
                                       f"{exc}", host=node.host))
            continue
        s.update(got)
    return s


def summaries(nodes: Sequence[NodeReport], areas: Sequence[ModuleType]) -> Dict[str, Dict[str, Optional[str]]]:
    """``{host: {"area.key": value}}`` from each node area's ``summarize``, for the cluster areas (a node's
    kept :attr:`NodeReport.summary` where it has one)."""
    return {n.host: (n.summary if n.summary is not None else summarize(n, areas)) for n in nodes if n.reachable}


def analyze(
    raws: Sequence[RawNode], areas: Sequence[ModuleType], options: Optional[Mapping[str, Any]] = None,
    judged: Optional[Mapping[str, NodeReport]] = None, spec: Optional[Any] = None,
) -> CheckReport:
    """Judge every node (``judged``: nodes already judged as they arrived, by host), then the cluster areas.
    ``spec``: a site spec every node is compared with, and whose policy applies to every finding."""
    started = time.time()
    judged = judged or {}
    nodes = [judged[r.host] if r.host in judged else analyze_node(r, areas, options, spec) for r in raws]
    by_host = {n.host: n for n in nodes}
    unreached = {n.host for n in nodes if not n.reachable}
    if unreached:
        # a node the head could not reach fails every other node's login too: named on its own row, never
        # counted against the node that tested it
        for n in nodes:
            if n.reachable:
                n.findings = [mesh.settle(f, unreached) for f in n.findings]
    cluster = [a for a in areas if kind(a) == "cluster"]
    if cluster:
        summ = summaries(nodes, areas)
        for area in cluster:
            for host, found in area.judge_cluster(summ).items():
                for f in found:
                    f.host = host
                if spec is not None:
                    from nccldiag.spec import policy

                    policy.apply(spec, found)
                by_host[host].findings.extend(found)
    return CheckReport(nodes=nodes, areas=[a.NAME for a in areas], started=started,
                       cluster_areas=[a.NAME for a in cluster])
