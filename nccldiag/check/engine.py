"""Diagnosis: from raw node outputs to findings, per node and for the cluster.

This is the pure middle of ``nccldiag check``: the same function judges a live
collection and a saved bundle.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Dict, List, Mapping, Optional, Sequence

from nccldiag.check import consistency, mesh
from nccldiag.areas.base import NodeFacts
from nccldiag.model.raw import RawNode
from nccldiag.model.findings import Finding, Status, error, ok, warn, worst
from nccldiag.model.findings import exit_code as findings_exit_code
from nccldiag.transport.base import COMMAND_TIMEOUT, FIXES

# Exit codes (documented in the README).

SCHEMA = "nccldiag.check/1"


@dataclass
class NodeReport:
    host: str
    findings: List[Finding] = field(default_factory=list)
    facts: Dict[str, Any] = field(default_factory=dict)
    elapsed: float = 0.0
    reachable: bool = True

    @property
    def status(self) -> Status:
        return worst(f.status for f in self.findings)

    def area_status(self, area: str) -> Optional[Status]:
        found = [f.status for f in self.findings if f.area == area]
        return worst(found) if found else None


@dataclass
class CheckReport:
    nodes: List[NodeReport]
    areas: List[str]
    started: float = field(default_factory=time.time)
    elapsed: float = 0.0
    inventory_notes: List[str] = field(default_factory=list)
    slurm: Optional[Dict[str, Any]] = None  # nodes to drain, and what --drain / --resume-healthy did

    @property
    def findings(self) -> List[Finding]:
        return [f for n in self.nodes for f in n.findings]

    @property
    def exit_code(self) -> int:
        return exit_code(self.nodes)

    @property
    def columns(self) -> List[str]:
        cols = ["ssh"] + list(self.areas)
        if any(f.area == consistency.AREA for f in self.findings):
            cols.append(consistency.AREA)
        return cols


def exit_code(nodes: Sequence[NodeReport]) -> int:
    """1 if any check failed; else 3 if some host could not be checked; else 0."""
    return findings_exit_code((f.status for n in nodes for f in n.findings),
                              incomplete=any(not n.reachable for n in nodes))


def _transport_finding(raw: RawNode, local: bool) -> Finding:
    if raw.error:
        kind = raw.error.get("kind", "unknown")
        return error(
            "ssh",
            f"ssh.{kind}",
            raw.error.get("message", kind),
            actual=kind,
            fix=raw.error.get("fix") or FIXES.get(kind, ""),
        )
    how = "local (no SSH)" if local else ("srun (no SSH)" if raw.extra.get("transport") == "srun" else "SSH")
    notes = list(raw.extra.get("notes") or [])
    connect = raw.extra.get("connect_s")
    msg = f"{how}: collected in {raw.elapsed:.2f} s" + (f" (connect {connect:.2f} s)" if connect is not None else "")
    if raw.extra.get("timeout"):
        # cut off at its deadline: what came back is judged, but the node is not fully checked
        return error("ssh", f"ssh.{COMMAND_TIMEOUT}", f"{msg}; cut off: {raw.extra['timeout']}", evidence=notes,
                     actual=COMMAND_TIMEOUT, fix=FIXES.get(COMMAND_TIMEOUT, ""))
    if raw.truncated:
        return warn("ssh", "ssh.collect", msg + "; output ended early (truncated)", evidence=notes)
    return ok("ssh", "ssh.collect", msg, evidence=notes)


def analyze_node(raw: RawNode, areas: Sequence[ModuleType], options: Optional[Mapping[str, Any]] = None) -> NodeReport:
    """Parse and judge one node's raw outputs (pure)."""
    options = dict(options or {})
    local = raw.extra.get("transport") == "local"
    report = NodeReport(host=raw.host, elapsed=raw.elapsed)
    report.findings.append(_transport_finding(raw, local))
    if raw.error:
        report.reachable = False
        for f in report.findings:
            f.host = raw.host
        return report
    node = NodeFacts(host=raw.host, options=options)
    for area in areas:
        try:
            node.facts[area.NAME] = area.parse(raw.sections)
        except Exception as exc:  # a parser bug must not hide the other areas
            report.findings.append(
                error(area.NAME, f"{area.NAME}.parse", f"could not parse {area.NAME} outputs: {type(exc).__name__}: {exc}")
            )
            node.facts[area.NAME] = None
    for area in areas:
        if any(f.area == area.NAME and f.check.endswith(".parse") for f in report.findings):
            continue
        try:
            found = area.judge(node.facts.get(area.NAME), node)
        except Exception as exc:
            found = [error(area.NAME, f"{area.NAME}.judge", f"could not judge {area.NAME}: {type(exc).__name__}: {exc}")]
        for f in found:
            f.host = raw.host
        report.findings.extend(found)
    targets = raw.extra.get("mesh_targets")
    if targets:
        report.findings.extend(mesh.judge(raw.host, targets, mesh.parse(raw.host, raw.sections.get("ssh_mesh", ""))))
    for f in report.findings:
        f.host = raw.host
    report.facts = node.facts
    return report


def analyze(
    raws: Sequence[RawNode], areas: Sequence[ModuleType], options: Optional[Mapping[str, Any]] = None
) -> CheckReport:
    """Judge every node, then compare nodes with each other."""
    started = time.time()
    nodes = [analyze_node(r, areas, options) for r in raws]
    summaries: Dict[str, Dict[str, Optional[str]]] = {}
    for n in nodes:
        if not n.reachable:
            continue
        s: Dict[str, Optional[str]] = {}
        for area in areas:
            fn = getattr(area, "summarize", None)
            facts = n.facts.get(area.NAME)
            if fn is None or facts is None:
                continue
            try:
                for k, v in (fn(facts) or {}).items():
                    s[f"{area.NAME}.{k}"] = None if v is None else str(v)
            except Exception:
                continue
        summaries[n.host] = s
    for host, found in consistency.judge(summaries).items():
        node = next(n for n in nodes if n.host == host)
        for f in found:
            f.host = host
        node.findings.extend(found)
    return CheckReport(nodes=nodes, areas=[a.NAME for a in areas], started=started)

