"""Launch commands: torchrun with static rendezvous, one node rank per host in host-list order."""
import shlex

from nccldiag.probe import launch, runner, session


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
    inner = body.split("; exec ", 1)[1]
    return shlex.split(inner)


def test_torchrun_uses_static_rendezvous_on_the_first_node_address():
    argv = argv_of(launch.torchrun_command(spec(), 3, 2, "eth0"))
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
    cmds = session.build_commands("torchrun", spec(), [N("a"), N("b"), N("c")], prep, 120, local=False)
    assert list(cmds) == ["a", "b", "c"]
    for rank, host in enumerate(("a", "b", "c")):
        argv = argv_of(cmds[host])
        assert f"--node-rank={rank}" in argv
        assert "--master-addr=10.0.0.2" in argv and "--nnodes=3" in argv
    assert "GLOO_SOCKET_IFNAME=ens1" in argv_of(cmds["b"])
    assert not any(a.startswith("GLOO_SOCKET_IFNAME") for a in argv_of(cmds["c"]))
