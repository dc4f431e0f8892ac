"""The held-out real cases (tests/cases-heldout), end to end through the CLI.

These cases measure how the diagnosis generalises; they are never used to write or adjust rules (see their
SOURCES.md). So the tests here hold only the hard invariants, never the category: a healthy run gets no fail/warn
diagnosis and exit 0; a failed run is never given "nothing broken", and exits 1 where a diagnosis fails. A
failed run that still breaks the invariant is listed in ``RECORDED`` with what the tool says, as a strict
xfail: a change that moves it fails the test until the entry is removed. ``scripts/bench_cases --cases
tests/cases-heldout`` prints the whole score.
"""
import json

import pytest

from tests import realcases

HELDOUT = realcases.REPO / "tests" / "cases-heldout"
CASES = realcases.cases(HELDOUT)

#: Failed runs that still get no fail/warn diagnosis, with what the tool answers.
RECORDED: dict = {}


def _marks(case):
    why = RECORDED.get(case.id)
    return [pytest.mark.xfail(reason=f"recorded: {why}", strict=True)] if why else []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES])
def test_a_held_out_case_keeps_the_hard_invariants(case):
    r = realcases.run(case)
    assert not r.error, r.error
    said = [(d.get("severity"), d.get("category"), (d.get("summary") or "")[:120]) for d in r.diagnoses]
    if case.healthy:
        assert not r.alarms and r.rc == 0, (r.rc, said)
    else:
        assert r.alarms, (r.rc, said)
        if any(d.get("severity") == "fail" for d in r.alarms):
            assert r.rc == 1, (r.rc, said)


def test_the_held_out_cases_are_in_the_shared_layout():
    assert len(CASES) >= 12, len(CASES)
    assert sum(1 for c in CASES if c.healthy) >= 1
    for c in CASES:
        meta = json.loads((c.path / "case.json").read_text(encoding="utf-8"))
        assert meta["id"] == c.id, c.id
        assert meta["source"].startswith("https://"), c.id
        for f in meta["files"]:
            assert (c.path / f).is_file(), (c.id, f)
    assert set(RECORDED) <= {c.id for c in CASES}
