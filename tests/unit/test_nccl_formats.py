"""NCCL's log prefixes of every release (knowledge/nccl_formats.toml) are read by the grammar: each row's samples
(lines written for the test from the row's format string) read as the level, file, function and timestamp the
row expects, and a WARN reads as the same message, so the same warning kind, whatever its release's prefix."""
import pytest

from nccldiag import knowledge
from nccldiag.knowledge import nccl_source
from nccldiag.nccl import grammar, parser

ROWS = knowledge.rows("nccl_formats.toml")


def test_the_table_covers_every_level_and_names_its_source():
    assert {r["level"] for r in ROWS} == {"WARN", "INFO", "TRACE", "CALL"}
    for r in ROWS:
        assert r["source"] and r["shape"] and r["first"], r["id"]
        assert len(r["sample"]) == len(r["expect"]), r["id"]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_sample_reads_as_its_row_expects(row):
    for line, want in zip(row["sample"], row["expect"]):
        _, _, _, parts = grammar.read_line(line)
        assert parts is not None and len(parts) == 1, line
        kind, msg, host, _pid, _tid, _dev, _text, file, _fl, func, ts = parts[0]
        assert kind == want[0], line
        assert (file or "") == want[1], line
        assert (func or "") == want[2], line
        assert (ts or "") == (want[3] if len(want) > 3 else ""), line
        assert msg and host and not msg.startswith(("NCCL", "WARN", "INFO", "TRACE", "CALL")), line


# Written for the test: one WARN message in the prefix of each release (knowledge/nccl_formats.toml).
MESSAGE = "NET/IB : Got completion from peer 10.0.0.2<42222> with status=12 opcode=0 len=0 vendor err 129 (Recv)"
PREFIXES = [
    "node1:4242:4250 [0] transport/net_ib.cu:789 WARN ",  # 2.0-2.2, no tag
    "node1:4242:4250 [0] transport/net_ib.cu:789 NCCL WARN ",  # 2.3-2.4.2
    "node1:4242:4250 [0] transport/net_ib.cc:789 NCCL WARN ",  # 2.4.6-2.25
    "[2025-03-01 10:11:12] node1:4242:4250 [0] transport/net_ib.cc:1120 NCCL WARN ",  # 2.26-2.30.4
    "[2026-06-11 08:00:01] node1:4242:4250 [0] transport/net_ib.cc:1120 (ncclIbTest) NCCL WARN ",  # 2.30.7
    "[1,3]<stdout>:node1:4242:4250 [0] transport/net_ib.cc:1120 NCCL WARN ",  # behind mpirun --tag-output
]


def test_a_warn_of_every_release_is_the_same_warning_kind():
    kinds = set()
    for prefix in PREFIXES:
        facts = parser.parse(prefix + MESSAGE + "\n", "t.log")
        assert [w.message for w in facts.warns] == [MESSAGE], prefix
        row = nccl_source.message_of(facts.warns[0].message)
        assert row is not None, prefix
        kinds.add((row.id, row.category, facts.warns[0].kind, facts.warns[0].failure))
    assert len(kinds) == 1


# Written for the test from the format strings of older releases (scripts/nccl-messages --against <tag> lists
# them), their conversions filled as NCCL fills them; each reads as the row of the newest wording reads it, or as
# the row that keeps the older wording.
OLDER = [
    ("Connect to 10.0.0.2<45123> failed : Connection refused", "socket-connect-refused"),  # v2.4.8-1 socket.h:390
    ("Net : Connect to 10.0.0.2<45123> failed : No route to host", "socket-connect-unreachable"),  # v2.11.4-1 socket.h:409
    ("Net : Connect to 10.0.0.2<45123> failed : Connection timed out", "socket-connect-timeout"),  # v2.11.4-1
    ("Net : Connection closed by remote peer", "socket-closed-by-peer"),  # v2.4.8-1 socket.h:403
    ("Error while creating shared memory segment nccl-shm-recv-1a2b (size 9637892)", "shm-segment-failed"),  # v2.11.4-1 shm.h:48
    ("nvmlDeviceGetHandleByPciBusId() failed: GPU is lost ", "nvml-device-failed-busid"),  # v2.11.4-1 nvmlwrap.cc:134
    ("Call to posix_fallocate failed : No space left on device", "syscall-failed-spaced"),  # v2.18.3-1 checks.h:49
    ("NET/IB : Got async event : local catastrophic error", "ib-async-event-old"),  # v2.18.3-1 net_ib.cc:95
]


@pytest.mark.parametrize("message,row", OLDER, ids=[r for _, r in OLDER])
def test_an_older_wording_reads_as_its_row(message, row):
    got = nccl_source.message_of(message)
    assert got is not None and got.id == row, message
