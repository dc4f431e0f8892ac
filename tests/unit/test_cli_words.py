"""The same option words mean the same thing on every command: ``--alloc-timeout`` is the wait for a Slurm
allocation everywhere (check, collect and spec init still read their old ``--timeout``, with one deprecation
line on stderr), probe's and isolate's ``--timeout`` is their own deadline only, ``--run-dir`` names the run
directory (``-o`` stays its short form on probe and isolate), and :class:`HostCommand` releases the allocation.

Slurm's commands are not run: ``nccldiag.slurm.client.run`` (the one place they are started) is replaced by a
recorder. Its answers are texts written for these tests in the form salloc and scontrol print them."""
import pytest
from click.testing import CliRunner

from nccldiag.cli import main
from nccldiag.slurm import client

DEPRECATED = "nccldiag: warning: --timeout is deprecated here: use --alloc-timeout"


class FakeSlurm:
    """Records every Slurm command; salloc refuses (``grant=False``) or grants job 42 on n1,n2."""

    def __init__(self, grant: bool = False):
        self.grant = grant
        self.calls = []

    def __call__(self, argv, timeout=None):
        from nccldiag.transport.base import ExecResult

        self.calls.append(list(argv))
        if argv[0] == "salloc":
            if not self.grant:
                return ExecResult("slurm", 1, "", "salloc: error: Unable to allocate resources: Requested nodes "
                                                  "are busy\n")
            return ExecResult("slurm", 0, "", "salloc: Granted job allocation 42\n")
        if argv[:3] == ["scontrol", "show", "job"]:
            return ExecResult("slurm", 0, "JobId=42 JobName=nccldiag NodeList=n[1-2] NumNodes=2\n", "")
        return ExecResult("slurm", 0, "", "")

    def salloc(self):
        asked = [c for c in self.calls if c[0] == "salloc"]
        assert len(asked) == 1, self.calls
        return asked[0]

    def immediate(self) -> str:
        return next(a for a in self.salloc() if a.startswith("--immediate="))

    def cancelled(self):
        return [c for c in self.calls if c[0] == "scancel"]


@pytest.fixture
def slurm(monkeypatch):
    fake = FakeSlurm()
    monkeypatch.setattr(client, "run", fake)
    monkeypatch.setattr(client, "require", lambda command="scontrol": None)
    for k in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "NCCLDIAG_SPEC"):
        monkeypatch.delenv(k, raising=False)
    return fake


def invoke(args):
    return CliRunner().invoke(main, args)


ALLOCATING = {
    "check": ["check", "--partition", "gpu", "--nodes", "2"],
    "collect": ["collect", "-o", "BUNDLE", "--partition", "gpu", "--nodes", "2"],
    "spec init": ["spec", "init", "--partition", "gpu", "--nodes", "2"],
    "probe": ["probe", "--launcher", "srun", "--partition", "gpu", "--nodes", "2"],
    "isolate": ["isolate", "--launcher", "srun", "--partition", "gpu", "--nodes", "2"],
}


def _args(name, tmp_path, *extra):
    return [str(tmp_path / "b") if a == "BUNDLE" else a for a in ALLOCATING[name]] + list(extra)


@pytest.mark.parametrize("name", sorted(ALLOCATING))
def test_alloc_timeout_is_salloc_s_wait_on_every_command(name, slurm, tmp_path):
    r = invoke(_args(name, tmp_path, "--alloc-timeout", "7"))
    assert r.exit_code == 3, r.output
    assert slurm.immediate() == "--immediate=7"
    assert "did not grant the allocation" in r.stderr and "within --alloc-timeout 7 s" in r.stderr
    assert "deprecated" not in r.stderr and "Traceback" not in r.output


@pytest.mark.parametrize("name", sorted(ALLOCATING))
def test_without_alloc_timeout_the_wait_is_a_minute(name, slurm, tmp_path):
    r = invoke(_args(name, tmp_path))
    assert r.exit_code == 3, r.output
    assert slurm.immediate() == "--immediate=60"


@pytest.mark.parametrize("name", ["check", "collect", "spec init"])
def test_old_timeout_still_sets_the_wait_with_one_deprecation_line_on_stderr(name, slurm, tmp_path):
    r = invoke(_args(name, tmp_path, "--timeout", "9"))
    assert r.exit_code == 3, r.output
    assert slurm.immediate() == "--immediate=9"
    assert r.stderr.count(DEPRECATED) == 1 and DEPRECATED in r.stderr.splitlines()[0]
    assert "deprecated" not in r.stdout


@pytest.mark.parametrize("name", ["check", "collect", "spec init"])
def test_old_and_new_spelling_together_is_a_usage_error(name, slurm, tmp_path):
    r = invoke(_args(name, tmp_path, "--timeout", "9", "--alloc-timeout", "8"))
    assert r.exit_code == 2, r.output
    assert "--timeout is the old name of --alloc-timeout: give one" in r.stderr
    assert slurm.calls == []  # refused before Slurm was asked


@pytest.mark.parametrize("name", ["probe", "isolate"])
def test_the_deadline_timeout_no_longer_changes_the_allocation_wait(name, slurm, tmp_path):
    # before, probe and isolate waited min(--timeout, 600) s for the allocation: here 300
    r = invoke(_args(name, tmp_path, "--timeout", "300"))
    assert r.exit_code == 3, r.output
    assert slurm.immediate() == "--immediate=60"
    assert "deprecated" not in r.stderr
    r = invoke(_args(name, tmp_path, "--timeout", "300", "--alloc-timeout", "5"))
    assert slurm.calls[-1][0] == "salloc" and "--immediate=5" in slurm.calls[-1]


@pytest.mark.parametrize("argv,word", [
    (["check"], "--alloc-timeout"), (["collect"], "--alloc-timeout"), (["spec", "init"], "--alloc-timeout"),
    (["probe"], "--alloc-timeout"), (["isolate"], "--alloc-timeout"),
    (["check"], "--run-dir"), (["probe"], "--run-dir"), (["isolate"], "--run-dir"),
])
def test_help_shows_the_new_word(argv, word):
    r = invoke([*argv, "--help"])
    assert r.exit_code == 0 and word in r.stdout


@pytest.mark.parametrize("argv", [["check"], ["collect"], ["spec", "init"]])
def test_help_leaves_the_deprecated_timeout_out(argv):
    r = invoke([*argv, "--help"])
    assert r.exit_code == 0 and "--timeout" not in r.stdout


@pytest.mark.parametrize("command", ["probe", "isolate"])
@pytest.mark.parametrize("spelling", ["--run-dir", "-o", "--output"])
def test_run_dir_and_its_short_form_name_the_same_directory_without_a_warning(command, spelling, capsys):
    from nccldiag.cli import isolate, probe

    cmd = {"probe": probe.probe, "isolate": isolate.isolate}[command]
    ctx = cmd.make_context(command, [spelling, "RUN"])
    assert ctx.params["out_dir"] == "RUN"
    assert capsys.readouterr().err == ""


def test_isolate_names_its_run_directory_by_the_new_word_when_it_is_refused(tmp_path, slurm):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "something").write_text("not empty\n")
    r = invoke(["isolate", "-w", "n1,n2", "-o", str(taken)])
    assert r.exit_code == 2, r.output
    assert f"--run-dir {taken}" in r.stderr and slurm.calls == []


def _kw(**over):
    kw = {"hostfiles": (), "hosts_exprs": (), "exclude_exprs": (), "partition": "gpu", "nodelist": None,
          "reservation": None, "alloc_nodes": None, "account": None, "qos": None, "alloc_time": None,
          "alloc_wait": None, "transport": "ssh", "fanout": 8, "python": "python3"}
    kw.update(over)
    return kw


def test_host_command_releases_the_allocation_once_however_the_block_ends(monkeypatch):
    from nccldiag.cli.host import HostCommand

    fake = FakeSlurm(grant=True)
    monkeypatch.setattr(client, "run", fake)
    monkeypatch.setattr(client, "require", lambda command="scontrol": None)
    with pytest.raises(RuntimeError):
        with HostCommand(_kw(alloc_wait=12.0)) as host:
            inv = host.hosts()
            assert inv.names == ["n1", "n2"] and host.job == "42"
            assert fake.cancelled() == []
            raise RuntimeError("the command failed")
    assert fake.cancelled() == [["scancel", "42"]]
    assert fake.immediate() == "--immediate=12"


def test_host_command_without_an_allocation_asks_slurm_nothing(monkeypatch):
    from nccldiag.cli.host import HostCommand

    fake = FakeSlurm(grant=True)
    monkeypatch.setattr(client, "run", fake)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_JOBID", raising=False)
    monkeypatch.delenv("SLURM_JOB_NODELIST", raising=False)
    monkeypatch.delenv("SLURM_NODELIST", raising=False)
    with HostCommand(_kw(partition=None, hosts_exprs=("a,b",))) as host:
        assert host.hosts().names == ["a", "b"] and host.job is None and host.alloc is None
    assert fake.calls == []
