"""The prefilter's two ways of finding candidate lines give the same lines: Hyperscan (``HyperscanLines``) and
Python's ``re`` (``search_lines``, the fallback where ``hyperscan`` does not import).

A candidate line is a line that, alone, holds a word of ``grammar.WORDS`` (``scan.candidate``). Both are held to
that on the real NCCL logs of ../shared/fixtures/nccl-logs, and on job logs generated here (written for these
tests: progress lines, the grammar's words in every case, CRLF endings, bytes that are not UTF-8, lines longer than
a block and than ``MAX_LINE``, a word whose tail would run on to the next line), with every block size.
"""
import io
import random
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nccldiag.nccl import grammar, replay, scan
from tests import real

hyperscan = pytest.importorskip("hyperscan")
FAST = scan.HyperscanLines(hyperscan, grammar.WORDS)


def per_line(body: bytes) -> list:
    """The starts of the lines of ``body`` (ending in a newline) that alone hold a word: the definition."""
    out, pos = [], 0
    while pos < len(body):
        e = body.index(b"\n", pos)
        if scan.candidate(body[pos:e]):
            out.append(pos)
        pos = e + 1
    return out


def scanned(data: bytes, find, block: int, max_line: int = scan.MAX_LINE, needs_all=lambda: False) -> list:
    """The (number, line) pairs the prefilter hands over with ``find`` as the way of finding candidates."""
    saved = list(scan._FINDER)
    scan._FINDER[:] = [find]
    try:
        s = scan.Scan(io.BytesIO(data), needs_all, block=block, max_line=max_line)
        return list(s) + [("total", s.total, s.skipped)]
    finally:
        scan._FINDER[:] = saved


def whole(data: bytes) -> bytes:
    return data if data.endswith(b"\n") else data + b"\n"


def specimen(word: str) -> str:
    lit, _, tail = word.partition("\0")
    return lit + {"": "", r"\s+(?:count|N)": "  count", r"\s": " ", r"\d*\s": "32 ", r"\d+\s": "8 ",
                  "[0-9;]*m": "0;1m"}.get(tail, "")


def generated(seed: int, lines: int = 3000) -> bytes:
    """A job's stdout, written for these tests: progress lines, and now and then a line holding a word of the
    grammar (as it is, in other cases, cut short, with its tail across a line end), CRLF endings, bytes that
    are not UTF-8, and very long lines."""
    rnd = random.Random(seed)
    out = []
    for i in range(lines):
        r = rnd.random()
        line = b"epoch 1 step %d/9000 loss 2.%04d lr 0.0003 tokens/s 18%03d" % (i, i * 7 % 10000, i % 1000)
        if r < 0.08:
            w = specimen(rnd.choice(grammar.WORDS)).encode("utf-8")
            kind = rnd.randrange(6)
            if kind == 1:
                w = w.swapcase()
            elif kind == 2:
                w = w.lower()
            elif kind == 3:
                w = w[:-1]  # cut short: no longer the word
            elif kind == 4:
                w = w.partition(b" ")[0] + b"\n" + w.partition(b" ")[2]  # across a line end
            at = rnd.randrange(len(line) + 1)
            line = line[:at] + w + line[at:]
        elif r < 0.10:
            line += b" \xff\xfe\xc3(" + bytes(rnd.randrange(256) for _ in range(8)).replace(b"\n", b"")
        elif r < 0.11:
            line = b"x" * rnd.choice([100, 70_000, 300_000]) + specimen(rnd.choice(grammar.WORDS)).encode()
        out.append(line + (b"\r\n" if rnd.random() < 0.2 else b"\n"))
    return b"".join(out)


def _real_logs():
    if not real.AVAILABLE:
        return [pytest.param(None, marks=pytest.mark.skip(reason=real.REASON))]
    return [pytest.param(p, id=p.name) for p in sorted(real.nccl_log().glob("*.log"))]


@pytest.mark.parametrize("path", _real_logs())
def test_both_ways_find_the_lines_that_alone_hold_a_word_in_every_real_log(path):
    body = whole(path.read_bytes())
    expected = per_line(body)
    assert expected, path  # every real log has lines the parser reads
    assert FAST(body, len(body)) == expected
    assert scan.search_lines(body, len(body)) == expected


@pytest.mark.parametrize("path", _real_logs())
def test_both_ways_hand_over_the_same_lines_of_every_real_log_among_progress_lines(path):
    log = path.read_bytes()
    filler = b"".join(b"step %d/500 loss 0.%03d\n" % (i, i) for i in range(40))  # written for this test
    data = b"".join(whole(line) + filler for line in log.split(b"\n"))
    for block in (64, 4096, scan.BLOCK):
        fast = scanned(data, FAST, block)
        assert fast == scanned(data, scan.search_lines, block)
        assert fast[-1][2] > 0  # progress lines were skipped


@pytest.mark.parametrize("seed", range(6))
def test_both_ways_find_the_same_lines_of_a_generated_job_log(seed):
    data = generated(seed)
    expected = per_line(data)
    assert FAST(data, len(data)) == expected
    assert scan.search_lines(data, len(data)) == expected
    assert 0 < len(expected) < data.count(b"\n") // 2
    for block in (97, 4096, 65536, scan.BLOCK):
        assert scanned(data, FAST, block, max_line=50_000) == scanned(data, scan.search_lines, block, 50_000)


def test_a_word_counts_only_on_its_own_line_and_only_in_its_case():
    # Written for this test. 'float' with a blank after it is a word (a result row's type); 'float' at a line's
    # end is not, though a newline follows it. Words are matched in the case the grammar writes them.
    data = b"float\nfloat 8\nsize\n  count\nnccl info \r\nNCCL INFO x\r\n\xff\xfeNCCL WARN \xc3\n"
    expected = [6, 39, 52]
    assert per_line(data) == expected
    assert FAST(data, len(data)) == expected
    assert scan.search_lines(data, len(data)) == expected


@pytest.mark.parametrize("path", _real_logs())
def test_hyperscan_tells_a_line_holds_a_word_as_re_does_on_every_real_line(path):
    lines = path.read_bytes().split(b"\n")
    held = [line for line in lines if scan.candidate(line)]
    assert held and len(held) < len(lines) + 1
    assert [line for line in lines if FAST.holds(line)] == held
    # each line with a word's tail cut off at its end, as a line of a block that ends there
    assert [FAST.holds(line[:-3]) for line in held] == [scan.candidate(line[:-3]) for line in held]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from([specimen(w) for w in grammar.WORDS]),
                          st.sampled_from(["\n", "\r\n", " ", "x", "\t", "1", "\xff", "é", "[", "\x1b"])),
                max_size=60))
def test_both_ways_agree_on_any_text_made_of_words_and_separators(parts):
    data = whole("".join(parts).encode("utf-8", "surrogateescape"))
    expected = per_line(data)
    assert [FAST.holds(line) for line in data.split(b"\n")] == [scan.candidate(line) for line in data.split(b"\n")]
    assert FAST(data, len(data)) == expected
    assert scan.search_lines(data, len(data)) == expected


def test_without_hyperscan_the_prefilter_searches_with_re(monkeypatch):
    monkeypatch.setattr(scan, "_FINDER", [])
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # import hyperscan raises ImportError
    assert scan.finder() is scan.search_lines
    data = generated(7)
    assert scanned(data, scan.finder(), 4096) == scanned(data, FAST, 4096)


def test_with_hyperscan_the_prefilter_uses_it_unless_told_re(monkeypatch):
    monkeypatch.setattr(scan, "_FINDER", [])
    monkeypatch.delenv("NCCLDIAG_PREFILTER", raising=False)
    assert isinstance(scan.finder(), scan.HyperscanLines)
    monkeypatch.setattr(scan, "_FINDER", [])
    monkeypatch.setenv("NCCLDIAG_PREFILTER", "re")
    assert scan.finder() is scan.search_lines


def test_an_expression_hyperscan_cannot_compile_falls_back_to_re(monkeypatch):
    class Broken:
        HS_MODE_BLOCK = hyperscan.HS_MODE_BLOCK

        @staticmethod
        def Database(**kw):
            raise hyperscan.error("unsupported")  # as hyperscan raises for an expression it cannot compile

    monkeypatch.setattr(scan, "_FINDER", [])
    monkeypatch.delenv("NCCLDIAG_PREFILTER", raising=False)
    monkeypatch.setitem(sys.modules, "hyperscan", Broken)
    assert scan.finder() is scan.search_lines


def test_hyperscan_leaves_out_only_words_that_hold_another():
    """Of the plain words (no tail), those Hyperscan is given hold none of the others, and each word it is not
    given holds one it is: every line holding a word holds one it looks for."""
    plain = [w for w in grammar.WORDS if "\0" not in w and "\n" not in w]
    kept = scan._outermost(plain)
    assert 0 < len(kept) < len(plain)
    assert not [(w, o) for w in kept for o in kept if o != w and o in w]
    assert not [w for w in plain if w not in kept and not any(o in w for o in kept)]
    assert FAST.plain == len(kept) and FAST.words == len(kept) + len([w for w in grammar.WORDS if w not in plain])


PIECES = [specimen(w) for w in grammar.WORDS] + ["\n", " ", "\t", "x", "1", "é", "\x1c", "\xa0", "\u2003", "\x0b",
                                                 "&#78;", "`", "**"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), min_size=1, max_size=8))
def test_texts_tested_together_are_told_to_hold_no_word_only_where_none_does(texts):
    """The texts of a benchmark output's lines tested for a word in one Hyperscan pass (the replay's Plain items):
    told free of words only where holds_word finds none in each; and told so wherever none holds one, for texts of
    printable ASCII and tabs (Python's \\s reads \\x1c and \\u2003 as space, Hyperscan does not: those are tested
    line by line)."""
    none = not any(grammar.holds_word(t) for t in texts)
    told = replay._none_holds_a_word(texts, FAST)
    assert none or not told
    if all(not re.search(r"[^\t\x20-\x7e]", t) for t in texts):
        assert told == none


def test_a_word_read_only_by_pythons_spaces_is_not_told_away():
    assert grammar.holds_word("float\x1c") and grammar.holds_word("float\u2003")
    assert not replay._none_holds_a_word(["step 1", "float\x1c"], FAST)
    assert not replay._none_holds_a_word(["float\u2003"], FAST)
    assert not replay._none_holds_a_word(["step 1", "float\n"], FAST)  # a text holding a newline
    assert replay._none_holds_a_word(["step 1", "loss 2.5\tlr 3e-4"], FAST)
    assert not replay._none_holds_a_word(["step 1", "float 8"], FAST)
    assert not replay._none_holds_a_word(["step 1", "loss 2.5\tlr 3e-4"], None)  # the prefilter is Python's re
