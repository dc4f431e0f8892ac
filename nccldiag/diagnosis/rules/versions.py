"""Versions differing across nodes: driver, CUDA, NCCL, torch, firmware, kernel."""
from __future__ import annotations

from collections import Counter
from typing import List

from nccldiag import rx
from nccldiag.diagnosis.inputs import Inputs, findings_hosts
from nccldiag.diagnosis.model import Diagnosis, finding_evidence, log_evidence
from nccldiag.model.findings import Status
from nccldiag.nccl import checks as nccl_checks

_VERSION_KEY = rx.compile(r"\.(driver|cuda|firmware|kernel|os|python|torch|nccl|vbios)$")
ID = "versions-differ"
TITLE = "Versions differ across nodes"
FIX = ("Install the same versions on every node (one image, one driver package, one container tag or wheel); "
       "NCCL 2.23.4 and later refuse to join ranks of different NCCL versions, older ones may hang.")


def _odd_hosts(lines) -> List[str]:
    """The hosts whose NCCL version is not the one most hosts run (all of them when there is no majority)."""
    by_host = {}
    for v in lines:
        if v.at.host:
            by_host.setdefault(v.at.host, set()).add(v.version)
    counts = Counter(ver for vs in by_host.values() for ver in vs)
    if not counts:
        return []
    (top, n), *rest = counts.most_common()
    if rest and rest[0][1] == n:
        return sorted(by_host)
    return sorted(h for h, vs in by_host.items() if vs != {top})


def diagnose(inp: Inputs) -> List[Diagnosis]:
    found = [f for f in inp.check_findings("consistency.") if _VERSION_KEY.search(f.check)]
    found += [f for f in inp.all_findings() if f.check.startswith("probe.version.") and f.status == Status.FAIL]
    # versions that differ within one run (NCCL's own version finding fails; separate runs in one file do not)
    # (the rank-0/world reading of nccl.version: each version printed by its own rank 0 is a run of its own)
    mixed = [ls for ls in inp.log_sets() if len(ls.facts.summary.versions if ls.facts.summary else []) > 1
             and nccl_checks.versions_differ(ls.facts)]
    logs = [(ls, v) for ls in mixed for v in ls.facts.versions]
    logs += [(ls, w) for ls in inp.log_sets() for w in ls.facts.warns if w.kind == "version_mismatch"]
    if not found and not logs:
        return []
    ev = [e for f in found for e in finding_evidence(f, 1)]
    for _, x in logs[:4]:
        ev.append(log_evidence(x.at, x.text))
    keys = sorted({f.check.split(".", 1)[1] for f in found})
    if logs:
        keys.append("nccl (log)")
    nodes = findings_hosts(found) + _odd_hosts([x for _, x in logs if hasattr(x, "version")])
    # a failure when a check failed on it or NCCL itself saw ranks of different versions; otherwise (a driver or
    # firmware that differs, which jobs survive) a warning, as the consistency finding says
    crit = any(f.status == Status.FAIL for f in found) or bool(logs)
    return [Diagnosis(ID, TITLE, "fail" if crit else "warn",
                      f"{', '.join(keys)} differ{'s' if len(keys) == 1 else ''}: "
                      f"{', '.join(dict.fromkeys(nodes)) or 'some ranks'} differ from the rest",
                      "high", "the versions were read on every node and compared", FIX,
                      nodes=list(dict.fromkeys(nodes)), evidence=ev)]
