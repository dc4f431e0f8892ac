"""nccldiag with a real Slurm (Debian's munge, slurmctld, slurmd) on an 8-node virtual cluster.

Inventory from an allocation, ``--transport srun`` with sshd stopped,
``--launcher srun``, a DOWN node, a node that goes silent (the step is cut
off, the node named), an allocation not granted in time, ``--drain`` and
``--resume-healthy``, and the health check draining its own node.
"""
from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time

import pytest

from tests.integration.helpers import busy_cpus, nccldiag, records, wait_for
from tests.integration.vcluster import REPO
from tests.integration.vslurm import vslurm_fixture

slurm = vslurm_fixture(n=8, prefix="ncdl", subnet="10.213.74")

PY_LINK = "/tmp/ncdl-python"  # each node's /tmp is its own: present on some nodes only


def _py_link(slurm, nodes, target=sys.executable):
    for n in nodes:
        r = slurm.vc.exec(n, ["ln", "-sfn", target, PY_LINK])
        assert r.returncode == 0, r.stderr


def _py_unlink(slurm, nodes):
    for n in nodes:
        slurm.vc.exec(n, ["rm", "-f", PY_LINK])


def _report(path):
    return json.loads(path.read_text())


def _by_host(report):
    return {n["host"]: n for n in report["nodes"]}


def test_vslurm_nodes_registered_under_their_own_names(slurm):
    assert slurm.states() == {f"ncdl{i:02d}": "idle" for i in range(1, 9)}
    r = slurm.run(["srun", "-N", "2", "-w", "ncdl03,ncdl07", "--label", "hostname"], timeout=60)
    assert sorted(r.stdout.split()) == ["0:", "1:", "ncdl03", "ncdl07"]


def test_check_and_probe_inside_salloc(slurm, tmp_path):
    """Hosts come from the allocation (SLURM_JOB_NODELIST); the probe runs 2 nodes x 2 ranks through srun."""
    out = tmp_path / "check.json"
    out_srun = tmp_path / "check-srun.json"
    rec_dir = tmp_path / "probe"
    inner = (
        f"echo NODES=$SLURM_JOB_NODELIST; "
        f"{shlex.quote(sys.executable)} -m nccldiag check --mesh none --only system --json {shlex.quote(str(out))} "
        f"--ssh-config {shlex.quote(str(slurm.vc.ssh_config))} >/dev/null; echo CHECK_RC=$?; "
        f"{shlex.quote(sys.executable)} -m nccldiag check --transport srun --only system "
        f"--json {shlex.quote(str(out_srun))} >/dev/null; echo SRUN_RC=$?; "
        f"{shlex.quote(sys.executable)} -m nccldiag probe --launcher srun --nproc-per-node 2 --settings default "
        f"--collectives all_reduce --max-bytes 64K --timeout 90 -o {shlex.quote(str(rec_dir))} >/dev/null; "
        f"echo PROBE_RC=$?"
    )
    t0 = time.monotonic()
    r = slurm.run(["salloc", "-N", "2", "--exclusive", "--immediate=30", "sh", "-c", inner], timeout=240)
    took = time.monotonic() - t0
    assert "CHECK_RC=0" in r.stdout, r.stdout + r.stderr
    nodelist = r.stdout.split("NODES=")[1].split()[0]
    hosts = slurm.run(["scontrol", "show", "hostnames", nodelist]).stdout.split()
    assert len(hosts) == 2
    assert [n["host"] for n in _report(out)["nodes"]] == hosts
    assert "SRUN_RC=0" in r.stdout, r.stdout + r.stderr  # a step inside the allocation (--jobid, --overlap)
    assert [n["host"] for n in _report(out_srun)["nodes"]] == hosts
    assert "PROBE_RC=0" in r.stdout, r.stdout + r.stderr
    recs = records(rec_dir / "records.jsonl")
    starts = [x for x in recs if x.get("type") == "start"]
    assert sorted(x["rank"] for x in starts) == [0, 1, 2, 3]
    assert {x["host"] for x in starts} == set(hosts)
    assert all(x.get("bootstrap") == "slurm" for x in starts)
    results = [x for x in recs if x.get("type") == "result" and x.get("collective") == "all_reduce"]
    assert results and all(x["status"] == "ok" for x in results)
    assert took < 200


def test_probe_inside_a_default_allocation_of_one_task_per_node(slurm, tmp_path):
    """``salloc -N 2`` without --exclusive grants 1 CPU, so 1 task, per node (CR_CPU). The probe runs the ranks the
    allocation grants; asked for more ranks than that, it says before launching what to ask salloc for."""
    rec_dir = tmp_path / "probe"
    out = tmp_path / "probe.json"
    py = shlex.quote(sys.executable)
    inner = (
        "echo CPUS=$SLURM_JOB_CPUS_PER_NODE TASKS=$SLURM_TASKS_PER_NODE; "
        f"{py} -m nccldiag probe --launcher srun --backend gloo --settings default --collectives all_reduce "
        f"--max-bytes 64K --timeout 90 -o {shlex.quote(str(rec_dir))} --json {shlex.quote(str(out))} >/dev/null; "
        "echo PROBE_RC=$?; "
        f"{py} -m nccldiag probe --launcher srun --backend gloo --nproc-per-node 2 --settings default "
        "--collectives all_reduce --max-bytes 64K --timeout 90; echo ASKED_RC=$?"
    )
    r = slurm.run(["salloc", "-N", "2", "--immediate=30", "sh", "-c", inner], timeout=240)
    said = r.stdout + r.stderr
    assert "CPUS=1(x2)" in r.stdout, said  # the default allocation this test is about
    assert "PROBE_RC=0" in r.stdout, said
    starts = [x for x in records(rec_dir / "records.jsonl") if x.get("type") == "start"]
    assert sorted(x["rank"] for x in starts) == [0, 1] and len({x["host"] for x in starts}) == 2, starts
    assert _report(out)["nproc_per_node"] == 1
    # an explicit rank count the allocation cannot hold: refused before any step, with the salloc that holds it
    assert "ASKED_RC=2" in r.stdout, said
    assert "salloc" in r.stderr and "--ntasks-per-node=2" in r.stderr, said
    assert "Traceback" not in said


def test_transport_srun_with_sshd_stopped_on_all_nodes(slurm, tmp_path):
    nodes = slurm.vc.hosts
    for n in nodes:
        slurm.vc.fault(n, "sshd-stop")
    try:
        ssh_out = tmp_path / "ssh.json"
        r = nccldiag(["check", "-w", "ncdl01", "--only", "system", "--mesh", "none", "--connect-timeout", "3",
                      "--ssh-config", str(slurm.vc.ssh_config), "--json", str(ssh_out)], timeout=60)
        assert r.returncode == 3 and _report(ssh_out)["nodes"][0]["reachable"] is False  # SSH is really off
        out = tmp_path / "srun.json"
        t0 = time.monotonic()
        r = nccldiag(["check", "--transport", "srun", "-w", "ncdl[01-08]", "--json", str(out)], timeout=180)
        took = time.monotonic() - t0
        assert r.returncode == 0, r.stdout + r.stderr
        rep = _report(out)
        assert [n["host"] for n in rep["nodes"]] == nodes
        for n in rep["nodes"]:
            assert n["reachable"] and n["status"] in ("ok", "warn"), n
            collect = next(f for f in n["findings"] if f["check"] == "ssh.collect")
            assert collect["message"].startswith("srun (no SSH)")
            system = next(f for f in n["findings"] if f["check"] == "system.basic")
            assert system["status"] == "ok"
        assert took < 120
        # collect goes the same way: a bundle of every node, judged again from disk
        bundle = tmp_path / "bundle"
        r = nccldiag(["collect", "--transport", "srun", "-w", "ncdl[01-08]", "--only", "system", "-o", str(bundle)],
                     timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        assert sorted(p.name for p in bundle.iterdir() if p.is_dir()) == nodes
        assert json.loads((bundle / "_bundle.json").read_text())["transport"] == "srun"
        again = tmp_path / "again.json"
        r = nccldiag(["check", "--bundle", str(bundle), "--json", str(again)], timeout=120)
        assert r.returncode == 0 and [n["host"] for n in _report(again)["nodes"]] == nodes
    finally:
        for n in nodes:
            slurm.vc.fault(n, "sshd-start")


def test_down_node_is_unchecked_and_never_drained(slurm, tmp_path):
    slurm.set_state("ncdl08", "down", "test: powered off for repair")
    try:
        out = tmp_path / "c.json"
        r = nccldiag(["check", "--transport", "srun", "-w", "ncdl[07-08]", "--only", "system", "--drain",
                      "--json", str(out)], timeout=120)
        assert r.returncode == 3, r.stdout + r.stderr
        nodes = _by_host(_report(out))
        assert nodes["ncdl07"]["status"] in ("ok", "warn")
        down = nodes["ncdl08"]
        assert down["reachable"] is False and down["status"] == "error"
        f = next(f for f in down["findings"] if f["status"] == "error")
        assert f["check"] == "ssh.slurm-unavailable" and "DOWN" in f["message"]
        assert _report(out)["slurm"]["applied"] == []
        assert slurm.reasons()["ncdl08"] == "test: powered off for repair"
        assert "ncdl07" not in slurm.reasons()
    finally:
        slurm.restore("ncdl08")


def test_silent_node_is_cut_off_and_named(slurm, tmp_path):
    """One node's collection hangs: the step stops once it has been silent for --command-timeout, the others are judged."""
    hang = "/tmp/ncdl-hang"
    script = "#!/bin/sh\nexec sleep 6131\n"  # written for this test: an interpreter that never answers
    for n in ("ncdl05", "ncdl06"):
        slurm.vc.exec(n, ["sh", "-c", f"printf '%s' {shlex.quote(script)} > {hang}; chmod +x {hang}"], timeout=10)
    _py_link(slurm, ["ncdl05"])
    slurm.vc.exec("ncdl06", ["ln", "-sfn", hang, PY_LINK])
    try:
        out = tmp_path / "c.json"
        t0 = time.monotonic()
        r = nccldiag(["check", "--transport", "srun", "-w", "ncdl[05-06]", "--only", "python", "--python", PY_LINK,
                      "--command-timeout", "4", "--json", str(out)], timeout=120)
        took = time.monotonic() - t0
        nodes = _by_host(_report(out))
        assert nodes["ncdl05"]["status"] in ("ok", "warn"), nodes["ncdl05"]
        slow = nodes["ncdl06"]
        assert slow["status"] in ("error", "fail")
        text = json.dumps(slow["findings"])
        assert "no output for 4 s" in text
        assert took < 4 * 4 + 40, took  # cut off at silence, well before the whole-run bound and the sleep
        assert r.returncode in (1, 3)
        # the step was cancelled: nothing of it is left running (the sleep's argument is this test's own)
        wait_for(lambda: not subprocess.run(["pgrep", "-f", "^sleep 6131$"], capture_output=True, timeout=10).stdout,
                 30, "the cut-off step's processes to end")
        wait_for(lambda: "nccldiag-" not in slurm.run(["squeue", "--steps", "-h", "-o", "%j"]).stdout, 30,
                 "the cut-off step to leave squeue")
    finally:
        _py_unlink(slurm, ["ncdl05", "ncdl06"])


def test_probe_step_past_its_timeout_is_killed_and_the_hung_rank_named(slurm, tmp_path):
    """A rank stalls inside broadcast: the setting ends at --timeout, the hang is named, nothing of the step is left."""
    from nccldiag.inventory import Host
    from nccldiag.probe import session
    from nccldiag.report import probe_report
    from nccldiag.slurm import client, commands

    alloc = client.allocate(commands.AllocRequest(nodes=2, wait=30))
    try:
        opts = session.ProbeOptions(launcher="srun", backend="gloo", nproc_per_node=2, timeout=25,
                                    collectives="all_reduce,broadcast", max_bytes=4096, iters=2,
                                    out_dir=str(tmp_path / "run"), slurm_job=alloc.job,
                                    extra_worker_args=["--stall-rank", "3", "--stall-in", "broadcast"])
        t0 = time.monotonic()
        report = session.run([Host(n) for n in alloc.nodes], opts)
        took = time.monotonic() - t0
        data = probe_report.to_json(report)
        (setting,) = data["settings"]
        assert setting["collectives"]["all_reduce"]["status"] == "ok"
        bc = setting["collectives"]["broadcast"]
        # the stalled rank is among those named (on a loaded machine its peers may still be waiting on it too)
        assert bc["status"] == "hang" and 3 in bc["ranks_hung"], bc
        # no broadcast call completed: a hang, however many all_reduce calls came before it
        assert setting["unfinished"] == "hang" and setting["verdict"] == "hang", setting["verdict"]
        assert report.exit_code == 1
        assert took < 25 + 60, took
        run_id = data["run_id"]
        for node in alloc.nodes:  # every rank of the run is gone from every node
            left = slurm.vc.exec(node, ["sh", "-c", "for p in /proc/[0-9]*; do grep -qsaz "
                                        f"'^NCCLDIAG_RUN={run_id}$' $p/environ && echo ${{p#/proc/}}; done; true"],
                                 timeout=30).stdout.split()
            assert left == [], (node, left)
        wait_for(lambda: "nccldiag-probe" not in slurm.run(["squeue", "--steps", "-h", "-o", "%j"]).stdout, 30,
                 "the probe's steps to leave squeue")
    finally:
        alloc.release()


def test_allocation_not_granted_in_time(slurm, tmp_path):
    hold = slurm.run(["salloc", "--no-shell", "--exclusive", "-w", "ncdl04", "--immediate=30"], timeout=60)
    job = hold.stderr.split("Granted job allocation ")[1].split()[0]
    try:
        t0 = time.monotonic()
        r = nccldiag(["check", "--transport", "srun", "--nodelist", "ncdl04", "--alloc-timeout", "3"], timeout=90)
        took = time.monotonic() - t0
        assert r.returncode == 3, r.stdout + r.stderr
        assert "did not grant the allocation" in r.stderr and "--alloc-timeout 3 s" in r.stderr
        assert "Traceback" not in r.stderr and "deprecated" not in r.stderr
        assert took < 3 + 30
        # the old spelling still works, with one deprecation line
        r = nccldiag(["check", "--transport", "srun", "--nodelist", "ncdl04", "--timeout", "3"], timeout=90)
        assert r.returncode == 3 and "--alloc-timeout 3 s" in r.stderr, r.stdout + r.stderr
        assert r.stderr.count("--timeout is deprecated here: use --alloc-timeout") == 1
        # the probe's --timeout is its setting's deadline, not the allocation's wait
        t0 = time.monotonic()
        r = nccldiag(["probe", "--launcher", "srun", "--nodelist", "ncdl04", "--timeout", "300",
                      "--alloc-timeout", "3"], timeout=90)
        assert r.returncode == 3 and "--alloc-timeout 3 s" in r.stderr, r.stdout + r.stderr
        assert time.monotonic() - t0 < 3 + 30
        # without an allocation of its own, a node another job holds whole is not waited for: it is not checked
        out = tmp_path / "busy.json"
        t0 = time.monotonic()
        r = nccldiag(["check", "--transport", "srun", "-w", "ncdl[03-04]", "--only", "system", "--json", str(out)],
                     timeout=120)
        assert r.returncode == 3, r.stdout + r.stderr
        nodes = _by_host(_report(out))
        assert nodes["ncdl03"]["status"] in ("ok", "warn")
        assert "allocated to other jobs" in json.dumps(nodes["ncdl04"]["findings"])
        assert time.monotonic() - t0 < 60
    finally:
        slurm.run(["scancel", job])


def test_drain_exactly_the_failing_node_given_by_address(slurm, tmp_path):
    """A hostfile of addresses; ncdl04 has no interpreter at --python: it alone is drained, with its reason."""
    hostfile = tmp_path / "hosts"
    hostfile.write_text("".join(slurm.vc.address(f"ncdl{i:02d}") + "\n" for i in range(1, 5)))
    _py_link(slurm, ["ncdl01", "ncdl02", "ncdl03"])
    try:
        out = tmp_path / "c.json"
        r = nccldiag(["check", str(hostfile), "--transport", "srun", "--only", "python", "--python", PY_LINK,
                      "--drain", "--json", str(out)], timeout=180)
        assert r.returncode == 1, r.stdout + r.stderr
        rep = _report(out)
        failing = [n["host"] for n in rep["nodes"] if n["status"] == "fail"]
        assert failing == [slurm.vc.address("ncdl04")]
        assert [a["node"] for a in rep["slurm"]["applied"]] == ["ncdl04"]
        reasons = slurm.reasons()
        assert set(reasons) == {"ncdl04"}
        assert reasons["ncdl04"].startswith("nccldiag: python.interpreter")
        assert slurm.states()["ncdl04"] in ("drained", "draining")
        assert "Slurm nodes to drain" in r.stdout and "ncdl04" in r.stdout
    finally:
        _py_unlink(slurm, ["ncdl01", "ncdl02", "ncdl03"])
        slurm.restore("ncdl04")


def test_resume_healthy_leaves_a_node_drained_by_someone_else(slurm, tmp_path):
    slurm.set_state("ncdl02", "drain", "nccldiag: python.interpreter")
    slurm.set_state("ncdl03", "drain", "admin: fan replacement")
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{slurm.vc.address('ncdl02')}\n{slurm.vc.address('ncdl03')}\n")
    _py_link(slurm, ["ncdl02", "ncdl03"])
    try:
        out = tmp_path / "c.json"
        # drained nodes run no srun step: they are checked over SSH
        r = nccldiag(["check", str(hostfile), "--only", "python", "--python", PY_LINK, "--mesh", "none",
                      "--ssh-config", str(slurm.vc.ssh_config), "--resume-healthy", "--json", str(out)], timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        applied = {a["node"]: a for a in _report(out)["slurm"]["applied"]}
        assert applied["ncdl02"]["action"] == "resume" and applied["ncdl02"]["ok"]
        assert applied["ncdl03"]["action"] == "keep"
        reasons = slurm.reasons()
        assert "ncdl02" not in reasons
        assert reasons["ncdl03"] == "admin: fan replacement"
        assert slurm.states()["ncdl02"] == "idle"
    finally:
        _py_unlink(slurm, ["ncdl02", "ncdl03"])
        for n in ("ncdl02", "ncdl03"):
            slurm.restore(n)


@pytest.mark.parametrize("machine", ["idle", "busy"])
def test_health_check_drains_its_own_node(slurm, machine):
    """As HealthCheckProgram/Prolog would run it on the node: one line, exit 1, its own node drained; the same
    on a machine whose cores are kept busy."""
    cmd = [sys.executable, "-m", "nccldiag", "check", "--health-check", "--only", "python",
           "--python", "/nonexistent/python3", "--drain"]
    try:
        with (busy_cpus() if machine == "busy" else contextlib.nullcontext()):
            r = slurm.run(["srun", "-N", "1", "-w", "ncdl06", *cmd], timeout=120, check=False)
        said = f"rc={r.returncode}\nstdout: {r.stdout!r}\nstderr: {r.stderr!r}"
        assert r.returncode == 1, said
        lines = r.stdout.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ERROR: nccldiag: Health check failed: ncdl06: python.interpreter"), said
        assert lines[0].endswith("(drained ncdl06)"), said
        assert slurm.reasons().get("ncdl06", "").startswith("nccldiag: python.interpreter")
        # healthy now (the default cheap areas): --resume-healthy returns the node
        r = subprocess.run(["nsenter", "--target", str(slurm.vc.holder_pid("ncdl06")), "--uts", "--mount", "--net",
                            "--", sys.executable, "-m", "nccldiag", "check", "--health-check", "--resume-healthy"],
                           capture_output=True, text=True, timeout=120, cwd=str(REPO),
                           env={**slurm.env, "SLURMD_NODENAME": "ncdl06",
                                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.startswith("nccldiag: ncdl06 healthy")
        assert "ncdl06" not in slurm.reasons()
    finally:
        slurm.restore("ncdl06")


def test_vslurm_up_again_and_down_leave_nothing(slurm):
    """``up`` is idempotent (a second one restarts everything), ``down`` ends every daemon; runs last."""
    first = {line.split()[0] for line in slurm.daemons()}
    slurm.up()
    assert slurm.states() == {f"ncdl{i:02d}": "idle" for i in range(1, 9)}
    second = {line.split()[0] for line in slurm.daemons()}
    assert second and not (first & second)
    slurm.down()
    wait_for(lambda: not [d for d in slurm.daemons() if "<defunct>" not in d], 20, "every Slurm daemon to exit")
    assert not (slurm.vc.state / "slurm").exists()
    slurm.up()  # the fixture's teardown takes it down once more
