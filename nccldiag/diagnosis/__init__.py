"""Diagnosis: one verdict from all the evidence (pure).

:func:`diagnose` runs every rule of :mod:`nccldiag.diagnosis.rules` on an
:class:`~nccldiag.diagnosis.inputs.Inputs` (check report, probe report, NCCL
log facts) and returns the diagnoses, worst and surest first. :func:`summary`
gives what a reader wants first: healthy and failing nodes, the transport
paths that worked, the top diagnoses, and the bandwidth figures against
their expectation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from nccldiag.diagnosis import measured
from nccldiag.diagnosis.inputs import Inputs, SettingView
from nccldiag.diagnosis.model import Diagnosis, Evidence, sort_key
from nccldiag.diagnosis.rules import Cause, all_rules
from nccldiag.model.findings import Status
from nccldiag.spec.model import Spec

__all__ = ["Diagnosis", "Evidence", "Inputs", "Summary", "diagnose", "summary"]


def diagnose(inputs: Inputs) -> List[Diagnosis]:
    """Every cause of the catalog that the evidence fits, worst and surest first. A cause whose diagnosis another
    explains (the catalog's ``explained_by``) is left out; a failed run that no cause explains gets the
    ``unexplained`` verdict (see :mod:`nccldiag.diagnosis.rules.unexplained`); before it, an NCCL WARN that names
    a cause no diagnosis explains becomes that cause's warning (:mod:`nccldiag.diagnosis.rules.nccl_warn`), and so
    does a launcher's or test tool's message that names one (:mod:`nccldiag.diagnosis.rules.tool_message`)."""
    from nccldiag.diagnosis.rules import killed_signal, nccl_warn, tool_message, unexplained

    causes = all_rules(site_causes(inputs.spec))
    found: List[Tuple[Diagnosis, Cause]] = []
    order: Dict[int, int] = {}  # id(diagnosis) -> the catalog order of its cause
    for i, cause in enumerate(causes):
        try:
            made = cause.diagnose(inputs)
        except Exception as exc:  # a rule's bug must not hide the other rules' verdicts
            made = [Diagnosis(f"{cause.ID}.internal", f"{cause.TITLE}: rule failed", "info",
                              f"the {cause.ID} rule could not run: {type(exc).__name__}: {exc}", "low",
                              "nccldiag's own error, not a verdict on any node", "Report this as a bug.",
                              category="unexplained")]
        for d in made:
            _defaults(d, cause)
            order[id(d)] = i
            found.append((d, cause))
    out = explained(found)
    killed_signal.after_named(out)  # a crash beside a named failure is that failure's end
    try:  # NCCL's WARNs that name a cause none of the catalog's explains
        out.extend(nccl_warn.after(inputs, out))
    except Exception as exc:  # nccldiag's own error: say so, the catalog's verdicts stay
        out.append(Diagnosis("nccl-warn.internal", "NCCL named the cause: rule failed", "info",
                             f"the nccl-warn rule could not run: {type(exc).__name__}: {exc}", "low",
                             "nccldiag's own error, not a verdict on any node", "Report this as a bug.",
                             category="unexplained"))
    try:  # the launchers' and test tools' messages that name a cause none of the above explains
        out.extend(tool_message.after(inputs, out))
    except Exception as exc:  # nccldiag's own error: say so, the verdicts above stay
        out.append(Diagnosis("tool-message.internal", "A launcher or test tool named the cause: rule failed", "info",
                             f"the tool-message rule could not run: {type(exc).__name__}: {exc}", "low",
                             "nccldiag's own error, not a verdict on any node", "Report this as a bug.",
                             category="unexplained"))
    try:  # a cause named by a warning only, in logs that say the run failed: a failure
        unexplained.run_failed(inputs, out)
    except Exception as exc:  # nccldiag's own error: say so, the verdicts above stay
        out.append(Diagnosis("run-failed.internal", "The run failed: rule failed", "info",
                             f"the run-failed reading could not run: {type(exc).__name__}: {exc}", "low",
                             "nccldiag's own error, not a verdict on any node", "Report this as a bug.",
                             category="unexplained"))
    try:
        out.extend(unexplained.fallback(inputs, out))
    except Exception as exc:  # nccldiag's own error: say so, never an all-clear in its place
        out.append(Diagnosis("unexplained.internal", "Unexplained: the verdict could not be made", "warn",
                             f"nccldiag could not judge the evidence: {type(exc).__name__}: {exc}", "low",
                             "nccldiag's own error, not a verdict on any node", "Report this as a bug.",
                             category="unexplained", tier=2))
    # worst first, causes before symptoms, surest first; at equal rank, in the catalog's order
    return sorted(out, key=lambda d: sort_key(d)[:3] + (order.get(id(d), len(causes)),) + sort_key(d)[3:])


def explained(found: Sequence[Tuple[Diagnosis, Cause]]) -> List[Diagnosis]:
    """The diagnoses no other explains: one whose cause lists, in ``explained_by``, a cause whose diagnosis fails
    or warns is left out (that cause is the one to fix). A rule's own failure (``.internal``) always stays."""
    present = {c.ID for d, c in found if d.severity in ("fail", "warn") and not d.id.endswith(".internal")}
    return [d for d, c in found
            if d.id.endswith(".internal") or not any(e in present and e != c.ID for e in c.EXPLAINED_BY)]


def site_causes(spec: Optional[Spec]) -> List[Dict[str, Any]]:
    """The causes a site added: the ``[[cause]]`` rows of its spec (and of ``--causes FILE``), validated."""
    return list(spec.causes) if spec is not None else []


def _defaults(d: Diagnosis, cause: Cause) -> None:
    """What the catalog's row declares once for all its cause's diagnoses: category, tier, the confirming
    command."""
    if not d.category:
        d.category = cause.CATEGORY
    if not d.tier:
        d.tier = cause.TIER
    if not d.confirm:
        d.confirm = cause.CONFIRM
    if cause.site:
        d.defined_at = cause.where


@dataclass
class Summary:
    healthy: List[str] = field(default_factory=list)
    warned: List[str] = field(default_factory=list)
    failing: List[str] = field(default_factory=list)
    unchecked: List[str] = field(default_factory=list)
    paths_ok: List[str] = field(default_factory=list)  # "default: P2P, SHM, NET/IB"
    paths_bad: List[str] = field(default_factory=list)
    bandwidth: Dict[str, Any] = field(default_factory=dict)  # setting -> comparison dict
    missing: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return {"healthy_nodes": self.healthy, "warned_nodes": self.warned, "failing_nodes": self.failing, "unchecked_nodes": self.unchecked,
                "working_paths": self.paths_ok, "failing_paths": self.paths_bad, "bandwidth": self.bandwidth,
                "missing_evidence": self.missing}


def _paths(sr: SettingView) -> str:
    used = list(sr.transports)
    if not used and sr.outcome.backend == "gloo" or (not used and sr.outcome.ranks):
        ifs = sorted({f"{i.interface}" for i in sr.outcome.ranks.values() if i.interface})
        used = [f"socket {', '.join(ifs)}"] if ifs else []
    return f"{sr.setting.name}: {', '.join(used) or 'no transport seen'}"


def summary(inputs: Inputs, diagnoses: List[Diagnosis]) -> Summary:
    """Nodes by health, paths by outcome, bandwidth figures; a node named by a failing diagnosis is failing."""
    s = Summary()
    named = {n for d in diagnoses if d.severity == "fail" for n in d.nodes}
    if inputs.check is not None:
        for n in inputs.check.nodes:
            if not n.reachable or n.status == Status.ERROR:
                s.unchecked.append(n.host)
            elif n.status == Status.FAIL or n.host in named:
                s.failing.append(n.host)
            elif n.status == Status.WARN:
                s.warned.append(n.host)
            else:
                s.healthy.append(n.host)
    elif inputs.probe is not None and inputs.probe.settings:
        bad = {f.host for f in inputs.probe.all_findings if f.host and f.status in (Status.FAIL, Status.ERROR)}
        for h in inputs.probe.hosts:
            (s.failing if h in bad or h in named else s.healthy).append(h)
    for sr in inputs.settings:
        (s.paths_ok if sr.status == "ok" else s.paths_bad).append(_paths(sr) if sr.status == "ok"
                                                                  else f"{sr.setting.name}: {sr.verdict}")
    if inputs.logs is not None and inputs.logs.summary is not None:
        ts = inputs.logs.summary.transports
        if ts:
            (s.paths_bad if inputs.logs.summary.failures else s.paths_ok).append(f"log: {', '.join(ts)}")
    try:
        cmps = measured.comparisons(inputs)
    except Exception as exc:  # nccldiag's own error: the figures are left out, the verdicts stay
        cmps = {}
        s.missing.append(f"(bandwidth figures left out: {type(exc).__name__}: {exc})")
    s.bandwidth = {k: v.to_dict() for k, v in cmps.items()}
    s.missing += measured.missing_commands(inputs, list(cmps.values()))
    for d in diagnoses:
        for m in d.missing:
            if m not in s.missing:
                s.missing.append(m)
    return s


def conclude(**inputs: Any) -> "tuple[List[Diagnosis], Summary]":
    """The diagnoses of ``Inputs(**inputs)`` and their summary, computed once for every view of a run."""
    joined = Inputs(**inputs)
    diags = diagnose(joined)
    return diags, summary(joined, diags)


def attach(report: Any, **inputs: Any) -> None:
    """Diagnose at the end of an engine: ``report.diagnoses`` and ``report.diagnosis_summary``, which its
    document carries and every view renders (no renderer runs the rules)."""
    report.diagnoses, report.diagnosis_summary = conclude(**inputs)
