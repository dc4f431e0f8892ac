"""Launch failures: the cause recognised from the launcher's stderr or a rank's error, and the kill hint.

The stderr texts below were captured on this machine (torch 2.13.0+cpu,
Python 3.11, two nodes of ``scripts/vcluster --no-hosts up 2`` on
10.213.66.0/24, so the nodes' own host names do not resolve), running
``python3 -m torch.distributed.run --nnodes=2 --nproc-per-node=1 ... scripts/bench_probe_floor.py floor``
over SSH on each node with the flags named per text; only the last lines
are kept (the traceback frames above them are the same each time).
"""
import shlex

import pytest

from nccldiag.model.findings import Status
from nccldiag.probe import analysis, launch, launchers, results
from nccldiag.probe.launchers import torchrun
from nccldiag.probe.plan import Setting
from nccldiag.probe.runner import NodeRun, SettingRun

# --rdzv-backend=c10d --rdzv-endpoint=10.213.66.2:29555 (node's own name not in /etc/hosts)
C10D_UNRESOLVED = """\
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/utils.py", line 149, in _matches_machine_hostname
    addr_list = socket.getaddrinfo(
                ^^^^^^^^^^^^^^^^^^^
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/socket.py", line 962, in getaddrinfo
    for res in _socket.getaddrinfo(host, port, family, type, proto, flags):
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
socket.gaierror: [Errno -3] Temporary failure in name resolution
"""

# /usr/bin/python3 (no torch) -m torch.distributed.run ...
NO_TORCH = ("/usr/bin/python3: Error while finding module specification for 'torch.distributed.run' "
            "(ModuleNotFoundError: No module named 'torch')\n")

# --rdzv-backend=static --node-rank=1 --master-addr=10.213.66.2 --master-port=29562 --rdzv-conf=timeout=10,
# nothing listening on node 0
STATIC_REFUSED = """\
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 67, in next_rendezvous
    self._store = TCPStore(  # type: ignore[call-arg]
                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
torch.distributed.DistNetworkError: The client socket has timed out after 10000ms while trying to connect to (10.213.66.2, 29562).
"""

# --rdzv-backend=static --node-rank=0 ... --master-port=29563 --rdzv-conf=timeout=10, node 1 never started
STATIC_ALONE = """\
[W1123 20:21:40.151729421 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3
Traceback (most recent call last):
torch.distributed.DistStoreError: Timed out after 11 seconds waiting for clients. 1/2 clients joined.
"""

# static rendezvous on both nodes, GLOO_SOCKET_IFNAME=eth9 (no such interface)
BAD_IFACE = """\
RuntimeError: [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:84] ifa != nullptr. Unable to find address for: eth9
E1123 20:22:06.852000 31495 .pyenv/versions/3.11.7/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 31807) of binary: /root/.pyenv/versions/3.11.7/bin/python3
"""

RUN_ID = "nccldiag-20261123202200-abc123"


def command(rank):
    spec = launch.LaunchSpec(run_id=RUN_ID, rundir=f"/tmp/{RUN_ID}", rdzv_host="10.213.66.2", rdzv_port=29562)
    return torchrun.command(spec, 2, rank, "eth0")


def launch_finding(stderr, host="n2", rank=1):
    run = SettingRun(setting=Setting("default"), commands={host: command(rank)}, run_id=RUN_ID)
    run.nodes[host] = NodeRun(host, rc=1, stderr_tail=stderr)
    report = analysis.analyze(runs=[run], settings=[Setting("default", {})], backend="gloo", require_ib=False,
                              launcher="torchrun", hosts=[host], unreachable={}, problems={}, loopback={},
                              ifnames={}, nproc_per_node=1)
    (f,) = [f for f in report.settings[0].findings if f.check == "probe.launch"]
    return f


@pytest.mark.parametrize("text,key,words", [
    (C10D_UNRESOLVED, "hostname_unresolved", ["host name does not resolve on n2", "/etc/hosts"]),
    (NO_TORCH, "torch_missing", ["torch is not installed", "--python"]),
    (STATIC_REFUSED, "rendezvous_unreachable", ["rendezvous at 10.213.66.2:29562", "nc -zv 10.213.66.2 29562"]),
    (STATIC_ALONE, "rendezvous_incomplete", ["only 1 of 2 nodes joined"]),
    (BAD_IFACE, "interface", ["(eth9)", "GLOO_SOCKET_IFNAME"]),
])
def test_launch_failure_names_the_recognised_cause(text, key, words):
    f = launch_finding(text)
    assert f.status == Status.FAIL and f.host == "n2"
    assert f.actual == {"cause": key}
    assert "rendezvous not reachable" not in f.fix
    for w in words:
        assert w in f.message + " " + f.fix, (w, f.message, f.fix)


def test_unknown_launch_failure_keeps_the_generic_advice():
    f = launch_finding("Segmentation fault (core dumped)\n")
    assert f.actual is None and "torch missing" in f.fix


# srun's stderr in `salloc -N 2` (1 CPU per node granted) on scripts/vslurm's cluster (Slurm 22.05.8), the probe's
# step asking --ntasks-per-node=2 --overlap; the line as the probe's report quoted it
SRUN_REFUSED = "srun: error: Unable to create step for job 1: More processors requested than permitted\n"


def test_a_step_slurm_refused_says_so_with_srun_own_line():
    f = launch_finding(SRUN_REFUSED, host="srun", rank=0)
    assert f.actual == {"cause": "slurm_step_refused"}
    assert "More processors requested than permitted" in f.message
    assert "it said: srun: error: Unable to create step for job 1" in f.message
    assert "--ntasks-per-node" in f.fix


def test_an_unrecognised_launcher_failure_quotes_its_last_error_lines():
    # written for this test: a traceback's tail, then a line of no interest after the error
    text = "Traceback (most recent call last):\n  File \"x.py\", line 1\nOSError: [Errno 28] No space left\n" \
           "\x1b[31mfatal: giving up\x1b[0m\n-----------\n"
    f = launch_finding(text)
    assert "it said: OSError: [Errno 28] No space left | fatal: giving up" in f.message
    assert "\x1b" not in f.message


def test_a_launcher_that_wrote_nothing_says_that_too():
    f = launch_finding("")
    assert f.message.endswith("before any rank reported; it wrote nothing on stderr")


def test_last_words_fall_back_to_the_last_line_and_are_bounded():
    assert analysis.last_words("starting\nstill starting\n") == ["still starting"]
    (line,) = analysis.last_words("error: " + "x" * 1000)
    assert len(line) == 240 and line.endswith("...")


def test_rendezvous_address_comes_from_the_node_command_when_stderr_has_none():
    # CONSTRUCTED line (Python's own ConnectionRefusedError text), not captured from torchrun
    f = launch_finding("ConnectionRefusedError: [Errno 111] Connection refused\n")
    assert f.actual == {"cause": "rendezvous_unreachable"}
    assert "10.213.66.2:29562" in f.message


def test_a_rank_init_error_gets_the_interface_cause():
    # CONSTRUCTED records around the captured gloo message (BAD_IFACE's first line)
    recs = [{"type": "start", "rank": r, "host": "n1", "world_size": 2, "local_rank": r} for r in (0, 1)]
    recs += [{"type": "error", "rank": 0, "host": "n1", "phase": "init",
              "message": "RuntimeError: [enforce fail at device.cc:84] ifa != nullptr. Unable to find address for: eth9"},
             {"type": "end", "rank": 0, "host": "n1", "status": "error", "exit_code": 3}]
    run = SettingRun(setting=Setting("default"), records=recs, run_id=RUN_ID)
    run.nodes["n1"] = NodeRun("n1", rc=1)
    report = analysis.analyze(runs=[run], settings=[Setting("default", {})], backend="gloo", require_ib=False,
                              launcher="torchrun", hosts=["n1"], unreachable={}, problems={}, loopback={},
                              ifnames={}, nproc_per_node=2)
    init = [f for f in report.settings[0].findings if f.check == "probe.init"]
    assert init and "eth9" in init[0].message and "GLOO_SOCKET_IFNAME" in init[0].fix


def test_survivor_fix_is_the_environ_based_kill_the_probe_uses():
    run = SettingRun(setting=Setting("default"), run_id=RUN_ID, survivors={"n1": ["123 python3 -m x"]},
                     kill_errors={"n2": "timed out"})
    run.nodes["n1"] = NodeRun("n1", rc=0)
    report = analysis.analyze(runs=[run], settings=[Setting("default", {})], backend="gloo", require_ib=False,
                              launcher="torchrun", hosts=["n1", "n2"], unreachable={}, problems={}, loopback={},
                              ifnames={}, nproc_per_node=1)
    fixes = {f.check: f.fix for f in report.settings[0].findings}
    expected = "sh -c " + shlex.quote(launch.kill_command(RUN_ID))
    assert expected in fixes["probe.survivors"] and expected in fixes["probe.unreachable"]
    assert "pkill" not in fixes["probe.survivors"] + fixes["probe.unreachable"]


def test_error_counters_that_rose_during_a_setting_are_named_per_node_and_port():
    """Counter deltas as counters.counter_deltas returns them (written for this test): only error counters count."""
    run = SettingRun(setting=Setting("default"), run_id=RUN_ID)
    run.nodes = {"n1": NodeRun("n1", rc=0), "n2": NodeRun("n2", rc=0)}
    run.counters = {"n1": {"tcp.OutSegs": 90000, "tcp.RetransSegs": 3, "eth0.rx_dropped": 0},
                    "n2": {"tcp.OutSegs": 90000, "ib.mlx5_0/1.symbol_error": 12, "eth0.rx_errors": 2}}
    report = analysis.analyze(runs=[run], settings=[Setting("default", {})], backend="gloo", require_ib=False,
                              launcher="torchrun", hosts=["n1", "n2"], unreachable={}, problems={}, loopback={},
                              ifnames={}, nproc_per_node=1)
    found = [f for f in report.settings[0].findings if f.check == "probe.counters"]
    assert [f.host for f in found] == ["n2"] and found[0].status == Status.WARN
    assert "ib.mlx5_0/1.symbol_error +12" in found[0].message and "eth0.rx_errors +2" in found[0].message


def test_counters_are_kept_before_the_launch_and_read_after_it(tmp_path):
    """The two commands the probe runs on a node, run here: a healthy run moves no error counter."""
    import subprocess

    from nccldiag.probe import counters
    from nccldiag.transport.nodes import LocalNode

    d = str(tmp_path / "setting")
    subprocess.run(["sh", "-c", f"mkdir -p {shlex.quote(d)} && " + counters.counters_before(d) + "true"],
                   check=True, timeout=30)
    assert (tmp_path / "setting" / counters.COUNTERS_BEFORE).read_text().startswith("tcp ")
    node = LocalNode("here")
    after = {"here": node.run(counters.counters_after(d), 30).stdout,
             "idle": node.run(counters.counters_after(str(tmp_path / "none")), 30).stdout}
    deltas = counters.counter_deltas(after)
    # a node that kept no snapshot (it launched nothing) is left out
    assert set(deltas) == {"here"}
    assert all(v > 0 for v in deltas["here"].values())


def test_ranks_launched_that_never_reported_before_the_deadline_are_a_hang():
    """A job whose launcher started its ranks but none wrote a record before the deadline (an interpreter that
    hangs before the worker runs): a hang, whatever the launched world says of the ranks that never reported;
    a rank that failed at setup stays an error."""
    from nccldiag.probe import analysis, results, runner
    from nccldiag.probe.plan import Setting

    setting = Setting("r0-alone")
    run = runner.SettingRun(setting=setting, timed_out=True)
    run.launched = results.Launched(("10.0.0.2",), 1, ("all_reduce",), tagged=launchers.get("srun").tagging)
    rep = analysis.job_report(setting, run, timeout=20)
    assert rep.outcome.missing_ranks == [0] and rep.status == "hang"
    run.records = [{"type": "error", "rank": 0, "phase": "init", "message": "no torch", "host": "10.0.0.2"}]
    assert analysis.job_report(setting, run, timeout=20).status != "hang"
