"""The real cases, end to end through the CLI as an admin runs them.

Two sets: the issue-thread cases of ../shared/fixtures/cases (skipped where ../shared is absent) and the cases
kept in this repository under tests/cases (blogs, training logbooks, forum answers, vendor documentation),
which always run. Each case is a public source's evidence with the cause the source established (see each
folder's README). A ``log`` case goes to ``nccldiag log FILES --json -``, a ``bundle`` case to ``nccldiag check
--bundle DIR --json -``. The first fail/warn diagnosis must name the case's category; a healthy run gets no
fail/warn diagnosis and exit 0; no failed run gets "nothing broken" or exit 0. The in-repo cases the tool does
not get right yet are listed, with their outcome today, in tests/cases/gaps.py and run as strict xfails.
``scripts/bench_cases`` (``--cases tests/cases`` for the in-repo set) prints the same measure as a table.
"""
import json
import re

import pytest

from nccldiag.diagnosis import categories
from tests import real, realcases
from tests.cases.gaps import INVARIANT_BROKEN, KNOWN_GAPS

CASES = realcases.cases() if realcases.CASES.is_dir() else []
SHARED = pytest.mark.skipif(not CASES, reason=real.REASON)
IN_REPO = realcases.cases(realcases.IN_REPO)


# Cases whose posted text cannot tell their cause from a healthy run: what would, and why it is not there.
KNOWN_MISSES = {
    "net-horovod110-same-hostname-two-machines-p2p-ipc-nccl21":
        "two 'INFO 0 -> 1 via P2P/IPC' lines of NCCL 2.1, with no device, host list or error: a healthy two-GPU "
        "node prints the same; that the ranks were on two machines is only in the thread's words",
}


def _marks(case):
    why = KNOWN_MISSES.get(case.id)
    return [pytest.mark.xfail(reason=why, strict=True)] if why else []


@SHARED
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES])
def test_the_verdict_names_the_established_cause(case):
    r = realcases.run(case)
    assert not r.error, r.error
    said = [(d["severity"], d["category"], d["summary"][:120]) for d in r.diagnoses]
    for d in r.diagnoses:
        assert categories.known(d["category"]), d  # one of the cases' vocabulary, or unexplained
    if case.healthy:
        assert r.outcome == "ok", said
        assert r.rc == 0, (r.rc, said)
    else:
        assert r.outcome == "right", (case.category, said)
        if r.top["severity"] == "fail":
            assert r.rc == 1, (r.rc, said)


@SHARED
def test_a_pasted_case_on_standard_input_opens_with_the_verdict():
    import os
    import subprocess
    import sys

    case = next(c for c in CASES if c.id.startswith("gpu-torchtitan1224"))
    text = "".join((case.path / f).read_text() for f in case.meta["files"])
    r = subprocess.run([sys.executable, "-m", "nccldiag", "log", "-"], input=text, capture_output=True, text=True,
                       timeout=120, cwd=str(realcases.REPO), env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
    first = r.stdout.splitlines()[0]
    assert r.returncode == 1 and first.startswith("Verdict: FAIL Two ranks on one GPU"), r.stdout[:500]
    assert "confirm: " in r.stdout and "fix: Bind each rank to its own GPU" in r.stdout


# ---------------------------------------------------------------- the cases kept in this repository

_RESULTS = {}


def _result(case):
    """One CLI run per case for the whole module (each test below reads the same run)."""
    if case.id not in _RESULTS:
        _RESULTS[case.id] = realcases.run(case)
    return _RESULTS[case.id]


def _said(r):
    return [(d.get("severity"), d.get("category"), (d.get("summary") or "")[:120]) for d in r.diagnoses]


def _one_run(case_id):
    """The tests that read one case's run go to one worker of a spread run (pytest-xdist's ``--dist loadgroup``,
    scripts/run-tests), which runs the CLI on it once."""
    return pytest.mark.xdist_group(f"case-{case_id}")


def _gap(case, invariants):
    gap = KNOWN_GAPS.get(case.id)
    if gap is None or (invariants and gap.outcome not in INVARIANT_BROKEN and not gap.exits_0):
        return [_one_run(case.id)]
    if not invariants and gap.outcome == "right":  # named right, by a warning only: only the exit status fails
        return [_one_run(case.id)]
    return [_one_run(case.id), pytest.mark.xfail(reason=f"known gap, today {gap.outcome}: {gap.said}", strict=True)]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_gap(c, True)) for c in IN_REPO])
def test_an_in_repo_case_keeps_the_hard_invariants(case):
    r = _result(case)
    assert not r.error, r.error
    if case.healthy:
        assert not r.alarms and r.rc == 0, (r.rc, _said(r))
    else:
        assert r.alarms and r.rc != 0, (r.rc, _said(r))


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_gap(c, False)) for c in IN_REPO])
def test_an_in_repo_case_gets_its_established_cause(case):
    r = _result(case)
    assert not r.error, r.error
    if case.healthy:
        assert r.outcome == "ok", _said(r)
    else:
        assert r.outcome == "right", (case.category, _said(r))
        if r.top["severity"] == "fail":
            assert r.rc == 1, (r.rc, _said(r))


@pytest.mark.parametrize("case_id", [pytest.param(c, id=c, marks=[_one_run(c)]) for c in sorted(KNOWN_GAPS)])
def test_a_known_gap_records_the_outcome_of_today(case_id):
    case = next((c for c in IN_REPO if c.id == case_id), None)
    assert case is not None, f"tests/cases/gaps.py lists {case_id}, which has no folder under tests/cases"
    gap = KNOWN_GAPS[case_id]
    assert gap.outcome in realcases.OUTCOMES and gap.outcome != "ok", gap.outcome
    assert gap.outcome != "right" or gap.exits_0, "a case named right needs an entry only when the CLI exits 0"
    r = _result(case)
    assert r.outcome == gap.outcome, (
        f"{case_id} is now '{r.outcome}', not '{gap.outcome}': update or remove its entry in tests/cases/gaps.py",
        _said(r))


KEYS = ["id", "source", "posted", "input", "files", "environment", "category", "cause", "fix", "evidence",
        "confidence", "healthy", "tool_today"]


def _categories():
    """The category vocabulary, from the table of tests/cases/README.md."""
    text = (realcases.IN_REPO / "README.md").read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([a-z0-9_]+)` \|", text, re.M))


def test_the_in_repo_cases_are_complete_and_in_the_shared_layout():
    assert len(IN_REPO) >= 20, len(IN_REPO)
    categories = _categories()
    assert {"healthy", "gpu_lost_xid", "pcie_bar_mmio", "io_hang", "nvlink_error"} <= categories, categories
    for case in IN_REPO:
        meta = json.loads((case.path / "case.json").read_text(encoding="utf-8"))
        assert list(meta) == KEYS, (case.id, list(meta))
        assert meta["id"] == case.id and re.match(r"^(net|gpu|node|list|cf)-[a-z0-9-]+$", case.id), case.id
        assert meta["source"].startswith(("https://", "http://")), case.id  # the address as the source serves it
        assert meta["input"] in ("log", "bundle") and meta["files"], case.id
        for name in meta["files"]:
            assert (case.path / name).is_file() and (case.path / name).stat().st_size, (case.id, name)
        if meta["input"] == "bundle":
            assert (case.path / "_bundle.json").is_file(), case.id
        assert meta["category"] in categories or meta["category"].startswith("other:"), (case.id, meta["category"])
        assert meta["healthy"] is (meta["category"] == "healthy"), case.id
        assert meta["confidence"] in ("maintainer", "reporter", "likely"), case.id
        assert meta["tool_today"].startswith("exit="), case.id
        assert case.id in (realcases.IN_REPO / "README.md").read_text(encoding="utf-8"), case.id
        assert meta["source"] in (realcases.IN_REPO / "SOURCES.md").read_text(encoding="utf-8"), case.id
