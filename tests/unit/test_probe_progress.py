"""A probe setting the deadline cut: slow (still moving), stalled after N calls, or hung, told by the ranks'
progress records with the classifier isolate uses (nccldiag.probe.progress).

The records below are written for these tests, in the format nccldiag's worker writes (nccldiag/node/worker.py:
``start``, ``progress`` with ``done`` and ``busbw`` while a sweep runs, ``result``); their arrival times are
what the runner stamps (seconds after the launch).
"""
from typing import List

from nccldiag.diagnosis import Inputs, diagnose
from nccldiag.isolate import judge as isolate
from nccldiag.probe import analysis, progress, records, session
from nccldiag.probe.plan import Setting
from nccldiag.probe.runner import NodeRun, SettingRun

SIZE = 16 << 20


def _start(rank: int) -> dict:
    return {"type": "start", "rank": rank, "host": "vm", "local_rank": rank, "local_world_size": 2, "world_size": 2,
            "backend": "gloo", "collectives": ["all_reduce"], "sizes": [SIZE], "check_sizes": [1024], "iters": 20,
            "warmup": 2}


def _records(done: List[int]) -> List[dict]:
    """Two ranks: init, the check, then sweep progress records counting ``done`` calls (none: stuck in the check)."""
    recs: List[dict] = []
    for r in (0, 1):
        recs += [_start(r), {"type": "progress", "rank": r, "host": "vm", "collective": None, "phase": "init"},
                 {"type": "progress", "rank": r, "host": "vm", "collective": None, "phase": "ready"},
                 {"type": "progress", "rank": r, "host": "vm", "collective": "all_reduce", "phase": "check",
                  "size": 1024, "count": 256}]
    if not done:
        return recs
    for r in (0, 1):
        recs += [{"type": "result", "rank": r, "host": "vm", "collective": "all_reduce", "phase": "check",
                  "status": "ok", "size": 1024, "count": 256, "time_us": 900.0},
                 {"type": "progress", "rank": r, "host": "vm", "collective": "all_reduce", "phase": "sweep",
                  "size": SIZE, "count": SIZE // 4}]
    for n in done:
        for r in (0, 1):
            recs.append({"type": "progress", "rank": r, "host": "vm", "collective": "all_reduce", "phase": "sweep",
                         "size": SIZE, "count": SIZE // 4, "done": n, "iters": 20, "warmup": 2,
                         "rank_time_us": 900000.0, "busbw": 0.0186 + 0.001 * r})
    return recs


def _run(recs, arrivals, stopped=90.0, collective="all_reduce") -> SettingRun:
    run = SettingRun(setting=Setting("default"), records=recs, timed_out=True, elapsed=stopped + 6.0,
                     progress=[(t, collective) for t in arrivals], stopped_s=stopped)
    run.nodes["vm"] = NodeRun("vm", rc=None, error={"kind": "command-timeout", "message": "timed out"})
    return run


def _report(run: SettingRun) -> analysis.ProbeReport:
    return analysis.analyze(runs=[run], settings=[run.setting], backend="gloo", require_ib=False,
                            launcher="torchrun", hosts=["vm"], unreachable={}, problems={}, loopback={},
                            ifnames={}, nproc_per_node=2, timeout=90.0)


def test_isolate_and_the_probe_share_one_classifier():
    assert isolate.unfinished_kind is progress.unfinished_kind and isolate.shows_progress is progress.shows_progress
    assert (isolate.HANG, isolate.STALLED, isolate.SLOW) == (progress.HANG, progress.STALLED, progress.SLOW)


def test_calls_done_counts_each_size_once_per_rank():
    recs = _records([3, 7, 12])
    # the check (1 call) and the sweep's last count (12); a record without 'done' counts nothing
    assert progress.calls_done(recs) == 13
    assert progress.calls_done(_records([])) == 0
    sweep = {"type": "result", "rank": 0, "collective": "all_reduce", "phase": "sweep", "status": "ok",
             "size": 4096, "iters": 5, "warmup": 1}
    assert progress.calls_done([sweep]) == 6


def test_a_setting_still_moving_at_the_deadline_is_slow_not_a_hang():
    # the check, then a progress record every ~8 s until 2 s before the stop at 90 s
    rep = _report(_run(_records([3, 7, 12, 16, 20]), [4.0, 4.1, 56.0, 64.0, 72.0, 80.0, 88.0]))
    sr = rep.settings[0]
    assert sr.status == "hang" and sr.unfinished == progress.SLOW
    assert sr.verdict == "slow (still moving at the deadline)"
    (t,) = [f for f in sr.findings if f.check == "probe.timeout"]
    assert "slow, not hung" in t.message and "--timeout" in t.fix
    diags = [d for d in diagnose(Inputs(probe=rep)) if d.id == "hang"]
    (d,) = diags
    assert d.severity == "warn" and "slow (still moving at the deadline)" in d.summary and "21 calls" in d.summary
    assert d.figures["busbw_so_far"] == 0.0186


def test_a_setting_that_moved_then_stopped_is_stalled_after_its_calls():
    # progress until 30 s, then nothing for the last 60 s before the stop
    rep = _report(_run(_records([3, 7]), [4.0, 4.1, 22.0, 30.0]))
    sr = rep.settings[0]
    assert sr.unfinished == progress.STALLED and sr.verdict == "stalled after 8 calls"
    (t,) = [f for f in sr.findings if f.check == "probe.timeout"]
    assert "data moved (8 calls of all_reduce done), then nothing for the last 60 s" in t.message
    (d,) = [d for d in diagnose(Inputs(probe=rep)) if d.id == "hang"]
    assert d.severity == "fail" and "stalled after 8 calls" in d.summary


def test_a_setting_that_never_moved_data_is_a_hang():
    rep = _report(_run(_records([]), []))
    sr = rep.settings[0]
    assert sr.status == "hang" and sr.unfinished == progress.HANG and sr.verdict == "hang"
    (t,) = [f for f in sr.findings if f.check == "probe.timeout"]
    assert "slow" not in t.message and "stalled" not in t.message
    (d,) = [d for d in diagnose(Inputs(probe=rep)) if d.id == "hang"]
    assert d.severity == "fail" and "hung" in d.summary


def test_collectives_done_before_the_one_that_hung_do_not_make_it_move():
    # all_reduce completed (its check and a sweep, progress until 18 s); then every rank entered broadcast's
    # check and no broadcast call completed before the deadline at 25 s
    recs = _records([3, 22])
    for r in (0, 1):
        recs += [{"type": "result", "rank": r, "host": "vm", "collective": "all_reduce", "phase": "sweep",
                  "status": "ok", "size": SIZE, "count": SIZE // 4, "iters": 20, "warmup": 2, "time_us": 1000.0},
                 {"type": "progress", "rank": r, "host": "vm", "collective": "broadcast", "phase": "check",
                  "size": 1024, "count": 256}]
    run = _run(recs, [4.0, 4.1, 9.0, 16.0, 18.0, 18.1], stopped=25.0)
    rep = analysis.analyze(runs=[run], settings=[run.setting], backend="gloo", require_ib=False,
                           launcher="torchrun", hosts=["vm"], unreachable={}, problems={}, loopback={},
                           ifnames={}, nproc_per_node=2, timeout=25.0)
    sr = rep.settings[0]
    assert sr.outcome.collectives["broadcast"].status == "hang"
    assert sr.unfinished == progress.HANG and sr.verdict == "hang"
    (d,) = [d for d in diagnose(Inputs(probe=rep)) if d.id == "hang"]
    assert d.severity == "fail" and "broadcast hung" in d.summary


def test_a_setting_that_finished_gets_no_unfinished_class():
    recs = _records([3])
    for r in (0, 1):
        recs += [{"type": "result", "rank": r, "host": "vm", "collective": "all_reduce", "phase": "sweep",
                  "status": "ok", "size": SIZE, "count": SIZE // 4, "iters": 20, "warmup": 2, "time_us": 1000.0},
                 {"type": "end", "rank": r, "host": "vm", "status": "ok", "exit_code": 0,
                  "collectives": {"all_reduce": "ok"}, "elapsed_s": 6.0}]
    run = _run(recs, [4.0, 5.0, 6.0])
    run.timed_out = False
    sr = _report(run).settings[0]
    assert sr.status == "ok" and sr.unfinished is None and sr.verdict == "ok"


def test_a_hang_the_ranks_own_timeout_ended_is_never_called_slow():
    # the launcher ended 5 s after the last call completed (the ranks' process-group timeout fired): the
    # deadline did not cut it, so a short quiet spell is no sign of a slow setting
    run = _run(_records([3, 7]), [4.0, 4.1, 8.0, 9.0])
    run.timed_out, run.stopped_s = False, None
    run.nodes["vm"] = NodeRun("vm", rc=1, elapsed=14.0)
    sr = _report(run).settings[0]
    assert sr.status == "hang" and sr.unfinished == progress.STALLED and sr.verdict == "stalled after 8 calls"
    run.progress = []
    assert _report(run).settings[0].verdict == "hang"


def test_the_setting_line_keeps_the_arrivals_for_a_rebuilt_report():
    line = records.setting_line(_run(_records([3]), [4.0, 5.0], stopped=90.0))
    assert line["progress_s"] == [[4.0, "all_reduce"], [5.0, "all_reduce"]] and line["stopped_s"] == 90.0


def test_a_report_rebuilt_from_the_run_directory_says_slow_too(tmp_path):
    import json

    from nccldiag.report import rebuild

    run = _run(_records([3, 7, 12, 16, 20]), [4.0, 4.1, 56.0, 64.0, 72.0, 80.0, 88.0])
    path = tmp_path / "run"
    path.mkdir()
    (path / "run.json").write_text(json.dumps({"command": "probe", "backend": "gloo", "launcher": "torchrun",
                                               "hosts": ["vm"], "nproc_per_node": 2, "timeout": 90.0,
                                               "settings": [{"name": "default", "env": {}}]}))
    (path / "records.jsonl").write_text("".join(json.dumps({**r, "setting": "default"}) + "\n" for r in run.records))
    (path / "settings.jsonl").write_text(json.dumps(records.setting_line(run)) + "\n")
    doc = rebuild.load(str(path))
    (s,) = doc["settings"]
    assert s["status"] == "hang" and s["unfinished"] == "slow" and s["calls_done"] == 21
    assert s["verdict"] == "slow (still moving at the deadline)"
    import jsonschema

    from nccldiag.report import schema

    jsonschema.validate(doc, schema.load(doc["schema"]), cls=jsonschema.Draft202012Validator)


def _killed_peer(recs: List[dict]) -> List[dict]:
    """Rank 1 reports the error a rank reports when its peer's processes are killed (gloo's words); the last
    record of rank 0 (on the slow node, whose stream was slow too) that reached the head is a result, so no
    rank is seen inside a call."""
    return recs + [{"type": "result", "rank": 0, "host": "vm", "collective": "all_reduce", "phase": "check",
                    "status": "ok", "size": 1024, "count": 256, "time_us": 900.0},
                   {"type": "result", "rank": 1, "host": "vm", "collective": "all_reduce", "phase": "sweep",
                    "status": "error", "size": SIZE, "count": SIZE // 4,
                    "error": "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer"},
                   {"type": "end", "rank": 1, "host": "vm", "status": "error", "exit_code": 1}]


def test_a_failure_reported_only_after_the_deadline_stopped_the_run_is_the_deadlines_doing():
    """A slow setting whose peer lost its partner when the deadline killed it: classed by its progress (slow),
    never an error; the same failure reported before the stop is the setting's own."""
    recs = _killed_peer(_records([3, 7, 12, 16, 20]))
    arrivals = [4.0, 4.1, 56.0, 64.0, 72.0, 80.0, 88.0]
    run = _run(recs, arrivals)
    run.failures = [90.4]  # after the stop at 90 s: the kill's
    sr = _report(run).settings[0]
    assert sr.outcome.status == "error" and sr.cut
    assert sr.status == "hang" and sr.unfinished == progress.SLOW
    assert sr.verdict == "slow (still moving at the deadline)"
    run.failures = [50.0]  # before the stop: the rank failed on its own
    sr = _report(run).settings[0]
    assert not sr.cut and sr.status == "error"
    run.failures = None  # a run directory written before failures were kept: judged as before
    assert _report(run).settings[0].status == "error"


def test_only_records_that_say_a_rank_failed_are_failures():
    assert progress.shows_failure({"type": "error", "phase": "init", "message": "no torch"})
    assert progress.shows_failure({"type": "result", "status": "error", "collective": "all_reduce"})
    assert not progress.shows_failure({"type": "result", "status": "ok", "collective": "all_reduce"})
    assert not progress.shows_failure({"type": "end", "status": "error"})  # the end a failure already said
    assert not progress.shows_failure({"type": "progress", "collective": "all_reduce", "done": 3})
    assert progress.failed_before([90.4], 90.0) is False and progress.failed_before([89.9, 95.0], 90.0) is True
    assert progress.failed_before([3.0], None) is True and progress.failed_before([], None) is False


def test_the_setting_line_keeps_the_failures_arrivals():
    from nccldiag.probe import records

    run = _run(_records([3]), [4.0], stopped=90.0)
    run.failures = [90.4]
    line = records.setting_line(run)
    assert line["failures_s"] == [90.4]
    back = records.setting_run(run.setting, line, run.records, {})
    assert back.failures == [90.4]
    assert records.setting_run(run.setting, {k: v for k, v in line.items() if k != "failures_s"},
                               run.records, {}).failures is None


def _stuck_in_init() -> List[dict]:
    """Two ranks that started and never got past init (a busy machine: they were still importing and connecting
    when the deadline came)."""
    return [rec for r in (0, 1) for rec in (_start(r), {"type": "progress", "rank": r, "host": "vm",
                                                         "collective": None, "phase": "init"})]


def test_an_isolate_job_still_starting_at_the_deadline_is_not_judged_unless_a_rank_failed():
    """Ranks still in init (or not yet heard from, or waiting for the round's go) when the deadline cut a job in
    which none had failed were slow to start: neither hung nor cut off from their peers (no 'broken network'), and
    no pass either; a rank whose init failed before the deadline says the network is."""
    from nccldiag.isolate import run as isolate_run

    ready = [rec for r in (0, 1) for rec in (_start(r), {"type": "progress", "rank": r, "host": "vm",
                                                          "collective": None, "phase": "ready"})]
    for recs in (_stuck_in_init(), [], [_start(0)], ready):
        run = _run(recs, [])
        run.failures = []
        rep = analysis.job_report(run.setting, run, timeout=90.0)
        job = isolate_run.outcome(isolate.Job(1, "pairs", "net1", ("a", "b")), rep, run, "all_reduce", None)
        assert job.status == "hang" and not job.init_failed and job.unfinished == isolate.NOT_STARTED, recs
        job.kind = isolate.classify(job, 1.0, None, 90.0)
        assert job.kind == isolate.NOT_STARTED and not job.failed and not job.judged
        assert "still starting" in isolate.job_line(job)
    failed = _stuck_in_init() + [{"type": "error", "rank": 1, "host": "vm", "phase": "init",
                                  "message": "RuntimeError: Gloo connectFullMesh failed with timed out connecting: "
                                             "SO_ERROR: No route to host"}]
    run = _run(failed, [])
    run.failures = [45.2]
    rep = analysis.job_report(run.setting, run, timeout=90.0)
    job = isolate_run.outcome(isolate.Job(1, "pairs", "net1", ("a", "b")), rep, run, "all_reduce", None)
    assert job.init_failed and isolate.classify(job, 1.0, None, 90.0) == isolate.NETWORK


def test_an_isolate_job_whose_ranks_entered_the_collective_and_never_came_back_is_a_hang():
    """A rank that entered the first collective and stopped there is a hang, however late its ranks started."""
    from nccldiag.isolate import run as isolate_run

    run = _run(_records([]), [])
    run.failures = []
    rep = analysis.job_report(run.setting, run, timeout=90.0)
    job = isolate_run.outcome(isolate.Job(1, "pairs", "net1", ("a", "b")), rep, run, "all_reduce", None)
    assert job.status == "hang" and job.unfinished == progress.HANG
    job.kind = isolate.classify(job, 1.0, None, 90.0)
    assert job.kind == isolate.HANG and job.failed


def test_an_isolate_job_the_deadline_cut_while_moving_is_slow_whatever_its_peer_said_after():
    from nccldiag.isolate import run as isolate_run

    run = _run(_killed_peer(_records([3, 7, 12, 16, 20])), [4.0, 4.1, 56.0, 64.0, 72.0, 80.0, 88.0])
    run.failures = [90.4]
    run.elapsed = 150.0  # the reap on a busy machine took a minute
    rep = analysis.job_report(run.setting, run, timeout=90.0)
    job = isolate_run.outcome(isolate.Job(1, "pairs", "net1", ("a", "b"), progress=[56.0, 64.0, 72.0, 80.0, 88.0]),
                              rep, run, "all_reduce", 0.0186)
    assert job.status == "hang" and job.partial_busbw == 0.0186
    assert isolate.classify(job, 1.0, None, 90.0) == isolate.SLOW


def test_a_probe_setting_whose_ranks_never_entered_the_collective_is_not_started_not_a_hang():
    """The probe reads a setting the deadline cut as isolate reads its jobs: where no rank had entered the
    collective and none had failed before the deadline, its ranks were still starting. It is not started, with where
    its ranks were, an error (nothing measured: exit 3), never ok and never a hang of the network path."""
    ready = [rec for r in (0, 1) for rec in (_start(r), {"type": "progress", "rank": r, "host": "vm",
                                                          "collective": None, "phase": "ready"})]
    cases = ((_stuck_in_init(), "ranks 0, 1 initialising the process group"),
             ([], "no rank heard from"),
             ([_start(0)], "rank 0 started, before process-group initialisation; rank 1 not heard from"),
             (ready, "ranks 0, 1 initialised, not yet in the collective"))
    for recs, where in cases:
        run = _run(recs, [])
        run.failures = []
        rep = _report(run)
        sr = rep.settings[0]
        assert sr.status == "hang" and sr.unfinished == progress.NOT_STARTED, recs
        assert sr.verdict.startswith("not started (") and where in sr.verdict, sr.verdict
        (t,) = [f for f in sr.findings if f.check == "probe.timeout"]
        assert t.status.value == "error" and "not started, not a hang" in t.message and "--timeout" in t.fix
        assert not [f for f in rep.all_findings if f.status.value == "fail"], rep.all_findings
        assert rep.exit_code == 3
        assert "probe.summary" not in {f.check for f in rep.all_findings}
        (d,) = [d for d in diagnose(Inputs(probe=rep)) if d.id == "hang"]
        assert d.severity == "warn" and "not started" in d.summary and where in d.summary
        assert "hung" not in d.summary
    # a rank that failed before the deadline makes it the setting's own failure, not a slow start
    run = _run(_stuck_in_init() + [{"type": "error", "rank": 1, "host": "vm", "phase": "init",
                                    "message": "RuntimeError: Gloo connectFullMesh failed: No route to host"}], [])
    run.failures = [45.2]
    sr = _report(run).settings[0]
    assert sr.unfinished != progress.NOT_STARTED and "not started" not in sr.verdict
    # a rank inside the collective at the deadline with no call done is a hang, however late it started
    run = _run(_records([]), [])
    run.failures = []
    sr = _report(run).settings[0]
    assert sr.unfinished == progress.HANG and sr.verdict == "hang"


def test_where_the_ranks_of_a_run_that_never_started_were():
    recs = [_start(0), {"type": "progress", "rank": 0, "collective": None, "phase": "init"}, _start(1)]
    assert progress.starting_stage(recs, 4) == ("rank 0 initialising the process group (joining its peers); "
                                                "rank 1 started, before process-group initialisation; "
                                                "ranks 2, 3 not heard from (starting Python, importing torch)")
    assert progress.never_entered(recs)
    assert not progress.never_entered(recs + [{"type": "progress", "rank": 0, "collective": "all_reduce",
                                                "phase": "check"}])


def test_a_launcher_that_failed_before_the_deadline_is_no_slow_start():
    """A setting cut by the deadline with no rank record, where one node's launcher exited on an error before it (its
    rendezvous refused): the failure is the setting's own, not a start the load stretched."""
    run = _run([], [])
    run.failures = []
    run.nodes["vm2"] = NodeRun("vm2", rc=1, stderr_tail="torch.distributed.DistNetworkError: The client socket has "
                                                       "timed out after 10000ms while trying to connect to (vm, 29400).")
    rep = _report(run)
    sr = rep.settings[0]
    assert sr.unfinished != progress.NOT_STARTED and "not started" not in sr.verdict
    assert any(f.check == "probe.launch" and f.status.value == "fail" for f in sr.findings), sr.findings
    assert rep.exit_code == 1


def _entered(run: SettingRun, **at: float) -> SettingRun:
    """The runner's arrivals of each rank's first record inside the collective (rank0=..., rank1=...)."""
    run.entered = {int(k[4:]): v for k, v in at.items()}
    run.failures = []
    return run


def test_ranks_that_entered_the_collective_just_before_the_deadline_were_still_starting_not_hung():
    """A loaded machine stretched the start of a job into its deadline: both ranks entered the collective 1.5 s
    before the stop, no data moved and none failed. Their first call had no time to end: not started (nothing
    measured, never a failure of its nodes), in the probe's report and in isolate's classes alike. The job has the
    shape of one an isolate round on a busy machine showed (two ranks ready, released by the round's go file 1 s
    before the deadline, inside the check), with the arrival times the runner stamps."""
    from nccldiag.isolate import run as isolate_run

    run = _entered(_run(_records([]), [], stopped=90.0), rank0=88.5, rank1=88.6)
    sr = _report(run).settings[0]
    assert sr.status == "hang" and sr.unfinished == progress.NOT_STARTED, sr.verdict
    assert "entered the collective only 1 s before the deadline" in sr.verdict, sr.verdict
    (t,) = [f for f in sr.findings if f.check == "probe.timeout"]
    assert t.status.value == "error" and "not started, not a hang" in t.message and "no data had moved" in t.message
    assert not [f for f in sr.findings if f.status.value == "fail"], sr.findings
    rep = analysis.job_report(run.setting, run, timeout=90.0)
    job = isolate_run.outcome(isolate.Job(1, "pairs", "net1", ("a", "b")), rep, run, "all_reduce", None)
    job.kind = isolate.classify(job, 1.0, None, 90.0)
    assert job.kind == isolate.NOT_STARTED and not job.failed and not job.judged


def test_ranks_inside_the_collective_long_enough_for_it_to_end_are_hung():
    """The same job with its ranks inside the collective for the last 30 s (more than a fifth of the 90 s timeout)
    is a hang; so is one whose second rank never entered at all (its peer waited for it), and one whose entries were
    not recorded (a run directory written before they were kept)."""
    from nccldiag.isolate import run as isolate_run

    for at in ({"rank0": 60.0, "rank1": 60.1}, {"rank0": 89.0}, None):
        run = _run(_records([]), [], stopped=90.0)
        run.failures = []
        if at is not None:
            _entered(run, **at)
        run.launched = None
        sr = _report(run).settings[0]
        world = 2 if at is not None and len(at) == 1 else None
        if world:
            assert progress.entered_late(run.entered, world, 90.0, 90.0) is None
        assert sr.unfinished == progress.HANG and sr.verdict == "hang", (at, sr.verdict)
        rep = analysis.job_report(run.setting, run, timeout=90.0)
        job = isolate_run.outcome(isolate.Job(1, "pairs", "net1", ("a", "b")), rep, run, "all_reduce", None)
        assert isolate.classify(job, 1.0, None, 90.0) == isolate.HANG


def test_the_boundary_of_a_late_entry_is_a_fifth_of_the_timeout():
    assert progress.entered_late({0: 72.5, 1: 72.0}, 2, 90.0, 90.0) == 17.5
    assert progress.entered_late({0: 71.9, 1: 72.0}, 2, 90.0, 90.0) is None
    assert progress.entered_late({0: 7.5, 1: 7.9}, 2, 10.0, 10.0) is None
    assert progress.entered_late({0: 9.5, 1: 9.0}, 2, 10.0, 10.0) == 0.5
    assert progress.entered_late({}, 2, 90.0, 90.0) is None


def test_the_setting_line_keeps_the_entries_for_a_rebuilt_report():
    run = _entered(_run(_records([]), [], stopped=90.0), rank0=88.5, rank1=88.6)
    line = records.setting_line(run)
    assert line["entered_s"] == {"0": 88.5, "1": 88.6}
    back = records.setting_run(run.setting, line, run.records, {})
    assert back.entered == {0: 88.5, 1: 88.6}
    assert records.setting_run(run.setting, dict(line, entered_s=None), run.records, {}).entered is None
