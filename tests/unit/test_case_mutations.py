"""The real cases pasted otherwise: the verdict must not depend on how the text was pasted.

Every failed ``log`` case of tests/cases and ../shared/fixtures/cases that the tool names right, and every
healthy one, is read again with its texts transformed as a paste damages or decorates them (tests/mutations.py:
pure functions of the real text, written for the test: a tail, no NCCL INFO lines, a launcher's prefix, host
names, addresses and paths redacted, an 80-column wrap, CRLF and a byte order mark, a markdown quote with HTML
escapes, timestamps, line numbers, list markers; terminal colours with Ray's, loguru's and rich's labels, a tqdm
bar's frames, Ray's, kubectl's, docker compose's and Open MPI's labels, a journal's host and unit, Python logging's
labels, a line number before a launcher's label and a time, a GitHub collapsed section, a chat's clock, markdown
code by indentation; a rendered page's paragraphs, their lines run together; only the failure lexicon's lines). Each is read in this process, through the same reader
``nccldiag log`` uses. A healthy case never gets a fail/warn diagnosis; a failed case is never given none; a case
named right stays right, but for the pairs of tests/cases/mutation_gaps.py, each held to its recorded outcome.
``scripts/bench_mutations`` prints the same measure as a table.
"""
import pytest

from tests import mutations
from tests.cases.mutation_gaps import FALSE_ALARMS, KNOWN, WHY

CASES = mutations.log_cases()
_BASE = {}


def _base(case):
    """The case's outcome with its texts as they are (once per case for the module)."""
    if case.id not in _BASE:
        _BASE[case.id] = mutations.outcome(case, None)[0]
    return _BASE[case.id]


def _said(alarms):
    return [(d.get("severity"), d.get("category"), (d.get("summary") or "")[:120]) for d in alarms[:3]]


@pytest.mark.timeout(1800)  # every case read again through one transformation: minutes on a busy 2-core machine
@pytest.mark.parametrize("transform", list(mutations.TRANSFORMS))
def test_a_pasted_case_keeps_its_verdict(transform):
    broken = []
    seen = set()
    for case in CASES:
        base = _base(case)
        if not case.healthy and base != "right":
            continue  # tests/unit/test_cases.py holds the cases as they are
        got, alarms = mutations.outcome(case, transform)
        key = (case.id, transform)
        seen.add(key)
        want = KNOWN.get(key, "ok" if case.healthy else "right")
        if got != want:
            broken.append((case.id, f"now '{got}', expected '{want}'", _said(alarms)))
    assert not broken, (
        f"{transform}: a pair whose outcome changed (update tests/cases/mutation_gaps.py where it was fixed; "
        "fix the reader where it broke)", broken)
    if realcases_shared():
        assert {k for k in KNOWN if k[1] == transform} <= seen, "mutation_gaps.py lists a case that is not run"


def realcases_shared() -> bool:
    from tests import realcases

    return realcases.CASES.is_dir()


def test_every_known_pair_says_why():
    for (case_id, transform), outcome in KNOWN.items():
        assert transform in mutations.TRANSFORMS and transform in WHY, (case_id, transform)
        assert outcome in ("partly", "missed", "wrong cause", "false all-clear", "false alarm"), (case_id, outcome)
        assert (outcome == "false alarm") == ((case_id, transform) in FALSE_ALARMS), (case_id, transform)


def test_the_transformations_change_the_texts_they_are_given():
    """Each transformation changes the real texts (one that does nothing tests nothing), and does what it says."""
    texts = [t for c in CASES for _, t in mutations.texts(c)]
    for name, f in mutations.TRANSFORMS.items():
        assert any(f(t) != t for t in texts), name
    longest = max(texts, key=lambda t: t.count("\n"))
    assert longest.count("\n") > 40
    assert mutations.TRANSFORMS["tail-15"](longest).count("\n") == 15
    assert mutations.TRANSFORMS["crlf-bom"](longest).startswith("\ufeff")
    assert all(len(ln) <= 80 for ln in mutations.TRANSFORMS["wrap-80"](longest).splitlines())
    assert all(len(ln) <= 80 for ln in mutations.TRANSFORMS["fold-s-80"](longest).splitlines())
    assert mutations.TRANSFORMS["fold-s-80"]("a " * 50) == "a " * 40 + "\n" + "a " * 10 + "\n"  # the blank ends the piece
    one = "x" * 9 + "\n"  # the decorations below, each on a line of its own
    assert mutations.TRANSFORMS["ansi-ray"](one) == "\x1b[2m\x1b[36m(RayTrainWorker pid=1234, ip=10.0.0.5)\x1b[0m " \
        + "x" * 9 + "\x1b[0m\n"
    assert mutations.TRANSFORMS["tqdm-cr"](one * 10).split("\n")[9].startswith("\r 20%|##")
    assert mutations.TRANSFORMS["tqdm-cr"](one * 10).count("\n") == 10  # frames share a line: none is added
    assert mutations.TRANSFORMS["prefix-compose"](one) == "trainer-1  | " + one
    assert mutations.TRANSFORMS["stack-lineno-rank"](one * 12).split("\n")[11] == " 12 | 12: [rank3]: " + "x" * 9
    assert mutations.TRANSFORMS["chat-details"](one).startswith("<details>\n<summary>")
    assert mutations.TRANSFORMS["indent-tab"](one + "\n") == "\t" + one + "\n"
