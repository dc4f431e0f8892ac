"""The probe worker, run for real: torchrun and mpirun with the gloo backend on this machine.

Each launch costs a few seconds (torch imports in every rank), so one run
serves several assertions through module-scoped fixtures.
"""
import os
import shutil
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")

from nccldiag.node import collectives as registry  # noqa: E402
from nccldiag.node import sizes, worker  # noqa: E402
from nccldiag.probe import results  # noqa: E402
from nccldiag.node.collectives import base  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and not k.startswith(("OMPI_COMM", "PMIX"))}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def torchrun(nproc, args, out, timeout=90):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           "--max-restarts=0", "--monitor-interval=0.2", "-m", "nccldiag.node.worker",
           "--backend", "gloo", "--out", str(out)] + list(args)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - t0, results.read_records(out.read_text().splitlines())


def of(recs, **match):
    return [r for r in recs if all(r.get(k) == v for k, v in match.items())]


# --------------------------------------------------------------------------- every collective, 4 ranks


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    out = tmp_path_factory.mktemp("full") / "records.jsonl"
    proc, elapsed, recs = torchrun(4, ["--pg-timeout", "30"], out)
    return proc, elapsed, recs


def test_every_collective_verified_on_every_rank(full):
    proc, _, recs = full
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(r["rank"] for r in of(recs, type="start")) == [0, 1, 2, 3]
    for name in registry.NAMES:
        checks = of(recs, type="result", collective=name, phase="check")
        assert checks, name
        assert {r["status"] for r in checks} == {"ok"}, (name, checks)
        assert {r["rank"] for r in checks} == {0, 1, 2, 3}, name
        assert all(r["wrong"] == 0 and r["ranks_wrong"] == [] for r in checks), name
    # rooted collectives: only the root has something to verify, every other rank receives
    assert {r["rank"] for r in of(recs, collective="reduce", phase="check", verified=True)} == {0}
    assert {r["rank"] for r in of(recs, collective="scatter", phase="check", verified=True)} == {0, 1, 2, 3}
    ends = of(recs, type="end")
    assert len(ends) == 4 and {e["status"] for e in ends} == {"ok"}


def test_all_reduce_of_rank_ids_is_the_sum_of_ids(full):
    _, _, recs = full
    samples = [r["sample"] for r in of(recs, type="result", collective="all_reduce", phase="check")]
    assert len(samples) == 4 * 3  # 4 ranks x 3 check sizes
    assert {(s["value"], s["expected"]) for s in samples} == {(6.0, 6.0)}  # 0+1+2+3


def test_sweep_reports_time_algbw_and_busbw_per_nccl_tests(full):
    _, _, recs = full
    d = sizes.defaults("gloo")
    want_sizes = sizes.sizes(d.min_bytes, d.max_bytes, d.factor)
    sweep = of(recs, type="result", collective="all_reduce", phase="sweep", rank=0)
    assert [r["size"] for r in sweep] == want_sizes
    for r in sweep:
        assert r["iters"] == d.iters and r["time_us"] > 0 and r["algbw"] > 0
        assert r["algbw"] == pytest.approx(r["size"] / 1e9 / (r["time_us"] / 1e6), rel=1e-3)
        assert r["busbw"] == pytest.approx(r["algbw"] * 2 * 3 / 4, rel=1e-3)  # 2(n-1)/n
        assert r["time_us"] >= r["rank_time_us"]  # the slowest rank's time
    # every rank reports the same (slowest) time for a size
    by_size = {}
    for r in of(recs, type="result", collective="all_gather", phase="sweep"):
        by_size.setdefault(r["size"], set()).add(r["time_us"])
    assert by_size and all(len(v) == 1 for v in by_size.values())
    ag = of(recs, type="result", collective="all_gather", phase="sweep", rank=0)[-1]
    assert ag["size"] == ag["count"] * 4 * 4  # the whole gathered buffer
    assert ag["busbw"] == pytest.approx(ag["algbw"] * 3 / 4, rel=1e-3)


def test_progress_precedes_each_phase(full):
    _, _, recs = full
    mine = [r for r in recs if r.get("rank") == 2]
    for i, r in enumerate(mine):
        if r["type"] == "result":
            # the step was announced (collective, phase, size) since the previous collective's last result
            since = [p for p in mine[:i] if p["type"] == "progress" and p["collective"] == r["collective"]]
            assert any(p["phase"] == r["phase"] and p["size"] == r["size"] for p in since), r
            before = [p for p in mine[:i] if p["type"] == "progress"]
            assert before[-1]["collective"] == r["collective"]


def test_a_check_at_a_swept_size_is_its_first_warm_up_call(full):
    _, _, recs = full
    mine = [r for r in recs if r.get("rank") == 1 and r.get("collective") == "all_reduce"]
    checks = [r["size"] for r in mine if r["type"] == "result" and r["phase"] == "check"]
    swept = [r["size"] for r in mine if r["type"] == "result" and r["phase"] == "sweep"]
    assert checks and set(checks) <= set(swept)
    # each check's verdict comes with its size's timing: check, then sweep, at the same size
    steps = [(r["phase"], r["size"]) for r in mine if r["type"] == "result"]
    for size in checks:
        i = steps.index(("check", size))
        assert steps[i + 1] == ("sweep", size)


def test_results_aggregate_the_full_run(full):
    _, _, recs = full
    so = results.aggregate_setting("default", recs)
    assert so.status == "ok" and so.world_size == 4 and so.backend == "gloo"
    assert [c for c in so.collectives] == registry.NAMES
    assert all(oc.status == "ok" for oc in so.collectives.values())
    assert so.collectives["all_reduce"].peak_busbw > 0
    assert {f.status.value for f in results.findings(so)} == {"ok"}


def test_default_gloo_run_is_quick(full):
    _, _, recs = full
    # the ranks' own time (without torch start-up): 4 ranks on 2 cores here
    assert max(e["elapsed_s"] for e in of(recs, type="end")) < 15


# --------------------------------------------------------------------------- wrong results


def test_corrupt_rank_is_reported_wrong_on_that_rank_only(tmp_path):
    names = "all_reduce,broadcast,all_gather,scatter,all_to_all_single,sendrecv,reduce"
    proc, _, recs = torchrun(2, ["--corrupt-rank", "1", "--check-only", "--collectives", names,
                                 "--max-bytes", "64K", "--pg-timeout", "30"], tmp_path / "r.jsonl")
    assert proc.returncode != 0  # wrong results fail the run, like nccl-tests' exit code 7
    for name in names.split(","):
        mine = of(recs, type="result", collective=name, phase="check")
        r0 = [r for r in mine if r["rank"] == 0]
        r1 = [r for r in mine if r["rank"] == 1]
        assert r0 and all(r["status"] == "ok" and r["wrong"] == 0 for r in r0), name
        if name == "reduce":  # rank 1 is not the root: it has nothing to verify or corrupt
            assert all(r["status"] == "ok" and r["ranks_wrong"] == [] for r in r1)
            continue
        assert r1 and all(r["status"] == "wrong" and r["wrong"] > 0 for r in r1), name
        for r in r1:  # rank 0 learns of rank 1's count at the same size, and blames rank 1 only
            (peer,) = [p for p in r0 if p["size"] == r["size"]]
            assert peer["ranks_wrong"] == [1] and peer["wrong_total"] == r["wrong"], name
    so = results.aggregate_setting("default", recs)
    assert so.collectives["all_reduce"].status == "wrong"
    assert so.collectives["all_reduce"].ranks_wrong == [1]
    assert so.collectives["reduce"].status == "ok"
    bad = [f for f in results.findings(so) if f.status.value == "fail"]
    assert {f.check for f in bad} == {f"probe.{n}" for n in names.split(",") if n != "reduce"}
    assert all("rank 1 (" in f.message and "rank 0" not in f.message for f in bad)
    assert {e["status"] for e in of(recs, type="end")} == {"wrong"}


# --------------------------------------------------------------------------- hang


def test_stalled_rank_is_named_as_hung_and_others_time_out(tmp_path):
    pg_timeout = 3
    # the stalled rank would wait an hour; the subprocess bound only guards the test against a hang (torch's
    # start-up in every rank takes most of a minute on a loaded 2-core machine)
    proc, _, recs = torchrun(2, ["--stall-rank", "1", "--stall-in", "broadcast", "--check-only",
                                 "--pg-timeout", str(pg_timeout)], tmp_path / "h.jsonl", timeout=300)
    ended = time.time()
    assert proc.returncode != 0
    err = of(recs, type="result", collective="broadcast", rank=0)
    assert len(err) == 1 and err[0]["status"] == "error" and err[0]["timeout"] is True
    entered = of(recs, type="progress", collective="broadcast", rank=0)[0]
    # rank 0 gave up at its own per-collective deadline, counted from when it entered the broadcast ...
    waited = err[0]["ts"] - entered["ts"]
    assert pg_timeout - 0.5 <= waited <= pg_timeout + 10
    # ... and the stall did not hold the run: it ended after that deadline, not after the stall's hour. Measured
    # from the stalled collective, not from the launch, so torch's start-up under load is not counted; the slack
    # is torchrun's tear-down (it stops the stalled rank, then exits) on a loaded machine.
    assert ended - entered["ts"] < pg_timeout + 60
    assert of(recs, type="result", collective="all_reduce", rank=1)  # it worked before the stall
    so = results.aggregate_setting("default", recs)
    oc = so.collectives["broadcast"]
    assert oc.status == "hang" and oc.ranks_hung == [1] and oc.ranks_timeout == [0]
    assert so.collectives["all_reduce"].status == "ok"
    assert so.collectives["reduce"].status == "not-run"
    (f,) = [f for f in results.findings(so) if f.check == "probe.broadcast"]
    assert f.status.value == "fail" and "rank 1" in f.message and "broadcast" in f.message
    assert "rank 0" in f.message and "timed out" in f.message


# --------------------------------------------------------------------------- MPI bootstrap


def test_mpi_bootstrap_runs_sanity_allreduce_first(tmp_path):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun is not installed")
    pytest.importorskip("mpi4py")
    out = tmp_path / "m.jsonl"
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", sys.executable, "-m",
           "nccldiag.node.worker", "--bootstrap", "mpi", "--backend", "gloo", "--check-only",
           "--collectives", "all_reduce,all_gather,sendrecv", "--pg-timeout", "30", "--out", str(out)]
    env = clean_env(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    recs = results.read_records(out.read_text().splitlines())
    for rank in (0, 1):
        mine = [r for r in recs if r.get("rank") == rank]
        kinds = [(r["type"], r.get("collective")) for r in mine]
        # the MPI allreduce is the first thing a rank does and is reported before any torch collective
        assert kinds[0] == ("progress", "mpi_allreduce")
        assert kinds.index(("result", "mpi_allreduce")) < kinds.index(("progress", None))
    starts = of(recs, type="start")
    assert sorted((s["rank"], s["local_rank"], s["bootstrap"]) for s in starts) == [(0, 0, "mpi"), (1, 1, "mpi")]
    assert len({(s["master_addr"], s["master_port"]) for s in starts}) == 1
    mpi = of(recs, type="result", collective="mpi_allreduce")
    assert {(r["status"], r["sample"]["value"]) for r in mpi} == {("ok", 1)}
    so = results.aggregate_setting("default", recs)
    assert so.status == "ok" and so.mpi is not None and so.mpi.status == "ok"
    assert [oc.status for oc in so.collectives.values()] == ["ok", "ok", "ok"]


# --------------------------------------------------------------------------- in-process pieces


def test_usage_and_bootstrap_errors_are_records(tmp_path, monkeypatch):
    for k in LAUNCH_VARS:
        monkeypatch.delenv(k, raising=False)
    out = tmp_path / "e.jsonl"
    assert worker.main(["--backend", "gloo", "--collectives", "all_reduce,nope", "--out", str(out)]) == worker.EXIT_USAGE
    assert worker.main(["--backend", "gloo", "--out", str(out)]) == worker.EXIT_SETUP
    recs = results.read_records(out.read_text().splitlines())
    errs = of(recs, type="error")
    assert [e["phase"] for e in errs] == ["usage", "bootstrap"]
    assert "nope" in errs[0]["message"] and "RANK" in errs[1]["message"]
    so = results.aggregate_setting("default", recs)
    fs = results.findings(so)
    assert {(f.check, f.status.value) for f in fs} >= {("probe.usage", "error"), ("probe.bootstrap", "fail")}


def test_classify_unsupported_versus_error():
    assert worker.classify(RuntimeError("ProcessGroupGloo does not support reduce_scatter")) == "unsupported"
    assert worker.classify(NotImplementedError("alltoall is not implemented")) == "unsupported"
    assert worker.classify(RuntimeError("Timed out waiting 3000ms: operation not supported yet?")) == "error"
    assert worker.classify(RuntimeError("NCCL error: unhandled system error")) == "error"
    assert worker.classify(RuntimeError("CUDA error: operation not supported")) == "error"


def test_local_rank_from_processor_names():
    names = ["a", "a", "b", "a", "b"]
    assert [worker.local_rank_from_names(names, r) for r in range(5)] == [(0, 3), (1, 3), (0, 2), (2, 3), (1, 2)]


def test_master_addr_choice():
    assert worker.pick_master_addr(["n1", "n2"], "n1", {"MASTER_ADDR": "10.0.0.5"}) == "10.0.0.5"
    assert worker.pick_master_addr(["n1", "n1"], "n1", {}) == "127.0.0.1"
    assert worker.pick_master_addr(["n1", "n2"], "n1", {"GLOO_SOCKET_IFNAME": "lo"}) == "127.0.0.1"


def test_backend_defaults_and_overrides():
    args = worker.parser().parse_args(["--backend", "nccl"])
    o = worker.build_options(args, "nccl")
    assert o.sweep[0] == 1024 and o.sweep[-1] >= 1 << 30 and o.iters >= 20
    args = worker.parser().parse_args(["--min-bytes", "8", "--max-bytes", "1K", "--factor", "2", "--iters", "3"])
    o = worker.build_options(args, "gloo")
    assert o.sweep == [8, 16, 32, 64, 128, 256, 512, 1024] and o.iters == 3
    assert o.checks == [8, 128, 1024]


# --------------------------------------------------------------------------- collectives, without a group


def test_pattern_sum_is_the_sum_over_ranks():
    cpu = torch.device("cpu")
    for world in (1, 2, 4, 7, base.MOD, base.MOD + 3, 2 * base.MOD + 5):
        for start in (0, 13, 5000, 800_000_000):  # the last needs int64 indices
            brute = sum(base.pattern(r, start, 64, cpu).double() for r in range(world))
            assert torch.equal(base.pattern_sum(world, start, 64, cpu).double(), brute), (world, start)
    assert base.pattern(3, 0, 1, cpu).item() == 3.0  # element 0 is the rank id


def test_nccl_tests_bandwidth_factors_and_sizes():
    n = 8
    factors = {name: registry.load(name).bus_factor(n) for name in registry.NAMES}
    assert factors["all_reduce"] == pytest.approx(2 * 7 / 8)
    for name in ("all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
                 "all_to_all", "all_to_all_single", "gather", "scatter"):
        assert factors[name] == pytest.approx(7 / 8), name
    for name in ("broadcast", "reduce", "sendrecv"):
        assert factors[name] == 1.0
    ag = registry.load("all_gather")
    count = ag.count_for(1 << 20, n)
    assert count == (1 << 20) // 4 // n and ag.size_for(count, n) == 1 << 20
    ar = registry.load("all_reduce")
    assert ar.algbw(ar.count_for(1 << 30, n), n, 0.01) == pytest.approx((1 << 30) / 1e9 / 0.01)


def test_registry_selection():
    assert registry.select(None) == registry.NAMES
    assert registry.select("sendrecv,all_reduce,all_reduce") == ["all_reduce", "sendrecv"]
    with pytest.raises(ValueError, match="bogus"):
        registry.select("all_reduce,bogus")


# --------------------------------------------------------------------------- progress inside a sweep size


class _Clock:
    """A clock the collective below moves: each call takes ``per_call`` seconds of it."""

    def __init__(self):
        self.t = 1000.0

    def monotonic(self):
        return self.t

    perf_counter = monotonic

    def time(self):
        return self.t

    def sleep(self, s):
        self.t += s


class _Sink:
    def __init__(self, clock):
        self.base, self.recs, self.clock = {}, [], clock

    def emit(self, kind, **fields):
        rec = {"type": kind, **fields, "ts": self.clock.t}
        self.recs.append(rec)
        return rec


class _Dist:
    class ReduceOp:
        MAX = "max"

    def barrier(self):
        pass

    def all_reduce(self, t, op=None):
        pass


def _sweep_records(monkeypatch, per_call, iters, warmup=1):
    clock = _Clock()
    monkeypatch.setattr(worker, "time", clock)
    coll = registry.load("all_reduce")

    class Bufs:
        output = None

        def call(self):
            clock.t += per_call

    monkeypatch.setattr(coll, "prepare", lambda ctx, count, data: Bufs(), raising=False)
    ctx = base.Ctx(rank=0, world=2, device=torch.device("cpu"), backend="gloo", local_rank=0)
    opts = worker.Options(backend="gloo", names=["all_reduce"], sweep=[1 << 18], checks=[], iters=iters,
                          warmup=warmup, check_only=False, pg_timeout=60)
    sink = _Sink(clock)
    prober = worker.Prober(torch, _Dist(), ctx, opts, sink)
    prober.sweep_one(coll, 1 << 18)
    return [r for r in sink.recs if r["type"] == "progress" and "done" in r], sink.recs[-1]


def test_a_slow_sweep_reports_the_calls_it_completed(monkeypatch):
    # 1.5 s a call (a 256 KiB all_reduce over 2 Mbit/s): every call done is reported, with its pace
    moving, last = _sweep_records(monkeypatch, per_call=1.5, iters=5)
    assert [r["done"] for r in moving] == [1, 2, 3, 4, 5, 6]
    assert all(r["collective"] == "all_reduce" and r["phase"] == "sweep" and r["iters"] == 5 for r in moving)
    assert moving[-1]["rank_time_us"] == 1.5e6 and moving[-1]["busbw"] > 0
    assert last["type"] == "result" and last["status"] == "ok"
    # what results.py keeps of them: every field is one it knows
    kept = results.read_records([__import__("json").dumps(dict(r, rank=0)) for r in moving])
    assert [r["done"] for r in kept] == [1, 2, 3, 4, 5, 6]


def test_a_fast_sweep_sends_no_progress_records_and_a_long_one_thins_them(monkeypatch):
    moving, _ = _sweep_records(monkeypatch, per_call=0.001, iters=200)
    assert moving == []
    moving, _ = _sweep_records(monkeypatch, per_call=1.0, iters=2000)
    # 2000 s of calls: fewer than 64 records, spread ever wider (an eighth of the time run so far)
    assert 8 < len(moving) <= worker.PROGRESS_MAX
    assert moving[1]["ts"] - moving[0]["ts"] == 1.0 and moving[-1]["ts"] - moving[-2]["ts"] > 100
