"""Finding the node outputs in a text, however long (pure: bytes in, blocks out).

A :class:`Reader` is fed the text in pieces of any size (a file read in blocks, standard input as it comes) and
reads it in chunks of whole lines. In each chunk it searches the words of every kind (``WORDS``), of a prompt
(``@``, ``$ ``) and of a process's end (:mod:`nccldiag.paste.ends`) at once, and reads only the lines holding one:
a long job output is searched at the speed of the expression, and only where a block may be is it split into
lines, decoded and peeled (:func:`nccldiag.paste.lines.peel`). A line read before is not read again (its anchors
are remembered), and a block seen before (the same kind, host and text) is counted, not kept twice.

From a line that anchors a kind, the block grows up and down over the lines with the same front (the same
layers: quote marks, a host, a time per line, ...) that belong to the kind; the kernel's lines are taken line
by line (:mod:`nccldiag.paste.kinds.kernel`). A block that reaches the end of a chunk waits for the next.

A block's host is the one its own front names (``node7: ``, a syslog line's host), else that of the prompt just
above it, else that of the last prompt above it in the text; else none. Bounds: :data:`MAX_BLOCKS` blocks,
:data:`MAX_TEXT` characters of them and :data:`MAX_LINES` distinct lines read per text; past them the reader
reads no further block and says so (:attr:`Reader.bounded`).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from types import ModuleType
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from nccldiag import hscache, pods, rx
from nccldiag.paste import ends, lines as L
from nccldiag.paste.kinds import all_kinds
from nccldiag.paste.kinds.base import MAX_LINES as MAX_BLOCK_LINES, Context

CHUNK = 4 * 1024 * 1024  # bytes read as one chunk
END = 8192  # the bytes at the end of a text kept for its last line
LAST_MARKUP = 8  # lines of markup alone passed over at the end of a text, looking for its last line
# one tag ('</details>'), a code fence or a rule, alone on its line: no repeat inside a repeat (linear)
_MARKUP_ONLY = rx.compile(r"</?[A-Za-z][A-Za-z0-9]{0,20}(?:[ \t][^<>\n]{0,200})?>|```[\w+-]{0,20}|~~~|[-*_]{3,300}")
LOOKBACK = 256 * 1024  # bytes of the chunk before kept, for a block that grows up into them
MAX_CARRY = 16 * 1024 * 1024  # a block still growing at the end of a chunk waits for the next up to this size
MAX_BLOCKS = 256  # blocks kept per text
MAX_TEXT = 16 * 1024 * 1024  # characters of blocks kept per text
MAX_LINES = 200_000  # distinct lines read per text
MAX_PARTIAL = 50  # lines read only in part, kept per text

KINDS: Tuple[ModuleType, ...] = tuple(all_kinds())
_PROMPT_WORDS = ("@", "$ ")


def _trie(words: Sequence[str]) -> "re.Pattern[bytes]":
    """One expression matching any of ``words`` (literal), as a trie: each position is tried once per first
    character."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w.encode("utf-8"):
            node = node.setdefault(ch, {})
        node[None] = True

    def emit(node: dict) -> str:
        if None in node:
            return ""  # a whole word ends here: nothing more is needed
        alts = [re.escape(bytes([ch]).decode("latin-1")) + emit(node[ch]) for ch in sorted(k for k in node if k is not None)]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return re.compile(emit(root).encode("latin-1"))


# how a web page writes the characters HTML escapes (a paste copied from one keeps them: lines.unmark reads them)
_ESCAPES = {"'": ("&#x27;", "&#39;", "&apos;"), '"': ("&quot;", "&#34;", "&#x22;"), "<": ("&lt;",), ">": ("&gt;",),
            "&": ("&amp;",)}


def escaped(words: Sequence[str]) -> Tuple[str, ...]:
    """Each word, then the forms a web page writes it in (``CA &#x27;`` for ``CA '``): a kind's words are found in
    the raw text, before a line's escapes are read."""
    out: List[str] = []
    for w in words:
        forms = [""]
        for ch in w:
            forms = [f + v for f in forms for v in (ch,) + _ESCAPES.get(ch, ())]
        out += forms
    return tuple(dict.fromkeys(out))


_KIND_WORDS: Tuple[Tuple[bytes, ...], ...] = tuple(tuple(w.encode("utf-8") for w in escaped(k.WORDS)) for k in KINDS)
_END_WORDS = tuple(w.encode("utf-8") for w in ends.WORDS)
WORDS = tuple(dict.fromkeys([w for k in KINDS for w in escaped(k.WORDS)] + list(ends.WORDS) + list(_PROMPT_WORDS)))
_TRIES: Dict[str, "re.Pattern[bytes]"] = {}  # the expressions below, compiled when first used


def _search() -> "re.Pattern[bytes]":
    """Every word, one expression: where Hyperscan is missing."""
    if "all" not in _TRIES:
        _TRIES["all"] = _trie(WORDS)
    return _TRIES["all"]


def _block_search() -> "re.Pattern[bytes]":
    """The words of the kinds read as blocks (not line by line)."""
    if "block" not in _TRIES:
        _TRIES["block"] = _trie([w for k in KINDS if getattr(k, "MODE", "block") != "lines" for w in escaped(k.WORDS)])
    return _TRIES["block"]
SLOW_BOUND = 16 * 1024 * 1024  # bytes of a text read where Hyperscan is missing (the expression is ~20x slower)


class _Words:
    """Where the words are in a chunk: Hyperscan's literal matcher (all the words in one pass, at the speed of a
    search for one byte) where it is installed, else :func:`_search`."""

    def __init__(self) -> None:
        self.db = None
        try:
            import hyperscan
        except ImportError:  # the expression reads the first SLOW_BOUND bytes of a text (Reader.feed)
            return
        words = [w.encode("utf-8") for w in WORDS]
        db = hscache.database(hyperscan, [re.escape(w) for w in words], range(len(words)), [0] * len(words))
        self.db, self.lengths = db, [len(w) for w in words]

    @property
    def fast(self) -> bool:
        return self.db is not None

    def starts(self, buf: bytes, start: int) -> List[int]:
        """The offsets at which a word starts in ``buf``, from ``start``, in order."""
        if self.db is None:
            return [m.start() for m in _search().finditer(buf, start)]
        hits: List[int] = []
        lengths = self.lengths

        def hit(i: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            at = to - lengths[i]
            if at >= start:
                hits.append(at)

        self.db.scan(buf, match_event_handler=hit)
        hits.sort()
        return hits


_WORDS: Optional[_Words] = None


def _words() -> _Words:
    global _WORDS
    if _WORDS is None:
        _WORDS = _Words()
    return _WORDS


@dataclass
class Block:
    """One node output found in the text: its kind, the sections it feeds (``{source: text}``, as a bundle holds
    them; empty for a kind no area reads), where it is, the host it is attributed to, what was taken off its
    lines, and the command typed above it."""

    kind: str
    sections: Dict[str, str]
    path: str
    lineno: int
    end: int
    host: Optional[str] = None
    layers: Tuple[str, ...] = ()
    command: str = ""
    text: str = ""  # the clean lines (cut at 64 KiB), as read
    repeats: int = 0  # the same block seen again further on
    pod: str = ""  # the Kubernetes pod the output was read in (its host's or its prompt's name: nccldiag/pods.py)

    def where(self) -> str:
        return f"{self.path}:{self.lineno}" + (f"-{self.end}" if self.end != self.lineno else "")

    def to_dict(self) -> Dict[str, object]:
        return {"kind": self.kind, "sources": sorted(self.sections), "file": self.path, "line": self.lineno,
                "end_line": self.end, "host": self.host, "stripped": list(self.layers), "command": self.command,
                "repeats": self.repeats}


@dataclass
class Partial:
    """A line that looked like a kind's but made no block of it (too short, cut): shown, never dropped."""

    kind: str
    path: str
    lineno: int
    text: str
    host: Optional[str] = None

    def to_dict(self) -> Dict[str, object]:
        return {"kind": self.kind, "file": self.path, "line": self.lineno, "text": self.text[:300], "host": self.host}


@dataclass
class Found:
    """What a text held: blocks, lines read in part, processes' ends, and whether a bound stopped the reading."""

    blocks: List[Block] = field(default_factory=list)
    partial: List[Partial] = field(default_factory=list)
    signals: List[Tuple[int, ends.Line]] = field(default_factory=list)
    oom: List[ends.Line] = field(default_factory=list)
    memlock_unlimited: List[ends.Line] = field(default_factory=list)  # lines that set or show memlock unlimited
    peermem_absent: List[ends.Line] = field(default_factory=list)  # 'lsmod | grep <peermem>' that printed nothing
    container_no_gpu: List[Tuple[ends.Line, ends.Line]] = field(default_factory=list)  # (command, GPU failure after it)
    slurm_reasons: List[Tuple[ends.Line, str, str]] = field(default_factory=list)  # 'sinfo -R' rows: (row, reason, nodes)
    rdma_test_mtu: List[Tuple[ends.Line, int]] = field(default_factory=list)  # (a pingpong/perftest command, its -m)
    rdma_test_device: List[Tuple[ends.Line, str]] = field(default_factory=list)  # (such a command, the HCA it names)
    one_gpu: List[ends.Line] = field(default_factory=list)  # a list of the node's GPUs that lists one ('Device 0: ...')
    nccl_conf: List[Tuple[ends.Line, str, str]] = field(default_factory=list)  # a pasted NCCL config file's settings:
    # (line, name, value)
    last: List[ends.Line] = field(default_factory=list)  # each text's last line that is not blank, its layers off
    bounded: str = ""

    def merge(self, other: "Found") -> None:
        self.blocks += other.blocks
        self.partial += other.partial
        self.signals += other.signals
        self.oom += other.oom
        self.memlock_unlimited += other.memlock_unlimited
        self.peermem_absent += other.peermem_absent
        self.container_no_gpu += other.container_no_gpu
        self.slurm_reasons += other.slurm_reasons
        self.rdma_test_mtu += other.rdma_test_mtu
        self.rdma_test_device += other.rdma_test_device
        self.one_gpu += other.one_gpu
        self.nccl_conf += other.nccl_conf
        self.last += other.last
        self.bounded = self.bounded or other.bounded


class _View:
    """The lines of one chunk, by the offset each starts at (found by searching for line breaks, never by
    splitting the chunk), each decoded and peeled once."""

    def __init__(self, buf: bytes, cache: Dict[bytes, L.Peeled]) -> None:
        self.buf, self.cache = buf, cache

    def end(self, s: int) -> int:
        e = self.buf.find(b"\n", s)
        return len(self.buf) if e < 0 else e

    def raw(self, s: int) -> bytes:
        return self.buf[s:self.end(s)]

    def next(self, s: int) -> Optional[int]:
        e = self.end(s)
        return e + 1 if e + 1 < len(self.buf) else None

    def prev(self, s: int) -> Optional[int]:
        if s <= 0:
            return None
        return self.buf.rfind(b"\n", 0, s - 1) + 1

    def peeled(self, s: int) -> L.Peeled:
        raw = self.raw(s)
        p = self.cache.get(raw)
        if p is None:
            if len(self.cache) > 50_000:
                self.cache.clear()
            p = self.cache[raw] = L.peel(raw.decode("utf-8", "replace"))
        return p

    def follow(self, s: int, template: Sequence[L.Layer], step: Optional[int] = None) -> Optional[str]:
        return L.follow(self.peeled(s), template, step)


class Reader:
    """Reads a text fed in pieces (:meth:`feed`, then :meth:`end`) and finds its blocks (see the module's
    docstring); ``first`` is the number of its first line."""

    def __init__(self, path: str = "<text>", first: int = 1) -> None:
        self.path = path
        self.found = Found()
        self.host: Optional[str] = None  # the host of the last prompt seen
        self._pending = b""  # the end of the text fed that is no whole line yet
        self._parts: List[bytes] = []  # whole lines not read yet, in pieces as fed
        self._size = 0  # their bytes
        self._tail = b""  # the end of the chunk read before, for a block that grows up into it
        self._first = first  # the number of the first line of _tail + _parts
        self._first_line = first
        self._anchors: Dict[bytes, Tuple[list, bool]] = {}
        self._peeled: Dict[bytes, L.Peeled] = {}
        self._seen: Dict[Tuple[str, Optional[str], str], Block] = {}
        self._text = 0
        self._stopped = False
        self._floor = 0
        self._fed = 0
        self._whole = 0  # the offset in the text of the end of _parts (of the whole lines fed)
        self._cut = False
        self._ending = b""  # the text's last bytes (:data:`END`), for its last line
        self._dropped = 0  # the line breaks of the text fed but not read (past SLOW_BOUND)
        self._appended = 0  # 1 where end() ended the text's last line with a line break of its own
        # what whoever fed the text found in it before (:meth:`given`): the stretch of the text searched, the
        # offsets of the words in it, and where some of its lines start with their numbers
        self._over = (0, 0)
        self._hits: List[int] = []
        self._marks: List[Tuple[int, int, List[int], List[int]]] = []

    @property
    def bounded(self) -> str:
        return self.found.bounded

    @staticmethod
    def words() -> Optional[Tuple[bytes, ...]]:
        """The words searched for, where Hyperscan searches them (literal: whoever reads the text with Hyperscan
        may find them in the same pass and hand them over with :meth:`given`); None without Hyperscan."""
        return tuple(w.encode("utf-8") for w in WORDS) if _words().fast else None

    def given(self, at: int, end: int, hits: List[int], starts: List[int], numbers: List[int]) -> None:
        """What was found in the whole lines of the text from offset ``at`` to ``end`` (offsets in the text as
        fed), before they are fed: ``hits``, the offsets where a word of :meth:`words` starts, in order; and
        ``starts``, offsets where a line starts, in order, with the line's number in ``numbers`` (lists that may
        still grow until the text up to ``end`` is fed). A chunk covered by such stretches end to end is read
        from them: its words are not searched again and its lines are counted only from the nearest line
        numbered; any other chunk is searched and counted as before."""
        a, b = self._over
        if at != b or a == b:  # not where the stretch before ended: a new stretch
            self._over, self._hits, self._marks = (at, end), [], []
        else:
            self._over = (a, end)
        self._hits += hits
        self._marks.append((at, end, starts, numbers))

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._ending = bytes(data[-END:]) if len(data) >= END else (self._ending + data)[-END:]
        if self._cut:
            self._dropped += data.count(b"\n")
            return
        self._fed += len(data)
        if self._fed > SLOW_BOUND and not _words().fast:  # the expression's pace: the start of the text is read
            kept = max(0, len(data) - (self._fed - SLOW_BOUND))
            self._dropped += data.count(b"\n", kept)
            data = data[:kept]
            self._cut = True
            if not self.found.bounded:
                self.found.bounded = (f"{self.path}: read for node outputs in its first {SLOW_BOUND // 2 ** 20} MiB "
                                      "only (Hyperscan, which reads the rest as fast, is not installed)")
        cut = data.rfind(b"\n") + 1
        if not cut:
            self._pending += data
            if len(self._pending) > 4 * L.MAX_LINE:
                self._pending = self._pending[:L.MAX_LINE] + b" [...]"  # one overlong line: its start is read
            return
        head = data if cut == len(data) else memoryview(data)[:cut]  # joined once, in _read
        if self._pending:
            self._parts.append(self._pending)
            self._size += len(self._pending)
        self._parts.append(head)
        self._size += cut
        self._pending = data[cut:]
        self._whole = self._fed - len(self._pending)
        if self._size >= CHUNK:
            self._read(final=False)

    def end(self) -> Found:
        if self._pending:
            self._parts.append(self._pending + b"\n")
            self._whole += len(self._pending) + 1
            self._pending = b""
            self._appended = 1
        self._read(final=True)
        self._last()
        return self.found

    def _last(self) -> None:
        """The text's last line that is not blank (where the process that wrote it stopped), read through its
        layers (a launcher's label, a time, a prompt)."""
        end = self._ending.rstrip()
        for _ in range(LAST_MARKUP):  # a line of markup alone ('</details>', a code fence) is no line of the process
            if not end:
                return
            k = end.rfind(b"\n") + 1
            p = L.peel(end[k:k + L.MAX_LINE].decode("utf-8", "replace"))
            text = p.stage(len(p.layers)).strip()
            if text and not (len(text) <= 300 and _MARKUP_ONLY.fullmatch(text)):
                lineno = self._first_line + self._breaks() - self._ending.count(b"\n", k)
                host = next((layer.host for layer in p.layers if layer.host), None)
                self.found.last.append(ends.Line(self.path, lineno, text, host))
                return
            end = end[:k].rstrip()

    def _breaks(self) -> int:
        """The line breaks of the whole text fed, once :meth:`end` has read it: those before the lines kept after
        the last chunk (their first line's number tells), theirs, and those not read; the chunks count them as they
        number their lines, so the text is not counted once more as it is fed."""
        kept = self._tail.count(b"\n") + sum(p.count(b"\n") for p in self._parts)
        return self._first - self._first_line + kept - self._appended + self._dropped

    # ---- one chunk -------------------------------------------------------------------------------------------

    def _read(self, final: bool) -> None:
        buf = b"".join([self._tail, *self._parts])
        start = len(self._tail)
        base = self._whole - len(buf)  # the offset in the text of buf's first byte
        a, b = self._over
        given = a < b and a <= base + start and self._whole <= b
        view = _View(buf, self._peeled)
        lineno, counted = self._first, 0
        last = -1
        self._floor = 0  # a block grows up no further than the end of the block before it
        deferred: Optional[int] = None
        if given:
            hits = self._hits
            hits = [h - base for h in hits[bisect_right(hits, base + start - 1):bisect_right(hits, self._whole - 1)]]
        else:
            hits = _words().starts(buf, start)
        for at in hits:
            if self._stopped:
                break
            s = buf.rfind(b"\n", 0, at) + 1
            if s <= last:
                continue  # a line already read, or inside a block taken
            lineno = self._number(buf, base, s, counted, lineno) if given else lineno + buf.count(b"\n", counted, s)
            counted = s
            last = s
            taken = self._line(view, s, lineno, final)
            if taken is None:
                continue
            if taken < 0:  # a block reaches the end of the chunk: read it again with the next
                deferred = s
                break
            last = taken
            self._floor = view.next(taken) or len(buf)
        if deferred is not None and len(buf) - deferred < MAX_CARRY:
            keep = max(start, deferred - LOOKBACK)
            keep = buf.rfind(b"\n", 0, keep) + 1 if keep > 0 else 0
            keep = min(keep, deferred)
            self._first = self._number(buf, base, keep, deferred, lineno) if given else \
                lineno - buf.count(b"\n", keep, deferred)
            self._tail, self._parts = buf[keep:deferred], [buf[deferred:]]
            self._size = len(buf) - deferred
            self._forget(base + keep)
            return
        keep = buf.rfind(b"\n", 0, max(len(buf) - LOOKBACK, 0)) + 1 if len(buf) > LOOKBACK else 0
        if given:
            self._first = self._number(buf, base, keep, counted, lineno)
        else:
            self._first = lineno + buf.count(b"\n", counted, keep) if keep >= counted else \
                lineno - buf.count(b"\n", keep, counted)
        self._tail, self._parts, self._size = buf[keep:], [], 0
        self._forget(base + keep)

    def _number(self, buf: bytes, base: int, s: int, ref: int, ref_n: int) -> int:
        """The number of the line of ``buf`` that starts at ``s``, given the line that starts at ``ref`` and its
        number ``ref_n``: counted from the nearest of that line and the lines numbered by :meth:`given` in buf."""
        x = base + s
        lo, hi = base, base + len(buf)
        for _at, _end, starts, numbers in self._marks:
            k = bisect_right(starts, x)
            for i in (k - 1, k):
                if 0 <= i < len(starts) and lo <= starts[i] < hi and abs(starts[i] - x) < abs(ref - s):
                    ref, ref_n = starts[i] - base, numbers[i]
        if ref <= s:
            return ref_n + buf.count(b"\n", ref, s)
        return ref_n - buf.count(b"\n", s, ref)

    def _forget(self, before: int) -> None:
        """What :meth:`given` handed over before offset ``before`` of the text (no chunk reads it again)."""
        if self._marks and self._marks[0][1] < before:
            self._marks = [m for m in self._marks if m[1] >= before]
        if self._hits and self._hits[0] < before:
            del self._hits[:bisect_right(self._hits, before - 1)]

    def _line(self, view: _View, s: int, lineno: int, final: bool) -> Optional[int]:
        """Read the line at ``s``: a prompt, a process's end, the anchor of a block. Returns the offset of the
        last line of a block taken from it, -1 when the block may go on past the chunk, None otherwise."""
        raw = view.raw(s)
        known = self._anchors.get(raw)
        if known is None:
            if len(self._anchors) >= MAX_LINES:
                self._stop(f"{MAX_LINES} distinct lines read")
                return None
            known = self._anchors[raw] = (_anchors(view.peeled(s), raw), any(w in raw for w in _END_WORDS))
        anchors, ends_here = known
        p = view.peeled(s)
        if p.layers and p.layers[-1].kind == "prompt":
            self.host = p.host()
        if ends_here:
            self._end(view, s, lineno, p.line)
        for kind, k in anchors:
            taken = self._block(view, s, lineno, kind, k, final)
            if taken is not None:
                return taken
        if anchors and len(self.found.partial) < MAX_PARTIAL:
            self.found.partial.append(Partial(anchors[0][0].NAME, self.path, lineno, p.text.strip(), self.host))
        return None

    def _end(self, view: _View, s: int, lineno: int, text: str) -> None:
        def above(k: int) -> Optional[str]:
            at: Optional[int] = s
            for _ in range(k):
                at = view.prev(at) if at is not None else None
            return view.peeled(at).line if at is not None else None

        no = ends.signal_of(text)
        if no is not None and no > 0:
            self.found.signals.append((no, ends.Line(self.path, lineno, text, ends.host_of(text, above))))
        if ends.oom(text):
            self.found.oom.append(ends.Line(self.path, lineno, text))
        if ends.memlock_unlimited(text):
            self.found.memlock_unlimited.append(ends.Line(self.path, lineno, text))
        if "lsmod" in text and ends.LSMOD_GREP_PEERMEM.search(_command(view.peeled(s))):
            nxt = view.next(s)
            after = view.peeled(nxt) if nxt is not None else None
            # the next line is the next prompt (or a bare one): grep printed nothing
            if after is not None and (_is_prompt(after) or _bare_prompt(after)):
                self.found.peermem_absent.append(ends.Line(self.path, lineno, text))
        here = view.peeled(s)  # the line read through its decorations (a launcher's prefix, a time, a quote mark)
        if "ib" in text:
            typed = _command(here) or _rdma_test(here)
            m = ends.RDMA_TEST_MTU.search(typed)
            if m:
                self.found.rdma_test_mtu.append((ends.Line(self.path, lineno, m.string.strip(), here.host() or self.host),
                                                 int(m.group("mtu"))))
            d = ends.RDMA_TEST_DEVICE.search(typed or here.text)  # a test named in a sentence ran there too
            if d:
                self.found.rdma_test_device.append((ends.Line(self.path, lineno, (typed or here.text).strip()[:300],
                                                              here.host() or self.host),
                                                    d.group("dev")))
        if here.text.startswith(ends.FIRST_DEVICE) and ends.SECOND_DEVICE not in here.text:  # a list run into a line
            after = _next_text(view, s)
            if after is not None and not after.startswith(ends.SECOND_DEVICE):
                self.found.one_gpu.append(ends.Line(self.path, lineno, here.text.strip()[:300], here.host() or self.host))
        command = ends.container_without_gpus(here.text) if ends.CONTAINER_START.search(here.text) else ""
        if command:
            self._container_failure(view, s, lineno, command, here.host() or self.host)
        if "nccl.conf" in text and ends.NCCL_CONF_CAT.search(_command(here)):
            self._nccl_conf(view, s, lineno, here.host() or self.host)
        if "sinfo" in here.text and ends.SINFO_REASONS.match(here.text):
            self._sinfo_reasons(view, s, lineno)
        elif "NODELIST" in here.text and ends.SINFO_HEADER_LINE.match(here.text):
            self._sinfo_reasons(view, s, lineno, header=here.text)

    def _sinfo_reasons(self, view: "_View", s: int, lineno: int, header: str = "") -> None:
        """The rows of the 'sinfo -R' typed at ``s`` (or of the table whose ``header`` is at ``s``): its output, the
        lines down to the next prompt; a row read already (under its command) is not read again."""
        lines: List[Tuple[int, str]] = [(lineno, header)] if header else []
        for k, q in _after(view, s, ends.SINFO_AFTER):
            if _is_prompt(q) or _bare_prompt(q):
                break
            lines.append((lineno + k, q.text))
        rows = ends.sinfo_reasons([t for _, t in lines])
        seen = {(x.path, x.lineno) for x, _, _ in self.found.slurm_reasons}
        for reason, nodes in rows:
            n = next((n for n, t in lines if t.rstrip().endswith(nodes)), lineno)
            if (self.path, n) not in seen:
                self.found.slurm_reasons.append((ends.Line(self.path, n, f"{reason}  {nodes}"), reason, nodes))

    def _nccl_conf(self, view: "_View", s: int, lineno: int, host: Optional[str]) -> None:
        """The settings of the NCCL configuration file printed by the 'cat' typed at ``s``: its lines down to the
        next prompt or the first line such a file does not hold (neither 'NAME=VALUE', nor a '#' comment, nor
        empty); a line read already is not read again."""
        seen = {(x.path, x.lineno) for x, _, _ in self.found.nccl_conf}
        for k, q in _after(view, s, ends.NCCL_CONF_AFTER):
            if _is_prompt(q) or _bare_prompt(q):
                break
            text = q.text.strip()
            if not text or text.startswith("#"):
                continue
            m = ends.NCCL_CONF_VAR.match(text)
            if not m:
                break
            if m.group("name").startswith("NCCL_") and (self.path, lineno + k) not in seen:
                self.found.nccl_conf.append((ends.Line(self.path, lineno + k, text, host), m.group("name"),
                                             m.group("value").strip()))

    def _container_failure(self, view: "_View", s: int, lineno: int, command: str, host: Optional[str]) -> None:
        """A container started without its GPU option (``command``, at line ``lineno``) whose output, before the
        next prompt, says the program in it found no usable GPU driver."""
        for k, q in _after(view, s, ends.CONTAINER_AFTER):
            if _is_prompt(q):
                return
            if ends.GPU_UNREACHABLE.search(q.text):
                self.found.container_no_gpu.append((ends.Line(self.path, lineno, command, host),
                                                    ends.Line(self.path, lineno + k, q.text.strip(), host)))
                return

    def _block(self, view: _View, s: int, lineno: int, kind: ModuleType, k: int, final: bool) -> Optional[int]:
        p = view.peeled(s)
        template = p.layers[:k]
        if k < 0:  # the output written after the command on its line ('dkms status # nvidia/570..., installed')
            template = p.layers
            got, first, last, reached = [(s, p.trailing())], s, s, False
        elif getattr(kind, "MODE", "block") == "lines":
            got, first, last, reached = _kernel_lines(view, s, kind, template, self._floor)
            if not got:
                return None
        else:
            got, first, last, reached = _extent(view, s, kind, template, self._floor)
        if reached and not final:
            return -1
        cuts = getattr(kind, "restarts", None)
        at = cuts([t for _, t in got]) if cuts is not None else []
        if at:  # one tool's output run again with no prompt between: each run is a block (a reading) of its own
            start = lineno - sum(1 for _ in _between(view, first, s))
            for a, b in zip([0] + at, at + [len(got)]):
                part = got[a:b]
                self._emit(view, part[0][0], start + a, kind, k, p, template, part, part[0][0])
            return last
        if self._emit(view, s, lineno - sum(1 for _ in _between(view, first, s)), kind, k, p, template, got,
                      first) is None:
            return None
        return last

    def _emit(self, view: _View, s: int, start: int, kind: ModuleType, k: int, p: L.Peeled,
              template: Sequence[L.Layer], got: List[Tuple[int, str]], first: int) -> Optional[bool]:
        """The block of the lines ``got`` (the first at line ``start``), or None where they are no block."""
        texts = [t for _, t in got]
        enough = getattr(kind, "enough", None)
        if not enough(texts) if enough is not None else sum(1 for t in texts if t.strip()) < getattr(kind, "MIN", 1):
            return None
        above = view.prev(first)
        command = _command(view.peeled(above)) if above is not None else ""
        sections = kind.sections(texts, Context(command))
        if sections is None or (not sections and kind.SOURCES and not getattr(kind, "CONTEXT", False)):
            return None
        end = start + len(got) - 1  # a block's lines are consecutive
        host = p.host(k if k >= 0 else None) or _line_host(view, got) or (view.peeled(above).host() if above is not None and
                                                      _is_prompt(view.peeled(above)) else None) or self.host
        text = "\n".join(texts)
        key = (kind.NAME, host, text)
        if key in self._seen:
            self._seen[key].repeats += 1
            return True
        if len(self.found.blocks) >= MAX_BLOCKS or self._text + len(text) > MAX_TEXT:
            self._stop(f"{len(self.found.blocks)} blocks, {self._text} characters of them read")
            return True
        pod = _prompt_host(view.peeled(above)) if above is not None else None
        pod = pod if pods.in_pod(pod) else host if pods.in_pod(host) else ""
        block = Block(kind.NAME, sections, self.path, start, end, host, tuple(la.kind for la in template), command,
                      text[:65536], pod=pod or "")
        self._seen[key] = block
        self._text += len(text)
        self.found.blocks.append(block)
        return True

    def _stop(self, why: str) -> None:
        self._stopped = True
        if not self.found.bounded:
            self.found.bounded = f"{self.path}: read for node outputs up to a bound ({why}); the rest was not"


def _anchors(p: L.Peeled, raw: bytes) -> list:
    """``(kind, layers)`` of every kind whose anchor the line is, with how many of its layers surround it."""
    return _behind_time(_anchors_of(p, raw), p)


def _anchors_of(p: L.Peeled, raw: bytes) -> list:
    out = []
    for kind, words in zip(KINDS, _KIND_WORDS):
        if not any(w in raw for w in words):
            continue
        if getattr(kind, "MODE", "block") == "lines":
            k = kind.classify(p)
            if k is not None:
                out.append((kind, k))
            continue
        first = 0
        if getattr(kind, "KEEP_TIME", False):  # a log whose lines keep their time: what surrounds the time goes
            first = next((i for i, la in enumerate(p.layers) if la.kind == "time"), len(p.layers))
        for k in range(first, len(p.layers) + 1):
            if kind.anchor(p.stage(k)):
                out.append((kind, k))
                break
        else:
            trailing = p.trailing()
            if trailing and kind.anchor(trailing):
                out.append((kind, -1))
    return out


def _behind_time(out: list, p: L.Peeled) -> list:
    """The anchors of a line without the kernel's where another kind's anchor lies behind the time the kernel
    would read as its own, and the kernel's areas read no word of the line: a tool's output stamped line by line
    (a syslog ``host kernel:`` or ``dmesg -T`` time before each line of ``lspci`` or ``dcgmi``) is the tool's."""
    lines = [(kind, k) for kind, k in out if getattr(kind, "MODE", "block") == "lines"]
    if not lines or len(lines) == len(out):
        return out
    deepest = max(k for _, k in lines)
    behind = p.stage(deepest + 1) if deepest < len(p.layers) else ""
    if (not any(k > deepest or kind.anchor(behind) for kind, k in out if (kind, k) not in lines)
            or lines[0][0].said(p.text)):
        return out
    return [(kind, k) for kind, k in out if (kind, k) not in lines]


def _foreign(p: L.Peeled, raw: bytes, kind: ModuleType) -> bool:
    """Whether a line the kernel's ``kind`` reads is another kind's (:func:`_behind_time`)."""
    if _block_search().search(raw) is None:
        return False  # no word of a kind read by blocks: the kernel's
    mine = (kind, kind.classify(p))
    out = [a for a in _anchors_of(p, raw) if a[0] is not kind]
    return bool(out) and mine not in _behind_time([mine] + out, p)


def _extent(view: _View, s: int, kind: ModuleType, template: Sequence[L.Layer], floor: int = 0):
    """The lines of a block anchored at ``s``, none above ``floor``: ``([(offset, text)], first offset, last
    offset, whether it reached the end of the chunk)``."""
    got = [(s, L.follow(view.peeled(s), template) or view.peeled(s).stage(len(template)))]
    member, anchor = kind.member, kind.anchor
    limit = getattr(kind, "MAX", MAX_BLOCK_LINES)
    if getattr(kind, "UP", True):
        at = s
        while len(got) < limit:
            up = view.prev(at)
            if up is None or up < floor:
                break
            t = view.follow(up, template, -len(got))
            if t is None or not t.strip() or not (member(t) or anchor(t)) or _is_prompt(view.peeled(up)):
                break
            got.insert(0, (up, t))
            at = up
    gaps: List[Tuple[int, str]] = []
    at, reached = s, False
    below = 0  # the lines below the anchor read so far
    allowed = getattr(kind, "GAPS", 1)
    while len(got) < limit:
        down = view.next(at)
        if down is None:
            reached = True
            break
        t = view.follow(down, template, below + 1)
        below += 1
        if t is None or _is_prompt(view.peeled(down)):
            break  # another front, or the next command
        if not t.strip():
            gaps.append((down, t))
            if len(gaps) > allowed:
                break
            at = down
            continue
        if member(t) or anchor(t):
            got += gaps + [(down, t)]
            gaps = []
            at = down
            continue
        break
    return got, got[0][0], got[-1][0], reached


def _kernel_lines(view: _View, s: int, kind: ModuleType, template: Sequence[L.Layer], floor: int = 0):
    """The kernel lines around ``s`` with the same front (and the lines they continue on), none above
    ``floor``."""
    k = len(template)
    first = view.peeled(s)
    host = first.host()

    def kernel(at: int, step: int) -> Optional[str]:
        q = view.peeled(at)
        kk = kind.classify(q)
        if L.follow(q, template, step) is None or q.host() != host or _is_prompt(q):
            return None
        if kk is not None and _foreign(q, view.raw(at), kind):
            return None  # another kind's output behind the same time: its block starts here
        if kk is None and k == len(q.layers) == len(first.layers) and kind.same_writer(q.text, first.text):
            return q.stage(k)  # a message the kernel wrote over several lines of the same driver ('NVRM: ...')
        if kk != k:
            return None
        return q.stage(k)

    got = [(s, view.peeled(s).stage(k))]
    at = s
    while len(got) < MAX_BLOCK_LINES:
        up = view.prev(at)
        if up is None or up < floor:
            break
        t = kernel(up, -len(got))
        if t is None:
            break
        got.insert(0, (up, t))
        at = up
    at, reached = s, False
    anchored = len(got) - 1  # where the anchor's line is among the lines taken
    while len(got) < MAX_BLOCK_LINES:
        down = view.next(at)
        if down is None:
            reached = True
            break
        below = len(got) - anchored
        t = kernel(down, below)
        if t is None:
            rest = view.follow(down, template, below)
            if rest is not None and kind.continues(rest):
                t = rest
        if t is None:
            q = view.peeled(down)
            if kind.classify(q) is not None and _foreign(q, view.raw(down), kind):
                # another kind's output starts there: the lines just above it that the kernel's areas read
                # nothing of are its head ('Fabric' above nvidia-smi -q's 'State : ...'), left to it
                while got and not kind.said(view.peeled(got[-1][0]).text):
                    got.pop()
            break
        got.append((down, t))
        at = down
    if not got:
        return got, s, s, False
    return got, got[0][0], got[-1][0], reached


def _between(view: _View, first: int, s: int):
    """The lines from ``first`` up to (not including) ``s``."""
    at: Optional[int] = first
    while at is not None and at < s:
        yield at
        at = view.next(at)


def _line_host(view: _View, got: Sequence[Tuple[int, str]]) -> Optional[str]:
    for at, _ in got:
        h = view.peeled(at).host()
        if h:
            return h
    return None


def _after(view: "_View", s: int, limit: int) -> Iterator[Tuple[int, L.Peeled]]:
    """The (up to ``limit``) lines after the line at ``s``, each with its distance from it, peeled."""
    at: Optional[int] = s
    for k in range(1, limit + 1):
        at = view.next(at)
        if at is None:
            return
        yield k, view.peeled(at)


def _is_prompt(p: L.Peeled) -> bool:
    return bool(p.layers) and p.layers[-1].kind == "prompt"


def _bare_prompt(p: L.Peeled) -> bool:
    """A prompt with nothing typed after it ('#', '$', '>'), behind whatever a paste put before it."""
    text = p.text.strip()
    return text in ("#", "$", ">") or (not text and bool(p.layers) and p.layers[-1].kind == "comment")


def _prompt_host(p: L.Peeled) -> Optional[str]:
    """The host a shell prompt on a line names, behind whatever a paste put before it (a label, an indent) and
    whichever host those name: the host the command was typed on."""
    for layer in reversed(p.layers):
        if layer.kind == "prompt":
            return layer.host
    m = L.PROMPT.match(p.text.lstrip(" \t")) if "@" in p.text[:400] else None
    return (m.group("host") or m.group("segments")) if m else None


def _next_text(view: "_View", s: int, most: int = 4) -> Optional[str]:
    """The text of the first line after the one at ``s`` that is not blank (a paste may put blank lines between
    lines), within ``most`` lines; None where the chunk or the bound ends first."""
    at: Optional[int] = s
    for _ in range(most):
        at = view.next(at) if at is not None else None
        if at is None:
            return None
        text = view.peeled(at).text.strip()
        if text:
            return text
    return None


def _command(p: L.Peeled) -> str:
    """The command typed on a line: after a prompt, or a line (or ``# `` comment) that starts with one."""
    if _is_prompt(p):
        return p.text.strip()
    for k in range(len(p.layers) + 1):
        text = p.stage(k)
        if L.COMMAND.match(text):
            return text.strip()
    return ""


def _rdma_test(p: L.Peeled) -> str:
    """An RDMA test's command typed at the front of a line that the paste reader takes for no command (indented,
    behind a launcher's label), "" where the line starts with none."""
    for k in range(len(p.layers) + 1):
        text = p.stage(k)
        if ends.RDMA_TEST_START.match(text):
            return text.strip()
    return ""


def read(data: bytes, path: str = "<text>") -> Found:
    """The blocks of a whole text given at once (:class:`Reader`)."""
    r = Reader(path)
    r.feed(data)
    return r.end()
