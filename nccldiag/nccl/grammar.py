"""The grammar of NCCL logs: what each line means. Pure: text in, records and matches out.

What NCCL logged is the only trustworthy record of which transport a job really used: the environment says what
was asked for, the ``Channel ... via ...`` lines say what happened. Logs come as people actually have them: one
file per process (``NCCL_DEBUG_FILE``) or everything interleaved on stdout, behind launcher prefixes
(``[1,3]<stdout>:``, ``[rank0]:``, ``host: ``, ``[0] ``), timestamps, colour codes, and lines wrapped or glued
together by whoever copied them. Every pattern is therefore an unanchored search on the text after the
``<host>:<pid>:<tid> [<cudaDev>] NCCL INFO|WARN`` prefix, and a physical line holding two prefixes is split into
two records (:class:`Reader`).

Formats covered: NCCL 2.0 to 2.30. The prefix of every release is a row of ``knowledge/nccl_formats.toml``
(its source at each tag): the untagged level of 2.0-2.2 (``[0] misc/ibvwrap.cu:61 WARN``), ``.cu`` sources up to
2.4.2, TRACE and CALL lines, the timestamp 2.26 and later write before a WARN (any ``NCCL_DEBUG_TIMESTAMP_FORMAT``
of a time of day, a date and time, or Unix time), ``(func)`` in the WARN lines of 2.30.7. Messages: 2.1's
``0 -> 1 via P2P/IPC``, 2.4's ``Ring 00 : 0 -> 1 via NET/IB/0``, to 2.30's ``SHM/direct``. The handlers that turn matches into facts are :mod:`nccldiag.nccl.parser`'s.

A log is not trusted, and a line may be 64 KiB: every expression here runs in time linear in the length of the
text it is given (``tests/unit/test_nccllog_linear.py``). A run of a character class that must end before a
literal starts only where such a run starts (a lookbehind), instead of being tried again from each of its
characters; an expression that scans on from a head to a tail is tried once, where its head first matches
(:class:`FirstHead`), or scans only up to the next head; the rest of a line is read up to its last non-blank
(``.*\\S``), not tried for trailing blanks from each position; a number is converted from at most
:data:`MAX_DIGITS` digits.

:data:`WORDS` holds every literal word the grammar's guards and expressions rely on to read a line, and the words
of the failure lexicon (:data:`LEXICON_WORDS`): the prefilter (:mod:`nccldiag.nccl.scan`) hands the parser only the
lines holding one of them.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from nccldiag import fronts, knowledge, rx
from nccldiag.knowledge import lexicon
from nccldiag.nccl.facts import (
    COLLNET, ERROR_RESULTS, NET_IB, NET_IB_GDR, NET_SOCKET, P2P, SHM, ChainStep, Loc, Proc, Warn)

# A guarded expression: (word, expression). Every match of the expression holds the word, a literal text, so a line
# without the word is not read by it (the prefilter's test, :data:`WORDS`). A word may end in a regular expression
# after a NUL, the rest of the guard, which a prefilter may test too ('size\0\\s+(?:count|N)').
Guarded = Tuple[Tuple[str, str], ...]


def _alternation(words: Iterable[str]) -> str:
    """A regular expression matching exactly ``words`` (literal), as a trie: each position is tried once per first
    character, not once per word."""
    root: Dict[str, dict] = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: Dict[str, dict]) -> str:
        alts = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        if len(alts) == 1 and "" not in node:
            return alts[0]
        return "(?:" + "|".join(alts) + ")" + ("?" if "" in node else "")

    return emit(root)


def _either(rows: Guarded) -> str:
    """The expressions of guarded ``rows`` as one alternation."""
    return "|".join(x for _, x in rows)


class FirstHead:
    """An expression ``full`` that scans on from where its ``head`` matched (``head .*? tail``), searched once: where
    the head first matches. Where ``full`` fails there, it fails at every later match of the head too (its scan
    from there could only find less), so :meth:`search` gives the match ``re.search`` would, in one scan of the
    text instead of one per match of the head. ``full`` is the plain expression (what tests generate text from)."""

    __slots__ = ("head", "full", "pattern", "flags")

    def __init__(self, head: str, full: str, flags: int = 0) -> None:
        self.head, self.full = rx.compile(head, flags), rx.compile(full, flags)
        self.pattern, self.flags = self.full.pattern, self.full.flags

    def search(self, text: str) -> Optional["re.Match[str]"]:
        h = self.head.search(text)
        return self.full.match(text, h.start()) if h is not None else None


Expression = Union["re.Pattern[str]", FirstHead]  # what a table row searches a message with


# --------------------------------------------------------------------------- lines -> records

# Colour codes whose ESC was lost on the way ('[0m', '[1;31m', and '[m' where no small letter follows: never the
# kernel's '[mem 0x...]' or a '[mlx5_0]').
_ANSI_RESIDUE = rx.compile(r"\[(?:\d{1,3}(?:;\d{1,3})*m|m(?![a-z]))")
# The prefix of every release (knowledge/nccl_formats.toml): the pid and tid may be anonymised ('<pid>', 'XXXX');
# the releases before the open source (2.0-2.2) wrote the level without 'NCCL '; a TRACE line holds the
# milliseconds since init and the function before the level; a CALL line (2.13 and later) has no cudaDev.
PREFIX = rx.compile(
    r"(?<![A-Za-z0-9_.<>\-])(?P<host>[A-Za-z0-9_.<>\-]*):(?P<pid>\d+|[^\s:\[\]\d][^\s:\[\]]{0,23}):"
    r"(?P<tid>\d+|[^\s:\[\]\d][^\s:\[\]]{0,23}) (?:\[(?P<dev>-?\d+)\] (?:\d{1,12}\.\d{1,9} )?"
    r"(?:(?P<file>[\w./+\-]+):(?P<fline>\d+) (?:\((?P<func>[^()\s]*)\) )?)?"
    r"(?:NCCL )?(?P<level>INFO|WARN|TRACE|ABORT)|NCCL (?P<call>CALL))(?= |$)"
)
# The timestamp NCCL 2.26 and later write before a WARN's prefix (NCCL_DEBUG_TIMESTAMP_FORMAT, '[%F %T] ' by
# default): a bracketed time of day, with or without the date, or a bare ISO date and time or Unix time. Searched
# in the TS_ROOM characters before the prefix only.
_WARN_TS = rx.compile(
    r"(?:\[(?P<b>(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)\]"
    r"|(?<![^\s\]>:])(?P<u>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?|\d{9,11}(?:\.\d{1,9})?))\s*$")
TS_ROOM = 64
_LAUNCHER = rx.compile(r"^[ \t]{0,12}(?:\[\d{1,9},(?P<ompi>\d{1,9})\]<(?:stdout|stderr)>:|"
                       r"\[(?:rank|default|local_rank)(?P<torch>\d{1,9})\]:|(?P<srun>\d{1,9}): )")
# What else a launcher, a logger or a terminal puts before each line, taken off in any order before a line
# without an NCCL prefix is read (front()): a timestamp (ISO, dmesg's '[ 12.345]' and '-T' '[Wed May  1
# 12:00:00 2024]', a chat's or rich's bracketed clock, a syslog or journal prefix, which names a host and a
# process), a quote mark, a worker's or a collector's label and a logging library's (nccldiag.fronts: Ray, vLLM,
# kubectl, docker compose, Open MPI; Python logging, loguru, rich), and pdsh's or clush's 'host: ' (a lower-case
# name holding a digit: never a message's first word).
# the names the kernel puts at the front of its messages, which are no hosts
_DEVICE_NAMES = (r"(?:nvidia|nvswitch|nv_|mlx|ib\d|ibp|eth\d|en[opsx]|wl|bond|nvme|sd[a-z]|hfi|i40|ice|irdma|bnxt|qed|"
                 r"usb|ata\d|scsi|pci|acpi|xhci|virtio|vfio|dm-|md\d|loop|tty|cpu|mpt|megasas|ahci|i2c|drm|snd|hid|"
                 r"input|rtc|tpm|ipmi|kvm|efi|nfs|docker|veth|br-|vxlan|lo\b|cuda|sm_?\d|gfx\d)")
_FRONT = rx.compile(
    r"[ \t]{0,12}(?:>[ \t]?|"
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?(?: |:[ \t]|$)|"
    r"\[[ \t]{0,12}(?:\d{1,10}\.\d{1,9}|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?|[A-Z][a-z]{2} [A-Z][a-z]{2}[ \t]{1,2}\d{1,2} \d\d:\d\d:\d\d \d{4}|" + fronts.CLOCK + r")\][ \t]{0,2}|"
    r"[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d(?:[.,]\d{1,9})? [^\s:\[\]]{1,253} "
    r"[^\s:\[\]]{1,100}(?:\[\d{1,10}\])?:[ \t]?|"
    + fronts.WORKER + r"|" + fronts.LOGGER + r"|"
    r"(?!" + _DEVICE_NAMES + r")(?=[a-z0-9.-]{0,62}\d)[a-z][a-z0-9.-]{0,62}: )")
_FRONT_FIRST = frozenset(" \t>[(|-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
MAX_FRONT = 6  # things taken off the front of one line at most


@dataclass
class Rec:
    kind: str  # info, warn, trace, bare
    msg: str
    at: Loc
    text: str
    file: Optional[str] = None
    fline: Optional[int] = None
    func: Optional[str] = None
    timestamp: Optional[str] = None
    launcher_rank: Optional[int] = None


# What chat and markdown put around pasted lines: quote markers, list bullets, bold, inline code, fences.
# What clean() removes from inside a line, and so could hide a word there: colour codes, their ESC-less residue
# (_ANSI_RESIDUE), bold and inline code.
CLEAN_MARKS = ("\x1b", "[\0[0-9;]*m", "**", "`")
_QUOTE = rx.compile(r"^\s*(?:>\s?)+")
_BULLET = rx.compile(r"^\s*(?:[*+•]|-(?=\s+\S))\s+")
# a forum's or an editor's line number before the line ('  10. ', '10 | '; '10: ' reads as srun's label), and the
# same number again as 'grep -n' or 'cat -n' wrote it before the forum numbered its lines ('12 | 12: [rank3]: ...')
_NUMBERED = rx.compile(r"[ \t]{0,8}(?P<n>\d{1,6})(?:\.[ \t]|[ \t]{0,2}\|(?:[ \t]|$))(?:(?P=n)[:\t][ \t]?)?")
_FENCE = rx.compile(r"^\s*(?:```|~~~)")


_ENTITY = rx.compile(r"&(?:[a-zA-Z]{2,8}|#\d{1,7}|#[xX][0-9a-fA-F]{1,6});")
_BREAK_END = rx.compile(r"(?:<br[ \t]{0,4}/?>[ \t]{0,8}){1,4}$", re.I)


def clean(line: str) -> str:
    """The line without a byte order mark, what a carriage return rewrote, colour codes (and their ESC-less residue), markdown wrapping, HTML
    escapes and the ``<br>`` that ends a line copied from a web page, or trailing blanks."""
    if line[:1] == "\ufeff":  # the byte order mark a Windows editor writes at the start of a text
        line = line[1:]
    if "\r" in line or "\x1b" in line:  # colour codes, a progress bar's frames: what a terminal shows
        line = fronts.plain(line)
    if "&" in line and ";" in line and _ENTITY.search(line):
        line = html.unescape(line).replace("\xa0", " ")
    if ">" in line and "<" in line:
        line = _BREAK_END.sub("", line.rstrip())
    if "m" in line and "[" in line and _ANSI_RESIDUE.search(line):
        line = _ANSI_RESIDUE.sub("", line)
    first = line[:1]
    if (first.isdigit() or first in " \t") and _NUMBERED.match(line):
        line = line[_NUMBERED.match(line).end():]
        first = line[:1]
    if first in " \t>*+-•`~":
        if _FENCE.match(line):
            return ""
        if ">" in line[:8]:
            line = _QUOTE.sub("", line, count=1)
        line = _BULLET.sub("", line, count=1)
    if "**" in line:
        line = line.replace("**", "")
    if "`" in line:
        line = line.replace("`", "")
    return line.rstrip()


# A host name as people redact it before they post a log: 'node-xxx', 'XXXX', '<redacted>', '<hostname>', '***',
# '...', 'host-REDACTED'. Such a name tells no host from another: several machines share it.
_ANONYMISED_HOST = rx.compile(r"[\w.-]{0,60}(?:[xX]{3}|\*{3}|\.\.\.|[Rr]edacted|REDACTED|[Aa]nonymi[sz]ed)[\w.*-]{0,60}|"
                              r"<[\w .-]{1,40}>|\*{1,8}|[xX]{1,8}")


def anonymised_host(host: str) -> bool:
    """Whether ``host`` (a host name read in a log) was redacted before the log was posted."""
    return bool(host) and _ANONYMISED_HOST.fullmatch(host) is not None


def _num(s: str) -> int:
    """A pid or tid as a number; an anonymised one ('<pid>', 'XXXX') gets a stable number of its own, and so does one
    of digits int() does not read (a superscript '²' is a digit to isdigit, not a decimal)."""
    if s.isdecimal():
        return int(s) if len(s) <= MAX_DIGITS else num(s)
    import zlib

    return -1 - zlib.crc32(s.encode("utf-8", "replace")) % 1000000


_LEVELS = {"INFO": "info", "WARN": "warn", "ABORT": "warn"}
_LAUNCHER_FIRST = frozenset(" \t[0123456789")  # the characters a launcher prefix can start with


def records(lines: Iterable[str], source: str, count: Optional[List[int]] = None) -> Iterator[Rec]:
    """Records of one log, line by line. A record is held back one line: the next line may complete it.

    ``count``, when given, receives the number of lines read once the log ends.
    """
    return numbered_records(enumerate(lines, 1), source, count)


def numbered_records(lines: Iterable[Tuple[int, str]], source: str,
                      count: Optional[List[int]] = None) -> Iterator[Rec]:
    """:func:`records` of ``(line number, line)`` pairs: the numbers may skip lines a prefilter left out (a
    skipped line never continues a record: only the line right after one does)."""
    reader = Reader(source)
    n = 0
    for n, raw in lines:
        yield from reader.line(n, raw)
    if count is not None:
        count.append(n)
    yield from reader.end()


READ_MEMO_BYTES = 4 * 1024 * 1024  # bytes of distinct lines whose reading a Reader remembers


class Reader:
    """Records of one log, one line at a time (:func:`numbered_records`). A record is held back one line: the
    next line may complete it (``held``); ``prev`` is the last of them, still open to a wrapped continuation.

    What a line reads as, apart from its number and the lines around it (:func:`read_line`), depends on its text
    alone: the reader remembers it for the distinct lines of its log read more than once (:meth:`line`'s
    ``again``), up to :data:`READ_MEMO_BYTES` of them, so a line that comes again (the same setting line of every
    communicator, read in full while its list of records fills) is cleaned and matched once."""

    __slots__ = ("source", "prev", "held", "memo", "room")

    def __init__(self, source: str) -> None:
        self.source = source
        self.prev: Optional[Rec] = None
        self.held: List[Rec] = []
        self.memo: Dict[str, Tuple] = {}
        self.room = READ_MEMO_BYTES

    def line(self, n: int, raw: str, again: bool = True) -> List[Rec]:
        """Read line ``n``: the records it completes, in order (those held before it, a bare line's own).
        ``again``: the line may have come before (where it surely has not, it is not looked up nor remembered)."""
        got = self.memo.get(raw) if again else None
        if got is None:
            got = read_line(raw)
            if again and self.room > 0:
                self.memo[raw] = got
                self.room -= len(raw) + 64
        stripped, lrank, body, parts = got
        if parts is None:
            prev = self.prev
            if prev is not None and prev.at.lineno == n - 1 and wrapped(prev.msg, body):
                # A line wrapped by whoever copied the log: the rest of the previous message.
                prev.msg += body.strip()
                prev.text += body.strip()
                return []
            out = self.held
            self.held = []
            self.prev = None
            if body:
                out.append(Rec("bare", body, Loc(self.source, n), stripped, launcher_rank=lrank))
            return out
        out = self.held
        source = self.source
        held = [Rec(kind, msg, Loc(source, n, host, pid, tid, dev), text, file, fl, func, ts, lrank)
                for kind, msg, host, pid, tid, dev, text, file, fl, func, ts in parts]
        self.prev = held[-1]
        self.held = held
        return out

    def end(self) -> List[Rec]:
        out, self.held, self.prev = self.held, [], None
        return out


def front(line: str) -> Tuple[str, Optional[int]]:
    """``line`` (cleaned) without what launchers, loggers and pastes put before it (:data:`_LAUNCHER`,
    :data:`_FRONT`, in any order, :data:`MAX_FRONT` at most), and the rank a launcher's tag names (or None)."""
    lrank = None
    for _ in range(MAX_FRONT):
        first = line[:1]
        if first in _LAUNCHER_FIRST:
            m = _LAUNCHER.match(line)
            if m:
                if lrank is None:
                    lrank = num(next(g for g in m.groups() if g is not None))
                line = line[m.end():]
                continue
        if first in _FRONT_FIRST:
            m = _FRONT.match(line)
            if m and m.end():
                line = line[m.end():]
                continue
        break
    return line, lrank


def read_line(raw: str) -> Tuple[str, Optional[int], str, Optional[Tuple[Tuple, ...]]]:
    """What line ``raw`` reads as, whatever its number and the lines around it: ``(line, launcher rank, body,
    prefixes)``; the line cleaned and stripped, the rank of a launcher's tag; for a line without an NCCL prefix,
    ``prefixes`` is ``None`` and ``body`` the stripped text after the tag; else ``prefixes`` holds, for each NCCL
    prefix, the fields of its record but where it was read (:class:`Rec` and :class:`Loc`)."""
    line = clean(raw)
    matches = prefixes(line)
    if not matches:
        body, lrank = front(line)
        return line.strip(), lrank, body.strip(), None
    m_l = _LAUNCHER.match(line) if line[:1] in _LAUNCHER_FIRST else None
    lrank = num(next(g for g in m_l.groups() if g is not None)) if m_l else None
    parts = []
    before = 0  # where the text between the prefix before and this one starts
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        msg = line[m.end():end].strip()
        host, pid, tid, dev, file, fline, func, level = m.group(
            "host", "pid", "tid", "dev", "file", "fline", "func", "level")
        kind = _LEVELS.get(level, "trace")
        ts = None
        if kind == "warn":
            tsm = _WARN_TS.search(line, max(before, m.start() - TS_ROOM), m.start())
            ts = (tsm.group("b") or tsm.group("u")) if tsm else None
        before = m.end()
        # the numbers of a prefix, converted in place (num() for one of more than MAX_DIGITS digits)
        fl = (int(fline) if len(fline) <= MAX_DIGITS else num(fline)) if fline else None
        parts.append((kind, msg, host, _num(pid), _num(tid),
                      None if dev is None else int(dev) if len(dev) <= MAX_DIGITS else num(dev),
                      line[m.start():end].strip(), file, fl, func, ts))
    return line.strip(), lrank, "", tuple(parts)


# What a line holding an NCCL prefix holds (NCCL 2.0-2.3 wrote the level without 'NCCL '): prefixes() looks for them.
PREFIX_WORDS = ("NCCL ", "] INFO ", " WARN ")


def prefixes(line: str) -> List["re.Match[str]"]:
    """The NCCL prefixes of a line; usually one, two or more when output of processes was glued together. A line
    holds one only with a word of PREFIX_WORDS."""
    if "NCCL " not in line and "] INFO " not in line and " WARN " not in line:
        return []
    m = PREFIX.search(line)
    if m is None:
        return []
    out = [m]
    while line.find("NCCL ", m.end()) >= 0 or line.find(" INFO ", m.end()) >= 0 or line.find(" WARN ", m.end()) >= 0:
        m = PREFIX.search(line, m.end())
        if m is None:
            break
        out.append(m)
    return out


def wrapped(prev_msg: str, body: str) -> bool:
    """Whether ``body`` continues ``prev_msg``: it left a parenthesis open, and ``body`` closes it."""
    b = body.strip()
    return (prev_msg.count("(") > prev_msg.count(")") and 0 < len(b) < 120 and ")" in b
            and b.count(")") > b.count("(") and not b.startswith(("[", "#")) and "NCCL" not in b)



# --------------------------------------------------------------------------- patterns on messages

_VERSION = rx.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+[\w.\-]*?)(?:\+cuda(?P<cuda>\d+\.\d+))?(?=[\s,]|$)")
_USING_NETWORK = rx.compile(r"\bUsing network (?P<name>\S+)")
_NET_USING = rx.compile(r"\bNET/(?P<net>[\w\-]+(?:/[\w\-]+)?) ?: Using\b(?P<body>.*)")
_NET_NODEV = rx.compile(r"\bNET/(?P<net>[\w\-]+) ?: No device found")
_IB_DEV = rx.compile(
    r"\[(?P<idx>\d+)\]\s*(?P<name>[^\s:\[\]={},]+):(?P<port>\d+)(?:/\d+)?(?::\d+)?/(?P<link>IB|RoCE|[A-Za-z]+)")
# a merged virtual NIC's devices: [0]={[0] mlx5_0:1/IB, [1] mlx5_1:1/IB} (a run never holds a '{': one scan each)
_MERGED_NIC = rx.compile(r"=\{[^{}]*\}")
_SOCK_IF = rx.compile(r"(?:\[(?P<idx>\d+)\])?(?<![^\s:\[\]])(?P<name>[^\s:\[\]]+):(?P<addr>\S+)")
_OLD_IB_PORTS = rx.compile(r"\bCUDA Dev (?P<dev>\d+), IB Ports? : (?P<body>.*)")
_OLD_IB_PORT = rx.compile(r"(?<![\w\-])(?P<name>[\w\-]+)/(?P<port>\d+)(?:\((?P<dist>\w+)\))?")
_BOOTSTRAP = rx.compile(r"\bBootstrap ?: Using\b(?P<body>.*)")
_GDR = rx.compile(
    r"(?:\bNET/(?P<net>[\w\-]+) ?: )?GPU Direct RDMA (?P<state>Enabled|Disabled) for "
    r"(?:GPU (?P<gpu>[\w:.]+)(?:\[\d+\])? / )?HCA (?P<hca>[\w\-]+)(?: '(?P<name>[^']*)')?(?: \((?P<reason>[^)]*)\)?)?")
_PLUGIN_PATH = rx.compile(r"\bPlugin Path : (?P<v>\S+)")
_P2P_PLUGIN = rx.compile(r"\bP2P plugin (?P<v>\S+)")
_LOADED_PLUGIN = rx.compile(r"\bLoaded (?P<kind>net|collnet|coll) plugin (?P<v>.*\S|\s)\s*$")
_NET_PLUGIN = rx.compile(r"\bNET/Plugin ?: (?P<v>.*)")
_INIT_HEAD = r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cdev>-?\d+)"
_INIT = FirstHead(_INIT_HEAD, _INIT_HEAD +
                  r"(?: nvmlDev (?P<nvml>-?\d+))?(?: busId (?P<bus>[0-9a-fA-F]+))?(?: commId (?P<cid>0x[0-9a-fA-F]+))?"
                  r"(?: localSize \d+)?.*?- Init (?P<phase>START|COMPLETE)")
_COMM = rx.compile(
    r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+) "
    r"localRanks (?P<lranks>\d+) localRank (?P<lrank>\d+)(?: MNNVL (?P<mnnvl>\d+))?")
_COMM_OLD = rx.compile(r"(?:\bcomm (?P<comm>0x[0-9a-fA-F]+) )?\brank (?P<rank>\d+) nranks (?P<nranks>\d+)\s*$")
_CHANNEL = rx.compile(
    r"\b(?P<label>Channel|Ring) (?P<ch>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+)(?:\[(?P<sdev>[0-9a-fA-F]+)\])? -> "
    r"(?P<dst>\d+)(?:\[(?P<ddev>[0-9a-fA-F]+)\])?(?: \[(?P<dir>send|receive)\])? via (?P<via>.+)")
_COLLNET_CH = rx.compile(
    r"\b(?P<label>CollNet|Coll) (?P<ch>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+) \[(?P<dir>send|receive)\] "
    r"via (?P<via>COLLNET/.+)")
_VIA_P2P = rx.compile(
    r"^P2P/(?P<mode>IPC|CUMEM|MNNVL|direct pointer|indirect/(?P<relay>\d+)(?:\[\w+\])?|\d+)(?P<flags>(?:/read|/CE)*)")
_VIA_SHM = rx.compile(r"^(?:SHM(?:/(?P<mode>\w+(?:/\w+)?))?|direct shared memory)")
_VIA_NET = rx.compile(
    r"^(?P<t>NET|COLLNET)/(?P<name>[^/]+?)/(?P<dev>\d+)(?:\((?P<proxy>\d+)\))?(?P<flags>(?:/GDRDMA|\(PCI\)|/Shared)*)")
_CONNECTED = rx.compile(
    r"\bConnected (?P<what>all rings|all trees|NVLS tree|binomial trees|[Cc]oll[Nn]et \w+(?: \+ \w+)?)"
    r"(?:, use ring PXN (?P<pxn>\d+) GDR (?P<gdr>\d+))?")
_COUNTS = rx.compile(
    r"(?<!\d)(?P<coll>\d+) coll channels, (?:(?P<collnet>\d+) collnet channels, )?(?:(?P<nvls>\d+) nvls channels, )?"
    r"(?P<p2p>\d+) p2p channels, (?P<ppp>\d+) p2p channels per peer")
_NVLS_COMM = rx.compile(r"\bNVLS comm 0x[0-9a-fA-F]+ headRank (?P<head>-?\d+) nHeads (?P<nheads>\d+)")
_NVLS_MC = rx.compile(r"\bNVLS multicast support is (?P<not>not )?available on dev (?P<dev>\d+)")
_ENV = rx.compile(r"\b(?P<name>[A-Z][A-Z0-9_]{2,}) set by environment to (?P<value>(?:.*\S)?)\s*$")
_CHAIN = rx.compile(r"(?:^|\s)(?P<file>[\w./+\-]+\.\w+):(?P<line>\d+) -> (?P<code>\d+)(?: \[(?P<thr>[^\]]+)\])?")
_WATCHDOG = FirstHead(
    r"Watchdog caught collective operation timeout: WorkNCCL\(",
    r"Watchdog caught collective operation timeout: WorkNCCL\((?P<body>.*?)\)\s*ran for (?P<ran>\d+) milliseconds")
# The same message quoted without its tail ('ran for N milliseconds before timing out'): shortened where a forum
# answer or a blog quotes it ('WorkNCCL(SeqNum=1, OpType=ALLREDUCE)'), or cut inside the tail; the WorkNCCL(...)
# closes the line (a line that goes on after it, or breaks inside it, is a wrap: read once joined). Its fields are
# the same; the time it ran is unknown (a tail on the next line is read there, Parser.app_lines).
_WATCHDOG_CUT = FirstHead(
    r"Watchdog caught collective operation timeout: WorkNCCL\(",
    r"Watchdog caught collective operation timeout: WorkNCCL\((?P<body>[^()\n]*(?:\(ms\)[^()\n]*)?)\)"
    r"(?:\s*ran\b[^\n]*)?\s*$")
_WD_RAN = rx.compile(r"^\s*ran for (?P<ran>\d+) milliseconds")
_WD_RANK = rx.compile(r"\[(?:PG [^\]\[]*?)?Rank (?P<rank>\d+)\]\s*Watchdog|\[Rank (?P<rank2>\d+)\]")
_WD_FIELD = rx.compile(r"(?<!\w)(?P<k>\w+(?:\(ms\))?)=(?P<v>[^,\s)]+)")
_TORCH_ERR = rx.compile(r"NCCL error in: (?P<where>\S+?),\s*(?P<msg>.*?)"
                        r"(?:, NCCL [vV]ersion (?P<ver>[\d.]+(?:[^\W\d]\w*)?)\s*$|(?<!\s)\s*$|$)")
# nccl-tests' failure lines; its first releases (2017-2018) printed 'NCCL failure all_reduce.cu:95 '...'' and
# 'Cuda failure common.cu:891 '...'' without the 'Test ' (NCCL's own WARN 'Cuda failure 'x'' names no .cu file).
_TESTS_FAIL = rx.compile(r"(?:(?<![\w.\-])(?P<host>[\w.\-]+): )?(?:Test NCCL failure (?P<where>\S+)|"
                         r"(?<!\S)NCCL failure (?P<old>[\w./\-]+\.cu:\d+)) '(?P<msg>[^']*)")
_TESTS_CUDA = rx.compile(r"(?:(?<![\w.\-])(?P<host>[\w.\-]+): )?(?:Test CUDA failure (?P<where>\S+)|"
                         r"(?<!\S)Cuda failure (?P<old>[\w./\-]+\.cu:\d+))(?:\s+'(?P<msg>[^']*)'?)?\s*$")
_TORCH_OLD = rx.compile(r"\bNCCL Error (?P<code>\d+): (?P<msg>.*\S|\s)\s*$")
_LAST_ERROR = rx.compile(r"(?:^|[\s:\]|])Last error:\s*(?P<text>.*)$")
_TAG = rx.compile(r"^\[[^\]\s]{1,40}\]:\s*")
# Words of an error in any program's output, each read as a whole word (_ERROR_TEXT); table headers and comment
# lines of benchmarks are not errors.
ERROR_WORDS = (
    "Error", "error", "ERROR", "Fail", "fail", "Failed", "failed", "Failure", "failure", "Fails", "fails", "FAIL",
    "FAILED", "FAILURE", "Fatal", "fatal", "FATAL", "Exception", "exception", "Traceback",
    "Timeout", "timeout", "Time out", "time out", "Timedout", "timedout", "Timed out", "timed out",
    "Refused", "refused", "Unreachable", "unreachable", "Abort", "abort", "Aborted", "aborted", "Aborting",
    "aborting", "Killed", "killed", "Segmentation fault", "segmentation fault", "core dumped", "not supported",
    "Unable to", "unable to", "Cannot", "cannot", "Can't", "can't", "Could not", "could not", "Couldn't",
    "couldn't",
    # the same with the typographic apostrophe an editor or a forum puts in a paste ('BAR 1: can’t reserve [mem ...]')
    "Can’t", "can’t", "Couldn’t", "couldn’t",
    "Denied", "denied", "No such", "no such", "Invalid", "invalid", "Mismatch", "mismatch",
    "out of memory", "busy or unavailable", "Insufficient", "insufficient", "not found", "Unknown Error",
    "is neither AF_INET", "Duplicate GPU detected", "terminate called after throwing",
    "fi_getinfo",  # libfabric's fi_info names the call only when it failed: 'fi_getinfo: -61 (No data available)'
    # PyTorch's warning of a GPU its build has no kernels for, and the line after it naming what the build has
    "is not compatible with the current PyTorch installation", "install supports CUDA capabilities",
    "No space left on device", "Disk quota exceeded",  # ENOSPC and EDQUOT: 'OSError: [Errno 28] No space left on device'
    "In use by another client",  # NVML's NVML_ERROR_IN_USE: 'GPU 00000000:01:00.0: In use by another client' (a reset refused)
    "is corrupted",  # nvidia-smi's 'WARNING: infoROM is corrupted at gpu <bus>', a file system's or an archive's
    "duplicate mac found",  # cloud-init's RuntimeError at boot: 'duplicate mac found! both 'eth1' and 'ib0' have mac'
    "no CUDA-capable device is detected",  # CUDA's cudaErrorNoDevice text, printed bare by many programs
    # glibc's heap checks before they abort the process (malloc/malloc.c malloc_printerr: 'free(): corrupted unsorted
    # chunks', 'double free or corruption (!prev)', 'malloc(): unaligned tcache chunk detected'); their other
    # messages hold 'invalid' ('munmap_chunk(): invalid pointer')
    "double free or corruption", "corrupted unsorted chunks", "corrupted size vs. prev_size", "corrupted double-linked list",
    "unaligned tcache chunk", "unaligned fastbin chunk", "unaligned chunk detected in tcache", "malloc(): memory corruption",
    "corrupted top size", "double free detected in tcache", "double linked list corrupted", "mismatching next->prev_size",
    "too many chunks detected in tcache", "chunks in smallbin corrupted",
    # libfabric's cxi provider (HPE Slingshot) on a NIC event queue that dropped events, just before it aborts the
    # process (CXIP_FATAL: 'Cassini Event Queue overflow detected.', 'H/W Event Queue overflow detected.' since the
    # event queue code moved to prov/cxi/src/cxip_evtq.c)
    "Event Queue overflow detected",
    # libibverbs on a device the kernel exposes and no user-space provider claims (rdma-core libibverbs/init.c,
    # 'Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbsN'): the provider
    # is missing, which rules/ibverbs_provider.py reads beside a tool that then found no device
    "no userspace device-specific driver found",
    # VMware ESXi's VM process refusing a passthrough device whose BARs need more pages of MMIO than the VM may map
    # ('PCIPassthru: total number of pages needed (4206594) exceeds limit (917504), failing', then "Module
    # 'DevicePowerOn' power on failed": Dell KB 000199172, a GPU with more than 16 GB of BARs in a VM without
    # pciPassthru.use64bitMMIO); the line itself holds no other error word
    "PCIPassthru: total number of pages needed",
    # HP-MPI's (Platform MPI's) MPI_Init on InfiniBand ports of different subnets ('MPI_Init: The IB ports choosen for
    # IB connection setup do not have the same subnet_prefix.', HP-MPI 2.2.7 release note): the job stops there, and
    # the line holds no other error word
    "do not have the same subnet_prefix",
    # Intel's e1000e on a transmit unit it found hung ('e1000e 0000:00:1f.6 eno1: Detected Hardware Unit Hang:', with
    # its ring's TDH/TDT on the lines after, e1000_print_hw_hang) and the reset that follows ('Reset adapter
    # unexpectedly', e1000_reset_task; Linux drivers/net/ethernet/intel/e1000e/netdev.c), and igb's, igc's, ixgbe's and
    # e1000's per queue ('igb 0000:02:00.0: Detected Tx Unit Hang', their *_clean_tx_irq): none holds an error word
    "Detected Hardware Unit Hang", "Detected Tx Unit Hang", "Reset adapter unexpectedly",
    # Intel's i40e and ice on a transmit queue the kernel's watchdog found hung, the reset level they take
    # ('i40e 0000:08:00.1: eth9: tx_timeout recovery level 1', i40e_tx_timeout and ice_tx_timeout): no error word
    # ('timeout' runs into 'tx_')
    "tx_timeout recovery level",
    # the verbs port state of a port with no link, as ibv_devinfo prints it ('state: PORT_DOWN (1)', rdma-core
    # libibverbs/examples/devinfo.c port_state_str) and as a cluster's own sweeps that read it list the HCAs they
    # found down ('gpu-184  mlx5_0  PORT_DOWN  (server=PORT_ACTIVE, client=PORT_DOWN)'): no other error word
    "PORT_DOWN",
)
_ERROR_TEXT = rx.compile(r"\b(?:" + _alternation(ERROR_WORDS) + r")\b")
# The line a Python traceback ends with: an exception's class and its message ('RuntimeError: Desync detected for
# barrier train begin (...)', 'torch.distributed.DistBackendError: ...'), whose message need hold no error word (the
# failure lexicon's row 'python-exception' reads the same shape); its words, 'Error' and 'Exception', are ERROR_WORDS.
# (never a source line 'except ValueError:')
_EXCEPTION_TEXT = rx.compile(r"(?<!except )\b[A-Z][A-Za-z0-9_]{0,60}(?:Error|Exception):(?: |$)")
# A process killed, as a shell or a launcher says it in the user's locale: the failure lexicon's row 'killed'
# (bash's 'Killed' and its translations, '已杀死', 'Getötet', ...), whose words need hold no error word.
_KILLED = lexicon.shape("killed")
# Kernel lines about GPUs, the IOMMU, PCIe, RDMA and the fabric manager (_KERNEL_TEXT).
KERNEL_WORDS: Guarded = (
    ("NVRM:", r"NVRM:"), ("Xid", r"\bXid\b"), ("AMD-Vi", r"AMD-Vi"), ("DMAR", r"\bDMAR\b"),
    ("IO_PAGE_FAULT", r"IO_PAGE_FAULT"), ("nv_peer_mem", r"nv_peer_mem"), ("nvidia-peermem", r"nvidia-peermem"),
    ("nvidia_peermem", r"nvidia_peermem"), ("PCIe Bus Error", r"PCIe Bus Error"), ("AER", r"\bAER\b"),
    ("mlx", r"\bmlx\d_(?:core|ib|en)\b"), ("fallen off the bus", r"fallen off the bus"),
    ("ib_umad", r"\bib_umad\b"), ("nv-fabricmanager", r"nv-fabricmanager"), ("abric", r"[Ff]abric ?[Mm]anager"),
)


def _alternatives(keep: str) -> List[str]:
    """The top-level alternatives of a ``keep`` expression of ``knowledge/kmsg.toml``."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(keep):
        depth += ch == "(" or -(ch == ")")
        if ch == "|" and depth == 0:
            out.append(keep[start:i])
            start = i + 1
    return out + [keep[start:]]


_PLAIN = rx.compile(r"(?:[^\\.^$*+?{}()\[\]|]|\[[A-Za-z]{2}\])+")
_CASE = rx.compile(r"\[([A-Za-z])([A-Za-z])\]")


def _kmsg_words() -> Guarded:
    """The words the node keeps the kernel's failure messages by (the ``keep`` of every row of
    ``knowledge/kmsg.toml``): each alternative of plain words, a ``[Aa]`` class read as either letter; alternatives
    with other regular expression marks are left out (their lines hold a word above or an error word). A line the
    node keeps for the table is kept here too (:func:`error_kind`), so that the diagnosis reads it through the same
    table: a hung task, an NFS server not responding, a BAR the kernel could not assign."""
    words: List[str] = []
    for keep in (r["keep"] for r in knowledge.rows("kmsg.toml")):
        for alt in _alternatives(keep):
            if not alt or not _PLAIN.fullmatch(alt):
                continue
            variants = [""]
            for part in re.split(r"(\[[A-Za-z]{2}\])", alt):
                m = _CASE.fullmatch(part)
                variants = [v + c for v in variants for c in (m.groups() if m else (part,))]
            words += [v for v in variants if len(v) >= 3]
    seen = {w for w, _ in KERNEL_WORDS}
    return tuple((w, re.escape(w)) for w in dict.fromkeys(words) if w not in seen)


# The kernel's failure messages of knowledge/kmsg.toml (_KMSG_TEXT): a line holding one is kept as an error line
# (a kernel line when it also holds a word of KERNEL_WORDS).
KMSG_WORDS: Guarded = _kmsg_words()
_KMSG_TEXT = rx.compile(_either(KMSG_WORDS))
# PyTorch distributed's failure messages of knowledge/torch.toml (the words of its rows): a line holding one is kept as
# an error line, so that the diagnosis reads it through that table ('Connection closed by peer [...]', a worker's
# 'Signal 9 (SIGKILL) received by PID', 'RendezvousTimeoutError', which hold no error word of their own).
TORCH_WORDS: Guarded = tuple((w, re.escape(w)) for w in dict.fromkeys(
    w for r in knowledge.rows("torch.toml") for w in r["words"]))
_TORCH_TEXT = rx.compile(_either(TORCH_WORDS))
# The launchers' and test tools' messages of knowledge/launchers.toml (the words of its rows): a line holding one is
# kept as an error line, so that the diagnosis reads it through that table (UCX's 'Transport retry count exceeded',
# slurmstepd's 'DUE TO TIME LIMIT', perftest's 'Completion with error at client', which hold no error word of their own).
LAUNCHER_WORDS: Guarded = tuple((w, re.escape(w)) for w in dict.fromkeys(
    w for r in knowledge.rows("launchers.toml") for w in r["words"]))
_LAUNCHER_TEXT = rx.compile(_either(LAUNCHER_WORDS))
_KERNEL_TEXT = rx.compile(_either(KERNEL_WORDS))
_TESTS_TIMEOUT = rx.compile(r"Test timeout \((?P<s>\d+)s\) (?P<where>\S+)")

# INFO lines worth keeping as notes: (kind, guard, pattern); every match of the pattern holds a word of the guard.
_NOTES: Tuple[Tuple[str, Tuple[str, ...], "re.Pattern[str]"], ...] = (
    ("max_shared_mem", ("ncclMaxSharedMem ",), rx.compile(r"ncclMaxSharedMem \d+ exceeds")),
    ("ib_qp", ("query_ece=", "IbDev "), rx.compile(r"\bquery_ece=|\bIbDev \d+ Port \d+ qpn\b")),
    ("ibverbs_missing", ("Failed to open libibverbs",), rx.compile(r"Failed to open libibverbs")),
    ("p2p_disabled_by_nvml", ("P2P is disabled between connected GPUs",),
     rx.compile(r"P2P is disabled between connected GPUs")),
    ("collnet_disabled", ("disabling CollNet",), rx.compile(r"disabling CollNet")),
    ("cuda_driver", ("cudaDriverVersion ",), rx.compile(r"\bcudaDriverVersion \d+")),
    ("ib_no_active_port", ("o active port",), rx.compile(r"NET/IB ?: (?:(?!NET/IB ?: ).)*[nN]o active port")),
    ("topo_file", ("Loading topology file ",), rx.compile(r"Loading topology file \S")),
)

# WARN kinds: (kind, failure?, pattern). The first match wins.
# aws-ofi-nccl's GIN (GPU-initiated networking) set-up refusing to start, its WARNs in src/rdma/gin/nccl_ofi_gin_api.cpp
# (nccl_ofi_gin_init): GIN is optional to NCCL, whose collectives go on over the plugin's network
GIN_DECLINED = rx.compile(r"NET/OFI\s{0,8}(?:Failed to initialize GDRCopy\b|GIN requires GDRCopy|"
                          r"GIN only supports RDMA transport|GIN plugin does not support)")

WARN_KINDS: Tuple[Tuple[str, bool, "Expression"], ...] = (
    ("duplicate_gpu", True, rx.compile(r"Duplicate GPU detected|Multiple Ranks are using the same GPU")),
    ("version_mismatch", True, rx.compile(r"Mismatched NCCL version")),
    # a segment NCCL made and finds gone when it unlinks it: removed under it (systemd-logind's RemoveIPC), not too small
    ("shm_removed", True, rx.compile(r"unlink shared memory [^\n]{0,300}?No such file or directory")),
    # a segment a peer of the node made, not found where this process looks: no shared /dev/shm, not too small
    ("shm_peer_missing", True, rx.compile(r"attaching to shared memory segment [^\n]{0,300}?No such file or directory")),
    ("shm", True, rx.compile(r"/dev/shm|shared memory segment|posix_fallocate failed|shm_open failed|"
                             r"No space left on device")),
    ("ibv", True, rx.compile(
        r"Call to (?P<fn>ibv_\w+) failed(?: with error (?P<err>(?=\s*$)|[^\n]*?(?= errno \d+\s*$|(?<!\s)\s*$|$)))?"
        r"(?: errno \d+)?\s*$")),
    ("ib_completion", True,
     FirstHead(r"Got completion from peer ", r"Got completion from peer .*?status=(?P<status>\d+)")),
    ("nvls", True, rx.compile(r"NVLink SHARP|NVLS_ENABLE")),
    ("cuda", True, rx.compile(r"Cuda failure (?:(?P<code>\d+) )?'(?P<err>[^']*)'?")),
    ("no_interface", True, rx.compile(r"no interface found|No usable listening interface|no socket interface found")),
    ("socket_connect", True, rx.compile(r"socketStartConnect|Connect to (?:(?!Connect to ).)* failed|"
                                        r"Connection refused|"
                                        r"Network is unreachable|Connection timed out|neither AF_INET")),
    ("remote_closed", True, rx.compile(r"Connection closed by remote peer|Connection reset by peer")),
    ("proxy", True, rx.compile(r"\[Proxy Service \d+\] Failed|Error encountered progressing|Socket recv failed|"
                               r"\[Service thread\]")),
    ("p2p_nvlink_disabled", True, rx.compile(r"P2P is disabled between NVLINK connected GPUs")),
    ("timeout", True, rx.compile(r"\btimeout\b|timed out", re.I)),
    ("cuda_library", False, rx.compile(r"Failed to find CUDA library|libcuda\.so")),
    # aws-ofi-nccl's GIN plugin declining to start (no /dev/gdrdrv, an old GDRCopy, a non-RDMA protocol): NCCL then
    # says 'Failed to initialize any GIN plugin' and runs its collectives without GIN
    ("gin_declined", False, GIN_DECLINED),
    # NCCL 2.25's WARN that a user buffer could not be IPC-registered: it goes on without the registration (2.26 and
    # later print it at INFO; NVIDIA/nccl#1684)
    ("ipc_register_declined", False, rx.compile(r"failed to IPC register userbuff ")),
    ("ibverbs_missing", False, rx.compile(r"Failed to open libibverbs")),
)


_ERROR_KINDS: Dict[str, Optional[str]] = {}  # line -> its error_kind, for lines seen again


# nccl-tests' own comment lines (its header, the table's head, the closing summary): never an output quoted in a
# transcript, whose quote mark error_kind reads through
_BENCH_COMMENT = rx.compile(r"^#[ \t]{0,40}(?:#|nThread\b|Rank\b|Using devices|size\b|bytes\b|out-of-place|in-place|"
                            r"Out of bounds values|Avg bus bandwidth|Collective test|Check\b)|algbw|busbw|#wrong")


def error_kind(msg: str) -> Optional[str]:
    """``kernel`` for a kernel line, ``error`` for a line that reports an error, else ``None``."""
    kind = _ERROR_KINDS.get(msg, "")
    if kind != "":
        return kind
    text = msg
    if msg.startswith("#"):  # a benchmark's comment line, or an output quoted behind '# ' in a shell transcript
        text = msg[1:] if msg[1:2] in (" ", "\t") and not _BENCH_COMMENT.search(msg) else ""
    if _KERNEL_TEXT.search(text) is not None:
        kind = "kernel"
    elif (_ERROR_TEXT.search(text) is None and _KMSG_TEXT.search(text) is None and _TORCH_TEXT.search(text) is None
          and _LAUNCHER_TEXT.search(text) is None and _EXCEPTION_TEXT.search(text) is None
          and not _KILLED.reads(text) or "algbw" in text):
        kind = None
    else:
        kind = "error"
    if len(msg) <= 1024:  # at most 4 MiB of remembered lines
        if len(_ERROR_KINDS) >= 4096:
            _ERROR_KINDS.clear()
        _ERROR_KINDS[msg] = kind
    return kind


def classify(w: Warn) -> None:
    for kind, failure, pat in WARN_KINDS:
        m = pat.search(w.message)
        if m:
            w.kind = kind
            w.failure = failure
            w.detail = {k: v for k, v in m.groupdict().items() if v is not None}
            break
    if w.file and "nvls" in w.file and w.kind == "cuda":
        w.kind = "nvls"
    if any(s.code in ERROR_RESULTS for s in w.chain):
        w.failure = True


_MESSAGE_FAILS: Dict[Tuple[str, Optional[str]], bool] = {}  # (message, file) -> its kind is a failure


def fails(w: Warn) -> bool:
    """Whether :func:`classify` would call ``w`` a failure (for a WARN past the bound, only counted): its
    message's kind, remembered per message, or an error result in its chain."""
    k = (w.message, w.file)
    base = _MESSAGE_FAILS.get(k)
    if base is None:
        probe = Warn(w.message, w.at, w.text, w.file)
        classify(probe)
        base = probe.failure
        if len(w.message) <= 1024:  # at most 4 MiB of remembered messages
            if len(_MESSAGE_FAILS) >= 4096:
                _MESSAGE_FAILS.clear()
            _MESSAGE_FAILS[k] = base
    if base:
        return True
    for st in w.chain:
        if st.code in ERROR_RESULTS:
            return True
    return False


def category_of(transport: str, net: Optional[str], gdr: bool) -> str:
    if transport == "P2P":
        return P2P
    if transport == "SHM":
        return SHM
    if transport == "COLLNET":
        return COLLNET
    name = net or "?"
    if name.lower().startswith("ib"):
        return NET_IB_GDR if gdr else NET_IB
    if name.lower() == "socket":
        return NET_SOCKET
    return f"NET/{name}" + ("+GDRDMA" if gdr else "")


def parse_via(via: str) -> Dict[str, object]:
    """The fields of the text after ``via`` (transport, mode, NET name/dev/proxy, flags)."""
    via = via.strip()
    m = _VIA_P2P.match(via)
    if m:
        flags = m.group("flags") or ""
        mode = m.group("mode")
        relay = num(m.group("relay")) if m.group("relay") else None
        return {"transport": "P2P", "mode": "indirect" if relay is not None else mode, "relay": relay,
                "read": "/read" in flags, "ce": "/CE" in flags, "via": m.group(0)}
    m = _VIA_NET.match(via)
    if m:
        flags = m.group("flags") or ""
        return {"transport": m.group("t"), "net": m.group("name"), "net_dev": num(m.group("dev")),
                "proxy_rank": num(m.group("proxy")) if m.group("proxy") else None,
                "gdrdma": "/GDRDMA" in flags, "pci": "(PCI)" in flags, "shared": "/Shared" in flags,
                "via": m.group(0)}
    m = _VIA_SHM.match(via)
    if m:
        return {"transport": "SHM", "mode": m.group("mode") or ("direct" if "direct" in m.group(0) else None),
                "via": m.group(0)}
    words = via.split("/")[0].split()
    return {"transport": words[0] if words else "?", "via": via.split()[0] if via.split() else ""}




# --------------------------------------------------------------------------- lines read apart

# Benchmark outputs (nccl-tests, perftest) in the same files: their lines are kept per file from the first line that
# announces one (_BENCH_START; MAX_BENCH_BYTES): a header line of nccl-tests, the first row of its table (two
# numbers, then the data type and a blank), a perftest title, or a bandwidth matrix's title of the CUDA samples'
# p2pBandwidthLatencyTest (whose banner, '[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]', is a title too).
BENCH_HEADS: Guarded = (
    ("nThread", r"nThread\b"), ("Collective test starting", r"Collective test starting"),
    ("Using devices", r"Using devices"), ("size\0\\s+(?:count|N)", r"size\s+(?:count|N)\b"),
    ("bytes\0\\s+(?:count|N)", r"bytes\s+(?:count|N)\b"), ("Out of bounds values", r"Out of bounds values\s*:"),
    ("Avg bus bandwidth", r"Avg bus bandwidth\s*:"),
)
ROW_TYPES: Guarded = (
    ("float\0\\s", r"float"), ("half\0\\s", r"half"), ("double\0\\s", r"double"), ("int\0\\d*\\s", r"int\d*"),
    ("uint\0\\d*\\s", r"uint\d*"), ("bfloat16", r"bfloat16"), ("fp8", r"fp8\w*"), ("char\0\\s", r"char"),
    ("f\0\\d+\\s", r"f\d+"), ("bf16", r"bf16"),
)
BENCH_TITLES: Guarded = (("BW Test", r"\bBW Test\b"), ("Lat Test", r"\bLat Test\b"),
                         ("Latency Test", r"\bLatency Test\b"),
                         ("P2P=Enabled Bandwidth", r"P2P=Enabled Bandwidth\b"),
                         ("P2P=Disabled Bandwidth", r"P2P=Disabled Bandwidth\b"))
_BENCH_START = rx.compile(r"^\s*(?:#\s*)?(?:" + _either(BENCH_HEADS) + r")|^\s*\d+\s+\d+\s+(?:" + _either(ROW_TYPES) +
                          r")\s+\S|" + _either(BENCH_TITLES))
# NCCL RAS reports (ncclras, text or JSON) in the same files: kept per file from their first line (_RAS_START;
# MAX_RAS_BYTES).
RAS_HEADS: Guarded = (
    ("NCCL version ", r"NCCL version \S+ compiled with CUDA"), ("Job summary", r"Job summary\s*$"),
    ("Communicators...", r"Communicators\.\.\."), ("{", r"\{\s*$"),
    ('"communicators_count"', r'"communicators_count"\s*:'),
)
# An excerpt of the Errors section alone starts at its DEAD or INCOMPLETE message, wherever the line holds it (a
# paragraph's lines run together).
RAS_MESSAGES: Guarded = (
    ("considered dead", r"job process(?:es)? (?:is|are) considered dead \(unreachable via the RAS network\)"),
    ("Missing communicator data", r"Missing communicator data from \d+ (?:job process|rank)"),
)
_RAS_START = rx.compile(r"^\s*(?:" + _either(RAS_HEADS) + ")|" + _either(RAS_MESSAGES))

# Progress lines: a thread that logs one of these after an error chain got past the error.
_PROGRESS = rx.compile(r"\bvia \S|\bConnected (?:all|NVLS|binomial|[Cc]oll)|- Init COMPLETE\b|\bcoll channels,")
# Messages specific enough to read from a line that lost its NCCL prefix (pasted, re-emitted, cut).
_CHANNEL_TAIL = (r" \d+(?:/\d+)? : (?:\d+(?:\[[0-9a-fA-F]+\])? -> (?:(?!(?:Channel|Ring) \d).)* via "
                 r"|\s*\d+(?:\s+\d+)*\s*$)")
UNPREFIXED_WORDS: Guarded = (
    ("Channel ", r"\bChannel" + _CHANNEL_TAIL), ("Ring ", r"\bRing" + _CHANNEL_TAIL),
    ("Using network ", r"\bUsing network \S"), ("NET/", r"\bNET/[\w\-]+(?:/[\w\-]+)? ?: Using\b"),
    ("set by environment to ", r"\bNCCL_[A-Z0-9_]+ set by environment to "), ("- Init ", r"- Init (?:START|COMPLETE)"),
    ("NVLS multicast support is", r"\bNVLS multicast support is"), ("NVLS comm 0x", r"\bNVLS comm 0x"),
    ("comm 0x", r"\bcomm 0x[0-9a-fA-F]+ rank \d+ nRanks \d+"), ("Bootstrap", r"\bBootstrap ?: Using\b"),
    ("coll channels, ", r"(?<!\d)\d+ coll channels, "), ("Connected all ", r"\bConnected all (?:rings|trees)"),
    ("GPU Direct RDMA ", r"\bGPU Direct RDMA (?:Enabled|Disabled) for"), ("NET/Plugin", r"\bNET/Plugin ?: \S"),
    ("Loaded ", r"\bLoaded (?:net|collnet|coll) plugin \S"), ("P2P plugin ", r"\bP2P plugin \S"),
    ("Plugin Path : ", r"\bPlugin Path : \S"), ("cudaDriverVersion ", r"\bcudaDriverVersion \d+"),
)
_UNPREFIXED = rx.compile(_either(UNPREFIXED_WORDS))
_BARE_WARN = rx.compile(r"(?:^|\s)(?:(?P<file>[\w./+\-]+\.\w+):(?P<fline>\d+) )?NCCL WARN (?P<msg>.*)$")
# NCCL's own failure words, quoted without their 'NCCL WARN' prefix (an application's error text, a pasted line).
QUOTED_WARN_WORDS: Guarded = (
    ("Error while creating shared memory segment ", r"Error while creating shared memory segment \S"),
    ("ailed to extend /dev/shm/", r"[Ff]ailed to extend /dev/shm/\S"),
    ("Call to posix_fallocate failed", r"Call to posix_fallocate failed"),
    ("Call to shm_open failed", r"Call to shm_open failed"),
    # its socket connects' failures (misc/socket.cc to v2.29, os/linux.cc since v2.30: 'socketStartConnect: Connect
    # to %s failed : %s', 'socketPollConnect: Connect to %s returned %d(%s) errno %d(%s)', '%s: connect to %s returned
    # %s, exceeded error retry count ...' and '%s: connect to %s failed : %s' with the function's name, 'socketPollConnect
    # to %s failed with error %s'); not the INFO of a connect retried ('..., retrying (%d/%ld) after sleep ...')
    ("StartConnect: ", r"(?:socket|ncclOsSocket)StartConnect: [Cc]onnect to \S{1,300} (?:failed : |"
                       r"returned [A-Za-z ]{1,60}(?:, exceeded|$))"),
    ("PollConnect: ", r"(?:socket|ncclOsSocket)PollConnect: [Cc]onnect to \S{1,300} (?:failed : |returned -?[0-9]{1,4}\(|"
                      r"returned [A-Za-z ]{1,60}(?:, exceeded|$))"),
    ("PollConnect to ", r"(?:socket|ncclOsSocket)PollConnect to \S{1,300} failed with error "),
)
_QUOTED_WARN = rx.compile(_either(QUOTED_WARN_WORDS))
_BARE_INFO = rx.compile(r"(?:^|\s)NCCL INFO (?P<msg>.*)$")
_DIAG = rx.compile(r"\bNCCL DIAG\s*\[(?P<tag>\w+)\]\s*(?P<msg>.*)$")
# A channel line whose 'Channel NN :' head was cut: '9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA'.
_FRAGMENT = rx.compile(
    r"^\s*(?P<src>\d+)(?:\[(?P<sdev>[0-9a-fA-F]+)\])? -> (?P<dst>\d+)(?:\[(?P<ddev>[0-9a-fA-F]+)\])?"
    r"(?: \[(?P<dir>send|receive)\])? via (?P<via>(?:P2P|SHM|NET|COLLNET)/.+)")
_RING_ORDER = rx.compile(r"\b(?:Channel|Ring) (?P<ch>\d+)(?:/(?P<n>\d+))? :(?P<order>(?:\s+\d+)+)\s*$")


@dataclass(frozen=True)
class FactRow:
    """One kind of NCCL INFO message: a message holding any of ``guard`` (the cheap test, empty: none) that
    ``pattern`` finds (and ``accept`` accepts) is read by the parser's method ``handler`` (with ``arg`` first,
    when given). ``keeps`` names the fact list it appends to (``None``: channel lines, tallied apart), ``rank``
    the rank it reports for its world (the lines that mark a version line as rank 0's).

    A line read again once ``keeps`` is full is only counted (:mod:`nccldiag.nccl.replay`): its handler may keep
    a record, add to its process's lists, tallies and rank hosts, and call ``rank_fact`` (declared by ``rank``),
    nothing else; a handler that changes other state sets ``again=False``, and its lines are read every time."""

    name: str
    guard: Tuple[str, ...]
    pattern: "Expression"
    handler: str
    keeps: Optional[str]
    accept: Optional[Callable[[str, "re.Match[str]"], bool]] = None
    rank: Optional[Callable[["re.Match[str]"], int]] = None
    arg: Optional[str] = None
    again: bool = True

    def read(self, parser: Any, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        if self.arg is None:
            getattr(parser, self.handler)(m, at, text, p)
        else:
            getattr(parser, self.handler)(self.arg, m, at, text, p)


def _rank(m: "re.Match[str]") -> int:
    return num(m.group("rank"))


# The NCCL INFO messages the parser reads, in order: the first row that reads a message wins. A new kind of
# message is one row here and its handler (a ``fact_*`` method of the parser).
FACTS: Tuple[FactRow, ...] = (
    FactRow("channel", (" via ",), _CHANNEL, "fact_channel", None),
    FactRow("channel_fragment", (" via ",), _FRAGMENT, "fact_channel", None),
    FactRow("collnet_channel", ("COLLNET",), _COLLNET_CH, "fact_channel", None),
    FactRow("ring_order", ("Channel ", "Ring "), _RING_ORDER, "fact_ring", "rings", rank=lambda m: 0),
    FactRow("version", ("NCCL version",), _VERSION, "fact_version", "versions"),
    FactRow("network", ("Using network",), _USING_NETWORK, "fact_network", "networks"),
    FactRow("gdr", ("GPU Direct RDMA",), _GDR, "fact_gdr", "gdr"),
    FactRow("net_no_device", ("No device found",), _NET_NODEV, "fact_net_nodev", "notes"),
    FactRow("net_using", ("NET/",), _NET_USING, "fact_net_using", "nets",
            accept=lambda msg, m: not msg.startswith("NET/Plugin", m.start())),
    FactRow("old_ib_ports", ("IB Port",), _OLD_IB_PORTS, "fact_old_ib_ports", "nets"),
    FactRow("bootstrap", ("Bootstrap",), _BOOTSTRAP, "fact_bootstrap", "bootstrap"),
    FactRow("plugin_path", ("Plugin Path : ",), _PLUGIN_PATH, "fact_plugin_path", "plugins"),
    FactRow("p2p_plugin", ("P2P plugin ",), _P2P_PLUGIN, "fact_p2p_plugin", "plugins"),
    FactRow("loaded_plugin", ("Loaded ",), _LOADED_PLUGIN, "fact_loaded_plugin", "plugins"),
    FactRow("net_plugin", ("NET/Plugin",), _NET_PLUGIN, "fact_net_plugin", "plugins"),
    FactRow("init", ("- Init ",), _INIT, "fact_init", "inits", rank=_rank),
    FactRow("comm", ("nRanks",), _COMM, "fact_comm", "comms", rank=_rank),
    FactRow("comm_old", ("nranks",), _COMM_OLD, "fact_comm_old", "comms", rank=_rank),
    FactRow("connected", ("Connected ",), _CONNECTED, "fact_connected", "connected"),
    FactRow("channel_counts", ("coll channels",), _COUNTS, "fact_counts", "channel_counts"),
    FactRow("nvls_comm", ("NVLS",), _NVLS_COMM, "fact_nvls_comm", "nvls"),
    FactRow("nvls_multicast", ("NVLS",), _NVLS_MC, "fact_nvls_mc", "nvls"),
    FactRow("env", ("set by environment",), _ENV, "fact_env", "env"),
) + tuple(FactRow(f"note_{kind}", guard, pat, "fact_note", "notes", arg=kind) for kind, guard, pat in _NOTES)


_ROWS: Dict[str, Tuple[Optional[FactRow], Optional["re.Match[str]"]]] = {}  # fact_row's answers, remembered
_ROWS_MAX = 4096  # messages remembered at most (then forgotten all at once), each of up to _ROWS_TEXT characters
_ROWS_TEXT = 1024
_ROWS_OF: List[Tuple] = [()]  # the rows they are answers of


def fact_row(msg: str) -> Tuple[Optional[FactRow], Optional["re.Match[str]"]]:
    """The row of :data:`FACTS` that reads NCCL INFO message ``msg``, with its match (``(None, None)``: none).
    The answer depends on the message alone: remembered for the last messages read (a log repeats its own)."""
    got = _ROWS.get(msg)
    if got is not None and _ROWS_OF[0] is FACTS:
        return got
    if _ROWS_OF[0] is not FACTS:  # the rows were replaced (a test does): their answers with them
        _ROWS.clear()
        _ROWS_OF[0] = FACTS
    got = _fact_row(msg)
    if len(msg) <= _ROWS_TEXT:
        if len(_ROWS) >= _ROWS_MAX:
            _ROWS.clear()
        _ROWS[msg] = got
    return got


def _fact_row(msg: str) -> Tuple[Optional[FactRow], Optional["re.Match[str]"]]:
    for row in FACTS:
        guard = row.guard
        if guard:
            for g in guard:
                if g in msg:
                    break
            else:
                continue
        m = row.pattern.search(msg)
        if m is not None and (row.accept is None or row.accept(msg, m)):
            return row, m
    return None, None


# Words of the lines PyTorch and nccl-tests print, read as theirs first (Parser.app_lines): they may quote NCCL's.
APP_WORDS = ("Watchdog", "NCCL error in", "Test ", "NCCL Error ")
# Words Parser.bare looks for in a line without an NCCL prefix, besides those of the expressions it tries.
BARE_WORDS = ("Last error:", "NCCL WARN ", "NCCL DIAG", "NCCL INFO ", " via ", "failure ")


def app_line(msg: str) -> bool:
    """Whether ``msg`` (a line without an NCCL prefix) holds a word of PyTorch's or nccl-tests' lines (APP_WORDS)."""
    return "Watchdog" in msg or "NCCL error in" in msg or "Test " in msg or "NCCL Error " in msg


def read_watchdog(msg: str, launcher_rank: Optional[int]
                  ) -> Optional[Tuple["re.Match[str]", Dict[str, str], Optional[int]]]:
    """A PyTorch watchdog message in ``msg``: its match, the fields of its ``WorkNCCL(...)`` and its rank (from the
    message, else the launcher's tag). A message quoted without its tail (:data:`_WATCHDOG_CUT`) has no ``ran``."""
    m = _WATCHDOG.search(msg) or _WATCHDOG_CUT.search(msg)
    if m is None:
        return None
    fields = {fm.group("k"): fm.group("v") for fm in _WD_FIELD.finditer(m.group("body"))}
    rm = _WD_RANK.search(msg)
    rank = to_int(rm.group("rank") or rm.group("rank2")) if rm else None
    if rank is None:
        rank = launcher_rank
    return m, fields, rank


def watchdog_key(rec: Rec) -> Optional[Tuple]:
    """What :meth:`nccldiag.nccl.parser.Parser.app_lines` tells a watchdog message apart by (``None``: not only a
    watchdog message)."""
    msg = rec.msg
    if "NCCL Error " in msg and _TORCH_OLD.search(msg):
        return None
    wd = read_watchdog(msg, rec.launcher_rank)
    if wd is None:
        return None
    _, fields, rank = wd
    return (rec.at.source, rank, to_int(fields.get("SeqNum")), fields.get("OpType"))


def joins_next(msg: str) -> bool:
    """Whether an error line ``msg`` takes the line after it: it ends in ':', or it is nccl-tests' CUDA failure
    line without its message (``Test CUDA failure common.cu:N`` / ``'<message>'``)."""
    return msg.endswith(":") or ("'" not in msg and ("CUDA failure " in msg or "Cuda failure " in msg)
                                 and _TESTS_CUDA.search(msg) is not None)


def chain_step(m: "re.Match[str]", at: Loc, text: str) -> ChainStep:
    """The call-chain step of a :data:`_CHAIN` match."""
    return ChainStep(m.group("file"), num(m.group("line")), num(m.group("code")), at, text, m.group("thr"))


def app_noop(msg: str) -> bool:
    """Whether :meth:`Parser.app_lines` reads nothing from a line holding its words (``msg``, no NCCL prefix)."""
    if "NCCL Error " in msg and _TORCH_OLD.search(msg):
        return False
    if "Watchdog" not in msg and "NCCL error in" not in msg and "Test " not in msg and "failure " not in msg:
        return True
    return not ("Watchdog caught collective operation timeout" in msg or _WATCHDOG.search(msg) or
                _TORCH_ERR.search(msg) or _TESTS_FAIL.search(msg) or _TESTS_CUDA.search(msg) or
                _TESTS_TIMEOUT.search(msg))

def to_int(s: Optional[str]) -> Optional[int]:
    """:func:`num` of a text that may be missing or hold no number (``None``)."""
    if s is None:
        return None
    try:
        return num(s)
    except ValueError:
        return None


MAX_DIGITS = 4000  # digits of a number converted (Python converts at most 4300; a log's numbers have under 20)


def num(s: str) -> int:
    """The number a pattern read as digits (``-?\\d+``). One longer than :data:`MAX_DIGITS`, which no log's count
    reaches, is read from its first digits: converting it whole would raise, and cost the square of its length."""
    return int(s) if len(s) <= MAX_DIGITS else int(s[:MAX_DIGITS])


# The words of the failure lexicon (nccldiag/knowledge/lexicon.toml): a line holding one may say something failed,
# whatever printed it. The parser reads what it knows of such a line; the lexicon's reader, fed every line the
# prefilter hands over (nccldiag.nccl.scan.feed), reads whether it is of a shape.
LEXICON_WORDS: Tuple[str, ...] = lexicon.words()


def _words() -> Tuple[str, ...]:
    rows = (KERNEL_WORDS + KMSG_WORDS + TORCH_WORDS + LAUNCHER_WORDS + UNPREFIXED_WORDS + QUOTED_WARN_WORDS + BENCH_HEADS + ROW_TYPES +
            BENCH_TITLES + RAS_HEADS + RAS_MESSAGES)
    words = (PREFIX_WORDS + CLEAN_MARKS + fronts.ESCAPES + ERROR_WORDS + APP_WORDS + BARE_WORDS + tuple(w for w, _ in rows) +
             tuple(g for row in FACTS for g in row.guard) + LEXICON_WORDS)
    return tuple(dict.fromkeys(words))


# Every literal word the grammar's guards and expressions rely on to read something from a line (a word may end in
# a regular expression after a NUL, see Guarded), the HTML escapes clean() decodes (a web page's '&quot;' may stand
# where a word has its quote mark: fronts.ESCAPES), and the failure lexicon's: a line holding none of them gives the
# parser nothing but a count, and is of no shape of the lexicon.
WORDS: Tuple[str, ...] = _words()

# The words as two expressions over a line's text, as the prefilter has them over bytes (nccldiag.nccl.scan):
# words starting in upper case or a mark apart from the lower-case ones, each a plain alternation that Python's
# engine skips through quickly.
_WORD_TEXT = tuple(rx.compile(lexicon.trie(ws)) for ws in (
    [w for w in WORDS if not w[:1].islower()], [w for w in WORDS if w[:1].islower()]))


_LAST_WORD: Tuple[Optional[str], bool] = (None, False)  # the last text tested, and whether it held a word


def holds_word(text: str) -> bool:
    """Whether ``text`` holds a word of :data:`WORDS` (a superset: a word's tail reads Unicode spaces and digits
    too). A line that holds none gives the parser nothing but a count: the checks that read it are skipped. The
    same text tested again at once (the parser's record of a line, then what the replay remembers of it) is
    answered from the last test."""
    global _LAST_WORD
    last = _LAST_WORD
    if text is last[0]:
        return last[1]
    got = _WORD_TEXT[0].search(text) is not None or _WORD_TEXT[1].search(text) is not None
    _LAST_WORD = (text, got)
    return got
