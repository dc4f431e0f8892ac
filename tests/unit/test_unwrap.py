"""A text wrapped at a fixed width, read joined again (nccldiag/nccl/unwrap.py), on real texts.

Both ways: no real text as it was captured or posted is taken for a wrapped one (but the one capture that was
posted wrapped, and the posts broken at their blanks by a mail or an editor), and the real texts wrapped at 80 columns as a terminal does are joined again, line for line where
the wrap shows, with every line at its number. The stream gives what the function gives, read in any pieces.
"""
from __future__ import annotations

import io
import re
from pathlib import Path
from typing import List

import pytest

from nccldiag.nccl import records, typeset, unwrap
from tests import mutations, real, realcases

# the one capture posted wrapped: NCCL's 'GPU Direct RDMA Disabled for GPU ... (not supported b' / 'y GPU)'
POSTED_WRAPPED = "net-ib-gdr-disabled-not-supported-by-gpu-ibv-create-qp-failure.log"
# the posts broken at their blanks (each piece ends in the blank it was broken at): a mailing list's ifconfig
# ('Hardware Adresse ' / '80-00-04-04-FE-80-...'), a bug tracker's mail of a build log ('fatal error: ' /
# 'asm/orc_header.h: No such file or directory') and a forum's docker compose error ('OCI runtime create ' /
# 'failed: runc create failed: ...'), each line of the program's one line; an engineering worklog's NCCL WARN broken
# at its blanks ('... for function AllReduce ' / 'with datatype ncclFloat32. ...'), and a Talos issue's NVIDIA driver
# notice pasted without its 'NVRM: ' prefixes, each piece ending in a blank ('... on other GPUs, see the ' /
# ''OpenRmEnableUnsupportedGpus' kernel module parameter described'), which read as one sentence joined; and a
# thesis logbook's DistStoreError broken at its blanks ('... waiting for clients. ' / '1/16 clients joined.')
POSTED_FLOWED = ["posted-mpirun-ibv-devinfo-ifconfig-ulimit.txt", "posted-dkms-make-log.txt",
                 "posted-docker-compose.txt", "posted-output.txt", "node-log.txt", "posted-diststoreerror.txt",
                 # two linux-rdma mails sent format=flowed (gaps73c: the CX-5 CQ and the ib_send_bw hang)
                 "posted-output.txt", "posted-output.txt",
                 # a soekris-tech mail quoted behind '>> ', its lines broken at the mail's width (gaps76e)
                 "posted-post-and-boot.txt"]


def _texts() -> List[Path]:
    roots = [realcases.IN_REPO] + ([real.ROOT] if real.AVAILABLE else [])
    out = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix not in (".json", ".py", ".pyc", ".md", ".gz", ".png"):
                out.append(p)
    return out


TEXTS = _texts()


def _case_text(name: str) -> Path:
    """The first text of the real case folder whose name holds ``name`` (a case of ../shared/fixtures/cases: skipped
    where a plain clone has none)."""
    found = next((p for p in TEXTS if name in str(p.parent)), None)
    if found is None:
        pytest.skip(real.REASON)
    return found


def _read(p: Path) -> str:
    return p.read_bytes().decode("utf-8", "replace")


# a line into which two processes wrote their NCCL records at once, as the text was posted (two ranks of a vLLM run:
# 'send 0.000proxmox:1495820:1495820 [1] NCCL INFO ...'): cut before the second record is the reading wanted
_TWO_RECORDS = re.compile(r"[\w.-]+:\d+:\d+ \[\d+\] NCCL .*\S[\w.-]*:\d+:\d+ \[\d+\] NCCL ")


# a line into which two records of one log were run together as the text was stored (a vendor's page summarised:
# two ESXi vmx records, each behind its ISO time and its '|'): the reader cuts it before the second, as wanted
TWO_STAMPED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z?\|.*\S \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z?\|")


def _one_record_each(text: str) -> str:
    """``text`` without its lines that hold two processes' NCCL records, or two records of one log, as posted (which
    the reader cuts in two: tests/unit/test_paragraphs.py)."""
    return "\n".join(line for line in text.split("\n") if not _TWO_RECORDS.search(line) and not TWO_STAMPED.search(line))


def _plain(text: str) -> str:
    """``text`` with its JSON records read as their messages and its typesetting undone: what the reader reads of a
    text that is not wrapped."""
    return typeset.fold_text(records.unpack(text.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape"))


def test_no_real_text_is_taken_for_a_wrapped_one():
    assert len(TEXTS) > 100
    taken = [p.name for p in TEXTS if unwrap.unwrap(_one_record_each(_read(p))) != _plain(_one_record_each(_read(p)))]
    assert sorted(taken) == sorted(POSTED_FLOWED + ([POSTED_WRAPPED] if real.AVAILABLE else [])), taken


def _in_repo(name: str) -> Path:
    return next(p for p in sorted(realcases.IN_REPO.parent.glob("cases*/*/*"))
                if name in str(p.parent) and p.suffix != ".json")


def test_a_post_broken_at_its_blanks_is_joined_at_its_numbers():
    """xpk's issue: XLA's one line quoted behind '> ' and broken at blanks, each piece ending in the blank; the
    shared memory segment's error is read whole again, its quote marks taken off the pieces after the first."""
    text = _read(_in_repo("xpk492-a3mega-jobset-no-dev-shm-volume"))
    got = unwrap.unwrap(text).split("\n")
    assert len(got) == len(text.split("\n"))
    line = next(t for t in got if "ncclGroupEnd" in t)
    assert "(run with NCCL_DEBUG=INFO for details)" in line and "'Error while creating shared memory segment" in line
    assert "> " not in line[2:]
    assert got[got.index(line) + 1] == "" and got[got.index(line) + 2] == ""


@pytest.mark.parametrize("name, ended", [
    # TensorFlow's 'Found device 0 with properties: ' and 'pciBusID: ...' are two lines of its own
    ("aimldl-notes-ko-2x-gtx1080", "with properties: "),
    # NCCL's 'or device error. ' before its own 'Last error:' line
    ("accelerate2107-containers-bridge-network", "or device error. "),
    # torch's launcher warning: 'See ' before the address, on a line of its own
    ("bigscience-jz-4x4-v100-opa-allreduce-bench-healthy", "instead. See "),
])
def test_a_programs_own_line_ended_in_a_blank_is_not_joined(name, ended):
    """A line a program ends in a blank before a line of its own, among lines far longer than it: not a text broken
    at its blanks, nothing joined."""
    text = _read(_in_repo(name))
    lines = text.split("\n")
    assert any(t.endswith(ended) for t in lines)
    assert not unwrap.flowed(lines[:5000])
    assert [t for t in unwrap.unwrap(text).split("\n") if t.endswith(ended)]


def test_a_shell_prompts_blank_is_no_break():
    starts = {" a"}
    assert not unwrap.soft_break("(venv) root@node1:~/kubespray# nvidia-smi -q --display=ECC,POWER ",
                                 "Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error", starts)
    assert unwrap.soft_break("Execution of replica 0 failed: INTERNAL: NCCL operation ncclGroupEnd() failed: ",
                             "unhandled system error", set())
    # two blanks (a table's padding), a continuation that is one character, an indented one: no break
    assert not unwrap.soft_break("Execution of replica 0 failed: INTERNAL: NCCL operation failed:  ", "unhandled",
                                 set())
    assert not unwrap.soft_break("  nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) ", "#", set())
    assert not unwrap.soft_break("Execution of replica 0 failed: INTERNAL: NCCL operation failed: ", "  at x", set())


def test_the_capture_posted_wrapped_is_joined_at_its_numbers():
    text = real.nccl_log(POSTED_WRAPPED).read_text(encoding="utf-8")
    lines = [t.rstrip("\r") for t in text.splitlines()]
    got = unwrap.unwrap(text).splitlines()
    assert len(got) == len(lines)
    joined = [i for i, t in enumerate(got) if "(not supported by GPU)" in t]
    assert joined and all(lines[i].endswith("(not supported b") and got[i + 1] == "" for i in joined)


def test_real_texts_wrapped_at_80_are_joined_again():
    """Each real text with a line over 80 columns, wrapped at 80: every line stays at its number, and most come
    back whole."""
    tried = whole = 0
    for p in TEXTS:
        text = _one_record_each(_read(p)).replace("\r", "")
        if max(map(len, text.splitlines() or [""])) <= 80:
            continue
        tried += 1
        wrapped = mutations.wrapped(80)(text)
        got = unwrap.unwrap(wrapped)
        assert got.count("\n") == wrapped.count("\n"), p
        if [t for t in got.splitlines() if t.strip()] == [t for t in _plain(text).splitlines() if t.strip()]:
            whole += 1
    assert tried > 100
    assert whole >= 0.8 * tried, (whole, tried)  # 202 of 238 when written


@pytest.mark.parametrize("size", [1, 7, 4096, unwrap.SAMPLE + 1, -1])
def test_the_stream_gives_what_the_function_gives(size):
    small = [p for p in TEXTS if p.stat().st_size < 200_000]
    texts = [_read(p) for p in small[:60]]
    for p in small[60:]:  # however small the first texts are (cases are added in between), the join passes SAMPLE
        if sum(map(len, texts)) > unwrap.SAMPLE:
            break
        texts.append(_read(p))
    big = mutations.wrapped(80)("".join(texts))  # over SAMPLE: the join goes on past the sample
    assert len(big) > unwrap.SAMPLE
    for text in texts[:20] + [mutations.wrapped(80)(t) for t in texts[:20]] + [big]:
        data = text.encode("utf-8")
        want = unwrap.unwrap(text).encode("utf-8")
        stream = unwrap.Unwrapping(io.BytesIO(data))
        got = b""
        while True:
            piece = stream.read(size)
            if not piece:
                break
            got += piece
            if size < 0:
                assert stream.read(size) == b""
                break
        assert got == want


def test_readline_reads_the_joined_lines():
    text = mutations.wrapped(80)(_read(_case_text("ib-completion-error12")))
    stream = unwrap.Unwrapping(io.BytesIO(text.encode()))
    lines = iter(stream.readline, b"")
    assert b"".join(lines).decode() == unwrap.unwrap(text)


def test_a_width_needs_its_spike_and_its_continuations():
    """Lines that merely fit a width, or a table whose rows are all as long, or one line repeated, are no wrap."""
    fit = [f"line {i} " + "x" * (60 + i % 20) for i in range(40)]  # text written for this test
    assert unwrap.width(fit) is None
    table = ["+" + "-" * 78 + "+"] + ["| GPU %d  Name  Persistence-M | Bus-Id  Disp.A | Volatile Uncorr. ECC  |" % i
                                      for i in range(8)]
    assert unwrap.width(table) is None
    assert unwrap.width(["x" * 80, "y" * 10]) is None  # a line of its own: the same first word's kind


def test_an_overlong_line_and_an_endless_wrap_are_bounded():
    """A line of 3 MiB with no end in a wrapped text is handed on as it is; a line wrapped in more pieces than
    :data:`unwrap.MAX_PIECES` is joined in parts; nothing is lost and every line keeps its number."""
    head = mutations.wrapped(80)(_read(_case_text("ib-completion-error12")))
    for text in (head * 40 + "z" * (3 << 20) + "\n" + head,
                 head * 40 + "[  12.345] " + "y" * (unwrap.MAX_PIECES * 90) + "\n" + head):
        source = mutations.wrapped(80)(text) if "y" * 100 in text else text
        got = unwrap.unwrap(source)
        assert got.count("\n") == source.count("\n")
        assert got.replace("\n", "") == source.replace("\n", "")
