"""The real cases of ../shared/fixtures/cases, end to end through the CLI as an admin runs them.

Each case is a public thread's evidence with the cause the thread established (see the folder's README). A
``log`` case goes to ``nccldiag log FILES --json -``, a ``bundle`` case to ``nccldiag check --bundle DIR --json
-``. The first fail/warn diagnosis must name the case's category; a healthy run gets no fail/warn diagnosis;
no failed run gets "nothing broken". ``scripts/bench_cases`` prints the same measure as a table.
"""
import pytest

from nccldiag.diagnosis import categories
from tests import real, realcases

CASES = realcases.cases() if realcases.CASES.is_dir() else []
pytestmark = pytest.mark.skipif(not CASES, reason=real.REASON)


# Cases whose posted text cannot tell their cause from a healthy run: what would, and why it is not there.
KNOWN_MISSES = {
    "net-horovod110-same-hostname-two-machines-p2p-ipc-nccl21":
        "two 'INFO 0 -> 1 via P2P/IPC' lines of NCCL 2.1, with no device, host list or error: a healthy two-GPU "
        "node prints the same; that the ranks were on two machines is only in the thread's words",
}


def _marks(case):
    why = KNOWN_MISSES.get(case.id)
    return [pytest.mark.xfail(reason=why, strict=True)] if why else []


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
