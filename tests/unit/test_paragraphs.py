"""A text whose lines were run together into paragraphs, read line by line again (nccldiag/nccl/paragraphs.py), on
real texts.

No real text of the cases and fixtures is cut, as it is or as any other paste transformation of tests/mutations.py
leaves it (a cut in a healthy line could make a failure appear); real NCCL logs run together into paragraphs come
back line for line; the stream gives what the function gives, read in pieces of any size; long and pathological
lines are cut within the linear-time budget of tests/unit/test_nccllog_linear.py. That each case is named right
once run together is tests/unit/test_case_mutations.py's (``paragraphs``).
"""
from __future__ import annotations

import io
import re

import pytest

from nccldiag.nccl import paragraphs, unwrap
from nccldiag.nccl.facts import MAX_LINE
from tests import mutations, real
from tests.unit.test_nccllog_linear import cpu, normal
from tests.unit.test_unwrap import _TWO_RECORDS, TEXTS, TWO_STAMPED, _read

_PREFIXED = re.compile(r"[\w.-]+:\d+:\d+ \[\d+\] ")
_ANY_PREFIX = re.compile(r"[A-Za-z][\w.-]*:\d+:\d+ \[\d+\] ")
_CUT_PREFIX = re.compile(r":\d+[A-Za-z][\w.-]*:\d+:\d+ \[")


# a line whose framework prefix stands before torch's own rank label ('(RayWorkerWrapper pid=1978, ip=10.41.0.8)
# [rank9]:[W ProcessGroupGloo.cpp:721] ...'): a launcher's rank prefix put before it (the transformations
# prefix-rank, prefix-torchrun, prefix-mpirun) makes it two labels of the rank kind, as two ranks' lines run together
_LATER_RANK_LABEL = re.compile(r"\S.*\[(?:rank|default)\d{1,6}\]:")
# the same for Python logging's own record after a framework's prefix ('(Worker_TP1 pid=1417089) 2026-06-16
# 20:47:04,014 - INFO - autotuner.py:622 - ...', or transformers' '[WARNING|logging.py:290] 2025-12-18
# 20:16:31,452 >> ...', its time after its level): the transformation pylog-asctime puts a record of that kind before it
_LATER_ASCTIME = re.compile(r"\S.*\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?:-|>>) ")


def _one_record_lines(text: str, labels: bool = False) -> str:
    """``text`` without the lines that hold two records as posted (and, with ``labels``, a rank label or a Python
    logging record after other text)."""
    return "\n".join(line for line in text.split("\n")
                     if not _TWO_RECORDS.search(line) and not TWO_STAMPED.search(line)
                     and not (labels and (_LATER_RANK_LABEL.search(line) or _LATER_ASCTIME.search(line))))


def test_no_real_text_is_cut():
    for p in TEXTS:
        text = _one_record_lines(_read(p))
        assert paragraphs.split_text(text) == text, p.name


def test_a_real_line_holding_two_processes_records_is_cut_before_the_second():
    # a line holding exactly two whole records (two ranks whose writes interleave mid-line leave more records, or a
    # record's prefix cut off by the next one, 'ljm:80356ljm:803564:803604 [1]': not this)
    glued = [line for p in TEXTS for line in _read(p).split("\n")
             if _TWO_RECORDS.search(line) and len(_ANY_PREFIX.findall(line)) == 2 and not _CUT_PREFIX.search(line)]
    assert 1 <= len(glued) <= 5
    for line in glued:
        pieces = paragraphs.split_text(line).split("\n")
        assert len(pieces) == 2 and line.startswith(pieces[0]) and line.endswith(pieces[1]), line[:200]
        assert _PREFIXED.match(pieces[1]) and " NCCL " in pieces[1], line[:200]


@pytest.mark.parametrize("name", [n for n in mutations.TRANSFORMS if n != "paragraphs"])
def test_no_real_text_pasted_otherwise_is_cut(name):
    f = mutations.TRANSFORMS[name]
    for p in TEXTS:
        text = f(_one_record_lines(_read(p), labels=True))
        assert paragraphs.split_text(text) == text, (p.name, name)


def test_real_nccl_logs_run_together_come_back_line_for_line():
    """A real log whose lines are all NCCL records, each paragraph one line, is cut back into its lines."""
    tried = 0
    for p in TEXTS:
        lines = [ln.strip(" \t") for ln in _read(p).splitlines()]
        if len([ln for ln in lines if ln]) < 5 or not all(_PREFIXED.match(ln) for ln in lines if ln):
            continue
        joined = mutations.TRANSFORMS["paragraphs"]("\n".join(lines) + "\n")
        if joined.count("\n") == len(lines):
            continue  # every record a paragraph of its own: nothing run together
        tried += 1
        assert paragraphs.split_text(joined) == "\n".join(lines) + "\n", p.name
    assert tried >= (5 if real.AVAILABLE else 3)  # tests/cases alone hold 3 such logs


def test_every_reader_reads_the_records():
    """The stream every reader reads through cuts a paragraph into its records: NCCL's, a kernel's, a traceback's
    frames under a launcher's label, a table's rows."""
    text = ("gpu1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0> gpu1:10:10 [0] NCCL WARN Call to "
            "ibv_reg_mr failed\n\n[ 12.500000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus. "
            "[ 12.600000] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n\n"
            "[rank0]: Traceback (most recent call last): [rank0]:   File \"t.py\", line 3, in <module> "
            "[rank0]:     dist.barrier()\n\n"
            "+-----+------+ | GPU | Pass | |=====+======| | 0   | Fail |\n")
    assert unwrap.unwrap(text).splitlines() == [
        "gpu1:10:10 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "gpu1:10:10 [0] NCCL WARN Call to ibv_reg_mr failed", "",
        "[ 12.500000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.",
        "[ 12.600000] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.", "",
        "[rank0]: Traceback (most recent call last):", "[rank0]:   File \"t.py\", line 3, in <module>",
        "[rank0]:     dist.barrier()", "",
        "+-----+------+", "| GPU | Pass |", "|=====+======|", "| 0   | Fail |"]


def test_key_value_outputs_run_together_are_read_as_their_lines():
    """ibstat, ibv_devinfo and lspci -vvv outputs (real: ../shared/fixtures/node), each paragraph one line, are cut
    at their own keys: the paste reader's areas find in them what they find in the output as it was; the lines
    of those outputs as they are need no cut."""
    from nccldiag import paste

    real.require()
    found = 0
    for kind in ("ibstat", "ibv_devinfo", "lspci"):
        for name in real.names(real.NODE / kind):
            text = real.node_text(kind, name)
            assert paragraphs.split_text(text) == text, name
            want = sorted((f.check, f.status.value) for f in paste.scan(text, "paste.txt").findings)
            joined = mutations.TRANSFORMS["paragraphs"](text)
            got = sorted((f.check, f.status.value) for f in paste.scan(joined, "paste.txt").findings)
            assert got == want, name
            found += len(want)
    assert found >= 8
    # an ibstat CA run together into one line comes back line for line (real: gpud99's, its port down)
    lines = [ln.strip() for ln in real.node_text("ibstat", "gpud99-cx6dx-down-disabled-truncated-by-poster.txt").splitlines()]
    lines = [ln for ln in lines if ln]
    assert paragraphs.split_text(" ".join(lines) + "\n").splitlines() == lines
    # a head with one key after it, another tool's 'phys state:' beside ibv_devinfo's: no cut there (written for
    # this test from ibstat's and ibstatus's lines)
    for keep in ("CA 'mlx5_0' State: Active", "hca_id: mlx5_0 phys state: 5: LinkUp"):
        assert paragraphs.split_text(keep + "\n") == keep + "\n", keep


def test_a_bulleted_key_value_output_run_together_comes_back_with_its_markers():
    """A list's marker before each line (a forum's bulleted paste, as net-pastebin-5awq's), the paragraph run
    together: each key comes back on its line behind its marker, none left at the end of the line before."""
    real.require()
    cut = 0
    for kind in ("ibv_devinfo", "ibstat"):
        for name in real.names(real.NODE / kind)[:4]:
            lines = [ln.strip() for ln in real.node_text(kind, name).splitlines() if ln.strip()]
            if len(paragraphs.split_text(" ".join(lines) + "\n").splitlines()) < 2:
                continue  # an output whose keys are not cut without markers either (ibv_devinfo -v's)
            cut += 1
            for marker in ("- ", "* "):
                bulleted = [marker + ln for ln in lines]
                got = paragraphs.split_text(" ".join(bulleted) + "\n").splitlines()
                assert not [ln for ln in got if ln.endswith(" " + marker.strip())], (name, marker)
                assert all(ln.startswith(marker) for ln in got), (name, marker)
                assert [ln for ln in got if ln in bulleted], name
    assert cut >= 4


def test_nvidia_smi_q_reports_run_together_come_back_line_for_line():
    """Each paragraph of the real nvidia-smi -q reports (../shared/fixtures/node: drivers 460 to 560), its lines
    run together, is cut back before each of the report's keys and titles: line for line (but where the poster
    elided lines, '[...]'), and the areas find in it what they find in the report as it was."""
    from nccldiag import paste

    real.require()
    paras = 0
    for kind in ("nvidia-smi-q", "nvidia-smi-ecc-rowremap"):
        for name in real.names(real.NODE / kind):
            text = real.node_text(kind, name)
            assert paragraphs.split_text(text) == text, name
            want = sorted((f.check, f.status.value) for f in paste.scan(text, "paste.txt").findings)
            joined = mutations.TRANSFORMS["paragraphs"](text)
            assert sorted((f.check, f.status.value) for f in paste.scan(joined, "paste.txt").findings) == want, name
            if "csv" in name:
                continue
            for para in text.split("\n\n"):
                lines = [ln.strip() for ln in para.splitlines() if ln.strip()]
                if len(lines) < 2 or any("[...]" in ln for ln in lines):
                    continue
                assert paragraphs.split_text(" ".join(lines) + "\n").splitlines() == lines, name
                paras += 1
    assert paras >= 10
    # a page's collapsed blanks: one before each colon (the Fabric section of node-azhpcimages506's report)
    assert paragraphs.split_text("Fabric State : Completed Status : Insufficient Resources CliqueId : 0 "
                                 "ClusterUUID : 00000000-0000-0000-0000-000000000000\n").splitlines() == [
        "Fabric", "State : Completed", "Status : Insufficient Resources", "CliqueId : 0",
        "ClusterUUID : 00000000-0000-0000-0000-000000000000"]
    # a key of the report with no head of it in the line: no cut (nvidia-smi's table header has no blank before
    # its colons)
    for keep in ("Status : ok State : done", "| NVIDIA-SMI 535.54.03   Driver Version: 535.54.03   CUDA Version: 12.2 |"):
        assert paragraphs.split_text(keep + "\n") == keep + "\n", keep


def test_what_stays_one_line():
    """A start of another kind after a record's prefix, a time in a message written otherwise than the record's,
    a launcher's labels stacked, a traceback's first line after a label: each one record."""
    for keep in ("May  1 12:00:00 host kernel: [ 12.345678] NVRM: loading",
                 "2024-05-01T12:00:00.123Z host:1:2 [0] NCCL INFO x",
                 "2024-05-01T12:00:00.123Z job is running since 2022-04-29T20:28:38 (on 'gpu_p5')",
                 "[rank3]: [rank1]: Traceback (most recent call last):",
                 "(VllmWorkerProcess pid=1234) Traceback (most recent call last):",
                 "2024-01-01 12:00:00,123 - trainer - INFO - 2019-01-11 05:43:30,310 INFO main()",
                 "3:         Region 3: Memory at d0000000 (64-bit, prefetchable) [size=32M]",
                 "failed: runc create failed: unable to start container process: error during container init"):
        assert paragraphs.split_text(keep + "\n") == keep + "\n", keep


@pytest.mark.parametrize("size", [1, 3, 64, 4096])
def test_the_stream_reads_what_the_function_gives_in_any_pieces(size):
    texts = [mutations.TRANSFORMS["paragraphs"](_read(p)) for p in TEXTS[:60]]
    changed = 0
    for text in texts:
        data = text.encode("utf-8", "surrogateescape")
        want = paragraphs.split(data)
        changed += want != data
        stream = paragraphs.Splitting(io.BytesIO(data))
        assert b"".join(iter(lambda: stream.read(size), b"")) == want
        stream = paragraphs.Splitting(io.BytesIO(data))
        assert b"".join(iter(stream.readline, b"")) == want
    assert changed > 10


N = MAX_LINE - 100
# Written for this test: long lines of the pieces the cuts look for, each about 64 KiB.
PATHOLOGICAL = {
    "prefixes": "h:1:2 [0] " * (N // 10),
    "prefixes with text": "h:1:2 [0] NCCL INFO x " * (N // 22),
    "bare levels": "NCCL INFO " * (N // 10),
    "a host's characters": "_" * N,
    "colons": "a:1:" * (N // 4),
    "kernel times": "[ 1.000000] " * (N // 12),
    "iso times": "2024-05-01T12:00:00Z " * (N // 21),
    "labels": "node1: " * (N // 7),
    "a label and blanks": "node1: " + " " * N,
    "ranks": "[rank0]: " * (N // 9),
    "tracebacks": 'Traceback (most recent call last): File "x", line 1, in f ' * (N // 60),
    "frames": 'x Traceback (most recent call last): ' + 'File "x", line 1, in f ' * (N // 24) + "RuntimeError: x",
    "exceptions": 'Traceback (most recent call last): File "x", line 1 ' + "a.RuntimeError: " * (N // 16),
    "table joints": "| | " * (N // 4),
    "borders": "+-+ " * (N // 4),
    "ibstat keys": "CA 'x' " + "State: " * (N // 7),
    "ibstat heads unclosed": "CA 'x " * (N // 6),
    "devinfo heads": "hca_id:x " * (N // 9),
    "devinfo keys": "hca_id: " + "port: 1 " * (N // 8),
    "lspci keys": "LnkSta:\t" * (N // 8),
    "nvidia-smi -q keys": "ECC Errors " + "SRAM Uncorrectable : 0 " * (N // 23),
    "nvidia-smi -q titles": "ECC Errors " + "Volatile Aggregate " * (N // 19),
    "nvidia-smi -q titles then keys": "ECC Errors " + "Volatile Aggregate Single Bit " * (N // 30) + "State : 1",
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_a_long_line_is_cut_in_linear_time(name):
    line = (PATHOLOGICAL[name][:N] + "\n").encode()
    took = cpu(lambda: paragraphs.split(line))
    # each costs at most 3 times a line that says nothing; a cut quadratic in the line's length cost 60 times
    assert took <= 20 * normal(len(line) - 1), (name, took, normal(len(line) - 1))


def _loose(data: bytes) -> bool:
    """Whether Hyperscan's loosened expressions find anything in ``data``."""
    found = []
    try:
        paragraphs._loose_db().scan(data, match_event_handler=lambda *_a: found.append(True) or True)
    except Exception:
        pass
    return bool(found)


def test_the_loosened_gate_finds_whatever_the_gate_finds():
    """Hyperscan's loosened expressions find a line wherever the gate does, in every real text as it is and run
    together, whole and line by line, and in a line of each form the gate looks for: a text they leave is one the gate
    leaves too, so skipping Python's search of it changes nothing."""
    if paragraphs._loose_db() is None:
        pytest.skip("hyperscan is not installed")
    lines = [b"gpu1:10:10 [0] NCCL INFO a gpu1:10:10 [0] NCCL WARN b", b"[ 12.500000] a [ 12.600000] b",
             b"x Traceback (most recent call last):", b"+-----+------+ | GPU | Pass |", b"node17: a node17: b",
             b"[trainer3]: a [trainer3]: b", b"May  1 12:00:00 h k: a May  1 12:00:01 h k: b",
             b"2024-05-01T12:00:00Z a 2024-05-01T12:00:01Z b", b"[rank1]: a [rank1]: b",
             b"[Wed May  1 12:00:00 2024] a [Wed May  1 12:00:01 2024] b", b"init.cc: 12 NCCL INFO a NCCL WARN b"]
    gated = 0
    for p in TEXTS:
        text = _read(p)
        for t in (text, mutations.TRANSFORMS["paragraphs"](text)):
            data = t.encode("utf-8", "surrogateescape")
            for piece in [data] + data.split(b"\n"):
                if paragraphs._GATE.search(piece):
                    gated += 1
                    assert _loose(piece), (p.name, piece[:200])
    for line in lines:
        assert paragraphs._GATE.search(line) and _loose(line), line
    assert gated > 100


def test_split_is_the_same_without_hyperscan(monkeypatch):
    texts = [_read(p) for p in TEXTS[::3]]
    texts += [mutations.TRANSFORMS["paragraphs"](t) for t in texts]
    fast = [paragraphs.split_text(t) for t in texts]
    monkeypatch.setattr(paragraphs, "_LOOSE_DB", [None])
    assert [paragraphs.split_text(t) for t in texts] == fast


def test_a_progress_bar_repeated_on_one_line_is_not_cut_at_its_description():
    """A tqdm bar whose carriage returns a paste lost repeats its description (``fp4_gemm:  82%|``) along one line;
    a wrap that starts a line at the description does not make it a label to cut before (real vLLM log)."""
    bars = [line for p in TEXTS if p.name == "p2p_off-c1.log" for line in _read(p).split("\n")
            if line.count("fp4_gemm: ") >= 3]
    assert bars
    for line in bars:
        start = line[line.index("fp4_gemm: ", line.index("fp4_gemm: ") + 1):]
        assert paragraphs.split_text(start + "\n") == start + "\n"
