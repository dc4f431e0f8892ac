"""Fabric and GPU monitor outputs pasted alone: ``iblinkinfo`` (infiniband-diags) is read by the paste reader
(``nccldiag/paste/kinds/iblinkinfo.py``) into the ibcounters area's ``iblinkinfo`` source and judged there
(``ibcounters.fabric_links``); ``nvidia-smi dmon`` (``nccldiag/paste/kinds/smi_dmon.py``) is read and shown.

The texts are real, as posted (markdown fences stripped):

- ``IBLINKINFO_EDR_HEALTHY``: ``iblinkinfo`` on a two-node EDR HPL cluster (ConnectX-4 HCAs, an SB7700 switch whose
  unused ports 1-16 are Down/Polling), in 824380210/Linpack ``edr76_linpack_WI.md`` at commit 77f28235da1d
  (https://github.com/824380210/Linpack/blob/77f28235da1d1ab230037c33aeb4990d829f59f2/edr76_linpack_WI.md), the
  HPL run after it passing;
- ``IBLINKINFO_HDR_SWITCH_AT_EDR``: ``iblinkinfo -S`` of a Quantum HDR switch whose four links to the nodes' HCA-2
  ports came up at 4X 25.78125 Gbps (EDR) with iblinkinfo's note ``( Could be 53.125 Gbps)`` (both ends support
  HDR), beside two links at 53.125 Gbps; from a public GitHub markdown note on RoCE bonding and ConnectX adapters
  (stored file id 41237316056 of the code index, whose repository the index does not name).
- the ``nvidia-smi dmon -s u`` block of tests/cases/gpu-gaps78a-alengr-blog-sglang-tp2-2x-dgx-spark-cuda-graph-
  capture-hang-dmon-sm96-mem0 (https://al-engr.com/minimax-sglang-debug.html).
"""
from typing import List

import pytest

from nccldiag import paste
from nccldiag.areas import ibcounters
from nccldiag.model.findings import Status
from tests import realcases
from tests.unit.test_pasted import alarms

IBLINKINFO_EDR_HEALTHY = """\
[root@n01 HPL]# iblinkinfo
CA: n02 HCA-1:
      0xec0d9a03003d62be      4    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       2   17[  ] "MF0;SB7700:MSB7700/U1" ( )
CA: mgt mlx5_0:
      0x248a070300928186      3    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       2   36[  ] "MF0;SB7700:MSB7700/U1" ( )
Switch: 0x506b4b0300820910 MF0;SB7700:MSB7700/U1:
           2    1[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    2[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    3[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    4[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    5[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    6[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    7[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    8[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2    9[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2   10[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2   11[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2   12[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2   13[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2   14[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2   15[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2   16[  ] ==(                Down/ Polling)==>             [  ] "" ( )
           2   17[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       4    1[  ] "n02 HCA-1" ( )
           2   18[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       1    1[  ] "n01 HCA-1" ( )
"""

IBLINKINFO_HDR_SWITCH_AT_EDR = """\
root@ubuntu:/home/ubuntu# iblinkinfo -S 0x08c0eb0300add04e
Switch: 0x08c0eb0300add04e Quantum Mellanox Technologies:
          10    1[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10    2[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10    3[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10    4[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10    5[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10    6[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10    7[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10    8[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10    9[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   10[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   11[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   12[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   13[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   14[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   15[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   16[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   17[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   18[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   19[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   20[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   21[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>      40    1[  ] "node3 HCA-2" ( Could be 53.125 Gbps)
          10   22[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>      35    1[  ] "node4 HCA-2" ( Could be 53.125 Gbps)
          10   23[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>      41    1[  ] "node2 HCA-2" ( Could be 53.125 Gbps)
          10   24[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>      37    1[  ] "node1 HCA-2" ( Could be 53.125 Gbps)
          10   25[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   26[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   27[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   28[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   29[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   30[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   31[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   32[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   33[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   34[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   35[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   36[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   37[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   38[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   39[  ] ==(                Down/ Polling)==>             [  ] "" ( )
          10   40[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       4   40[  ] "MF0;d32-03-1:MQM8700/U1" ( )
          10   41[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>      23    1[  ] "Mellanox Technologies Aggregation Node" ( )
root@ubuntu:/home/ubuntu# 
"""

DMON_CASE = "gpu-gaps78a-alengr-blog-sglang-tp2-2x-dgx-spark-cuda-graph-capture-hang-dmon-sm96-mem0"


def _links(text: str) -> List:
    return [f for f in paste.scan(text, "paste.txt").findings if f.check == "ibcounters.fabric_links"]


def _prefixed(text: str, prefix: str) -> str:
    return "".join(prefix + line + "\n" for line in text.splitlines())


def test_the_parser_reads_each_port_line_under_its_node():
    links = ibcounters.parse_iblinkinfo(IBLINKINFO_EDR_HEALTHY)
    assert len(links) == 20
    first = links[0]
    assert (first.node, first.port, first.width, first.speed, first.state, first.phys, first.remote) == (
        "n02 HCA-1", "1", "4X", "25.78125 Gbps", "Active", "LinkUp", "MF0;SB7700:MSB7700/U1")
    idle = links[2]
    assert (idle.node, idle.port, idle.state, idle.phys, idle.remote, idle.width) == (
        "0x506b4b0300820910 MF0;SB7700:MSB7700/U1", "1", "Down", "Polling", "", "")
    slow = [l for l in ibcounters.parse_iblinkinfo(IBLINKINFO_HDR_SWITCH_AT_EDR) if l.notes]
    assert [(l.port, l.remote, l.notes) for l in slow][0] == ("21", "node3 HCA-2", "Could be 53.125 Gbps")
    assert len(slow) == 4


@pytest.mark.parametrize("prefix", ["", "node7: "])
def test_a_healthy_iblinkinfo_is_read_passes_and_shows_its_unused_ports(prefix):
    text = "some notes before the output\n" + _prefixed(IBLINKINFO_EDR_HEALTHY, prefix)
    p = paste.scan(text, "paste.txt")
    assert [b.kind for b in p.blocks] == ["iblinkinfo"]
    assert not _links(text)  # the reader keeps what is not ok
    assert not alarms(text)
    facts = ibcounters.parse({"iblinkinfo": IBLINKINFO_EDR_HEALTHY})
    links = ibcounters._judge_fabric_links(facts)
    assert [(f.status, f.message) for f in links] == [
        (Status.OK, "4 fabric links Active at the width and speed both ends support; 16 ports down with no peer")]


@pytest.mark.parametrize("prefix", ["", "node7: "])
def test_links_below_what_both_ends_support_warn(prefix):
    text = "some notes before the output\n" + _prefixed(IBLINKINFO_HDR_SWITCH_AT_EDR, prefix)
    links = _links(text)
    assert [f.status for f in links] == [Status.WARN]
    assert links[0].message.startswith("4 of 6 active fabric links came up below what both ends support: ")
    assert "port 21 -> node3 HCA-2: 4X 25.78125 Gbps (Could be 53.125 Gbps)" in links[0].message
    found = alarms(text)
    assert found and all(d.severity == "warn" for d in found)


def test_an_nvidia_smi_dmon_block_is_read_and_shown_and_judged_by_nobody():
    text = (realcases.REPO / "tests" / "cases" / DMON_CASE / "posted-nvidia-smi-dmon.txt").read_text(encoding="utf-8")
    p = paste.scan(text, "paste.txt")
    assert [b.kind for b in p.blocks] == ["nvidia-smi dmon"]
    assert p.blocks[0].lineno == 2
    assert not p.findings
    prefixed = "some notes before the output\n" + _prefixed(text, "node7: ")
    assert [b.kind for b in paste.scan(prefixed, "paste.txt").blocks] == ["nvidia-smi dmon"]
    assert not alarms(prefixed)
