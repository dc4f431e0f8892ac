"""The settings matrix and the size sweep (pure)."""
import pytest

from nccldiag.model.errors import UsageError
from nccldiag.node import sizes
from nccldiag.probe import plan


def names(rows):
    return [r.name for r in rows]


def test_nccl_default_matrix():
    rows = plan.build_settings("nccl")
    assert names(rows) == ["default", "p2p-off", "shm-off", "ib-off", "p2p-ib-off"]
    env = {r.name: r.env for r in rows}
    assert env["default"] == {}
    assert env["p2p-off"] == {"NCCL_P2P_DISABLE": "1"}
    assert env["shm-off"] == {"NCCL_SHM_DISABLE": "1"}
    # IB off also names the socket transport: an external IB plugin ignores NCCL_IB_DISABLE
    assert env["ib-off"] == {"NCCL_IB_DISABLE": "1", "NCCL_NET": "Socket"}
    assert env["p2p-ib-off"]["NCCL_P2P_DISABLE"] == "1" and env["p2p-ib-off"]["NCCL_IB_DISABLE"] == "1"
    assert all(r.why for r in rows) and not any(r.requires_ib for r in rows)


def test_ib_rows_force_ib_and_toggle_gdr():
    rows = plan.build_settings("nccl", require_ib=True)
    extra = {r.name: r for r in rows[5:]}
    assert set(extra) == {"ib-gdr", "ib-no-gdr"}
    assert extra["ib-gdr"].env == {"NCCL_NET": "IB", "NCCL_NET_GDR_LEVEL": "SYS"}
    assert extra["ib-no-gdr"].env == {"NCCL_NET": "IB", "NCCL_NET_GDR_LEVEL": "LOC"}
    assert all(r.requires_ib for r in extra.values())


def test_default_mode_keeps_one_row_plus_custom():
    assert names(plan.build_settings("nccl", mode="default")) == ["default"]
    rows = plan.build_settings("nccl", custom=["NCCL_ALGO=Ring"], mode="default")
    assert names(rows) == ["default", "custom-algo=ring"]
    assert rows[1].custom and rows[1].env == {"NCCL_ALGO": "Ring"}


def test_gloo_has_one_row_with_the_reason():
    (row,) = plan.build_settings("gloo", require_ib=True)
    assert row.name == "default" and row.env == {} and "gloo" in row.why


def test_names_are_stable_and_unique():
    a = plan.build_settings("nccl", custom=["NCCL_SOCKET_IFNAME==eth0,=eth1", "NCCL_PROTO=Simple,NCCL_ALGO=Tree"])
    b = plan.build_settings("nccl", custom=["NCCL_SOCKET_IFNAME==eth0,=eth1", "NCCL_PROTO=Simple,NCCL_ALGO=Tree"])
    assert names(a) == names(b)
    assert len(set(names(a))) == len(a)
    assert names(a)[-2:] == ["custom-socket_ifname==eth0_=eth1", "custom-proto=simple+algo=tree"]


def test_row_parsing_keeps_comma_lists_whole():
    assert plan.parse_row("NCCL_SOCKET_IFNAME=^docker,lo,NCCL_IB_DISABLE=1") == {
        "NCCL_SOCKET_IFNAME": "^docker,lo", "NCCL_IB_DISABLE": "1"}
    assert plan.parse_row("NCCL_IB_HCA==mlx5_0:1,=mlx5_1:1") == {"NCCL_IB_HCA": "=mlx5_0:1,=mlx5_1:1"}
    assert plan.parse_row("NCCL_ALGO=allreduce:tree;ring") == {"NCCL_ALGO": "allreduce:tree;ring"}
    assert plan.parse_row("NCCL_DEBUG_FILE=/tmp/nccl.%h.%p.log") == {"NCCL_DEBUG_FILE": "/tmp/nccl.%h.%p.log"}


@pytest.mark.parametrize("bad, why", [
    ("", "empty"),
    ("=1", "expected KEY=VALUE"),
    ("1NCCL=1", "expected KEY=VALUE"),
    ("NCCL_IB_HCA=mlx5_0 mlx5_1", "contains"),
    ("NCCL_X=$(reboot)", "contains"),
    ("NCCL_X=a;rm -rf /", "contains"),
    ("NCCL_X=`id`", "contains"),
    ("NCCL_X='q'", "contains"),
    ("NCCL_X=a\nb", "contains"),
    ("RANK=3", "set by the probe launcher"),
    ("NCCL_P2P_DISABLE=1,NCCL_P2P_DISABLE=0", "given twice"),
])
def test_bad_rows_are_refused(bad, why):
    with pytest.raises(plan.PlanError, match=why.replace("$", r"\$")):
        plan.parse_row(bad)


def test_plan_errors_are_usage_errors_and_duplicates_refused():
    assert issubclass(plan.PlanError, UsageError)
    with pytest.raises(plan.PlanError, match="repeats the row 'p2p-off'"):
        plan.build_settings("nccl", custom=["NCCL_P2P_DISABLE=1"])
    with pytest.raises(plan.PlanError, match="backend"):
        plan.build_settings("mpi")


def test_sizes_sweep_like_nccl_tests():
    assert sizes.sizes(1024, 1 << 20, 4) == [1024, 4096, 16384, 65536, 262144, 1048576]
    assert sizes.sizes(8, 8, 2) == [8]
    assert sizes.sizes(1000, 5000, 2) == [1000, 2000, 4000, 5000]  # the max is always reached
    for args in ((0, 8, 2), (16, 8, 2), (8, 16, 1)):
        with pytest.raises(ValueError):
            sizes.sizes(*args)


def test_check_sizes_cover_small_middle_large():
    assert sizes.check_sizes([1, 2, 4, 8, 16]) == [1, 4, 16]
    assert sizes.check_sizes([8]) == [8]
    assert sizes.check_sizes([]) == []


def test_parse_size_suffixes():
    assert [plan.parse_size(s) for s in ("1K", "128M", "1G", "4096", "2KiB", "1.5K", "8B")] == [
        1024, 128 << 20, 1 << 30, 4096, 2048, 1536, 8]
    for bad in ("", "x", "-1K", "0"):
        with pytest.raises(plan.PlanError):
            plan.parse_size(bad)


def test_backend_defaults():
    g, n = sizes.defaults("gloo"), sizes.defaults("nccl")
    assert g.max_bytes <= 1 << 20 and g.iters <= 5  # quick: gloo checks wiring, not bandwidth
    assert n.max_bytes >= 1 << 30 and n.iters >= 20
    assert len(sizes.sizes(g.min_bytes, g.max_bytes, g.factor)) <= 6


def test_each_row_labelled_with_its_variables():
    rows = plan.build_settings("nccl", mode="default", custom=["NCCL_ALGO=Ring"])
    assert [r.label() for r in rows] == ["default", "custom-algo=ring (NCCL_ALGO=Ring)"]


def test_two_nodes_get_a_ring_row_for_the_bandwidth_comparison():
    rows = plan.build_settings("nccl", nnodes=2)
    assert names(rows)[-1] == "ring" and rows[-1].env == {"NCCL_ALGO": "Ring"}
    assert "ring" not in names(plan.build_settings("nccl", nnodes=3))
    assert "ring" not in names(plan.build_settings("nccl", nnodes=2, mode="default"))
    assert "ring" not in names(plan.build_settings("gloo", nnodes=2))
    # the user's own ring row stands in for it, under its custom name
    rows = plan.build_settings("nccl", nnodes=2, custom=["NCCL_ALGO=Ring"])
    assert "ring" not in names(rows) and rows[-1].env == {"NCCL_ALGO": "Ring"}
