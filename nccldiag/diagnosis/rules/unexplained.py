"""Unexplained failure: the evidence shows something broken or a run that did not finish, and no cause of the
catalog fits. Never "nothing broken" then: the verdict cites the first failing evidence and the command that
would tell more.

Not a rule of the registry: :func:`nccldiag.diagnosis.diagnose` calls :func:`fallback` after every rule.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence
from nccldiag.diagnosis.signs import log_failed, unfinished
from nccldiag.model.findings import SEVERITY, Finding, Status

ID = "unexplained"
TITLE = "Unexplained failure"
CATEGORY = "unexplained"
ADVICE_ID = "advice"  # warnings of a run that shows no failure (see advice_only)
ADVICE_TITLE = "Warnings to read, no failure"
TIER = 2
MORE_LOG = ("rerun the job with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV and give every rank's log to "
            "'nccldiag log'; on the job's nodes run 'nccldiag check HOSTFILE'")
MORE_CHECK = "nccldiag probe HOSTFILE  (runs the collectives on these nodes and names the failing path)"

# Warnings of the log's checks about how a run communicates, not whether it worked: TCP sockets between nodes
# (the only network of many clusters), an interface listed beside the routable one that no channel is seen to use,
# NCCL or plugin WARN lines that returned no error (a failure printed at NCCL_DEBUG=WARN has a kind of its own:
# a CUDA failure, a refused connection, a completion error).
ADVICE = ("nccl.network", "nccl.socket_if", "nccl.warn")


def advice_only(inp: Inputs) -> bool:
    """Logs alone, none showing a failure, and no warning but advice (:data:`ADVICE`): a run that did not fail is
    not a failure to name. The checks' table still shows the advice."""
    sets = inp.log_sets()
    alarms = [f for f in inp.all_findings() if f.status in (Status.FAIL, Status.WARN)]
    return (bool(sets) and inp.check is None and inp.probe is None and not any(log_failed(ls.facts) for ls in sets)
            and all(f.status == Status.WARN and f.check in ADVICE for f in alarms))


def _first_finding(inp: Inputs, diagnoses: List[Diagnosis]) -> Tuple[Optional[Finding], int]:
    """The worst fail/warn finding that no diagnosis cites (an info diagnosis may account for a warning: P2P that
    consumer GPUs do not offer is expected), and how many there are."""
    cited = {(e.ref, e.host) for d in diagnoses for e in d.evidence if e.kind == "finding"}
    # an ERROR is a part not checked (a node not reached, a command that timed out): the summary counts it as
    # not checked, and it says nothing of a cause
    # a node output pasted beside a log is evidence like a node's: a failure in it that no cause explains is named
    found = [f for f in inp.all_findings() if f.status in (Status.FAIL, Status.WARN) and (f.check, f.host) not in cited]
    found.sort(key=lambda f: -SEVERITY[f.status])
    return (found[0] if found else None), len(found)


def fallback(inp: Inputs, diagnoses: List[Diagnosis]) -> List[Diagnosis]:
    """The unexplained verdict when nothing in ``diagnoses`` is fail or warn but the evidence shows a failure."""
    if any(d.severity in ("fail", "warn") for d in diagnoses):
        return []
    first, n = _first_finding(inp, diagnoses)
    ended = unfinished(inp)
    if first is None and not ended:
        return []
    if not ended and first.status == Status.WARN and advice_only(inp):
        # no failure to name, but no all-clear either: the warnings are noted for the reader
        return [Diagnosis(ADVICE_ID, ADVICE_TITLE, "info", first.message, "low",
                          f"the log shows no failure; {n} warning(s) of its checks are advice on how the run "
                          "communicates or what NCCL printed, not a fault",
                          first.fix or MORE_LOG, nodes=[first.host] if first.host else [],
                          evidence=finding_evidence(first, 3), category=CATEGORY, tier=TIER, confirm=MORE_LOG)]
    ev: List[Evidence] = []
    if first is not None:
        ev.extend(finding_evidence(first, 3))
    ev.extend(ended[:3])
    failed = (first is not None and first.status == Status.FAIL) or bool(ended)
    if first is not None:
        what = first.message
        where = [first.host] if first.host else []
        more = first.fix or (MORE_LOG if inp.logs is not None else MORE_CHECK)
        why = (f"{n} finding(s) fail or warn and no known cause fits them" if n > 1 else
               "a finding fails or warns and no known cause fits it")
    else:
        what = ended[0].text
        where = [ended[0].host] if ended[0].host else []
        more = MORE_LOG
        why = "the evidence shows the run did not finish, and no known cause fits what it printed"
    confirm = MORE_LOG if inp.logs is not None else MORE_CHECK
    return [Diagnosis(ID, TITLE, "fail" if failed else "warn", what, "low", why,
                      f"Not recognised: read the evidence below. {more}", nodes=where, evidence=ev,
                      category=CATEGORY, tier=TIER, confirm=confirm)]
