"""The launchers as units: one registry every --launcher option reads, one Protocol, and the bounds of --timeout."""
import inspect
import shlex

import pytest

from nccldiag.probe import launch, launchers, plan, results, runner
from nccldiag.probe.launchers.base import Launcher


def test_bounds_derive_every_limit_from_one_timeout():
    b = plan.bounds(None, "gloo")
    assert (b.timeout, b.pg, b.join, b.grace, b.watchdog, b.stream, b.launcher) == (120.0, 60, 30, 30.0, 210, 120.0, 120)
    b = plan.bounds(None, "nccl")  # an NCCL hang is queried over RAS before the kill: its output is read longer
    assert (b.timeout, b.pg, b.join, b.grace, b.watchdog, b.stream) == (600.0, 300, 60, 30.0, 690, 625.0)
    b = plan.bounds(8, "gloo")  # the floors: a process group of 5 s at least, a rendezvous of 10 s at least
    assert (b.pg, b.join, b.grace) == (5, 10, 15.0)
    b = plan.bounds(40, "gloo", grace=5.0)  # isolate's pairs end with their first failure
    assert (b.grace, b.watchdog) == (5.0, 105)
    assert "process group 20 s" in b.lines() and "node watchdog 105 s" in b.lines()


def test_every_registered_launcher_is_one_module_with_everything_the_protocol_names():
    members = [n for n, _ in inspect.getmembers(Launcher) if not n.startswith("_")] + list(Launcher.__annotations__)
    assert {"commands", "nodes", "deaths", "stop", "setting_dir", "launched"} <= set(members)
    for name in launchers.LAUNCHERS:
        la = launchers.get(name)
        assert la.name == name
        missing = [m for m in members if not hasattr(la, m)]
        assert missing == [], (name, missing)
    with pytest.raises(KeyError):
        launchers.get("pbsdsh")


def test_both_commands_read_their_launcher_choices_from_the_registry():
    from nccldiag.cli.isolate import isolate
    from nccldiag.cli.probe import probe

    def choices(cmd):
        return list(next(p for p in cmd.params if p.name == "launcher").type.choices)

    assert choices(probe) == ["auto", *launchers.LAUNCHERS]
    assert {"auto", "torchrun", "mpirun", "srun", "local"} <= set(choices(probe))
    assert choices(isolate)[0] == "ssh" and "srun" in choices(isolate)
    assert launchers.get("ssh") is launchers.get("torchrun")  # isolate's ssh: torchrun on each node over SSH


class N:
    def __init__(self, name):
        self.name = name


def prep():
    return runner.Prepared("nccldiag-1-abc", "/tmp/nccldiag-1-abc", "10.0.0.2", 40123,
                           {"a": "eth0", "b": "eth0"}, {}, {}, hostnames={"a": "node-a", "b": "node-b"})


def spec():
    return launch.LaunchSpec(run_id="nccldiag-1-abc", rundir="/tmp/nccldiag-1-abc", nproc_per_node=2,
                             rdzv_host="10.0.0.2", rdzv_port=40123, worker_args=["--backend", "gloo"])


def test_mpirun_runs_on_the_first_node_only_with_the_launchers_own_limit():
    cmds = launchers.get("mpirun").commands(spec(), [N("a"), N("b")], prep(), plan.bounds(90, "gloo"))
    assert list(cmds) == ["a"]
    assert "a slots=2\nb slots=2" in cmds["a"] and "--timeout 90" in cmds["a"]
    la = launchers.get("mpirun").launched([N("a"), N("b")], 2, ("all_reduce",))
    assert la.tagged.name == "mpirun" and la.node_of(3) == "b" and results.MPI_CHECK in la.planned


def test_ssh_launchers_make_the_settings_directory_in_front_of_each_command():
    prefix = launchers.get("torchrun").setting_dir([N("a")], prep(), "p2p-off", None)
    assert "mkdir -p /tmp/nccldiag-1-abc/p2p-off" in prefix and prefix.endswith(" ")
    assert launchers.get("torchrun").starts_on([N("a")]) is None


def test_srun_starts_here_in_slurms_order_and_labels_ranks():
    srun = launchers.get("srun")

    class S(N):
        def __init__(self, name, slurm, order):
            super().__init__(name)
            self.slurm_name, self.order, self.job, self.address = slurm, order, "55", None

    nodes = [S("b", "gpu02", 1), S("a", "gpu01", 0)]
    cmds = srun.commands(spec(), nodes, prep(), plan.bounds(90, "gloo"), name="nccldiag-1-abc-3")
    (where,) = cmds
    words = shlex.split(cmds[where])
    assert where == "srun" and "--job-name=nccldiag-1-abc-3" in words and "--time=2" in words
    assert [n.name for n in srun.starts_on(nodes)] == ["srun"]
    assert srun.rank0(nodes).name == "a"
    assert srun.launched(nodes, 2, ("all_reduce",)).hosts == ("a", "b")


def test_dry_run_shows_the_bounds_and_contacts_nothing(tmp_path):
    from nccldiag.probe import session
    from nccldiag.report import probe_report
    from nccldiag.report.console import console

    opts = session.ProbeOptions(launcher="local", backend="gloo", nproc_per_node=2, timeout=100, dry_run=True,
                                out_dir=str(tmp_path / "run"))
    report = session.run([], opts)
    assert report.commands and "process group 50 s" in report.bounds
    con = console(color=False)
    with con.capture() as cap:
        probe_report.render_commands(report, con)
    assert "# bounds: timeout 100 s, process group 50 s, rendezvous join 25 s" in cap.get()
    assert not (tmp_path / "run").exists()


def test_a_stream_labelled_by_node_binds_each_record_to_the_node_that_wrote_it():
    gate = results.Gate(results.Launched(("a", "b"), 2, ("all_reduce",), tagged=launchers.get("clush").tagging))
    rec = gate.admit("clush", 'b: {"type": "end", "rank": 3}')
    assert rec is not None and rec["host"] == "b" and rec["rank"] == 3
    assert gate.admit("clush", 'a: {"type": "end", "rank": 3}') is None  # a claims b's rank
    assert gate.admit("clush", 'z: {"type": "end", "rank": 0}') is None  # a node not launched
    assert gate.admit("clush", "clush: a: exited with exit code 1") is None  # clush's own words
    assert gate.rejected == {"a": {"records about ranks it did not launch": 1},
                             "clush": {"records of nodes outside those launched": 1}}


def _ssh_nodes(*names, user=None, port=None):
    from nccldiag.inventory import Host
    from nccldiag.transport.nodes import SSHNode
    from nccldiag.transport.ssh import SSHOptions

    opts = SSHOptions(config_path="/etc/ssh/cfg", identity_files=["/k/id"])
    return [SSHNode(Host(n, user=user, port=port), opts) for n in names]


def test_clush_sends_every_node_one_command_that_picks_its_own_torchrun_by_host_name():
    clush = launchers.get("clush")
    nodes = _ssh_nodes("a", "b", user="ops", port=2222)
    cmds = clush.commands(spec(), nodes, prep(), plan.bounds(90, "gloo"))
    (where,) = cmds
    words = shlex.split(cmds[where])
    assert where == "clush" and words[:3] == ["exec", "env", "PYTHONUNBUFFERED=1"]
    assert words[words.index("-w") + 1] == "a,b" and words[words.index("-f") + 1] == "2" and "-S" in words
    assert words[words.index("-l") + 1] == "ops"
    assert shlex.split(words[words.index("-o") + 1]) == ["-oBatchMode=yes", "-oConnectTimeout=10", "-F",
                                                       "/etc/ssh/cfg", "-i", "/k/id", "-p2222"]
    remote = words[-1]
    assert words[-2] == "--" and remote.startswith('case "$(hostname)" in node-a) ')
    branch_b = remote.split("node-b) ")[1]
    assert "--node-rank=1" in branch_b and "--node-rank=0" not in branch_b and "--master-addr=10.0.0.2" in branch_b
    assert "is none of this run's nodes" in remote
    la = clush.launched(nodes, 2, ("all_reduce",))
    assert la.tagged.by_node and [n.name for n in clush.starts_on(nodes)] == ["clush"]


def test_clush_refuses_nodes_it_cannot_tell_apart_or_reach_alike():
    from nccldiag.inventory import Host
    from nccldiag.model.errors import UsageError

    clush = launchers.get("clush")
    p = prep()
    p.hostnames["b"] = "node-a"
    cmds = clush.commands(spec(), _ssh_nodes("a", "b"), p, plan.bounds(90, "gloo"))
    assert "several nodes call themselves node-a" in cmds["clush"] and "nccldiag.node.torchrun" not in cmds["clush"]
    with pytest.raises(UsageError, match="same ssh port"):
        clush.refuse(None, [Host("a", port=22), Host("b", port=2222)], [])


def test_clush_deaths_name_the_node_whose_torchrun_reported_them():
    text = ("b: Root Cause (first observed failure):\nb: [0]:\nb:   time      : 2024-01-01_00:00:00\n"
            "b:   host      : node-b\nb:   rank      : 3 (local_rank: 1)\n"
            "b:   exitcode  : -9 (pid: 4242)\nb:   error_file: <N/A>\n")  # torchrun's block as clush labels it
    (d,) = launchers.get("clush").deaths(text)
    assert d == {"rank": 3, "local_rank": 1, "signal": 9, "name": "signal 9", "node": "b"}


def test_clushs_launch_leaves_the_run_directory_to_the_watchdog_of_its_preparation():
    # clush's SSH session ends with the launch: a launch watchdog would take that for nccldiag's end
    cmds = launchers.get("clush").commands(spec_with_watchdog(), _ssh_nodes("a", "b"), prep(), plan.bounds(90, "gloo"))
    assert "nccldiag.node.torchrun" in cmds["clush"] and "rm -rf" not in cmds["clush"]
    torchrun = launchers.get("torchrun").commands(spec_with_watchdog(), [N("a"), N("b")], prep(), plan.bounds(90, "gloo"))
    assert "rm -rf" in torchrun["a"]


def spec_with_watchdog():
    from dataclasses import replace

    return replace(spec(), watchdog=180)


def test_no_module_outside_the_launchers_names_a_launcher():
    """What differs between launchers is declared in its module (its tagging, whether it runs on this machine
    or in an allocation, its words for a dead rank): no other module branches on a launcher's name. On the
    probe's side (probe/, isolate/ and the modules that read their runs) no string is a launcher's name;
    elsewhere ``srun`` and ``local`` are also the check's transports and Slurm's program, so only the names
    that mean a launcher alone are looked for."""
    import ast

    from tests.unit.test_layers import PKG, dotted, module_imports

    transports = {"ssh", "srun", "local"}  # collect/'s transports, Slurm's srun
    probe_side = {src for src, _w, dst in module_imports() if dst.startswith(("probe", "isolate"))}
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if (PKG / "probe" / "launchers") in path.parents:
            continue
        module = dotted(path).partition(".")[2]
        names = set(launchers.LAUNCHERS)
        if not (module.startswith(("probe.", "isolate.")) or module in probe_side):
            names -= transports
        found += [f"{path.relative_to(PKG)}:{n.lineno} {n.value}" for n in ast.walk(ast.parse(path.read_text()))
                  if isinstance(n, ast.Constant) and n.value in names]
    assert found == []
    assert "report.isolate_report" in probe_side and "collect.srun" not in probe_side


def test_a_run_directory_names_a_launchers_tagging_and_reads_it_back():
    from nccldiag.probe import records

    for name in launchers.LAUNCHERS:
        la = launchers.get(name).launched([N("a"), N("b")], 2, ("all_reduce",))
        back = records.setting_run(plan.Setting("default"), records.setting_line(
            runner.SettingRun(setting=plan.Setting("default"), launched=la)), [], {})
        assert back.launched == la, name
    assert launchers.tagging("node") is None and launchers.tagging(None) is None
