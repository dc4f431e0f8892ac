"""A RoCE retry-exceeded completion whose own WARN names link-local GIDs (``roce-gid``): NCCL and its IB plugin append
' localGid <gid>' and ' remoteGids<gid>' to a failed completion only for an Ethernet link layer, and an fe80:: GID is
the port's MAC-derived entry that is not routed between nodes (the maintainer in NVIDIA/nccl#769). Read on the real
line of a Chinese write-up (``tests/cases``, source in ``tests/cases/SOURCES.md``); the same error 12 with no GID
named stays a timeout between NICs (an NCCL tracker case), and real working runs stay silent: a two-node GPUDirect
RDMA run over InfiniBand and a RoCE node's GID table that lists link-local entries beside the routable one (both
shared captures, read in place).
"""
from __future__ import annotations

from pathlib import Path

from nccldiag.diagnosis import ibverbs
from tests import real, realcases

CASES = Path(__file__).resolve().parents[1] / "cases"
ID = "roce-gid"
LINK_LOCAL = CASES / "net-forum40-gitcodeblog-roce-mixed-hca-error12-linklocal-fe80-gids"


def test_error_12_on_link_local_gids_is_the_gid_selection_with_both_gids():
    ds = realcases.alarms_of_case(LINK_LOCAL)
    assert ds and ds[0].id == ID, [(d.id, d.summary) for d in ds]
    d = ds[0]
    assert (d.category, d.severity, d.confidence) == ("roce_gid_config", "fail", "high")
    assert "fe80::966d:aeff:fe5d:9950" in d.summary and "fe80::6e92:cfff:fe87:ca50" in d.summary
    assert "NCCL_IB_GID_INDEX" in d.fix and "show_gids" in d.fix
    assert "ib-timeout" not in [x.id for x in ds]


def test_the_gids_of_a_completion_are_read_from_its_warn_line():
    from nccldiag.sessions import log as session

    line = (LINK_LOCAL / "posted-warn-line.log").read_text(encoding="utf-8")
    assert "remoteGid fe80::6e92:cfff:fe87:ca50" in line
    res = session.run([str(LINK_LOCAL / "posted-warn-line.log")], workers=1)
    assert res.diagnoses[0][0].id == ID
    m = ibverbs._GIDS.search(line)
    assert (m.group("l"), m.group("r")) == ("fe80::966d:aeff:fe5d:9950", "fe80::6e92:cfff:fe87:ca50")


def test_error_12_without_gids_stays_a_timeout_between_nics():
    ds = realcases.alarms_of_case(CASES / "net-nccltrk426-roce-completion-error12-vendor-err-129-gid-index")
    assert ds and ds[0].id == "ib-timeout", [(d.id, d.summary) for d in ds]


def test_working_runs_stay_silent():
    ib = realcases.alarms_of([real.nccl_log("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log")])
    assert ID not in [d.id for d in ib], [(d.id, d.summary) for d in ib]
    table = real.ROOT / "cases" / "node-nccl769-a100-roce-bond-gid-table-healthy-linklocal-index-chosen" / "node-a"
    ds = realcases.alarms_of([table / "ibv_devinfo.txt"])
    assert ID not in [d.id for d in ds], [(d.id, d.summary) for d in ds]


# The title of NVIDIA/nccl#1814, a RoCE completion WARN whose poster redacted the peer's address ('xxx.xxx.xxx.xxx')
# and left the IPv4-mapped GIDs.
REDACTED_PEER = ("NCCL WARN NET/IB : Got completion from peer xxx.xxx.xxx.xxx<55921> with status=12 opcode=1 len=0 "
                 "vendor err 129 (Send) localGid ::ffff:29.87.4.221 remoteGids::ffff:29.87.88.182")


def test_gids_are_read_whole_where_a_poster_redacted_their_addresses():
    from tests.mutations import anonymised

    m = ibverbs._GIDS.search(REDACTED_PEER)
    assert (m.group("l"), m.group("r")) == ("::ffff:29.87.4.221", "::ffff:29.87.88.182")
    # the same line with every IPv4 address redacted as posters redact them: both GIDs keep their IPv4-mapped form,
    # and a link-local GID beside a redacted one is still seen (before, a GID stopped at the first 'x')
    m = ibverbs._GIDS.search(anonymised()(REDACTED_PEER))
    assert (m.group("l"), m.group("r")) == ("::ffff:x.x.x.x", "::ffff:x.x.x.x")
    line = (LINK_LOCAL / "posted-warn-line.log").read_text(encoding="utf-8")
    mixed = line.replace("localGid fe80::966d:aeff:fe5d:9950", "localGid ::ffff:<IP>")
    m = ibverbs._GIDS.search(mixed)
    assert (m.group("l"), m.group("r")) == ("::ffff:<IP>", "fe80::6e92:cfff:fe87:ca50")
