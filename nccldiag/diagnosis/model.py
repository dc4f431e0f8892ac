"""A diagnosis: one verdict joined from check findings, probe outcomes, NCCL log lines and figures.

Plain data, like :class:`~nccldiag.model.findings.Finding`: rules build them,
reports render them. A diagnosis names what is broken, where (nodes, pairs),
on what evidence, how sure it is and why, the fix, the workaround and what the
workaround costs where that was measured, and the commands that would supply
evidence it lacks.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from nccldiag.diagnosis import categories
from nccldiag.model.findings import clean_text

SEVERITIES = ("fail", "warn", "info")
CONFIDENCES = ("high", "medium", "low")


@dataclass
class Evidence:
    """One piece of evidence: a check finding, an NCCL log line, a probe outcome or a measured figure.

    ``ref`` is what a reader looks up: the finding id (``pcie.acs``), the log's
    ``file:line``, the probe setting, or the figure's name.
    """

    kind: str  # finding | log | probe | figure | node
    text: str
    ref: Optional[str] = None
    host: Optional[str] = None

    def __post_init__(self) -> None:
        self.text = clean_text(self.text)

    def line(self) -> str:
        where = f"{self.host}: " if self.host else ""
        ref = f"[{self.ref}] " if self.ref and self.kind != "log" else ""
        return f"{self.kind}: {ref}{where}{self.text}"


@dataclass
class Diagnosis:
    id: str
    title: str
    severity: str  # fail | warn | info
    summary: str  # the verdict in one line
    confidence: str  # high | medium | low
    confidence_why: str
    fix: str
    nodes: List[str] = field(default_factory=list)
    pairs: List[str] = field(default_factory=list)
    evidence: List[Evidence] = field(default_factory=list)
    workaround: str = ""
    workaround_cost: Optional[str] = None  # measured: "p2p-off busbw 11.2 GB/s, 48% of expected"
    missing: List[str] = field(default_factory=list)  # commands that would supply missing evidence
    figures: Dict[str, Any] = field(default_factory=dict)
    category: str = ""  # one of nccldiag.diagnosis.categories.CATEGORIES (its cause's row's when not given)
    confirm: str = ""  # the one command that confirms this cause
    alternatives: List[str] = field(default_factory=list)  # other causes that fit, and what tells them apart
    tier: int = 0  # 0 a cause, 1 a symptom or a victim (a hang, a peer that went away), 2 unexplained
    defined_at: str = ""  # a cause a site added: the file and line that define it ("site.toml:12")

    def __post_init__(self) -> None:
        assert self.severity in SEVERITIES, self.severity
        assert self.confidence in CONFIDENCES, self.confidence
        if self.category:
            categories.check(self.category)
        self.summary = clean_text(self.summary)
        self.nodes = sorted(dict.fromkeys(n for n in self.nodes if n))

    def to_dict(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        d["confidence"] = {"level": self.confidence, "why": self.confidence_why}
        del d["confidence_why"]
        if not self.defined_at:
            del d["defined_at"]  # only a site's causes carry it
        return d


# the figure of an unexplained diagnosis that counts the lines of the failure lexicon it cites
# (nccldiag/knowledge/lexicon.toml): a run with such lines never exits 0
FAILURE_LINES = "failure_lines"


def fails_run(d: Diagnosis) -> bool:
    """Whether ``d`` makes the run's exit code 1: it fails, or it cites lines that say something failed and that no
    cause explains (a warning of that kind is no all-clear either)."""
    return d.severity == "fail" or bool(d.figures.get(FAILURE_LINES))


SEVERITY_ORDER = {"fail": 0, "warn": 1, "info": 2}
CONFIDENCE_ORDER = {"high": 0, "medium": 1, "low": 2}


def sort_key(d: Diagnosis):
    """Worst first; at equal severity causes before symptoms, then the surest."""
    return (SEVERITY_ORDER[d.severity], d.tier, CONFIDENCE_ORDER[d.confidence], d.id, d.nodes)


def finding_evidence(f, limit: int = 2) -> List[Evidence]:
    """A finding as evidence: its message, then its first evidence lines."""
    out = [Evidence("finding", f"{f.status.value}: {f.message}", f.check, f.host)]
    for line in (f.evidence or [])[:limit]:
        out.append(Evidence("finding", f"| {line}", f.check, f.host))
    return out


def log_evidence(at, text: str) -> Evidence:
    """An NCCL log line as evidence, cited ``file:line``."""
    return Evidence("log", at.cite(text), f"{at.source}:{at.lineno}", at.host)
