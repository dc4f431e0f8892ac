"""An attacker on a node of the virtual cluster: a local user who is not root.

The run id of a probe can be seen in ``/tmp`` and in ``ps``; the nodes are
staged ``--fanout`` at a time, so a user on a later node has time to make the
run directory first. Staging over real SSH must refuse it, and nothing of
the probe may run in it or write through it.
"""
import shlex
import uuid

import pytest

from nccldiag.inventory import Host
from nccldiag.probe import launch, runner
from nccldiag.probe.nodes import SSHNode, connect_all
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
    ``sitecustomize.py`` that leaves a mark when imported and ``launcher.pgid`` linked to root's file."""
    run_id = f"nccldiag-sectest-{uuid.uuid4().hex[:8]}"
    d = f"/tmp/{run_id}"
    assert vcluster.exec("node02", ["sh", "-c", f"echo root-only > {VICTIM}; chmod 600 {VICTIM}"]).returncode == 0
    _as_nobody(vcluster, "node02",
               f"mkdir -m 777 {d} && echo \"open('/tmp/{run_id}.pwned', 'w').write('x')\" > {d}/sitecustomize.py "
               f"&& ln -s {VICTIM} {d}/launcher.pgid && chmod 777 {d}")
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
        r = nodes[1].run(launch.torchrun_command(spec, 2, 1, None), 60)
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
    assert sorted(out[2:4]) == ["launcher.pgid", "sitecustomize.py"]
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
