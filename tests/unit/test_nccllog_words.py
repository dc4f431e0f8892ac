"""The grammar, the prefilter and the filtered path of ``nccldiag log`` hold together, both ways, without fixtures.

The prefilter (nccldiag.nccl.scan) hands the parser only the lines holding a word of ``grammar.WORDS``. Here:
every guard word of the grammar is a prefilter candidate; every word is one the grammar reads (a guard of one of
its expressions, each match of which holds it, or a word its code tests a line for) or one of the failure
lexicon's (nccldiag/knowledge/lexicon.toml, whose reader is fed the lines handed over); a line carrying each word
survives the filtered path; and a line any expression of the grammar reads gives the same facts through the
filtered path as through reading every line. The lines are written for these tests or generated from the
grammar's own expressions.
"""
import ast
import dataclasses
import inspect
import io
import json
import re
import textwrap
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nccldiag import fronts
from nccldiag.knowledge import lexicon
from nccldiag.nccl import grammar, parser, replay, scan

# Written for these tests: a training loop's progress lines, which hold no word the parser reads.
FILLER = "".join(f"epoch 3 step {i}/500 loss 2.{i * 7:04d} lr 0.0003\n" for i in range(6))

GUARDED = {
    "KERNEL_WORDS": grammar.KERNEL_WORDS, "KMSG_WORDS": grammar.KMSG_WORDS, "TORCH_WORDS": grammar.TORCH_WORDS, "LAUNCHER_WORDS": grammar.LAUNCHER_WORDS,
    "UNPREFIXED_WORDS": grammar.UNPREFIXED_WORDS,
    "QUOTED_WARN_WORDS": grammar.QUOTED_WARN_WORDS, "BENCH_HEADS": grammar.BENCH_HEADS,
    "ROW_TYPES": grammar.ROW_TYPES, "BENCH_TITLES": grammar.BENCH_TITLES, "RAS_HEADS": grammar.RAS_HEADS,
    "RAS_MESSAGES": grammar.RAS_MESSAGES,
}
# Guards of the parser's tables: a message holding none of them is not tried by the row's pattern.
ROW_GUARDS = [(row.name, row.guard, row.pattern) for row in grammar.FACTS] + \
    [(f"note_{kind}", guard, pat) for kind, guard, pat in grammar._NOTES]


def literal(word: str) -> str:
    return word.partition("\0")[0]


def specimen(word: str) -> str:
    """The word with the least text its regular-expression tail (after a NUL) asks for."""
    lit, _, tail = word.partition("\0")
    return lit + {"": "", r"\s+(?:count|N)": " count", r"\s": " ", r"\d*\s": " ", r"\d+\s": "8 ",
                  "[0-9;]*m": "0m", r"\d{3} \d": "531 1", r"[1-9]\d\d \d": "109 1",
                  r"[A-Z][A-Za-z]{2,40}(?:\(\))? (?:returned [1-9]|(?:call )?failed)": "GetDeviceCount returned 8",
                  r"\w{1,12} image failed: ": "FS3 image failed: "}[tail]


def facts_json(facts) -> str:
    return json.dumps(dataclasses.asdict(facts), sort_keys=True, default=str)


def both_paths(text: str):
    """The facts of ``nccldiag log``'s filtered path and of reading every line, for one log."""
    data = text.encode("utf-8", "surrogatepass")
    filtered = scan.parse_streams([("job.log", io.BytesIO(data))])
    every = parser.parse_streams([("job.log", io.BytesIO(data))])
    return filtered, every


def handed_over(text: str):
    """The lines the prefilter hands the parser (line by line, decoded)."""
    s = scan.Scan(io.BytesIO(text.encode("utf-8", "surrogatepass")), lambda: False)
    return [line for _, line in s]


# ---- the grammar's words are the prefilter's


def test_the_prefilter_is_built_from_the_grammar_words_and_from_nothing_else():
    tables = (grammar.PREFIX_WORDS + grammar.CLEAN_MARKS + fronts.ESCAPES + grammar.ERROR_WORDS + grammar.APP_WORDS +
              grammar.BARE_WORDS + tuple(w for rows in GUARDED.values() for w, _ in rows) +
              tuple(g for _, guard, _ in ROW_GUARDS for g in guard) + grammar.LEXICON_WORDS)
    assert set(grammar.WORDS) == set(tables)
    assert set(grammar.LEXICON_WORDS) == {w for s in lexicon.shapes() for w in s.words}
    assert not hasattr(scan, "_WORDS")
    for word in grammar.WORDS:
        assert scan.candidate(specimen(word).encode()), word


def test_every_guard_literal_of_the_grammar_is_a_candidate():
    # _ERROR_TEXT's words, _KERNEL_TEXT's, the FACTS rows' guards and the notes': each alone on a line, and as a
    # line of some program's output
    words = list(grammar.ERROR_WORDS) + [w for w, _ in grammar.KERNEL_WORDS] + \
        [g for _, guard, _ in ROW_GUARDS for g in guard]
    for word in words:
        for line in (word, f"worker 3: {word} at step 7"):
            assert scan.candidate(line.encode()), line
    # a word behind a colour code or markdown that clean() takes off
    for word in ("Duplicate GPU detected", "NCCL WARN ", "Xid"):
        for hidden in (word[:2] + "\x1b[0m" + word[2:], word[:2] + "[0m" + word[2:], word[:2] + "**" + word[2:],
                       word[:2] + "`" + word[2:]):
            assert scan.candidate(hidden.encode()), hidden
    # a word whose quote mark a web page escaped (OpenSSH's 'Load key "<path>": bad permissions')
    for hidden in ('Load key &quot;/root/.ssh/id_rsa&quot;: bad permissions',
                   "Permissions 0640 for &#x27;/root/.ssh/id_rsa&#x27; are too open."):
        assert scan.candidate(hidden.encode()), hidden


def _consts(fn) -> set:
    """The strings a function's code holds."""
    return {n.value for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn))))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_every_candidate_word_is_one_the_grammar_reads():
    # the words the code tests a line for are the words of its tests
    bare = _consts(parser.Parser.bare) | _consts(parser.Parser.app_lines)
    for word in grammar.BARE_WORDS:
        assert word in bare, word
    # prefixes() and app_line() test a line for their words in place (their hottest path): the same words
    assert set(grammar.PREFIX_WORDS) <= _consts(grammar.prefixes)
    assert set(grammar.APP_WORDS) == _consts(grammar.app_line) - {grammar.app_line.__doc__}
    marks = _consts(grammar.clean)
    for word in grammar.CLEAN_MARKS:
        assert literal(word) in marks, word
    # each error word is read as a whole word, each other guard is part of every match of its expression
    for word in grammar.ERROR_WORDS:
        assert grammar.error_kind(f"step 7: {word}") == "error", word
    # the lexicon's words are its rows' (tests/unit/test_lexicon.py: every match of a row holds one of its words)
    assert set(grammar.LEXICON_WORDS) <= {w for s in lexicon.shapes() for w in s.words}


@pytest.mark.parametrize("name", sorted(GUARDED))
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_match_of_a_guarded_expression_holds_its_word(name, data):
    word, expr = data.draw(st.sampled_from(GUARDED[name]))
    text = data.draw(st.from_regex(re.compile(expr)))
    assert literal(word) in re.search(expr, text).group(0)


@pytest.mark.parametrize("row", ROW_GUARDS, ids=[r[0] for r in ROW_GUARDS])
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_match_of_a_fact_row_holds_one_of_its_guards(row, data):
    _, guard, pattern = row
    full = getattr(pattern, "full", pattern)  # a grammar.FirstHead: its plain expression
    text = data.draw(st.from_regex(full))
    assert any(g in full.search(text).group(0) for g in guard), (guard, text)


# ---- the filtered path


@pytest.mark.parametrize("word", grammar.WORDS, ids=[repr(w) for w in grammar.WORDS])
def test_a_line_carrying_each_word_survives_the_filtered_path(word):
    line = f"worker 3: {specimen(word)} at step 7"
    text = FILLER + line + "\n" + FILLER
    assert line.rstrip() in handed_over(text)
    filtered, every = both_paths(text)
    assert facts_json(filtered) == facts_json(every)


# Every expression of the grammar, as the lines it reads; on a line of their own among lines the prefilter skips.
EXPRESSIONS = sorted({(k, v.pattern, v.flags) for k, v in vars(grammar).items()
                      if isinstance(v, (re.Pattern, grammar.FirstHead))} |
                     {(f"WARN_KINDS.{k}", p.pattern, p.flags) for k, _, p in grammar.WARN_KINDS} |
                     {(f"FACTS.{r.name}", r.pattern.pattern, r.pattern.flags) for r in grammar.FACTS})


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_line_the_grammar_reads_gives_the_same_facts_through_the_prefilter(expr, data):
    _, pattern, flags = expr
    line = data.draw(st.from_regex(re.compile(pattern, flags))).replace("\n", " ")
    filtered, every = both_paths(FILLER + line + "\n" + FILLER)
    assert facts_json(filtered) == facts_json(every), line


# ---- the parser's checks spared on a line without a word (grammar.holds_word)


def test_a_line_holds_a_word_wherever_the_prefilter_finds_one():
    for word in grammar.WORDS:
        line = f"worker 3: {specimen(word)} at step 7"
        assert grammar.holds_word(line), word
    for line in FILLER.splitlines():
        assert not scan.candidate(line.encode()) and not grammar.holds_word(line)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(st.one_of(st.sampled_from([specimen(w) for w in grammar.WORDS]),
                                st.text(alphabet=" \t:()[]=,.-_/0123456789abcdefXYZ", max_size=12)), max_size=6))
def test_holds_word_finds_what_the_prefilter_finds(parts):
    line = "".join(parts).replace("\n", " ")
    assert grammar.holds_word(line) == scan.candidate(line.encode())


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_line_the_grammar_reads_gives_the_same_facts_with_every_check_tried(expr, data):
    """The facts of reading every line are the same where the parser tries every check on every line, a line
    without a word included."""
    _, pattern, flags = expr
    line = data.draw(st.from_regex(re.compile(pattern, flags))).replace("\n", " ")
    text = (FILLER + line + "\n" + FILLER).encode("utf-8", "surrogatepass")
    spared = parser.parse_streams([("job.log", io.BytesIO(text))])
    with mock.patch.object(parser, "holds_word", lambda _: True), mock.patch.object(replay, "holds_word", lambda _: True):
        tried = parser.parse_streams([("job.log", io.BytesIO(text))])
        filtered = scan.parse_streams([("job.log", io.BytesIO(text))])
    assert facts_json(spared) == facts_json(tried) == facts_json(filtered), line


def test_a_pid_or_tid_of_digits_without_a_decimal_value_is_read_as_a_name():
    # Written for this test: a thread id of a superscript digit, which str.isdigit() takes and int() refuses.
    text = "node-a:12:\u00b9 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    filtered, every = both_paths(FILLER + text + FILLER)
    assert every.nccl_lines == 1 and facts_json(filtered) == facts_json(every)
