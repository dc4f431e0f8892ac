"""Every regular expression nccldiag holds costs time linear in the length of the line it is run on.

A node's output, an NCCL log and a pasted text are not trusted: a line may be megabytes of whatever makes a
backtracking expression try a long run from every position. The parsers and readers cut lines (4 KiB for a
kernel line, 64 KiB for an NCCL log line), but a clue a diagnosis rule searches, a parser called directly and a
site's own pattern are not all cut, and an expression quadratic in a 64 KiB line takes minutes.

Here every compiled expression is collected without a list to keep up to date: each module of the package is
walked (its attributes, its classes' attributes, and the lists, dicts and rows they hold), the expressions
written inline (``re.search(r"...", text)``) are read from each module's source, and every row of the knowledge
tables that has a pattern (``pattern``, ``unless``, ``fail_on``, ``beside``, ``match``) is compiled. Each is run
as the project runs it: searched, unless every use of it in the package is an anchored ``match``/``fullmatch``.

Each is run on lines written for this test (CONSTRUCTED): its own literal pieces with long gaps between them, its
first piece and each piece repeated, 64 KiB of one character or of ``a ``, digits, ``:``, nested brackets. The
bound does not depend on the machine's speed or load: the CPU time of a search of a line is divided by that of a
linear pass over the same line (a tokenizer, :func:`yardstick`), measured in the same test, and this ratio must
not grow from 4 KiB to 64 KiB (it grows 16 times for a quadratic expression; a margin of 4 is allowed, and
anything cheaper than one pass over the line counts as linear). A line is first tried at 16 KiB, so that a
quadratic expression fails in a second rather than in minutes.
"""
from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import re
import signal
import sys
import time
from typing import Callable, Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import nccldiag

if sys.version_info >= (3, 11):
    import tomllib
    from re import _constants as sre_constants, _parser as sre_parse
else:  # pragma: no cover
    import sre_constants
    import sre_parse
    import tomli as tomllib

# modules that run as a script on a node when imported: their expressions are read from their source only
SCRIPTS = {"nccldiag.__main__", "nccldiag.node.envprobe", "nccldiag.node.info", "nccldiag.node.nvml",
           "nccldiag.node.rasquery"}
_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
_ROW_KEYS = {"pattern", "unless", "fail_on", "beside", "match"}
_ANCHORED = {"match", "fullmatch"}


class Expr:
    """One compiled expression, where it was found, and how the package runs it (search, match, fullmatch)."""

    def __init__(self, where: str, pattern: "re.Pattern", how: str = "search") -> None:
        self.where, self.pattern, self.how = where, pattern, how

    def run(self, line) -> Callable[[], object]:
        call = getattr(self.pattern, self.how)
        return lambda: call(line)


def _sources() -> Dict[str, str]:
    return {m.name: open(importlib.util.find_spec(m.name).origin, encoding="utf-8").read()
            for m in pkgutil.walk_packages(nccldiag.__path__, "nccldiag.")}


def _how(name: str, module: str, sources: Dict[str, str]) -> str:
    """``match`` or ``fullmatch`` when every use of ``name`` is that call, else search: its uses in its module, and in
    every module that reads it (``kernlog.NAME``, or a name imported: any module importing that name counts)."""
    word = rf"(?<![\w.]){re.escape(name)}\b(\.\w+)?"
    uses = re.findall(word, sources[module])
    for other, text in sources.items():
        if other != module and name in text:
            uses += re.findall(rf"(?<![\w.]){re.escape(module.rsplit('.', 1)[1])}\.{re.escape(name)}\b(\.\w+)?", text)
            imports = len(re.findall(rf"\bimport\b[^\n(]*\b{re.escape(name)}\b|\bimport \([^)]*\b{re.escape(name)}\b",
                                     text))
            if imports:
                found = re.findall(word, text)
                for _ in range(imports):  # the import itself is no use
                    if "" in found:
                        found.remove("")
                uses += found
    calls = set(uses)
    calls.discard("")  # the definition itself, and any other plain use, count as a search (passed on)
    plain = sum(1 for u in uses if not u)
    if plain <= 1 and calls and {c.lstrip(".") for c in calls} <= _ANCHORED:
        return sorted(calls)[0].lstrip(".")
    return "search"


def _walk(value, where: str, out: Dict, seen: set, depth: int = 0) -> None:
    if id(value) in seen or depth > 5:
        return
    seen.add(id(value))
    if isinstance(value, re.Pattern) or (callable(getattr(value, "search", None)) and
                                         isinstance(getattr(value, "pattern", None), (str, bytes))):
        # an expression, or an object that searches with one as it sees fit (nccl.grammar.FirstHead): as a whole
        out.setdefault((value.pattern, getattr(value, "flags", 0)), Expr(where, value))
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(v, f"{where}[{k!r}]"[:160], out, seen, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, v in enumerate(value):
            _walk(v, f"{where}[{i}]", out, seen, depth + 1)
    elif type(value).__module__.startswith("nccldiag") and not isinstance(value, type):
        fields = getattr(value, "__dict__", None) or {s: getattr(value, s, None)
                                                      for s in getattr(type(value), "__slots__", ())}
        for k, v in fields.items():
            _walk(v, f"{where}.{k}", out, seen, depth + 1)


def _rows(value, where: str, out: Dict) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in _ROW_KEYS and isinstance(v, str):
                p = re.compile(v)
                out.setdefault((p.pattern, p.flags), Expr(f"{where}.{k}", p))
            else:
                _rows(v, f"{where}.{k}", out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _rows(v, f"{where}[{v.get('id', i) if isinstance(v, dict) else i}]", out)


def collect() -> List[Expr]:
    """Every expression of the package: module attributes, inline calls, and the knowledge tables' rows."""
    out: Dict[Tuple, Expr] = {}
    sources = _sources()
    for name, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            f = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(f, "attr", "") in _CALLS and \
                    getattr(getattr(f, "value", None), "id", "") == "re" and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, (str, bytes)):
                flags = 0
                for a in node.args[1:] + [k.value for k in node.keywords]:
                    for n in ast.walk(a):
                        if isinstance(n, ast.Attribute) and isinstance(getattr(re, n.attr, None), re.RegexFlag):
                            flags |= getattr(re, n.attr)
                p = re.compile(node.args[0].value, flags)
                how = f.attr if f.attr in _ANCHORED else "search"
                out.setdefault((p.pattern, p.flags), Expr(f"{name}:{node.lineno}", p, how))
        if name in SCRIPTS:
            continue
        mod = importlib.import_module(name)
        seen: set = set()
        for k, v in list(vars(mod).items()):
            if k.startswith("__") or type(v).__name__ == "module":
                continue
            if isinstance(v, type):
                if v.__module__ == name:
                    for ck, cv in list(vars(v).items()):
                        _walk(cv, f"{name}.{k}.{ck}", out, seen)
                continue
            _walk(v, f"{name}.{k}", out, seen)
            e = out.get((v.pattern, v.flags)) if isinstance(v, re.Pattern) else None
            if e is not None and (e.where.startswith(name + ":") or e.where == f"{name}.{k}"):  # a module's own expression: named, and run as used
                e.where, e.how = f"{name}.{k}", _how(k, name, sources)
    from nccldiag import knowledge
    folder = os.path.dirname(knowledge.__file__)
    for f in sorted(os.listdir(folder)):
        if f.endswith(".toml"):
            with open(os.path.join(folder, f), "rb") as fh:
                _rows(tomllib.load(fh), f, out)
    return list(out.values())


# ---------------------------------------------------------------- the lines


def pieces(pattern: "re.Pattern") -> List[str]:
    """The literal runs of an expression (the words it looks for), in order, at most 10."""
    found: List[str] = []

    def go(parsed) -> None:
        run: List[str] = []
        for op, av in parsed:
            if op is sre_constants.LITERAL:
                run.append(chr(av))
                continue
            if run:
                found.append("".join(run))
                run = []
            if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                go(av[2])
            elif op is sre_constants.SUBPATTERN:
                go(av[-1])
            elif op is sre_constants.BRANCH:
                for alt in av[1]:
                    go(alt)
            elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
                go(av[1])
            elif op is sre_constants.IN:
                found.extend(chr(v) for o, v in av[:1] if o is sre_constants.LITERAL)
        if run:
            found.append("".join(run))

    src = pattern.pattern
    if isinstance(src, bytes):
        src = src.decode("latin-1")
    go(sre_parse.parse(src, pattern.flags & ~(re.LOCALE | re.ASCII) if isinstance(pattern.pattern, str) else 0))
    return list(dict.fromkeys(p for p in found if p.strip() or p == " "))[:10]


_GENERIC = ["a", "a ", "0", ":", " ", "\t", "0/", "x=", "a.", "-0", "0,", "_", "a:", "0 ", "\\", "'", '"']


def lines(pattern: "re.Pattern", n: int) -> Dict[str, object]:
    """The adversarial lines of ``n`` characters for ``pattern``, by the name of their shape."""
    out = {f"{g!r}*": (g * (n // len(g) + 1))[:n] for g in _GENERIC}
    out["nested []"] = "[" * (n // 2) + "]" * (n // 2)
    out["nested ()"] = "(" * (n // 2) + ")" * (n // 2)
    out["nested {}"] = '{"a": ' * (n // 6)
    ps = pieces(pattern)
    if ps:
        for fill in ("a", " ", "0", "a "):
            gap = (fill * n)[:n // (len(ps) + 1)]
            out[f"pieces, gaps of {fill!r}"] = gap.join(ps) + gap
            out[f"pieces, gaps of {fill!r} after"] = "".join(p + gap for p in ps)
        heads = " ".join(ps) + " "
        out["pieces repeated"] = (heads * (n // len(heads) + 1))[:n]
        glued = "".join(ps)
        out["pieces glued repeated"] = (glued * (n // len(glued) + 1))[:n]
        for i, p in enumerate(ps[:6]):
            out[f"piece {i} repeated"] = (p * (n // len(p) + 1))[:n]
            out[f"piece {i} and a blank repeated"] = ((p + " ") * (n // (len(p) + 1) + 1))[:n]
            out[f"piece {i} and a letter repeated"] = ((p + "a") * (n // (len(p) + 1) + 1))[:n]
            out[f"piece {i} then letters"] = p + "a" * n
            out[f"piece {i} then blanks"] = p + " " * n + "x"
    if isinstance(pattern.pattern, bytes):
        out = {k: v.encode("utf-8", "surrogateescape") for k, v in out.items()}
    return out


# ---------------------------------------------------------------- the measure

_CHAR = re.compile(r"(?s).")
_BCHAR = re.compile(rb"(?s).")


def yardstick(line) -> None:
    """A linear pass over the line: the same engine finding each of its characters."""
    (_BCHAR if isinstance(line, bytes) else _CHAR).findall(line)


class Slow(Exception):
    """A measure ran past :data:`CEILING` seconds of CPU time."""


CEILING = 2.0  # CPU seconds of the searches of one line of at most 16 KiB: thousands of linear passes over it


def _ceiling(*_) -> None:
    raise Slow


def cpu(fn: Callable[[], object], trials: int = 3, least: float = 2e-4, ceiling: float = CEILING) -> float:
    """The CPU time of one call of ``fn``: the least of ``trials`` averages over calls lasting ``least`` seconds.
    Past ``ceiling`` seconds of CPU time in all, :class:`Slow` (a search is interrupted by the signal)."""
    best = float("inf")
    old = signal.signal(signal.SIGVTALRM, _ceiling)
    signal.setitimer(signal.ITIMER_VIRTUAL, ceiling)
    try:
        for _ in range(trials):
            k, t0 = 0, time.thread_time()
            while True:
                fn()
                k += 1
                t = time.thread_time() - t0
                if t >= least:
                    break
            best = min(best, t / k)
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, old)
    return best


SMALL, MIDDLE, LARGE = 4 * 1024, 16 * 1024, 64 * 1024
MARGIN = 4  # the growth of (search / linear pass) allowed from SMALL to LARGE; a quadratic expression's is 16


_PASS: Dict[Tuple, float] = {}


def one_pass(line) -> float:
    """CPU time of the yardstick over ``line`` (a generic line's, measured once per test run)."""
    key = (len(line), line[:32], line[-32:], hash(line))
    if key not in _PASS:
        _PASS[key] = cpu(lambda: yardstick(line))
    return _PASS[key]


def growth(expr: Expr, small, large, ceiling: float = CEILING) -> Tuple[float, float, float]:
    """(search time of ``large``, what linear growth from ``small`` allows, the pass over ``large``), in seconds."""
    ts, tl = cpu(expr.run(small)), cpu(expr.run(large), least=0, ceiling=ceiling)
    return tl, ts * one_pass(large) / one_pass(small), one_pass(large)


def slow_lines(expr: Expr) -> List[str]:
    """The shapes of line on which ``expr`` grows faster than linearly, with the figures.

    A shape whose search at 4 KiB costs less than two passes over the line is linear on it (a quadratic search
    of 4 KiB costs hundreds); the others are measured at 16 KiB (a quadratic search grows 16 times, a linear one
    4). The shapes that grew more than twice as fast as linear there, and the three costliest, are measured
    again at 64 KiB, where the bound is: one measure at 16 KiB only picks the suspects, so that a search slowed for
    a moment by the machine never fails alone."""
    bad, cost, suspects = [], {}, []
    small, middle = lines(expr.pattern, SMALL), lines(expr.pattern, MIDDLE)
    for shape, line in small.items():
        try:
            if cpu(expr.run(line), trials=1) <= 2 * one_pass(line):
                continue
            t, allowed, one = growth(expr, line, middle[shape])
        except Slow:  # enough: the other shapes would cost as much each
            return [f"{shape}: over {CEILING} s of CPU at {SMALL} or {MIDDLE} characters"]
        cost[shape] = t / one
        if t > MARGIN / 2 * allowed + one:  # quadratic: 4 times linear at 16 KiB
            suspects.append(shape)
    large = lines(expr.pattern, LARGE)
    for shape in sorted(set(suspects) | set(sorted(cost, key=cost.get)[-3:])):
        try:
            t, allowed, one = growth(expr, small[shape], large[shape], ceiling=8 * CEILING)
        except Slow:
            bad.append(f"{shape}: over {8 * CEILING} s of CPU at {LARGE} characters")
            continue
        if t > MARGIN * allowed + one:
            bad.append(f"{shape}: {t * 1e3:.1f} ms at {LARGE} (linear: {allowed * 1e3:.2f} ms)")
    return bad


EXPRS = collect()
_GROUPS: Dict[str, List[Expr]] = {}
for _e in EXPRS:  # by module, or by knowledge table
    _GROUPS.setdefault(re.match(r"nccldiag(?:\.[a-z_0-9]+)*(?=[.:][A-Z_]|:)|[a-z]+\.toml", _e.where).group(), []).append(_e)


def test_the_expressions_are_collected():
    """The walk finds the expressions it must: a module's, one imported by a rule, a wrapper's, an inline one, and
    every row of the kernel-message, lexicon and causes tables."""
    from nccldiag.areas import kernlog
    from nccldiag.diagnosis import signs
    from nccldiag.knowledge import lexicon
    from nccldiag.nccl import grammar

    held = {(e.pattern.pattern, getattr(e.pattern, "flags", 0)) for e in EXPRS}
    assert len(EXPRS) > 500, len(EXPRS)
    for p in [signs.CONNECT, signs._ENOMEM, grammar.PREFIX, grammar._WATCHDOG] + \
             [r.pattern for r in kernlog.MESSAGES] + [s.pattern for s in lexicon.shapes()]:
        assert (p.pattern, p.flags) in held, p.pattern
    assert any(e.where.startswith("causes.toml") for e in EXPRS)
    assert any(e.where.startswith("nccldiag.areas.firmware:") for e in EXPRS)  # written inline


@pytest.mark.parametrize("group", sorted(_GROUPS))
def test_every_expression_is_linear_in_the_line(group):
    failed = {}
    for expr in _GROUPS[group]:
        bad = slow_lines(expr)
        if bad:
            failed[f"{expr.where} ({expr.how}) {expr.pattern.pattern!r}"] = bad
    assert not failed, "\n".join(f"{k}: {v}" for k, v in failed.items())


# ---------------------------------------------------------------- the expressions made linear read as before

def _before(module: str, name: str) -> "re.Pattern":
    """The expression ``name`` of ``module`` with the parts that were rewritten put back as they were."""
    mod = importlib.import_module(module)
    now = getattr(mod, name)
    pattern = now.pattern
    for new, old in REWRITTEN[(module, name)]:
        assert new in pattern, (module, name, new)
        pattern = pattern.replace(new, old)
    return re.compile(pattern, now.flags)


# each rewritten expression: (what it holds now, what it held), and how its result is used
REWRITTEN = {
    ("nccldiag.diagnosis.signs", "_ENOMEM"): [
        (r"(?:ibv_\w|mlx5dv_\w|", r"(?:ibv_\w+|mlx5dv_\w+|"), (r")[^\n]{0,380}?(?:Cannot", r")\S{0,80}?[^\n]{0,300}?(?:Cannot")],
    ("nccldiag.diagnosis.rules.nccl_env", "NAMED"): [
        (r"[A-Z0-9_]{1,64}", r"[A-Z0-9_]+"), (r"\s{0,8}(?:=\s{0,8}\S{1,256}\s{0,8})?", r"\s*(?:=\s*\S+\s*)?")],
    ("nccldiag.diagnosis.rules.net_plugin", "LOAD_BROKEN"): [
        (r"[\w.\-]{1,128}", r"[\w.\-]+"), (r"[\w.]{0,32}", r"[\w.]*"), (r"\S{0,256}?", r"\S*?")],
    ("nccldiag.diagnosis.rules.hca_firmware", "NO_DEVICE"): [(r"\S{0,256}:", r"\S*:")],
    ("nccldiag.diagnosis.signs", "CONNECT"): [
        (r"(?=\s*\[?(?P<addr>[0-9a-fA-F:.%\w]*))[^\n]{0,380}?",
         r"\s*\[?(?P<addr>[0-9a-fA-F:.%\w]*)\]?(?:<\d+>)?[^\n]{0,300}?")],
    ("nccldiag.diagnosis.signs", "HIDDEN"): [(r"/dev/infiniband[^\n]{0,380}?", r"/dev/infiniband\S{0,80}?[^\n]{0,300}?")],
    ("nccldiag.nccl.grammar", "_MERGED_NIC"): [(r"[^{}]*", r"[^}]*")],
    ("nccldiag.areas.firmware", "_FLINT_CMD"): [(r".{0,512}?\s-d", r".*?\s-d")],
    ("nccldiag.areas.ibcounters", "_PQ_COMMAND"): [(r".{0,512}?-C", r".*?-C"), (r".{0,512}?-P", r".*?-P")],
    ("nccldiag.areas.infiniband", "_SYSFS_GREP"): [
        (r"/\S{0,512}?/infiniband/[^/\s:]{1,512}/[^:\s]{1,512}):", r"/\S*?/infiniband/[^/\s:]+/[^:\s]+):")],
    ("nccldiag.areas.kernlog", "_PREFIX"): [(r"(\[[^\]]*\]\s*)", r"(\[\s*[^\]]*\]\s*)")],
    ("nccldiag.areas.pcie", "_TREE_OTHER_GPU"): [(r"Intel Corporation .{0,512}(", r"Intel Corporation .*(")],
    ("nccldiag.areas.pcie", "_TREE_GPU"): [(r"NVIDIA Corporation.{0,512}(", r"NVIDIA Corporation.*(")],
    ("nccldiag.areas.xid", "_BUS_IN"): [(r"(?:PCI:\s*)?(", r"(?:PCI:)?\s*(")],
    ("nccldiag.benchmarks.perftest", "_BW_AVERAGE"): [(r"[^\]]{1,512}", r"[^\]]+")],
    ("nccldiag.probe.analysis", "_MASTER_ADDR"): [(r"(\S[^'\s]{0,511})", r"(\S+?)")],
    ("nccldiag.slurm.nodes", "_KV"): [(r"(?<!\w)(\w+)", r"(\w+)"), (r"(?=(?<!\s)\s+", r"(?=\s+")],
    ("nccldiag.paste.kinds.kernel", "_NOT_LITERAL"): [(r"[^\]]{0,512}", r"[^\]]*"), (r"[^)]{0,512}", r"[^)]*")],
}
# how each result is used (what must read as before): "any" whether it matches (a clue), "groups" the names it
# captures, "addr" the address it captures, "found" the first match's span and groups, "match" an anchored match's,
# "all" every match's span and groups (findall, sub)
USED = {("nccldiag.diagnosis.rules.nccl_env", "NAMED"): "groups", ("nccldiag.nccl.grammar", "_MERGED_NIC"): "all",
        ("nccldiag.diagnosis.signs", "CONNECT"): "addr",
        ("nccldiag.areas.firmware", "_FLINT_CMD"): "found", ("nccldiag.areas.ibcounters", "_PQ_COMMAND"): "found",
        ("nccldiag.areas.infiniband", "_SYSFS_GREP"): "match", ("nccldiag.areas.kernlog", "_PREFIX"): "match",
        ("nccldiag.areas.xid", "_BUS_IN"): "match", ("nccldiag.benchmarks.perftest", "_BW_AVERAGE"): "found",
        ("nccldiag.probe.analysis", "_MASTER_ADDR"): "found", ("nccldiag.slurm.nodes", "_KV"): "all",
        ("nccldiag.paste.kinds.kernel", "_NOT_LITERAL"): "all"}


def _fits(key, text: str) -> bool:
    """Whether ``text`` is a line the expression ``key`` is written for."""
    if key == ("nccldiag.diagnosis.rules.nccl_env", "NAMED") and re.search(r"\s{9}", text):
        return False  # a name and its value are never nine blanks apart in NCCL's words
    if key == ("nccldiag.nccl.grammar", "_MERGED_NIC") and text.count("{") > 1:
        return False  # a merged NIC's list holds no brace of its own
    return True


def _differs(key, old: "re.Pattern", new: "re.Pattern", text: str) -> object:
    """How ``new`` reads ``text`` otherwise than ``old`` in what its caller uses (None when it reads it as before)."""
    how = USED.get(key, "any")
    if how == "all":
        before, after = ([(m.span(), m.groups()) for m in p.finditer(text)] for p in (old, new))
    elif how == "match":
        before, after = ((m.span(), m.groups()) if m else None for m in (old.match(text), new.match(text)))
    elif how == "found":
        before, after = ((m.span(), m.groups()) if m else None for m in (old.search(text), new.search(text)))
    else:
        b, a = old.search(text), new.search(text)
        before, after = bool(b), bool(a)
        if how == "groups" and b and a:
            before, after = [g for g in b.groups() if g], [g for g in a.groups() if g]
        elif how == "addr" and b and a and re.match(r"[^\w:.%\n]", text[b.end("addr"):] or " "):
            before, after = b.group("addr"), a.group("addr")
    return None if before == after else (before, after)


@pytest.mark.parametrize("key", sorted(REWRITTEN), ids=lambda k: f"{k[0].rsplit('.', 1)[1]}.{k[1]}")
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_each_expression_made_linear_reads_a_normal_line_as_before(key, data):
    """On lines a few hundred characters long (CONSTRUCTED: matches of either expression, and their literal
    pieces shuffled with blanks and characters), the rewritten expression finds what it found before, in what its
    caller uses (:data:`USED`): whether it matches (all a clue search uses), the names it captures, each match."""
    old, new = _before(*key), getattr(importlib.import_module(key[0]), key[1])
    words = pieces(old) + [" ", "  ", "0", "a", ":", "[", "]", "{", "}", "=", "/", ".", "_", "-", "lib", ".so",
                           "10.0.0.1", "<34567>", "%eth0", " failed", "NCCL_ALGO", "'", "\t"]
    shuffled = st.lists(st.sampled_from(words), max_size=30).map("".join)
    text = data.draw(st.one_of(st.from_regex(old), st.from_regex(new), shuffled,
                               st.tuples(shuffled, st.from_regex(old), shuffled).map("".join)))
    text = text.replace("\n", " ")[:300]
    assume(_fits(key, text))
    assert _differs(key, old, new, text) is None, text


def _real_lines() -> List[str]:
    from tests import real
    return sorted({line for p in sorted(real.ROOT.rglob("*")) if p.is_file()
                   for line in p.read_text(encoding="utf-8", errors="replace").splitlines()})


def test_each_expression_made_linear_reads_every_real_line_as_before():
    """Every line of every real capture (node outputs, NCCL logs, the cases' evidence), and every pattern of the
    kernel-message table (what the paste reader takes its words from), is read by each rewritten expression as
    before."""
    from tests import real
    from nccldiag.areas import kernlog
    real.require()
    lines = _real_lines()
    assert len(lines) > 3000, len(lines)
    patterns = [m.keep for m in kernlog.MESSAGES] + list(kernlog.CONTEXT)
    differ = {}
    for key in REWRITTEN:
        old, new = _before(*key), getattr(importlib.import_module(key[0]), key[1])
        for text in lines + patterns:
            if _fits(key, text) and _differs(key, old, new, text) is not None:
                differ.setdefault(key, []).append((text[:200], _differs(key, old, new, text)))
    assert not differ, differ
