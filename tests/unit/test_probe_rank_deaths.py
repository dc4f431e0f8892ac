"""A rank killed by a signal is named on its node, from the launcher's own report (real torchrun and mpirun)."""
import shutil
import socket
import subprocess
import sys

import pytest

from nccldiag.probe import analysis
from nccldiag.probe.plan import Setting
from nccldiag.probe.runner import NodeRun, SettingRun

# local rank 1 kills itself with SIGKILL (as the OOM killer would); the others wait to be stopped
SELF_KILL = ("import os, signal, time\n"
             "if os.environ.get('LOCAL_RANK', os.environ.get('OMPI_COMM_WORLD_RANK')) == '1':\n"
             "    time.sleep(1); os.kill(os.getpid(), signal.SIGKILL)\n"
             "time.sleep(60)\n")
RAISES = "import os\nif os.environ.get('LOCAL_RANK') == '1':\n    raise SystemExit(3)\n"


# torchrun itself, and torchrun as the probe starts it (nccldiag.node.torchrun: the same, without the teardown)
LAUNCHERS = ["torch.distributed.run", "nccldiag.node.torchrun"]


def torchrun(tmp_path, program, module="torch.distributed.run"):
    script = tmp_path / "w.py"
    script.write_text(program)
    return subprocess.run([sys.executable, "-m", module, "--nnodes=1", "--nproc-per-node=2",
                           "--max-restarts=0", "--monitor-interval=0.2", "--master-port", "0", str(script)],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("module", LAUNCHERS)
def test_torchrun_root_cause_names_the_killed_rank_and_not_the_one_it_stopped(tmp_path, module):
    pytest.importorskip("torch")
    r = torchrun(tmp_path, SELF_KILL, module)
    assert r.returncode == 1, r.stderr[-2000:]
    # torchrun stopped rank 0 with SIGTERM after rank 1 died: only rank 1 is a death
    assert "SIGTERM" in r.stderr
    assert analysis.rank_deaths(r.stderr) == [{"rank": 1, "local_rank": 1, "signal": 9, "name": "SIGKILL"}]


# qnode02's torchrun (nccldiag.node.torchrun, torch 2.13) in tests/integration/test_probe.py::test_one_rank_killed on
# the virtual cluster, 2026-12-06: local rank 1 was killed with SIGKILL, and its peer (local rank 0) exited 2 on
# the closed connection within the same poll of the agent, which named the peer the root cause
RACED = """torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
nccldiag.node.worker FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-06_21:43:15
  host      : qnode02
  rank      : 3 (local_rank: 1)
  exitcode  : -9 (pid: 7705)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 7705
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-06_21:43:15
  host      : qnode02
  rank      : 2 (local_rank: 0)
  exitcode  : 2 (pid: 7703) 
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_a_killed_rank_torchrun_lists_among_the_other_failures_is_still_its_death():
    assert analysis.rank_deaths(RACED) == [{"rank": 3, "local_rank": 1, "signal": 9, "name": "SIGKILL"}]
    # the same table twice (the agent's log and the interpreter's traceback) is one death
    assert analysis.rank_deaths(RACED + RACED) == analysis.rank_deaths(RACED)


@pytest.mark.parametrize("module", LAUNCHERS)
def test_a_rank_that_exits_with_an_error_is_no_death(tmp_path, module):
    pytest.importorskip("torch")
    r = torchrun(tmp_path, RAISES, module)
    assert r.returncode == 1 and "exitcode  : 3" in r.stderr, r.stderr[-2000:]
    assert "Traceback" in r.stderr and "ChildFailedError" in r.stderr  # what the interpreter prints of the failure
    assert analysis.rank_deaths(r.stderr) == []


def test_torchrun_as_the_probe_starts_it_passes_the_ranks_output_and_exits_0(tmp_path):
    pytest.importorskip("torch")
    r = torchrun(tmp_path, "import os\nprint('rank', os.environ['RANK'], flush=True)\n", "nccldiag.node.torchrun")
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(
        line for line in r.stdout.splitlines() if line.startswith("rank")) == ["rank 0", "rank 1"]


def test_torchrun_exit_status_is_the_interpreters():
    from nccldiag.node.torchrun import exit_status

    assert exit_status(None) == 0 and exit_status(0) == 0 and exit_status(3) == 3 and exit_status(256 + 2) == 2
    assert exit_status(True) == 1 and exit_status("usage: torchrun ...") == 1


def test_mpirun_names_the_killed_rank_and_its_node(tmp_path):
    if not shutil.which("mpirun"):
        pytest.skip("Open MPI's mpirun is not installed")
    script = tmp_path / "m.py"
    script.write_text(SELF_KILL)
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", sys.executable, str(script)],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    text = r.stdout + r.stderr
    (d,) = analysis.rank_deaths(text)
    assert (d["rank"], d["signal"], d["name"]) == (1, 9, "signal 9 (Killed)"), text
    assert d["node"] in (socket.gethostname(), socket.gethostname().split(".")[0]), text


def _findings(stderr, host="n2", hosts=("n1", "n2")):
    run = SettingRun(setting=Setting("default"))
    for h in hosts:
        run.nodes[h] = NodeRun(h, 0)
    run.nodes[host] = NodeRun(host, 1, None, stderr[-4000:])
    from nccldiag.probe import results

    return [f for f in analysis._run_findings(Setting("default"), run, results.SettingOutcome("default"), 30)
            if f.check == "probe.rank_died"]


def test_the_death_is_a_finding_on_the_node_whose_launcher_reported_it(tmp_path):
    pytest.importorskip("torch")
    r = torchrun(tmp_path, SELF_KILL)
    (f,) = _findings(r.stderr)
    assert f.status.value == "fail" and f.host == "n2"
    assert f.message == "[default] rank 1, local rank 1 on n2 was killed by SIGKILL"
    # a launcher that reported nothing of the kind gives no such finding
    assert _findings("Traceback ...\nRuntimeError: Connection closed by peer\n") == []


def test_an_mpirun_death_on_another_node_names_that_node_without_blaming_the_first():
    # the form of Open MPI's line, as the test above reads it from a real mpirun; node names written for this test
    text = "mpirun noticed that process rank 3 with PID 0 on node gpu07 exited on signal 9 (Killed).\n"
    (f,) = _findings(text, host="gpu01", hosts=("gpu01",))
    assert f.host is None and "rank 3 on gpu07 was killed by signal 9 (Killed)" in f.message
    (f,) = _findings(text.replace("gpu07", "gpu01"), host="gpu01", hosts=("gpu01",))
    assert f.host == "gpu01"
