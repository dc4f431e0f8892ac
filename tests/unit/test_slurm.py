"""Slurm's pure parts: node parsing, host matching, drain/resume plans, argv, srun output split by task."""
from __future__ import annotations

from nccldiag.slurm import commands, verdicts
from nccldiag.slurm.nodes import SlurmNode, match_hosts, parse_show_node
from nccldiag.collect import srun

# Two lines of `scontrol show node --oneliner` as printed by Slurm 22.05.8
# (Debian bookworm) on the virtual cluster of scripts/vslurm; captured, not written.
SHOW_NODE = (
    "NodeName=ncdl01 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.66 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=10.213.74.2 NodeHostName=ncdl01 "
    "Version=22.05.8 OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=21832 "
    "Sockets=4 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  "
    "BootTime=2026-11-23T20:05:35 SlurmdStartTime=2026-11-23T22:40:49 LastBusyTime=2026-11-23T22:40:52 "
    "CfgTRES=cpu=4,mem=1000M,billing=4 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s "
    "ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
    "NodeName=ncdl02 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.66 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=10.213.74.3 NodeHostName=ncdl02 "
    "Version=22.05.8 OS=Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=21832 "
    "Sockets=4 Boards=1 State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A "
    "Partitions=debug  BootTime=2026-11-23T20:05:35 SlurmdStartTime=2026-11-23T22:40:49 "
    "LastBusyTime=2026-11-23T22:40:52 CfgTRES=cpu=4,mem=1000M,billing=4 AllocTRES= CapWatts=n/a CurrentWatts=0 "
    "AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
    "Reason=nccldiag: gpu.ecc failed, x=1 [root@2026-11-23T22:42:16]\n"
)


def test_parse_show_node_real_lines():
    a, b = parse_show_node(SHOW_NODE)
    assert (a.name, a.addr, a.hostname, a.state, a.reason) == ("ncdl01", "10.213.74.2", "ncdl01", "IDLE", "")
    assert a.available and not a.drained
    assert b.state == "IDLE+DRAIN" and b.drained and not b.available
    assert b.reason == "nccldiag: gpu.ecc failed, x=1" and b.ours
    assert b.extra["OS"].startswith("Linux 6.18.44")


def test_states_down_not_responding_and_others_reason():
    n = SlurmNode("x", state="IDLE*", reason="admin: fans")
    assert not n.available and not n.drained and not n.ours
    assert not SlurmNode("x", state="DOWN").available
    assert SlurmNode("x", state="ALLOCATED").available and SlurmNode("x", state="MIXED").available


def test_match_by_name_address_and_resolved_address():
    nodes = parse_show_node(SHOW_NODE)
    got = match_hosts(["ncdl01", "10.213.74.3", "alias", "gpu7.example", "stranger"], nodes,
                      addresses={"alias": ["10.213.74.2"], "gpu7.example": ["192.0.2.9"], "stranger": []})
    assert got == {"ncdl01": "ncdl01", "10.213.74.3": "ncdl02", "alias": "ncdl01"}


def _report(hosts_status_claim):
    """A check report (CONSTRUCTED) whose nodes report the host names given: ``[(host, status, own name)]``."""
    from types import SimpleNamespace
    from nccldiag.check.engine import NodeReport
    from nccldiag.model.findings import fail, ok

    nodes = []
    for host, status, claim in hosts_status_claim:
        f = fail("python", "python.interpreter", "no interpreter") if status == "fail" else ok("system", "system.basic", "ok")
        nodes.append(NodeReport(host=host, findings=[f], facts={"system": SimpleNamespace(hostname=claim)}))
    return SimpleNamespace(nodes=nodes)


# Slurm's NodeAddr on a network this machine does not resolve (the IB names), the hostfile gives addresses
IB_NODES = [SlurmNode(f"advt0{i}", addr=f"ib-advt0{i}", hostname=f"ib-advt0{i}", state="IDLE") for i in range(1, 7)]


def test_a_node_that_claims_a_healthy_nodes_name_gets_no_node_drained(monkeypatch):
    """The failing 10.214.90.6 (advt05) reports the host name advt02: advt02 is not drained, and no host is
    matched by the name it reports."""
    from nccldiag.slurm import client, feedback

    applied = []
    monkeypatch.setattr(client, "apply", lambda actions, timeout=0: applied.extend(actions) or [])
    monkeypatch.setattr(client, "resolve_all", lambda hosts, nodes: {h: [h] for h in hosts})
    rep = _report([("10.214.90.3", "pass", "advt02"), ("10.214.90.6", "fail", "advt02")])
    section = feedback.run(rep, [], drain=True, drain_unchecked=False, resume_healthy=True, slurm_nodes=IB_NODES)
    assert section["nodes"] == {} and section["to_drain"] == [] and applied == []


def test_a_slurm_node_two_hosts_match_is_neither_drained_nor_resumed(monkeypatch):
    """Two hosts resolve to advt05's NodeAddr (a node cloned with the same address, or a stale name): the one
    failing and the other passing say nothing of which is advt05, so it is left alone, and the report says so."""
    from nccldiag.slurm import client, feedback

    nodes = [SlurmNode("advt05", addr="10.214.90.6", state="IDLE+DRAIN", reason="nccldiag: system.basic"),
             SlurmNode("advt02", addr="10.214.90.3", state="IDLE")]
    applied = []
    monkeypatch.setattr(client, "apply", lambda actions, timeout=0: applied.extend(actions) or [])
    monkeypatch.setattr(client, "resolve_all", lambda hosts, nodes: {"a4": ["10.214.90.6"], "a6": ["10.214.90.6"],
                                                                     "a2": ["10.214.90.3"]})
    rep = _report([("a4", "pass", "advt05"), ("a6", "fail", "advt05"), ("a2", "fail", "advt02")])
    section = feedback.run(rep, [], drain=True, drain_unchecked=False, resume_healthy=True, slurm_nodes=nodes)
    assert section["shared"] == {"advt05": ["a4", "a6"]}
    assert [(a.node, a.action) for a in applied] == [("advt02", "drain")]
    assert [a["node"] for a in section["to_drain"]] == ["advt02"]
    from io import StringIO
    from rich.console import Console
    from nccldiag.report.check_report import render_slurm

    out = StringIO()
    render_slurm(section, Console(file=out, width=200))
    assert "advt05 left alone: 2 hosts match it (a4, a6)" in out.getvalue()


def test_drain_exactly_failing_and_unchecked_only_when_asked():
    vs = [verdicts.NodeVerdict("a", "pass"), verdicts.NodeVerdict("b", "fail", ["gpu.ecc", "ib.port_state"]),
          verdicts.NodeVerdict("c", "unchecked", ["ssh.refused"]), verdicts.NodeVerdict("d", "fail", ["x"])]
    names = {"a": "n1", "b": "n2", "c": "n3"}  # d is no Slurm node
    plan = verdicts.to_drain(vs, names)
    assert [(a.node, a.reason) for a in plan] == [("n2", "nccldiag: gpu.ecc, ib.port_state")]
    plan = verdicts.to_drain(vs, names, drain_unchecked=True)
    assert [(a.node, a.reason) for a in plan] == [("n2", "nccldiag: gpu.ecc, ib.port_state"),
                                                  ("n3", "nccldiag: unchecked: ssh.refused")]


def test_reason_is_one_clean_short_line():
    v = verdicts.NodeVerdict("a", "fail", ["x\"; rm -rf /'`\n" + "y" * 300])
    r = verdicts.reason_for(v)
    assert r.startswith("nccldiag: x ; rm -rf /") and len(r) <= verdicts.REASON_MAX
    assert not any(c in r for c in "\"'`\n")


def test_resume_only_our_drained_nodes_that_pass():
    nodes = verdicts.index([SlurmNode("n1", state="IDLE+DRAIN", reason="nccldiag: gpu.ecc"),
                            SlurmNode("n2", state="IDLE+DRAIN", reason="admin: fan replacement"),
                            SlurmNode("n3", state="IDLE+DRAIN", reason="nccldiag: ib.port_state"),
                            SlurmNode("n4", state="IDLE")])
    vs = [verdicts.NodeVerdict("a", "pass"), verdicts.NodeVerdict("b", "pass"),
          verdicts.NodeVerdict("c", "fail", ["ib.port_state"]), verdicts.NodeVerdict("d", "pass")]
    plan = verdicts.to_resume(vs, {"a": "n1", "b": "n2", "c": "n3", "d": "n4"}, nodes)
    assert [(a.node, a.action) for a in plan] == [("n1", "resume"), ("n2", "keep"), ("n3", "keep")]
    assert "someone else" in plan[1].why


def test_argv_lists_never_a_shell():
    assert commands.drain("gpu01", "nccldiag: a b") == ["scontrol", "update", "nodename=gpu01", "state=drain",
                                                        "reason=nccldiag: a b"]
    req = commands.AllocRequest(partition="gpu", nodes=4, reservation="burnin", time="10", wait=30)
    argv = commands.salloc(req)
    assert argv[:3] == ["salloc", "--no-shell", "--exclusive"] and "--immediate=30" in argv
    assert {"--partition=gpu", "--nodes=4", "--reservation=burnin", "--time=10"} <= set(argv)
    step = commands.srun_step(["n1", "n2"], 2, 61, job="42", kill_on_bad_exit=True)
    assert {"--jobid=42", "--overlap", "--nodes=2", "--ntasks=4", "--ntasks-per-node=2", "--nodelist=n1,n2",
            "--time=2", "--kill-on-bad-exit=1"} <= set(step)
    # outside an allocation srun asks for one itself, bounded the same way
    step = commands.srun_step(["n1"], 1, 10, req=req)
    assert "--immediate=30" in step and "--partition=gpu" in step and "--jobid=42" not in step
    assert commands.minutes(1) == 1 and commands.minutes(60) == 1 and commands.minutes(61) == 2


def test_srun_labelled_output_split_by_task():
    # srun --label output, written for this test: two tasks interleaved, one unfinished
    mark = "abc123"
    lines = [
        " 1: @@nccldiag:abc123:node n2@@", " 0: @@nccldiag:abc123:node n1@@",
        " 0: @@nccldiag:abc123:begin uname@@", " 1: @@nccldiag:abc123:begin uname@@", " 0: Linux 6.1",
        " 1: Linux 6.2", " 0: ", " 0: @@nccldiag:abc123:end uname rc=0@@", " 0: ", " 0: @@nccldiag:abc123:done@@",
        "10: @@nccldiag:other:node n9@@", "srun: warning: not a task line",
    ]
    tasks = srun.demux(lines, mark)
    assert tasks[0].node == "n1" and tasks[0].done and "Linux 6.1" in tasks[0].lines
    assert tasks[1].node == "n2" and not tasks[1].done
    assert tasks[10].node == ""  # another run's mark names nothing


def test_worker_maps_srun_variables_to_torch_distributed():
    from nccldiag.node.worker import slurm_env

    env = {"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1", "SLURM_NODEID": "1",
           "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "MASTER_ADDR": "10.0.0.2", "MASTER_PORT": "29500"}
    got = slurm_env(env)
    assert got == {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1",
                   "MASTER_ADDR": "10.0.0.2", "MASTER_PORT": "29500"}
    env.update(SLURM_STEP_TASKS_PER_NODE="3,1", SLURM_NODEID="1")
    assert slurm_env(env)["LOCAL_WORLD_SIZE"] == "1"
    import pytest

    with pytest.raises(ValueError, match="SLURM_PROCID"):
        slurm_env({"MASTER_ADDR": "x", "MASTER_PORT": "1"})


def _cli(args, **env):
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    clean.update(env)
    return subprocess.run([sys.executable, "-m", "nccldiag", *args], capture_output=True, text=True, timeout=120,
                          env=clean, stdin=subprocess.DEVNULL)


def test_cli_usage_errors_name_the_option():
    r = _cli(["probe", "--launcher", "srun", "-w", "gpu01"])
    assert r.returncode == 2 and "--launcher srun runs inside an allocation" in r.stderr
    r = _cli(["check", "--drain-unchecked"])
    assert r.returncode == 2 and "--drain-unchecked goes with --drain" in r.stderr
    r = _cli(["check", "--local", "-w", "gpu01"])
    assert r.returncode == 2 and "--local checks this machine" in r.stderr
    r = _cli(["check", "--transport", "srun"])
    assert r.returncode == 2 and "--transport srun needs nodes" in r.stderr
    r = _cli(["probe", "--partition", "gpu", "-w", "gpu01"])
    assert r.returncode == 2 and "use them with --launcher srun" in r.stderr
    assert "Traceback" not in r.stderr


def test_health_line_nhc_semantics():
    from nccldiag.check.engine import CheckReport, NodeReport
    from nccldiag.model.findings import error, fail, ok, warn
    from nccldiag.report.check_report import health_line

    def report(*findings, reachable=True, slurm=None):
        n = NodeReport(host="gpu017", findings=list(findings), reachable=reachable)
        return CheckReport(nodes=[n], areas=["system"], slurm=slurm)

    line, code = health_line(report(ok("system", "system.basic", "fine"), warn("limits", "limits.memlock", "8 MiB")))
    assert code == 0 and line.startswith("nccldiag: gpu017 healthy")
    line, code = health_line(report(fail("ib", "ib.port_state", "mlx5_0 port 1 Down"),
                                    slurm={"applied": [{"action": "drain", "ok": True, "node": "gpu017"}]}))
    assert code == 1
    assert line == "ERROR: nccldiag: Health check failed: gpu017: ib.port_state: mlx5_0 port 1 Down (drained gpu017)"
    line, code = health_line(report(error("gpu", "gpu.smi", "nvidia-smi timed out")))
    assert code == 3 and line.startswith("ERROR: nccldiag: Health check could not complete: gpu017: gpu.smi")


def test_verdicts_from_a_check_report():
    from nccldiag.check.engine import CheckReport, NodeReport
    from nccldiag.model.findings import error, fail, ok
    from nccldiag.slurm.feedback import node_verdicts

    rep = CheckReport(nodes=[
        NodeReport("a", [ok("system", "system.basic", "x")]),
        NodeReport("b", [fail("gpu", "gpu.ecc", "x"), fail("gpu", "gpu.ecc", "y"), error("ib", "ib.read", "z")]),
        NodeReport("c", [error("ssh", "ssh.refused", "x")], reachable=False),
    ], areas=["system"])
    got = [(v.host, v.status, list(v.failed)) for v in node_verdicts(rep)]
    assert got == [("a", "pass", []), ("b", "fail", ["gpu.ecc"]), ("c", "unchecked", ["ssh.refused"])]


def test_node_cut_off_at_its_deadline_is_not_checked_but_what_came_is_judged():
    from nccldiag import areas
    from nccldiag.check.engine import analyze
    from nccldiag.model.raw import RawNode

    # written for this test: a node that sent its host name, then went silent
    raw = RawNode(host="n1", sections={"hostname": "n1\n"}, truncated=True,
                  extra={"transport": "srun", "timeout": "no output for 4 s (srun step cut off)"})
    rep = analyze([raw], areas.select(["system"]))
    node = rep.nodes[0]
    f = next(f for f in node.findings if f.area == "ssh")
    assert f.check == "ssh.command-timeout" and f.status.value == "error" and "cut off" in f.message
    assert f.message.startswith("srun (no SSH)")
    assert node.status.value == "error" and rep.exit_code == 3
    assert any(f.area == "system" for f in node.findings)  # what came back is still judged


def test_srun_launch_command_one_task_per_rank():
    import shlex

    from nccldiag.probe import launch
    from nccldiag.probe.launchers import srun as srun_launcher

    spec = launch.LaunchSpec(run_id="nccldiag-x", rundir="/tmp/nccldiag-x", python="python3", nproc_per_node=8,
                             rdzv_host="10.0.0.2", rdzv_port=29511, worker_args=["--backend", "nccl"])
    cmd = srun_launcher.command(spec, ["gpu01", "gpu02"], {"gpu01": "ib0", "gpu02": "ib0"}, "77", 130)
    words = shlex.split(cmd)
    assert words[:2] == ["exec", "env"]
    env = dict(w.split("=", 1) for w in words[2:words.index("srun")])
    assert env["MASTER_ADDR"] == "10.0.0.2" and env["MASTER_PORT"] == "29511" and env["NCCLDIAG_RUN"] == "nccldiag-x"
    assert env["GLOO_SOCKET_IFNAME"] == "ib0" and env["PYTHONPATH"] == "/tmp/nccldiag-x"
    srun_argv = words[words.index("srun"):]
    assert {"--nodes=2", "--ntasks=16", "--ntasks-per-node=8", "--nodelist=gpu01,gpu02", "--kill-on-bad-exit=1",
            "--time=3", "--jobid=77", "--overlap", "--chdir=/tmp/nccldiag-x"} <= set(srun_argv)
    assert srun_argv[-6:] == ["-m", "nccldiag.node.worker", "--bootstrap", "slurm", "--backend", "nccl"]
    # nodes naming their interfaces differently: each rank picks its own from the map
    cmd = srun_launcher.command(spec, ["gpu01", "gpu02"], {"gpu01": "ib0", "gpu02": "ib1"}, "77", 130)
    assert "NCCLDIAG_IFNAMES=gpu01=ib0,gpu02=ib1" in cmd and "GLOO_SOCKET_IFNAME" not in cmd


def test_missing_slurm_conf_is_named_at_once(tmp_path):
    import time

    t0 = time.monotonic()
    r = _cli(["check", "--transport", "srun", "-w", "gpu01"], SLURM_CONF=str(tmp_path / "nope.conf"))
    assert r.returncode == 3 and f"SLURM_CONF={tmp_path / 'nope.conf'}: no such file" in r.stderr
    assert time.monotonic() - t0 < 60


def test_a_task_speaks_for_the_node_srun_gave_it_whatever_node_it_names():
    # srun --label output, written for this test: task 1 (n2 in Slurm's order) says it runs on n1
    expected = srun.task_nodes(["n2", "n1"], {"n1": 0, "n2": 1})
    assert expected == {0: "n1", 1: "n2"}
    lines = [" 1: @@nccldiag:abc:node n1@@", " 0: @@nccldiag:abc:node n1@@", " 1: @@nccldiag:abc:done@@",
             " 7: @@nccldiag:abc:node n3@@"]
    tasks = srun.demux(lines, "abc", expected)
    assert tasks[1].node == "n2" and tasks[1].claimed == "n1" and tasks[1].done
    assert tasks[0].node == "n1" and not tasks[0].claimed
    assert 7 not in tasks  # no task srun started


def test_the_health_line_goes_whole_through_a_pipe_that_is_full_for_a_moment():
    """A non-blocking pipe already full when the line is written (a scheduler reading it late): the line waits for
    the reader, and arrives whole, once."""
    import fcntl
    import os
    import threading

    from nccldiag.report.check_report import emit_health_line

    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    filler = b"x" * 4096
    filled = 0
    try:
        while True:
            filled += os.write(w, filler)
    except BlockingIOError:
        pass
    got = bytearray()
    started = threading.Event()

    def read_late():
        started.wait(10)
        while True:
            chunk = os.read(r, 65536)
            if not chunk:
                return
            got.extend(chunk)

    t = threading.Thread(target=read_late)
    t.start()
    started.set()
    assert emit_health_line("ERROR: nccldiag: Health check failed: n1: ib.port_state: \x1b[31mdown\nnext", w)
    os.close(w)
    t.join(30)
    os.close(r)
    tail = bytes(got[filled:])
    assert tail == b"ERROR: nccldiag: Health check failed: n1: ib.port_state: down next\n"


def test_the_health_line_says_it_could_not_be_written():
    import os

    from nccldiag.report.check_report import emit_health_line

    r, w = os.pipe()
    os.close(r)  # nobody reads: EPIPE
    import signal
    old = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        assert emit_health_line("nccldiag: n1 healthy (0.10 s)", w) is False
    finally:
        signal.signal(signal.SIGPIPE, old)
        os.close(w)


def test_a_task_that_ends_before_the_script_says_anything_is_not_checked_never_failing():
    """The step ran on the node (its node line and done mark came) but the collection script printed nothing (a
    TaskProlog or container plugin that replaced the command): the node is not checked (exit 3), never failing;
    before, every area judged the missing outputs and `system.basic` failed it, and --drain would drain it. A task
    that printed its sections is judged as usual."""
    from nccldiag import areas as registry
    from nccldiag.check import engine
    from nccldiag.collect import runner
    from nccldiag.transport import base

    areas = registry.select(["system"], [])
    mark = runner.new_mark()
    script = runner.script_for(areas, mark=mark)
    silent = srun._Task(node="n1", lines=[], done=True)
    nr = engine.analyze_node(srun.task_node("h1", silent, mark, script, 0.0), areas)
    assert not [f for f in nr.findings if f.status.value == "fail"], nr.findings
    (said,) = [f for f in nr.findings if f.area == "ssh"]
    assert (said.check, said.status.value) == (f"ssh.{base.NO_OUTPUT}", "error"), said
    assert "n1 ended before the collection script printed anything" in said.message
    assert said.fix == srun.FIXES[base.NO_OUTPUT] and engine.exit_code([nr]) == 3 and not nr.reachable
