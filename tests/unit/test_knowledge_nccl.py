"""NCCL's WARN messages (nccldiag/knowledge/nccl.toml) held to their source and to the real logs.

Each row's pattern reads its own format string printed with values (the conversions filled, or the row's
``sample``: a message written for this test from the format string, which the test holds to it), and no earlier
row takes it; every pattern is linear by construction; no row contradicts the failure lexicon. Every NCCL WARN line
of the real logs (../shared/fixtures/nccl-logs, the real cases of ../shared/fixtures/cases and tests/cases) is
read by the row its source names in ``seen``, and every ``seen`` holds such a line; a healthy run's WARNs are of
rows that name no cause. The source extractor is held to the C it reads (``scripts/nccl-messages`` checks the table
against a whole NCCL tree).
"""
import json
import re
import sys
from pathlib import Path

import pytest

from nccldiag import knowledge
from nccldiag.diagnosis import categories
from nccldiag.knowledge import lexicon
from nccldiag.knowledge import nccl_source as S
from tests import real

if sys.version_info >= (3, 11):
    from re import _parser as sre_parse
else:  # pragma: no cover
    import sre_parse

from tests.unit.test_lexicon import _repeats  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ROWS = knowledge.rows(S.TABLE)
IGNORED = knowledge.rows(S.TABLE, "ignored")
HEADER = knowledge.header(S.TABLE)
_WARN = re.compile(r"NCCL WARN (.*)")


def _texts(row):
    return [row["text"]] + list(row.get("also", []))


def _printed(row):
    """The row's messages as printed: its samples, else each of its format strings with values filled."""
    return list(row.get("sample") or [S.fill(t) for t in _texts(row)])


# ---------------------------------------------------------------- the table

def test_every_row_is_complete_and_names_what_exists():
    assert re.fullmatch(r"v\d+\.\d+\.\d+-\d+", HEADER["nccl"]) and re.fullmatch(r"[0-9a-f]{40}", HEADER["commit"])
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids))
    for r in ROWS:
        assert r["text"] and r["file"].startswith("src/") and r["meaning"], r["id"]
        assert r["severity"] in ("fail", "warn"), r["id"]
        assert r["category"] == S.NONE or categories.known(r["category"]), (r["id"], r["category"])
        assert bool(r.get("fix")) == (r["category"] != S.NONE), r["id"]
        assert not r.get("healthy") or r["category"] == S.NONE, r["id"]
        assert re.fullmatch(r"v\d+\.\d+\.\d+-\d+", r.get("nccl", HEADER["nccl"])), r["id"]
    for e in IGNORED:
        assert e["file"].startswith("src/") and e["why"], e


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_pattern_is_linear_by_construction(row):
    unbounded, nested = _repeats(sre_parse.parse(row["pattern"]))
    assert not nested, (row["id"], row["pattern"])
    assert unbounded <= 1, (row["id"], row["pattern"])


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_row_reads_its_own_message_printed(row):
    """The format string printed with values is read by its row, first; a sample written for the test is one of the
    row's format strings with its conversions filled."""
    for printed in _printed(row):
        assert any(S.shape(t).fullmatch(printed) for t in _texts(row)), (row["id"], printed)
        got = S.message_of(printed)
        assert got is not None and got.id == row["id"], (row["id"], printed, got and got.id)


def test_a_row_of_a_cause_agrees_with_the_failure_lexicon():
    """A WARN the lexicon reads as a shape that only some causes explain: the row names one of them."""
    for r in ROWS:
        if r["category"] == S.NONE:
            continue
        for printed in _printed(r):
            got = lexicon.shape_of(f"node1:123:456 [0] NCCL WARN {printed}")
            if got is not None and lexicon.ANY not in got.covered_by:
                assert r["category"] in got.covered_by, (r["id"], got.id, got.covered_by)


def test_the_source_reader_joins_literals_macros_and_parameters():
    src = '''#define SYSCHECK(statement, name) \\
      WARN("Call to " name " failed: %s", strerror(errno)); \\
    static void f() {
      WARN("NET/IB : Got completion from peer %s with status=%d opcode=%d len=%" PRIu64 " vendor err %u (%s)",
           a, b);
      WARN(msg);
      INFO_WARN("not a call");
      // WARN("a comment's call is read as a call")
      WARN("two\\tlines\\n" "joined \\"quoted\\"");
    }'''
    got = [(w.line, w.text) for w in S.warns("src/x.cc", src)]
    assert got == [(2, "Call to %s failed: %s"),
                   (4, "NET/IB : Got completion from peer %s with status=%d opcode=%d len=%lu vendor err %u (%s)"),
                   (6, S.NOT_LITERAL), (8, "a comment's call is read as a call"), (9, 'two\tlines\njoined "quoted"')]


def test_the_check_finds_rows_missing_warns_uncovered_and_entries_unused():
    found = [S.Warn("src/a.cc", 1, "kept %s"), S.Warn("src/b.cc", 2, "dropped"), S.Warn("src/c.cc", 3, "lost")]
    rows = [{"id": "kept", "text": "kept %s", "where": "t:1"}, {"id": "gone", "text": "gone", "where": "t:2"}]
    ignored = [{"file": "src/b.cc", "why": "x"}, {"file": "src/z*", "why": "y"}]
    rep = S.check(rows, ignored, found)
    assert [r["id"] for r in rep.rows_missing] == ["gone"]
    assert [w.file for w in rep.uncovered] == ["src/c.cc"]
    assert rep.unused_ignored == [ignored[1]] and not rep.ok
    assert rep.by_row["kept"] == [found[0]] and rep.by_ignored == {0: [found[1]]}


# ---------------------------------------------------------------- the real logs

def _sources():
    """(source id, healthy, [WARN messages]) of every real log at hand."""
    real.require()
    out = []
    for p in sorted(real.NCCL_LOGS.glob("*.log")):
        out.append((f"../shared/fixtures/nccl-logs/{p.name}", False, p))
    for root, prefix in ((real.ROOT / "cases", "../shared/fixtures/cases"), (REPO / "tests" / "cases", "tests/cases")):
        for meta in sorted(root.glob("*/case.json")):
            case = json.loads(meta.read_text(encoding="utf-8"))
            files = [meta.parent / f for f in case.get("files", [])]
            out.append((f"{prefix}/{meta.parent.name}", bool(case.get("healthy")), files))
    read = []
    for sid, healthy, files in out:
        files = files if isinstance(files, list) else [files]
        lines = []
        for f in files:
            if f.is_file():
                for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                    m = _WARN.search(line)
                    if m:
                        lines.append(m.group(1))
        read.append((sid, healthy, lines))
    return read


def test_every_real_warn_is_read_by_the_rows_that_name_its_source():
    seen = {r["id"]: set(r.get("seen", [])) for r in ROWS}
    found = {}
    for sid, healthy, lines in _sources():
        for line in lines:
            got = S.message_of(line)
            if got is None:
                continue
            found.setdefault(got.id, set()).add(sid)
            assert sid in seen[got.id], f"{sid}: {line!r} is of row {got.id}, whose seen does not name it"
            assert not healthy or got.category == S.NONE, f"{sid} (healthy): {line!r} is of row {got.id}"
    for rid, sids in seen.items():
        for sid in sids:
            if sid.startswith("http"):  # a public post: tests/lexicon/real.toml holds its lines (the test below)
                continue
            assert sid in found.get(rid, set()), f"row {rid}: seen names {sid}, where no WARN is of the row"


_ANY_WARN = re.compile(r"\bWARN (.*)")  # 'NCCL WARN', or the untagged WARN of the binary-only releases


def test_every_warn_of_a_public_post_is_read_by_the_rows_that_name_its_address():
    import tomllib
    samples = tomllib.loads((REPO / "tests" / "lexicon" / "real.toml").read_text(encoding="utf-8"))["sample"]
    seen = {r["id"]: set(r.get("seen", [])) for r in ROWS}
    found = {}
    for sample in samples:
        for line in sample["text"].splitlines():
            m = _ANY_WARN.search(line)
            got = S.message_of(m.group(1)) if m else None
            if got is None:
                continue
            found.setdefault(got.id, set()).add(sample["url"])
            assert sample["url"] in seen[got.id], f"{sample['url']}: {line!r} is of row {got.id}, whose seen does not name it"
    for rid, sids in seen.items():
        for sid in (s for s in sids if s.startswith("http")):
            assert sid in found.get(rid, set()), f"row {rid}: seen names {sid}, where no WARN of real.toml is of the row"


def test_the_results_are_those_the_log_reader_names():
    from nccldiag.nccl import facts
    rows = knowledge.rows(S.TABLE, "result")
    assert {r["code"]: r["name"] for r in rows} == {c: n for c, n in facts.RESULT_NAMES.items() if c}
    for r in rows:
        assert facts.RESULT_TEXT[r["code"]] in r["text"] and r["meaning"], r["name"]


def test_the_result_reader_reads_nccl_get_error_string():
    src = '''const char* ncclGetErrorString(ncclResult_t code) {
  switch (code) {
  case ncclSuccess:
    return "no error";
  case ncclSystemError:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  default:
    return "unknown result code";
  }
}
static const char* other() { switch (x) { case ncclFoo: return "not this one"; } }'''
    assert S.results(src) == {"ncclSuccess": "no error",
                              "ncclSystemError": "unhandled system error (run with NCCL_DEBUG=INFO for details)"}
    assert S.results("int main() {}") == {}


def test_a_gpu_without_its_sysfs_pci_path_is_an_nccl_too_old_for_wsl_and_its_later_info_stays_quiet():
    # NVIDIA/nccl#442 (NCCL 2.8.3) and #573 (2.7.8) under WSL 2: getPciPath's WARN, then ncclSystemError
    for line in ("> DESKTOP:36629:36635 [0] graph/xml.cc:332 NCCL WARN Could not find real path of "
                 "/sys/class/pci_bus/0000:21/../../0000:21:00.0",
                 "SHJS-PF4ZKYLL:92777:92889 [0] graph/xml.cc:332 NCCL WARN Could not find real path of "
                 "/sys/class/pci_bus/0000:01/../../0000:01:00.0"):
        got = S.message_of(_WARN.search(line).group(1))
        assert got is not None and got.id == "topo-gpu-pci-path-missing", line
        assert got.category == "other:nccl-too-old-for-wsl"
    # from 2.10.3 ncclTopoGetXmlFromSys prints the same text as an INFO of NCCL_GRAPH and goes on: no WARN, no row
    assert _WARN.search("DESKTOP:36629:36635 [0] NCCL INFO Could not find real path of "
                        "/sys/class/pci_bus/0000:21/../../0000:21:00.0") is None
    # the IB transport's own message (net_ib, a device name and its sysfs path) is not of this row
    other = S.message_of("Could not find real path of mlx5_0 (/sys/class/infiniband/mlx5_0/device)")
    assert other is None or other.id != "topo-gpu-pci-path-missing"

# ---------------------------------------------------------------- lines of public posts, read as NCCL says

def _alarms(text: str):
    import tempfile

    from nccldiag.sessions import log

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "posted.txt"
        p.write_text(text + "\n", encoding="utf-8")
        return [x for x in log.run([str(p)], workers=1).diagnoses[0] if x.severity in ("fail", "warn")]


_BEHIND = ("", "[rank3]: ", "node7: ")


def test_a_peers_shm_segment_not_found_on_attach_is_a_failure_not_a_small_dev_shm():
    """NCCL's 'Error while attaching to shared memory segment ... No such file or directory' (src/os/linux.cc at
    v2.30.7-1, misc/shmutils.cc before it): the segment a peer of the node made is not in this process's /dev/shm.
    Real: NVIDIA/nccl#1589 (a downgrade to 2.21.5 cured it) and #2190 (ranks that chose different host-memory paths:
    an empty segment name, size 0). A failure line, never /dev/shm too small; creating a segment stays that."""
    lines = ["g148:14937:69361 [0] misc/shmutils.cc:129 NCCL WARN Error while attaching to shared memory segment "
             "/dev/shm/nccl-glnlGK (size 14156128), error: No such file or directory (2)",
             "[2026-05-22 10:26:17] d4fde3314201:13740:13740 [7] misc/shmutils.cc:132 NCCL WARN Error while attaching "
             "to shared memory segment /dev/shm/nccl- (size 0), error: No such file or directory (2)"]
    for line in lines:
        assert S.message_of(_WARN.search(line).group(1)).id == "shm-attach-missing"
        for prefix in _BEHIND:
            got = _alarms(prefix + line)
            assert got and all(d.category != "shm_too_small" for d in got), (prefix, [d.id for d in got])
    # real: nccl-tests#166, a segment that could not be created (NCCL 2.18's wording, its error not printed)
    made = ("ubuntu:9621:9685 [0] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment "
            "/dev/shm/nccl-zTYolS (size 5967872)")
    assert _alarms(made)[0].category == "shm_too_small"


def test_nccl_2_25s_declined_ipc_registration_of_a_user_buffer_is_quiet():
    """NCCL 2.25's WARN 'rank %d failed to IPC register userbuff %p buffSize %ld nPeers %d isLegacyIpc %p'
    (src/transport/p2p.cc at v2.25.1-1; INFO from 2.26 on): the maintainer in NVIDIA/nccl#1684 calls it generally
    harmless. Real: that post's line, quiet alone and behind a prefix; a WARN of a failed call beside it is not."""
    line = ("172-27-101-52:959:959 [0] transport/p2p.cc:944 NCCL WARN rank 0 failed to IPC register userbuff "
            "0x7f3f56000000 buffSize 37748736 nPeers 2 isLegacyIpc 0x7ffe49900be0")
    row = S.message_of(_WARN.search(line).group(1))
    assert row.id == "ipc-register-userbuff" and row.category == S.NONE and row.severity == "warn"
    for prefix in _BEHIND:
        assert _alarms(prefix + line) == [], prefix
    assert lexicon.shape_of(line) is None
    # real: nccl-tests#185, a verbs call that failed, is no less a failure beside it
    failed = "dgxh100-3:225140:225355 [0] misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error Network is unreachable"
    assert _alarms(line + "\n" + failed)


def test_a_gid_index_whose_roce_type_cannot_be_read_names_the_gid_configuration():
    """NCCL's 'NET/IB: read failed in ncclIbRoceGetVersionNum: %s' (src/transport/net_ib/connect.cc at v2.30.7-1,
    src/transport/net_ib.cc before 2.27): the GID index NCCL chose has no RoCE type file in the pod's sysfs. Real:
    the message of NVIDIA/nccl#1573 (Kubernetes pods on macvlan interfaces whose GIDs sit at other indexes)."""
    message = "NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument"
    row = S.message_of(message)
    assert row.id == "roce-gid-type-unreadable" and row.category == "roce_gid_config"
    got = _alarms("node1:4242:4250 [0] NCCL WARN " + message)
    assert got and got[0].category == "roce_gid_config", [d.id for d in got]
