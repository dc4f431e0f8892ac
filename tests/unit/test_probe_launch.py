"""Launch commands: torchrun with static rendezvous, one node rank per host in host-list order."""
import os
import shlex
import subprocess
import sys
import threading
import uuid

from nccldiag.probe import launch, launchers, plan, runner, session
from nccldiag.probe.launchers import torchrun
from tests.integration.helpers import wait_for


class N:
    def __init__(self, name):
        self.name = name


def spec(**kw):
    base = dict(run_id="nccldiag-1-abc", rundir="/tmp/nccldiag-1-abc", rdzv_host="10.0.0.2", rdzv_port=40123,
                nproc_per_node=2, join_timeout=30, worker_args=["--backend", "gloo"])
    base.update(kw)
    return launch.LaunchSpec(**base)


def argv_of(cmd):
    """The torchrun argv inside the ``setsid sh -c`` wrapper."""
    body = shlex.split(cmd)[-1]
    assert body.startswith("exec ")
    return shlex.split(body[len("exec "):])


def test_torchrun_uses_static_rendezvous_on_the_first_node_address():
    argv = argv_of(torchrun.command(spec(), 3, 2, "eth0"))
    assert "--rdzv-backend=static" in argv
    assert "--nnodes=3" in argv and "--node-rank=2" in argv
    assert "--master-addr=10.0.0.2" in argv and "--master-port=40123" in argv
    # the store's timeout bounds the wait for every node (torchrun's default is 600 s)
    assert "--rdzv-conf=timeout=30" in argv
    assert not any(a.startswith("--rdzv-endpoint") for a in argv)
    assert "GLOO_SOCKET_IFNAME=eth0" in argv and "NCCLDIAG_RUN=nccldiag-1-abc" in argv
    assert argv[-4:] == ["-m", "nccldiag.node.worker", "--backend", "gloo"]


def test_build_commands_gives_each_node_its_index_and_the_same_master():
    prep = runner.Prepared("nccldiag-1-abc", "/tmp/nccldiag-1-abc", "10.0.0.2", 40123,
                           {"a": "eth0", "b": "ens1", "c": None}, {}, {})
    cmds = launchers.get("torchrun").commands(spec(), [N("a"), N("b"), N("c")], prep, plan.bounds(120, "gloo"))
    assert list(cmds) == ["a", "b", "c"]
    for rank, host in enumerate(("a", "b", "c")):
        argv = argv_of(cmds[host])
        assert f"--node-rank={rank}" in argv
        assert "--master-addr=10.0.0.2" in argv and "--nnodes=3" in argv
    assert "GLOO_SOCKET_IFNAME=ens1" in argv_of(cmds["b"])
    assert not any(a.startswith("GLOO_SOCKET_IFNAME") for a in argv_of(cmds["c"]))


# The watchdog beside a launch, run by a real sh: its parent stands for the SSH session that started it.

# Like an SSH session, the parent outlives the launch: it reports the launch's exit status, then waits
# until its stdin closes.
PARENT = ("import os, subprocess, sys\n"
          "open(os.path.join(sys.argv[2], 'parent.pid'), 'w').write(str(os.getpid()))\n"
          "rc = subprocess.Popen(['sh', '-c', sys.argv[1]], stdin=subprocess.DEVNULL).wait()\n"
          "print(rc, flush=True)\n"
          "sys.stdin.read()\n")


def _make(rundir) -> None:
    """The run directory made as staging makes it on a node."""
    r = subprocess.run(["sh", "-c", launch.make_rundir(str(rundir))], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr


def _marked(run_id: str) -> list:
    """The processes of the run: those whose environment holds its marker, as the kill finds them."""
    mark = f"{launch.RUN_MARK}={run_id}".encode()
    out = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and mark in open(f"/proc/{p}/environ", "rb").read().split(b"\0"):
                out.append(int(p))
        except OSError:
            continue
    return out


def _start(tmp_path, inner, watchdog=600):
    run_id = f"nccldiag-wdtest-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    inner = f"env {launch.RUN_MARK}={run_id} {inner}"
    rundir = tmp_path / run_id
    _make(rundir)
    cmd = launch.wrap(inner, str(rundir), run_id, watchdog)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, cmd, str(rundir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wait_for(lambda: (rundir / "parent.pid").exists(), 10, "the launch's parent")
    return run_id, rundir, parent


def _kill_parent(parent):
    parent.kill()
    parent.wait(10)


def test_watchdog_kills_the_run_and_removes_its_directory_when_the_parent_is_killed(tmp_path):
    run_id, rundir, parent = _start(tmp_path, "sleep 600")
    wait_for(lambda: _marked(run_id), 10, "the launch")
    _kill_parent(parent)
    wait_for(lambda: not rundir.exists(), 10, "the watchdog to remove the run directory")
    wait_for(lambda: not _marked(run_id), 10, "the watchdog to kill the run's processes")


def test_watchdog_removes_the_directory_when_the_launcher_dies_with_its_parent(tmp_path):
    """Ranks writing to a closed SSH channel die of it, often before the watchdog's next poll: the
    launcher is gone when the watchdog looks, and the run directory must still go."""
    inner = 'sh -c \'p=$(cat parent.pid); while kill -0 "$p" 2>/dev/null; do sleep 0.01; done\''
    run_id, rundir, parent = _start(tmp_path, inner)
    wait_for(lambda: _marked(run_id), 10, "the launch")
    _kill_parent(parent)
    wait_for(lambda: not _marked(run_id), 5, "the launcher to end after its parent")
    wait_for(lambda: not rundir.exists(), 10, "the watchdog to remove the run directory")


def test_watchdog_keeps_the_directory_when_the_launch_ends_normally(tmp_path):
    run_id, rundir, parent = _start(tmp_path, "sh -c 'echo done > out.txt'")
    try:
        assert parent.stdout.readline().strip() == "0"
        assert (rundir / "out.txt").read_text() == "done\n"
        # the watchdog ends within its poll interval once the launcher has; it removes nothing
        wait_for(lambda: not _guards(rundir, parent.pid), 10, "the watchdog to end")
        assert rundir.is_dir()
    finally:
        _kill_parent(parent)


def test_watchdog_kills_the_run_at_its_deadline_and_keeps_the_directory(tmp_path):
    run_id = f"nccldiag-wdtest-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    inner = f"env {launch.RUN_MARK}={run_id} sleep 600"
    rundir = tmp_path / run_id
    _make(rundir)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, launch.wrap(inner, str(rundir), run_id, 2), str(rundir)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    box = {}
    reader = threading.Thread(target=lambda: box.update(line=parent.stdout.readline()), daemon=True)
    reader.start()
    try:
        # the launcher killed at the deadline ends the launch: the parent's wait returns, with SIGKILL's status
        reader.join(30)
        assert box.get("line", "").strip() == "137"
        wait_for(lambda: not _guards(rundir, parent.pid), 10, "the watchdog to end")
        assert rundir.is_dir()
    finally:
        _kill_parent(parent)


def _guards(rundir, parent: int) -> list:
    """Processes other than ``parent`` whose command line names the run directory (the wrapper shell
    and its watchdog)."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == parent:
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if str(rundir).encode() in f.read():
                    out.append(int(p))
        except OSError:
            pass
    return out
