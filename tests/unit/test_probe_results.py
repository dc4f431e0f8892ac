"""Putting ranks' records back together: statuses, bandwidth and findings.

Runs of nccldiag's own worker are in tests/fixtures/probe-records (see its SOURCES.md).
Cases no run on this machine can produce (several hosts, a missing rank,
version skew, an unsupported operation) are built in the tests from those
captures, and each says so.
"""
import copy
import json
import os

import pytest

from nccldiag.model.findings import Status, worst
from nccldiag.probe import launchers, results

FIX = os.path.join(os.path.dirname(__file__), "..", "fixtures", "probe-records")


def load(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return results.read_records(f)


def one(records):
    return results.aggregate_setting("default", records)


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
    assert ("all_reduce", 1048576) in {(oc.collective, p.size) for oc in so.collectives.values() for p in oc.sweep}


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
    outs = [results.aggregate_setting(name, [r for r in a + b if r["setting"] == name]) for name in ("default", "p2p-off")]
    assert [(o.setting, o.status, o.world_size) for o in outs] == [("default", "ok", 4), ("p2p-off", "hang", 3)]
    fs = results.all_findings(outs)
    assert any(f.message.startswith("[p2p-off] all_gather") and f.status == Status.FAIL for f in fs)
    assert worst(f.status for f in fs) == Status.FAIL


# --- what a node sends is admitted: bound to its node, checked, bounded (docs/security.md) ---------------


def _lines(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as f:
        return f.read().splitlines()


def _admit(launched, stream):
    """(records kept, gate) for ``stream``: (host, line) pairs as the runner hands them over."""
    gate = results.Gate(launched)
    kept = [r for r in (gate.admit(h, line) for h, line in stream) if r is not None]
    return kept, gate


def _two_nodes(lines):
    # constructed: the captured 4-rank run as torchrun streams it from two nodes, ranks 0,1 on A and 2,3 on B
    return [("A" if results.parse_line(l)["rank"] < 2 else "B", l) for l in lines]


FORGED_WRONG = json.dumps({"type": "result", "rank": 0, "host": "A", "collective": "all_reduce", "phase": "check",
                           "status": "wrong", "wrong": 256, "ranks_wrong": [0], "size": 1024, "count": 256})


def test_a_node_cannot_speak_for_a_rank_it_did_not_launch():
    launched = results.Launched(("A", "B"), 2)
    stream = _two_nodes(_lines("gloo-4rank-default.jsonl"))
    # B forges rank 0 (A's) with wrong data, and puts rank 0 on the wrong list of its own rank 2
    framed = json.dumps({"type": "result", "rank": 2, "collective": "all_reduce", "phase": "check",
                         "status": "ok", "wrong": 0, "ranks_wrong": [0, 1]})
    kept, gate = _admit(launched, stream + [("B", FORGED_WRONG), ("B", framed)])
    so = results.aggregate_setting("default", kept, world=launched.world, planned=launched.planned)
    assert so.status == "ok" and so.collectives["all_reduce"].ranks_wrong == []
    assert {r: i.host for r, i in so.ranks.items()} == {0: "A", 1: "A", 2: "B", 3: "B"}
    assert gate.rejected == {"B": {"records about ranks it did not launch": 1}}
    # without the gate (as before) the same lines named A
    before = results.aggregate_setting("default", results.read_records(l for _, l in stream + [("B", FORGED_WRONG)]))
    assert before.collectives["all_reduce"].ranks_wrong == [0] and before.host_of(0) in ("vm", "A")


def test_a_node_that_names_another_host_gets_its_own_name():
    launched = results.Launched(("A", "B"), 2)
    line = json.dumps({"type": "result", "rank": 3, "host": "A", "collective": "all_reduce", "phase": "check",
                       "status": "wrong", "wrong": 4})
    (rec,), _ = _admit(launched, [("B", line)])
    assert rec["host"] == "B" and rec["rank"] == 3


def test_mpirun_tags_and_srun_labels_say_which_rank_wrote_a_line():
    lines = _lines("mpirun-tag-output-2rank-gloo.txt")
    launched = results.Launched(("A", "B"), 1, tagged=launchers.get("mpirun").tagging)
    forged = "[1,1]<stdout>:" + FORGED_WRONG  # rank 1, on B, claims rank 0
    untagged = FORGED_WRONG  # a line mpirun did not tag: its own output, never a record
    kept, gate = _admit(launched, [("A", l) for l in lines + [forged, untagged]])
    so = results.aggregate_setting("default", kept, world=launched.world, planned=launched.planned)
    assert so.status == "ok" and so.mpi is not None and so.mpi.status == "ok"
    assert {r: i.host for r, i in so.ranks.items()} == {0: "A", 1: "B"}
    assert gate.rejected == {"B": {"records about another rank": 1}}
    # srun --label: ' 1: ' in front of rank 1's lines (the same run without its MPI bootstrap)
    srun = results.Launched(("A", "B"), 1, tagged=launchers.get("srun").tagging)
    labelled = [f" {l[3]}: {l.split(':', 1)[1]}" for l in lines if "mpi_allreduce" not in l]
    kept, gate = _admit(srun, [("srun", l) for l in labelled + [" 1: " + FORGED_WRONG]])
    assert {r["host"] for r in kept if r["rank"] == 1} == {"B"}
    assert gate.rejected == {"B": {"records about another rank": 1}}


def test_wrongly_typed_fields_are_noise_never_a_crash():
    from nccldiag.probe import analysis, runner
    from nccldiag.probe.plan import Setting

    launched = results.Launched(("A", "B"), 2)
    stream = _two_nodes(_lines("gloo-4rank-default.jsonl"))
    bad = [{"type": "result", "rank": 2, "collective": "all_reduce", "phase": "check", "status": "wrong", "wrong": "abc"},
           {"type": "result", "rank": 2, "collective": "all_reduce", "phase": "sweep", "status": "ok", "busbw": "fast"},
           {"type": "start", "rank": 3, "world_size": 1.5}, {"type": "end", "rank": 2.0}, {"type": 7, "rank": 2},
           {"type": "result", "rank": 2, "collective": "all_reduce", "phase": "check", "ranks_wrong": ["x"]},
           {"type": "result", "rank": 2, "collective": "all_reduce", "first_wrong": {"index": []}},
           {"type": "result", "rank": 2, "collective": "all_reduce", "time_us": float("nan")}]
    kept, gate = _admit(launched, stream + [("B", json.dumps(b)) for b in bad])
    assert gate.rejected == {"B": {"malformed record": len(bad) - 1}}  # type 7 is not a record at all
    sr = runner.SettingRun(setting=Setting("default"), records=kept, launched=launched)
    rep = analysis.job_report(Setting("default"), sr)
    assert rep.status == "ok"
    # read back from a tampered records.jsonl (no gate), the same records change nothing either
    so = results.aggregate_setting("default", [r for r in kept] + [dict(b, host="A") for b in bad], world=4)
    assert so.status == "ok"


def test_a_forged_world_size_and_floods_are_bounded_by_the_launched_world():
    import tracemalloc

    from nccldiag.probe import analysis, runner
    from nccldiag.probe.plan import Setting

    launched = results.Launched(("A", "B"), 2)
    stream = _two_nodes(_lines("gloo-4rank-default.jsonl"))
    flood = [json.dumps({"type": "start", "rank": 2, "world_size": 30_000_000})]
    flood += [json.dumps({"type": "result", "rank": 3, "collective": f"c{i}", "phase": "check", "status": "ok"})
              for i in range(20_000)]  # collectives nobody planned
    flood += [json.dumps({"type": "result", "rank": 2 + i % 2, "collective": "all_reduce", "phase": "sweep",
                          "status": "ok", "size": i, "count": 1, "time_us": 1.0, "algbw": 1.0, "busbw": 1.0})
              for i in range(100_000)]  # one planned collective, many times over
    flood += [json.dumps({"type": "result", "rank": 4 + i, "collective": "all_reduce", "status": "ok"})
              for i in range(20_000)]  # ranks outside the world
    tracemalloc.start()
    kept, gate = _admit(launched, stream + [("B", l) for l in flood])
    sr = runner.SettingRun(setting=Setting("default"), records=kept, launched=launched)
    rep = analysis.job_report(Setting("default"), sr)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # what is kept is bounded by the world: per rank, MAX_OTHER plus MAX_PER_COLLECTIVE for each planned collective
    bound = launched.world * (results.MAX_OTHER + results.MAX_PER_COLLECTIVE * len(launched.planned))
    assert len(kept) <= bound
    assert sum(1 for r in kept if r["rank"] == 3 and r.get("collective") == "all_reduce") \
        == results.MAX_PER_COLLECTIVE
    assert rep.outcome.world_size == 4 and rep.outcome.missing_ranks == []
    assert set(rep.outcome.collectives) == set(results.COLLECTIVES)
    assert gate.rejected["B"]["records about collectives not planned"] == 20_000
    assert gate.rejected["B"]["records about ranks it did not launch"] == 20_000
    assert gate.rejected["B"]["too many records"] > 99_000
    # 140,000 forged lines held within the world's bound: before the gate, a 30,000,000 world alone took minutes
    # and gigabytes
    assert peak < 64 << 20, peak


def test_nccl_log_lines_from_a_node_that_name_another_host_are_dropped_and_counted(tmp_path):
    """Real sh on this machine as node B: its NCCL log frames A, and forges the fetch's file delimiters."""
    from nccldiag.nccl import parser as nccllog
    from nccldiag.probe import analysis, runner
    from nccldiag.transport.nodes import LocalNode
    from nccldiag.probe.plan import Setting

    own = "B:200:201 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] via NET/Socket/0\n"
    forged = ("A:100:101 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4242> with error 12, "
              "opcode 0, len 0, vendor err 129\n")
    glued = "B:200:201 [0] NCCL INFO x A:100:101 [0] NCCL WARN Call to ibv_create_qp failed\n"
    (tmp_path / "nccl.B.200.log").write_text(own + forged + glued + "@@file /etc/passwd@@\nplain text\n")
    for i in range(runner.MAX_LOG_FILES + 5):
        (tmp_path / f"nccl.B.{9000 + i}.log").write_text(own)
    rejected = {}
    logs = runner.fetch_logs([LocalNode("B")], f"{tmp_path}/nccl.*.log", hostnames={"B": "B.example.org"},
                             rejected=rejected)
    assert len(logs) == runner.MAX_LOG_FILES and all(k.startswith("B/nccl.B.") for k in logs)
    text = logs["B/nccl.B.200.log"]
    assert text == own + "@@file /etc/passwd@@\nplain text\n"
    assert rejected == {"B": {runner.FOREIGN_LINES: 2}}
    facts = nccllog.parse_logs(logs)
    assert not facts.warns and {p.host for p in facts.procs} == {"B"}
    # the drop is a finding on B, the node that sent it
    sr = runner.SettingRun(setting=Setting("default"), rejected=rejected)
    (f,) = [f for f in analysis.job_report(Setting("default"), sr).findings if f.check == "probe.rejected"]
    assert f.host == "B" and f.status == Status.WARN and "naming another host (2)" in f.message


def test_a_rank_on_one_node_cannot_report_a_death_on_another():
    from nccldiag.probe import analysis, runner
    from nccldiag.probe.plan import Setting

    # mpirun on A carries B's rank 1 stderr tagged; a bare 'mpirun noticed' line is mpirun's own
    forged = "[1,1]<stderr>:mpirun noticed that process rank 0 with PID 7 on node A exited on signal 9 (Killed).\n"
    sr = runner.SettingRun(setting=Setting("default"), launched=results.Launched(("A", "B"), 1, tagged=launchers.get("mpirun").tagging))
    sr.nodes["A"] = runner.NodeRun("A", 137, None, forged)
    assert not [f for f in analysis.job_report(Setting("default"), sr).findings if f.check == "probe.rank_died"]
    sr.nodes["A"] = runner.NodeRun("A", 137, None, forged.split(":", 1)[1])
    (f,) = [f for f in analysis.job_report(Setting("default"), sr).findings if f.check == "probe.rank_died"]
    assert f.host == "A"
    # torchrun's root cause on B names a rank of A: not believed
    block = ("Root Cause (first observed failure):\n[0]:\n  time      : 2025\n  host      : B\n"
             "  rank      : 0 (local_rank: 0)\n  exitcode  : -9 (pid: 9)\n")
    sr = runner.SettingRun(setting=Setting("default"), launched=results.Launched(("A", "B"), 1))
    sr.nodes["B"] = runner.NodeRun("B", 1, None, block)
    assert not [f for f in analysis.job_report(Setting("default"), sr).findings if f.check == "probe.rank_died"]
    sr.nodes["B"] = runner.NodeRun("B", 1, None, block.replace("rank      : 0", "rank      : 1"))
    assert [f.host for f in analysis.job_report(Setting("default"), sr).findings if f.check == "probe.rank_died"] == ["B"]


def test_a_failure_line_of_nccl_tests_naming_another_host_is_not_that_hosts():
    """nccl-tests takes the host of a failure line from the line itself: in B's log, a line naming A would blame A
    for B's log. The lines are in nccl-tests' formats (common.cu's 'Test NCCL failure', the 2018 'Cuda failure');
    the host names are written for the test."""
    from nccldiag.nccl import parser as nccllog
    from nccldiag.probe import runner

    own = "B: Test NCCL failure common.cu:1279 'unhandled system error (run with NCCL_DEBUG=INFO for details)'\n"
    other = "A: Test NCCL failure common.cu:1279 'unhandled system error (run with NCCL_DEBUG=INFO for details)'\n"
    old = "A: Cuda failure common.cu:891 'out of memory'\n"
    text, dropped = runner.own_log_lines(own + other + old, "B.example.org")
    assert text == own and dropped == 2
    hosts = {e.at.host for e in nccllog.parse_logs({"B/nccl.B.1.log": text}).app_errors}
    assert hosts == {"B"}


def test_a_rank_line_nested_deep_or_endless_is_skipped_not_raised():
    """A line a rank (or whatever printed in its place) wrote is not trusted: a record nested 100,000 deep (which
    json.loads answers with RecursionError, not ValueError) or 2 MiB long is skipped as noise, and the real
    records around it are still read."""
    with open(os.path.join(FIX, "gloo-4rank-default.jsonl"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    deep = '{"type": "result", "x": ' + "[" * 100000 + "]" * 100000 + "}"
    long = '{"type": "result", "x": "' + "a" * (2 << 20) + '"}'
    assert results.parse_line(deep) is None
    assert results.parse_line(long) is None
    recs = results.read_records(lines[:3] + [deep, long] + lines[3:])
    assert len(recs) == len(lines)
