"""What the rules read: one joined view of the evidence at hand (pure).

Any part may be absent: ``nccldiag check`` has no probe, ``nccldiag log`` has
only logs. Rules ask this view, never the reports directly, so that each rule
can be tested on evidence assembled for it. What they read of each report is
named by a Protocol (:class:`CheckView`, :class:`ProbeView`,
:class:`SettingView`, :class:`LogView`): the check engine's ``CheckReport``,
the probe's ``ProbeReport`` and the NCCL log reader's ``NcclLogFacts`` have
those attributes, and so may anything a test assembles.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple

from nccldiag.model.findings import SEVERITY, Finding, Status
from nccldiag.spec.model import Spec

BAD = ("hang", "error", "wrong", "incomplete")

# the node areas whose facts the rules read (through :meth:`Inputs.facts` and the expected bandwidth): what a
# check keeps of each node's facts for its diagnoses once the node's part of the report is written
NODE_AREAS = ("gpu", "ib", "system", "topology")


# ---- the views: what the rules read of each report -------------------------------------------------------------


class LogView(Protocol):
    """The facts of NCCL logs (:class:`nccldiag.nccl.facts.NcclLogFacts`): the records the rules read."""

    nccl_lines: int
    warns: Sequence[Any]  # Warn: message, text, at, kind, file, failure, origin, chain
    orphan_chains: Sequence[Any]  # call chains whose WARN is not in the logs
    app_errors: Sequence[Any]  # an application's NCCL error lines
    watchdogs: Sequence[Any]  # PyTorch watchdog timeouts
    errors: Sequence[Any]  # error lines besides NCCL's own
    kernel: Sequence[Any]  # kernel lines
    notes: Sequence[Any]  # NCCL INFO lines of note (kind, text, at)
    versions: Sequence[Any]
    networks: Sequence[Any]
    nets: Sequence[Any]  # 'NET/IB : Using' and 'NET/Socket : Using' lines, with their devices
    bootstrap: Sequence[Any]
    gdr: Sequence[Any]
    plugins: Sequence[Any]
    comms: Sequence[Any]
    inits: Sequence[Any]
    procs: Sequence[Any]
    channels: Sequence[Any]
    connected: Sequence[Any]
    nvls: Sequence[Any]
    rings: Sequence[Any]
    summary: Any  # nccl.facts.Summary, or None before the facts are summarised
    nccl_tests: Sequence[Any]  # benchmarks.nccltests.NcclTestsRun
    nccl_tests_no_result: Sequence[Any]
    ras: Sequence[Any]  # nccl.ras.RasReport

    def env_values(self) -> Dict[str, List[str]]: ...


class SettingView(Protocol):
    """One probe setting's result (:class:`nccldiag.probe.analysis.SettingReport`)."""

    setting: Any  # probe.plan.Setting: name, env
    outcome: Any  # probe.results.SettingOutcome: collectives, ranks, mpi, stuck_in_init, died, host_of()
    findings: Sequence[Finding]
    transports: Sequence[str]
    log_facts: Optional[LogView]
    unfinished: Optional[str]  # progress.HANG, STALLED or SLOW for a setting the deadline cut
    calls: int

    @property
    def status(self) -> str: ...

    @property
    def verdict(self) -> str: ...


class ProbeView(Protocol):
    """A probe's report (:class:`nccldiag.probe.analysis.ProbeReport`)."""

    backend: str
    hosts: Sequence[str]
    settings: Sequence[SettingView]
    spec: Any  # the site spec (nccldiag.spec.model.Spec), or None
    ifnames: Dict[str, Optional[str]]
    iface_speeds: Dict[str, Optional[int]]
    route_ifnames: Dict[str, Optional[str]]
    node_facts: Mapping[str, Mapping[str, Any]]

    @property
    def all_findings(self) -> List[Finding]: ...


class NodeView(Protocol):
    """One node of a check (:class:`nccldiag.check.engine.NodeReport`)."""

    host: str
    reachable: bool
    status: Status
    facts: Mapping[str, Any]


class CheckView(Protocol):
    """A check's report (:class:`nccldiag.check.engine.CheckReport`)."""

    nodes: Sequence[NodeView]
    findings: Sequence[Finding]


@dataclass
class LogSet:
    """The NCCL logs of one run: a probe setting (with the environment it set) or the files given to ``log``."""

    label: str
    facts: LogView
    env: Dict[str, str] = field(default_factory=dict)


@dataclass
class Inputs:
    check: Optional[CheckView] = None
    probe: Optional[ProbeView] = None
    logs: Optional[LogView] = None  # the facts of the files given to 'nccldiag log'
    log_findings: List[Finding] = field(default_factory=list)
    node_facts: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # host -> area -> facts
    iface_speeds: Dict[str, Optional[int]] = field(default_factory=dict)  # host -> Mb/s of the socket interface
    ifnames: Dict[str, Optional[str]] = field(default_factory=dict)  # host -> the probe's socket interface
    route_ifnames: Dict[str, Optional[str]] = field(default_factory=dict)  # host -> the interface routing to rank 0
    spec: Optional[Spec] = None  # the site spec: its [bandwidth], busbw_share and [[cause]] rows, where given
    pasted: Any = None  # nccldiag.paste.Pasted: node outputs and process ends pasted beside a log
    # the lines of the files given to 'nccldiag log' that a site's [[cause]] patterns matched (signature.lines_in)
    site_lines: List[Any] = field(default_factory=list)
    # the lines that say something failed (nccldiag.knowledge.lexicon.Line): of the files given to 'nccldiag log',
    # and of each checked node's outputs (its NodeReport's failure_lines), gathered here
    failure_lines: List[Any] = field(default_factory=list)
    clue_index: Any = field(default=None, init=False, repr=False, compare=False)  # clues.find's, made once

    def __post_init__(self) -> None:
        if self.check is not None:
            for n in self.check.nodes:
                if n.facts:
                    self.node_facts.setdefault(n.host, dict(n.facts))
                self.failure_lines.extend(getattr(n, "failure_lines", None) or [])
        if self.probe is not None:
            if self.spec is None:
                self.spec = self.probe.spec
            self.iface_speeds = dict(self.probe.iface_speeds or self.iface_speeds)
            self.ifnames = dict(self.probe.ifnames or self.ifnames)
            self.route_ifnames = dict(self.probe.route_ifnames or self.route_ifnames)
            for host, facts in (self.probe.node_facts or {}).items():
                self.node_facts.setdefault(host, dict(facts))

    # ---- check

    def check_findings(self, prefix: str, min_status: Status = Status.WARN) -> List[Finding]:
        """Check findings whose id starts with ``prefix``, at ``min_status`` or worse: those of the check report,
        and those of node outputs pasted beside a log (judged by the same checks)."""
        found = list(self.check.findings) if self.check is not None else []
        if self.pasted is not None:
            found += self.pasted.findings
        return [f for f in found if f.check.startswith(prefix) and SEVERITY[f.status] >= SEVERITY[min_status]]

    def checked(self, prefix: str) -> List[str]:
        """Hosts where a check starting with ``prefix`` was judged (ok or not): the question was asked there."""
        if self.check is None:
            return []
        return sorted({f.host for f in self.check.findings
                       if f.check.startswith(prefix) and f.status != Status.SKIP and f.host})

    def facts(self, host: str, area: str) -> Any:
        return (self.node_facts.get(host) or {}).get(area)

    @property
    def hosts(self) -> List[str]:
        if self.probe is not None and self.probe.hosts:
            return list(self.probe.hosts)
        if self.check is not None:
            return [n.host for n in self.check.nodes]
        return list(self.node_facts)

    # ---- probe

    @property
    def settings(self) -> List[SettingView]:
        return list(self.probe.settings) if self.probe is not None else []

    def setting(self, name: str) -> Optional[SettingView]:
        return next((s for s in self.settings if s.setting.name == name), None)

    # ---- logs

    def log_sets(self) -> List[LogSet]:
        out: List[LogSet] = []
        for s in self.settings:
            if s.log_facts is not None:
                out.append(LogSet(s.setting.name, s.log_facts, dict(s.setting.env)))
        if self.logs is not None:
            out.append(LogSet("log", self.logs, {}))
        return out

    # ---- everything

    def all_findings(self) -> List[Finding]:
        out: List[Finding] = []
        if self.check is not None:
            out.extend(self.check.findings)
        if self.probe is not None:
            out.extend(self.probe.all_findings)
        out.extend(self.log_findings)
        if self.pasted is not None:
            out.extend(self.pasted.findings)
        return out


def setting_hosts(sr: SettingView, ranks: Iterable[int]) -> List[str]:
    """The hosts of ``ranks`` in one probe setting."""
    return sorted({h for h in (sr.outcome.host_of(r) for r in ranks) if h})


def bad_ranks(sr: SettingView) -> Tuple[List[int], List[str]]:
    """Ranks of a setting that hung, failed, got wrong results or went missing, and the collectives."""
    ranks: set = set()
    colls: List[str] = []
    so = sr.outcome
    for oc in list(so.collectives.values()) + ([so.mpi] if so.mpi is not None else []):
        if oc.status in BAD:
            ranks.update(oc.ranks_hung or [])
            ranks.update(oc.ranks_wrong or [])
            ranks.update(oc.ranks_missing or [])
            ranks.update(oc.ranks_error or {})
            colls.append(oc.collective)
    ranks.update(so.stuck_in_init or [])
    ranks.update(so.died or [])
    return sorted(ranks), colls


def peak(sr: SettingView, collective: Optional[str] = None) -> Optional[Tuple[str, float, int]]:
    """``(collective, busbw GB/s, size)`` of the best sweep point of a setting (or of one collective)."""
    best = None
    for oc in sr.outcome.collectives.values():
        if collective and oc.collective != collective:
            continue
        if oc.status != "ok":
            continue
        for p in oc.sweep:
            if p.size > 0 and (best is None or p.busbw > best[1]):
                best = (oc.collective, p.busbw, p.size)
    return best


def findings_hosts(found: Sequence[Finding]) -> List[str]:
    return sorted({f.host for f in found if f.host})


def first(mapping: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k in keys:
        if mapping.get(k) is not None:
            return mapping[k]
    return None
