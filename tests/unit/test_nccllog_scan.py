"""The prefilter (nccldiag.nccl.scan) gives the facts of reading every line, on every real log and case.

Each comparison runs the whole ``nccldiag log`` pipeline on both paths: facts, findings, diagnoses, as JSON.
"""
import io
import json

import pytest

from nccldiag import diagnosis
from nccldiag.nccl import checks as nccl_checks
from nccldiag.nccl import log as nccllog
from nccldiag.nccl import scan
from nccldiag.report import log_report
from tests import real, realcases


def _sets():
    if not real.AVAILABLE:
        return [pytest.param([], marks=pytest.mark.skip(reason=real.REASON))]
    out = [pytest.param([p], id=p.name) for p in sorted(real.nccl_log().glob("*.log"))]
    for c in realcases.cases():
        if not c.bundle:
            out.append(pytest.param([c.path / f for f in c.meta["files"]], id=c.id))
    return out


def report(facts) -> str:
    findings = nccl_checks.judge(facts)
    d = log_report.to_json(facts, findings, diagnosis.conclude(logs=facts, log_findings=list(findings)), True)
    d.pop("generated_at", None)
    return json.dumps(d, sort_keys=True, default=str)


def plain(named) -> str:
    return report(nccllog.parse_streams([(n, io.BytesIO(b)) for n, b in named]))


def fast(named, **kw) -> str:
    return report(scan.parse_streams([(n, io.BytesIO(b)) for n, b in named], **kw))


@pytest.mark.parametrize("files", _sets())
@pytest.mark.parametrize("block", [64, 4096, scan.BLOCK])
def test_every_real_log_and_case_gives_the_same_report(files, block):
    named = [(str(p), p.read_bytes()) for p in files]
    assert fast(named, block=block) == plain(named)


def _all_real() -> bytes:
    real.require()
    parts = [p.read_bytes() for p in sorted(real.nccl_log().glob("*.log"))]
    for c in realcases.cases():
        if not c.bundle:
            parts += [(c.path / f).read_bytes() for f in c.meta["files"]]
    return b"\n".join(parts)


# Written for this test: a training loop's progress lines, which hold no word the parser reads.
FILLER = b"".join(b"epoch 3 step %d/500 loss 2.%04d lr 0.0003 grad_norm 1.%03d\n" % (i, i * 7, i % 997)
                  for i in range(300))


def test_real_lines_among_lines_it_skips():
    # The real logs and cases, each line separated by lines the prefilter skips, then as CRLF, then without a
    # last newline, then whole between skipped lines in small blocks.
    data = _all_real()
    gaps = FILLER.split(b"\n")
    # three skipped lines or more after each real line: past its context, and too few NCCL lines for a block to be
    # handed over whole; without the lines that start a benchmark output or RAS report (after those, every line is
    # read up to their bound: test_a_benchmark_table_is_read_whole_between_skipped_lines)
    kept = [line for line in data.split(b"\n") if not nccllog._BENCH_START.search(line.decode("utf-8", "replace"))
            and not nccllog._RAS_START.search(nccllog.clean(line.decode("utf-8", "replace")))]
    spread = b"".join(line + b"\n" + b"\n".join(gaps[:3 + i % 3]) + b"\n" for i, line in enumerate(kept))
    for variant, kw in ((spread, {}), (spread.replace(b"\n", b"\r\n"), {}), (spread.rstrip(b"\n"), {}),
                        (FILLER + data + FILLER, {"block": 1000})):
        assert fast([("job.log", variant)], **kw) == plain([("job.log", variant)])
    s = scan.Scan(io.BytesIO(spread), lambda: False)
    read = sum(1 for _ in s)
    lines = len(spread.split(b"\n")) - spread.endswith(b"\n")
    assert s.skipped > 0 and read + s.skipped == s.total == lines == nccllog.parse_streams([("j", io.BytesIO(spread))]).lines


def test_overlong_lines_are_cut_as_when_read_line_by_line():
    data = _all_real()
    long = data.replace(b"\n", b" " * 300 + b"\n", 50)  # written for this test: lines past the cut
    named = [("long.log", FILLER + long + b"x" * 5000)]
    p = nccllog._Parser()
    p.feed_lines(nccllog.read_lines(io.BytesIO(named[0][1]), max_line=200), "long.log")
    f = scan.parse_streams([("long.log", io.BytesIO(named[0][1]))], block=256, max_line=200)
    assert report(f) == report(p.finish())


def test_a_line_waiting_for_the_next_one_gets_it_across_blank_and_skipped_lines():
    # Written for this test, in the words of PyTorch's 'Last error:' block and nccl-tests' CUDA failure: the
    # message is on a later line that holds no word of its own the prefilter looks for.
    text = (FILLER + b"Last error:\n\n\n" + b"peer 3 went away during setup\n" + FILLER +
            b"node-a: Test CUDA failure common.cu:891\n" + b"the device went away\n" + FILLER)
    assert fast([("t.log", text)]) == plain([("t.log", text)])
    f = scan.parse_streams([("t.log", io.BytesIO(text))])
    assert any("peer 3 went away" in w.message for w in f.warns)
    assert any("device went away" in a.message for a in f.app_errors)


def test_a_benchmark_table_is_read_whole_between_skipped_lines():
    real.require()
    tests_log = real.nccl_log("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log").read_bytes()
    text = FILLER + tests_log + FILLER + tests_log
    assert fast([("t.log", text)], block=512) == plain([("t.log", text)])


def test_every_real_line_that_says_something_on_its_own_is_a_candidate():
    # The prefilter's words are the parser's: a line the parser takes a fact or an error from is never skipped.
    for line in _all_real().split(b"\n"):
        f = nccllog.parse(line.decode("utf-8", "replace"))
        said = f.nccl_lines or f.errors or f.kernel or f.nccl_tests or f.nccl_tests_no_result or f.perftests or f.ras
        if said:
            assert scan.candidate(line), line


# --------------------------------------------------------------------------- files read in parallel


def _all_real_paths():
    real.require()
    paths = [str(p) for p in sorted(real.nccl_log().glob("*.log"))]
    for c in realcases.cases():
        if not c.bundle:
            paths += [str(c.path / f) for f in c.meta["files"]]
    return paths


@pytest.mark.parametrize("keep", [1, 5, nccllog.KEEP])
def test_files_read_in_parallel_merge_into_the_facts_of_reading_them_in_turn(keep):
    # Every real log and case as the files of one job; a small bound makes each list overflow across files.
    paths = _all_real_paths()
    merged = scan.parse_paths(paths, keep=keep, workers=2)
    in_turn = nccllog.parse_streams([(p, open(p, "rb")) for p in paths], keep=keep)
    assert report(merged) == report(in_turn)
    assert merged.sources == paths


def test_a_path_given_twice_is_read_in_turn():
    paths = _all_real_paths()[:3]
    twice = paths + paths[:1]
    assert report(scan.parse_paths(twice, workers=2)) == \
        report(nccllog.parse_streams([(p, open(p, "rb")) for p in twice]))


def test_a_file_that_cannot_be_read_is_named(tmp_path):
    paths = _all_real_paths()[:2] + [str(tmp_path / "gone.log")]
    with pytest.raises(scan.ReadError) as e:
        scan.parse_paths(paths, workers=2)
    assert "gone.log" in str(e.value)
