"""Putting ranks' records back together: statuses, bandwidth and findings.

Runs of nccldiag's own worker are in tests/fixtures/probe-records (see its SOURCES.md).
Cases no run on this machine can produce (several hosts, a missing rank,
version skew, an unsupported operation) are built in the tests from those
captures, and each says so.
"""
import copy
import os

import pytest

from nccldiag.model.findings import Status
from nccldiag.probe import results

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "probe-records")


def load(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return results.read_records(f)


def one(records):
    (so,) = results.aggregate(records)
    return so


def by_check(so):
    return {f.check: f for f in results.findings(so)}


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(FIX) if n != "SOURCES.md"))
def test_every_fixture_reads_and_aggregates(name):
    recs = load(name)
    assert recs and all(isinstance(r["type"], str) for r in recs)
    so = one(recs)
    assert so.world_size in (2, 3, 4) and set(so.ranks) == set(range(so.world_size))
    assert results.findings(so)


def test_full_run_all_ok_with_busbw_per_size():
    so = one(load("gloo-4rank-default.jsonl"))
    assert so.status == "ok" and so.world_size == 4 and so.backend == "gloo"
    assert len(so.collectives) == 13 and all(oc.status == "ok" for oc in so.collectives.values())
    ar = so.collectives["all_reduce"]
    assert ar.ranks_ok == [0, 1, 2, 3]
    assert [p.size for p in ar.sweep] == [1024, 4096, 16384, 65536, 262144, 1048576]
    assert all(p.busbw == pytest.approx(p.algbw * 1.5, rel=1e-4) for p in ar.sweep)
    assert ar.peak_busbw == max(p.busbw for p in ar.sweep) > 0
    assert so.collectives["barrier"].sweep[0].size == 0
    fs = results.findings(so)
    assert {f.status for f in fs} == {Status.OK}
    assert "busbw" in by_check(so)["probe.all_reduce"].message
    rows = results.busbw_table(so)
    assert ("all_reduce", 1048576) in {(r[0], r[1]) for r in rows}


def test_wrong_result_names_rank_and_host():
    so = one(load("gloo-2rank-corrupt-rank1.jsonl"))
    assert so.status == "wrong"
    for name in ("all_reduce", "all_gather", "sendrecv"):
        oc = so.collectives[name]
        assert oc.status == "wrong" and oc.ranks_wrong == [1] and oc.wrong_by_rank[1] > 0
    assert so.collectives["reduce"].status == "ok"
    f = by_check(so)["probe.all_reduce"]
    assert f.status == Status.FAIL and f.host == "vm"
    assert "rank 1 (vm)" in f.message and "rank 0" not in f.message
    assert f.actual == {"ranks_wrong": [1], "wrong": 12}  # 4 corrupted elements at each of 3 sizes
    assert "element 0 = 2.0 (expected 1.0)" in f.evidence[0]  # 0+1 = 1, plus the corruption


def test_hang_names_the_stalled_rank_and_the_collective():
    so = one(load("gloo-3rank-stall-rank2-all_gather.jsonl"))
    assert so.status == "hang"
    oc = so.collectives["all_gather"]
    assert oc.status == "hang" and oc.ranks_hung == [2] and oc.ranks_timeout == [0, 1]
    assert oc.hung_at[2]["phase"] == "check"
    assert [so.collectives[n].status for n in ("all_reduce", "broadcast", "reduce")] == ["ok"] * 3
    assert so.collectives["gather"].status == "not-run"
    f = by_check(so)["probe.all_gather"]
    assert f.status == Status.FAIL
    assert f.message.startswith("[default] all_gather: rank 2 (vm) never completed it (check")
    assert "ranks 0,1 (vm) timed out waiting" in f.message
    assert by_check(so)["probe.gather"].status == Status.SKIP
    assert not so.died  # the stalled rank is stuck, not merely gone


def test_mpirun_tag_output_prefixes_and_mpi_sanity():
    recs = load("mpirun-tag-output-2rank-gloo.txt")
    assert recs[0]["type"] == "progress" and recs[0]["collective"] == "mpi_allreduce"
    so = one(recs)
    assert so.mpi is not None and so.mpi.status == "ok" and so.mpi.ranks_ok == [0, 1]
    assert list(so.collectives) == ["all_reduce", "all_to_all", "barrier"]  # the MPI check is apart
    assert by_check(so)["probe.mpi"].status == Status.OK
    assert so.status == "ok"


def test_partial_last_line_is_tolerated():
    # constructed from the captured full run: its last line cut in half, as a killed rank leaves it
    with open(os.path.join(FIX, "gloo-4rank-default.jsonl"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    last = results.parse_line(lines[-1])
    cut = lines[:-1] + [lines[-1][: len(lines[-1]) // 2], "", "torchrun noise: not a record"]
    recs = results.read_records(cut)
    assert len(recs) == len(lines) - 1
    so = one(recs)
    # that rank's end record is lost, so it is reported as stopping without one
    assert so.died == [last["rank"]] and so.status == "incomplete"
    assert by_check(so)["probe.ranks"].status == Status.FAIL


def test_missing_rank_is_reported():
    # constructed: the captured 4-rank run with every record of rank 3 removed
    recs = [r for r in load("gloo-4rank-default.jsonl") if r.get("rank") != 3]
    so = one(recs)
    assert so.missing_ranks == [3]
    assert so.collectives["all_reduce"].status == "incomplete"
    assert so.collectives["all_reduce"].ranks_missing == [3]
    f = by_check(so)["probe.ranks"]
    assert f.status == Status.FAIL and "3" in f.message and f.expected == 4


def _on_two_hosts(recs):
    # constructed: ranks 0,1 placed on node1 and ranks 2,3 on node2 (this machine has one host)
    out = copy.deepcopy(recs)
    for r in out:
        if isinstance(r.get("rank"), int) and r["rank"] >= 0:
            r["host"] = "node1" if r["rank"] < 2 else "node2"
    return out


def test_wrong_ranks_grouped_by_host():
    recs = _on_two_hosts(load("gloo-4rank-default.jsonl"))
    for r in recs:  # constructed: ranks 2 and 3 report wrong all_reduce data
        if r.get("collective") == "all_reduce" and r.get("phase") == "check":
            r["ranks_wrong"] = [2, 3]
            if r["rank"] >= 2:
                r.update(status="wrong", wrong=5, first_wrong={"index": 7, "value": 0.0, "expected": 27.0})
    so = one(recs)
    f = by_check(so)["probe.all_reduce"]
    assert f.status == Status.FAIL and f.host == "node2"
    assert "ranks 2,3 (node2)" in f.message
    assert by_check(so)["probe.broadcast"].status == Status.OK


def test_hang_on_every_rank_blames_no_single_host():
    # constructed: every rank's records end with progress in all_to_all (all killed at the deadline)
    recs = _on_two_hosts(load("gloo-4rank-default.jsonl"))
    cut = []
    seen = set()
    for r in recs:
        if r.get("rank") in seen:
            continue
        cut.append(r)
        if r["type"] == "progress" and r.get("collective") == "all_to_all" and r.get("phase") == "sweep":
            seen.add(r["rank"])
    so = one(cut)
    oc = so.collectives["all_to_all"]
    assert oc.status == "hang" and oc.ranks_hung == [0, 1, 2, 3]
    f = by_check(so)["probe.all_to_all"]
    assert f.host is None and "every rank stuck" in f.fix
    assert so.collectives["all_to_all_single"].status == "not-run"


def test_stuck_in_init_and_setup_errors():
    # constructed: rank 1 never gets past process-group init; a rank without torch reports an import error
    keep, cut = [], False
    for r in load("gloo-2rank-corrupt-rank1.jsonl"):
        if r.get("rank") == 1:
            if cut:
                continue
            cut = r.get("phase") == "init"
        keep.append(r)
    keep.append({"type": "error", "rank": -1, "host": "node9", "phase": "import",
                 "message": "torch is not importable: No module named 'torch'"})
    so = one(keep)
    assert so.stuck_in_init == [1]
    fs = by_check(so)
    assert fs["probe.init"].status == Status.FAIL and "rank 1 (vm)" in fs["probe.init"].message
    assert fs["probe.import"].status == Status.ERROR and fs["probe.import"].host == "node9"


def test_unsupported_is_not_a_failure():
    # constructed: the record an older torch's gloo gives for reduce_scatter (RuntimeError
    # "ProcessGroupGloo does not support reduce_scatter"), on both ranks
    recs = [r for r in load("gloo-2rank-corrupt-rank1.jsonl") if r.get("collective") != "reduce"]
    for rank in (0, 1):
        recs.append({"type": "result", "rank": rank, "host": "vm", "collective": "reduce", "phase": "check",
                     "status": "unsupported", "error": "RuntimeError: ProcessGroupGloo does not support reduce"})
    so = one(recs)
    assert so.collectives["reduce"].status == "unsupported"
    f = by_check(so)["probe.reduce"]
    assert f.status == Status.SKIP and "not supported" in f.message


def test_version_mismatch_names_the_odd_host():
    # constructed: rank 3 (node2) reports another torch than the others
    recs = _on_two_hosts(load("gloo-4rank-default.jsonl"))
    for r in recs:
        if r["type"] == "start" and r["rank"] == 3:
            r["versions"] = dict(r["versions"], torch="2.4.1+cu121")
    so = one(recs)
    f = by_check(so)["probe.version.torch"]
    assert f.status == Status.FAIL and f.host == "node2" and f.expected == "2.13.0+cpu"
    assert "2.4.1+cu121 on rank 3 (node2)" in f.message


def test_settings_are_kept_apart():
    # constructed: two captured runs tagged with the setting the runner adds to each record
    a = [dict(r, setting="default") for r in load("gloo-4rank-default.jsonl")]
    b = [dict(r, setting="p2p-off") for r in load("gloo-3rank-stall-rank2-all_gather.jsonl")]
    outs = results.aggregate(a + b)
    assert [(o.setting, o.status, o.world_size) for o in outs] == [("default", "ok", 4), ("p2p-off", "hang", 3)]
    fs = results.all_findings(outs)
    assert any(f.message.startswith("[p2p-off] all_gather") and f.status == Status.FAIL for f in fs)
    assert results.status_of(fs) == Status.FAIL
