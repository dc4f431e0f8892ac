"""NCCL debug logs (``NCCL_DEBUG=INFO``) -> facts: the handlers, one line in, facts updated. Pure: text in,
dataclasses out.

:class:`Parser` reads the records of :mod:`nccldiag.nccl.grammar`'s line reader and keeps what each says in a
:class:`nccldiag.nccl.facts.NcclLogFacts`, each list bounded (``KEEP``); :func:`parse`, :func:`parse_logs` and
:func:`parse_streams` read whole logs, and :meth:`Parser.merge` joins parsers that read files apart. The
prefilter (:mod:`nccldiag.nccl.scan`) hands it only the lines it reads, and :mod:`nccldiag.nccl.replay` counts
the lines read before instead of reading them again. The parser never raises on text.
"""
from __future__ import annotations

import re
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union

from nccldiag.nccl.facts import (
    AppError, Bootstrap, CategoryStats, ChainStep, Channel, ChannelCounts, CommInfo, Connected, ERROR_RESULTS,
    EnvEcho, ErrorLine, GdrLine, InitEvent, KEEP, Loc, MAX_BENCH_BYTES, MAX_BENCH_FILES, MAX_CATEGORIES,
    MAX_ERROR_TEXT, MAX_LINE, MAX_PAIRS, MAX_PROCS, MAX_RAS_BYTES, MAX_SMALL, MAX_STEPS, MAX_THREADS, NcclLogFacts,
    NetDevice, NetDevices, NetworkChoice, Note, NvlsLine, OrphanChain, PairTransport, PluginLine, Proc, RingOrder,
    VersionLine, Warn, Watchdog, add_capped, summarize)
from nccldiag.nccl.grammar import (
    Rec, _BARE_INFO, _BARE_WARN, _BENCH_START, _CHAIN, _DIAG, _FRAGMENT, _IB_DEV, _LAST_ERROR, _MERGED_NIC, _OLD_IB_PORT,
    _PROGRESS, _QUOTED_WARN, _RAS_START, _SOCK_IF, _TAG, _TESTS_CUDA, _TESTS_FAIL, _TESTS_TIMEOUT, _TORCH_ERR,
    _TORCH_OLD, _UNPREFIXED, _VERSION, _WATCHDOG, _WATCHDOG_CUT, _WD_RAN, app_line, category_of, chain_step, classify,
    error_kind, fact_row, fails, holds_word, joins_next, num, numbered_records, parse_via, read_watchdog, to_int)

class DroppedWarn:
    """A WARN past the bound on the WARNs kept, read again (:mod:`nccldiag.nccl.replay`): seen by nobody, it is
    only counted when its thread moves on, as a failure where its message is one (``base``) or its call chain
    returned an error (:func:`fails`)."""

    __slots__ = ("base", "chain")

    def __init__(self, base: bool) -> None:
        self.base, self.chain = base, []  # type: List[ChainStep]


class DroppedChain:
    """A call chain past the bound on the chains kept (:meth:`Parser.again_step`): its steps and whether a
    later line resumed it are seen by nobody."""

    __slots__ = ("steps", "at", "benign", "resumed")

    def __init__(self, steps: List[ChainStep], at: Loc) -> None:
        self.steps, self.at, self.benign, self.resumed = steps, at, False, None


def NO_JOIN(nxt: Rec) -> None:
    """What takes the line after an error line past the bound (:meth:`Parser.again_bare`): nothing is kept of it."""


class Parser:
    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        # bounds below keep for some lists: a worker's parser takes only what the merging parser has room for
        self.limits: Dict[str, int] = {}
        self.f = NcclLogFacts(keep=keep)
        self.procs: Dict[Tuple[str, int], Proc] = {}
        self.open_warn: Dict[Tuple[str, str, int, int], Union[Warn, DroppedWarn]] = {}
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
        # the result names of the WARNs past the bound closed, collected while a run of lines is recorded (replay)
        self.dropped_names: Optional[List[str]] = None

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
        """One log held in memory (a probe's, fetched from a node): each line cut at :data:`MAX_LINE` characters, as
        a file's are read (:func:`read_lines`)."""
        self.feed_lines((line[:MAX_LINE] for line in text.splitlines()), source)

    def feed_lines(self, lines: Iterable[str], source: str) -> None:
        """One log, line by line (an open file, a list, a generator)."""
        count: List[int] = []
        self.feed_numbered(enumerate(lines, 1), source, lambda: count[0] if count else 0, count)

    def feed_numbered(self, lines: Iterable[Tuple[int, str]], source: str, total: Callable[[], int],
                      count: Optional[List[int]] = None) -> None:
        """One log as ``(line number, line)`` pairs; ``total()`` says how many lines it had once they are read
        (a prefilter passes only the lines the parser reads, see :mod:`nccldiag.nccl.scan`)."""
        self.begin(source)
        for rec in numbered_records(lines, source, count):
            self.record(rec)
        self.end(source, total())

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


    # ---- lines read again (nccldiag.nccl.replay): what reading a line again does while its lists are full
    #
    # The replay reads a line by record() the first time, tests open_warn, open_orphan, failed_orphans and
    # want (read only) and the queries below, and where reading the line again could only count it, changes
    # the parser's state through the again_* methods alone: each does to the state what the handlers would do
    # with their lists full. It sets line_proc, the process of the last NCCL line of the file, as record() does.

    def begin(self, source: str) -> None:
        """A file begins: ``source``."""
        self.f.sources.append(source)
        self.line_proc = None

    def end(self, source: str, lines: int) -> None:
        """The file ``source`` ended after ``lines`` lines."""
        self.f.lines += lines
        self.end_file(source)

    def full(self, name: str, at: Loc) -> bool:
        """Whether the fact list ``name`` takes no more records, and its last is not the one read from ``at``."""
        lst = getattr(self.f, name)
        return len(lst) >= self.limits.get(name, self.keep) and not (lst and lst[-1].at is at)

    def proc_key(self, at: Loc) -> Optional[Tuple[str, int]]:
        """``(host, pid)`` of the process a line read from ``at`` came from, if the parser keeps it."""
        if at.host is None or at.pid is None:
            return None
        p = self.procs.get((at.host, at.pid))
        return (p.host, p.pid) if p is not None else None

    def last_version(self, source: str) -> Optional[VersionLine]:
        """The last version line of ``source`` so far."""
        return self.segment.get(source)

    def version_kept(self, v: VersionLine) -> bool:
        """Whether version line ``v`` is kept (in the versions or the bare version lines pending)."""
        return id(v) in self.kept_versions

    def watchdog_seen(self, key: Tuple) -> bool:
        """Whether a watchdog message told apart by ``key`` was read in the file being fed."""
        return key in self.watchdog_keys

    def keeping(self, source: str) -> bool:
        """Whether a benchmark output or RAS report of ``source`` is being kept line by line."""
        b = self.bench_bytes.get(source)
        if b is not None and b < MAX_BENCH_BYTES:
            return True
        b = self.ras_bytes.get(source)
        return b is not None and b < MAX_RAS_BYTES

    def rank0_read(self, source: str, proc: Optional[Tuple[str, int]]) -> bool:
        """Whether :meth:`rank_fact` for rank 0 of process ``proc`` would change nothing now."""
        v = self.segment.get(source)
        if v is None or id(v) not in self.kept_versions:  # none, or one past the bound: kept nowhere
            return True
        if not (v.at.host is None or proc is None or (v.at.host, v.at.pid) == proc):
            return True
        if not v.rank0 or not v.world:
            return False
        return not (v.at.host is None and proc is not None and id(v) not in self.version_owner)

    def channel_tallies(self, m: "re.Match[str]", at: Loc) -> Optional[Tuple[CategoryStats, Optional[PairTransport]]]:
        """The tallies a channel line (``m``, read from ``at``) adds to, where it keeps no line now: its
        category's and its rank pair's (``None``: no pair, or the bound on pairs); ``None`` where it keeps one."""
        f = self.f
        if not self.full("channels", at):
            return None
        g = m.groupdict()
        v = parse_via(g["via"])
        category = category_of(str(v["transport"]), v.get("net"), bool(v.get("gdrdma")))
        st = f.channel_stats.get(category) or f.channel_stats.get("NET/other")
        if st is None or len(st.first) < 4 or st.first[-1].at is at:
            return None
        dst = to_int(g.get("dst"))
        return st, (self.pairs.get((num(g["src"]), dst)) if dst is not None else None)

    def steps_counted(self, w: Union[Warn, DroppedWarn]) -> bool:
        """Whether the call-chain steps of the open WARN ``w`` are only counted: it is past the bound on the WARNs
        kept, or its chain is full."""
        return len(w.chain) >= MAX_STEPS or id(w) not in self.kept_warns

    def again_plain(self, source: str, proc: Optional[Tuple[str, int]]) -> None:
        """An NCCL line read again that says nothing the parser keeps."""
        if self.want:
            self.want.pop(source, None)
        if proc is not None:
            self.line_proc = proc

    def again_info(self, key: Tuple[str, str, int, int], source: str, proc: Optional[Tuple[str, int]],
                   version: Optional[VersionLine]) -> None:
        """An INFO line of thread ``key`` read again, that keeps no record: its thread moves on; a version line
        past the bound is the file's last version line all the same (``version``)."""
        if self.want:
            self.want.pop(source, None)
        if key in self.open_warn:
            self.close_warn(key)
        self.open_orphan.pop(key, None)
        if version is not None:
            self.segment[source] = version
        if proc is not None:
            self.line_proc = proc

    def again_step(self, key: Tuple[str, str, int, int], source: str, proc: Optional[Tuple[str, int]],
                   step: ChainStep) -> bool:
        """A call-chain step of thread ``key`` read again, where its steps are only counted: the thread's WARN
        is past the bound or its chain full (:meth:`steps_counted`), or the thread has no WARN open and its
        chain is past the bound on the chains kept (its steps are seen by nobody); ``False`` where it must be
        read."""
        w = self.open_warn.get(key)
        if w is not None:
            if not self.steps_counted(w):
                return False
            if len(w.chain) < MAX_STEPS:
                w.chain.append(step)
        elif not self._orphan_step(key, step):
            return False
        if self.want:
            self.want.pop(source, None)
        if proc is not None:
            self.line_proc = proc
        return True

    def _orphan_step(self, key: Tuple[str, str, int, int], step: ChainStep) -> bool:
        oc = self.open_orphan.get(key)
        if oc is None:
            if len(self.f.orphan_chains) < self.limits.get("orphan_chains", self.keep):
                return False
            self._bound_threads()
            oc = self.open_orphan[key] = DroppedChain([], step.at)
            self.f.counts["orphan_chains"] = self.f.counts.get("orphan_chains", 0) + 1
            if step.code in ERROR_RESULTS:
                lst = self.failed_orphans.setdefault(key, [])
                if len(lst) < MAX_STEPS:
                    lst.append(oc)
        elif type(oc) is not DroppedChain and len(oc.steps) < MAX_STEPS:
            return False  # a chain kept: its steps are read
        if len(oc.steps) < MAX_STEPS:
            oc.steps.append(step)
        return True

    def again_warn(self, key: Tuple[str, str, int, int], source: str, proc: Optional[Tuple[str, int]],
                   base: bool) -> bool:
        """A WARN of thread ``key`` read again past the bound on the WARNs kept: held as its failure (``base``,
        its message's) and its call chain only. Returns whether the bound on threads closed every thread's state
        first."""
        if self.want:
            self.want.pop(source, None)
        ow = self.open_warn
        if key in ow:
            self.close_warn(key)
        bounded = len(ow) >= MAX_THREADS or len(self.open_orphan) >= MAX_THREADS or \
            len(self.failed_orphans) >= MAX_THREADS
        if bounded:
            self._bound_threads()
        ow[key] = DroppedWarn(base)
        self.open_orphan.pop(key, None)
        self.failed_orphans.pop(key, None)
        if proc is not None:
            self.line_proc = proc
        return bounded

    def may_count_bare(self, source: str, watchdog: Optional[Tuple], bench: bool, ras: bool) -> bool:
        """Whether a line without an NCCL prefix, read before, does only what :meth:`again_bare` does now: no line
        waits for it (but an error line past the bound, which keeps nothing of it), a watchdog message in it
        (told apart by ``watchdog``) was read before, and it starts no benchmark output (``bench``: it may) or
        RAS report (``ras``)."""
        then = self.want.get(source)
        if then is not None and then is not NO_JOIN:
            return False
        if watchdog is not None and watchdog not in self.watchdog_keys:
            return False
        if bench and source not in self.bench_bytes and len(self.bench) < MAX_BENCH_FILES:
            return False
        return not (ras and source not in self.ras_bytes and len(self.ras) < MAX_BENCH_FILES)

    def again_bare(self, source: str, n: int, msg: str, size: int, join: bool,
                   version: Optional[VersionLine]) -> None:
        """Line ``n`` without an NCCL prefix (``msg``, ``size`` bytes as kept) read again: kept as the benchmark
        output or RAS report it is part of; an error line past the bound that takes the next line (``join``)
        keeps nothing of it; a version line past the bound is the file's last version line (``version``)."""
        if self.bench_bytes or self.ras_bytes:
            b, r = self.bench_bytes.get(source), self.ras_bytes.get(source)
            if (b is not None and b < MAX_BENCH_BYTES) or (r is not None and r < MAX_RAS_BYTES):
                self.again_kept(source, n, ((0, msg, size),))  # a benchmark output or RAS report still kept
        if self.want:
            self.want.pop(source, None)
        if join:
            self.want[source] = NO_JOIN
        if version is not None:
            self.segment[source] = version

    def again_kept(self, source: str, n: int, lines: Sequence[Tuple[int, str, int]]) -> None:
        """Lines without an NCCL prefix read again (``(off, msg, size)``: line ``n + off``, its text as kept and its
        size), kept as the benchmark output or RAS report being kept."""
        bench, ras = self.bench_bytes, self.ras_bytes
        for off, msg, size in lines:
            b = bench.get(source)
            if b is not None and b < MAX_BENCH_BYTES:
                self.bench[source].append(msg)
                bench[source] = b + size
            b = ras.get(source)
            if b is not None and b < MAX_RAS_BYTES:
                self.ras[source].append((n + off, msg))
                ras[source] = b + size

    def again_run(self, source: str, proc: Optional[Tuple[str, int]], version: Optional[VersionLine],
                  failures: int, names: List[str], closed: List[Tuple[str, str, int, int]],
                  grown: List[Tuple[Tuple[str, str, int, int], Tuple[ChainStep, ...]]],
                  opened: List[Tuple[Tuple[str, str, int, int], bool, Tuple[ChainStep, ...]]]) -> None:
        """A run of lines counted again as a whole: ``failures`` more failed WARNs past the bound, with the result
        names of their chains; of the WARNs past the bound it found open, those it closed (``closed``) and those
        it added steps to (``grown``: their chains after it); the WARNs it left open (``opened``: thread, base,
        chain), in the order it opened them; the process of its last NCCL line and the file's last version
        line."""
        if failures:
            self.f.dropped_failures += failures
            for name in names:
                add_capped(self.f.dropped_results, name)
        if proc is not None:
            self.line_proc = proc
        if version is not None:
            self.segment[source] = version
        ow = self.open_warn
        for key in closed:
            del ow[key]
        for key, chain in grown:
            ow[key].chain[:] = chain
        for key, base, chain in opened:
            w = ow[key] = DroppedWarn(base)
            w.chain.extend(chain)

    def again_counted(self, hits: int, nccl: int, name: Optional[str], stats: Optional[CategoryStats],
                      pair: Optional[PairTransport]) -> None:
        """``hits`` lines read again, each counted in the lines, NCCL lines (``nccl`` each), fact list ``name``,
        a category's tally and a rank pair's, where given."""
        f = self.f
        f.nccl_lines += hits * nccl
        if name is not None:
            f.counts[name] = f.counts.get(name, 0) + hits
        if stats is not None:
            stats.lines += hits
        if pair is not None:
            pair.lines += hits

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
                                                                        "perftests", "p2p_bandwidth")),
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

    def plain_lines(self, source: str, n: int, msgs: Sequence[str]) -> None:
        """Lines ``n+1, n+2, ...`` of ``source``, each without an NCCL prefix and without a word of the grammar
        (``msgs``: the text of each as :meth:`bare` reads it, '' for a line with nothing to read), read while no
        line waits for the next and no record is held: what :meth:`bare` does with each, in one call (kept as the
        benchmark output or RAS report being kept, up to its bound)."""
        bench, ras = self.bench, self.ras
        bench_bytes, ras_bytes = self.bench_bytes, self.ras_bytes
        for i, msg in enumerate(msgs, n + 1):
            if not msg:
                continue
            kept = msg[:4096]
            lines = bench.get(source)
            if lines is None:
                if len(bench) < MAX_BENCH_FILES and _BENCH_START.search(msg):
                    lines = bench[source] = []
                    bench_bytes[source] = 0
            if lines is not None and bench_bytes[source] < MAX_BENCH_BYTES:
                lines.append(kept)
                bench_bytes[source] += len(kept) + 1
            lines = ras.get(source)
            if lines is None:
                if len(ras) < MAX_BENCH_FILES and _RAS_START.search(msg):
                    lines = ras[source] = []
                    ras_bytes[source] = 0
            if lines is not None and ras_bytes[source] < MAX_RAS_BYTES:
                lines.append((i, kept))
                ras_bytes[source] += len(kept) + 1

    def ras_line(self, rec: Rec) -> None:
        self._keep_from(self.ras, self.ras_bytes, _RAS_START, MAX_RAS_BYTES, rec, (rec.at.lineno, rec.msg[:4096]))

    def bare(self, rec: Rec, last_proc: Optional[Tuple[str, int]]) -> None:
        self.bench_line(rec)
        self.ras_line(rec)
        then = self.want.pop(rec.at.source, None)
        if then is not None:
            then(rec)
        if not holds_word(rec.msg):
            return  # no word of the grammar: nothing to read but what the lines before asked of it
        self.error_line(rec)
        if "Last error:" in rec.msg:
            m = _LAST_ERROR.search(rec.msg)
            if m:
                if m.group("text").strip():
                    self.last_error(rec, m.group("text"))
                else:
                    self.want[rec.at.source] = lambda nxt: self.last_error(nxt, nxt.msg)
                return
        if app_line(rec.msg):
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
        at = rec.text.find(msg.strip()) if msg.strip() else -1
        el = ErrorLine(msg[:MAX_ERROR_TEXT], rec.at, kind, rec.launcher_rank, rec.text[:min(at, 256)] if at > 0 else "")
        self._keep("kernel" if kernel else "errors", el)
        if joins_next(msg):
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
        wd = read_watchdog(msg, rec.launcher_rank) if "Watchdog" in msg else None
        if wd is None and "Watchdog caught collective operation timeout" in msg and rec.kind == "bare":
            self.continue_watchdog(rec, 3)
            return
        if wd is not None:
            m, fields, rank = wd
            ran = m.groupdict().get("ran")
            w = Watchdog(rec.at, rec.text, rank, to_int(fields.get("SeqNum")), fields.get("OpType"),
                         to_int(fields.get("NumelIn")), to_int(fields.get("NumelOut")), to_int(fields.get("Timeout(ms)")),
                         to_int(ran))
            key = (w.at.source, w.rank, w.seq, w.op_type)
            if key not in self.watchdog_keys:
                if len(self.watchdog_keys) < self.keep:
                    self.watchdog_keys.add(key)
                self._keep("watchdogs", w)
            if ran is None and rec.kind == "bare":  # quoted without its tail: a wrap may bring it on the next line
                self.want[rec.at.source] = lambda nxt: self.watchdog_tail(w, nxt)
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

    @staticmethod
    def watchdog_tail(w: Watchdog, nxt: Rec) -> None:
        """The line after a watchdog message kept without its tail: 'ran for N milliseconds ...' wrapped there."""
        m = _WD_RAN.search(nxt.msg)
        if m is not None and w.ran_for_ms is None:
            w.ran_for_ms = to_int(m.group("ran"))
            w.text = f"{w.text} {nxt.text.strip()}"

    def continue_watchdog(self, rec: Rec, more: int) -> None:
        """A watchdog message wrapped over lines (as pasted): read it once the next lines complete it."""
        def then(nxt: Rec) -> None:
            joined = Rec(rec.kind, f"{rec.msg} {nxt.msg.strip()}", rec.at, f"{rec.text} {nxt.text.strip()}",
                          launcher_rank=rec.launcher_rank)
            if _WATCHDOG.search(joined.msg) or _WATCHDOG_CUT.search(joined.msg) or more <= 1:
                self.app_lines(joined)
            else:
                self.continue_watchdog(joined, more - 1)
        self.want[rec.at.source] = then

    def close_warn(self, key: Tuple[str, str, int, int]) -> None:
        """The thread moved on: a WARN past ``keep`` is classified now and only counted."""
        w = self.open_warn.pop(key, None)
        if w is None:
            return
        if type(w) is DroppedWarn:
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
                    if self.dropped_names is not None:  # a run of lines being recorded (replay)
                        self.dropped_names.append(s.code_name)

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
        key = thread(rec.at)
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
        key = thread(at)
        m = _CHAIN.search(msg) if " -> " in msg else None
        if m and " via " not in msg:
            step = chain_step(m, at, text)
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
        order = [num(x) for x in m.group("order").split()][:MAX_PAIRS]
        ro = RingOrder(num(m.group("ch")), order, at, text, to_int(m.group("n")))
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
        devs = [NetDevice(None, d.group("name"), num(d.group("port")), "IB")
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
        ev = InitEvent(m.group("phase"), num(m.group("rank")), num(m.group("nranks")), at, text, m.group("comm"),
                       to_int(m.group("cdev")), to_int(m.group("nvml")), m.group("bus"), m.group("cid"))
        self._keep("inits", ev)
        self.rank_host(ev.rank, at)
        self.rank_fact(ev.rank, ev.nranks, at, p)
        if p is not None:
            add_capped(p.ranks, ev.rank, 1024)
            add_capped(p.init_started if ev.phase == "START" else p.init_completed, ev.rank, 1024)

    def fact_comm(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self.comm(CommInfo(m.group("comm"), num(m.group("rank")), num(m.group("nranks")), at, text,
                           num(m.group("nnodes")), num(m.group("lranks")), num(m.group("lrank")),
                           to_int(m.group("mnnvl"))), p)

    def fact_comm_old(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self.comm(CommInfo(m.group("comm"), num(m.group("rank")), num(m.group("nranks")), at, text), p)

    def fact_connected(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("connected", Connected(m.group("what"), at, text, to_int(m.group("pxn")), to_int(m.group("gdr"))))

    def fact_counts(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("channel_counts", ChannelCounts(num(m.group("coll")), num(m.group("p2p")), num(m.group("ppp")),
                                                   at, text, to_int(m.group("collnet")), to_int(m.group("nvls"))))

    def fact_nvls_comm(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("nvls", NvlsLine("comm", at, text, num(m.group("head")), num(m.group("nheads"))))

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
        src = num(g["src"])
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
            add_capped(pt.channels, num(g["ch"]), 256)
            pt.lines += 1

    @staticmethod
    def channel_line(g: Dict[str, Optional[str]], v: Dict[str, object], transport: str, gdr: bool,
                     dst: Optional[int], category: str, at: Loc, text: str) -> Channel:
        return Channel(
            channel=num(g["ch"]), src=num(g["src"]), dst=dst, transport=transport, via=str(v["via"]),
            category=category, at=at, text=text, label=g["label"],
            conn_index=to_int(g.get("conn")), src_dev=g.get("sdev"), dst_dev=g.get("ddev"), direction=g.get("dir"),
            mode=v.get("mode"), read=bool(v.get("read")), ce=bool(v.get("ce")), net=v.get("net"),
            net_dev=v.get("net_dev"), proxy_rank=v.get("proxy_rank"), gdrdma=gdr, pci=bool(v.get("pci")),
            shared=bool(v.get("shared")), relay=v.get("relay"),
        )

    # ---- end

    def read_kept(self, src: str) -> None:
        """Read the benchmark output and RAS reports kept from ``src`` (ended); the store keeps its place, not lines."""
        f = self.f
        lines = self.bench.get(src)
        if lines:
            from nccldiag.benchmarks import nccltests, p2pbw, perftest
            text = "\n".join(lines)
            self.bench[src] = []
            run = nccltests.parse_nccl_tests(text)
            p2p = p2pbw.parse_p2p_bandwidth(text) if run is None else None
            if p2p is not None:
                p2p.source = src
                f.p2p_bandwidth.append(p2p)
            elif run is not None:
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


def thread(at: Loc) -> Tuple[str, str, int, int]:
    return (at.source, at.host or "", at.pid or 0, at.tid or 0)


def _net_devices(net: str, body: str, at: Loc, text: str) -> NetDevices:
    devs_part, _, oob_part = body.partition("; OOB ")
    ro = "[RO]" in devs_part
    devs: List[NetDevice]
    if net.lower().startswith("socket"):
        devs = [NetDevice(to_int(s.group("idx")), s.group("name"), address=s.group("addr"))
                for s in _SOCK_IF.finditer(devs_part)]
    else:
        # merged virtual NICs ([0]={[0] a, [1] b}): none ends past the last '}'; they and the devices come in order
        spans = [(mm.start(), mm.end()) for mm in _MERGED_NIC.finditer(devs_part, 0, devs_part.rfind("}") + 1)]
        devs = []
        k = 0
        for d in _IB_DEV.finditer(devs_part):
            start = d.start()
            while k < len(spans) and spans[k][1] <= start:
                k += 1
            merged = k < len(spans) and spans[k][0] <= start
            devs.append(NetDevice(num(d.group("idx")), d.group("name"), num(d.group("port")), d.group("link"),
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
