"""The probe's run directory on a node, made and entered by a real ``sh``.

A local user on a node can see the run id (``/tmp`` and ``ps``) and may make
the directory first, with a ``sitecustomize.py`` for the root-run ranks to
import and a ``hostfile`` link to a root-owned file for mpirun's launch to
write through. Staging must refuse such a directory, every command that works
in the run directory must refuse one it did not make, and the clean-up must
leave it alone. Tests that need a second user run as root (CI does).
"""
import base64
import io
import os
import shlex
import subprocess
import tarfile
import uuid

import pytest

from nccldiag.probe import launch, runner
from nccldiag.probe.launchers import mpirun

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files as another user (nobody)")
NOBODY = 65534


def sh(command: str, stdin: str = None) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30, input=stdin)


def run_id() -> str:
    return f"nccldiag-stagetest-{uuid.uuid4().hex[:8]}"


def plant(parent, name, victim):
    """What the attacker leaves, as user nobody: an open directory, a sitecustomize.py, a link to ``victim``."""
    d = parent / name
    d.mkdir()
    (d / "sitecustomize.py").write_text(f"open({str(parent / 'pwned')!r}, 'w').write('root')\n")
    os.symlink(victim, d / "hostfile")
    for p in (d, d / "sitecustomize.py"):
        os.chown(p, NOBODY, NOBODY)
    os.lchown(d / "hostfile", NOBODY, NOBODY)
    os.chmod(d, 0o777)
    return d


@pytest.fixture
def base(tmp_path):
    b = tmp_path / "tmp"
    b.mkdir()
    os.chmod(b, 0o1777)  # as /tmp
    return b


def test_a_fresh_run_directory_is_made_private(base):
    d = base / run_id()
    r = sh(launch.make_rundir(str(d)) + "echo made")
    assert r.returncode == 0 and r.stdout == "made\n", r.stderr
    st = os.stat(d)
    assert (st.st_mode & 0o777) == 0o700 and st.st_uid == os.geteuid()
    assert sh(launch.owned_rundir(str(d)) + "echo ok").stdout == "ok\n"


@root_only
def test_a_directory_another_user_made_first_is_refused_and_left_as_it_is(base, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("root's\n")
    name = run_id()
    d = plant(base, name, victim)
    r = sh(launch.make_rundir(str(d)) + "echo used")
    assert r.returncode == launch.REFUSED, r.stdout
    assert "used" not in r.stdout
    assert f"{d} already exists" in r.stderr and "refusing to use it" in r.stderr
    # nothing was written through the link, nothing was made ours
    assert victim.read_text() == "root's\n"
    assert os.stat(d).st_uid == NOBODY and (os.stat(d).st_mode & 0o777) == 0o777


@root_only
def test_the_launch_never_starts_in_a_directory_it_did_not_make(base, tmp_path):
    """Even handed the planted directory, the launch refuses it: no write through its link, no import."""
    victim = tmp_path / "victim"
    victim.write_text("root's\n")
    name = run_id()
    d = plant(base, name, victim)
    py = shlex.quote(os.environ.get("PYTHON", "python3"))
    inner = f"env PYTHONPATH={shlex.quote(str(d))} {py} -c 'print(1)'"
    for cmd in (launch.wrap(inner, str(d)), launch.wrap(inner, str(d), name, 60)):
        r = sh(cmd)
        assert r.returncode == launch.REFUSED, (r.stdout, r.stderr)
        assert "is not this run's own directory" in r.stderr
    assert victim.read_text() == "root's\n"
    assert not (base / "pwned").exists()


@root_only
@pytest.mark.parametrize("how", ["another user's", "open to others", "a link to ours"])
def test_a_run_directory_that_is_not_ours_and_closed_is_not_entered(base, how):
    ours = base / run_id()
    assert sh(launch.make_rundir(str(ours))).returncode == 0
    d = ours
    if how == "another user's":
        os.chown(ours, NOBODY, NOBODY)
    elif how == "open to others":
        os.chmod(ours, 0o755)
    else:
        d = base / run_id()
        os.symlink(ours, d)
    r = sh(launch.owned_rundir(str(d)) + "echo entered")
    assert r.returncode == launch.REFUSED and "entered" not in r.stdout


def test_a_link_at_the_path_is_refused_even_when_it_points_nowhere(base, tmp_path):
    d = base / run_id()
    os.symlink(tmp_path / "nowhere", d)
    r = sh(launch.make_rundir(str(d)) + "echo used")
    assert r.returncode == launch.REFUSED and "already exists" in r.stderr
    assert not (tmp_path / "nowhere").exists()


@root_only
def test_a_parent_others_may_write_in_without_the_sticky_bit_is_refused(tmp_path):
    """In such a parent a user could move the new directory away and put theirs in its place."""
    parent = tmp_path / "open"
    parent.mkdir()
    os.chmod(parent, 0o777)
    r = sh(launch.make_rundir(str(parent / run_id())) + "echo used")
    assert r.returncode == launch.REFUSED and "without the sticky bit" in r.stderr
    assert list(parent.iterdir()) == []
    other = tmp_path / "others"
    other.mkdir()
    os.chown(other, NOBODY, NOBODY)
    r = sh(launch.make_rundir(str(other / run_id())) + "echo used")
    assert r.returncode == launch.REFUSED and "belongs to another user" in r.stderr


def test_a_missing_parent_is_named(tmp_path):
    r = sh(launch.make_rundir(str(tmp_path / "absent" / run_id())))
    assert r.returncode == launch.REFUSED and f"{tmp_path / 'absent'} is not a directory" in r.stderr


def test_names_with_shell_characters_stay_data(base):
    d = base / 'nccldiag-$(touch x)`id`"q'
    r = sh(launch.make_rundir(str(d)) + launch.owned_rundir(str(d)) + "echo ok")
    assert r.returncode == 0 and r.stdout == "ok\n", r.stderr
    assert d.is_dir() and not (base / "x").exists()


@root_only
def test_clean_up_leaves_a_directory_it_did_not_make(base, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("root's\n")
    d = plant(base, run_id(), victim)
    from nccldiag.transport.nodes import LocalNode

    assert runner.cleanup([LocalNode("here")], str(d)) == {}
    assert d.is_dir() and (d / "sitecustomize.py").exists()
    ours = base / run_id()
    assert sh(launch.make_rundir(str(ours))).returncode == 0
    assert runner.cleanup([LocalNode("here")], str(ours)) == {}
    assert not ours.exists()


def test_the_staged_files_belong_to_root_and_are_closed(tmp_path):
    src = tmp_path / "w.py"
    src.write_text("x = 1\n")
    os.chmod(src, 0o666)
    data = base64.b64decode(runner._archive({"pkg/w.py": str(src)}))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        (m,) = tar.getmembers()
    assert (m.uid, m.gid, m.uname, m.mode) == (0, 0, "root", 0o600)


def test_a_run_directory_goes_when_the_process_that_staged_it_is_killed(base):
    """The staging command leaves a watchdog: nccldiag killed with SIGKILL right after staging (no launch yet,
    as mpirun's other nodes never get one) leaves no run directory and no process of the run."""
    import signal
    import sys
    import time

    rid = run_id()
    d = base / rid
    cmd = launch.make_rundir(str(d)) + launch.rundir_watchdog(str(d), rid, 120) + \
        f"env {launch.RUN_MARK}={rid}-3 sleep 300 </dev/null >/dev/null 2>&1 & true"
    # the stand-in for nccldiag: it runs the staging command as its child, then lives on until killed
    stager = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "subprocess.run(['sh', '-c', sys.argv[1]], check=True); time.sleep(300)", cmd])
    try:
        deadline = time.monotonic() + 30
        while not (d / launch.TMP).is_dir() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (d / launch.TMP).is_dir() and oct(d.stat().st_mode & 0o777) == "0o700"
        time.sleep(1.5)  # the watchdog keeps it while its parent lives: two of its polls pass
        assert d.is_dir()
    finally:
        stager.send_signal(signal.SIGKILL)
        stager.wait(10)
    deadline = time.monotonic() + 20  # it polls once a second; the bound allows for a loaded machine
    while d.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not d.exists()
    left = sh(f"grep -lsaz '^{launch.RUN_MARK}={rid}-3$' /proc/[0-9]*/environ; true").stdout
    assert left == ""  # the job's process (isolate marks each job <run_id>-<n>) was killed with it


def test_the_ranks_temporary_files_go_in_the_run_directory():
    spec = launch.LaunchSpec(run_id="nccldiag-x", rundir="/tmp/nccldiag-x")
    assert launch.node_env(spec, None)["TMPDIR"] == "/tmp/nccldiag-x/tmp"
    cmd, _ = mpirun.command(spec, ["a", "b"], {"a": None, "b": None})
    assert "OMPI_MCA_orte_tmpdir_base=/tmp/nccldiag-x/tmp" in cmd and "-x TMPDIR" in cmd


def test_a_node_answer_nested_deep_is_a_named_problem_not_a_traceback():
    """The node's info line is its answer, not trusted: JSON nested 100,000 deep (json.loads raises
    RecursionError on it) makes that node a named problem, as any answer that is not the node program's."""
    out = runner.Prepared("r", "/tmp/r", "10.0.0.1", 29400, {}, {}, {})
    deep = "[" * 100000 + "]" * 100000
    runner._read_facts("n1", {"info": deep, "hostname": "n1"}, out, "python3", None)
    assert "n1" in out.problems and "cannot run the probe on n1" in out.problems["n1"]
    runner._read_facts("n2", {"info": '{"free_port": 29401, "gpus": 0, "torch": "2.5"}', "hostname": "n2"},
                       out, "python3", None)
    assert "n2" not in out.problems and out.info["n2"]["free_port"] == 29401
