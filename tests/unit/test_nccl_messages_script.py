"""scripts/nccl-messages --against REV lists the rows of the table's release worded otherwise in release REV: the
older wording, the row that keeps it or reads it. Run on a git repository written for the test (its two files are
constructed, not NCCL's: each holds one WARN call in the shape NCCL's source writes it)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "nccl-messages"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

FILES = {
    # the wording of NCCL 2.4-2.18's SYSCHECK: kept in its own row of v2.18.3-1
    "src/include/checks.h": '#define SYSCHECK(call, name) do { \\\n'
                            '  if (ret == -1) { WARN("Call to " name " failed : %s", strerror(errno)); } \\\n'
                            '} while (0)\n',
    # an older wording of nvml-failed that the row's pattern reads, and one message the table has as it is
    "src/misc/nvmlwrap.cc": 'void f() {\n  WARN("nvmlInit() failed: %s", nvmlErrorString(ret));\n'
                            '  WARN("Thread creation failed: %s", strerror(err));\n}\n',
}


def _git(repo: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env, timeout=60)


def test_against_an_older_release_lists_the_rows_worded_otherwise(tmp_path):
    repo = tmp_path / "nccl"
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "old")
    _git(repo, "tag", "v2.4.8-1")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(SCRIPT), "--git", str(repo / ".git"), "--against", "v2.4.8-1"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    syscall = next(x for x in lines if "row syscall-failed:" in x)
    # the older wording is a row's text of its own (syscall-failed-spaced, v2.18.3-1; shm-open-denied-old, v2.7.8-1;
    # socket-connect-timeout-syscheck, v2.3.5-5)
    assert "'Call to %s failed : %s'" in syscall and any(f"kept in row {r} (v" in syscall for r in (
        "syscall-failed-spaced", "shm-open-denied-old", "socket-connect-timeout-syscheck"))
    nvml = next(x for x in lines if "row nvml-failed:" in x)
    assert "'nvmlInit() failed: %s'" in nvml and "read by row nvml-failed" in nvml
    assert not any("row thread-creation:" in x for x in lines)
    assert "1 worded the same" in lines[-1] and "(0 read by no row: none)" in lines[-1]


def test_against_a_release_that_is_not_there_says_so(tmp_path):
    repo = tmp_path / "empty"
    repo.mkdir()
    _git(repo, "init", "-q")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(SCRIPT), "--git", str(repo / ".git"), "--against", "v9.9.9-1"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and "cannot read the NCCL source" in out.stderr and "Traceback" not in out.stderr


NCCL_GIT = os.environ.get("NCCLDIAG_NCCL_GIT", "")


@pytest.mark.skipif(not NCCL_GIT, reason="NCCLDIAG_NCCL_GIT names no NCCL git directory (a clone's .git or a mirror)")
def test_the_formats_table_cites_lines_that_write_each_level():
    """Each tagged row of knowledge/nccl_formats.toml cites a line of NCCL's source, at its tag, that writes its
    level word (run where NCCLDIAG_NCCL_GIT names a clone of NVIDIA/nccl with its tags)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(SCRIPT), "--git", NCCL_GIT, "--formats"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "rows checked against their tag: ok" in out.stdout
