"""Lines read before, counted again: one log fed to a parser (:mod:`nccldiag.nccl.parser`) in bulk.

NCCL repeats itself: the same connection, ring, tree and setting lines for every communicator, the same call
chain from every rank. :func:`feed` hands a parser one log as raw lines (:class:`nccldiag.nccl.scan.Scan` in bulk
mode) and gives the facts of :meth:`Parser.feed_numbered` on the decoded lines. Each distinct line of the file is
read once by :meth:`Parser.record`, and what reading it again would do is noted (:class:`_Seen`); where it comes
again and reading it could only count it, as once the lists it adds to are full, it is counted instead. Runs of
such lines that come again in the same order are counted as a whole (:class:`_Run`).

The replay sits outside the parser and drives it through a narrow interface: it reads a line with
:meth:`Parser.record`, tests the parser's thread and file state (``open_warn``, ``open_orphan``,
``failed_orphans``, ``want``) and its queries, and changes that state only through the parser's ``again_*``
methods, which do what the handlers do to it once their lists are full. ``tests/unit/test_nccllog_scan.py``
compares the facts of both ways on every real log and case, repeated with bounds small enough for every list to
fill, and on logs made at random.
"""
from __future__ import annotations

import itertools
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

from nccldiag import rx
from nccldiag.nccl.facts import MAX_THREADS, CategoryStats, ChainStep, PairTransport, VersionLine, Warn
from nccldiag.nccl.grammar import (
    _BENCH_START, _CHAIN, _FRAGMENT, _QUOTED_WARN, _RAS_START, _UNPREFIXED, _VERSION, Reader, Rec, app_line,
    app_noop, chain_step, error_kind, fact_row, fails, holds_word, joins_next, read_line, watchdog_key, wrapped)
from nccldiag.nccl.parser import DroppedWarn, Parser, thread

Key = Tuple[str, str, int, int]  # a thread: file, host, pid, tid
ProcKey = Optional[Tuple[str, int]]

# kinds of _Seen (0: read in full every time)
_SEEN_PLAIN, _SEEN_INFO, _SEEN_CHAIN, _SEEN_WARN, _SEEN_BARE, _SEEN_BLANK, _SEEN_COUNT, _SEEN_WRAP = range(1, 9)
_SEEN_BYTES = 8 * 1024 * 1024  # bytes of distinct lines remembered per file

RUN_MIN = 64  # lines of a run at least, where nothing ends it before
RUN_SHORT = 8  # lines of a run at least, where a line read in full or a call chain of its own ends it
RUN_MAX = 4096  # lines of a run at most
RUN_KEPT = 4  # runs kept that start on one line, at most
RUN_TRIES = 64  # runs recorded from one line that were not kept, at most
RUN_SHARE = 8  # lines recorded as runs: at most one in this many of the lines fed (and RUN_MAX at first)


class _Seen:
    """A line read before, in the file being fed, and what reading it again does while its record lists are full:
    ``hits`` more lines counted in ``count`` (a fact list), ``stats`` and ``pair`` (a channel line's tallies); for
    a WARN or a call-chain line, the thread state it opens or extends.

    ``kind`` 0 (:data:`_NEVER`): a line read in full every time. ``kind`` :data:`_SEEN_WRAP`: an NCCL line that
    leaves a parenthesis open, as a line wrapped by whoever copied the log does; ``pairs`` holds, for each next
    line seen to complete it, what reading the two lines again does (the joined record's :class:`_Seen`)."""

    __slots__ = ("kind", "key", "proc", "count", "stats", "pair", "hits", "rank0", "version", "step", "warn",
                 "nccl", "bench", "ras", "wrap", "msg", "size", "join", "watchdog", "pairs", "runs", "tries")

    def __init__(self, kind: int, key: Key = ("", "", 0, 0), proc: ProcKey = None, count: Optional[str] = None,
                 stats: Optional[CategoryStats] = None, pair: Optional[PairTransport] = None) -> None:
        self.kind, self.key, self.proc, self.count, self.stats, self.pair = kind, key, proc, count, stats, pair
        self.hits = 0
        self.rank0 = False  # the line gives rank 0 of a world: a version line may still learn it
        self.version: Optional[VersionLine] = None  # a version line: what the file's last version line becomes
        self.step: Optional[ChainStep] = None  # a call-chain line: its step, for WARNs past the bound
        self.warn = False  # a WARN line: whether its message is a failure whatever its call chain
        self.nccl = 1  # NCCL lines it counts (0: a line without an NCCL prefix)
        self.bench = self.ras = False  # a line without a prefix: it may start a benchmark output, a RAS report
        self.wrap = False  # a line without a prefix: it may continue the line before
        self.msg: Optional[str] = None  # a line without a prefix: its text, as a benchmark output keeps it
        self.join = False  # an error line past the bound that takes the next line (to a line kept nowhere)
        self.watchdog: Optional[Tuple] = None  # a watchdog message: what it is told apart by (seen before)
        self.size = 0
        self.pairs: Optional[Dict[bytes, Optional["_Seen"]]] = None  # _SEEN_WRAP: next line -> the pair's _Seen
        self.runs: Optional[List["_Run"]] = None  # the runs of lines known to start with this line (_Run)
        self.tries = 0  # runs recorded from this line that were not only counted


_NEVER = _Seen(0)  # a line read in full every time
_ONCE = _Seen(0)  # a line read once so far
_BLANK = _Seen(_SEEN_BLANK)  # a line with nothing to read: blank, or a launcher's tag alone
_BLANK.nccl = 0
_NEVER.tries = _ONCE.tries = _BLANK.tries = 1 << 30  # shared by every file: no run starts on them


class _Run:
    """Lines of one block that were only counted, read from a point where no thread had anything open (no WARN
    or call chain, no line waiting for the next, no benchmark output or RAS report being kept) up to the next
    such point. From such a point, the same lines again do the same: ``times`` more counts of each entry (added
    when the file ends), ``df`` more failed WARNs past the bound, the result names of their chains offered again,
    and the process of the last line."""

    __slots__ = ("rest", "size", "counts", "df", "names", "proc", "times", "keys", "bare", "kept", "misses", "open",
                 "pre", "closed", "grown", "seg", "r0", "wrap", "free")

    def __init__(self, rest: List[bytes], entries: List[_Seen], df: int, names: List[str],
                 bare: List[Tuple[int, _Seen]]) -> None:
        self.rest, self.size = rest, len(rest) + 1  # the lines after the first, and all of them
        self.counts: Dict[_Seen, int] = {}
        for e in entries:
            self.counts[e] = self.counts.get(e, 0) + 1
        self.df, self.names, self.times, self.bare, self.misses = df, names, 0, bare, 0
        self.kept = [(off, e.msg or "", e.size) for off, e in bare]  # as a benchmark output or RAS report keeps them
        self.keys = frozenset(e.key for e in entries)  # its threads
        self.free = self.keys  # those that had nothing open before it: none may have a WARN open again
        self.open: List[Tuple[Key, bool, Tuple[ChainStep, ...]]] = []  # WARNs left open
        self.pre: Dict[Key, Tuple[bool, Tuple[ChainStep, ...]]] = {}  # WARNs open before
        self.closed: List[Key] = []  # of those, the ones it closed
        self.grown: List[Tuple[Key, Tuple[ChainStep, ...]]] = []  # the others' chains after
        self.seg: Optional[VersionLine] = None  # the version line it leaves as the file's last (None: no change)
        self.r0: Tuple[ProcKey, ...] = ()  # the processes of its rank-0 lines (Parser.rank0_read)
        self.wrap = False  # it counts a line that may continue the one before: the reader held none before it
        self.proc = next((e.proc for e in reversed(entries)
                          if e.proc is not None and e.kind != _SEEN_BARE and e.kind != _SEEN_BLANK), None)


class _Recording:
    """A run being recorded from line ``start`` (whose entry is ``first``): the entries of the lines it counted so
    far, and what it needs to be counted again (see :class:`_Run`)."""

    __slots__ = ("start", "first", "df0", "entries", "bare", "wrap", "seg", "r0", "opened", "pre", "names")

    def begin(self, start: int, first: _Seen, df0: int) -> None:
        self.start, self.first, self.df0 = start, first, df0  # df0: the parser's dropped failures before it
        self.entries: List[_Seen] = []
        self.bare: List[Tuple[int, _Seen]] = []  # its lines without a prefix: (line after its first, entry)
        self.wrap = False  # it counted a line that may continue the line before
        self.seg: Optional[VersionLine] = None  # the version line it left as the file's last
        self.r0: Set[ProcKey] = set()  # the processes of the rank-0 lines it counted
        self.opened: Set[Key] = set()  # the threads it opened a WARN on
        self.pre: Dict[Key, Tuple[DroppedWarn, bool, Tuple[ChainStep, ...]]] = {}  # WARNs open before it, as then
        self.names: List[str] = []  # the result names of the WARNs past the bound it closed (Parser.dropped_names)


def _before(key: Key, ow: Dict, pre: Dict) -> bool:
    """For a run being recorded: whether the WARN open on ``key`` before the run is one past the bound, as it was
    (``pre``, noted the first time the run reads it); ``False`` for any other."""
    if key in pre:
        return True
    w = ow[key]
    if type(w) is not DroppedWarn:
        return False
    pre[key] = (w, w.base, tuple(w.chain))
    return True


def _as_before(run: _Run, ow: Dict) -> bool:
    """Whether the WARNs open before ``run`` on the threads it found one open on are those it found."""
    for key, (base, chain) in run.pre.items():
        w = ow.get(key)
        if type(w) is not DroppedWarn or w.base != base or tuple(w.chain) != chain:
            return False
    return True


_PLAIN_BYTES = 4 * 1024 * 1024  # bytes of distinct plain lines whose text is remembered per file (Replay.plain)


_BATCH_MIN = 8  # a Plain item of at least this many lines has its texts tested for a word at once
_NOT_PLAIN_ASCII = rx.compile(r"[^\t\n\x20-\x7e]")  # characters Python's re and Hyperscan may read apart (\s, \d)


def _none_holds_a_word(texts: List[str], find: Optional[Callable[[bytes, int], List[int]]]) -> bool:
    """Whether no text of ``texts`` holds a word (:func:`nccldiag.nccl.grammar.holds_word` false for each), told by
    one pass of the prefilter's Hyperscan database over them all, one text a line: True only where that answers as
    :func:`holds_word` does, texts of printable ASCII and tabs, where Python's ``\\s`` and ``\\d`` and Hyperscan's
    read the same characters and no text holds a newline; False where a text holds a word or it cannot tell.
    :func:`holds_word` searches a line's text with Python's ``re`` at about 30 MB/s: a benchmark output being kept
    (:class:`Plain` items, each line distinct) had each of its 53,000 lines of progress searched so. ``find``: the
    prefilter's Hyperscan search (:class:`nccldiag.nccl.scan.HyperscanLines`, given by the scan that feeds the
    replay), or None where the prefilter is Python's ``re`` (then it cannot tell)."""
    if find is None:
        return False
    text = "\n".join(texts)
    if not text.isascii() or text.count("\n") != len(texts) - 1 or _NOT_PLAIN_ASCII.search(text):
        return False
    data = text.encode("ascii") + b"\n"
    return not find(data, len(data))


class Plain(list):
    """Lines handed over as one item where each is whole and holds no word of the grammar (no candidate of the
    prefilter), while the parser keeps every line (a benchmark output or RAS report being kept) and nothing else
    waits for them (:meth:`Replay.keeps_only`)."""

    __slots__ = ()


class Replay:
    """Feeds logs to ``parser`` in bulk, one after the other (:meth:`feed`)."""

    def __init__(self, parser: Parser, find: Optional[Callable[[bytes, int], List[int]]] = None) -> None:
        self.p = parser
        self.find = find  # the prefilter's Hyperscan search, where it is Hyperscan (:func:`_none_holds_a_word`)
        self.reader = Reader("")
        self.seen: Dict[bytes, _Seen] = {}  # the distinct lines of the file being fed, read so far
        self.room = 0  # bytes the table of lines and the runs may still take
        self.runs: List[_Run] = []  # the runs of lines kept in the file being fed
        self.budget = 0  # lines that may still be recorded as runs in the file being fed
        self.rec: Optional[_Recording] = None  # the run being recorded
        self.spare: Optional[_Recording] = None  # a recording forgotten, to record the next run with
        self.plain: Dict[bytes, object] = {}  # a plain line's text as bare() reads it, or False (not plain)
        self.plain_room = 0

    def feed(self, items: Iterable[Tuple[int, Union[bytes, List[bytes]]]], source: str,
             total: Callable[[], int]) -> None:
        """One log as raw lines: ``(n, line)`` for line ``n``, or ``(n, [lines])`` for the lines after line ``n``;
        each cut to its bound, undecoded; ``total()`` says how many lines it had once they are read."""
        p = self.p
        p.begin(source)
        self.reader = reader = Reader(source)
        self.seen, self.room, self.runs, self.budget, self.rec = {}, _SEEN_BYTES, [], RUN_MAX, None
        self.plain, self.plain_room = {}, _PLAIN_BYTES
        for n, item in items:
            if type(item) is bytes:
                self._block(n - 1, (item,))
            elif type(item) is Plain:
                self._plain(n, item)
            else:
                self._block(n, item)
        for rec in reader.end():
            p.record(rec)
        for run in self.runs:  # the runs counted again: each time, every count of their first reading
            if run.times:
                for e, c in run.counts.items():
                    e.hits += c * run.times
        pairs = [pe for e in self.seen.values() if e.pairs for pe in e.pairs.values() if pe is not None]
        for e in itertools.chain(self.seen.values(), pairs):
            if e.hits:
                p.again_counted(e.hits, e.nccl, e.count, e.stats, e.pair)
        self.seen, self.runs = {}, []
        p.end(source, total())

    def holds(self) -> bool:
        """Whether the line after the last one fed may change what was read: the reader holds a record it may
        continue (an NCCL line that leaves a parenthesis open, and a line that continued one)."""
        return bool(self.reader.held)

    def keeps_only(self) -> bool:
        """Whether the next lines are wanted only to be kept, as the benchmark output or RAS report being kept:
        no line waits for the next, the reader holds no record and none a line may continue, and no run is being
        recorded. The prefilter then hands the lines up to the next candidate as one :class:`Plain` item."""
        reader, p = self.reader, self.p
        return (self.rec is None and not reader.held and reader.prev is None and reader.source not in p.want
                and p.keeping(reader.source))

    def _plain(self, n: int, lines: Sequence[bytes]) -> None:
        """Lines ``n+1, n+2, ...``, handed over as :class:`Plain`: while they hold no NCCL prefix and no word of
        the grammar (their text read once per distinct line), and nothing else waits, they go to the parser in
        one call (:meth:`nccldiag.nccl.parser.Parser.plain_lines`); from the first that does not, as any block."""
        msgs: List[str] = []
        if self.keeps_only():
            memo = self.plain
            get = memo.get
            if len(lines) >= _BATCH_MIN and self._plain_batch(lines, msgs):
                self.p.plain_lines(self.reader.source, n, msgs)
                return
            for raw in lines:
                msg = get(raw)
                if msg is None:
                    _line, _rank, body, parts = read_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
                    msg = body if parts is None and not holds_word(body) else False
                    if self.plain_room > 0:
                        memo[raw] = msg
                        self.plain_room -= len(raw) + 64
                if msg is False:
                    break
                msgs.append(msg)  # type: ignore[arg-type]
            self.p.plain_lines(self.reader.source, n, msgs)
        if len(msgs) < len(lines):
            self._block(n + len(msgs), tuple(lines[len(msgs):]))

    def _plain_batch(self, lines: Sequence[bytes], msgs: List[str]) -> bool:
        """:meth:`_plain`'s reading of ``lines``, with the test of their texts for a word made once for them all
        (:func:`_none_holds_a_word`): True, with their texts added to ``msgs``, where each has no NCCL prefix and
        none holds a word; False, ``msgs`` as it was, where one may (each is then read in turn)."""
        memo = self.plain
        get = memo.get
        got: List[str] = []
        fresh: Dict[bytes, str] = {}  # the lines not remembered, and their texts
        for raw in lines:
            msg = get(raw)
            if msg is None:
                msg = fresh.get(raw)
            if msg is None:
                _line, _rank, body, parts = read_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
                if parts is not None:
                    return False
                fresh[raw] = msg = body
            elif msg is False:
                return False
            got.append(msg)
        if fresh and not _none_holds_a_word(list(fresh.values()), self.find):
            return False
        for raw, body in fresh.items():
            if self.plain_room <= 0:
                break
            memo[raw] = body
            self.plain_room -= len(raw) + 64
        msgs += got
        return True

    # ---- the lines of a block

    def _block(self, n: int, lines: Sequence[bytes]) -> None:
        """Lines ``n+1, n+2, ...`` of the file being fed. Where ``lines`` is a block, a run of lines only counted
        from a point where no thread has anything open, up to the next such point, is recorded (:class:`_Run`, on
        the entry of its first line): where the same lines come again from such a point, the run is counted as a
        whole."""
        get = self.seen.get
        p, reader = self.p, self.reader
        ow, oo, fo, want = p.open_warn, p.open_orphan, p.failed_orphans, p.want
        n0 = n
        runs_ok = type(lines) is list and len(lines) > RUN_MIN
        if runs_ok:
            self.budget += len(lines) // RUN_SHARE
        it = iter(lines)
        rec = self.rec  # the run being recorded (self.rec), read again after each call that may end or start one
        for raw in it:
            n += 1
            e = first = get(raw)
            if e is not None:
                if runs_ok and not want and not reader.held:  # runs: from here, nothing waits for the next line
                    if rec is not None and n - rec.start > RUN_MIN:  # the run recorded is long enough: keep it
                        self._close(rec.start - n0 - 1, n - n0 - 1, lines)
                        rec = None
                    if rec is None:
                        r = e.runs
                        if r is not None and self._replay(r, e, lines, n - n0 - 1, n):
                            skip = r[0].size  # a run counted again (moved first): its other lines are skipped
                            next(itertools.islice(it, skip - 1, skip - 1), None)
                            n += skip - 1
                            continue
                        if (r is None or len(r) < RUN_KEPT) and e.tries < RUN_TRIES and self.room > 0 and \
                                self.budget > 0:
                            rec = self._start(n, e)
                kind = e.kind
                if kind == _SEEN_COUNT and not reader.held and not want:  # the most common: only counted
                    key = e.key
                    if not ((ow and key in ow) or (oo and key in oo) or (fo and key in fo)):
                        if e.proc is not None:
                            p.line_proc = e.proc
                        e.hits += 1
                        if rec is not None:
                            rec.entries.append(e)
                        continue
                if kind:
                    taken = self._again(e, n, raw, it, n0, lines)
                    rec = self.rec
                    if taken:
                        n += taken - 1
                        continue
            if rec is not None:  # a line read in full: the run ends before it
                self._end_run(n, n0, lines)
                rec = self.rec
            self._read(n, raw, first)
        if self.rec is not None:  # the block ended first
            self._abort()

    def _read(self, n: int, raw: bytes, first: Optional[_Seen]) -> None:
        """Read line ``n`` in full; the first time, remember it; the second, what reading it again would do."""
        p, reader = self.p, self.reader
        recs = reader.line(n, raw.decode("utf-8", errors="replace").rstrip("\r\n"), first is not None)
        for rec in recs:
            p.record(rec)
        if first is None:  # seen once: what it does is worked out if it comes again
            if self.room > 0:
                self.seen[raw] = _ONCE
                self.room -= len(raw) + 64
            return
        if first is not _ONCE:
            return
        held = reader.held
        e: Optional[_Seen]
        if not held:  # a line without an NCCL prefix (none continues it: nothing was held)
            if recs and recs[-1].kind == "bare" and recs[-1].at.lineno == n:
                e = self._bare_entry(recs[-1])
            else:
                e = _BLANK  # nothing to read: blank, or a launcher's tag alone
        elif len(held) == 1 and held[0].at.lineno == n and held[0].msg.count("(") <= held[0].msg.count(")"):
            # one NCCL record no later line can continue: read it now, and remember what it did
            rec = held[0]
            reader.end()
            p.record(rec)
            e = self._entry(rec)
        elif len(held) == 1 and held[0].at.lineno == n:  # one NCCL record the next line may continue
            e = _Seen(_SEEN_WRAP)
            e.pairs = {}
        else:
            e = _NEVER
        if e is not None:
            self.seen[raw] = e

    def _hit(self, e: _Seen) -> int:
        """Line entry ``e`` counted once more (in the run being recorded too)."""
        e.hits += 1
        if self.rec is not None:
            self.rec.entries.append(e)
        return 1

    def _again(self, e: _Seen, n: int, raw: bytes, it: Iterator[bytes], n0: int, lines: Sequence[bytes]) -> int:
        """Line ``n`` read before (entry ``e``, other than a plain count): 1 where it was only counted, 2 where it
        and the next line were taken as the one record they make, 0 where it must be read in full."""
        k = e.kind
        reader = self.reader
        if k == _SEEN_BARE and e.wrap and reader.prev is not None:
            return 0  # it may continue the line before
        if reader.held:  # this line ends what the reader held: read it first
            for rec in reader.end():
                self.p.record(rec)
        if k == _SEEN_INFO or k == _SEEN_COUNT:
            return self._again_info(e)
        if k == _SEEN_BARE or k == _SEEN_BLANK:
            return self._again_bare(e, n)
        if k == _SEEN_CHAIN:
            return self._again_chain(e, n, n0, lines)
        if k == _SEEN_WARN:
            return self._again_warn(e)
        if k == _SEEN_WRAP:
            return self._again_wrap(e, n, raw, it)
        self.p.again_plain(reader.source, e.proc)  # _SEEN_PLAIN
        return self._hit(e)

    def _again_info(self, e: _Seen) -> int:
        p, key, source = self.p, e.key, self.reader.source
        if key in p.failed_orphans or (e.rank0 and not p.rank0_read(source, e.proc)):
            return 0
        rec = self.rec
        if rec is not None:
            ow = p.open_warn
            if (e.rank0 and rec.seg is not None) or key in p.open_orphan or \
                    (key in ow and key not in rec.opened and not _before(key, ow, rec.pre)):
                self._abort()  # it reads or ends what was open before the run
            else:
                if e.rank0:
                    rec.r0.add(e.proc)
                if e.version is not None:
                    rec.seg = e.version
        p.again_info(key, source, e.proc, e.version)
        return self._hit(e)

    def _again_bare(self, e: _Seen, n: int) -> int:
        if e.kind == _SEEN_BARE:
            p, source = self.p, self.reader.source
            if not p.may_count_bare(source, e.watchdog, e.bench, e.ras):
                return 0
            p.again_bare(source, n, e.msg or "", e.size, e.join, e.version)
            rec = self.rec
            if rec is not None:
                rec.bare.append((n - rec.start, e))
                if e.wrap:
                    rec.wrap = True
                if e.version is not None:
                    rec.seg = e.version
        return self._hit(e)

    def _again_chain(self, e: _Seen, n: int, n0: int, lines: Sequence[bytes]) -> int:
        p, key = self.p, e.key
        ow = p.open_warn
        w = ow.get(key)
        if w is not None:
            if not p.steps_counted(w):
                return 0
            rec = self.rec
            if rec is not None and key not in rec.opened and not _before(key, ow, rec.pre):
                self._abort()
        elif self.rec is not None:  # a chain of its own (its thread has something open after it)
            self._end_run(n, n0, lines)
        assert e.step is not None
        if not p.again_step(key, self.reader.source, e.proc, e.step):
            return 0
        return self._hit(e)

    def _again_warn(self, e: _Seen) -> int:
        p, key, rec = self.p, e.key, self.rec
        if rec is not None:
            ow = p.open_warn
            if (key in ow and key not in rec.opened and not _before(key, ow, rec.pre)) or \
                    key in p.open_orphan or key in p.failed_orphans:
                self._abort()
            else:
                rec.opened.add(key)
        if p.again_warn(key, self.reader.source, e.proc, e.warn) and self.rec is not None:
            self._abort()  # the bound on threads closed what was open
        return self._hit(e)

    def _again_wrap(self, e: _Seen, n: int, raw: bytes, it: Iterator[bytes]) -> int:
        """Line ``n``, an NCCL line that leaves a parenthesis open, and the next line: counted as the one record
        they make where the two were read before as one, else read in full."""
        p = self.p
        nxt = None if p.want else next(it, None)
        if nxt is None:
            return 0
        pe = e.pairs.get(nxt) if e.pairs else None
        rec = self.rec
        if rec is not None:
            ow = p.open_warn
            if pe is None or (pe.rank0 and rec.seg is not None) or pe.key in p.open_orphan or \
                    (pe.key in ow and pe.key not in rec.opened and not _before(pe.key, ow, rec.pre)):
                self._abort()
            else:
                if pe.rank0:
                    rec.r0.add(pe.proc)
                if pe.version is not None:
                    rec.seg = pe.version
        if pe is not None and self._pair_counted(pe):
            if self.rec is not None:
                self.rec.entries.append(pe)
            return 2
        if self.rec is not None:
            self._abort()
        self._pair_read(n, raw, nxt, e, pe)
        return 2

    def _pair_counted(self, pe: _Seen) -> bool:
        """Whether the record of a wrapped line and its continuation (entry ``pe``) was counted."""
        if pe.kind != _SEEN_INFO and pe.kind != _SEEN_COUNT:
            return False
        p, key, source = self.p, pe.key, self.reader.source
        if key in p.failed_orphans or (pe.rank0 and not p.rank0_read(source, pe.proc)):
            return False
        p.again_info(key, source, pe.proc, pe.version)
        pe.hits += 1
        return True

    def _pair_read(self, n: int, raw: bytes, nxt: bytes, e: _Seen, pe: Optional[_Seen]) -> None:
        """Lines ``n`` (``raw``, entry ``e``) and ``n + 1`` (``nxt``) read in full; what reading them again does is
        remembered where the second completed the first."""
        p, reader = self.p, self.reader
        for rec in reader.line(n, raw.decode("utf-8", errors="replace").rstrip("\r\n")):
            p.record(rec)
        self._block(n, (nxt,))
        held = reader.held
        if pe is None and len(held) == 1 and held[0].at.lineno == n and reader.prev is held[0] and \
                held[0].msg.count("(") <= held[0].msg.count(")") and not p.want and self.room > 0:
            # the next line completed the record, and no later line can continue it: read it now
            rec = held[0]
            reader.end()
            p.record(rec)
            pe = self._entry(rec)
            if pe is not None and e.pairs is not None:
                e.pairs[nxt] = pe
                self.room -= len(nxt) + 64

    # ---- runs of lines

    def _start(self, n: int, e: _Seen) -> _Recording:
        """A run starts being recorded at line ``n`` (entry ``e``)."""
        rec = self.spare
        if rec is None:
            rec = _Recording()
        else:
            self.spare = None
        rec.begin(n, e, self.p.f.dropped_failures)
        self.rec = rec
        self.p.dropped_names = rec.names
        return rec

    def _end_run(self, n: int, n0: int, lines: Sequence[bytes]) -> None:
        """Line ``n`` is not only counted: the run being recorded ends before it, kept if it is long enough (and
        nothing waits for the next line), else forgotten."""
        rec = self.rec
        assert rec is not None
        if n - rec.start >= RUN_SHORT and not self.p.want:
            self._close(rec.start - n0 - 1, n - n0 - 1, lines)
        else:
            self._abort()

    def _abort(self) -> None:
        """The run being recorded is not one to count again: forget it."""
        rec = self.rec
        assert rec is not None
        rec.first.tries += 1
        self.budget -= len(rec.entries) + 1
        self.rec = self.p.dropped_names = None
        self.spare = rec  # nothing else holds it: the next recording takes it

    def _close(self, a: int, b: int, lines: Sequence[bytes]) -> None:
        """The run being recorded from ``lines[a]`` ends before ``lines[b]``: keep it, with what it found open on
        its threads (the WARNs past the bound it read on, as they were) and what it leaves open (the WARNs it
        opened; those it found, with the steps it added)."""
        rec, p = self.rec, self.p
        assert rec is not None
        self.rec = p.dropped_names = None
        self.budget -= len(rec.entries)
        rest = lines[a + 1:b]
        size = sum(map(len, rest)) + 16 * len(rest) + 64 * len(rec.entries) + 256
        start = rec.first
        if b - a > RUN_MAX or self.room < size:
            start.tries += 1
            return
        self.room -= size
        run = _Run(rest, rec.entries, p.f.dropped_failures - rec.df0, rec.names, rec.bare)
        ow, pre = p.open_warn, rec.pre
        run.pre = {k: (base, chain) for k, (_, base, chain) in pre.items()}
        run.free = run.keys.difference(run.pre)
        run.closed = [k for k, (w, _, _) in pre.items() if ow.get(k) is not w]
        run.grown = [(k, tuple(w.chain)) for k, (w, _, _) in pre.items() if ow.get(k) is w]
        run.open = [(k, w.base, tuple(w.chain)) for k, w in ow.items() if k in rec.opened]
        run.seg, run.r0, run.wrap = rec.seg, tuple(rec.r0), rec.wrap
        if start.runs is None:
            start.runs = []
        if len(start.runs) < RUN_TRIES:
            start.runs.append(run)
            self.runs.append(run)

    def _replay(self, runs: List[_Run], start: _Seen, lines: Sequence[bytes], i: int, n: int) -> bool:
        """Whether a run of ``runs`` (those starting with the entry ``start``) is ``lines[i:]`` and was counted
        again now; it is then moved first. Its threads have open what they had when it was recorded (nothing, or
        the same WARNs past the bound), and nothing waits for the next line. A run that keeps missing is
        dropped."""
        p, source = self.p, self.reader.source
        ow, oo, fo = p.open_warn, p.open_orphan, p.failed_orphans
        if len(ow) >= MAX_THREADS - RUN_MAX or len(oo) >= MAX_THREADS or len(fo) >= MAX_THREADS:
            return False
        prev = self.reader.prev
        for k, run in enumerate(runs):
            if lines[i + 1:i + run.size] != run.rest or not run.free.isdisjoint(ow) or \
                    (oo and not run.keys.isdisjoint(oo)) or (fo and not run.keys.isdisjoint(fo)) or \
                    (run.pre and not _as_before(run, ow)) or (run.wrap and prev is not None) or \
                    (run.r0 and not all(p.rank0_read(source, q) for q in run.r0)):
                run.misses += 1
                continue
            if run.bare and p.keeping(source):  # kept as the output they are part of, as _again_bare does
                p.again_kept(source, n, run.kept)
            run.times += 1
            p.again_run(source, run.proc, run.seg, run.df, run.names, run.closed, run.grown, run.open)
            if k:
                runs.insert(0, runs.pop(k))
            return True
        for run in [r for r in runs if r.misses > 16 + 4 * r.times]:
            runs.remove(run)
            start.tries += 1
        return False

    # ---- what reading a line again does

    def _entry(self, rec: Rec) -> Optional[_Seen]:
        """What reading NCCL record ``rec`` again would do, if only counting (its record lists are full); ``None``
        when it would keep a record now (ask again later), :data:`_NEVER` when it reads more than counts."""
        msg = rec.msg
        if app_line(msg) or ("failure " in msg and not app_noop(msg)):
            return _NEVER  # application lines: read every time
        p, at = self.p, rec.at
        proc = p.proc_key(at)
        key = thread(at)
        if rec.kind == "trace":
            return _Seen(_SEEN_PLAIN, key, proc)
        if rec.kind == "warn":
            if not p.full("warns", at):
                return None
            e = _Seen(_SEEN_WARN, key, proc, count="warns")
            e.warn = fails(Warn(msg, at, rec.text, rec.file, rec.fline, rec.func, rec.timestamp))
            return e
        if rec.kind != "info":
            return _NEVER
        m = _CHAIN.search(msg) if " -> " in msg else None
        if m and " via " not in msg:
            e = _Seen(_SEEN_CHAIN, key, proc)
            e.step = chain_step(m, at, rec.text)
            return e
        row, m = fact_row(msg)
        if row is None:
            return _Seen(_SEEN_COUNT, key, proc)
        if not row.again:
            return _NEVER
        assert m is not None
        if row.keeps is None:  # a channel line: its kept lines, then its tallies
            tallies = p.channel_tallies(m, at)
            if tallies is None:
                return None
            return _Seen(_SEEN_COUNT, key, proc, count="channels", stats=tallies[0], pair=tallies[1])
        if not p.full(row.keeps, at):
            return None
        e = _Seen(_SEEN_COUNT, key, proc, count=row.keeps)
        if row.rank is not None and row.rank(m) == 0:
            e.kind, e.rank0 = _SEEN_INFO, True
        if row.name == "version":
            e.kind, e.version = _SEEN_INFO, p.last_version(at.source)  # past the bound: kept nowhere
        return e

    def _bare_entry(self, rec: Rec) -> Optional[_Seen]:
        """:meth:`_entry` for a line without an NCCL prefix: only a plain line, or an error line past its bound,
        that asks nothing of the next line, is only counted."""
        msg, p = rec.msg, self.p
        if not holds_word(msg):  # no word of the grammar: a plain line, only counted
            e = _Seen(_SEEN_BARE)
            e.nccl = 0
            e.wrap = wrapped("(", msg)
            e.msg = msg[:4096]
            e.size = len(e.msg) + 1
            return e
        if "Last error:" in msg:
            return _NEVER
        app = app_line(msg)
        if not app and "failure " in msg and not app_noop(msg):
            return _NEVER  # nccl-tests' first failure lines: read every time, as app_lines reads them
        watchdog = None
        if app and not app_noop(msg):
            watchdog = watchdog_key(rec)
            if watchdog is None or not p.watchdog_seen(watchdog):
                return _NEVER  # PyTorch and nccl-tests lines: read every time, but a watchdog message seen before
        version = None
        if not app:  # Parser.bare reads these only from lines that are not the application's
            if "NCCL WARN " in msg or "NCCL DIAG" in msg or "NCCL INFO " in msg:
                return _NEVER
            if (" via " in msg and _FRAGMENT.search(msg)) or _UNPREFIXED.search(msg) or _QUOTED_WARN.search(msg):
                return _NEVER
            if _VERSION.search(msg):
                v = p.last_version(rec.at.source)
                if v is None or v.at is not rec.at or p.version_kept(v):
                    return None if v is not None and v.at is rec.at else _NEVER
                version = v  # a version line past the bound on those kept: seen by nobody
        kind = error_kind(msg)
        count = None
        join = False
        if kind is not None:
            count = "kernel" if kind == "kernel" else "errors"
            if not p.full(count, rec.at):
                return None
            join = joins_next(msg)  # past the bound, the line after it is joined to a line kept nowhere
        e = _Seen(_SEEN_BARE, count=count)
        e.nccl = 0 if version is None else 1
        e.version = version
        e.join = join
        e.watchdog = watchdog
        e.bench = _BENCH_START.search(msg) is not None
        e.ras = _RAS_START.search(msg) is not None
        e.wrap = wrapped("(", msg)
        e.msg = msg[:4096]
        e.size = len(e.msg) + 1
        return e


def feed(parser: Parser, items: Iterable[Tuple[int, Union[bytes, List[bytes]]]], source: str,
         total: Callable[[], int], find: Optional[Callable[[bytes, int], List[int]]] = None) -> None:
    """One log fed to ``parser`` as raw lines (:meth:`Replay.feed`)."""
    Replay(parser, find).feed(items, source, total)
