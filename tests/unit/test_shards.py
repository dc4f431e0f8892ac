"""The SSH collection spread over worker processes (``--workers``): the same nodes and findings as one process,
in input order, each host reported whatever happens to its worker.

The hosts are names of one in-repo SSH server (tests/unit/sshserver.py, paramiko's server side on loopback,
running each command with /bin/sh on this machine). A stall is a read of a FIFO nobody writes, released by
the test, never a sleep.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import paramiko
import pytest

from nccldiag.areas import ssh as ssh_area
from nccldiag.areas import system
from nccldiag.collect import runner
from nccldiag.inventory import Host
from nccldiag.shards import pool
from nccldiag.transport.ssh import SSHOptions
from tests.signals import ctrl_c_reaches
from tests.unit.sshserver import SSHServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    host_key = paramiko.ECDSAKey.generate()
    client_key = paramiko.ECDSAKey.generate()
    client_key.write_private_key_file(str(d / "id_client"))
    return {"dir": d, "host": host_key, "client": client_key}


@pytest.fixture
def server(keys, tmp_path):
    """A server every host name ``n*`` reaches, and the ssh_config that says so."""
    s = SSHServer(keys["host"], keys["client"])
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{s.port} {keys['host'].get_name()} {keys['host'].get_base64()}\n")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host n*\n  HostName 127.0.0.1\n  Port {s.port}\n  User tester\n"
                   f"  IdentityFile {keys['dir'] / 'id_client'}\n"
                   f"  UserKnownHostsFile {kh}\n  GlobalKnownHostsFile /dev/null\n  IdentitiesOnly yes\n")
    s.cfg = str(cfg)
    yield s
    s.close()


def _release(fifo: Path, flag: Path) -> None:
    """Logins that have not reached the FIFO yet pass it (``flag``); those waiting on it get end of file."""
    flag.write_text("")
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no reader
        return
    os.close(fd)


def _stalled(server, tmp_path):
    fifo, flag = tmp_path / "stall", tmp_path / "released"
    os.mkfifo(fifo)
    server.login = f"test -e {flag} || cat {fifo} >/dev/null"
    return fifo, flag


def _wait_for(cond, what: str, limit: float = 60.0) -> None:
    """Polls ``cond`` until it holds (a condition of the run, not a guess at its timing), failing after ``limit``."""
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, f"gave up waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("hosts, cores, want", [(1, 2, 1), (64, 2, 1), (65, 2, 2), (1000, 2, 2), (1000, 16, 16),
                                                (200, 16, 4), (0, 4, 1)])
def test_default_workers_follow_the_hosts_and_the_cores(hosts, cores, want):
    assert pool.default_workers(hosts, cores) == want


def _check(server, tmp_path, workers: int, hosts: str = "n[01-06]"):
    out = tmp_path / f"r{workers}.json"
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "nccldiag", "check", "-w", hosts, "--ssh-config", server.cfg,
                        "--only", "system", "--mesh", "none", "--workers", str(workers), "--fanout", "4",
                        "--run-dir", str(tmp_path / f"run{workers}"), "--save", str(tmp_path / f"b{workers}"),
                        "--json", str(out)], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                       env=env)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    return json.loads(out.read_text())


def _verdicts(doc):
    return [(n["host"], n["status"], sorted((f["check"], f["status"]) for f in n["findings"]), sorted(n["facts"]))
            for n in doc["nodes"]]


def test_two_workers_report_what_one_process_reports_in_input_order(server, tmp_path):
    one = _check(server, tmp_path, 1)
    two = _check(server, tmp_path, 2)
    assert [n["host"] for n in two["nodes"]] == [f"n{i:02d}" for i in range(1, 7)]
    assert _verdicts(two) == _verdicts(one)
    assert all(n["reachable"] and n["facts"]["system"] for n in two["nodes"])
    # every node's outputs written by its worker: the run directory's and the --save bundle
    from nccldiag import bundle

    for d in ("run2/raw", "b2"):
        saved = {n.host: n for n in bundle.read_bundle(str(tmp_path / d))}
        assert sorted(saved) == [f"n{i:02d}" for i in range(1, 7)] and all(n.sections for n in saved.values())
    lines = (tmp_path / "run2" / "nodes.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["host"] for line in lines) == [f"n{i:02d}" for i in range(1, 7)]


def _opts(server, **kw):
    return runner.CollectOptions(ssh=SSHOptions(config_path=server.cfg, connect_timeout=5, use_agent=False, retries=0,
                                                command_timeout=kw.pop("command_timeout", 60)), mesh="none", **kw)


def test_the_hosts_of_a_killed_worker_are_reported_with_its_cause_and_the_run_ends(server, tmp_path):
    fifo, flag = _stalled(server, tmp_path)
    hosts = [Host(f"n{i}") for i in range(1, 5)]
    opts = _opts(server)
    script = runner.script_for([system], (), opts.mark)
    seen = []

    def on_workers(pids):
        os.kill(pids[0], signal.SIGKILL)  # the first worker's hosts: the 1st and 3rd

    judged_of = {}

    def on_node(node, judged, not_saved):
        seen.append(node.host)
        judged_of[node.host] = judged
        if len(seen) == 2:  # the killed worker's hosts are in: let the other's logins go on
            _release(fifo, flag)

    out = pool.collect(hosts, script, opts, 2, areas=[ssh_area, system], bundles=[], on_node=on_node,
                      on_workers=on_workers)
    assert [n.host for n in out] == ["n1", "n2", "n3", "n4"]
    assert sorted(seen[:2]) == ["n1", "n3"]
    for node, judged in ((n, judged_of[n.host]) for n in (out[0], out[2])):
        assert node.error["kind"] == pool.WORKER and "killed by SIGKILL" in node.error["message"], node.error
        f = next(f for f in judged.node.findings if f.area == "ssh")
        assert (f.status.value, f.check) == ("error", "ssh.worker") and "worker process" in f.message
        assert not judged.node.reachable
    for node, judged in ((n, judged_of[n.host]) for n in (out[1], out[3])):
        assert node.error is None and judged.node.reachable, node
        assert judged.node.summary and '"hostname"' in judged.facts


def test_a_worker_that_fails_is_named_with_its_last_words(server, tmp_path):
    """A worker whose job cannot be done (an area it does not know, written for this test) exits with a
    traceback: its hosts say so, the run ends."""
    hosts = [Host("n1"), Host("n2")]
    opts = _opts(server)

    class Unknown:
        NAME = "no-such-area"

    out = pool.collect(hosts, "", opts, 2, areas=[Unknown], options={}, bundles=[])
    assert [n.host for n in out] == ["n1", "n2"]
    for node in out:
        assert node.error["kind"] == pool.WORKER
        assert "exit status 1" in node.error["message"] and "KeyError" in node.error["message"], node.error


def _children(pid: int):
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


@pytest.mark.parametrize("sig, code, said", [(signal.SIGTERM, 143, b"terminated"),
                                             (signal.SIGINT, 130, b"interrupted")])
def test_sigterm_or_ctrl_c_stops_every_worker_and_the_check_ends(server, tmp_path, sig, code, said):
    fifo, flag = _stalled(server, tmp_path)
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "nccldiag", "check", "-w", "n[1-4]", "--ssh-config", server.cfg,
                             "--only", "system", "--mesh", "none", "--workers", "2",
                             "--run-dir", str(tmp_path / "run")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                            preexec_fn=ctrl_c_reaches)
    try:
        # every host's login is waiting on the FIFO: both workers are at work
        _wait_for(lambda: server.accepted >= 4, "four connections")
        workers = _children(proc.pid)
        assert len(workers) == 2, workers
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        _release(fifo, flag)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert said in err and b"Traceback" not in err, err
    _wait_for(lambda: all(_gone(p) for p in workers), "the workers to end", limit=30)


def test_collect_with_two_workers_saves_every_node(server, tmp_path):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "nccldiag", "collect", "-w", "n[1-5]", "--ssh-config", server.cfg,
                        "--only", "system", "--workers", "2", "-o", str(tmp_path / "b")], capture_output=True,
                       text=True, timeout=300, stdin=subprocess.DEVNULL, env=env)
    assert r.returncode == 0, r.stderr
    assert "collected 5 of 5 nodes" in r.stderr
    from nccldiag import bundle

    saved = bundle.read_bundle(str(tmp_path / "b"))
    assert sorted(n.host for n in saved) == [f"n{i}" for i in range(1, 6)] and all(n.sections for n in saved)


def test_only_a_live_ssh_collection_that_lets_nodes_go_is_spread():
    """srun and this machine have no SSH to spread; spec init's reference nodes are kept whole, in one process."""
    from nccldiag.sessions.collection import workers_for
    from nccldiag.inventory import Inventory

    inv = Inventory(hosts=[Host(f"n{i}") for i in range(200)])
    assert workers_for(None, inv, "ssh", True) == pool.default_workers(200)
    assert workers_for(3, inv, "ssh", True) == 3
    assert workers_for(500, Inventory(hosts=[Host("a"), Host("b")]), "ssh", True) == 2
    for kw, target, transport, release in (({"workers": 1}, inv, "ssh", True), ({"workers": 4}, inv, "srun", True),
                                           ({"workers": 4}, None, "local", True), ({"workers": 4}, inv, "ssh", False)):
        assert workers_for(kw["workers"], target, transport, release) == 1


def test_texts_the_judged_nodes_repeat_are_held_once_and_the_nodes_read_the_same():
    import pickle

    from nccldiag.areas import all_areas
    from nccldiag.model.raw import RawNode
    from nccldiag.shards.judged import Shared, judge
    from tests.unit import bundles

    def judged(host):
        sections = dict(bundles.healthy_h100(host))
        j = judge(RawNode(host=host, sections=sections, rcs={k: 0 for k in sections}, elapsed=0.1), all_areas())
        return pickle.loads(pickle.dumps(j.node))  # as a worker sends it: texts of its own

    a, b = judged("gpu001"), judged("gpu002")
    before = [[f.to_dict() for f in n.findings] for n in (a, b)], [repr(n.facts) for n in (a, b)]
    shared = Shared()
    shared.node(a)
    shared.node(b)
    assert before == ([[f.to_dict() for f in n.findings] for n in (a, b)], [repr(n.facts) for n in (a, b)])
    pairs = [(fa, fb) for fa, fb in zip(a.findings, b.findings) if fa.message == fb.message]
    assert pairs and all(fa.message is fb.message for fa, fb in pairs)
    assert a.findings[0].host == "gpu001" and b.findings[0].host == "gpu002"
    full = Shared(limit=0)  # past the bound texts are kept as they are
    c = judged("gpu003")
    full.node(c)
    assert not full.texts and [f.to_dict()["host"] for f in c.findings][:1] == ["gpu003"]


def test_one_nodes_unreadable_json_is_its_own_error_and_its_workers_other_hosts_are_judged(server, tmp_path):
    """One login (the first to run it, whichever host) answers the python_env snippet with a line nested 800
    deep (a wrapper written for this test); every other login runs the real snippet."""
    from nccldiag.areas import python as py

    bad = tmp_path / "deep.json"
    bad.write_text('{"stage": "done", "python": "3", "torch": ' + "[" * 800 + "]" * 800 + "}\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nif mkdir {tmp_path / 'once'} 2>/dev/null; then cat {bad}; exit 0; fi\n"
                       f"exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    hosts = [Host(f"n{i}") for i in range(1, 5)]
    opts = _opts(server, python=str(wrapper))
    script = runner.script_for([system, py], (), opts.mark)
    judged_of = {}
    out = pool.collect(hosts, script, opts, 2, areas=[ssh_area, system, py], bundles=[],
                       on_node=lambda node, judged, not_saved: judged_of.__setitem__(node.host, judged))
    assert [n.host for n in out] == ["n1", "n2", "n3", "n4"] and all(n.error is None for n in out), out
    checks = {h: {f.check: f for f in j.node.findings if f.area == "python"} for h, j in judged_of.items()}
    odd = [h for h, c in checks.items() if "python.output" in c]
    assert len(odd) == 1, checks
    odd = odd[0]
    f = checks[odd]["python.output"]
    assert f.status.value == "error" and "JSON nested deeper than 32 levels" in f.message
    for h, c in checks.items():
        assert judged_of[h].node.reachable and '"hostname"' in judged_of[h].facts
        if h != odd:
            assert c["python.interpreter"].status.value == "ok", c


def _hanging(keys, server, tmp_path, pattern: str):
    """A second server for the hosts ``pattern`` names, whose logins wait on a FIFO (hosts that hang), and
    ``server.cfg`` changed to send them there; the test releases the FIFO and closes the server."""
    slow = SSHServer(keys["host"], keys["client"])
    fifo = tmp_path / "hang"
    os.mkfifo(fifo)
    slow.login = f"cat {fifo} >/dev/null"
    kh = tmp_path / "known_hosts"
    kh.write_text(kh.read_text() + f"[127.0.0.1]:{slow.port} {keys['host'].get_name()} {keys['host'].get_base64()}\n")
    cfg = tmp_path / "ssh_config2"
    cfg.write_text(f"Host {pattern}\n  Port {slow.port}\n" + Path(server.cfg).read_text())
    server.cfg = str(cfg)
    return slow, fifo


def test_a_stopped_worker_is_killed_past_its_bound_and_the_hosts_it_finished_are_kept(keys, server, tmp_path):
    """n3 logs in to a second server whose login waits on a FIFO (a host that hangs); worker 0 (n1, n3) is
    stopped with SIGSTOP once n1 is in. Its bound, set small by the test once it is stopped, kills it; n3 is
    reported not checked with the reason, n1 and the other worker's hosts are kept."""
    import threading

    slow, fifo = _hanging(keys, server, tmp_path, "n3")
    hosts = [Host(f"n{i}") for i in range(1, 5)]
    opts = _opts(server, fanout=2)  # one host at a time in each worker: worker 0 does n1, then n3
    script = runner.script_for([system], (), opts.mark)
    pids, stopped, judged_of = [], threading.Event(), {}

    def on_node(node, judged, not_saved):
        judged_of[node.host] = judged
        if node.host == "n1":
            os.kill(pids[0], signal.SIGSTOP)
            stopped.set()

    def limit(job, left):
        return 1.0 if stopped.is_set() and job.index[0] == 0 else 600.0

    try:
        out = pool.collect(hosts, script, opts, 2, areas=[ssh_area, system], bundles=[], on_node=on_node,
                           on_workers=pids.extend, limit=limit)
    finally:
        _release(fifo, tmp_path / "unused")
        slow.close()
    assert [n.host for n in out] == ["n1", "n2", "n3", "n4"]
    assert stopped.is_set() and _gone(pids[0])
    for h in ("n1", "n2", "n4"):
        assert judged_of[h].node.reachable and '"hostname"' in judged_of[h].facts, h
    n3 = out[2]
    assert n3.error["kind"] == pool.WORKER and "did not finish in time" in n3.error["message"], n3.error
    assert "past its bound of 1 s for its 1 hosts left; killed" in n3.error["message"], n3.error
    [f] = [f for f in judged_of["n3"].node.findings if f.area == "ssh"]
    assert (f.status.value, f.check) == ("error", "ssh.worker") and "not checked" in f.message


def test_a_workers_bound_is_the_runs_own_deadlines_for_the_hosts_it_has_left():
    opts = runner.CollectOptions(ssh=SSHOptions(connect_timeout=10, retries=2, command_timeout=60), fanout=4)
    job = pool.Job([Host(f"n{i}") for i in range(8)], list(range(8)), "", opts, {})
    one = pool.host_bound(opts)
    assert one >= 10 * 3 + runner.login_timeout(opts.ssh) + 60 * runner.WHOLE_RUN
    # two waves of 4, each host tried twice at most, then judged; fewer hosts left, a smaller bound
    assert pool.bound(job, 8) >= 2 * 2 * one + 8 * pool.JUDGE_S
    assert pool.bound(job, 3) < pool.bound(job, 8) and pool.bound(job, 3) >= 2 * one
    meshed = pool.Job(job.hosts, job.index, "", runner.CollectOptions(ssh=opts.ssh, fanout=4, mesh_timeout=60),
                      {"n0": [f"n{i}" for i in range(1, 200)]})
    assert pool.bound(meshed, 8) > pool.bound(job, 8)  # a long node-to-node test lengthens it


def test_ctrl_c_to_the_process_group_ends_the_head_and_its_workers_once_and_keeps_the_finished_hosts(
        keys, server, tmp_path):
    """As a terminal's Ctrl-C: SIGINT to the check's whole process group, once n1 and n2 are judged and n3, n4
    hang at their login."""
    slow, fifo = _hanging(keys, server, tmp_path, "n3 n4")
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "nccldiag", "check", "-w", "n[1-4]", "--ssh-config", server.cfg,
                             "--only", "system", "--mesh", "none", "--workers", "2", "--run-dir", str(run)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
                            preexec_fn=ctrl_c_reaches, start_new_session=True)
    try:
        lines = run / "nodes.jsonl"
        _wait_for(lambda: lines.exists() and len(lines.read_text().splitlines()) >= 2, "n1 and n2 judged")
        _wait_for(lambda: slow.accepted >= 2, "n3 and n4 at their login")
        workers = _children(proc.pid)
        assert len(workers) == 2, workers
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        _release(fifo, tmp_path / "unused")
        slow.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"Error" not in err, err
    assert err.count(b"interrupted") == 1, err
    kept = sorted(json.loads(line)["host"] for line in lines.read_text().splitlines())
    assert kept[:2] == ["n1", "n2"], kept
    _wait_for(lambda: all(_gone(p) for p in workers), "the workers to end", limit=30)


def test_a_node_whose_records_cannot_be_sent_is_sent_as_its_own_error(monkeypatch):
    """A judged node that cannot be pickled (an object written for this test stands for records nested past the
    pickler's stack) travels as a node of its own error, with the cause; the worker goes on."""
    import io

    from nccldiag.model.raw import RawNode
    from nccldiag.shards import judged as judging
    from nccldiag.shards import worker

    real_judge = judging.judge

    def judge(raw, areas, options=None, spec=None):
        j = real_judge(raw, areas, options, spec)
        if raw.error is None:
            j.node.facts["system"] = lambda: None  # not picklable
        return j

    monkeypatch.setattr(judging, "judge", judge)
    job = pool.Job([Host("n1")], [7], "", _opts_plain(), {})
    frame = worker.node_frame(RawNode(host="n1", sections={"hostname": "n1\n"}), 7, [ssh_area, system], job, {})
    i, node, judged, not_saved = pool.receive(io.BytesIO(frame))
    assert i == 7 and node.host == "n1" and node.error["kind"] == pool.WORKER
    assert "could not judge it or send its records" in node.error["message"] and "Error" in node.error["message"]
    f = next(f for f in judged.node.findings if f.area == "ssh")
    assert (f.status.value, f.check) == ("error", "ssh.worker")


def _opts_plain():
    return runner.CollectOptions(ssh=SSHOptions(use_agent=False), mesh="none")
