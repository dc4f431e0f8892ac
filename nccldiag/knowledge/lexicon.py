"""The failure lexicon (``lexicon.toml``): the shapes of a line that say something went wrong, and the one reader
of lines that finds them (pure).

:func:`shape_of` tells which row a line is of (the first, in the table's order, whose pattern matches it and whose
``unless`` does not). :class:`Reader` finds them in a text fed a block of bytes at a time, as a log is read: a
prefilter of the rows' literal words (:data:`WORDS`, one expression over the bytes) picks the lines worth
decoding, so a text holding none costs one search. Every line is cut at :data:`MAX_LINE` characters, and every
pattern is linear in the line's length (``tests/unit/test_lexicon.py``).

What is found is a :class:`Line` per row and source: the first :data:`KEEP` lines of that shape, with the count of
all of them. ``nccldiag log`` reads its files with it, ``nccldiag check`` every raw output of a node; the
diagnoses say which lines no cause explains (``diagnosis/rules/unexplained.py``).
"""
from __future__ import annotations

import collections
import functools
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Pattern, Sequence, Tuple, Union

from nccldiag import fronts, knowledge, rx

TABLE = "lexicon.toml"
MAX_LINE = 4096  # the characters of a line a pattern is run on
KEEP = 3  # the lines of one shape kept per source (the others are counted)
ANY = "any"  # covered_by: any fail or warn diagnosis of a cause explains the line
SEVERITIES = ("fail", "warn")
_MEMO = 1 << 16  # lines remembered with their shape (a log repeats its lines)


@dataclass(frozen=True)
class Shape:
    """One row of the lexicon."""

    id: str
    pattern: knowledge.Expr
    words: Tuple[str, ...]  # literal words, each of which may end in a regular expression after a NUL
    severity: str
    covered_by: Tuple[str, ...]
    unless: Optional[knowledge.Expr]
    judged_by: Tuple[str, ...]
    meaning: str
    where: str  # lexicon.toml:<line>
    literals: Tuple[str, ...] = ()  # the words' literal parts (a word may end in an expression after a NUL)
    pasted_only: bool = False  # read in the texts given to 'nccldiag log' only, never in a node's own outputs
    two_gpus: bool = False  # a line of it says nothing in a text that shows the node has one GPU (paste.Pasted.one_gpu)

    def reads(self, text: str) -> bool:
        """Whether ``text`` (one line, cut at :data:`MAX_LINE`) is of this shape."""
        return (any(w in text for w in self.literals) and self.pattern.search(text) is not None
                and (self.unless is None or self.unless.search(text) is None))


@dataclass
class Line:
    """The lines of one shape in one source: the first of them, where it is, and how many there are."""

    shape: str
    severity: str
    source: str  # the file given to 'nccldiag log', or the node's output ('ibstat')
    lineno: int
    text: str
    host: Optional[str] = None
    count: int = 1  # lines of this shape in the source, this one included
    more: List[Tuple[int, str]] = field(default_factory=list)  # (line number, text) of the next ones kept

    @property
    def ref(self) -> str:
        return f"{self.source}:{self.lineno}"

    def refs(self) -> List[str]:
        """``source:line`` of every line kept."""
        return [self.ref] + [f"{self.source}:{n}" for n, _ in self.more]

    def texts(self) -> List[str]:
        return [self.text] + [t for _, t in self.more]


def _shape(row: Dict) -> Shape:
    return Shape(row["id"], knowledge.Expr(row["pattern"]), tuple(row["words"]), row["severity"],
                 tuple(row["covered_by"]), knowledge.Expr(row["unless"]) if row.get("unless") else None,
                 tuple(row.get("judged_by") or ()), row["meaning"], row["where"],
                 tuple(dict.fromkeys(w.partition("\0")[0] for w in row["words"])), bool(row.get("pasted_only")),
                 bool(row.get("two_gpus")))


@functools.lru_cache(maxsize=None)
def _shapes() -> Tuple[Shape, ...]:
    return tuple(_shape(r) for r in knowledge.rows(TABLE))


def shapes() -> Tuple[Shape, ...]:
    """Every row of the lexicon, in its order."""
    return _shapes()


def shape(shape_id: str) -> Shape:
    return next(s for s in _shapes() if s.id == shape_id)


def words() -> Tuple[str, ...]:
    """Every literal word the rows rely on: a line holding none is of no shape."""
    return tuple(dict.fromkeys(w for s in _shapes() for w in s.words))


def trie(words: Sequence[str]) -> str:
    """One regular expression matching any of ``words`` (literal prefixes; a word may end in a regex tail after
    a NUL: ``'size\\0\\s+(?:count|N)'``), as a trie so that each position is tried once per first character.
    Built once for a list of words, and kept in the user's cache directory for later runs (:func:`knowledge.kept`:
    building the grammar's and the lexicon's take about 0.04 s of CPU each run)."""
    words = tuple(words)
    return knowledge.kept("trie", ("\1".join(words)).encode("utf-8", "surrogatepass"), lambda: _trie(words), str)


def _trie(words: Sequence[str]) -> str:
    root: dict = {}
    for w in words:
        lit, _, tail = w.partition("\0")
        node = root
        for ch in lit:
            node = node.setdefault(ch, {})
        node.setdefault("", []).append(tail)

    def emit(node: dict) -> str:
        alts = []
        for ch in sorted(k for k in node if k):
            alts.append(re.escape(ch) + emit(node[ch]))
        ends = node.get("", [])
        if any(t == "" for t in ends):  # a whole word ends here: nothing more is needed
            return ""
        alts += [t for t in ends]
        if not alts:
            return ""
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return emit(root)


@functools.lru_cache(maxsize=None)
def _candidates() -> Tuple["re.Pattern[bytes]", ...]:
    """The rows' words as two expressions over bytes (as the NCCL log's prefilter has them,
    :mod:`nccldiag.nccl.scan`): Python's engine skips quickly to the first characters of a plain alternation, and
    words starting in upper case or a mark are rarer than lower-case ones."""
    ws = words() + fronts.ESCAPES
    rare = [w for w in ws if not w[:1].islower()]
    return tuple(rx.compile(trie(part).encode("utf-8")) for part in (rare, [w for w in ws if w not in rare]) if part)


def _candidate(raw: bytes) -> bool:
    return any(rx.search(raw) is not None for rx in _candidates())


def shape_of(text: str) -> Optional[Shape]:
    """The row ``text`` (one line) is of, or ``None``. A logging library's label at the front of the line is read
    with it: its level ``ERROR`` or ``CRITICAL`` says something went wrong (:mod:`nccldiag.fronts`)."""
    text = text[:MAX_LINE]
    for s in _shapes():
        if s.reads(text):
            return s
    return None


Skip = Callable[[str], bool]  # a line someone else judges: not the lexicon's


class Reader:
    """The lines of one source that are of a shape, and how many of each shape there are.

    Fed either the raw text a block of bytes at a time (:meth:`feed`), or the lines a reader of the text hands
    on (:meth:`take`: one line and its number, or a list of the lines after a number, as
    :class:`nccldiag.nccl.scan.Scan` yields them); then :meth:`finish`. ``skip``: lines judged elsewhere (a kernel
    line a ``kmsg.toml`` row reads)."""

    def __init__(self, source: str, host: Optional[str] = None, skip: Optional[Skip] = None) -> None:
        self.source, self.host, self.skip = source, host, skip
        self.found: Dict[str, Line] = {}
        self.carry = b""
        self.n = 0  # lines fed so far (feed)
        self.memo: Dict[bytes, Optional[Shape]] = {}

    # ---- raw text

    def feed(self, data: bytes) -> None:
        if not data:
            return
        buf = self.carry + data if self.carry else data
        last = buf.rfind(b"\n")
        if last < 0:
            self.carry = buf if len(buf) <= MAX_LINE * 4 else buf[:MAX_LINE * 4]
            return
        self.carry = buf[last + 1:]
        self._body(buf, last + 1)
        if len(self.carry) > MAX_LINE * 4:  # a line longer than any read: its start is kept, the rest waits
            self.carry = self.carry[:MAX_LINE * 4]

    def finish(self) -> List[Line]:
        if self.carry:
            self._body(self.carry + b"\n", len(self.carry) + 1)
            self.carry = b""
        return list(self.found.values())

    def _body(self, body: bytes, end: int) -> None:
        """The whole lines of ``body[:end]``: only those holding a word of :data:`WORDS` are looked at."""
        spans = set()
        for rx in _candidates():
            pos = 0
            while pos < end:
                m = rx.search(body, pos, end)
                if m is None:
                    break
                s = body.rfind(b"\n", 0, m.start()) + 1
                e = body.find(b"\n", m.start(), end)
                spans.add((s, e))
                pos = e + 1
        counted, prev = 0, 0  # newlines of body[:prev]
        for s, e in sorted(spans):
            counted += body.count(b"\n", prev, s)
            prev = s
            got = self.shape(body[s:e])
            if got is not None:
                self._add(got, self.n + counted + 1, body[s:e])
        self.n += counted + body.count(b"\n", prev, end)

    # ---- lines handed on

    def take(self, n: int, item: Union[bytes, List[bytes]]) -> None:
        """Line ``n`` (``item``, bytes without its newline), or the lines after line ``n`` (a list of them)."""
        if not isinstance(item, list):
            got = self.shape(item)
            if got is not None:
                self._add(got, n, item)
            return
        # a block: each distinct line looked at once (a log repeats its lines), its first lines kept, all counted
        hits = []
        for raw, times in collections.Counter(item).items():
            got = self.shape(raw)
            if got is None:
                continue
            i = item.index(raw)
            hits.append((i, raw, got))
            extra = times - 1
            for _ in range(min(extra, KEEP - 1)):
                i = item.index(raw, i + 1)
                hits.append((i, raw, got))
            if extra >= KEEP:
                hits.append((len(item), raw, got, extra - KEEP + 1))  # the rest: counted, not kept
        for hit in sorted(hits, key=lambda h: h[0]):
            if len(hit) == 4:
                self.found[hit[2].id].count += hit[3]
            else:
                self._add(hit[2], n + 1 + hit[0], hit[1])

    # ---- both

    def shape(self, raw: bytes) -> Optional[Shape]:
        """The shape of one line (bytes), remembered."""
        raw = raw[:MAX_LINE * 4]
        memo = self.memo
        got = memo.get(raw, memo)
        if got is not memo:
            return got  # type: ignore[return-value]
        got = None
        if _candidate(raw):
            text = fronts.unquoted(fronts.plain(raw.decode("utf-8", "replace")))[:MAX_LINE]
            got = shape_of(text)
            if got is not None and self.skip is not None and self.skip(text):
                got = None
        if len(memo) >= _MEMO:
            memo.clear()
        memo[raw] = got
        return got

    def _add(self, got: Shape, n: int, raw: bytes) -> None:
        kept = self.found.get(got.id)
        if kept is None:
            self.found[got.id] = Line(got.id, got.severity, self.source, n, _text(raw), self.host)
            return
        kept.count += 1
        if len(kept.more) < KEEP - 1:
            kept.more.append((n, _text(raw)))


def _text(raw: bytes) -> str:
    return fronts.unquoted(fronts.plain(raw[:MAX_LINE * 4].decode("utf-8", "replace")))[:MAX_LINE].strip()


def lines_in(text: str, source: str, host: Optional[str] = None, skip: Optional[Skip] = None) -> List[Line]:
    """The lines of ``text`` that are of a shape (:class:`Reader`), by shape, in the order of their first line."""
    r = Reader(source, host, skip)
    r.feed(text.encode("utf-8", "replace"))
    return ordered(r.finish())


def ordered(found: Sequence[Line]) -> List[Line]:
    """``found`` worst first (fail before warn), then in the order they were read."""
    return sorted(found, key=lambda x: (SEVERITIES.index(x.severity), x.source, x.lineno))
