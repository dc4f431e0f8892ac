"""infiniband-diags' port counters pasted alone or among other text: ``perfquery [-x]`` blocks and ``ibqueryerrors``
output are read by the paste reader (``nccldiag/paste/kinds/perfquery.py``) into the ibcounters area's ``ib_counters``
source, and judged as ``check`` judges the same counters collected on a node.

The texts are real, as posted:

- ``PERFQUERY_X_RHEL75``: a ``perfquery -x 10 1`` run on RHEL 7.5, every counter zero, in the description of
  https://github.com/linux-rdma/infiniband-diags/issues/16 (bsnapko, 2018-08-28), fence stripped;
- ``IBQUERYERRORS_LIST``: an ``ibqueryerrors`` sweep of a small fabric (two ConnectX-3 hosts' ports with only
  ``PortXmitWait``, an SX6036 switch with link-downed, relay and discard errors), quoted with ``> `` in "opensm + ceph
  RDMA = Down OSDs" on the linux-rdma list (2021-03-16,
  https://lore.kernel.org/linux-rdma/CAMCTd2ncDaqfgSOov67rAX6-YekFwe_eME-t62ERHiFAEPZ7EA@mail.gmail.com/);
- ``IBQUERYERRORS_LINE``: one ``ibqueryerrors`` port line posted alone in https://github.com/openucx/ucx/issues/9590
  (denisbertini, 2025-03-10), a fabric whose UCX jobs failed with transport retry errors.
"""
from typing import List

import pytest

from nccldiag import paste
from nccldiag.model.findings import Status
from tests.unit.test_pasted import alarms

PERFQUERY_X_RHEL75 = """\
# perfquery -x 10 1
# Port extended counters: Lid 10 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)
PortSelect:......................1
CounterSelect:...................0x0000
PortXmitData:....................0
PortRcvData:.....................0
PortXmitPkts:....................0
PortRcvPkts:.....................0
PortUnicastXmitPkts:.............0
PortUnicastRcvPkts:..............0
PortMulticastXmitPkts:...........0
PortMulticastRcvPkts:............0
CounterSelect2:..................0x00000000
SymbolErrorCounter:..............0
LinkErrorRecoveryCounter:........0
LinkDownedCounter:...............0
PortRcvErrors:...................0
PortRcvRemotePhysicalErrors:.....0
PortRcvSwitchRelayErrors:........0
PortXmitDiscards:................0
PortXmitConstraintErrors:........0
PortRcvConstraintErrors:.........0
LocalLinkIntegrityErrors:........0
ExcessiveBufferOverrunErrors:....0
VL15Dropped:.....................0
PortXmitWait:....................0
QP1Dropped:......................0
"""

IBQUERYERRORS_LIST = """\
> # ibqueryerrors
> Errors for "dl380g7 mlx4_0"
>    GUID 0x7cfe900300179b31 port 1: [VL15Dropped == 14] [PortXmitWait == 4294967295]
>    GUID 0x7cfe900300179b32 port 2: [PortXmitWait == 2]
> Errors for "server mlx4_0"
>    GUID 0x2c9030042dff1 port 1: [PortXmitWait == 4294967295]
> Errors for 0x2c903006e29b0 "MF0;ys23ib4:SX6036/U1"
>    GUID 0x2c903006e29b0 port ALL: [LinkErrorRecoveryCounter == 15] [LinkDownedCounter == 48] [PortRcvSwitchRelayErrors == 2461] [PortXmitDiscards == 15854] [VL15Dropped == 5] [PortXmitWait == 4294967295]
>    GUID 0x2c903006e29b0 port 0: [PortXmitWait == 76959324]
>    GUID 0x2c903006e29b0 port 1: [LinkDownedCounter == 8] [PortRcvSwitchRelayErrors == 2] [PortXmitWait == 4294967295]
>    GUID 0x2c903006e29b0 port 2: [LinkDownedCounter == 5] [PortRcvSwitchRelayErrors == 4] [VL15Dropped == 2] [PortXmitWait == 4294967295]
>    GUID 0x2c903006e29b0 port 3: [LinkDownedCounter == 5] [PortRcvSwitchRelayErrors == 2] [VL15Dropped == 3] [PortXmitWait == 4294967295]
>    GUID 0x2c903006e29b0 port 4: [LinkDownedCounter == 8] [PortRcvSwitchRelayErrors == 2] [PortXmitWait == 2]
>    GUID 0x2c903006e29b0 port 5: [SymbolErrorCounter == 65535] [LinkErrorRecoveryCounter == 8] [LinkDownedCounter == 2] [PortRcvSwitchRelayErrors == 149] [PortXmitDiscards == 649] [PortXmitWait == 84704351]
>    GUID 0x2c903006e29b0 port 6: [LinkDownedCounter == 9] [PortRcvSwitchRelayErrors == 2285] [PortXmitDiscards == 14176] [PortXmitWait == 4294967295]
>    GUID 0x2c903006e29b0 port 7: [SymbolErrorCounter == 65535] [LinkErrorRecoveryCounter == 7] [LinkDownedCounter == 2] [PortRcvSwitchRelayErrors == 1]
>    GUID 0x2c903006e29b0 port 8: [LinkDownedCounter == 9] [PortRcvSwitchRelayErrors == 16] [PortXmitDiscards == 1029]
> Errors for "rd240 mlx4_0"
>    GUID 0xe41d2d0300e0bae1 port 1: [PortXmitWait == 4294967295]
>    GUID 0xe41d2d0300e0bae2 port 2: [PortXmitWait == 1]
>
> ## Summary: 4 nodes checked, 4 bad nodes found
> ##          43 ports checked, 14 ports have errors beyond threshold
> ## Thresholds:
> ## Suppressed:
"""

IBQUERYERRORS_LINE = ' GUID 0x1070fd0300370ea2 port ALL: [LinkDownedCounter == 25 (25.000)] [PortRcvErrors == 26 (26.000)] [PortXmitDiscards == 2846 (2.779K)] [PortXmitWait == 14681376621 (13.673G)]\n'


def _link(text: str) -> List:
    return [f for f in paste.scan(text, "paste.txt").findings if f.check == "ibcounters.link"]


def test_a_healthy_perfquery_x_is_read_and_passes():
    p = paste.scan(PERFQUERY_X_RHEL75, "paste.txt")
    assert [b.kind for b in p.blocks] == ["perfquery"]
    assert p.blocks[0].lineno == 2  # its header, under the command typed above it
    assert not [f for f in p.findings if f.status in (Status.FAIL, Status.WARN)]  # the reader keeps what is not ok
    assert not alarms(PERFQUERY_X_RHEL75)
    bad = PERFQUERY_X_RHEL75.replace("LinkDownedCounter:...............0", "LinkDownedCounter:...............3")
    assert [(f.status, f.actual) for f in _link(bad)] == [(Status.WARN, {"lid 10/1": {"link_downed": 3}})]


@pytest.mark.parametrize("prefix", ["", "node7: ", "[rank3]: ", "2021-03-16T06:15:19 "])
def test_a_healthy_perfquery_stays_quiet_behind_a_prefix(prefix):
    text = "".join(prefix + line + "\n" for line in PERFQUERY_X_RHEL75.splitlines())
    assert not alarms(text)


def test_an_ibqueryerrors_sweep_quoted_in_a_mail_warns_on_the_switch_ports_and_not_on_xmit_wait():
    link = _link(IBQUERYERRORS_LIST)
    assert [f.status for f in link] == [Status.WARN]
    ports = link[0].actual
    # the switch's numbered ports with link errors; the hosts' ports with only PortXmitWait (congestion, no error)
    # or VL15Dropped are not all of it: VL15Dropped counts as a link error, PortXmitWait never does
    assert all(k.startswith("0x2c903006e29b0/") or k.startswith("0x7cfe900300179b31/") for k in ports)
    assert ports["0x2c903006e29b0/5 \"MF0;ys23ib4:SX6036/U1\""]["symbol_error"] == 65535
    assert not any("port_xmit_wait" in c for c in ports.values())
    assert "fabric-wide: switch ports too" in link[0].message


def test_one_ibqueryerrors_line_posted_alone_is_read_and_warns():
    link = _link(IBQUERYERRORS_LINE)
    assert [f.status for f in link] == [Status.WARN]
    assert link[0].actual == {"0x1070fd0300370ea2/ALL": {"link_downed": 25, "port_rcv_errors": 26,
                                                         "port_xmit_discards": 2846}}
    found = alarms(IBQUERYERRORS_LINE)
    assert found and all(d.severity == "warn" for d in found)


def test_ibstat_guid_lines_are_not_read_as_ibqueryerrors():
    ibstat = ("CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware version: 20.26.4012\n"
              "\tNode GUID: 0x0c42a1030017c078\n\tSystem image GUID: 0x0c42a1030017c078\n")
    assert "perfquery" not in [b.kind for b in paste.scan(ibstat, "paste.txt").blocks]
