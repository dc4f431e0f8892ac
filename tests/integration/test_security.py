"""An attacker on a node of the virtual cluster: a local user who is not root.

The run id of a probe can be seen in ``/tmp`` and in ``ps``; the nodes are
staged ``--fanout`` at a time, so a user on a later node has time to make the
run directory first. Staging over real SSH must refuse it, and nothing of
the probe may run in it or write through it.
"""
import json
import shlex
import uuid

import pytest

from nccldiag.inventory import Host
from nccldiag.probe import launch, runner
from nccldiag.probe.launchers import torchrun
from nccldiag.transport.nodes import SSHNode, connect_all
from nccldiag.transport.ssh import SSHOptions

VICTIM = "/root/nccldiag-victim"


def _as_nobody(vc, node, script):
    r = vc.exec(node, ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script])
    assert r.returncode == 0, r.stderr


def _nodes(vc, names):
    opts = SSHOptions(config_path=str(vc.ssh_config), connect_timeout=5, use_agent=False)
    nodes = [SSHNode(Host(n), opts) for n in names]
    assert connect_all(nodes, 4) == {}
    return nodes


@pytest.fixture
def planted(vcluster):
    """node02's /tmp holds the run directory before the probe stages it: mode 777, nobody's, with a
    ``sitecustomize.py`` that leaves a mark when imported and ``hostfile`` (which mpirun's launch writes) linked
    to root's file."""
    run_id = f"nccldiag-sectest-{uuid.uuid4().hex[:8]}"
    d = f"/tmp/{run_id}"
    assert vcluster.exec("node02", ["sh", "-c", f"echo root-only > {VICTIM}; chmod 600 {VICTIM}"]).returncode == 0
    _as_nobody(vcluster, "node02",
               f"mkdir -m 777 {d} && echo \"open('/tmp/{run_id}.pwned', 'w').write('x')\" > {d}/sitecustomize.py "
               f"&& ln -s {VICTIM} {d}/hostfile && chmod 777 {d}")
    yield run_id, d
    for n in ("node01", "node02"):
        vcluster.exec(n, ["sh", "-c", f"rm -rf {d} /tmp/{run_id}.pwned {VICTIM}"])


def test_a_run_directory_a_local_user_made_first_is_refused(vcluster, planted):
    run_id, d = planted
    nodes = _nodes(vcluster, ["node01", "node02"])
    try:
        prep = runner.prepare(nodes, "python3", None, None, timeout=60, run_id=run_id)
        assert "node02" in prep.problems and "node01" not in prep.problems, prep.problems
        assert f"{d} already exists on node02" in prep.problems["node02"]
        # the launch, handed the directory all the same, refuses it: nothing imported, nothing written through
        spec = launch.LaunchSpec(run_id=run_id, rundir=d, python="python3", rdzv_host=nodes[0].address, watchdog=60)
        r = nodes[1].run(torchrun.command(spec, 2, 1, None), 60)
        assert r.rc == launch.REFUSED and "not this run's own directory" in r.stderr, (r.rc, r.stderr)
        # and the clean-up leaves it to the admin
        assert runner.cleanup(nodes, d) == {}
    finally:
        for n in nodes:
            n.close()
    check = f"cat {VICTIM}; ls /tmp/{run_id}.pwned 2>/dev/null; stat -c '%u %a' {d}; ls {d}"
    out = vcluster.exec("node02", ["sh", "-c", check]).stdout.split("\n")
    assert out[0] == "root-only"  # the victim file was not overwritten
    assert out[1] == "65534 777"  # no mark: the sitecustomize.py never ran; the directory is still nobody's
    assert sorted(out[2:4]) == ["hostfile", "sitecustomize.py"]
    # node01's own run directory was made private, and removed by the clean-up
    assert vcluster.exec("node01", ["sh", "-c", f"ls -d {d} 2>/dev/null; true"]).stdout == ""


def test_a_shared_run_directory_is_made_once_and_checked_on_the_others(vcluster, tmp_path):
    """With --shared-dir the first node makes the directory; the others only check it is root's and closed.
    On the virtual cluster each node has its own /tmp, so node02 finds no directory and is refused."""
    run_id = f"nccldiag-sectest-{uuid.uuid4().hex[:8]}"
    nodes = _nodes(vcluster, ["node01", "node02"])
    try:
        prep = runner.prepare(nodes, "python3", None, "/tmp", timeout=60, run_id=run_id)
        assert "node01" not in prep.problems
        assert "is not this run's own directory" in prep.problems.get("node02", ""), prep.problems
        out = vcluster.exec("node01", ["stat", "-c", "%u %a", f"/tmp/{run_id}"]).stdout.strip()
        assert out == "0 700"
        assert runner.cleanup(nodes[:1], f"/tmp/{run_id}") == {}
    finally:
        for n in nodes:
            n.close()
        vcluster.exec("node01", ["sh", "-c", f"rm -rf {shlex.quote('/tmp/' + run_id)}"])


# --- a node that forges the probe's output (a wrapper around its python) -------------------------------------

FORGED = [
    # B speaks for rank 0 (node01's) with silent corruption, names node01 as its host, claims a huge world,
    # sends a wrongly typed field, and floods a collective nobody planned
    '{"type":"result","rank":0,"host":"node01","collective":"all_reduce","phase":"check","status":"wrong",'
    '"wrong":256,"ranks_wrong":[0,1],"size":1024,"count":256}',
    '{"type":"start","rank":2,"host":"node01","world_size":30000000}',
    '{"type":"result","rank":3,"collective":"all_reduce","phase":"check","status":"wrong","wrong":"abc"}',
]


@pytest.fixture
def forger(vcluster):
    """``--python`` for the probe: on node02 it prints forged records first, then runs the real Python;
    on node01 it only runs the real Python. Each node has its own /tmp, so the same path differs."""
    import sys

    d = f"/tmp/forge-{uuid.uuid4().hex[:8]}"
    flood = "i=0; while [ $i -lt 3000 ]; do echo '{\"type\":\"result\",\"rank\":2,\"collective\":\"c'$i'\"}'; i=$((i+1)); done"
    lines = "".join(f"echo {shlex.quote(l)}; " for l in FORGED)
    for node, body in (("node01", ""), ("node02", f"case \"$*\" in *nccldiag.node.worker*) {lines}{flood};; esac\n")):
        script = f"#!/bin/sh\n{body}exec {sys.executable} \"$@\"\n"
        r = vcluster.exec(node, ["sh", "-c", f"mkdir -m 755 {d} && cat > {d}/python && chmod 755 {d}/python"],
                          input=script)
        assert r.returncode == 0, r.stderr
    yield f"{d}/python"
    for node in ("node01", "node02"):
        vcluster.exec(node, ["rm", "-rf", d])


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
def test_a_node_that_forges_records_frames_no_other_node(vcluster, forger, tmp_path, launcher):
    from tests.integration.helpers import load_json, timed

    out = tmp_path / "p.json"
    r, _ = timed(["probe", "-w", "node01,node02", "--ssh-config", str(vcluster.ssh_config), "--nproc-per-node", "2",
                  "--launcher", launcher, "--python", forger, "--timeout", "90", "--collectives", "all_reduce,barrier",
                  "--max-bytes", "64K", "-o", str(tmp_path / "run"), "--json", str(out)], timeout=240)
    data = load_json(out)
    (setting,) = data["settings"]
    assert setting["world_size"] == 4, setting["world_size"]
    assert setting["collectives"]["all_reduce"]["status"] == "ok", setting["collectives"]["all_reduce"]
    assert set(setting["collectives"]) <= {"all_reduce", "barrier", "mpi_allreduce"}
    assert {v["host"] for k, v in setting["ranks"].items()} == {"node01", "node02"}
    failing = [f for f in data["findings"] + setting["findings"] if f["status"] in ("fail", "error")]
    assert failing == [], failing
    flags = [f for f in setting["findings"] if f["check"] == "probe.rejected"]
    assert len(flags) == 1, flags
    (flag,) = flags
    assert flag["host"] == "node02" and flag["status"] == "warn", flags
    assert r.returncode == 0, r.stdout + r.stderr


# --- a program the check collection runs, under a user's control (--python) ---------------------------------


def test_a_program_the_collection_runs_cannot_forge_sections(vcluster, tmp_path):
    """node02's --python looks for the run's mark wherever a program can (its environment, every process's
    command line and environment on the node), then floods the output with 5,000 forged sections."""
    import sys

    from tests.integration.helpers import timed

    d = f"/tmp/forge-{uuid.uuid4().hex[:8]}"
    spy = ("#!/bin/sh\n"
           "m=$NCCLDIAG_MARK\n"
           "[ -n \"$m\" ] || m=$(cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' "
           "| sed -n 's/^NCCLDIAG_MARK=\\([0-9a-f]*\\).*/\\1/p' | head -n1)\n"
           "echo \"found-mark=[$m]\"\n"
           "i=0; while [ $i -lt 5000 ]; do printf '@@nccldiag:%s:end python_env rc=0@@\\n@@nccldiag:%s:begin f%s@@\\nx\\n"
           "@@nccldiag:%s:end f%s rc=0@@\\n' \"$m\" \"$m\" $i \"$m\" $i; i=$((i+1)); done\n"
           f"exec {sys.executable} \"$@\"\n")
    r = vcluster.exec("node02", ["sh", "-c", f"mkdir -m 755 {d} && cat > {d}/python && chmod 755 {d}/python"],
                      input=spy)
    assert r.returncode == 0, r.stderr
    try:
        bundle = tmp_path / "bundle"
        r, _ = timed(["check", "-w", "node02", "--ssh-config", str(vcluster.ssh_config), "--only", "python",
                      "--python", f"{d}/python", "--save", str(bundle), "--json", str(tmp_path / "c.json")],
                     timeout=240)
        assert r.returncode in (0, 1, 3), r.stdout + r.stderr
        files = sorted(p.name for p in (bundle / "node02").iterdir())
        assert not [f for f in files if f.startswith("f")], files[:5]
        from nccldiag import areas
        from nccldiag.collect import runner, script

        collected = json.loads((bundle / "_bundle.json").read_text())["areas"]
        runs = script.source_names(runner.script_for(areas.select(collected)))
        assert set(files) - {"_node.json"} <= {f"{n}.txt" for n in runs}, files
        assert "found-mark=[]" in (bundle / "node02" / "python_env.txt").read_text()
    finally:
        vcluster.exec("node02", ["rm", "-rf", d])


# --- what stays on the nodes when nccldiag is stopped the hard way -------------------------------------------


def _litter(vc, node):
    """The run directories and the launchers' temporary files in a node's own /tmp."""
    r = vc.exec(node, ["sh", "-c", "ls -d /tmp/nccldiag-* /tmp/torchelastic_* /tmp/ompi.* /tmp/prte.* 2>/dev/null; true"])
    return set(r.stdout.split())


def _kill_9_when_ranks_run(vc, args, tmp_path, before):
    """Start nccldiag with ``args``, SIGKILL it once ranks of its run run on every node; returns the run id."""
    import signal
    import subprocess
    import sys

    from tests.integration.helpers import probe_processes, wait_for

    proc = subprocess.Popen([sys.executable, "-m", "nccldiag", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    box = {}

    def running():
        new = sorted(d for d in _litter(vc, "node01") - before["node01"] if d.startswith("/tmp/nccldiag-"))
        if not new:
            return False
        box["run_id"] = new[0].rsplit("/", 1)[1]
        marks = [box["run_id"]] + [f"{box['run_id']}-{i}" for i in range(1, 4)]
        return all(any(probe_processes(vc, n, m) for m in marks) for n in ("node01", "node02"))

    try:
        wait_for(running, 120, "ranks of the run on both nodes")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    return box["run_id"]


def _gone(vc, run_id, before):
    from tests.integration.helpers import probe_processes

    def check():
        for n in ("node01", "node02"):
            if _litter(vc, n) - before[n]:
                return False
            if any(probe_processes(vc, n, m) for m in [run_id] + [f"{run_id}-{i}" for i in range(1, 12)]):
                return False
        return True
    return check


def test_kill_9_of_an_mpirun_probe_leaves_nothing_on_any_node(vcluster, tmp_path):
    """Only the first node runs a launcher under mpirun: node02's run directory went with nothing before.
    Open MPI's and torchrun's temporary files are in the run directory (TMPDIR), and go with it."""
    from tests.integration.helpers import wait_for

    before = {n: _litter(vcluster, n) for n in ("node01", "node02")}
    args = ["probe", "-w", "node01,node02", "--ssh-config", str(vcluster.ssh_config), "--nproc-per-node", "2",
            "--launcher", "mpirun", "--timeout", "200", "--iters", "5000", "--max-bytes", "1M",
            "-o", str(tmp_path / "run")]
    run_id = _kill_9_when_ranks_run(vcluster, args, tmp_path, before)
    # the watchdogs poll once a second; the bound allows for SSH round trips on a loaded machine
    wait_for(_gone(vcluster, run_id, before), 40, "every node's watchdog to remove the killed run")


def test_kill_9_of_isolate_leaves_nothing_on_any_node(vcluster, tmp_path):
    from tests.integration.helpers import wait_for

    before = {n: _litter(vcluster, n) for n in ("node01", "node02")}
    args = ["isolate", "-w", "node01,node02", "--ssh-config", str(vcluster.ssh_config), "--timeout", "200",
            "--iters", "20000", "-o", str(tmp_path / "run")]
    run_id = _kill_9_when_ranks_run(vcluster, args, tmp_path, before)
    wait_for(_gone(vcluster, run_id, before), 40, "every node's watchdog to remove the killed isolation")


def test_a_malformed_answer_from_the_first_node_is_named_and_nothing_stays(vcluster, tmp_path):
    """node01's --python answers the preparation's question with a port that is no number."""
    import sys

    from tests.integration.helpers import timed

    d = f"/tmp/forge-{uuid.uuid4().hex[:8]}"
    for node, body in (("node01", 'case "$1" in -c) echo \'{"torch": true, "gpus": 0, "free_port": "abc"}\'; '
                                  'exit 0;; esac\n'), ("node02", "")):
        script = f"#!/bin/sh\n{body}exec {sys.executable} \"$@\"\n"
        assert vcluster.exec(node, ["sh", "-c", f"mkdir -m 755 {d} && cat > {d}/python && chmod 755 {d}/python"],
                             input=script).returncode == 0
    before = {n: _litter(vcluster, n) for n in ("node01", "node02")}
    try:
        r, _ = timed(["probe", "-w", "node01,node02", "--ssh-config", str(vcluster.ssh_config), "--python",
                      f"{d}/python", "--timeout", "60", "-o", str(tmp_path / "run")], timeout=200)
        assert r.returncode == 3, r.stdout + r.stderr
        assert "cannot run the probe on node01" in r.stdout and "Traceback" not in r.stderr, r.stdout + r.stderr
        for n in ("node01", "node02"):
            assert _litter(vcluster, n) - before[n] == set(), n
    finally:
        for n in ("node01", "node02"):
            vcluster.exec(n, ["rm", "-rf", d])


def test_a_node_that_forges_records_in_isolate_frames_no_partner(vcluster, tmp_path):
    """node02's --python speaks, in every pair job, for its partner's rank (node01's) with wrong data."""
    import sys

    from tests.integration.helpers import load_json, timed

    d = f"/tmp/forge-{uuid.uuid4().hex[:8]}"
    forged = ('{"type":"result","rank":%d,"host":"node01","collective":"all_reduce","phase":"check",'
              '"status":"wrong","wrong":256,"ranks_wrong":[0,1]}')
    body = (f'case "$*" in *--nnodes=2*--node-rank=1*) echo {shlex.quote(forged % 0)};; '
            f'*--nnodes=2*--node-rank=0*) echo {shlex.quote(forged % 1)};; esac\n')
    for node, text in (("node01", ""), ("node02", body)):
        script = f"#!/bin/sh\n{text}exec {sys.executable} \"$@\"\n"
        assert vcluster.exec(node, ["sh", "-c", f"mkdir -m 755 {d} && cat > {d}/python && chmod 755 {d}/python"],
                             input=script).returncode == 0
    try:
        out = tmp_path / "i.json"
        r, _ = timed(["isolate", "-w", "node01,node02", "--ssh-config", str(vcluster.ssh_config), "--python",
                      f"{d}/python", "--timeout", "60", "-o", str(tmp_path / "run"), "--json", str(out)], timeout=300)
        data = load_json(out)
        failing = [f for f in data["findings"] if f["status"] in ("fail", "error")]
        assert failing == [], failing
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        for n in ("node01", "node02"):
            vcluster.exec(n, ["rm", "-rf", d])
