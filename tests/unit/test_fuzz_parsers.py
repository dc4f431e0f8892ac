"""Every parser of node outputs and benchmark outputs runs in time linear in its input, whatever the lines hold.

A node is hostile input: one long kernel-log line once cost ``check`` minutes, because a regular expression
backtracked over the whole line from every position in it. Here hypothesis writes lines of the characters and
words the parsers' own expressions look for, repeated to thousands of characters, and every parser reads them.

The bound does not depend on the machine's speed: each parse is timed (the CPU time of this thread) against a
linear pass of the same input (:func:`linear_pass`, a tokenizer over every line), and must stay within
:data:`FACTOR` of it beyond the parse's own fixed cost (a parse of one short line). A parse that backtracks over a line of a few thousand characters costs thousands of
times the linear pass; a linear one costs a few times it. The lines below are written for these tests
(CONSTRUCTED), shaped like what a node could send.
"""
from __future__ import annotations

import ast
import importlib
import re
import time
from typing import Callable, List

import pytest
from hypothesis import HealthCheck, Phase, Verbosity, given, settings, strategies as st

from nccldiag.areas import all_areas, base, kernlog, kind, mesh, smiq
from nccldiag.benchmarks import nccltests, p2pbw, perftest
from nccldiag.check import engine
from nccldiag.model import secrets
from nccldiag.model.raw import RawNode

FACTOR = 60  # a linear parse costs at most a few times the linear pass; a quadratic one thousands of times
_TOKEN = re.compile(r"\w+|[^\w\s]+|\s+")


def linear_pass(text: str) -> None:
    """The yardstick: one tokenizing pass over every line (linear in the text)."""
    for line in text.splitlines():
        _TOKEN.findall(line)
        line.lower().split()


def cpu(fn: Callable[[], object]) -> float:
    t = time.thread_time()
    fn()
    return time.thread_time() - t


# a parse of a small input is held to the pass over 16 KiB of lines of words, numbers and marks (a node output's
# shape); a pass over 64 KiB of one token ('x' repeated, the floor before) costs 0.2 ms, less than what a parse of one
# line cut at the line bound costs on a loaded machine (the gpu area: 6 ms of CPU on a quiet one, 14 ms with both
# cores busy, whatever the length past the bound)
_FLOOR = "n7 mlx5_0 port=1 rx_errors: 12, state ACTIVE (0x1f) [ 12.5] link_downed 0/0 ok\n" * 200


def within_bound(parse: Callable[[str], object], text: str) -> None:
    """``parse(text)`` costs at most FACTOR linear passes of ``text`` (or of the floor's 16 KiB, if cheaper) beyond
    the parse's own fixed cost, ``parse`` of one short line (an area's sources looked up, its findings made). Each is
    timed up to three times and its cheapest run counts, so that a moment of load on the machine fails nothing."""
    ref = max(min(cpu(lambda: linear_pass(text)) for _ in range(3)),
              min(cpu(lambda: linear_pass(_FLOOR)) for _ in range(3)))
    fixed = min(cpu(lambda: parse("x\n")) for _ in range(3))
    spent = []
    for _ in range(3):
        spent.append(cpu(lambda: parse(text)))
        if min(spent) <= FACTOR * ref + fixed:
            return
    pytest.fail(f"parse cost {min(spent) * 1e3:.1f} ms CPU, over {FACTOR} x the linear pass ({ref * 1e3:.2f} ms) "
                f"and its fixed cost ({fixed * 1e3:.2f} ms) of {len(text)} characters: {text[:120]!r}...")


def _words(path: str) -> List[str]:
    """The literal words of every regular expression in the module at ``path``: what its parsers look for."""
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in (
                "compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "split") \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.update(re.findall(r"[A-Za-z][A-Za-z_]+(?: [A-Za-z]+)?:?", node.args[0].value))
    return sorted(found)


SHARED = _words(kernlog.__file__) + _words(smiq.__file__) + _words(base.__file__)
PIECES = list(" \t:./-_=,()[]<>#%+|'\"\\") + ["0", "9", "a", "x", "A", "F", "0x1f", "00:", "0000:3b:00.0", "mlx5_0",
                                               "GPU", "==> ", " <==", "NVRM: Xid (PCI:", "AER: ", "port 1", "GB/s"]


def texts(words: List[str]):
    """A few lines, each a word, then a short run of words and pieces repeated to thousands of characters, then
    another word: the shape of the lines that make a backtracking expression slow."""
    unit = st.lists(st.sampled_from(words + PIECES), min_size=1, max_size=3).map("".join)
    line = st.tuples(st.sampled_from([""] + words), unit, st.integers(1_000, 12_000),
                     st.sampled_from([""] + words + PIECES)).map(
        lambda t: t[0] + t[1] * (t[2] // len(t[1]) + 1) + t[3])
    return st.lists(line, min_size=1, max_size=4).map(lambda ls: "\n".join(ls) + "\n")


FUZZ = settings(max_examples=15, deadline=None, derandomize=True, phases=[Phase.generate],
                suppress_health_check=list(HealthCheck), database=None, verbosity=Verbosity.quiet)
# the shape of the line that made a 6-node check take 14 minutes (the cost grew with the square of its length),
# and lines of one character repeated: each once at the line bound, and once four times past it
KILLERS = ["[    1.000000] pcieport AER: " + "0/0" * 4000] + [
    w + c * n for w in ("", "a", "port", "DMAR:") for c in ("0", "a", " ", "\t", ":", "(", "[", "0/") for n in (4000, 16000)]

NODE_AREAS = [a for a in all_areas() if kind(a) == "node"]
WORDS = {a.NAME: sorted(set(_words(a.__file__) + SHARED)) for a in NODE_AREAS}


def hostile_node(area, text: str) -> RawNode:
    return RawNode(host="n1", sections={s.name: text for s in area.SOURCES})


@pytest.mark.parametrize("area", NODE_AREAS, ids=lambda a: a.NAME)
def test_every_area_judges_the_known_slow_lines_in_linear_time(area):
    for line in KILLERS:
        text = line + "\n"
        within_bound(lambda t: engine.analyze_node(hostile_node(area, t), [area]), text)
        within_bound(lambda t: area.parse({s.name: t for s in area.SOURCES}), text)


@pytest.mark.parametrize("area", NODE_AREAS, ids=lambda a: a.NAME)
@FUZZ
@given(data=st.data())
def test_every_area_judges_a_node_in_linear_time(area, data):
    """The check's own path (analyze_node: lines bounded, every area parsed and judged) on a node whose every
    source of the area printed the same hostile text."""
    text = data.draw(texts(WORDS[area.NAME]))
    within_bound(lambda t: engine.analyze_node(hostile_node(area, t), [area]), text)


@pytest.mark.parametrize("area", NODE_AREAS, ids=lambda a: a.NAME)
@FUZZ
@given(data=st.data())
def test_every_area_parser_is_linear_on_lines_of_any_length(area, data):
    """``parse`` called directly (as the probe and the pasted outputs of a log call it), no line bound before it."""
    text = data.draw(texts(WORDS[area.NAME]))
    within_bound(lambda t: area.parse({s.name: t for s in area.SOURCES}), text)


TEXT_PARSERS = {
    "smiq.parse_q": (smiq.parse_q, smiq.__file__),
    "kernlog.parse": (kernlog.parse, kernlog.__file__),
    "mesh.parse": (lambda text: mesh.parse("n1", text), mesh.__file__),
    "nccltests.parse_nccl_tests": (nccltests.parse_nccl_tests, nccltests.__file__),
    "perftest.parse_perftest": (perftest.parse_perftest, perftest.__file__),
    "p2pbw.parse_p2p_bandwidth": (p2pbw.parse_p2p_bandwidth, p2pbw.__file__),
    "secrets.redact": (secrets.redact, secrets.__file__),  # run on every string a report shows or writes
}


@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
def test_every_text_parser_reads_the_known_slow_lines_in_linear_time(name):
    for line in KILLERS:
        within_bound(TEXT_PARSERS[name][0], line + "\n")


@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
@FUZZ
@given(data=st.data())
def test_every_text_parser_is_linear_on_lines_of_any_length(name, data):
    parse, path = TEXT_PARSERS[name]
    text = data.draw(texts(sorted(set(_words(path) + SHARED))))
    within_bound(parse, text)


def test_every_area_and_text_parser_is_fuzzed():
    """A new area or format module is in the tests above without a word here; a new benchmark parser must be
    added to TEXT_PARSERS."""
    found = set()
    for mod in ("nccltests", "perftest", "p2pbw"):
        m = importlib.import_module(f"nccldiag.benchmarks.{mod}")
        found |= {f"{mod}.{n}" for n in dir(m) if n.startswith("parse")}
    assert found <= set(TEXT_PARSERS), found - set(TEXT_PARSERS)
    assert {a.NAME for a in all_areas() if hasattr(a, "parse")} <= {a.NAME for a in NODE_AREAS}


def test_a_long_line_is_cut_and_says_so_and_its_event_still_counts():
    """A kernel-log AER line padded to 128 KiB (the size that took 14 minutes): the check reads its first
    4 KiB, the line says how much was cut, and the event it reports is still counted on its port."""
    from nccldiag.areas import pcie_errors

    line = ("[ 5.1] pcieport 0000:00:03.1: AER: Multiple Uncorrected (Fatal) error received: 0000:3b:00.0 "
            + "0/0" * 43690)
    text = line + "\nnccldiag: kernel log lines 1\n"
    cut = base.Sections.bounded({"kernel_log": text}, [pcie_errors])["kernel_log"]
    first = cut.splitlines()[0]
    assert first.startswith(line[:base.LINE_LIMIT]) and first.endswith(base.cut_note(len(line) - base.LINE_LIMIT))
    assert "more characters cut by nccldiag" in first and len(first) < base.LINE_LIMIT + 100
    rep = engine.analyze_node(RawNode(host="n1", sections={"kernel_log": text}), [pcie_errors])
    (f,) = [f for f in rep.findings if f.check == "pcie_errors.kernel_log"]
    assert f.status.value == "fail" and "0000:00:03.1: 1 fatal" in f.message, f.message
    # a JSON source keeps its long line whole: one object a line
    from nccldiag.areas import gpu

    doc = '{"gpus": [' + ",".join('{"index": %d, "name": "H100"}' % i for i in range(400)) + "]}\n"
    assert base.Sections.bounded({"nvml": doc}, [gpu])["nvml"] == doc and len(doc) > base.LINE_LIMIT


def test_the_bound_fails_a_quadratic_parse_and_passes_its_fixed_cost():
    """The yardstick itself: a search that backtracks from every position of a 32 KiB line ('a+b' over a run of
    'a', CONSTRUCTED) fails the bound; a parse whose cost is all fixed (a pause of CPU work whatever the text)
    passes it."""
    quadratic = re.compile(r"a+b")
    with pytest.raises(pytest.fail.Exception):
        within_bound(lambda t: quadratic.search(t), "a" * 32768 + "\n")

    def fixed(t: str) -> None:
        sum(i * i for i in range(20000))  # about the ibcounters area's fixed cost
    within_bound(fixed, "a" * 16384 + "\n")
