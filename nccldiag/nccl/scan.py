"""Reading NCCL logs at the pace of the disk: a prefilter in front of the line parser, and files read in parallel.

The parser (:mod:`nccldiag.nccl.parser`) reads every line it is given in Python. Most lines of a job's output say
nothing it uses (a training loop's progress, a framework's own INFO lines), so :class:`Scan` reads each file in
large binary blocks and hands the parser only

* the candidate lines: those holding a word or mark of some line the parser reads (:func:`candidates`, built from
  :data:`nccldiag.nccl.grammar.WORDS`, the words the grammar's guards and expressions rely on: NCCL's prefixes and
  messages, the errors, kernel lines, PyTorch and nccl-tests lines, benchmark tables, RAS reports, and what
  :func:`nccldiag.nccl.grammar.clean` removes, which could hide a word; ``tests/unit/test_nccllog_words.py`` holds
  the two together);
* the line after a candidate where it may change what the candidate said: read line by line (not in bulk), the
  line after each candidate (a wrapped line continues the line before it; a record the parser holds back is
  settled by then), and the line after that where the first holds a ``)`` (it may have continued the candidate,
  which is then settled by the next); in bulk (:func:`feed`), the parser is asked once it has read the candidate
  and the candidates right after it, and the next line goes over only where the reader still holds a record
  the line may continue (an NCCL line that leaves a parenthesis open) or the parser waits for it (below);
* every line while the parser needs every line of the file (a line waits for the next one, a benchmark output or
  RAS report is being kept: :meth:`nccldiag.nccl.parser.Parser.needs_every_line`).

A candidate line is one that, alone, holds a word (:func:`candidate`), in the case the grammar writes it. The candidates
of a block are found in one pass over its bytes by Hyperscan (:class:`HyperscanLines`; the ``hyperscan`` package, a
dependency on Linux x86-64 and the ``fast`` extra elsewhere), at about 2 GB/s, or, where it does not import, by Python's
``re`` (:func:`search_lines`, about 80 MB/s): the same lines either way (``tests/unit/test_nccllog_finder.py``). Other
lines are counted, never decoded. A block where most lines of its first 256 KiB name NCCL is handed over whole: there is
little to skip. Lines are cut and decoded exactly as :func:`nccldiag.nccl.parser.read_lines` does, and keep their
numbers, so the facts are those of reading every line (``tests/unit/test_nccllog_scan.py`` compares the two on every
real log and case). :func:`feed` hands them over undecoded (``bulk``): the parser decodes only the lines it reads, and
counts a line it read before in the file when reading it again could only add to counts
(:func:`nccldiag.nccl.replay.feed`).

:func:`parse_paths` reads several files at once, one worker process per core, each file by a parser of its own;
the parsers' states are merged in the order of the files (:meth:`nccldiag.nccl.parser.Parser.merge`) into the
facts one parser reading the files one after the other gives.
"""
from __future__ import annotations

import bisect
import itertools
import os
import signal
import re
from typing import IO, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from nccldiag import hscache
from nccldiag.knowledge import lexicon
from nccldiag.knowledge.lexicon import trie as _trie
from nccldiag.nccl.facts import KEEP, MAX_LINE, NcclLogFacts
from nccldiag.nccl.grammar import WORDS
from nccldiag.nccl import replay
from nccldiag.nccl.parser import Parser
from nccldiag.nccl.unwrap import Unwrapping

BLOCK = 4 * 1024 * 1024  # bytes read at a time
CONTEXT = 2  # lines handed over after each candidate line
SAMPLE = 256 * 1024  # the start of a block that says whether most of its lines name NCCL


# Two expressions, not one: Python's engine skips quickly to the first characters an expression can start with
# only when it is a plain alternation, and words starting in upper case or a mark are rarer than lower-case ones.
_FIRST_RARE = [w for w in WORDS if not w[:1].islower()]
_CANDIDATES: List["re.Pattern[bytes]"] = []  # compiled when first used: Hyperscan, where it imports, needs them
# only for the lines where a word with a tail ends


def candidates() -> List["re.Pattern[bytes]"]:
    """The two expressions of the words over bytes (compiled once)."""
    if not _CANDIDATES:
        _CANDIDATES.extend(re.compile(_trie(ws).encode("utf-8"))
                           for ws in (_FIRST_RARE, [w for w in WORDS if w not in _FIRST_RARE]))
    return _CANDIDATES


def _long_line(body: bytes, end: int, cut: int) -> bool:
    """Whether ``body[:end]`` may hold a line longer than ``cut``: such a line covers a whole stretch of
    ``cut // 2`` bytes (from a multiple of it) without a newline."""
    half = max(cut // 2, 1)
    find = body.find
    return any(find(b"\n", k, min(k + half, end)) < 0 for k in range(0, end, half))


def candidate(line: bytes) -> bool:
    """Whether the parser may read something from ``line`` (the prefilter's test; a superset)."""
    return any(rx.search(line) for rx in candidates())


def _line(body: bytes, at: int) -> Tuple[int, int]:
    """The start and the end (its newline) of the line of ``body`` holding the byte at ``at``."""
    return body.rfind(b"\n", 0, at) + 1, body.index(b"\n", at)


def search_lines(body: bytes, end: int) -> List[int]:
    """The starts of the candidate lines of ``body[:end]`` (whole lines, each ending in a newline), in order, found
    with Python's ``re``: each expression of :func:`candidates` searched for over the whole buffer, a match that runs
    on past its line's end kept only where the line alone holds a word (:func:`candidate`)."""
    found = set()
    for rx in candidates():
        search = rx.search
        pos = 0
        while True:
            m = search(body, pos, end)
            if m is None:
                break
            s, e = _line(body, m.start())
            if m.end() <= e or candidate(body[s:e]):
                found.add(s)
                pos = e + 1
            else:
                pos = m.start() + 1
    return sorted(found)


def _hs_expression(word: str) -> bytes:
    """A word of :data:`WORDS` as a Hyperscan expression: its literal, every byte that is not a letter or a digit
    written as ``\\xHH``, then its regular-expression tail as it stands."""
    lit, _, tail = word.partition("\0")
    return b"".join(bytes((b,)) if bytes((b,)).isalnum() else b"\\x%02x" % b for b in lit.encode("utf-8")) + \
        tail.encode("utf-8")


def _outermost(words: Sequence[str]) -> List[str]:
    """``words`` (distinct, none holding a newline) but those that hold another of them: a line holding such a word
    holds the other, and is found by it. The prefilter's words hold one another often (``NCCL INFO `` holds
    ``NCCL ``): each match Hyperscan finds is handed to Python, and about a third of them were of such words."""
    text = "\n".join(words)
    starts = list(itertools.accumulate((len(w) + 1 for w in words[:-1]), initial=0))
    held = set()
    find = text.find
    for o in words:
        at = find(o)
        while at >= 0:
            k = bisect.bisect_right(starts, at) - 1
            if words[k] != o:
                held.add(k)
            at = find(o, at + 1)
    return [w for k, w in enumerate(words) if k not in held]


class HyperscanLines:
    """:func:`search_lines` with Hyperscan: one pass over the buffer finds where every match of every word ends.
    A word with no tail and no newline lies on the line where it ends; a line where only a word with a tail ends
    is kept where the line alone holds a word (:func:`candidate`), as with ``re``."""

    def __init__(self, hyperscan: Any, words: Sequence[str], literals: Sequence[bytes] = ()) -> None:
        plain = _outermost([w for w in words if "\0" not in w and "\n" not in w])
        ordered = plain + [w for w in words if "\0" in w or "\n" in w]
        self.plain = len(plain)  # ids below it are plain words
        self.words = len(ordered)  # ids from it on are literals
        self.lengths = [len(w) for w in literals]
        expressions = [_hs_expression(w) for w in ordered] + [re.escape(w) for w in literals]
        self.db = hscache.database(hyperscan, expressions, range(len(expressions)), [0] * len(expressions))

    def __call__(self, body: bytes, end: int, literals: Optional[List[int]] = None) -> List[int]:
        """The candidate lines' starts; with ``literals``, the offsets where each of the literal words the finder
        was made with starts are added to it, in order (found in the same pass)."""
        ends: List[int] = []
        others: List[int] = []
        plain, words, lengths = self.plain, self.words, self.lengths
        add, add_other = ends.append, others.append
        found_literals: List[int] = []
        add_literal = found_literals.append

        def on_match(i: int, _start: int, to: int, _flags: int, _context: Any) -> None:
            if i < plain:
                add(to)
            elif i < words:
                add_other(to)
            else:
                add_literal(to - lengths[i - words])

        self.db.scan(body if end == len(body) else body[:end], match_event_handler=on_match)
        if literals is not None:
            found_literals.sort()
            literals += found_literals
        found = set()
        rfind, find = body.rfind, body.find
        last = -1  # the end of the last line kept
        ends.sort()
        for to in ends:
            if to > last:
                s = rfind(b"\n", 0, to - 1) + 1
                last = find(b"\n", to - 1)
                found.add(s)
        for to in others:
            s, e = _line(body, to - 1)
            if s not in found and self.holds(body[s:e]):
                found.add(s)
        return sorted(found)

    def holds(self, line: bytes) -> bool:
        """:func:`candidate` of ``line`` with the same database: whether a word matches within the line alone
        (Python's ``re`` would compile the two expressions of the words for it, a tenth of a second)."""
        held: List[int] = []
        words = self.words

        def on_match(i: int, _start: int, _to: int, _flags: int, _context: Any) -> Optional[bool]:
            if i < words:
                held.append(i)
                return True  # stops the scan
            return None

        try:
            self.db.scan(line, match_event_handler=on_match)
        except Exception:  # the scan stopped by the handler: Hyperscan's binding raises for it
            if not held:
                raise
        return bool(held)


_FINDER: List[Callable[..., List[int]]] = []
_WITH_LITERALS: Dict[Tuple[bytes, ...], "HyperscanLines"] = {}


def finder(literals: Sequence[bytes] = ()) -> Callable[..., List[int]]:
    """How candidate lines are found: :class:`HyperscanLines` where the ``hyperscan`` module imports and compiles
    :data:`WORDS`, else :func:`search_lines` (the same lines, at Python's ``re``'s pace). ``NCCLDIAG_PREFILTER=re``
    chooses the latter. With ``literals`` (words another reader of the text searches for), a
    :class:`HyperscanLines` that also finds where they start, in the same pass, where Hyperscan is chosen."""
    if not _FINDER:
        chosen: Callable[..., List[int]] = search_lines
        if os.environ.get("NCCLDIAG_PREFILTER", "") != "re":
            try:
                import hyperscan

                chosen = HyperscanLines(hyperscan, WORDS)
            except Exception:  # not installed, no wheel for this platform, or an expression it cannot compile
                chosen = search_lines
        _FINDER.append(chosen)
    if not literals or not isinstance(_FINDER[0], HyperscanLines):
        return _FINDER[0]
    key = tuple(literals)
    if key not in _WITH_LITERALS:
        try:
            import hyperscan

            _WITH_LITERALS[key] = HyperscanLines(hyperscan, WORDS, key)
        except Exception:  # a word it cannot compile: the words are searched by their reader
            return _FINDER[0]
    return _WITH_LITERALS[key]


class Scan:
    """``(line number, line)`` of the lines of ``stream`` the parser needs (see the module's docstring).

    ``needs_all()`` says whether the parser needs every next line now; ``total`` is the number of lines once the
    iteration ends. ``block`` and ``max_line`` are for tests. With ``bulk``, the lines are left undecoded, a
    block handed over whole comes as one ``(n, [lines])``: the lines after line ``n``
    (:func:`nccldiag.nccl.replay.feed`), and a candidate line with the lines of context after it as one
    ``(n, (lines))``, a tuple: the lines after line ``n``, read one by one.
    """

    def __init__(self, stream: IO[bytes], needs_all: Callable[[], bool], block: int = BLOCK,
                 max_line: int = MAX_LINE, bulk: bool = False, reader: Any = None) -> None:
        self.stream, self.needs_all, self.block, self.max_line = stream, needs_all, block, max_line
        self.bulk = bulk
        # another reader of the text (a paste reader: words(), given(), feed()), fed each block once it is read
        # here, with where its words are and where some lines start, found in the same pass as the candidates
        self.reader = reader
        self.literals = reader.words() if reader is not None else None
        self.base: Optional[int] = None  # the offset in the stream of the body being read, where it is the stream's
        # in bulk: whether the lines up to the next candidate may go over as one replay.Plain item (they are wanted
        # only to be kept: Replay.keeps_only); None: never
        self.plain: Optional[Callable[[], bool]] = None
        self.total = 0
        self.skipped = 0  # lines counted without being handed over
        self.ctx = 0  # context lines still to hand over after the last candidate (across blocks)
        self.first_wordless = False  # in bulk: the first line of the item last yielded is whole and no candidate

    def __iter__(self) -> Iterator[Tuple[int, str]]:
        carry = b""
        skipping = False  # inside the rest of an overlong line
        cut = self.max_line
        reader = self.reader
        offset = 0  # the stream's bytes read so far
        while True:
            data = self.stream.read(self.block)
            if not data:
                break
            at = offset  # the offset of data in the stream
            offset += len(data)
            raw = data
            if skipping:
                i = data.find(b"\n")
                if i < 0:
                    if reader is not None:
                        reader.feed(raw)
                    continue
                data, skipping = data[i + 1:], False
                at += i + 1
            buf = carry + data if carry else data
            last = buf.rfind(b"\n")
            if last < 0:
                carry = buf
            else:
                self.base = at - len(carry)
                carry = buf[last + 1:]
                yield from self._lines(buf, last + 1)
                self.base = None
            if len(carry) >= cut:  # an overlong line: its first max_line bytes, the rest unread (read_lines)
                yield from self._lines(carry[:cut] + b"\n", cut + 1)
                carry, skipping = b"", True
            if reader is not None:
                reader.feed(raw)
        if carry:
            yield from self._lines(carry + b"\n", len(carry) + 1)

    def _find(self, body: bytes, end: int) -> Tuple[List[int], Optional[List[int]], Optional[List[int]]]:
        """The candidate lines' starts in ``body[:end]``; where the other reader's words were found in the same
        pass and handed to it, also two lists it was handed to fill: where lines start, and their numbers."""
        if self.literals and self.base is not None:
            find = finder(self.literals)
            if isinstance(find, HyperscanLines) and find.lengths:
                base, hits = self.base, []  # type: ignore[var-annotated]
                starts = find(body, end, hits)
                starts_at: List[int] = []
                numbers: List[int] = []
                self.reader.given(base, base + end, [base + h for h in hits], starts_at, numbers)
                return starts, starts_at, numbers
            return find(body, end), None, None
        return finder()(body, end), None, None

    def _lines(self, body: bytes, end: int) -> Iterator[Tuple[int, Any]]:
        """The lines of ``body[:end]`` (whole lines, each ending in a newline)."""
        n = self.total
        cut = self.max_line
        pos = 0
        bulk = self.bulk
        sample = min(end, SAMPLE)
        if body.count(b"NCCL", 0, sample) * 2 >= body.count(b"\n", 0, sample):
            # most lines name NCCL: nothing worth skipping, every line goes to the parser
            if bulk:
                lines = (body if end == len(body) else body[:end]).split(b"\n")
                lines.pop()
                if end > cut and _long_line(body, end, cut) and max(map(len, lines)) > cut:
                    lines = [line[:cut] for line in lines]
                self.total = n + len(lines)
                self.first_wordless = False
                yield n, lines
                return
            for line in body[:end].split(b"\n")[:-1]:
                n += 1
                self.total = n
                yield n, line[:cut].decode("utf-8", errors="replace").rstrip("\r\n")
            self.ctx = CONTEXT  # the last of them may have been a candidate
            return
        starts, starts_at, numbers = self._find(body, end)  # the candidate lines' starts, in order
        if starts_at is not None:  # where lines start and their numbers, for the other reader
            base, mark, number = self.base or 0, starts_at.append, numbers.append
        j, count = 0, len(starts)
        index = body.index
        needs_all = self.needs_all
        plain = self.plain if bulk else None
        ctx = self.ctx  # kept in self.ctx at each yield and at the end
        while pos < end:
            while j < count and starts[j] < pos:
                j += 1
            if not ctx and not needs_all():
                if j == count:
                    k = body.count(b"\n", pos, end)
                    n += k
                    self.skipped += k
                    self.total = n
                    return
                s = starts[j]
                if s > pos:
                    k = body.count(b"\n", pos, s)
                    n += k
                    self.skipped += k
                    pos = s
            elif plain is not None and (j == count or starts[j] != pos) and plain():
                # the lines up to the next candidate, none holding a word, are wanted only to be kept: one item
                stop = starts[j] if j < count else end
                lines = body[pos:stop].split(b"\n")
                lines.pop()
                if stop - pos <= cut or max(map(len, lines)) <= cut:
                    if starts_at is not None:
                        mark(base + pos)
                        number(n + 1)
                    n0 = n
                    n += len(lines)
                    pos = stop
                    self.total, self.first_wordless = n, True
                    yield n0, replay.Plain(lines)
                    continue
            # line n+1 goes over; in bulk, with it every next line that is a candidate too, and the parser is
            # asked whether it needs the line after them once it has read them
            if starts_at is not None:
                mark(base + pos)
                number(n + 1)
            n0, got = n, []
            # the first line handed over holds no word where it is whole and no candidate: none of the failure
            # lexicon's either (its words are among WORDS), so that lexicon's reader is spared it
            self.first_wordless = bulk and index(b"\n", pos) - pos <= cut and (j == count or starts[j] != pos)
            while True:
                e = index(b"\n", pos)
                n += 1
                line = body[pos:e] if e - pos <= cut else body[pos:pos + cut]
                if bulk:
                    got.append(line)
                    pos = e + 1
                    while j < count and starts[j] < pos:
                        j += 1
                    if pos >= end or j == count or starts[j] != pos:
                        break
                    continue
                if j < count and starts[j] == pos:
                    ctx = CONTEXT
                elif ctx > 1 and b")" not in line:
                    ctx = 0  # it continues no record: the next one is the parser's to ask for
                elif ctx:
                    ctx -= 1
                pos = e + 1
                self.total, self.ctx = n, ctx
                yield n, line.decode("utf-8", errors="replace").rstrip("\r\n")
                break
            if bulk:
                self.total, self.ctx = n, ctx
                yield (n, line) if len(got) == 1 else (n0, tuple(got))
        self.total, self.ctx = n, ctx


def feed(parser: Parser, name: str, stream: IO[bytes], block: int = BLOCK,
         max_line: int = MAX_LINE, lines: Optional[lexicon.Reader] = None, reader: Any = None) -> Scan:
    """Feed one log to ``parser`` through the prefilter, in bulk; and every line handed over to ``lines``, where
    given (the failure lexicon's words are among :data:`WORDS`: each line of a shape is among them); and the
    whole text to ``reader``, where given (a paste reader: :class:`Scan`), each block once read here."""
    found = finder()
    rp = replay.Replay(parser, found if isinstance(found, HyperscanLines) else None)
    scan = Scan(stream, lambda: parser.needs_every_line(name) or rp.holds(), block, max_line, bulk=True,
                reader=reader)
    scan.plain = rp.keeps_only
    rp.feed(iter(scan) if lines is None else _tapped(scan, lines), name, lambda: scan.total)
    return scan


def _tapped(scan: Scan, lines: lexicon.Reader) -> Iterator[Tuple[int, Any]]:
    take = lines.take
    shapes = lines.memo  # a line seen before that is of no shape (None) is not handed to take again
    for n, item in scan:
        if type(item) is replay.Plain:  # whole lines without a word: none of a lexicon shape
            pass
        elif type(item) is tuple:
            for i, raw in enumerate(item, n + 1):
                if (i > n + 1 or not scan.first_wordless) and shapes.get(raw, take) is not None:
                    take(i, raw)
        elif type(item) is bytes:
            if not scan.first_wordless and shapes.get(item, take) is not None:
                take(n, item)
        else:
            take(n, item)
        yield n, item


def parse_streams(streams, keep: int = KEEP, block: int = BLOCK, max_line: int = MAX_LINE,
                  failure_lines: Optional[List[lexicon.Line]] = None) -> "NcclLogFacts":
    """:func:`nccldiag.nccl.parser.parse_streams` through the prefilter: the same facts. ``failure_lines``, where
    given, gets the lines of the failure lexicon (:mod:`nccldiag.knowledge.lexicon`) of each stream, in turn. A
    stream given as ``(name, stream, reader)`` is fed to ``reader`` too (:func:`feed`)."""
    p = Parser(keep)
    for name, stream, *other in streams:
        reader = lexicon.Reader(name) if failure_lines is not None else None
        feed(p, name, stream, block, max_line, reader, other[0] if other else None)
        if reader is not None:
            failure_lines.extend(reader.finish())
    return p.finish()


class ReadError(Exception):
    """A file that could not be read, with its path (``nccldiag log`` reports it as a usage error)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: cannot read NCCL log: {reason}")
        self.path, self.reason = path, reason

    def __reduce__(self):  # raised in a worker process, re-raised in the parent
        return (ReadError, (self.path, self.reason))


def _parse_one(task: Tuple[str, int, Dict[str, int], Optional[Callable[[str], Any]], bool]
               ) -> Tuple[Parser, Any, List[lexicon.Line]]:
    """A worker's job: one file, by a parser of its own, through the prefilter (run in a worker process), and
    ``each(path)`` where given; with ``lines``, the file's lines of the failure lexicon. The parser keeps only
    the records the merging parser still had room for when the file was handed out."""
    path, keep, rooms, each, lines = task
    p = Parser(keep)
    p.limits = dict(rooms)
    reader = lexicon.Reader(path) if lines else None
    try:
        with open(path, "rb") as fh:
            feed(p, path, Unwrapping(fh), lines=reader)
    except OSError as exc:
        raise ReadError(path, exc.strerror or str(exc)) from None
    return p, (each(path) if each is not None else None), (reader.finish() if reader is not None else [])


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def parse_paths(paths: Sequence[str], keep: int = KEEP, workers: Optional[int] = None) -> "NcclLogFacts":
    """:func:`read_paths` without a job of its own for each file."""
    return read_paths(paths, keep, workers)[0]


def read_paths(paths: Sequence[str], keep: int = KEEP, workers: Optional[int] = None,
               each: Optional[Callable[[str], Any]] = None,
               failure_lines: Optional[List[lexicon.Line]] = None) -> Tuple["NcclLogFacts", List[Any]]:
    """The facts of the files at ``paths`` (one job), read in parallel: one worker process per core (``workers``),
    each file by a parser of its own, merged in the order of ``paths``. The same facts as reading the files one
    after the other; where a merge could not give them (:meth:`nccldiag.nccl.parser.Parser.mergeable`: more
    processes or transport categories than the parser keeps, a path given twice), the files are read again in
    turn. With ``each`` (a module's function), also ``each(path)`` of every path, in order, run by the worker
    that reads the file (it must not raise). ``failure_lines``, where given, gets the lines of the failure lexicon
    of every file, in the order of ``paths`` (each read by the worker that parses the file). Raises
    :class:`ReadError` for a file that cannot be read."""
    n = min(workers or default_workers(), len(paths))
    if n <= 1 or len(set(paths)) != len(paths):
        return _in_turn(paths, keep, each, failure_lines)
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from itertools import islice
    from concurrent.futures.process import BrokenProcessPool

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # no fork on this platform: one process
        return _in_turn(paths, keep, each, failure_lines)
    finder()  # compiled once, before the workers fork
    main = Parser(keep)
    extras: List[Any] = []
    found: List[lexicon.Line] = []
    lines = failure_lines is not None
    todo = iter(paths)
    with ProcessPoolExecutor(n, mp_context=ctx, initializer=_quiet) as pool:
        # at most two files per worker in flight: the parts wait in memory only until merged, in order
        running = deque(pool.submit(_parse_one, (p, keep, main.rooms(), each, lines)) for p in islice(todo, 2 * n))
        try:
            while running:
                part, extra, got = running.popleft().result()
                nxt = next(todo, None)
                if nxt is not None:
                    running.append(pool.submit(_parse_one, (nxt, keep, main.rooms(), each, lines)))
                if not main.mergeable(part):
                    raise _InTurn()
                main.merge(part)
                extras.append(extra)
                found += got
        except (_InTurn, BrokenProcessPool):  # a bound the merge cannot follow, or a worker that died
            pool.shutdown(wait=True, cancel_futures=True)
            return _in_turn(paths, keep, each, failure_lines)
        except BaseException:  # Ctrl-C, SIGTERM, a file that cannot be read: the workers end with it, at once
            _end(pool)
            raise
    if failure_lines is not None:
        failure_lines.extend(found)
    return main.finish(), (extras if each is not None else [])


def _quiet() -> None:
    """A worker's signals: the terminal's Ctrl-C (sent to the whole process group) is the parent's to act on,
    and SIGTERM or SIGHUP end it with no word (the parent's handlers, inherited through fork, would raise in
    it and print a traceback); the parent ends its workers itself (:func:`_end`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _end(pool) -> None:
    """The pool's workers killed (a worker may be blocked reading a pipe or a hung file system), then the pool
    shut down without waiting on them."""
    kill = getattr(pool, "kill_workers", None)  # Python 3.14
    if kill is not None:
        kill()
    else:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            try:
                proc.kill()
            except (OSError, AttributeError):
                pass
    pool.shutdown(wait=True, cancel_futures=True)


class _InTurn(Exception):
    """The files must be read one after the other by one parser."""


def _in_turn(paths: Sequence[str], keep: int, each: Optional[Callable[[str], Any]] = None,
             failure_lines: Optional[List[lexicon.Line]] = None) -> Tuple["NcclLogFacts", List[Any]]:
    p = Parser(keep)
    for path in paths:
        reader = lexicon.Reader(path) if failure_lines is not None else None
        try:
            with open(path, "rb") as fh:
                feed(p, path, Unwrapping(fh), lines=reader)
        except OSError as exc:
            raise ReadError(path, exc.strerror or str(exc)) from None
        if reader is not None:
            failure_lines.extend(reader.finish())
    return p.finish(), ([each(path) for path in paths] if each is not None else [])
