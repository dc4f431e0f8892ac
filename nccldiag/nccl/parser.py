"""NCCL debug logs (``NCCL_DEBUG=INFO``) -> facts: the handlers, one line in, facts updated. Pure: text in,
dataclasses out.

:class:`Parser` reads the records of :mod:`nccldiag.nccl.grammar`'s line reader and keeps what each says in a
:class:`nccldiag.nccl.facts.NcclLogFacts`, each list bounded (``KEEP``); :func:`parse`, :func:`parse_logs` and
:func:`parse_streams` read whole logs, and :meth:`Parser.merge` joins parsers that read files apart. The
prefilter (:mod:`nccldiag.nccl.scan`) hands it only the lines it reads, and :mod:`nccldiag.nccl.replay` counts
the lines read before instead of reading them again. The parser never raises on text.
"""
from __future__ import annotations

import itertools
import re
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple, Union

from nccldiag.nccl.facts import (
    AppError, Bootstrap, CategoryStats, ChainStep, Channel, ChannelCounts, CommInfo, Connected, ERROR_RESULTS,
    EnvEcho, ErrorLine, GdrLine, InitEvent, KEEP, Loc, MAX_BENCH_BYTES, MAX_BENCH_FILES, MAX_CATEGORIES,
    MAX_ERROR_TEXT, MAX_LINE, MAX_PAIRS, MAX_PROCS, MAX_RAS_BYTES, MAX_SMALL, MAX_STEPS, MAX_THREADS, NcclLogFacts,
    NetDevice, NetDevices, NetworkChoice, Note, NvlsLine, OrphanChain, PairTransport, PluginLine, Proc, RingOrder,
    VersionLine, Warn, Watchdog, add_capped, summarize)
from nccldiag.nccl.grammar import (
    Reader, Rec, _BARE_INFO, _BARE_WARN, _BENCH_START, _CHAIN, _DIAG, _FRAGMENT, _IB_DEV, _LAST_ERROR, _OLD_IB_PORT,
    _PROGRESS, _QUOTED_WARN, _RAS_START, _SOCK_IF, _TAG, _TESTS_CUDA, _TESTS_FAIL, _TESTS_TIMEOUT, _TORCH_ERR,
    _TORCH_OLD, _UNPREFIXED, _VERSION, _WATCHDOG, _WD_FIELD, _WD_RANK, app_noop, category_of, classify, error_kind,
    fact_row, fails, numbered_records, parse_via, watchdog_key, wrapped)



_SEEN_PLAIN, _SEEN_INFO, _SEEN_CHAIN, _SEEN_WARN, _SEEN_BARE, _SEEN_BLANK, _SEEN_COUNT, _SEEN_WRAP = 1, 2, 3, 4, 5, 6, 7, 8
_SEEN_BYTES = 8 * 1024 * 1024  # bytes of distinct lines remembered per file


class _Seen:
    """A line read before, in the file being fed (:meth:`Parser.feed_bulk`), and what reading it again does
    while its record lists are full: ``hits`` more lines counted in ``count`` (a fact list), ``stats`` and
    ``pair`` (a channel line's tallies); for a WARN or a call-chain line, the thread state it opens or extends.

    ``kind`` 0 (:data:`_NEVER`): a line read in full every time. ``kind`` :data:`_SEEN_WRAP`: an NCCL line that
    leaves a parenthesis open, as a line wrapped by whoever copied the log does; ``pairs`` holds, for each next
    line seen to complete it, what reading the two lines again does (the joined record's :class:`_Seen`)."""

    __slots__ = ("kind", "key", "proc", "count", "stats", "pair", "hits", "rank0", "version", "step", "warn",
                 "nccl", "bench", "ras", "wrap", "msg", "size", "join", "watchdog", "pairs", "runs", "tries")

    def __init__(self, kind: int, key: Tuple[str, str, int, int] = ("", "", 0, 0),
                 proc: Optional[Tuple[str, int]] = None, count: Optional[str] = None,
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


_NEVER = _Seen(0)


def _no_join(nxt: "Rec") -> None:
    """What takes the line after an error line past the bound: nothing is kept of it."""



_ONCE = _Seen(0)  # a line read once so far
_BLANK = _Seen(_SEEN_BLANK)
_BLANK.nccl = 0
_NEVER.tries = _ONCE.tries = _BLANK.tries = 1 << 30  # shared by every file: no run starts on them

RUN_MIN = 64  # lines of a run at least, where nothing ends it before
RUN_SHORT = 8  # lines of a run at least, where a line read in full or a call chain of its own ends it
RUN_MAX = 4096  # lines of a run at most
RUN_KEPT = 4  # runs kept that start on one line, at most
RUN_TRIES = 64  # runs recorded from one line that were not kept, at most
RUN_SHARE = 8  # lines recorded as runs: at most one in this many of the lines fed (and RUN_MAX at first)


def _before(key: Tuple[str, str, int, int], ow: Dict, pre: Dict) -> bool:
    """For a run being recorded (:meth:`Parser._bulk`): whether the WARN open on ``key`` before the run is one
    past the bound, as it was (``pre``, noted the first time the run reads it); ``False`` for any other."""
    if key in pre:
        return True
    w = ow[key]
    if type(w) is not _DroppedWarn:
        return False
    pre[key] = (w, w.base, tuple(w.chain))
    return True


def _as_before(run: "_Run", ow: Dict) -> bool:
    """Whether the WARNs open before ``run`` on the threads it found one open on are those it found."""
    for key, (base, chain) in run.pre.items():
        w = ow.get(key)
        if type(w) is not _DroppedWarn or w.base != base or tuple(w.chain) != chain:
            return False
    return True


class _Run:
    """Lines of one block that were only counted, read from a point where no thread had anything open (no WARN
    or call chain, no line waiting for the next, no benchmark output or RAS report being kept) up to the next
    such point (:meth:`Parser._bulk`). From such a point, the same lines again do the same: ``times`` more
    counts of each entry (added when the file ends), ``df`` more failed WARNs past the bound, the result names
    of their chains offered again, and the process of the last line."""

    __slots__ = ("rest", "size", "counts", "df", "names", "proc", "times", "keys", "bare", "misses", "open", "pre",
                 "closed", "grown", "seg", "r0", "wrap", "free")

    def __init__(self, rest: List[bytes], entries: List["_Seen"], df: int, names: List[str],
                 bare: List[Tuple[int, "_Seen"]]) -> None:
        self.rest, self.size = rest, len(rest) + 1  # the lines after the first, and all of them
        self.counts: Dict["_Seen", int] = {}
        for e in entries:
            self.counts[e] = self.counts.get(e, 0) + 1
        self.df, self.names, self.times, self.bare, self.misses = df, names, 0, bare, 0
        self.keys = frozenset(e.key for e in entries)  # its threads
        self.free = self.keys  # those that had nothing open before it: none may have a WARN open again
        self.open: List[Tuple[Tuple[str, str, int, int], bool, Tuple[ChainStep, ...]]] = []  # WARNs left open
        self.pre: Dict[Tuple[str, str, int, int], Tuple[bool, Tuple[ChainStep, ...]]] = {}  # WARNs open before
        self.closed: List[Tuple[str, str, int, int]] = []  # of those, the ones it closed
        self.grown: List[Tuple[Tuple[str, str, int, int], Tuple[ChainStep, ...]]] = []  # the others' chains after
        self.seg: Optional[VersionLine] = None  # the version line it leaves as the file's last (None: no change)
        self.r0: Tuple[Optional[Tuple[str, int]], ...] = ()  # the processes of its rank-0 lines (_rank0_read)
        self.wrap = False  # it counts a line that may continue the one before: the reader held none before it
        self.proc = next((e.proc for e in reversed(entries)
                          if e.proc is not None and e.kind != _SEEN_BARE and e.kind != _SEEN_BLANK), None)


class _DroppedWarn:
    """A WARN past the bound on the WARNs kept, read again (:meth:`Parser.feed_bulk`): seen by nobody, it is
    only counted when its thread moves on, as a failure where its message is one (``base``) or its call chain
    returned an error (:func:`fails`)."""

    __slots__ = ("base", "chain")

    def __init__(self, base: bool) -> None:
        self.base, self.chain = base, []  # type: List[ChainStep]


class _DroppedChain:
    """A call chain past the bound on the chains kept (:meth:`Parser._orphan_step`): its steps and whether a
    later line resumed it are seen by nobody."""

    __slots__ = ("steps", "at", "benign", "resumed")

    def __init__(self, steps: List[ChainStep], at: Loc) -> None:
        self.steps, self.at, self.benign, self.resumed = steps, at, False, None


class Parser:
    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        # bounds below keep for some lists: a worker's parser takes only what the merging parser has room for
        self.limits: Dict[str, int] = {}
        self.f = NcclLogFacts(keep=keep)
        self.procs: Dict[Tuple[str, int], Proc] = {}
        self._runs: List[_Run] = []  # the runs of lines kept in the file being fed (_bulk)
        self._names: Optional[List[str]] = None  # the result names a run being recorded offered
        self._budget = 0  # lines that may still be recorded as runs in the file being fed
        self.open_warn: Dict[Tuple[str, str, int, int], Union[Warn, _DroppedWarn]] = {}
        self.kept_warns: Set[int] = set()  # id() of the warns held in f.warns
        self.open_orphan: Dict[Tuple[str, str, int, int], OrphanChain] = {}
        self.failed_orphans: Dict[Tuple[str, str, int, int], List[OrphanChain]] = {}  # may still be resumed
        self.watchdog_keys: Set[Tuple] = set()
        self.pending_versions: List[Tuple[VersionLine, Optional[Tuple[str, int]]]] = []
        self.segment: Dict[str, VersionLine] = {}  # the last version line of each source
        self.version_owner: Dict[int, Tuple[str, int]] = {}  # a bare version line's rank-0 process
        self.kept_versions: Set[int] = set()  # id() of the version lines held in f.versions or pending_versions
        self.pairs: Dict[Tuple[int, int], PairTransport] = {}
        self.rank_hosts: Dict[int, List[str]] = {}
        self.last_seen: Optional[Tuple[str, int, Optional[int], str]] = None
        self.last_proc: Optional[Proc] = None
        self.bench: Dict[str, List[str]] = {}  # file -> lines of a benchmark output in it
        self.bench_bytes: Dict[str, int] = {}
        self.ras: Dict[str, List[Tuple[int, str]]] = {}  # file -> (line number, line) from a RAS report's start
        self.ras_bytes: Dict[str, int] = {}
        self.want: Dict[str, Any] = {}  # file -> what reads its next plain line (a message on the line after)
        self.line_proc: Optional[Tuple[str, int]] = None  # the process of the last NCCL line of the file being fed

    def _keep(self, name: str, item) -> bool:
        """Append to the fact list ``name`` unless it holds ``keep`` records already; count it either way."""
        counts = self.f.counts
        counts[name] = counts.get(name, 0) + 1
        lst = getattr(self.f, name)
        if len(lst) < self.limits.get(name, self.keep):
            lst.append(item)
            return True
        return False

    def proc(self, at: Loc) -> Optional[Proc]:
        if at.host is None or at.pid is None:
            return None
        seen = (at.host, at.pid, at.dev, at.source)
        if seen == self.last_seen:  # the same process, device and file as the line before: nothing to add
            return self.last_proc
        key = (at.host, at.pid)
        p = self.procs.get(key)
        if p is None:
            if len(self.procs) >= MAX_PROCS:
                return None
            p = self.procs[key] = Proc(at.host, at.pid)
        add_capped(p.sources, at.source)
        if at.dev is not None:
            add_capped(p.devs, at.dev, 1024)
        self.last_seen, self.last_proc = seen, p
        return p

    def feed(self, text: str, source: str) -> None:
        self.feed_lines(text.splitlines(), source)

    def feed_lines(self, lines: Iterable[str], source: str) -> None:
        """One log, line by line (an open file, a list, a generator)."""
        count: List[int] = []
        self.feed_numbered(enumerate(lines, 1), source, lambda: count[0] if count else 0, count)

    def feed_numbered(self, lines: Iterable[Tuple[int, str]], source: str, total: Callable[[], int],
                      count: Optional[List[int]] = None) -> None:
        """One log as ``(line number, line)`` pairs; ``total()`` says how many lines it had once they are read
        (a prefilter passes only the lines the parser reads, see :mod:`nccldiag.nccl.scan`)."""
        self.f.sources.append(source)
        self.line_proc = None
        for rec in numbered_records(lines, source, count):
            self.record(rec)
        self.f.lines += total()
        self.end_file(source)

    def record(self, rec: Rec) -> None:
        """Read one record of the file being fed."""
        if rec.kind == "bare":
            self.bare(rec, self.line_proc)
            return
        self.want.pop(rec.at.source, None)
        self.f.nccl_lines += 1
        p = self.proc(rec.at)
        if p is not None:
            self.line_proc = (p.host, p.pid)
            if rec.launcher_rank is not None:
                add_capped(p.launcher_ranks, rec.launcher_rank, 1024)
        if rec.kind == "warn":
            self.warn(rec)
        elif rec.kind == "info":
            self.info(rec, p)

    # ---- lines in bulk: a line read before is not read again when it can only add to counts

    def feed_bulk(self, items: Iterable[Tuple[int, Union[bytes, List[bytes]]]], source: str,
                  total: Callable[[], int]) -> None:
        """One log as raw lines (:class:`nccldiag.nccl.scan.Scan` in bulk mode): ``(n, line)`` for line ``n``, or
        ``(n, [lines])`` for the lines after line ``n``; each cut to its bound, undecoded. The facts are those of
        :meth:`feed_numbered` on the decoded lines: a line the parser read before (the same bytes, in this file)
        whose reading could now only add to counts, as once its lists are full, is counted, not read again
        (:class:`_Seen`); every other line is read as usual."""
        self.f.sources.append(source)
        self.line_proc = None
        reader = Reader(source)
        seen: Dict[bytes, _Seen] = {}
        room = [_SEEN_BYTES]
        self._runs, self._names, self._budget = [], None, RUN_MAX
        for n, item in items:
            self._bulk(n - 1, (item,), reader, seen, room) if type(item) is bytes else \
                self._bulk(n, item, reader, seen, room)
        for rec in reader.end():
            self.record(rec)
        for run in self._runs:  # the runs counted again: each time, every count of their first reading
            if run.times:
                for e, c in run.counts.items():
                    e.hits += c * run.times
        self._runs, self._names = [], None
        f, counts = self.f, self.f.counts
        pairs = [pe for e in seen.values() if e.pairs for pe in e.pairs.values() if pe is not None]
        for e in itertools.chain(seen.values(), pairs):
            h = e.hits
            if h:
                f.nccl_lines += h * e.nccl
                if e.count is not None:
                    counts[e.count] = counts.get(e.count, 0) + h
                if e.stats is not None:
                    e.stats.lines += h
                if e.pair is not None:
                    e.pair.lines += h
        self.f.lines += total()
        self.end_file(source)

    def _bulk(self, n: int, lines: Iterable[bytes], reader: "Reader", seen: Dict[bytes, "_Seen"],
              room: List[int]) -> None:
        """Lines ``n+1, n+2, ...`` of the file being fed (see :meth:`feed_bulk`).

        Where ``lines`` is a block, a run of lines only counted from a point where no thread has anything open
        up to the next such point is remembered (:class:`_Run`, on the entry of its first line): where the
        same lines come again from such a point, the run is counted as a whole."""
        get = seen.get
        ow, oo, fo, want = self.open_warn, self.open_orphan, self.failed_orphans, self.want
        bench, bench_bytes, ras, ras_bytes = self.bench, self.bench_bytes, self.ras, self.ras_bytes
        source = reader.source
        f = self.f
        n0 = n
        runs_ok = type(lines) is list and len(lines) > RUN_MIN
        if runs_ok:
            self._budget += len(lines) // RUN_SHARE
        jr: Optional[List[_Seen]] = None  # the entries of the run being recorded (None: none is)
        jstart, jentry, df0, jwrap = 0, _NEVER, 0, False
        jbare: List[Tuple[int, _Seen]] = []  # the run's lines without a prefix: (line after its first, entry)
        jseg: Optional[VersionLine] = None  # the version line the run left as the file's last
        jr0: Set[Optional[Tuple[str, int]]] = set()  # the processes of the rank-0 lines it counted
        rk: Set[Tuple[str, str, int, int]] = set()  # the threads the run opened a WARN on
        pre: Dict[Tuple[str, str, int, int], Tuple[_DroppedWarn, bool, Tuple[ChainStep, ...]]] = {}  # open before
        it = iter(lines)
        for raw in it:
            n += 1
            e = first = get(raw)
            if e is None:
                if jr is not None:  # a line read in full: the run ends before it
                    jr = self._run_end(jr, jbare, jentry, lines, jstart, n, n0, df0, room, rk, pre, jseg, jr0,
                                       jwrap)
            else:
                if runs_ok:
                    if jr is not None and n - jstart > RUN_MIN and not want and not reader.held:
                        jr = self._run_close(jr, jbare, jentry, lines, jstart - n0 - 1, n - n0 - 1, df0, room, rk,
                                             pre, jseg, jr0, jwrap)
                    if jr is None:
                        r = e.runs
                        if r is not None and not want and not reader.held and \
                                self._replay(r, e, lines, n - n0 - 1, reader, n):
                            run = r[0]  # the run counted again, moved first (_replay)
                            next(itertools.islice(it, run.size - 1, run.size - 1), None)
                            n += run.size - 1
                            continue
                        if (r is None or len(r) < RUN_KEPT) and e.tries < RUN_TRIES and room[0] > 0 and \
                                self._budget > 0 and not want and not reader.held:
                            jr, jstart, jentry, df0, jbare, jwrap = [], n, e, f.dropped_failures, [], False
                            rk, pre, jseg, jr0 = set(), {}, None, set()
                            self._names = []
                if e.kind == _SEEN_COUNT and not reader.held and not want:  # the most common: only counted
                    key = e.key
                    if not ((ow and key in ow) or (oo and key in oo) or (fo and key in fo)):
                        if e.proc is not None:
                            self.line_proc = e.proc
                        e.hits += 1
                        if jr is not None:
                            jr.append(e)
                        continue
            if e is not None and e.kind:
                k = e.kind
                if k == _SEEN_BARE and e.wrap and reader.prev is not None:
                    e = None  # it may continue the line before
                else:
                    if reader.held:  # this line ends what the reader held: read it first
                        for rec in reader.end():
                            self.record(rec)
                    key = e.key
                    if k == _SEEN_WRAP:
                        nxt = None if want else next(it, None)
                        if nxt is not None:  # the two lines counted, or read in full
                            if jr is not None:
                                pe = e.pairs.get(nxt) if e.pairs else None
                                if pe is None or (pe.rank0 and jseg is not None) or pe.key in oo or \
                                        (pe.key in ow and pe.key not in rk and not _before(pe.key, ow, pre)):
                                    jr = self._run_abort(jentry, jr)
                                else:
                                    if pe.rank0:
                                        jr0.add(pe.proc)
                                    if pe.version is not None:
                                        jseg = pe.version
                            pe = self._wrapped_pair(n, raw, nxt, e, reader, seen, room)
                            if jr is not None:
                                if pe is not None:
                                    jr.append(pe)
                                else:
                                    jr = self._run_abort(jentry, jr)
                            n += 1
                            continue
                        e = None
                    elif k == _SEEN_INFO or k == _SEEN_COUNT:
                        if (fo and key in fo) or (e.rank0 and not self._rank0_read(source, e.proc)):
                            e = None
                        else:
                            if jr is not None:
                                if (e.rank0 and jseg is not None) or (oo and key in oo) or \
                                        (ow and key in ow and key not in rk and not _before(key, ow, pre)):
                                    jr = self._run_abort(jentry, jr)  # it reads or ends what was open before the run
                                else:
                                    if e.rank0:
                                        jr0.add(e.proc)
                                    if e.version is not None:
                                        jseg = e.version
                            if want:
                                want.pop(source, None)
                            if ow and key in ow:
                                self.close_warn(key)
                            if oo:
                                oo.pop(key, None)
                            if e.version is not None:
                                self.segment[source] = e.version
                            if e.proc is not None:
                                self.line_proc = e.proc
                            e.hits += 1
                            if jr is not None:
                                jr.append(e)
                            continue
                    elif k == _SEEN_BARE or k == _SEEN_BLANK:
                        if k == _SEEN_BARE:
                            if (want and source in want and want[source] is not _no_join) or \
                                    (e.watchdog is not None and e.watchdog not in self.watchdog_keys):
                                e = None
                            elif (source not in bench_bytes and e.bench and len(bench) < MAX_BENCH_FILES) or \
                                    (source not in ras_bytes and e.ras and len(ras) < MAX_BENCH_FILES):
                                e = None  # it starts a benchmark output or RAS report
                            else:  # kept as the benchmark output or RAS report it is part of (bench_line, ras_line)
                                b = bench_bytes.get(source)
                                if b is not None and b < MAX_BENCH_BYTES:
                                    bench[source].append(e.msg)
                                    bench_bytes[source] = b + e.size
                                b = ras_bytes.get(source)
                                if b is not None and b < MAX_RAS_BYTES:
                                    ras[source].append((n, e.msg))
                                    ras_bytes[source] = b + e.size
                                if want:
                                    want.pop(source, None)  # the line after an error line past the bound
                                if e.join:
                                    want[source] = _no_join
                                if e.version is not None:
                                    self.segment[source] = e.version
                                if jr is not None:
                                    jbare.append((n - jstart, e))
                                    if e.wrap:
                                        jwrap = True
                                    if e.version is not None:
                                        jseg = e.version
                        if e is not None:
                            e.hits += 1
                            if jr is not None:
                                jr.append(e)
                            continue
                    elif k == _SEEN_CHAIN:
                        w = ow.get(key) if ow else None
                        if w is not None and (len(w.chain) >= MAX_STEPS or id(w) not in self.kept_warns):
                            if jr is not None and key not in rk and not _before(key, ow, pre):
                                jr = self._run_abort(jentry, jr)
                            if len(w.chain) < MAX_STEPS:  # a WARN past the bound: its steps are seen by nobody
                                w.chain.append(e.step)
                        elif w is None:
                            if jr is not None:  # a chain of its own (its thread has something open after it)
                                jr = self._run_end(jr, jbare, jentry, lines, jstart, n, n0, df0, room, rk, pre, jseg,
                                                   jr0, jwrap)
                            if not self._orphan_step(key, e):
                                e = None
                        else:
                            e = None
                        if e is not None:
                            if want:
                                want.pop(source, None)
                            if e.proc is not None:
                                self.line_proc = e.proc
                            e.hits += 1
                            if jr is not None:
                                jr.append(e)
                            continue
                    elif k == _SEEN_WARN:
                        if jr is not None:
                            if (ow and key in ow and key not in rk and not _before(key, ow, pre)) or \
                                    (oo and key in oo) or (fo and key in fo):
                                jr = self._run_abort(jentry, jr)
                            else:
                                rk.add(key)
                        if want:
                            want.pop(source, None)
                        if ow and key in ow:
                            self.close_warn(key)
                        if len(ow) >= MAX_THREADS or len(oo) >= MAX_THREADS or len(fo) >= MAX_THREADS:
                            self._bound_threads()
                            if jr is not None:
                                jr = self._run_abort(jentry, jr)
                        ow[key] = _DroppedWarn(e.warn)
                        if oo:
                            oo.pop(key, None)
                        if fo:
                            fo.pop(key, None)
                        if e.proc is not None:
                            self.line_proc = e.proc
                        e.hits += 1
                        if jr is not None:
                            jr.append(e)
                        continue
                    else:  # _SEEN_PLAIN
                        if want:
                            want.pop(source, None)
                        if e.proc is not None:
                            self.line_proc = e.proc
                        e.hits += 1
                        if jr is not None:
                            jr.append(e)
                        continue
            if jr is not None:  # a line read in full: the run ends before it
                jr = self._run_end(jr, jbare, jentry, lines, jstart, n, n0, df0, room, rk, pre, jseg, jr0, jwrap)
            recs = reader.line(n, raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            for rec in recs:
                self.record(rec)
            if first is None:  # seen once: what it does is worked out if it comes again
                if room[0] > 0:
                    seen[raw] = _ONCE
                    room[0] -= len(raw) + 64
            elif first is _ONCE:
                held = reader.held
                if not held:  # a line without an NCCL prefix (none continues it: nothing was held)
                    if recs and recs[-1].kind == "bare" and recs[-1].at.lineno == n:
                        e = self._seen_bare(recs[-1])
                    else:
                        e = _BLANK  # nothing to read: blank, or a launcher's tag alone
                elif len(held) == 1 and held[0].at.lineno == n and \
                        held[0].msg.count("(") <= held[0].msg.count(")"):
                    # one NCCL record no later line can continue: read it now, and remember what it did
                    rec = held[0]
                    reader.end()
                    self.record(rec)
                    e = self._seen(rec)
                elif len(held) == 1 and held[0].at.lineno == n:  # one NCCL record the next line may continue
                    e = _Seen(_SEEN_WRAP)
                    e.pairs = {}
                else:
                    e = _NEVER
                if e is not None:
                    seen[raw] = e
        if jr is not None:  # the block ended first
            self._run_abort(jentry, jr)

    def _run_end(self, jr: List["_Seen"], bare: List[Tuple[int, "_Seen"]], start: "_Seen", lines: List[bytes],
                 jstart: int, n: int, n0: int, df0: int, room: List[int], opened: Set[Tuple[str, str, int, int]],
                 pre: Dict, seg: Optional[VersionLine], r0: Set[Optional[Tuple[str, int]]], wrap: bool) -> None:
        """Line ``n`` is not only counted: the run being recorded (from line ``jstart``) ends before it, kept if
        it is long enough (and nothing waits for the next line), else forgotten."""
        if n - jstart >= RUN_SHORT and not self.want:
            return self._run_close(jr, bare, start, lines, jstart - n0 - 1, n - n0 - 1, df0, room, opened, pre,
                                   seg, r0, wrap)
        return self._run_abort(start, jr)

    def _keeping(self, source: str) -> bool:
        """Whether a benchmark output or RAS report of ``source`` is being kept line by line."""
        b = self.bench_bytes.get(source)
        if b is not None and b < MAX_BENCH_BYTES:
            return True
        b = self.ras_bytes.get(source)
        return b is not None and b < MAX_RAS_BYTES

    def _run_abort(self, start: "_Seen", jr: Optional[List["_Seen"]]) -> None:
        """The run being recorded from the line of ``start`` (its entries so far: ``jr``) is not one to count
        again: forget it."""
        start.tries += 1
        self._budget -= len(jr) + 1 if jr else 1
        self._names = None
        return None

    def _run_close(self, jr: List["_Seen"], bare: List[Tuple[int, "_Seen"]], start: "_Seen", lines: List[bytes],
                   a: int, b: int, df0: int, room: List[int], opened: Set[Tuple[str, str, int, int]],
                   pre: Dict[Tuple[str, str, int, int], Tuple["_DroppedWarn", bool, Tuple[ChainStep, ...]]],
                   seg: Optional[VersionLine], r0: Set[Optional[Tuple[str, int]]], wrap: bool) -> None:
        """The run recorded from ``lines[a]`` (entry ``start``) ends before ``lines[b]``: keep it, with what it
        found open on its threads (``pre``: the WARNs past the bound it read on, as they were) and what it
        leaves open (the WARNs it opened, on the threads of ``opened``; those of ``pre`` it added steps to)."""
        names, self._names = self._names or [], None
        self._budget -= len(jr)
        rest = lines[a + 1:b]
        size = sum(map(len, rest)) + 16 * len(rest) + 64 * len(jr) + 256
        if b - a > RUN_MAX or room[0] < size:
            start.tries += 1
            return None
        room[0] -= size
        run = _Run(rest, jr, self.f.dropped_failures - df0, names, bare)
        ow = self.open_warn
        run.pre = {k: (base, chain) for k, (_, base, chain) in pre.items()}
        run.free = run.keys.difference(run.pre)
        run.closed = [k for k, (w, _, _) in pre.items() if ow.get(k) is not w]
        run.grown = [(k, tuple(w.chain)) for k, (w, _, _) in pre.items() if ow.get(k) is w]
        run.open = [(k, w.base, tuple(w.chain)) for k, w in ow.items() if k in opened]
        run.seg, run.r0, run.wrap = seg, tuple(r0), wrap
        if start.runs is None:
            start.runs = []
        if len(start.runs) < RUN_TRIES:
            start.runs.append(run)
            self._runs.append(run)
        return None

    def _replay(self, runs: List["_Run"], start: "_Seen", lines: List[bytes], i: int, reader: "Reader",
                n: int) -> bool:
        """Whether a run of ``runs`` (those starting with the entry ``start``) is ``lines[i:]`` and was counted
        again now; it is then moved first. Its threads have open what they had when it was recorded (nothing,
        or the same WARNs past the bound), and nothing waits for the next line. A run that keeps missing is
        dropped."""
        ow, oo, fo = self.open_warn, self.open_orphan, self.failed_orphans
        if len(ow) >= MAX_THREADS - RUN_MAX or len(oo) >= MAX_THREADS or len(fo) >= MAX_THREADS:
            return False
        source = reader.source
        for k, run in enumerate(runs):
            if lines[i + 1:i + run.size] != run.rest or not run.free.isdisjoint(ow) or \
                    (oo and not run.keys.isdisjoint(oo)) or (fo and not run.keys.isdisjoint(fo)) or \
                    (run.pre and not _as_before(run, ow)) or (run.wrap and reader.prev is not None) or \
                    (run.r0 and not all(self._rank0_read(source, p) for p in run.r0)):
                run.misses += 1
                continue
            if run.bare and self._keeping(source):  # kept as the output they are part of, as _bulk does
                bench, ras = self.bench, self.ras
                bench_bytes, ras_bytes = self.bench_bytes, self.ras_bytes
                for off, e in run.bare:
                    b = bench_bytes.get(source)
                    if b is not None and b < MAX_BENCH_BYTES:
                        bench[source].append(e.msg)
                        bench_bytes[source] = b + e.size
                    b = ras_bytes.get(source)
                    if b is not None and b < MAX_RAS_BYTES:
                        ras[source].append((n + off, e.msg))
                        ras_bytes[source] = b + e.size
            run.times += 1
            if run.df:
                f = self.f
                f.dropped_failures += run.df
                for name in run.names:
                    add_capped(f.dropped_results, name)
            if run.proc is not None:
                self.line_proc = run.proc
            if run.seg is not None:
                self.segment[source] = run.seg
            if run.pre:
                for key in run.closed:  # the WARNs it found open and closed
                    del ow[key]
                for key, chain in run.grown:  # those it added steps to
                    ow[key].chain[:] = chain
            for key, base, chain in run.open:  # the WARNs it left open, in the order it opened them
                w = ow[key] = _DroppedWarn(base)
                w.chain.extend(chain)
            if k:
                runs.insert(0, runs.pop(k))
            return True
        for run in [r for r in runs if r.misses > 16 + 4 * r.times]:
            runs.remove(run)
            start.tries += 1
        return False

    def _wrapped_pair(self, n: int, raw: bytes, nxt: bytes, e: "_Seen", reader: "Reader",
                      seen: Dict[bytes, "_Seen"], room: List[int]) -> Optional["_Seen"]:
        """Lines ``n`` (``raw``, a :data:`_SEEN_WRAP` line; the reader holds nothing) and ``n + 1`` (``nxt``).
        The entry they were counted in, when the two were read before as one record (the second the rest of the
        first); else (``None``) both are read in full, and what reading them again does is remembered where the
        second completed the first."""
        pe = e.pairs.get(nxt) if e.pairs is not None else None
        if pe is not None and (pe.kind == _SEEN_INFO or pe.kind == _SEEN_COUNT):
            key, source = pe.key, reader.source
            fo = self.failed_orphans
            if not ((fo and key in fo) or (pe.rank0 and not self._rank0_read(source, pe.proc))):
                if key in self.open_warn:
                    self.close_warn(key)
                self.open_orphan.pop(key, None)
                if pe.version is not None:
                    self.segment[source] = pe.version
                if pe.proc is not None:
                    self.line_proc = pe.proc
                pe.hits += 1
                return pe
        for rec in reader.line(n, raw.decode("utf-8", errors="replace").rstrip("\r\n")):
            self.record(rec)
        self._bulk(n, (nxt,), reader, seen, room)
        held = reader.held
        if pe is None and len(held) == 1 and held[0].at.lineno == n and reader.prev is held[0] and \
                held[0].msg.count("(") <= held[0].msg.count(")") and not self.want and room[0] > 0:
            # the next line completed the record, and no later line can continue it: read it now
            rec = held[0]
            reader.end()
            self.record(rec)
            pe = self._seen(rec)
            if pe is not None and e.pairs is not None:
                e.pairs[nxt] = pe
                room[0] -= len(nxt) + 64
        return None

    def _orphan_step(self, key: Tuple[str, str, int, int], e: "_Seen") -> bool:
        """A call-chain step of a thread with no WARN open, as :meth:`info` reads it, when the chain it belongs to
        is past the bound on the chains kept (its steps are seen by nobody); ``False`` when it must be read."""
        oc = self.open_orphan.get(key)
        if oc is None:
            if len(self.f.orphan_chains) < self.limits.get("orphan_chains", self.keep):
                return False
            self._bound_threads()
            oc = self.open_orphan[key] = _DroppedChain([], e.step.at)
            self.f.counts["orphan_chains"] = self.f.counts.get("orphan_chains", 0) + 1
            if e.step.code in ERROR_RESULTS:
                lst = self.failed_orphans.setdefault(key, [])
                if len(lst) < MAX_STEPS:
                    lst.append(oc)
        elif type(oc) is not _DroppedChain and len(oc.steps) < MAX_STEPS:
            return False  # a chain kept: its steps are read
        if len(oc.steps) < MAX_STEPS:
            oc.steps.append(e.step)
        return True

    def _seen_bare(self, rec: Rec) -> Optional["_Seen"]:
        """:meth:`_seen` for a line without an NCCL prefix: only a plain line, or an error line past its bound,
        that asks nothing of the next line, is only counted."""
        msg = rec.msg
        if "Last error:" in msg:
            return _NEVER
        app = "Watchdog" in msg or "NCCL error in" in msg or "Test " in msg or "NCCL Error " in msg
        if not app and "failure " in msg and not app_noop(msg):
            return _NEVER  # nccl-tests' first failure lines: read every time, as app_lines reads them
        watchdog = None
        if app and not app_noop(msg):
            watchdog = watchdog_key(rec)
            if watchdog is None or watchdog not in self.watchdog_keys:
                return _NEVER  # PyTorch and nccl-tests lines: read every time, but a watchdog message seen before
        version = None
        if not app:  # bare() reads these only from lines that are not the application's
            if "NCCL WARN " in msg or "NCCL DIAG" in msg or "NCCL INFO " in msg:
                return _NEVER
            if (" via " in msg and _FRAGMENT.search(msg)) or _UNPREFIXED.search(msg) or _QUOTED_WARN.search(msg):
                return _NEVER
            if _VERSION.search(msg):
                v = self.segment.get(rec.at.source)
                if v is None or v.at is not rec.at or id(v) in self.kept_versions:
                    return None if v is not None and v.at is rec.at else _NEVER
                version = v  # a version line past the bound on those kept: seen by nobody
        kind = error_kind(msg)
        count = None
        join = False
        if kind is not None:
            count = "kernel" if kind == "kernel" else "errors"
            lst = getattr(self.f, count)
            if len(lst) < self.limits.get(count, self.keep) or (lst and lst[-1].at is rec.at):
                return None
            # past the bound, the line after one that ends in ':' is joined to a line kept nowhere
            join = bool(msg.endswith(":") or _TESTS_CUDA.search(msg) and "'" not in msg)
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

    def _rank0_read(self, source: str, proc: Optional[Tuple[str, int]]) -> bool:
        """Whether :meth:`rank_fact` for rank 0 of process ``proc`` would change nothing now."""
        v = self.segment.get(source)
        if v is None or id(v) not in self.kept_versions:  # none, or one past the bound: kept nowhere
            return True
        if not (v.at.host is None or proc is None or (v.at.host, v.at.pid) == proc):
            return True
        if not v.rank0 or not v.world:
            return False
        return not (v.at.host is None and proc is not None and id(v) not in self.version_owner)

    def _seen(self, rec: Rec) -> Optional["_Seen"]:
        """What reading ``rec`` again would do, if only counting (its record lists are full); ``None`` when it
        would keep a record now (ask again later), :data:`_NEVER` when it reads more than counts."""
        msg = rec.msg
        if "NCCL Error " in msg or "Watchdog" in msg or "NCCL error in" in msg or "Test " in msg or \
                ("failure " in msg and not app_noop(msg)):
            return _NEVER  # application lines: read every time
        at = rec.at
        p = self.procs.get((at.host, at.pid)) if at.host is not None and at.pid is not None else None
        proc = (p.host, p.pid) if p is not None else None
        key = _thread(at)
        f = self.f
        if rec.kind == "trace":
            return _Seen(_SEEN_PLAIN, key, proc)
        if rec.kind == "warn":
            if len(f.warns) < self.limits.get("warns", self.keep) or (f.warns and f.warns[-1].at is at):
                return None
            e = _Seen(_SEEN_WARN, key, proc, count="warns")
            e.warn = fails(Warn(msg, at, rec.text, rec.file, rec.fline, rec.func, rec.timestamp))
            return e
        if rec.kind != "info":
            return _NEVER
        m = _CHAIN.search(msg) if " -> " in msg else None
        if m and " via " not in msg:
            e = _Seen(_SEEN_CHAIN, key, proc)
            e.step = ChainStep(m.group("file"), int(m.group("line")), int(m.group("code")), at, rec.text,
                               m.group("thr"))
            return e
        row, m = fact_row(msg)
        if row is None:
            return _Seen(_SEEN_COUNT, key, proc)
        if not row.again:
            return _NEVER
        if row.keeps is None:  # a channel line: its kept lines, then its tallies
            if len(f.channels) < self.limits.get("channels", self.keep) or (f.channels and f.channels[-1].at is at):
                return None
            g = m.groupdict()
            v = parse_via(g["via"])
            category = category_of(str(v["transport"]), v.get("net"), bool(v.get("gdrdma")))
            st = f.channel_stats.get(category) or f.channel_stats.get("NET/other")
            if st is None or len(st.first) < 4 or st.first[-1].at is at:
                return None
            dst = to_int(g.get("dst"))
            pair = self.pairs.get((int(g["src"]), dst)) if dst is not None else None
            return _Seen(_SEEN_COUNT, key, proc, count="channels", stats=st, pair=pair)
        lst = getattr(f, row.keeps)
        if len(lst) < self.limits.get(row.keeps, self.keep) or (lst and lst[-1].at is at):
            return None
        e = _Seen(_SEEN_COUNT, key, proc, count=row.keeps)
        if row.rank is not None and row.rank(m) == 0:
            e.kind, e.rank0 = _SEEN_INFO, True
        if row.name == "version":
            e.kind, e.version = _SEEN_INFO, self.segment.get(at.source)  # past the bound: kept nowhere
        return e

    def end_file(self, source: str) -> None:
        """The log ended: what its threads left open is closed now (nothing later can continue it), so each
        file is parsed on its own and files parsed apart merge into the same facts (:meth:`merge`)."""
        for key in [k for k in self.open_warn if k[0] == source]:
            self.close_warn(key)
        for d in (self.open_orphan, self.failed_orphans):
            for key in [k for k in d if k[0] == source]:
                del d[key]
        self.want.pop(source, None)
        self.watchdog_keys = {k for k in self.watchdog_keys if k[0] != source}
        self.read_kept(source)

    # ---- files parsed apart

    _KEPT = ("rings", "versions", "networks", "nets", "bootstrap", "gdr", "plugins", "comms", "inits", "channels",
             "connected", "channel_counts", "nvls", "env", "warns", "orphan_chains", "watchdogs", "app_errors",
             "notes", "errors", "kernel")
    _PROC_CAPS = (("devs", 1024), ("ranks", 1024), ("versions", MAX_SMALL), ("networks", MAX_SMALL),
                  ("launcher_ranks", 1024), ("sources", MAX_SMALL), ("init_started", 1024), ("init_completed", 1024))

    def mergeable(self, o: "Parser") -> bool:
        """Whether :meth:`merge` gives exactly what reading ``o``'s files after this parser's would: not where a
        bound on processes or transport categories would have changed how the later lines were read."""
        if set(o.f.sources) & set(self.f.sources) or o.open_warn or o.open_orphan or o.want:
            return False
        procs = len(self.procs) + sum(1 for k in o.procs if k not in self.procs)
        cats = len(self.f.channel_stats) + sum(1 for c in o.f.channel_stats if c not in self.f.channel_stats)
        return procs < MAX_PROCS and cats <= MAX_CATEGORIES and "NET/other" not in o.f.channel_stats

    def merge(self, o: "Parser") -> None:
        """Take in what parser ``o`` read from files of its own (each ended), as if this parser had read them
        after its own. Every fact is a count, a list of first records, or a list of first distinct values under
        a bound, so the merge gives the facts of one parser reading the files in turn (:meth:`mergeable` says
        where not). WARNs ``o`` kept past this parser's bound are counted as dropped, as they would have been."""
        f, of = self.f, o.f
        f.sources += of.sources
        f.lines += of.lines
        f.nccl_lines += of.nccl_lines
        f.unprefixed += of.unprefixed
        for k, v in of.counts.items():
            f.counts[k] = f.counts.get(k, 0) + v
        for name in self._KEPT:
            mine, theirs = getattr(f, name), getattr(of, name)
            room = max(self.keep - len(mine), 0)
            mine.extend(theirs[:room])
            if name == "warns":
                self.kept_warns.update(id(w) for w in theirs[:room])
                for w in theirs[room:]:  # past the bound: classified and counted, as close_warn does
                    classify(w)
                    if w.failure:
                        f.dropped_failures += 1
                        for st in w.chain:
                            if st.code in ERROR_RESULTS:
                                add_capped(f.dropped_results, st.code_name)
        f.dropped_failures += of.dropped_failures
        for r in of.dropped_results:
            add_capped(f.dropped_results, r)
        for v in of.version_names:
            add_capped(f.version_names, v)
        for cat, ost in of.channel_stats.items():
            st = f.channel_stats.get(cat)
            if st is None:
                f.channel_stats[cat] = ost
                continue
            st.lines += ost.lines
            st.first = (st.first + ost.first)[:4]
            for attr, cap in (("hosts", MAX_SMALL), ("pairs", MAX_SMALL), ("nets", 16)):
                lst = getattr(st, attr)
                for x in getattr(ost, attr):
                    add_capped(lst, x, cap)
        for key, op in o.procs.items():
            p = self.procs.get(key)
            if p is None:
                self.procs[key] = op
                continue
            for attr, cap in self._PROC_CAPS:
                lst = getattr(p, attr)
                for x in getattr(op, attr):
                    add_capped(lst, x, cap)
        for key, opt in o.pairs.items():
            pt = self.pairs.get(key)
            if pt is None:
                if len(self.pairs) < MAX_PAIRS:
                    self.pairs[key] = opt
                continue
            for attr, cap in (("categories", 16), ("vias", 16), ("channels", 256)):
                lst = getattr(pt, attr)
                for x in getattr(opt, attr):
                    add_capped(lst, x, cap)
            pt.lines += opt.lines
        for rank, hosts in o.rank_hosts.items():
            mine_h = self.rank_hosts.get(rank)
            if mine_h is None:
                if len(self.rank_hosts) >= MAX_PAIRS:
                    continue
                mine_h = self.rank_hosts[rank] = []
            for h in hosts:
                add_capped(mine_h, h, 8)
        for store, sizes, ostore, osizes, names in (
                (self.bench, self.bench_bytes, o.bench, o.bench_bytes, ("nccl_tests", "nccl_tests_no_result",
                                                                        "perftests")),
                (self.ras, self.ras_bytes, o.ras, o.ras_bytes, ("ras",))):
            refused: Set[str] = set()  # files past the bound on files with a benchmark output (RAS report)
            for src, lines in ostore.items():
                if len(store) < MAX_BENCH_FILES:
                    store[src], sizes[src] = lines, osizes[src]
                else:
                    refused.add(src)
            for name in names:
                getattr(f, name).extend(r for r in getattr(of, name) if r.source not in refused)
        for v, last in o.pending_versions:
            if len(self.pending_versions) >= self.keep:
                break
            self.pending_versions.append((v, last))
            if id(v) in o.version_owner:
                self.version_owner[id(v)] = o.version_owner[id(v)]
        self.last_seen = self.last_proc = None

    def rooms(self) -> Dict[str, int]:
        """How many more records each list takes (and, as ``pending_versions``, bare version lines)."""
        out = {name: max(self.keep - len(getattr(self.f, name)), 0) for name in self._KEPT}
        out["pending_versions"] = max(self.keep - len(self.pending_versions), 0)
        return out

    def __getstate__(self) -> Dict[str, Any]:
        """For a parser sent between processes: the owners of bare version lines by position, not by ``id()``."""
        d = dict(self.__dict__)
        d["version_owner"] = {i: self.version_owner[id(v)] for i, (v, _) in enumerate(self.pending_versions)
                              if id(v) in self.version_owner}
        d["kept_warns"] = None
        d["kept_versions"] = None
        d["want"] = {}
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        self.__dict__.update(d)
        self.version_owner = {id(self.pending_versions[i][0]): o for i, o in d["version_owner"].items()}
        self.kept_versions = {id(v) for v in self.f.versions} | {id(v) for v, _ in self.pending_versions}
        self.kept_warns = {id(w) for w in self.f.warns}

    def needs_every_line(self, source: str) -> bool:
        """Whether the next lines of ``source`` must all be read, whatever they say: a line waits for the one
        after it, or a benchmark output or RAS report started and is kept line by line up to its bound."""
        if source in self.want:
            return True
        b = self.bench_bytes.get(source)
        if b is not None and b < MAX_BENCH_BYTES:
            return True
        r = self.ras_bytes.get(source)
        return r is not None and r < MAX_RAS_BYTES

    # ---- records

    @staticmethod
    def _keep_from(store: Dict[str, list], sizes: Dict[str, int], start: "re.Pattern[str]", cap: int,
                   rec: Rec, item) -> None:
        """Keep ``item`` for ``rec``'s file once a line matching ``start`` was seen there, up to ``cap`` bytes."""
        src = rec.at.source
        lines = store.get(src)
        if lines is None:
            if len(store) >= MAX_BENCH_FILES or not start.search(rec.msg):
                return
            lines = store[src] = []
            sizes[src] = 0
        if sizes[src] < cap:
            lines.append(item)
            sizes[src] += len(rec.msg[:4096]) + 1

    def bench_line(self, rec: Rec) -> None:
        self._keep_from(self.bench, self.bench_bytes, _BENCH_START, MAX_BENCH_BYTES, rec, rec.msg[:4096])

    def ras_line(self, rec: Rec) -> None:
        self._keep_from(self.ras, self.ras_bytes, _RAS_START, MAX_RAS_BYTES, rec, (rec.at.lineno, rec.msg[:4096]))

    def bare(self, rec: Rec, last_proc: Optional[Tuple[str, int]]) -> None:
        self.bench_line(rec)
        self.ras_line(rec)
        then = self.want.pop(rec.at.source, None)
        if then is not None:
            then(rec)
        self.error_line(rec)
        if "Last error:" in rec.msg:
            m = _LAST_ERROR.search(rec.msg)
            if m:
                if m.group("text").strip():
                    self.last_error(rec, m.group("text"))
                else:
                    self.want[rec.at.source] = lambda nxt: self.last_error(nxt, nxt.msg)
                return
        if "Watchdog" in rec.msg or "NCCL error in" in rec.msg or "Test " in rec.msg or "NCCL Error " in rec.msg:
            self.app_lines(rec)  # PyTorch and nccl-tests lines may quote NCCL's words: theirs first
            return
        m = _VERSION.search(rec.msg)
        if m and "NCCL error in" not in rec.msg:
            v = VersionLine(m.group("v"), m.group("cuda"), rec.at, rec.text, inferred=True)
            self.version(v)
            if len(self.pending_versions) < self.limits.get("pending_versions", self.keep):
                self.pending_versions.append((v, last_proc))
                self.kept_versions.add(id(v))
            self.f.nccl_lines += 1
            return
        if "NCCL WARN " in rec.msg:
            mw = _BARE_WARN.search(rec.msg)
            if mw:
                self.f.nccl_lines += 1
                self.f.unprefixed += 1
                self.warn(Rec("warn", mw.group("msg").strip(), rec.at, rec.text, mw.group("file"),
                               to_int(mw.group("fline")), launcher_rank=rec.launcher_rank))
                return
        if "NCCL DIAG" in rec.msg:
            md = _DIAG.search(rec.msg)
            if md:  # NCCL 2.31's NCCL_RUN_DIAGNOSTICS report, printed by rank 0
                self.f.nccl_lines += 1
                self._keep("notes", Note(f"diag_{md.group('tag').lower()}", rec.at, rec.msg[md.start():].strip()))
                return
        if "NCCL INFO " in rec.msg:
            mi = _BARE_INFO.search(rec.msg)
            if mi:  # its prefix was cut (or anonymised away): read as a line of an unknown process
                self.f.nccl_lines += 1
                self.f.unprefixed += 1
                self.info(Rec("info", mi.group("msg").strip(), rec.at, rec.text, launcher_rank=rec.launcher_rank),
                          None)
                return
        if " via " in rec.msg and _FRAGMENT.search(rec.msg):
            self.f.nccl_lines += 1
            self.f.unprefixed += 1
            self.info_fact(rec.msg, rec.at, rec.text, None)
            return
        if _UNPREFIXED.search(rec.msg):
            # A message NCCL alone prints, whose prefix was lost: read with an unknown process.
            self.f.nccl_lines += 1
            self.f.unprefixed += 1
            self.info_fact(rec.msg, rec.at, rec.text, None)
            return
        mq = _QUOTED_WARN.search(rec.msg) if then is None else None
        if mq:  # read as the WARN it was (a 'Last error:' line's next line was read above)
            self.last_error(rec, rec.msg[mq.start():])
            return
        self.app_lines(rec)

    def last_error(self, rec: Rec, text: str) -> None:
        """NCCL's last error as PyTorch or nccl-tests quote it: read as the WARN it was."""
        text = _TAG.sub("", text.strip()).strip().strip("'\"").strip()
        mw = _BARE_WARN.search(text) if "NCCL WARN " in text else None
        if mw:
            text = mw.group("msg").strip()
            self.f.unprefixed += 1
        if not text:
            return
        self.f.nccl_lines += 1
        self.warn(Rec("warn", text, rec.at, rec.text, launcher_rank=rec.launcher_rank), origin="last-error")

    def error_line(self, rec: Rec) -> None:
        """Keep a plain line that reports an error, or a kernel line; one ending in ':' takes the next line."""
        msg = rec.msg
        kind = error_kind(msg)
        if kind is None:
            return
        kernel = kind == "kernel"
        el = ErrorLine(msg[:MAX_ERROR_TEXT], rec.at, kind)
        self._keep("kernel" if kernel else "errors", el)
        if msg.endswith(":") or _TESTS_CUDA.search(msg) and "'" not in msg:
            def join(nxt: Rec) -> None:
                el.text = (el.text + " " + nxt.msg.strip())[:MAX_ERROR_TEXT]
            self.want[rec.at.source] = join

    def version(self, v: VersionLine) -> None:
        add_capped(self.f.version_names, v.version)
        self.segment[v.at.source] = v

    def rank_fact(self, rank: int, nranks: int, at: Loc, p: Optional[Proc]) -> None:
        """A line that gives a rank and its world: marks the open version line as rank 0's."""
        if rank != 0:
            return
        v = self.segment.get(at.source)
        if v is not None and (v.at.host is None or p is None or v.at.proc == p.name):
            v.rank0 = True
            v.world = v.world or nranks
            if v.at.host is None and p is not None:
                self.version_owner.setdefault(id(v), (p.host, p.pid))

    def app_lines(self, rec: Rec) -> None:
        """PyTorch and nccl-tests lines (bare or interleaved after an NCCL prefix)."""
        msg = rec.msg
        if "NCCL Error " in msg:
            m = _TORCH_OLD.search(msg)
            if m:
                self._keep("app_errors", AppError("torch", m.group("msg"), rec.at, rec.text))
                return
        if "Watchdog" not in msg and "NCCL error in" not in msg and "Test " not in msg and "failure " not in msg:
            return
        m = _WATCHDOG.search(msg)
        if m is None and "Watchdog caught collective operation timeout" in msg and rec.kind == "bare":
            self.continue_watchdog(rec, 3)
            return
        if m:
            fields = {fm.group("k"): fm.group("v") for fm in _WD_FIELD.finditer(m.group("body"))}
            rm = _WD_RANK.search(msg)
            rank = to_int(rm.group("rank") or rm.group("rank2")) if rm else None
            if rank is None and rec.launcher_rank is not None:
                rank = rec.launcher_rank
            w = Watchdog(rec.at, rec.text, rank, to_int(fields.get("SeqNum")), fields.get("OpType"),
                         to_int(fields.get("NumelIn")), to_int(fields.get("NumelOut")), to_int(fields.get("Timeout(ms)")),
                         to_int(m.group("ran")))
            key = (w.at.source, w.rank, w.seq, w.op_type)
            if key not in self.watchdog_keys:
                if len(self.watchdog_keys) < self.keep:
                    self.watchdog_keys.add(key)
                self._keep("watchdogs", w)
            return
        m = _TORCH_ERR.search(msg)
        if m:
            self._keep("app_errors", AppError("torch", m.group("msg").strip(), rec.at, rec.text, m.group("where")))
            if m.group("ver"):  # its name counts whatever the bound on the lines kept
                add_capped(self.f.version_names, m.group("ver"))
                if len(self.pending_versions) < self.limits.get("pending_versions", self.keep):
                    v = VersionLine(m.group("ver"), None, rec.at, rec.text, inferred=True, origin="torch")
                    self.pending_versions.append((v, None))
            return
        m = _TESTS_FAIL.search(msg)
        if m:
            # nccl-tests prints '<ncclGetErrorString> / <ncclGetLastError>'.
            err, _, last = m.group("msg").partition(" / ")
            message = err.strip() + (f" (last error: {last.strip()})" if last.strip() else "")
            self._keep("app_errors", AppError("nccl-tests", message, _on(rec.at, m.group("host")), rec.text,
                                              m.group("where") or m.group("old")))
            return
        m = _TESTS_CUDA.search(msg)
        if m:
            def cuda(message: str, at: Loc = _on(rec.at, m.group("host")), text: str = rec.text,
                     where: str = m.group("where") or m.group("old")) -> None:
                self._keep("app_errors", AppError("nccl-tests-cuda", message.strip().strip("'").strip() or
                                                  "CUDA failure", at, text, where))
            if m.group("msg") is not None:
                cuda(m.group("msg"))
            else:
                self.want[rec.at.source] = lambda nxt: cuda(nxt.msg)
            return
        m = _TESTS_TIMEOUT.search(msg)
        if m:
            self._keep("app_errors", AppError("nccl-tests-timeout", f"test timeout ({m.group('s')}s)", rec.at,
                                              rec.text, m.group("where")))

    def continue_watchdog(self, rec: Rec, more: int) -> None:
        """A watchdog message wrapped over lines (as pasted): read it once the next lines complete it."""
        def then(nxt: Rec) -> None:
            joined = Rec(rec.kind, f"{rec.msg} {nxt.msg.strip()}", rec.at, f"{rec.text} {nxt.text.strip()}",
                          launcher_rank=rec.launcher_rank)
            if _WATCHDOG.search(joined.msg) or more <= 1:
                self.app_lines(joined)
            else:
                self.continue_watchdog(joined, more - 1)
        self.want[rec.at.source] = then

    def close_warn(self, key: Tuple[str, str, int, int]) -> None:
        """The thread moved on: a WARN past ``keep`` is classified now and only counted."""
        w = self.open_warn.pop(key, None)
        if w is None:
            return
        if type(w) is _DroppedWarn:
            failure = w.base or any(s.code in ERROR_RESULTS for s in w.chain)
        elif id(w) in self.kept_warns:
            return
        else:
            failure = w.failure = fails(w)
        if failure:
            self.f.dropped_failures += 1
            for s in w.chain:
                if s.code in ERROR_RESULTS:
                    add_capped(self.f.dropped_results, s.code_name)
                    if self._names is not None:  # a run being recorded (_bulk)
                        self._names.append(s.code_name)

    def _bound_threads(self) -> None:
        """Per-thread state is kept for at most MAX_THREADS threads: a log with a new thread id on every line
        closes what is open (the WARNs are classified and counted) instead of growing."""
        if len(self.open_warn) >= MAX_THREADS:
            for key in list(self.open_warn):
                self.close_warn(key)
        if len(self.open_orphan) >= MAX_THREADS:
            self.open_orphan.clear()
        if len(self.failed_orphans) >= MAX_THREADS:
            self.failed_orphans.clear()

    def warn(self, rec: Rec, origin: str = "warn") -> None:
        w = Warn(rec.msg, rec.at, rec.text, rec.file, rec.fline, rec.func, rec.timestamp, origin=origin)
        key = _thread(rec.at)
        self.close_warn(key)
        self._bound_threads()
        self.open_warn[key] = w
        if self._keep("warns", w):
            self.kept_warns.add(id(w))
        self.open_orphan.pop(key, None)
        self.failed_orphans.pop(key, None)
        self.app_lines(rec)

    def info(self, rec: Rec, p: Optional[Proc]) -> None:
        msg, at, text = rec.msg, rec.at, rec.text
        key = _thread(at)
        m = _CHAIN.search(msg) if " -> " in msg else None
        if m and " via " not in msg:
            step = ChainStep(m.group("file"), int(m.group("line")), int(m.group("code")), at, text, m.group("thr"))
            w = self.open_warn.get(key)
            if w is not None:
                if len(w.chain) < MAX_STEPS:
                    w.chain.append(step)
            else:
                oc = self.open_orphan.get(key)
                if oc is None:
                    self._bound_threads()
                    oc = self.open_orphan[key] = OrphanChain([], at)
                    self._keep("orphan_chains", oc)
                    if step.code in ERROR_RESULTS:
                        lst = self.failed_orphans.setdefault(key, [])
                        if len(lst) < MAX_STEPS:
                            lst.append(oc)
                if len(oc.steps) < MAX_STEPS:
                    oc.steps.append(step)
            return
        self.close_warn(key)
        self.open_orphan.pop(key, None)
        if key in self.failed_orphans and _PROGRESS.search(msg):
            for oc in self.failed_orphans.pop(key):
                oc.benign = True
                oc.resumed = at.cite(text)
        self.info_fact(msg, at, text, p)
        self.app_lines(rec)

    def info_fact(self, msg: str, at: Loc, text: str, p: Optional[Proc]) -> None:
        """The fact of an NCCL INFO message: the first row of :data:`FACTS` that reads it."""
        row, m = fact_row(msg)
        if row is not None:
            row.read(self, m, at, text, p)

    # ---- the handlers of FACTS' rows: (parser, match, where, text, process)

    def fact_channel(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self.channel(m, at, text, p)

    def fact_ring(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        order = [int(x) for x in m.group("order").split()][:MAX_PAIRS]
        ro = RingOrder(int(m.group("ch")), order, at, text, to_int(m.group("n")))
        self._keep("rings", ro)
        if p is not None:
            add_capped(p.ranks, 0, 1024)  # only rank 0 prints the ring order
        self.rank_fact(0, len(order), at, p)

    def fact_version(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        v = VersionLine(m.group("v"), m.group("cuda"), at, text)
        if self._keep("versions", v):
            self.kept_versions.add(id(v))
        self.version(v)
        if p is not None:
            add_capped(p.versions, m.group("v"))

    def fact_network(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("networks", NetworkChoice(m.group("name"), at, text))
        if p is not None:
            add_capped(p.networks, m.group("name"))

    def fact_gdr(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("gdr", GdrLine(m.group("state") == "Enabled", m.group("hca"), at, text, m.group("net"),
                                  m.group("gpu"), m.group("name"), m.group("reason")))

    def fact_net_nodev(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("notes", Note(f"{m.group('net').lower()}_no_device", at, text))

    def fact_net_using(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("nets", _net_devices(m.group("net"), m.group("body"), at, text))

    def fact_old_ib_ports(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        devs = [NetDevice(None, d.group("name"), int(d.group("port")), "IB")
                for d in _OLD_IB_PORT.finditer(m.group("body"))]
        self._keep("nets", NetDevices("IB", devs, at, text))

    def fact_bootstrap(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        ifs = [NetDevice(to_int(s.group("idx")), s.group("name"), address=s.group("addr"))
               for s in _SOCK_IF.finditer(m.group("body"))]
        self._keep("bootstrap", Bootstrap(ifs, at, text))

    def fact_plugin_path(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("plugins", PluginLine("path", m.group("v"), at, text))

    def fact_p2p_plugin(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("plugins", PluginLine("p2p_plugin", m.group("v"), at, text))

    def fact_loaded_plugin(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        k = "loaded_collnet" if m.group("kind") != "net" else "loaded_net"
        self._keep("plugins", PluginLine(k, m.group("v"), at, text))

    def fact_net_plugin(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        v = m.group("v")
        k = "load_failed" if "returned" in v or "Failed" in v else ("none_found" if "No plugin found" in v else "other")
        self._keep("plugins", PluginLine(k, v, at, text))

    def fact_init(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        ev = InitEvent(m.group("phase"), int(m.group("rank")), int(m.group("nranks")), at, text, m.group("comm"),
                       to_int(m.group("cdev")), to_int(m.group("nvml")), m.group("bus"), m.group("cid"))
        self._keep("inits", ev)
        self.rank_host(ev.rank, at)
        self.rank_fact(ev.rank, ev.nranks, at, p)
        if p is not None:
            add_capped(p.ranks, ev.rank, 1024)
            add_capped(p.init_started if ev.phase == "START" else p.init_completed, ev.rank, 1024)

    def fact_comm(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self.comm(CommInfo(m.group("comm"), int(m.group("rank")), int(m.group("nranks")), at, text,
                           int(m.group("nnodes")), int(m.group("lranks")), int(m.group("lrank")),
                           to_int(m.group("mnnvl"))), p)

    def fact_comm_old(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self.comm(CommInfo(m.group("comm"), int(m.group("rank")), int(m.group("nranks")), at, text), p)

    def fact_connected(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("connected", Connected(m.group("what"), at, text, to_int(m.group("pxn")), to_int(m.group("gdr"))))

    def fact_counts(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("channel_counts", ChannelCounts(int(m.group("coll")), int(m.group("p2p")), int(m.group("ppp")),
                                                   at, text, to_int(m.group("collnet")), to_int(m.group("nvls"))))

    def fact_nvls_comm(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("nvls", NvlsLine("comm", at, text, int(m.group("head")), int(m.group("nheads"))))

    def fact_nvls_mc(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("nvls", NvlsLine("multicast", at, text, available=not m.group("not")))

    def fact_env(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        value = m.group("value")
        if re.fullmatch(r"-?\d+\.", value):
            value = value[:-1]
        self._keep("env", EnvEcho(m.group("name"), value, at, text))

    def fact_note(self, kind: str, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("notes", Note(kind, at, text))

    def comm(self, c: CommInfo, p: Optional[Proc]) -> None:
        self._keep("comms", c)
        self.rank_host(c.rank, c.at)
        self.rank_fact(c.rank, c.nranks, c.at, p)
        if p is not None:
            add_capped(p.ranks, c.rank, 1024)

    def rank_host(self, rank: int, at: Loc) -> None:
        if not at.host:
            return
        hosts = self.rank_hosts.get(rank)
        if hosts is None:
            if len(self.rank_hosts) >= MAX_PAIRS:
                return
            hosts = self.rank_hosts[rank] = []
        add_capped(hosts, at.host, 8)

    def channel(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        g = m.groupdict()
        if g.get("label") is None:  # a fragment without its 'Channel NN :' head
            g = dict(g, label="Channel", ch="-1")
        v = parse_via(g["via"])
        transport = str(v["transport"])
        gdr = bool(v.get("gdrdma"))
        dst = to_int(g.get("dst"))
        category = category_of(transport, v.get("net"), gdr)
        st = self.f.channel_stats.get(category)
        if st is None and len(self.f.channel_stats) >= MAX_CATEGORIES:
            category = "NET/other"
            st = self.f.channel_stats.get(category)
        if st is None:
            st = self.f.channel_stats[category] = CategoryStats(category)
        st.lines += 1
        self.f.counts["channels"] = self.f.counts.get("channels", 0) + 1
        room = self.limits.get("channels", self.keep)
        if len(self.f.channels) < room or len(st.first) < 4:
            ch = self.channel_line(g, v, transport, gdr, dst, category, at, text)
            if len(self.f.channels) < room:
                self.f.channels.append(ch)
            if len(st.first) < 4:
                st.first.append(ch)
        src = int(g["src"])
        if at.host:
            add_capped(st.hosts, at.host)
        if dst is not None:
            add_capped(st.pairs, f"{src}->{dst}")
        net = v.get("net")
        if net:
            add_capped(st.nets, net, 16)
        direction = g.get("dir")
        if direction is not None or g["label"] == "Channel":
            mine = dst if direction == "receive" and dst is not None else src
            if p is not None:
                add_capped(p.ranks, mine, 1024)
            self.rank_host(mine, at)
        if dst is not None and transport in ("P2P", "SHM") and v.get("mode") != "MNNVL":
            # P2P (but for multi-node NVLink) and shared memory connect two GPUs of one host: the peer's host too
            self.rank_host(src if direction == "receive" else dst, at)
        if dst is not None:
            key = (src, dst)
            pt = self.pairs.get(key)
            if pt is None:
                if len(self.pairs) >= MAX_PAIRS:
                    return
                pt = self.pairs[key] = PairTransport(src, dst, [], [], [], [], [], 0)
            add_capped(pt.categories, category, 16)
            add_capped(pt.vias, str(v["via"]), 16)
            add_capped(pt.channels, int(g["ch"]), 256)
            pt.lines += 1

    @staticmethod
    def channel_line(g: Dict[str, Optional[str]], v: Dict[str, object], transport: str, gdr: bool,
                     dst: Optional[int], category: str, at: Loc, text: str) -> Channel:
        return Channel(
            channel=int(g["ch"]), src=int(g["src"]), dst=dst, transport=transport, via=str(v["via"]),
            category=category, at=at, text=text, label=g["label"],
            conn_index=to_int(g.get("conn")), src_dev=g.get("sdev"), dst_dev=g.get("ddev"), direction=g.get("dir"),
            mode=v.get("mode"), read=bool(v.get("read")), ce=bool(v.get("ce")), net=v.get("net"),
            net_dev=v.get("net_dev"), proxy_rank=v.get("proxy_rank"), gdrdma=gdr, pci=bool(v.get("pci")),
            shared=bool(v.get("shared")), relay=v.get("relay"),
        )

    # ---- end

    def read_kept(self, src: str) -> None:
        """Read the benchmark output and RAS reports kept from file ``src`` (once it ended), and let their lines
        go: the store keeps its place (the bound counts files), not the lines."""
        f = self.f
        lines = self.bench.get(src)
        if lines:
            from nccldiag.benchmarks import nccltests, perftest

            text = "\n".join(lines)
            self.bench[src] = []
            run = nccltests.parse_nccl_tests(text)
            if run is not None:
                run.source = src
                if run.rows or run.avg_busbw is not None or run.out_of_bounds is not None:
                    f.nccl_tests.append(run)
                else:
                    f.nccl_tests_no_result.append(run)
            else:
                pt = perftest.parse_perftest(text)
                if pt.rows or pt.latency_rows:
                    pt.source = src
                    f.perftests.append(pt)
        pairs = self.ras.get(src)
        if pairs:
            from nccldiag.nccl import ras

            self.ras[src] = []
            f.ras.extend(ras.parse_lines(pairs, src))

    def finish(self) -> NcclLogFacts:
        f = self.f
        for src in list(self.bench) + list(self.ras):
            self.read_kept(src)
        for key in list(self.open_warn):
            self.close_warn(key)
        f.dropped_results.sort()  # in the order of names: the same whichever file closed its WARNs first
        for w in f.warns:
            classify(w)
        procs_by_source: Dict[str, List[Proc]] = {}
        for p in self.procs.values():
            for s in p.sources:
                procs_by_source.setdefault(s, []).append(p)
        for v, last in self.pending_versions:
            owners = procs_by_source.get(v.at.source, [])
            target: Optional[Proc] = None
            if id(v) in self.version_owner:  # rank 0 of the lines that followed it
                target = self.procs.get(self.version_owner[id(v)])
            elif v.origin == "nccl" and len(owners) == 1:
                target = owners[0]
            elif v.origin == "nccl" and last is not None:
                target = self.procs.get(last)
            if target is not None:
                v.at = Loc(v.at.source, v.at.lineno, target.host, target.pid)
                add_capped(target.versions, v.version)
            self._keep("versions", v)
        procs = {p.name: p for p in self.procs.values()}
        for v in f.versions:
            p = procs.get(v.at.proc or "")
            if p is not None and 0 in p.ranks:
                v.rank0 = True
        f.versions.sort(key=lambda v: (v.at.source, v.at.lineno))
        for p in self.procs.values():
            p.ranks.sort()
            p.devs.sort()
        f.procs = sorted(self.procs.values(), key=lambda p: (p.host, p.pid))
        for pt in self.pairs.values():
            pt.categories.sort()
            pt.vias.sort()
            pt.channels.sort()
            pt.src_hosts = list(self.rank_hosts.get(pt.src, []))
            pt.dst_hosts = list(self.rank_hosts.get(pt.dst, []))
        f.pair_list = [self.pairs[k] for k in sorted(self.pairs)]
        f.summary = summarize(f)
        return f


def _on(at: Loc, host: Optional[str]) -> Loc:
    """``at`` with the host a line named itself ('host: Test NCCL failure ...'), when it had none."""
    if not host or at.host:
        return at
    return Loc(at.source, at.lineno, host, at.pid, at.tid, at.dev)


def _thread(at: Loc) -> Tuple[str, str, int, int]:
    return (at.source, at.host or "", at.pid or 0, at.tid or 0)


def _add(lst: list, value) -> None:
    if value not in lst:
        lst.append(value)


def to_int(s: Optional[str]) -> Optional[int]:
    if s is None:
        return None
    try:
        return int(s)
    except ValueError:
        return None


def _net_devices(net: str, body: str, at: Loc, text: str) -> NetDevices:
    devs_part, _, oob_part = body.partition("; OOB ")
    ro = "[RO]" in devs_part
    devs: List[NetDevice]
    if net.lower().startswith("socket"):
        devs = [NetDevice(to_int(s.group("idx")), s.group("name"), address=s.group("addr"))
                for s in _SOCK_IF.finditer(devs_part)]
    else:
        merged_spans = [(mm.start(), mm.end()) for mm in re.finditer(r"=\{[^}]*\}", devs_part)]
        devs = []
        for d in _IB_DEV.finditer(devs_part):
            merged = any(a <= d.start() < b for a, b in merged_spans)
            devs.append(NetDevice(int(d.group("idx")), d.group("name"), int(d.group("port")), d.group("link"),
                                  merged=merged))
    oob = None
    if oob_part:
        s = _SOCK_IF.search(oob_part)
        if s:
            oob = NetDevice(None, s.group("name"), address=s.group("addr"))
    return NetDevices(net, devs, at, text, ro, oob)

LogInput = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


def parse_logs(logs: LogInput, keep: int = KEEP) -> NcclLogFacts:
    """Parse several logs (``{name: text}`` or ``(name, text)`` pairs) into one set of facts.

    Logs of one job belong together: versions are compared across them and
    rank pairs are joined from both sides.
    """
    items = logs.items() if isinstance(logs, Mapping) else logs
    p = Parser(keep)
    for name, text in items:
        p.feed(text or "", name)
    return p.finish()


def parse(text: str, source: str = "<log>") -> NcclLogFacts:
    """Parse one log."""
    return parse_logs([(source, text)])


def read_lines(stream: IO[bytes], max_line: int = MAX_LINE) -> Iterator[str]:
    """Decoded lines of a binary stream, each at most ``max_line`` bytes (the rest of a longer line is skipped)."""
    while True:
        line = stream.readline(max_line)
        if not line:
            return
        if len(line) >= max_line and not line.endswith(b"\n"):
            while True:  # skip the rest of an overlong line without holding it
                rest = stream.readline(max_line)
                if not rest or rest.endswith(b"\n"):
                    break
        yield line.decode("utf-8", errors="replace").rstrip("\r\n")


def parse_streams(streams: Iterable[Tuple[str, IO[bytes]]], keep: int = KEEP) -> NcclLogFacts:
    """Parse logs from open binary streams, line by line: memory does not grow with the logs' size."""
    p = Parser(keep)
    for name, stream in streams:
        p.feed_lines(read_lines(stream), name)
    return p.finish()
