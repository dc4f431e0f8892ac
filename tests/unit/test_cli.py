"""The command line as a newcomer meets it: every command registered whatever the import order, and a
probe without torch that says how to install it and leaves nothing behind."""
import os
import site
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def fresh(code: str, env=None, cwd=None, python_args=()):
    return subprocess.run([sys.executable, *python_args, "-c", code], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


def test_every_command_registered_whatever_is_imported_first():
    for first in ("nccldiag.cli.probe", "nccldiag.cli.log", "nccldiag.cli.check", "nccldiag.cli.collect",
                  "nccldiag.cli.report", "nccldiag.cli.isolate", "nccldiag.cli.spec"):
        r = fresh(f"import {first}\nfrom nccldiag.cli import main\nprint(sorted(main.commands))")
        assert r.returncode == 0, r.stderr
        assert r.stdout.split("\n")[0] == "['check', 'collect', 'isolate', 'log', 'probe', 'report', 'spec']", first


def torchless_path(tmp_path) -> str:
    """A site-packages view with everything this interpreter has but torch (a real interpreter without torch)."""
    view = tmp_path / "site"
    view.mkdir()
    for sp in site.getsitepackages():
        for entry in Path(sp).iterdir():
            if entry.name.startswith(("torch", "functorch")) or entry.suffix == ".pth" or entry.name.startswith("__editable__"):
                continue
            if not (view / entry.name).exists():
                (view / entry.name).symlink_to(entry)
    return f"{REPO}{os.pathsep}{view}"


def test_probe_without_torch_says_how_to_install_it_and_creates_nothing(tmp_path):
    work, state = tmp_path / "cwd", tmp_path / "state"
    work.mkdir()
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": torchless_path(tmp_path), "XDG_STATE_HOME": str(state),
           "HOME": str(tmp_path), "NO_COLOR": "1"}
    r = fresh("import sys; from nccldiag.cli import main; sys.argv = ['nccldiag', 'probe']; main()",
              env=env, cwd=work, python_args=("-S",))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "torch is not installed" in r.stderr and f"{sys.executable} -m pip install torch" in r.stderr
    assert "Traceback" not in r.stderr
    assert list(work.iterdir()) == [] and not state.exists()


def test_an_unwritable_json_path_is_refused_before_any_work(tmp_path):
    for path, why in ((tmp_path / "no" / "such" / "r.json", "does not exist"), (tmp_path, "is a directory")):
        for cmd in (["check", "-w", "node-that-is-never-contacted"], ["probe", "--dry-run"]):
            r = fresh(f"import sys; from nccldiag.cli import main; sys.argv = {['nccldiag', *cmd, '--json', str(path)]!r}; main()")
            assert r.returncode == 2, (cmd, r.stderr)
            assert "--json" in r.stderr and why in r.stderr and "Traceback" not in r.stderr


def test_an_internal_error_has_its_own_exit_code(tmp_path):
    """A bug is exit 4, one line, never 1 ("a check failed"): here the report renderer is broken on purpose."""
    code = ("import sys; import nccldiag.report.check_report as cr\n"
            "def broken(*a, **k):\n    raise KeyError('boom')\n"
            "cr.render = broken\n"
            "from nccldiag.cli import main; sys.argv = ['nccldiag', 'check', '--only', 'system']; main()")
    r = fresh(code)
    assert r.returncode == 4, r.stderr
    assert "internal error (KeyError" in r.stderr and "Traceback" not in r.stderr


def test_a_full_stdout_loses_the_table_not_the_run(tmp_path):
    """``nccldiag check ... > file`` on a full disk (/dev/full answers every write with ENOSPC): a warning on
    stderr, the run directory and the report files written, the run's own exit code (it was exit 4)."""
    bundle = tmp_path / "b" / "n1"
    bundle.mkdir(parents=True)
    (bundle / "hostname.txt").write_text("n1\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    for args in (["check", "--bundle", str(bundle.parent), "--run-dir", str(tmp_path / "run"),
                  "--json", str(tmp_path / "r.json")], ["report", str(tmp_path / "run"), "-v"],
                 ["report", str(tmp_path / "run"), "--json", "-"]):
        with open("/dev/full", "w") as full:
            r = subprocess.run([sys.executable, "-m", "nccldiag", *args], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=120, env=env, cwd=tmp_path)
        assert r.returncode == 0, (args, r.stderr)
        assert "nccldiag: warning: stdout: No space left on device" in r.stderr and "Traceback" not in r.stderr
    assert (tmp_path / "run" / "report.json").exists() and (tmp_path / "r.json").exists()
