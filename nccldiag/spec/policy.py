"""The site's ``[severity]`` over findings: each change says what it was and which spec line made it (pure).

Levels: ``fail``, ``warn``, ``info`` (status ``ok``: shown with ``-v``, never
counted against the node) and ``ignore`` (status ``skip``). Only warnings
and failures change: a check that passed stays ``ok``, and one that could
not run stays ``error`` (a policy cannot turn "not checked" into a verdict).
"""
from __future__ import annotations

from typing import Iterable

from nccldiag.model.findings import SEVERITY, Finding, Status
from nccldiag.spec.model import Spec

STATUS = {"fail": Status.FAIL, "warn": Status.WARN, "info": Status.OK, "ignore": Status.SKIP}


def apply(spec: Spec, findings: Iterable[Finding]) -> None:
    """Change the status of every warning and failure that ``spec``'s ``[severity]`` names, in place."""
    if not spec.severity:
        return
    for f in findings:
        if f.status not in (Status.WARN, Status.FAIL):
            continue
        rule = spec.severity_for(f.check)
        if rule is None:
            continue
        new = STATUS[rule.level]
        if new == f.status:
            continue
        old = f.status.value
        ref = spec.ref(rule.line)
        if rule.level == "ignore":
            note = f"ignored ({old}) by {ref}"
        else:
            how = "upgraded" if SEVERITY[new] > SEVERITY[f.status] else "downgraded"
            note = f"{rule.level}, {how} from {old} by {ref}"
        f.status = new
        f.message = f"{note}: {f.message}"
        f.evidence = list(f.evidence) + [f"{ref}: [severity] {rule.check} = {rule.level}"]
