"""``nccldiag isolate --launcher srun`` on a real Slurm (Debian's munge, slurmctld, slurmd), 4 nodes.

Each job of a round is one srun step inside the one allocation, the steps of
a round side by side. A healthy run inside ``salloc`` with sshd stopped on
every node (no SSH at all) clears every node; a rate-limited node is named
from a login node that asks Slurm for the allocation; inside an
allocation, with hosts given by address, a job that hangs is stopped at the
round's timeout, named, its step cancelled and nothing of it left.
"""
from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import List

from tests.integration.helpers import load_json, records, timed, wait_for
from tests.integration.vslurm import vslurm_fixture

slurm = vslurm_fixture(n=4, prefix="ncdr", subnet="10.213.77", ctld_port=6877)
NODES = [f"ncdr{i:02d}" for i in range(1, 5)]
# gloo at 64 KiB; a 1 Mbit/s node runs its pairs at about 0.0001 GB/s, healthy pairs here at 0.01 GB/s and
# more: the fraction leaves the healthy pairs clear of the threshold even with half of the pairs slow
ARGS = ["--launcher", "srun", "--size", "64K", "--fraction", "0.1"]
TIMEOUT = 60


def _left(run_id: str) -> List[str]:
    """Processes of any job of the run still alive (every node shares this machine's PID namespace)."""
    assert run_id and "'" not in run_id
    out = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            words = env.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(w.startswith(f"NCCLDIAG_RUN={run_id}-".encode()) for w in words):
            try:
                cmd = (env.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                cmd = "?"
            out.append(f"{env.parent.name} {cmd.strip()}")
    return out


def _steps(slurm) -> str:
    return slurm.run(["squeue", "--steps", "-h", "-o", "%i %j"]).stdout


def _jobs(data):
    return [j for rnd in data["rounds"] for j in rnd["jobs"]]


def test_healthy_inside_salloc_with_sshd_stopped_clears_every_node(slurm, tmp_path):
    """Hosts from SLURM_JOB_NODELIST; every command a Slurm step (sshd is stopped everywhere); the steps of a
    round run side by side."""
    for n in NODES:
        slurm.vc.fault(n, "sshd-stop")
    try:
        out = tmp_path / "iso.json"
        inner = (f"echo NODES=$SLURM_JOB_NODELIST; {shlex.quote(sys.executable)} -m nccldiag isolate "
                 + " ".join(ARGS) + f" --timeout {TIMEOUT} -o {shlex.quote(str(tmp_path / 'run'))} "
                 f"--json {shlex.quote(str(out))} >/dev/null 2>{shlex.quote(str(tmp_path / 'err'))}; echo RC=$?")
        t0 = time.monotonic()
        r = slurm.run(["salloc", "-N", "4", "--exclusive", "--immediate=30", "sh", "-c", inner], timeout=400)
        took = time.monotonic() - t0
    finally:
        for n in NODES:
            slurm.vc.fault(n, "sshd-start")
    err = (tmp_path / "err").read_text() if (tmp_path / "err").exists() else ""
    assert "RC=0" in r.stdout, r.stdout + r.stderr + err
    data = load_json(out)
    assert data["launcher"] == "srun" and data["hosts"] == NODES
    assert [v["verdict"] for v in data["nodes"]] == ["ok"] * 4
    assert [rnd["stage"] for rnd in data["rounds"]] == ["alone", "pairs", "pairs", "pairs", "all"]
    assert data["findings"][-1]["check"] == "isolate.summary"
    # every job ran through srun, one task per rank, on exactly its nodes
    recs = records(tmp_path / "run" / "records.jsonl")
    for j in _jobs(data):
        starts = [x for x in recs if x.get("type") == "start" and x["setting"].startswith(f"r{j['round']}-")
                  and x["setting"].endswith("-" + "+".join(j["nodes"]))]
        assert sorted(x["host"] for x in starts) == sorted(j["nodes"]), j
        assert all(x["bootstrap"] == "slurm" for x in starts)
        assert j["status"] == "ok" and j["busbw"] is not None or j["stage"] == "alone", j
    # the counters were read around every round on every node of it (one srun step each time, no SSH)
    for rnd in data["rounds"]:
        names = {n for j in rnd["jobs"] for n in j["nodes"]}
        got = data["counters"][str(rnd["index"])]
        assert set(got) == names and all("tcp.OutSegs" in got[n] for n in names), (rnd["index"], got)
    # side by side: a round of several jobs took less than its jobs one after another
    for rnd in data["rounds"]:
        if len(rnd["jobs"]) > 1:
            assert rnd["elapsed_s"] < sum(j["elapsed"] for j in rnd["jobs"]), rnd
    assert took < 5 * (TIMEOUT + 30)
    assert _left(data["run_id"]) == []
    assert data["run_id"] not in _steps(slurm)


def test_rate_limited_node_named_from_a_login_node(slurm, tmp_path):
    """--nodes 4: nccldiag asks Slurm for the allocation, names the slow node, clears the others, releases it."""
    slow = "ncdr03"
    slurm.vc.fault(slow, "rate", "1mbit", "all")
    try:
        out = tmp_path / "iso.json"
        r, took = timed(["isolate", *ARGS, "--nodes", "4", "--timeout", str(TIMEOUT), "-o", str(tmp_path / "run"),
                         "--json", str(out)], timeout=600)
    finally:
        slurm.vc.fault(slow, "clear")
    assert out.exists(), r.stdout + r.stderr
    data = load_json(out)
    assert r.returncode == 1, r.stdout + r.stderr
    verdicts = {v["node"]: v for v in data["nodes"]}
    assert verdicts[slow]["verdict"] == "bad" and verdicts[slow]["cls"] == "slow node", verdicts[slow]
    assert any("busbw" in e and "<" in e for e in verdicts[slow]["evidence"])
    for n in NODES:
        if n != slow:
            assert verdicts[n]["verdict"] == "ok", verdicts[n]
    assert [rnd["stage"] for rnd in data["rounds"][:4]] == ["alone", "pairs", "pairs", "pairs"]
    assert max(j["elapsed"] for j in _jobs(data)) < TIMEOUT + 20
    assert "slow node" in r.stdout and "through srun" in r.stdout
    # the allocation nccldiag asked for is gone, and no step or process of the run is left
    wait_for(lambda: slurm.run(["squeue", "-h", "-o", "%i"]).stdout.strip() == "", 30, "the allocation to end")
    assert _left(data["run_id"]) == []


def test_hanging_job_cancelled_at_the_round_timeout_and_named(slurm, tmp_path):
    """Inside an allocation, hosts given by address: ncdr02's interpreter hangs when asked to run the worker, so
    its round-0 step is stopped at --timeout, cancelled, and the node named."""
    from nccldiag.slurm import client, commands

    wrapper = "/tmp/ncdr-python"  # each node's /tmp is its own
    # written for this test: an interpreter that runs everything but the probe's worker, which it never starts
    hang = (f"#!/bin/sh\ncase \"$*\" in *nccldiag.node.worker*) exec sleep 6137 ;; esac\n"
            f"exec {shlex.quote(sys.executable)} \"$@\"\n")
    slurm.vc.exec("ncdr01", ["ln", "-sfn", sys.executable, wrapper])
    slurm.vc.exec("ncdr02", ["sh", "-c", f"printf '%s' {shlex.quote(hang)} > {wrapper}; chmod +x {wrapper}"])
    good, bad = slurm.vc.address("ncdr01"), slurm.vc.address("ncdr02")
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{good}\n{bad}\n")
    timeout = 20
    alloc = client.allocate(commands.AllocRequest(nodelist="ncdr[01-02]", wait=30))
    try:
        out = tmp_path / "iso.json"
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "nccldiag", "isolate", str(hostfile), *ARGS, "--python", wrapper,
                            "--timeout", str(timeout), "-o", str(tmp_path / "run"), "--json", str(out)],
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                           env={**slurm.env, "SLURM_JOB_ID": alloc.job, "NO_COLOR": "1", "COLUMNS": "200"})
        took = time.monotonic() - t0
        assert out.exists(), r.stdout + r.stderr
        data = load_json(out)
        assert r.returncode == 1, r.stdout + r.stderr
        assert data["hosts"] == [good, bad]
        (r0,) = [rnd for rnd in data["rounds"] if rnd["stage"] == "alone"]
        jobs = {j["nodes"][0]: j for j in r0["jobs"]}
        assert jobs[good]["status"] == "ok"
        hung = jobs[bad]
        assert hung["status"] == "hang" and hung["kind"] != "ok", hung
        assert timeout - 1 <= hung["elapsed"] < timeout + 15, hung
        assert any("were up" in e for e in hung["evidence"]), hung
        verdict = {v["node"]: v for v in data["nodes"]}[bad]
        assert verdict["verdict"] == "bad" and verdict["cls"] == "fails alone (hang)", verdict
        assert took < timeout + 90, took
        # its step was cancelled: Slurm lists none of the run's steps, and no process of it is left
        assert data["run_id"] not in _steps(slurm)
        assert _left(data["run_id"]) == []
        assert not subprocess.run(["pgrep", "-f", "^sleep 6137$"], capture_output=True, timeout=10).stdout
    finally:
        alloc.release()
        for n in ("ncdr01", "ncdr02"):
            slurm.vc.exec(n, ["rm", "-f", wrapper])


def test_end_steps_cancels_a_running_step_by_name(slurm):
    """What nccldiag does with a step that did not end by itself: scancel by name until squeue lists none."""
    from nccldiag.slurm import client, commands

    alloc = client.allocate(commands.AllocRequest(nodes=1, wait=30))
    name = "nccldiag-test-endsteps"
    proc = subprocess.Popen(["srun", f"--jobid={alloc.job}", "--overlap", f"--job-name={name}", "-N", "1",
                             "sleep", "6139"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=slurm.env)
    try:
        wait_for(lambda: name in _steps(slurm), 30, "the step to start")
        t0 = time.monotonic()
        assert client.end_steps(lambda n: n == name, wait=30) == []
        assert time.monotonic() - t0 < 30
        assert name not in _steps(slurm)
        assert proc.wait(30) is not None  # srun ends with its step
        wait_for(lambda: not subprocess.run(["pgrep", "-f", "^sleep 6139$"], capture_output=True,
                                            timeout=10).stdout, 30, "the step's process to end")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        alloc.release()
