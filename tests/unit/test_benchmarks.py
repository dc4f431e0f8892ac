"""nccl-tests and perftest outputs read by ``nccldiag log``, on real captures."""
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from nccldiag.benchmarks import checks, nccltests
from nccldiag.model.findings import Status
from nccldiag.nccl import parser as nccllog
from nccldiag.nccl.facts import MAX_BENCH_BYTES
from tests import real

NCCL_TESTS = real.names(real.NODE / "nccl-tests")


def run_log(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "nccldiag", "log", *args], capture_output=True, text=True,
                          timeout=120, input=stdin, env={**__import__("os").environ, "NO_COLOR": "1", "COLUMNS": "200"})


@pytest.mark.parametrize("name", NCCL_TESTS)
def test_every_real_nccl_tests_table_is_read_and_passes(name):
    path = real.node("nccl-tests", name)
    facts = nccllog.parse(path.read_text(), name)
    (run,) = facts.nccl_tests
    assert run.rows and run.peak_busbw and run.verified and run.wrong_rows == []
    (f,) = checks.judge(facts.nccl_tests, [])
    assert f.status == Status.OK and f.check == "nccltests.result" and "results verified" in f.message
    r = run_log(str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    out = " ".join(r.stdout.split())  # the summary line may wrap
    assert "nccl-tests result table" in out and "benchmark output" in out


@pytest.mark.parametrize("name", NCCL_TESTS)
def test_a_real_table_whose_rows_were_broken_at_their_blanks_gives_the_same_rows(name):
    """Each real table broken at its blanks to fit 80 columns (fold -s, as a mail or an editor breaks a pasted row):
    a row's first cells on one line and the rest on the next are read as the row, with its figures, and no row is
    read twice or made up."""
    from tests import mutations

    text = real.node_text("nccl-tests", name)
    whole = nccltests.parse_nccl_tests(text)
    folded = mutations.folded(80)(text)
    assert folded != text
    got = nccltests.parse_nccl_tests(folded)
    assert [(r.size, r.busbw_oop, r.busbw_ip, r.wrong) for r in got.rows] == \
        [(r.size, r.busbw_oop, r.busbw_ip, r.wrong) for r in whole.rows]


def test_a_row_cut_short_and_a_whole_row_after_it_are_not_read_as_one():
    text = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n           8             2     float     sum      -1\n"
            "          16             4     float     sum      -1    72.42    0.00    0.00      0    72.05    0.00"
            "    0.00      0\n")
    run = nccltests.parse_nccl_tests(text)
    assert [r.size for r in run.rows] == [16]


def test_the_4_node_dgx_table_figures():
    run = nccltests.parse_nccl_tests(real.node_text("nccl-tests", "deepops-4x-dgx-a100-slurm-allreduce-table-only.txt"))
    assert len(run.rows) == 13 and run.peak_busbw == 191.56 and run.out_of_bounds == 0


def _with_wrong(text: str) -> str:
    """A real table with one row's #wrong columns changed to 3 (changed for this test)."""
    out, done = [], False
    for line in text.splitlines():
        toks = line.split()
        if not done and len(toks) >= 12 and toks[0] == "1048576":
            line = line.rsplit(None, 1)[0] + "  3"
            done = True
        out.append(line)
    assert done
    return "\n".join(out) + "\n"


def test_wrong_results_fail_with_the_sizes_named(tmp_path):
    text = _with_wrong(real.node_text("nccl-tests", "deepops-4x-dgx-a100-slurm-allreduce-table-only.txt"))
    p = tmp_path / "all_reduce.out"
    p.write_text(text)
    r = run_log(str(p), "--json", "-")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    (f,) = [f for f in doc["findings"] if f["check"] == "nccltests.result"]
    assert f["status"] == "fail" and "1 of 13 sizes returned wrong results" in f["message"]
    assert any(e.startswith("1048576 B") for e in f["evidence"])
    assert doc["facts"]["nccl_tests"][0]["rows"][0]["size"] == 1048576


def test_unverified_runs_are_not_called_verified():
    """A real table with its #wrong columns replaced by N/A, as -c 0 prints them (changed for this test)."""
    text = real.node_text("nccl-tests", "deepops-4x-dgx-a100-slurm-allreduce-table-only.txt")
    na = "\n".join(" ".join(l.split()[:7] + ["N/A"] + l.split()[8:11] + ["N/A"]) if l.strip()[:1].isdigit() else l
                   for l in text.splitlines())
    (f,) = checks.judge([nccltests.parse_nccl_tests(na)], [])
    # not verified is not checked: a healthy run with -c 0 is no warning
    assert f.status == Status.SKIP and "not verified" in f.message


def test_a_table_inside_an_nccl_log_is_read_beside_the_nccl_lines():
    """A real NCCL log and a real nccl-tests table in one job output (joined for this test)."""
    logtext = real.nccl_log("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log").read_text()
    table = real.node_text("nccl-tests", "oci-2x8-a100-40gb-allreduce-10G-single-size.txt")
    facts = nccllog.parse(logtext + table, "job.out")
    alone = nccllog.parse(logtext, "job.out")
    assert facts.nccl_lines == alone.nccl_lines and alone.nccl_tests == []
    (run,) = facts.nccl_tests
    assert run.rows[0].size == 10737418240 and run.avg_busbw == pytest.approx(220.921)


def test_real_nccl_logs_hold_no_benchmark_table():
    for name in real.names(real.nccl_log(), "*.log"):
        facts = nccllog.parse(real.nccl_log(name).read_text(), name)
        assert facts.nccl_tests == [] and facts.perftests == [], name


def test_perftest_output_gives_its_figure_and_its_warning():
    path = real.node("perftest", "deepops-cx5-roce-ib_write_bw-cpu-freq-warning.txt")
    facts = nccllog.parse(path.read_text(), path.name)
    (pt,) = facts.perftests
    assert pt.device == "mlx5_0" and pt.rows[-1]["average"] == pytest.approx(92.4)
    found = {f.check: f for f in checks.judge([], facts.perftests)}
    assert found["perftest.result"].status == Status.OK and "92.4 Gb/sec" in found["perftest.result"].message
    assert found["perftest.warning"].status == Status.WARN and "CPU Frequency is not max" in found["perftest.warning"].message
    r = run_log(str(path))
    assert r.returncode == 0 and "perftest.warning" in r.stdout


def test_log_json_with_benchmarks_matches_its_schema():
    import jsonschema

    from nccldiag.report import schema

    r = run_log(str(real.node("nccl-tests", "deepops-2x-dgx-a100-k8s-hdr-allreduce-table-only.txt")),
                str(real.node("perftest", "deepops-cx5-roce-ib_write_bw-cpu-freq-warning.txt")), "--json", "-")
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, schema.load(doc["schema"]), cls=jsonschema.Draft202012Validator)
    assert len(doc["facts"]["nccl_tests"]) == 1 and len(doc["facts"]["perftests"]) == 1


def test_benchmark_lines_are_bounded_per_file():
    """A table of 200k rows (written for this test): only the first MAX_BENCH_BYTES are kept."""
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    row = "        1024           256     float     sum      -1    40.97    0.02    0.05      0    49.81    0.02    0.04      0\n"
    facts = nccllog.parse(header + row * 200000, "big.out")
    (run,) = facts.nccl_tests
    # each kept row is at least 60 bytes: the bound holds well below the 200k rows given
    assert 0 < len(run.rows) <= MAX_BENCH_BYTES // 60 < 200000


def test_a_paste_whose_rows_were_elided_is_not_a_hang_and_one_that_stops_after_the_titles_is():
    # written for this test, in the format of https://github.com/aws/aws-parallelcluster/pull/6956 (a passing
    # p6e-GB200 run pasted with '...' where the poster cut lines, channels over P2P/MNNVL)
    titles = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong\n"
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
              "  (GB/s)\n")
    mnnvl = ("q1-st-cr1-2:24285:24367 [2] NCCL INFO Channel 00/0 : 6[2] -> 7[3] via P2P/MNNVL\n"
             "q1-st-cr1-1:27416:27502 [0] NCCL INFO Channel 31/0 : 0[0] -> 1[1] via P2P/MNNVL\n")
    for mark in ("...", "[...]", "<snip>", "\u2026"):
        facts = nccllog.parse(titles + mark + "\n" + mnnvl + mark + "\n", "pasted.txt")
        (run,) = facts.nccl_tests_no_result
        assert run.elided, mark
        (f,) = checks.judge(facts.nccl_tests, [], facts.nccl_tests_no_result)
        assert f.status == Status.SKIP and "cut" in f.message
    # the same output with nothing cut: it stopped after its titles, a warning
    facts = nccllog.parse(titles + mnnvl, "job.out")
    (run,) = facts.nccl_tests_no_result
    assert not run.elided
    (f,) = checks.judge(facts.nccl_tests, [], facts.nccl_tests_no_result)
    assert f.status == Status.WARN and "no result row" in f.message
    # an elision before the titles (a cut command line) leaves the rows' absence meaningful
    facts = nccllog.parse("...\n" + titles, "job.out")
    assert not facts.nccl_tests_no_result[0].elided


def _every_line(text):
    """parse_nccl_tests reading every line of ``text``, as it did before it searched for the lines to read."""
    saved = nccltests._read
    nccltests._read = str.splitlines
    try:
        return nccltests.parse_nccl_tests(text)
    finally:
        nccltests._read = saved


def _real_texts():
    texts = [p.read_text(errors="replace") for p in sorted((real.NODE / "nccl-tests").glob("*"))
             + sorted(real.NCCL_LOGS.glob("*.log"))]
    cases = [p for root in (real.ROOT / "cases", Path(__file__).resolve().parents[1] / "cases")
             for p in sorted(root.glob("*/*")) if p.is_file() and p.name != "case.json"]
    return texts + [p.read_text(errors="replace") for p in cases]


def test_the_lines_a_table_is_read_from_give_what_every_line_gives_on_real_outputs():
    texts = _real_texts()
    assert len(texts) > 100
    read = 0
    for text in texts:
        for t in (text, text.replace("\r\n", "\n"), "\n".join(text.splitlines()[::2])):
            got = nccltests.parse_nccl_tests(t)
            assert got == _every_line(t)
            read += got is not None and bool(got.rows)
    assert read >= 10  # the tables among them are read, not only the texts that hold none


def test_the_lines_a_table_is_read_from_give_what_every_line_gives_on_texts_made_at_random():
    rng = random.Random(7)
    pieces = ["nThread 1 nGpus 1", "# Using devices", "#  size  count type redop root time algbw busbw #wrong",
              "bytes N type", "   8   2  float  sum  -1  9.1  0.00  0.00  0  9.0  0.00  0.00  0",
              ">> 1024 256 float sum 1 2 3 0 4 5 6 0", "# Avg bus bandwidth    : 3.2", "# Out of bounds values : 0 OK",
              "# Collective test starting: all_reduce_perf", "#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] A100",
              "...", "[snip]", "\t-- snip --", "\u2026", "epoch 3 step 1 loss 2.0", "x", "", " ", "#", ">", "\r",
              "\u2028", "\x0c", "\u00a0", "\u00b2 3 float", "Rank", "Avg bus", "sizes", "nope", "U", "b"]
    for _ in range(3000):
        parts = [rng.choice(pieces) for _ in range(rng.randint(0, 14))]
        text = "".join(p + rng.choice(["\n", "\n", " ", "", "\r\n"]) for p in parts)
        assert nccltests.parse_nccl_tests(text) == _every_line(text), repr(text)


CASES = Path(__file__).resolve().parents[1] / "cases"
P2P_SLOW = CASES / "cf-gaps76a-mleng1-3x-rtx-a6000-p2p-writes-2gbs-below-staged-13gbs-amd-iommu" / \
    "posted-p2pbandwidthlatencytest.txt"
P2P_HEALTHY = [
    CASES / "cf-gaps76a-nccltests74-8x-a40-epyc-iommu-off-bidirectional-p2p-matrices-healthy" / "posted-p2p-matrices.txt",
    CASES / "cf-gaps69b-rtx6kpro-wiki-dual-turin-4x-rtx-pro-6000-2x-5090-p2p-bandwidth-matrices-healthy" /
    "posted-p2p-bandwidth-matrices.txt",
]


def test_p2p_bandwidth_latency_test_peer_writes_below_the_staged_copies_fail_and_are_no_perftest():
    """3x RTX A6000 with the AMD IOMMU translating peer traffic (stas00/ml-engineering#1): peer writes at 1.6-2.6
    GB/s against 13-22 GB/s staged through the host, on pairs the connectivity matrix gives peer access."""
    facts = nccllog.parse(P2P_SLOW.read_text(), P2P_SLOW.name)
    assert facts.perftests == []  # the banner's 'Latency Test' is no perftest title here
    (r,) = facts.p2p_bandwidth
    assert r.devices[2] == "NVIDIA RTX A6000" and r.connectivity["0->1"] == 1 and r.access["2->1"] is True
    assert r.matrices["Unidirectional P2P=Enabled (P2P Writes)"]["0->2"] == pytest.approx(1.58)
    assert r.matrices["Unidirectional P2P=Disabled"]["1->2"] == pytest.approx(22.20)
    (f,) = checks.judge([], [], p2p=facts.p2p_bandwidth)
    assert f.status == Status.FAIL and f.check == "benchmark.p2p_bandwidth"
    assert "6 GPU pair(s)" in f.message and "GPU0->GPU2 Unidirectional (P2P Writes): 1.58 GB/s" in f.message
    r = run_log(str(P2P_SLOW))
    assert r.returncode == 1 and "PCIe ACS or IOMMU breaking GPU peer traffic" in r.stdout


@pytest.mark.parametrize("path", P2P_HEALTHY, ids=lambda p: p.parent.name)
def test_p2p_bandwidth_matrices_of_working_nodes_pass(path):
    facts = nccllog.parse(path.read_text(), path.name)
    (r,) = facts.p2p_bandwidth
    assert r.matrices
    (f,) = checks.judge([], [], p2p=facts.p2p_bandwidth)
    assert f.status == Status.OK and f.check == "benchmark.p2p_bandwidth"
    res = run_log(str(path))
    assert res.returncode == 0 and "p2pBandwidthLatencyTest output" in " ".join(res.stdout.split())


def test_a_pair_without_peer_access_is_not_compared():
    """Without peer access the sample's 'P2P=Enabled' copy is staged too: its figure says nothing of a P2P path."""
    from nccldiag.benchmarks import p2pbw

    text = P2P_SLOW.read_text().replace("Device=0 CAN Access Peer Device=2", "Device=0 CANNOT Access Peer Device=2")
    text = text.replace("     0\t     1     1     1", "     0\t     1     1     0")
    r = p2pbw.parse_p2p_bandwidth(text)
    assert r is not None and r.peer((0, 2)) is False
    assert (0, 2) not in {(p.src, p.dst) for p in p2pbw.slow_pairs(r)} and len(p2pbw.slow_pairs(r)) == 5


def test_p2p_matrices_run_into_one_line_read_as_their_lines_do():
    """A page's paragraph (tests/mutations.py's 'paragraphs'): every matrix of the output on one line."""
    from nccldiag.benchmarks import p2pbw
    from tests import mutations

    text = P2P_SLOW.read_text()
    lines, joined = p2pbw.parse_p2p_bandwidth(text), p2pbw.parse_p2p_bandwidth(mutations.paragraphs(text))
    assert lines is not None and joined is not None
    assert joined.matrices == lines.matrices and joined.connectivity == lines.connectivity
    assert p2pbw.slow_pairs(joined) == p2pbw.slow_pairs(lines) and len(p2pbw.slow_pairs(lines)) == 6


def test_a_p2p_test_cut_before_its_bandwidth_matrices_is_no_perftest_and_no_verdict():
    """JUWELS' 4x V100 (ginkgo-project/ginkgo#164): banner, peer-access lines and the connectivity matrix only."""
    path = CASES / "gpu-ginkgo164-juwels-4x-v100-p2p-can-access-peer-healthy" / "posted-p2p-test.txt"
    facts = nccllog.parse(path.read_text(), path.name)
    assert facts.perftests == []
    (r,) = facts.p2p_bandwidth
    assert r.matrices == {} and r.access["3->2"] is True and r.connectivity["0->3"] == 1
    (f,) = checks.judge([], [], p2p=facts.p2p_bandwidth)
    assert f.status == Status.SKIP and "12 GPU pair(s) with peer access" in f.message
