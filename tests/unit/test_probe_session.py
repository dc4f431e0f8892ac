"""``nccldiag probe`` through its whole path on this machine (local launcher, real torchrun, gloo)."""
import glob
import os
import subprocess
import time

import pytest

from click.testing import CliRunner

from nccldiag.cli import main
from nccldiag.probe import session
from nccldiag.report import probe_report
from tests.signals import ctrl_c_reaches


# The run's deadline counts from the launch, so it also covers torch's start-up in every rank: most of a minute
# on a loaded 2-core machine. A test that is not about the deadline gives one far beyond that; the run ends by
# itself when its collectives are done.
RUN_BOUND = 600


def run_dirs():
    """The run directories in the temporary directory (``nccldiag-<time>-<hex>``, rundir.new_run_id): what a probe
    stages; not the temporary directories of the project's benchmarks or tests, which other runs may make
    meanwhile."""
    import tempfile

    return set(glob.glob(os.path.join(tempfile.gettempdir(), "nccldiag-[0-9]*-*")))


def run_local(tmp_path, *extra, timeout=RUN_BOUND):
    opts = session.ProbeOptions(launcher="local", backend="gloo", nproc_per_node=2, timeout=timeout,
                                collectives="all_reduce,broadcast,all_gather", max_bytes=4096, iters=2,
                                out_dir=str(tmp_path / "run"), extra_worker_args=list(extra))
    t0 = time.monotonic()
    report = session.run([], opts)
    return report.exit_code, probe_report.to_json(report), time.monotonic() - t0


def rebuilt_equals_live(tmp_path, data) -> None:
    """The run directory the run kept, rendered again without its report.json (as after a crash), says what the
    live run said: only the marks of a rebuilt report differ."""
    import json

    from nccldiag.report import rebuild
    from nccldiag.report.jsonout import dumps

    live = json.loads(dumps(data))
    again = rebuild.load(str(tmp_path / "run"))
    assert again["interrupted"] is True and again["exit_code"] == live["exit_code"]
    only = ("elapsed_s", "generated_at", "interrupted", "note", "exit_code")
    assert {k: v for k, v in again.items() if k not in only} == {k: v for k, v in live.items() if k not in only}


def no_probe_processes(run_id):
    """Processes of probe run ``run_id`` still alive here (they carry NCCLDIAG_RUN=<id>); other runs are not ours."""
    assert run_id
    want = f"NCCLDIAG_RUN={run_id}".encode()
    left = []
    for env in glob.glob("/proc/[0-9]*/environ"):  # read here: one process per PID would take minutes on a busy machine
        try:
            with open(env, "rb") as fh:
                if want in fh.read().split(b"\0"):
                    left.append(env.split("/")[2])
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return [p for p in left if p != str(os.getpid())]


def start_probe(tmp_path):
    """A long local gloo probe in a process of its own, once its ranks report: ``(process, records file, run id)``."""
    import sys

    state = tmp_path / "state"
    env = {**os.environ, "XDG_STATE_HOME": str(state), "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "nccldiag", "probe", "--backend", "gloo", "--nproc-per-node", "2",
                             "--iters", "2000", "--max-bytes", "1M", "--timeout", str(RUN_BOUND)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_reaches)
    # a guard against a probe that never starts, not a verdict: torch's start-up takes most of a minute under load
    deadline = time.monotonic() + 300
    records = None
    while time.monotonic() < deadline and records is None:
        found = list(state.glob("nccldiag/probe/*/records.jsonl"))
        if found and '"type": "result"' in found[0].read_text():
            records = found[0]
        time.sleep(0.1)
    assert records is not None, "the probe never reported a result"
    run_id = records.parent.name
    assert no_probe_processes(run_id), "the ranks are running"
    return proc, records, run_id


def test_wrong_result_is_reported_on_the_corrupted_rank(tmp_path):
    code, data, _ = run_local(tmp_path, "--corrupt-rank", "1")
    assert code == 1
    (setting,) = data["settings"]
    ar = setting["collectives"]["all_reduce"]
    assert ar["status"] == "wrong" and ar["ranks_wrong"] == [1]
    msgs = [f["message"] for f in setting["findings"] if f["check"] == "probe.all_reduce"]
    assert msgs and "wrong result on rank 1" in msgs[0]
    rebuilt_equals_live(tmp_path, data)


def test_a_stalled_rank_is_a_hang_named_and_bounded(tmp_path):
    # the hang is found by the ranks' own per-collective deadline (--pg-timeout), counted from when they entered
    # the broadcast, not by the run's deadline, which also counts their start-up; 15 s also covers the start-up
    # skew between the two ranks at init on a loaded machine
    code, data, elapsed = run_local(tmp_path, "--stall-rank", "1", "--stall-in", "broadcast", "--pg-timeout", "15")
    assert code == 1
    (setting,) = data["settings"]
    # bounded: the stalled rank (it would wait an hour) did not hold the run until the run's deadline
    assert setting["timed_out"] is False and elapsed < RUN_BOUND
    bc = setting["collectives"]["broadcast"]
    assert bc["status"] == "hang" and bc["ranks_hung"] == [1]
    assert setting["collectives"]["all_reduce"]["status"] == "ok"
    assert no_probe_processes(data["run_id"]) == []
    rebuilt_equals_live(tmp_path, data)


def test_dry_run_and_usage_errors(tmp_path):
    import glob
    import tempfile

    before = run_dirs()
    cli = CliRunner()
    r = cli.invoke(main, ["probe", "--dry-run", "--backend", "gloo", "-o", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    assert "nccldiag.node.torchrun" in r.output and "--standalone" in r.output
    # no side effect anywhere: no run directory, no output directory
    assert run_dirs() == before
    assert not (tmp_path / "d").exists()
    # remote hosts are not contacted: names that resolve nowhere still give their commands at once
    t0 = time.monotonic()
    r = cli.invoke(main, ["probe", "--dry-run", "-w", "nosuch-ncd1.invalid,nosuch-ncd2.invalid", "--connect-timeout", "20"])
    assert r.exit_code == 0, r.output
    assert "# default on nosuch-ncd2.invalid" in r.output and "--node-rank=1" in r.output
    assert "no node was contacted" in r.output
    assert time.monotonic() - t0 < 10
    r = cli.invoke(main, ["probe", "--launcher", "mpirun"])
    assert r.exit_code == 2 and "needs hosts" in r.output
    r = cli.invoke(main, ["probe", "--setting", "NCCL_P2P_DISABLE=1;rm -rf /", "--dry-run"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    r = cli.invoke(main, ["probe", "--max-bytes", "lots", "--dry-run"])
    assert r.exit_code == 2 and "size 'lots'" in r.output


@pytest.mark.parametrize("signame,code,word", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated"),
                                               ("SIGHUP", 129, "hung up")])
def test_ctrl_c_kills_the_run_everywhere_and_leaves_nothing(tmp_path, signame, code, word):
    """SIGINT, SIGTERM or SIGHUP (the terminal closed) while the ranks run: exit 130/143/129, no process of the
    run left, no run directory left. SIGHUP took its default action before: no word, no clean-up of its own."""
    import signal

    proc, _records, run_id = start_probe(tmp_path)
    proc.send_signal(getattr(signal, signame))
    # stopped long before its own deadline (RUN_BOUND); the clean-up is one round trip bounded by 15 s
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == code and word in err and "Traceback" not in err, err
    assert no_probe_processes(run_id) == []
    assert not list(tmp_path.parent.glob(f"{run_id}-*")) and not list(__import__("glob").glob(f"/tmp/{run_id}-*"))


def test_kill_9_of_nccldiag_leaves_no_rank_and_no_run_directory(tmp_path):
    """nccldiag killed with SIGKILL mid-run: its watchdog kills the ranks and removes the run directory."""
    import glob
    import signal
    import tempfile

    proc, records, run_id = start_probe(tmp_path)
    assert glob.glob(os.path.join(tempfile.gettempdir(), f"{run_id}-*")), "the run directory exists"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    t0 = time.monotonic()
    # the watchdog polls once a second; the bound is a guard for a loaded machine, the loop ends when all is gone
    while time.monotonic() - t0 < 120 and (no_probe_processes(run_id)
                                           or glob.glob(os.path.join(tempfile.gettempdir(), f"{run_id}-*"))):
        time.sleep(0.2)
    assert no_probe_processes(run_id) == []
    assert not glob.glob(os.path.join(tempfile.gettempdir(), f"{run_id}-*"))
    # the records that completed before the kill are still there
    assert '"type": "result"' in records.read_text()


def test_a_setting_or_collective_typo_is_refused_before_any_node_is_contacted():
    """Before, a --setting typo was found after the run directories were staged on every node."""
    from nccldiag.inventory import Host
    from nccldiag.model.errors import UsageError

    hosts = [Host("nosuch-ncd1.invalid"), Host("nosuch-ncd2.invalid")]
    for bad in (dict(custom=["NCCL_P2P_LEVEL"]), dict(custom=["NCCL-IB-HCA=mlx5_0"]),
                dict(collectives="all_reduse"), dict(backend="nccl", custom=["NCCL_P2P_DISABLE=1"])):
        opts = session.ProbeOptions(launcher="torchrun", **bad)
        t0 = time.monotonic()
        with pytest.raises(UsageError):
            session.run(hosts, opts)
        assert time.monotonic() - t0 < 5  # no name was looked up, no connection tried


def test_a_failure_after_staging_still_removes_the_run_directory(tmp_path, monkeypatch):
    """A full disk where the run directory goes (here: writing run.json fails) after the local launcher made its
    run directory: a clear error, and no run directory or process left."""
    import glob
    import tempfile

    from nccldiag import rundir
    from nccldiag.model.errors import UsageError

    def full(path, meta):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rundir, "create", full)
    before = run_dirs()
    opts = session.ProbeOptions(launcher="local", backend="gloo", nproc_per_node=2, timeout=60,
                                collectives="all_reduce", out_dir=str(tmp_path / "run"))
    with pytest.raises(UsageError, match="No space left on device"):
        session.run([], opts)
    assert run_dirs() == before
