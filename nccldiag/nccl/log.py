"""NCCL debug logs (``NCCL_DEBUG=INFO``) -> facts. Pure: text in, dataclasses out.

What NCCL logged is the only trustworthy record of which transport a job really
used: the environment says what was asked for, the ``Channel ... via ...`` lines
say what happened. The parser reads logs as people actually have them: one
file per process (``NCCL_DEBUG_FILE``) or everything interleaved on stdout,
behind launcher prefixes (``[1,3]<stdout>:``, ``[rank0]:``, ``host: ``,
``[0] ``), timestamps, colour codes, and lines wrapped or glued together by
whoever copied them. Every pattern is therefore an unanchored search on the
text after the ``<host>:<pid>:<tid> [<cudaDev>] NCCL INFO|WARN`` prefix, and
a physical line holding two prefixes is split into two records.

Formats covered: NCCL 2.4 (``Ring 00 : 0 -> 1 via NET/IB/0``, ``.cu`` sources)
to 2.30 (``(func)`` in WARN lines, ``SHM/direct``, WARN timestamps). The
parser never raises on text.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple, Union

# ncclResult_t (src/nccl.h.in); ncclTimeout exists since 2.27.
RESULT_NAMES = {
    0: "ncclSuccess",
    1: "ncclUnhandledCudaError",
    2: "ncclSystemError",
    3: "ncclInternalError",
    4: "ncclInvalidArgument",
    5: "ncclInvalidUsage",
    6: "ncclRemoteError",
    7: "ncclInProgress",
    8: "ncclTimeout",
}
# What ncclGetErrorString says (and PyTorch repeats) for each result.
RESULT_TEXT = {
    1: "unhandled cuda error",
    2: "unhandled system error",
    3: "internal error",
    4: "invalid argument",
    5: "invalid usage",
    6: "remote process exited or there was a network error",
    7: "operation in progress",
    8: "timeout",
}
# Results that mean something failed (ncclInProgress is the normal answer of a
# non-blocking communicator).
ERROR_RESULTS = frozenset({1, 2, 3, 4, 5, 6, 8})

# Transport categories, the vocabulary of summaries and findings.
P2P, SHM, NET_IB, NET_IB_GDR, NET_SOCKET, NVLS, COLLNET = (
    "P2P", "SHM", "NET/IB", "NET/IB+GDRDMA", "NET/Socket", "NVLS", "CollNet")


# --------------------------------------------------------------------------- facts


@dataclass
class Loc:
    """Where a fact was read: the file, its 1-based line and the NCCL prefix."""

    source: str
    lineno: int
    host: Optional[str] = None
    pid: Optional[int] = None
    tid: Optional[int] = None
    dev: Optional[int] = None  # cudaDev of the prefix

    @property
    def proc(self) -> Optional[str]:
        return f"{self.host}:{self.pid}" if self.host is not None else None

    def cite(self, text: str) -> str:
        """An evidence line: ``file:line: text``."""
        return f"{self.source}:{self.lineno}: {text}"


@dataclass
class VersionLine:
    """``NCCL version 2.18.3+cuda12.2`` (or the version PyTorch quotes in an error)."""

    version: str  # "2.18.3" (with any suffix NCCL printed, e.g. "2.18.3a0")
    cuda: Optional[str]
    at: Loc
    text: str
    inferred: bool = False  # the line had no prefix; the process was inferred
    origin: str = "nccl"  # "nccl" or "torch" (from 'NCCL error in: ..., NCCL version x')
    rank0: bool = False  # printed by rank 0 (its process, or its excerpt, says so)
    world: Optional[int] = None  # nRanks of that rank 0's world, where a line gave it


@dataclass
class NetworkChoice:
    """``Using network IB`` / ``Socket`` / ``IBext_v8``: the net NCCL picked."""

    name: str
    at: Loc
    text: str


@dataclass
class NetDevice:
    """One device of a ``NET/<net> : Using ...`` line: an HCA port or a socket interface."""

    index: Optional[int]
    name: str
    port: Optional[int] = None  # HCA port (IB nets)
    link: Optional[str] = None  # IB or RoCE (IB nets)
    address: Optional[str] = None  # socket interfaces: '192.0.2.1<0>'
    merged: bool = False  # part of a merged virtual NIC ([0]={[0] a, [1] b})


@dataclass
class NetDevices:
    """A ``NET/IB : Using ...``, ``NET/Socket : Using ...`` or old ``IB Ports`` line."""

    net: str
    devices: List[NetDevice]
    at: Loc
    text: str
    relaxed_ordering: bool = False
    oob: Optional[NetDevice] = None


@dataclass
class Bootstrap:
    """``Bootstrap : Using ens4:192.0.2.2<0>``: the interface(s) of NCCL's TCP bootstrap."""

    interfaces: List[NetDevice]
    at: Loc
    text: str


@dataclass
class GdrLine:
    """``NET/IB : GPU Direct RDMA Enabled|Disabled for [GPU g /] HCA h ['name'] (reason)``."""

    enabled: bool
    hca: str
    at: Loc
    text: str
    net: Optional[str] = None
    gpu: Optional[str] = None
    hca_name: Optional[str] = None
    reason: Optional[str] = None


@dataclass
class PluginLine:
    """Net/collnet plugin lines (``Plugin Path``, ``P2P plugin IBext``, ``NET/Plugin : ...``)."""

    kind: str  # path, p2p_plugin, loaded_net, loaded_collnet, load_failed, none_found, other
    value: str
    at: Loc
    text: str


@dataclass
class CommInfo:
    """``comm 0x.. rank 3 nRanks 4 nNodes 2 localRanks 2 localRank 1 MNNVL 0`` (or the old short form)."""

    comm: Optional[str]
    rank: int
    nranks: int
    at: Loc
    text: str
    nnodes: Optional[int] = None
    local_ranks: Optional[int] = None
    local_rank: Optional[int] = None
    mnnvl: Optional[int] = None


@dataclass
class InitEvent:
    """``comm .. rank r nranks n cudaDev d nvmlDev v busId b commId c - Init START|COMPLETE``."""

    phase: str  # START or COMPLETE
    rank: int
    nranks: int
    at: Loc
    text: str
    comm: Optional[str] = None
    cuda_dev: Optional[int] = None
    nvml_dev: Optional[int] = None
    bus_id: Optional[str] = None
    comm_id: Optional[str] = None


@dataclass
class Channel:
    """One connection line: ``Channel 02/0 : 1[1] -> 3[1] [send] via NET/IB/2/GDRDMA``.

    ``transport`` is P2P, SHM, NET or COLLNET; ``category`` is the summary label
    (P2P, SHM, NET/IB, NET/IB+GDRDMA, NET/Socket, NET/<other>[+GDRDMA], CollNet).
    """

    channel: int
    src: int
    dst: Optional[int]  # None for CollNet lines, which name no peer
    transport: str
    via: str  # the text after 'via', e.g. 'P2P/CUMEM/read', 'NET/IB/2/GDRDMA'
    category: str
    at: Loc
    text: str
    label: str = "Channel"  # Channel, Ring (before 2.8), CollNet
    conn_index: Optional[int] = None
    src_dev: Optional[str] = None
    dst_dev: Optional[str] = None
    direction: Optional[str] = None  # send / receive for NET and CollNet
    mode: Optional[str] = None  # P2P: IPC, CUMEM, MNNVL, direct pointer, indirect; SHM: direct/direct ...
    read: bool = False
    ce: bool = False
    net: Optional[str] = None  # NET name: IB, Socket, IBext_v8 ...
    net_dev: Optional[int] = None
    proxy_rank: Optional[int] = None  # PXN: the rank whose NIC carries the traffic
    gdrdma: bool = False
    pci: bool = False
    shared: bool = False
    relay: Optional[int] = None  # P2P/indirect: the intermediate rank


@dataclass
class Connected:
    """``Connected all rings[, use ring PXN p GDR g]``, ``Connected all trees``, ``Connected NVLS tree``."""

    what: str
    at: Loc
    text: str
    pxn: Optional[int] = None
    gdr: Optional[int] = None


@dataclass
class RingOrder:
    """``Channel 00/02 :    0   1   2   3`` (``Ring 00 :    0   1`` before 2.8): a ring's order, printed by rank 0.

    NCCL prints it only on rank 0 (``src/graph/rings.cc``: ``if (rank == 0) dumpLine(...)``), so the line
    names rank 0 of a world of ``len(order)`` ranks.
    """

    channel: int
    order: List[int]
    at: Loc
    text: str
    nchannels: Optional[int] = None

    @property
    def nranks(self) -> int:
        return len(self.order)


@dataclass
class CategoryStats:
    """Every channel line of one transport category, counted; a few kept as evidence."""

    category: str
    lines: int = 0
    first: List["Channel"] = field(default_factory=list)
    hosts: List[str] = field(default_factory=list)
    pairs: List[str] = field(default_factory=list)
    nets: List[str] = field(default_factory=list)


@dataclass
class ChannelCounts:
    """``16 coll channels, 0 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p channels per peer``."""

    coll: int
    p2p: int
    p2p_per_peer: int
    at: Loc
    text: str
    collnet: Optional[int] = None
    nvls: Optional[int] = None


@dataclass
class NvlsLine:
    """``NVLS comm 0x.. headRank h nHeads n ...`` or ``NVLS multicast support is [not ]available on dev d``."""

    kind: str  # comm or multicast
    at: Loc
    text: str
    head_rank: Optional[int] = None
    n_heads: Optional[int] = None
    available: Optional[bool] = None


@dataclass
class EnvEcho:
    """``NCCL_IB_DISABLE set by environment to 1.``: a setting NCCL read."""

    name: str
    value: str
    at: Loc
    text: str


@dataclass
class ChainStep:
    """``NCCL INFO transport/net.cc:592 -> 2``: one frame of an error's return path."""

    file: str
    line: int
    code: int
    at: Loc
    text: str
    thread: Optional[str] = None  # '[Async thread]' and the like

    @property
    def code_name(self) -> str:
        name = RESULT_NAMES.get(self.code)
        return name if name is not None else f"ncclResult {self.code}"


@dataclass
class Warn:
    """A ``NCCL WARN`` with the call chain its thread logged right after it.

    ``kind`` names a known failure (see ``WARN_KINDS``) or ``other``;
    ``failure`` is true when the kind is a failure or the chain returned an
    error result.
    """

    message: str
    at: Loc
    text: str
    file: Optional[str] = None
    line: Optional[int] = None
    func: Optional[str] = None
    timestamp: Optional[str] = None
    chain: List[ChainStep] = field(default_factory=list)
    kind: str = "other"
    failure: bool = False
    detail: Dict[str, str] = field(default_factory=dict)
    origin: str = "warn"  # warn: an NCCL WARN line; last-error: the 'Last error:' text PyTorch or nccl-tests quoted

    @property
    def result(self) -> Optional[int]:
        """The result the first frame returned (the error class)."""
        return self.chain[0].code if self.chain else None

    @property
    def result_name(self) -> Optional[str]:
        return RESULT_NAMES.get(self.result) if self.result is not None else None


@dataclass
class OrphanChain:
    """Call-chain lines whose WARN is not in the log (cut from an excerpt, or another level)."""

    steps: List[ChainStep]
    at: Loc
    # The thread went on to connect or complete init afterwards: the error was handled (NCCL 2.4
    # returned ncclSystemError from probing a virtual interface's PCI path, then carried on).
    benign: bool = False
    resumed: Optional[str] = None  # the progress line that showed it, cited

    @property
    def result(self) -> Optional[int]:
        return self.steps[0].code if self.steps else None

    @property
    def failed(self) -> bool:
        return self.result in ERROR_RESULTS and not self.benign


@dataclass
class Watchdog:
    """PyTorch's ``Watchdog caught collective operation timeout: WorkNCCL(...) ran for N milliseconds``."""

    at: Loc
    text: str
    rank: Optional[int] = None
    seq: Optional[int] = None
    op_type: Optional[str] = None
    numel_in: Optional[int] = None
    numel_out: Optional[int] = None
    timeout_ms: Optional[int] = None
    ran_for_ms: Optional[int] = None


@dataclass
class AppError:
    """An NCCL error the application printed: PyTorch ``NCCL error in: ...``, nccl-tests ``Test NCCL failure``."""

    kind: str  # torch, nccl-tests, nccl-tests-timeout
    message: str
    at: Loc
    text: str
    where: Optional[str] = None


@dataclass
class ErrorLine:
    """A line that is not NCCL's own but reports an error (a launcher, PyTorch, CUDA, UCX, systemd, a pasted
    ``nvidia-smi``), or a kernel line about GPUs, IOMMU, PCIe or RDMA (``kind`` ``kernel``), kept as written.

    Cause rules search these texts; a line ending in ``:`` is joined with the line after it (``Test CUDA
    failure common.cu:N`` / ``'<message>'``).
    """

    text: str
    at: Loc
    kind: str = "error"  # error | kernel


@dataclass
class Note:
    """INFO lines that explain a choice: no IB device, libibverbs missing, P2P disabled by NVML, ..."""

    kind: str
    at: Loc
    text: str


@dataclass
class Proc:
    """One process seen in the logs (``host:pid``) with what it said about itself."""

    host: str
    pid: int
    devs: List[int] = field(default_factory=list)
    ranks: List[int] = field(default_factory=list)
    versions: List[str] = field(default_factory=list)
    networks: List[str] = field(default_factory=list)
    launcher_ranks: List[int] = field(default_factory=list)
    sources: List[str] = field(default_factory=list)
    init_started: List[int] = field(default_factory=list)  # ranks with 'Init START'
    init_completed: List[int] = field(default_factory=list)  # ranks with 'Init COMPLETE'

    @property
    def name(self) -> str:
        return f"{self.host}:{self.pid}"


@dataclass
class PairTransport:
    """What carried traffic from rank ``src`` to rank ``dst``, over all channel lines."""

    src: int
    dst: int
    categories: List[str]
    vias: List[str]
    channels: List[int]
    src_hosts: List[str]
    dst_hosts: List[str]
    lines: int

    @property
    def key(self) -> str:
        return f"{self.src}->{self.dst}"


@dataclass
class Summary:
    """The answers people grep logs for."""

    versions: List[str]  # distinct NCCL versions
    versions_by_proc: Dict[str, List[str]]
    networks: List[str]  # distinct 'Using network' names
    transports: List[str]  # categories seen overall (plus NVLS, CollNet)
    pairs: List[PairTransport]
    net_ib_used: bool
    gdrdma_used: bool
    nvls_used: bool
    collnet_used: bool
    error_results: List[str]  # distinct ncclResult names of failed WARNs and chains
    failures: int  # failed WARNs + orphan error chains + watchdog timeouts + app errors
    warns: int
    ranks: List[int]
    hosts: List[str]
    nranks: List[int] = field(default_factory=list)  # world sizes (comm, Init and ring-order lines)


@dataclass
class NcclLogFacts:
    """Everything read from one or more NCCL logs.

    Logs are read line by line and memory stays bounded whatever their size:
    each list keeps its first ``keep`` records (``counts`` has how many were
    seen), channel lines are tallied per category (``channel_stats``) and per
    rank pair, and the summary is computed from those tallies.
    """

    sources: List[str] = field(default_factory=list)
    lines: int = 0
    nccl_lines: int = 0
    unprefixed: int = 0  # NCCL messages read from lines that lost their host:pid:tid prefix
    keep: int = 0
    counts: Dict[str, int] = field(default_factory=dict)
    channel_stats: Dict[str, CategoryStats] = field(default_factory=dict)
    version_names: List[str] = field(default_factory=list)
    pair_list: List[PairTransport] = field(default_factory=list)
    dropped_failures: int = 0  # failed WARNs past ``keep`` (counted, not kept)
    dropped_results: List[str] = field(default_factory=list)
    rings: List[RingOrder] = field(default_factory=list)
    procs: List[Proc] = field(default_factory=list)
    versions: List[VersionLine] = field(default_factory=list)
    networks: List[NetworkChoice] = field(default_factory=list)
    nets: List[NetDevices] = field(default_factory=list)
    bootstrap: List[Bootstrap] = field(default_factory=list)
    gdr: List[GdrLine] = field(default_factory=list)
    plugins: List[PluginLine] = field(default_factory=list)
    comms: List[CommInfo] = field(default_factory=list)
    inits: List[InitEvent] = field(default_factory=list)
    channels: List[Channel] = field(default_factory=list)
    connected: List[Connected] = field(default_factory=list)
    channel_counts: List[ChannelCounts] = field(default_factory=list)
    nvls: List[NvlsLine] = field(default_factory=list)
    env: List[EnvEcho] = field(default_factory=list)
    warns: List[Warn] = field(default_factory=list)
    orphan_chains: List[OrphanChain] = field(default_factory=list)
    watchdogs: List[Watchdog] = field(default_factory=list)
    app_errors: List[AppError] = field(default_factory=list)
    notes: List[Note] = field(default_factory=list)
    errors: List[ErrorLine] = field(default_factory=list)  # error lines besides NCCL's own (see ErrorLine)
    kernel: List[ErrorLine] = field(default_factory=list)  # kernel lines (dmesg) found in the files
    summary: Optional[Summary] = None
    nccl_tests: List[Any] = field(default_factory=list)  # benchmarks.nccltests.NcclTestsRun, one per file
    nccl_tests_no_result: List[Any] = field(default_factory=list)  # runs whose header came, and no result row
    perftests: List[Any] = field(default_factory=list)  # benchmarks.perftest.PerftestResult, one per file
    ras: List[Any] = field(default_factory=list)  # nccl.ras.RasReport, every NCCL RAS report in the files

    def total(self, name: str) -> int:
        """How many records of list ``name`` the logs held (the list keeps at most ``keep``)."""
        return max(self.counts.get(name, 0), len(getattr(self, name)))

    def env_values(self) -> Dict[str, List[str]]:
        """Each echoed variable with its distinct values, in order of appearance."""
        out: Dict[str, List[str]] = {}
        for e in self.env:
            vals = out.setdefault(e.name, [])
            if e.value not in vals:
                vals.append(e.value)
        return out


# --------------------------------------------------------------------------- lines -> records

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b")
# Colour codes whose ESC was lost on the way ('[0m', '[1;31m').
_ANSI_RESIDUE = re.compile(r"\[(?:\d{1,3}(?:;\d{1,3})*)?m")
# The pid and tid may be anonymised ('<pid>', 'XXXX'); NCCL before 2.4 wrote the level without 'NCCL '.
_PREFIX = re.compile(
    r"(?P<host>[A-Za-z0-9_.<>\-]*):(?P<pid>\d+|[^\s:\[\]\d][^\s:\[\]]{0,23}):"
    r"(?P<tid>\d+|[^\s:\[\]\d][^\s:\[\]]{0,23}) \[(?P<dev>-?\d+)\] "
    r"(?:(?P<file>[\w./+\-]+):(?P<fline>\d+) (?:\((?P<func>[^()\s]*)\) )?)?"
    r"(?:NCCL )?(?P<level>INFO|WARN|TRACE|ABORT)(?= |$)"
)
_WARN_TS = re.compile(r"\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]\s*$")
_LAUNCHER = re.compile(r"^\s*(?:\[\d+,(?P<ompi>\d+)\]<(?:stdout|stderr)>:|\[rank(?P<torch>\d+)\]:|(?P<srun>\d+): )")


@dataclass
class _Rec:
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
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_BULLET = re.compile(r"^\s*(?:[*+•]|-(?=\s+(?:\S+:\S+:\S+ \[|\[|NCCL\b)))\s+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")


def clean(line: str) -> str:
    """The line without colour codes (and their ESC-less residue), markdown wrapping, or trailing blanks."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "m" in line and "[" in line and _ANSI_RESIDUE.search(line):
        line = _ANSI_RESIDUE.sub("", line)
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


def _num(s: str) -> int:
    """A pid or tid as a number; an anonymised one ('<pid>', 'XXXX') gets a stable number of its own."""
    if s.isdigit():
        return int(s)
    import zlib

    return -1 - zlib.crc32(s.encode("utf-8", "replace")) % 1000000


_LEVELS = {"INFO": "info", "WARN": "warn", "ABORT": "warn"}
_LAUNCHER_FIRST = frozenset(" \t[0123456789")  # the characters a launcher prefix can start with


def _records(lines: Iterable[str], source: str, count: Optional[List[int]] = None) -> Iterator[_Rec]:
    """Records of one log, line by line. A record is held back one line: the next line may complete it.

    ``count``, when given, receives the number of lines read once the log ends.
    """
    return _numbered_records(enumerate(lines, 1), source, count)


def _numbered_records(lines: Iterable[Tuple[int, str]], source: str,
                      count: Optional[List[int]] = None) -> Iterator[_Rec]:
    """:func:`_records` of ``(line number, line)`` pairs: the numbers may skip lines a prefilter left out (a
    skipped line never continues a record: only the line right after one does)."""
    reader = _Reader(source)
    n = 0
    for n, raw in lines:
        yield from reader.line(n, raw)
    if count is not None:
        count.append(n)
    yield from reader.end()


class _Reader:
    """Records of one log, one line at a time (:func:`_numbered_records`). A record is held back one line: the
    next line may complete it (``held``); ``prev`` is the last of them, still open to a wrapped continuation."""

    __slots__ = ("source", "prev", "held")

    def __init__(self, source: str) -> None:
        self.source = source
        self.prev: Optional[_Rec] = None
        self.held: List[_Rec] = []

    def line(self, n: int, raw: str) -> List[_Rec]:
        """Read line ``n``: the records it completes, in order (those held before it, a bare line's own)."""
        line = clean(raw)
        m_l = _LAUNCHER.match(line) if line[:1] in _LAUNCHER_FIRST else None
        lrank = None
        if m_l:
            lrank = int(next(g for g in m_l.groups() if g is not None))
        matches = _prefixes(line)
        if not matches:
            body = line[m_l.end():] if m_l else line
            prev = self.prev
            if prev is not None and prev.at.lineno == n - 1 and _wrapped(prev.msg, body):
                # A line wrapped by whoever copied the log: the rest of the previous message.
                prev.msg += body.strip()
                prev.text += body.strip()
                return []
            out = self.held
            self.held = []
            self.prev = None
            if body.strip():
                out.append(_Rec("bare", body.strip(), Loc(self.source, n), line.strip(), launcher_rank=lrank))
            return out
        out = self.held
        held: List[_Rec] = []
        for i, m in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
            msg = line[m.end():end].strip()
            host, pid, tid, dev, file, fline, func, level = m.group(
                "host", "pid", "tid", "dev", "file", "fline", "func", "level")
            kind = _LEVELS.get(level, "trace")
            ts = None
            if kind == "warn":
                tsm = _WARN_TS.search(line[:m.start()])
                ts = tsm.group(1) if tsm else None
            at = Loc(self.source, n, host, _num(pid), _num(tid), int(dev))
            rec = _Rec(kind, msg, at, line[m.start():end].strip(), file, int(fline) if fline else None, func, ts,
                       lrank)
            self.prev = rec
            held.append(rec)
        self.held = held
        return out

    def end(self) -> List[_Rec]:
        out, self.held, self.prev = self.held, [], None
        return out


def _prefixes(line: str) -> List["re.Match[str]"]:
    """The NCCL prefixes of a line; usually one, two or more when output of processes was glued together."""
    if "NCCL " not in line and "] INFO " not in line and " WARN " not in line:
        return []
    m = _PREFIX.search(line)
    if m is None:
        return []
    out = [m]
    while "NCCL " in line[m.end():] or " INFO " in line[m.end():] or " WARN " in line[m.end():]:
        m = _PREFIX.search(line, m.end())
        if m is None:
            break
        out.append(m)
    return out


def _wrapped(prev_msg: str, body: str) -> bool:
    """Whether ``body`` continues ``prev_msg``: it left a parenthesis open, and ``body`` closes it."""
    b = body.strip()
    return (prev_msg.count("(") > prev_msg.count(")") and 0 < len(b) < 120 and ")" in b
            and b.count(")") > b.count("(") and not b.startswith(("[", "#")) and "NCCL" not in b)


# --------------------------------------------------------------------------- patterns on messages

_VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+[\w.\-]*?)(?:\+cuda(?P<cuda>\d+\.\d+))?(?=[\s,]|$)")
_USING_NETWORK = re.compile(r"\bUsing network (?P<name>\S+)")
_NET_USING = re.compile(r"\bNET/(?P<net>[\w\-]+(?:/[\w\-]+)?) ?: Using\b(?P<body>.*)")
_NET_NODEV = re.compile(r"\bNET/(?P<net>[\w\-]+) ?: No device found")
_IB_DEV = re.compile(
    r"\[(?P<idx>\d+)\]\s*(?P<name>[^\s:\[\]={},]+):(?P<port>\d+)(?:/\d+)?(?::\d+)?/(?P<link>IB|RoCE|[A-Za-z]+)")
_SOCK_IF = re.compile(r"(?:\[(?P<idx>\d+)\])?(?P<name>[^\s:\[\]]+):(?P<addr>\S+)")
_OLD_IB_PORTS = re.compile(r"\bCUDA Dev (?P<dev>\d+), IB Ports? : (?P<body>.*)")
_OLD_IB_PORT = re.compile(r"(?P<name>[\w\-]+)/(?P<port>\d+)(?:\((?P<dist>\w+)\))?")
_BOOTSTRAP = re.compile(r"\bBootstrap ?: Using\b(?P<body>.*)")
_GDR = re.compile(
    r"(?:\bNET/(?P<net>[\w\-]+) ?: )?GPU Direct RDMA (?P<state>Enabled|Disabled) for "
    r"(?:GPU (?P<gpu>[\w:.]+)(?:\[\d+\])? / )?HCA (?P<hca>[\w\-]+)(?: '(?P<name>[^']*)')?(?: \((?P<reason>[^)]*)\)?)?")
_PLUGIN_PATH = re.compile(r"\bPlugin Path : (?P<v>\S+)")
_P2P_PLUGIN = re.compile(r"\bP2P plugin (?P<v>\S+)")
_LOADED_PLUGIN = re.compile(r"\bLoaded (?P<kind>net|collnet|coll) plugin (?P<v>.+?)\s*$")
_NET_PLUGIN = re.compile(r"\bNET/Plugin ?: (?P<v>.*)")
_INIT = re.compile(
    r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cdev>-?\d+)"
    r"(?: nvmlDev (?P<nvml>-?\d+))?(?: busId (?P<bus>[0-9a-fA-F]+))?(?: commId (?P<cid>0x[0-9a-fA-F]+))?"
    r"(?: localSize \d+)?.*?- Init (?P<phase>START|COMPLETE)")
_COMM = re.compile(
    r"\bcomm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+) "
    r"localRanks (?P<lranks>\d+) localRank (?P<lrank>\d+)(?: MNNVL (?P<mnnvl>\d+))?")
_COMM_OLD = re.compile(r"(?:\bcomm (?P<comm>0x[0-9a-fA-F]+) )?\brank (?P<rank>\d+) nranks (?P<nranks>\d+)\s*$")
_CHANNEL = re.compile(
    r"\b(?P<label>Channel|Ring) (?P<ch>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+)(?:\[(?P<sdev>[0-9a-fA-F]+)\])? -> "
    r"(?P<dst>\d+)(?:\[(?P<ddev>[0-9a-fA-F]+)\])?(?: \[(?P<dir>send|receive)\])? via (?P<via>.+)")
_COLLNET_CH = re.compile(
    r"\b(?P<label>CollNet|Coll) (?P<ch>\d+)(?:/(?P<conn>\d+))? : (?P<src>\d+) \[(?P<dir>send|receive)\] "
    r"via (?P<via>COLLNET/.+)")
_VIA_P2P = re.compile(
    r"^P2P/(?P<mode>IPC|CUMEM|MNNVL|direct pointer|indirect/(?P<relay>\d+)(?:\[\w+\])?|\d+)(?P<flags>(?:/read|/CE)*)")
_VIA_SHM = re.compile(r"^(?:SHM(?:/(?P<mode>\w+(?:/\w+)?))?|direct shared memory)")
_VIA_NET = re.compile(
    r"^(?P<t>NET|COLLNET)/(?P<name>[^/]+?)/(?P<dev>\d+)(?:\((?P<proxy>\d+)\))?(?P<flags>(?:/GDRDMA|\(PCI\)|/Shared)*)")
_CONNECTED = re.compile(
    r"\bConnected (?P<what>all rings|all trees|NVLS tree|binomial trees|[Cc]oll[Nn]et \w+(?: \+ \w+)?)"
    r"(?:, use ring PXN (?P<pxn>\d+) GDR (?P<gdr>\d+))?")
_COUNTS = re.compile(
    r"(?P<coll>\d+) coll channels, (?:(?P<collnet>\d+) collnet channels, )?(?:(?P<nvls>\d+) nvls channels, )?"
    r"(?P<p2p>\d+) p2p channels, (?P<ppp>\d+) p2p channels per peer")
_NVLS_COMM = re.compile(r"\bNVLS comm 0x[0-9a-fA-F]+ headRank (?P<head>-?\d+) nHeads (?P<nheads>\d+)")
_NVLS_MC = re.compile(r"\bNVLS multicast support is (?P<not>not )?available on dev (?P<dev>\d+)")
_ENV = re.compile(r"\b(?P<name>[A-Z][A-Z0-9_]{2,}) set by environment to (?P<value>.*?)\s*$")
_CHAIN = re.compile(r"(?:^|\s)(?P<file>[\w./+\-]+\.\w+):(?P<line>\d+) -> (?P<code>\d+)(?: \[(?P<thr>[^\]]+)\])?")
_WATCHDOG = re.compile(
    r"Watchdog caught collective operation timeout: WorkNCCL\((?P<body>.*?)\)\s*ran for (?P<ran>\d+) milliseconds")
_WD_RANK = re.compile(r"\[(?:PG [^\]]*?)?Rank (?P<rank>\d+)\]\s*Watchdog|\[Rank (?P<rank2>\d+)\]")
_WD_FIELD = re.compile(r"(?P<k>\w+(?:\(ms\))?)=(?P<v>[^,\s)]+)")
_TORCH_ERR = re.compile(r"NCCL error in: (?P<where>\S+?),\s*(?P<msg>.*?)(?:, NCCL [vV]ersion (?P<ver>[\d.]+\w*))?\s*$")
# nccl-tests' failure lines; its first releases (2017-2018) printed 'NCCL failure all_reduce.cu:95 '...'' and
# 'Cuda failure common.cu:891 '...'' without the 'Test ' (NCCL's own WARN 'Cuda failure 'x'' names no .cu file).
_TESTS_FAIL = re.compile(r"(?:(?P<host>[\w.\-]+): )?(?:Test NCCL failure (?P<where>\S+)|"
                         r"(?<!\S)NCCL failure (?P<old>[\w./\-]+\.cu:\d+)) '(?P<msg>[^']*)")
_TESTS_CUDA = re.compile(r"(?:(?P<host>[\w.\-]+): )?(?:Test CUDA failure (?P<where>\S+)|"
                         r"(?<!\S)Cuda failure (?P<old>[\w./\-]+\.cu:\d+))(?:\s+'(?P<msg>[^']*)'?)?\s*$")
_TORCH_OLD = re.compile(r"\bNCCL Error (?P<code>\d+): (?P<msg>.+?)\s*$")
_LAST_ERROR = re.compile(r"(?:^|[\s:\]|])Last error:\s*(?P<text>.*)$")
_TAG = re.compile(r"^\[[^\]\s]{1,40}\]:\s*")
# Words of an error in any program's output; table headers and comment lines of benchmarks are not errors.
_ERROR_TEXT = re.compile(
    r"\b(?:[Ee]rror|ERROR|[Ff]ail(?:ed|ure|s)?|FAIL(?:ED|URE)?|[Ff]atal|FATAL|[Ee]xception|Traceback|[Tt]imed? ?out|"
    r"[Rr]efused|[Uu]nreachable|[Aa]bort(?:ed|ing)?|[Kk]illed|[Ss]egmentation fault|core dumped|not supported|"
    r"[Uu]nable to|[Cc]annot|[Cc]an't|[Cc]ould not|[Cc]ouldn't|[Dd]enied|[Nn]o such|[Ii]nvalid|[Mm]ismatch|"
    r"out of memory|busy or unavailable|[Ii]nsufficient|not found|Unknown Error|is neither AF_INET|"
    r"Duplicate GPU detected)\b")
_KERNEL_TEXT = re.compile(
    r"NVRM:|\bXid\b|AMD-Vi|\bDMAR\b|IO_PAGE_FAULT|nv_peer_mem|nvidia[-_]peermem|PCIe Bus Error|\bAER\b|"
    r"\bmlx\d_(?:core|ib|en)\b|fallen off the bus|\bib_umad\b|nv-fabricmanager|[Ff]abric ?[Mm]anager")
MAX_ERROR_TEXT = 1000  # characters kept of one error line
_TESTS_TIMEOUT = re.compile(r"Test timeout \((?P<s>\d+)s\) (?P<where>\S+)")

# INFO lines worth keeping as notes: (kind, pattern).
_NOTES: Tuple[Tuple[str, "re.Pattern[str]"], ...] = (
    ("max_shared_mem", re.compile(r"ncclMaxSharedMem \d+ exceeds")),
    ("ib_qp", re.compile(r"\bquery_ece=|\bIbDev \d+ Port \d+ qpn\b")),
    ("ibverbs_missing", re.compile(r"Failed to open libibverbs")),
    ("p2p_disabled_by_nvml", re.compile(r"P2P is disabled between connected GPUs")),
    ("collnet_disabled", re.compile(r"disabling CollNet")),
    ("cuda_driver", re.compile(r"\bcudaDriverVersion \d+")),
    ("ib_no_active_port", re.compile(r"NET/IB ?: .*(?:no active|No active) port")),
    ("topo_file", re.compile(r"Loading topology file \S")),
)

# WARN kinds: (kind, failure?, pattern). The first match wins.
WARN_KINDS: Tuple[Tuple[str, bool, "re.Pattern[str]"], ...] = (
    ("duplicate_gpu", True, re.compile(r"Duplicate GPU detected|Multiple Ranks are using the same GPU")),
    ("version_mismatch", True, re.compile(r"Mismatched NCCL version")),
    ("shm", True, re.compile(r"/dev/shm|shared memory segment|posix_fallocate failed|shm_open failed|"
                             r"No space left on device")),
    ("ibv", True, re.compile(r"Call to (?P<fn>ibv_\w+) failed(?: with error (?P<err>[^\n]*?))?(?: errno \d+)?\s*$")),
    ("ib_completion", True, re.compile(r"Got completion from peer .*?status=(?P<status>\d+)")),
    ("nvls", True, re.compile(r"NVLink SHARP|NVLS_ENABLE")),
    ("cuda", True, re.compile(r"Cuda failure (?:(?P<code>\d+) )?'(?P<err>[^']*)'?")),
    ("no_interface", True, re.compile(r"no interface found|No usable listening interface|no socket interface found")),
    ("socket_connect", True, re.compile(r"socketStartConnect|Connect to .* failed|Connection refused|"
                                        r"Network is unreachable|Connection timed out|neither AF_INET")),
    ("remote_closed", True, re.compile(r"Connection closed by remote peer|Connection reset by peer")),
    ("proxy", True, re.compile(r"\[Proxy Service \d+\] Failed|Error encountered progressing|Socket recv failed|"
                               r"\[Service thread\]")),
    ("p2p_nvlink_disabled", True, re.compile(r"P2P is disabled between NVLINK connected GPUs")),
    ("timeout", True, re.compile(r"\btimeout\b|timed out", re.I)),
    ("cuda_library", False, re.compile(r"Failed to find CUDA library|libcuda\.so")),
    ("ibverbs_missing", False, re.compile(r"Failed to open libibverbs")),
)


_ERROR_KINDS: Dict[str, Optional[str]] = {}  # line -> its _error_kind, for lines seen again


def _error_kind(msg: str) -> Optional[str]:
    """``kernel`` for a kernel line, ``error`` for a line that reports an error, else ``None``."""
    kind = _ERROR_KINDS.get(msg, "")
    if kind != "":
        return kind
    if _KERNEL_TEXT.search(msg) is not None:
        kind = "kernel"
    elif _ERROR_TEXT.search(msg) is None or msg.startswith("#") or "algbw" in msg:
        kind = None
    else:
        kind = "error"
    if len(msg) <= 1024:  # at most 4 MiB of remembered lines
        if len(_ERROR_KINDS) >= 4096:
            _ERROR_KINDS.clear()
        _ERROR_KINDS[msg] = kind
    return kind


def _classify(w: Warn) -> None:
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


def _fails(w: Warn) -> bool:
    """Whether :func:`_classify` would call ``w`` a failure (for a WARN past the bound, only counted): its
    message's kind, remembered per message, or an error result in its chain."""
    k = (w.message, w.file)
    base = _MESSAGE_FAILS.get(k)
    if base is None:
        probe = Warn(w.message, w.at, w.text, w.file)
        _classify(probe)
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


def _category(transport: str, net: Optional[str], gdr: bool) -> str:
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
        relay = int(m.group("relay")) if m.group("relay") else None
        return {"transport": "P2P", "mode": "indirect" if relay is not None else mode, "relay": relay,
                "read": "/read" in flags, "ce": "/CE" in flags, "via": m.group(0)}
    m = _VIA_NET.match(via)
    if m:
        flags = m.group("flags") or ""
        return {"transport": m.group("t"), "net": m.group("name"), "net_dev": int(m.group("dev")),
                "proxy_rank": int(m.group("proxy")) if m.group("proxy") else None,
                "gdrdma": "/GDRDMA" in flags, "pci": "(PCI)" in flags, "shared": "/Shared" in flags,
                "via": m.group(0)}
    m = _VIA_SHM.match(via)
    if m:
        return {"transport": "SHM", "mode": m.group("mode") or ("direct" if "direct" in m.group(0) else None),
                "via": m.group(0)}
    return {"transport": via.split("/")[0].split()[0] if via else "?", "via": via.split()[0] if via else ""}


# --------------------------------------------------------------------------- the parser


# Bounds that keep memory flat whatever the log's size (a log is not trusted to be small).
KEEP = 1000  # records kept per fact list; the rest are counted
# Benchmark outputs (nccl-tests, perftest) in the same files: their lines are
# kept per file from the first line that announces one, up to a bound, and
# read by nccldiag.benchmarks when the logs end.
_BENCH_START = re.compile(r"^\s*#?\s*(?:nThread\b|Collective test starting|Using devices|(?:size|bytes)\s+(?:count|N)\b|"
                          r"Out of bounds values\s*:|Avg bus bandwidth\s*:)"
                          r"|^\s*\d+\s+\d+\s+(?:float|half|double|u?int\d*|bfloat16|fp8\w*|char|f\d+|bf16)\s+\S"
                          r"|\b(?:BW|Lat(?:ency)?) Test\b")
MAX_BENCH_BYTES = 4 * 1024 * 1024
# NCCL RAS reports (ncclras, text or JSON) in the same files: kept per file from
# their first line, up to a bound, and read by nccldiag.nccl.ras when the logs end.
_RAS_START = re.compile(r"^\s*(?:NCCL version \S+ compiled with CUDA|Job summary\s*$|Communicators\.\.\."
                        r"|\{\s*$|\"communicators_count\"\s*:)")
MAX_RAS_BYTES = 1024 * 1024
MAX_BENCH_FILES = 256
MAX_LINE = 64 * 1024  # longer physical lines are cut (the rest of the line is skipped unread)
MAX_PROCS = 16384
MAX_PAIRS = 20000
MAX_SMALL = 64  # hosts, pairs, vias ... listed per tally
MAX_STEPS = 64  # frames kept per call chain
MAX_THREADS = 65536  # threads with an open WARN or call chain; past it the oldest state is closed
MAX_CATEGORIES = 64  # transport categories tallied (NET/<plugin name> makes new ones)

# Progress lines: a thread that logs one of these after an error chain got past the error.
_PROGRESS = re.compile(r"\bvia \S|\bConnected (?:all|NVLS|binomial|[Cc]oll)|- Init COMPLETE\b|\bcoll channels,")
# Messages specific enough to read from a line that lost its NCCL prefix (pasted, re-emitted, cut).
_UNPREFIXED = re.compile(
    r"\b(?:Channel|Ring) \d+(?:/\d+)? : (?:\d+(?:\[[0-9a-fA-F]+\])? -> .* via |\s*\d+(?:\s+\d+)*\s*$)"
    r"|\bUsing network \S|\bNET/[\w\-]+(?:/[\w\-]+)? ?: Using\b|\bNCCL_[A-Z0-9_]+ set by environment to "
    r"|- Init (?:START|COMPLETE)|\bNVLS multicast support is|\bNVLS comm 0x|\bcomm 0x[0-9a-fA-F]+ rank \d+ nRanks \d+"
    r"|\bBootstrap ?: Using\b|\d+ coll channels, |\bConnected all (?:rings|trees)"
    r"|\bGPU Direct RDMA (?:Enabled|Disabled) for"
    r"|\bNET/Plugin ?: \S|\bLoaded (?:net|collnet|coll) plugin \S|\bP2P plugin \S|\bPlugin Path : \S"
    r"|\bcudaDriverVersion \d+")
_BARE_WARN = re.compile(r"(?:^|\s)(?:(?P<file>[\w./+\-]+\.\w+):(?P<fline>\d+) )?NCCL WARN (?P<msg>.*)$")
# NCCL's own failure words, quoted without their 'NCCL WARN' prefix (an application's error text, a pasted line).
_QUOTED_WARN = re.compile(r"Error while creating shared memory segment \S|[Ff]ailed to extend /dev/shm/\S|"
                          r"Call to posix_fallocate failed|Call to shm_open failed")
_BARE_INFO = re.compile(r"(?:^|\s)NCCL INFO (?P<msg>.*)$")
_DIAG = re.compile(r"\bNCCL DIAG\s*\[(?P<tag>\w+)\]\s*(?P<msg>.*)$")
# A channel line whose 'Channel NN :' head was cut: '9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA'.
_FRAGMENT = re.compile(
    r"^\s*(?P<src>\d+)(?:\[(?P<sdev>[0-9a-fA-F]+)\])? -> (?P<dst>\d+)(?:\[(?P<ddev>[0-9a-fA-F]+)\])?"
    r"(?: \[(?P<dir>send|receive)\])? via (?P<via>(?:P2P|SHM|NET|COLLNET)/.+)")
_RING_ORDER = re.compile(r"\b(?:Channel|Ring) (?P<ch>\d+)(?:/(?P<n>\d+))? :(?P<order>(?:\s+\d+)+)\s*$")


@dataclass(frozen=True)
class FactRow:
    """One kind of NCCL INFO message: a message holding any of ``guard`` (the cheap test, empty: none) that
    ``pattern`` finds (and ``accept`` accepts) is read by the parser's method ``handler`` (with ``arg`` first,
    when given). ``keeps`` names the fact list it appends to (``None``: channel lines, tallied apart), ``rank``
    the rank it reports for its world (the lines that mark a version line as rank 0's).

    A line read again once ``keeps`` is full is only counted (:meth:`_Parser.feed_bulk`): its handler may keep
    a record, add to its process's lists, tallies and rank hosts, and call ``rank_fact`` (declared by ``rank``),
    nothing else; a handler that changes other state sets ``again=False``, and its lines are read every time."""

    name: str
    guard: Tuple[str, ...]
    pattern: "re.Pattern[str]"
    handler: str
    keeps: Optional[str]
    accept: Optional[Callable[[str, "re.Match[str]"], bool]] = None
    rank: Optional[Callable[["re.Match[str]"], int]] = None
    arg: Optional[str] = None
    again: bool = True

    def read(self, parser: "_Parser", m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        if self.arg is None:
            getattr(parser, self.handler)(m, at, text, p)
        else:
            getattr(parser, self.handler)(self.arg, m, at, text, p)


def _rank(m: "re.Match[str]") -> int:
    return int(m.group("rank"))


# The NCCL INFO messages the parser reads, in order: the first row that reads a message wins. A new kind of
# message is one row here and its handler (a ``fact_*`` method of the parser).
FACTS: Tuple[FactRow, ...] = (
    FactRow("channel", (" via ",), _CHANNEL, "fact_channel", None),
    FactRow("channel_fragment", (" via ",), _FRAGMENT, "fact_channel", None),
    FactRow("collnet_channel", ("COLLNET",), _COLLNET_CH, "fact_channel", None),
    FactRow("ring_order", (" : ", " :\t"), _RING_ORDER, "fact_ring", "rings", rank=lambda m: 0),
    FactRow("version", ("NCCL version",), _VERSION, "fact_version", "versions"),
    FactRow("network", ("Using network",), _USING_NETWORK, "fact_network", "networks"),
    FactRow("gdr", ("GPU Direct RDMA",), _GDR, "fact_gdr", "gdr"),
    FactRow("net_no_device", ("No device found",), _NET_NODEV, "fact_net_nodev", "notes"),
    FactRow("net_using", ("NET/",), _NET_USING, "fact_net_using", "nets",
            accept=lambda msg, m: not msg[m.start():].startswith("NET/Plugin")),
    FactRow("old_ib_ports", ("IB Port",), _OLD_IB_PORTS, "fact_old_ib_ports", "nets"),
    FactRow("bootstrap", ("Bootstrap",), _BOOTSTRAP, "fact_bootstrap", "bootstrap"),
    FactRow("plugin_path", ("lugin",), _PLUGIN_PATH, "fact_plugin_path", "plugins"),
    FactRow("p2p_plugin", ("lugin",), _P2P_PLUGIN, "fact_p2p_plugin", "plugins"),
    FactRow("loaded_plugin", ("lugin",), _LOADED_PLUGIN, "fact_loaded_plugin", "plugins"),
    FactRow("net_plugin", ("NET/Plugin",), _NET_PLUGIN, "fact_net_plugin", "plugins"),
    FactRow("init", ("- Init ",), _INIT, "fact_init", "inits", rank=_rank),
    FactRow("comm", ("nRanks",), _COMM, "fact_comm", "comms", rank=_rank),
    FactRow("comm_old", ("nranks",), _COMM_OLD, "fact_comm_old", "comms", rank=_rank),
    FactRow("connected", ("Connected ",), _CONNECTED, "fact_connected", "connected"),
    FactRow("channel_counts", ("coll channels",), _COUNTS, "fact_counts", "channel_counts"),
    FactRow("nvls_comm", ("NVLS",), _NVLS_COMM, "fact_nvls_comm", "nvls"),
    FactRow("nvls_multicast", ("NVLS",), _NVLS_MC, "fact_nvls_mc", "nvls"),
    FactRow("env", ("set by environment",), _ENV, "fact_env", "env"),
) + tuple(FactRow(f"note_{kind}", (), pat, "fact_note", "notes", arg=kind) for kind, pat in _NOTES)


def fact_row(msg: str) -> Tuple[Optional[FactRow], Optional["re.Match[str]"]]:
    """The row of :data:`FACTS` that reads NCCL INFO message ``msg``, with its match (``(None, None)``: none)."""
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


def _add_capped(lst: list, value, cap: int = MAX_SMALL) -> None:
    if value not in lst and len(lst) < cap:
        lst.append(value)


_SEEN_PLAIN, _SEEN_INFO, _SEEN_CHAIN, _SEEN_WARN, _SEEN_BARE, _SEEN_BLANK, _SEEN_COUNT, _SEEN_WRAP = 1, 2, 3, 4, 5, 6, 7, 8
_SEEN_BYTES = 8 * 1024 * 1024  # bytes of distinct lines remembered per file


class _Seen:
    """A line read before, in the file being fed (:meth:`_Parser.feed_bulk`), and what reading it again does
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


def _no_join(nxt: "_Rec") -> None:
    """What takes the line after an error line past the bound: nothing is kept of it."""


def _watchdog_key(rec: "_Rec") -> Optional[Tuple]:
    """What :meth:`_Parser.app_lines` tells a watchdog message apart by (``None``: not only a watchdog message)."""
    msg = rec.msg
    if "NCCL Error " in msg and _TORCH_OLD.search(msg):
        return None
    m = _WATCHDOG.search(msg)
    if m is None:
        return None
    fields = {fm.group("k"): fm.group("v") for fm in _WD_FIELD.finditer(m.group("body"))}
    rm = _WD_RANK.search(msg)
    rank = _int(rm.group("rank") or rm.group("rank2")) if rm else None
    if rank is None and rec.launcher_rank is not None:
        rank = rec.launcher_rank
    return (rec.at.source, rank, _int(fields.get("SeqNum")), fields.get("OpType"))


def _app_noop(msg: str) -> bool:
    """Whether :meth:`_Parser.app_lines` reads nothing from a line holding its words (``msg``, no NCCL prefix)."""
    if "NCCL Error " in msg and _TORCH_OLD.search(msg):
        return False
    if "Watchdog" not in msg and "NCCL error in" not in msg and "Test " not in msg and "failure " not in msg:
        return True
    return not ("Watchdog caught collective operation timeout" in msg or _WATCHDOG.search(msg) or
                _TORCH_ERR.search(msg) or _TESTS_FAIL.search(msg) or _TESTS_CUDA.search(msg) or
                _TESTS_TIMEOUT.search(msg))

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
    """For a run being recorded (:meth:`_Parser._bulk`): whether the WARN open on ``key`` before the run is one
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
    such point (:meth:`_Parser._bulk`). From such a point, the same lines again do the same: ``times`` more
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
    """A WARN past the bound on the WARNs kept, read again (:meth:`_Parser.feed_bulk`): seen by nobody, it is
    only counted when its thread moves on, as a failure where its message is one (``base``) or its call chain
    returned an error (:func:`_fails`)."""

    __slots__ = ("base", "chain")

    def __init__(self, base: bool) -> None:
        self.base, self.chain = base, []  # type: List[ChainStep]


class _DroppedChain:
    """A call chain past the bound on the chains kept (:meth:`_Parser._orphan_step`): its steps and whether a
    later line resumed it are seen by nobody."""

    __slots__ = ("steps", "at", "benign", "resumed")

    def __init__(self, steps: List[ChainStep], at: Loc) -> None:
        self.steps, self.at, self.benign, self.resumed = steps, at, False, None


class _Parser:
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
        _add_capped(p.sources, at.source)
        if at.dev is not None:
            _add_capped(p.devs, at.dev, 1024)
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
        for rec in _numbered_records(lines, source, count):
            self.record(rec)
        self.f.lines += total()
        self.end_file(source)

    def record(self, rec: _Rec) -> None:
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
                _add_capped(p.launcher_ranks, rec.launcher_rank, 1024)
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
        reader = _Reader(source)
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

    def _bulk(self, n: int, lines: Iterable[bytes], reader: "_Reader", seen: Dict[bytes, "_Seen"],
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

    def _replay(self, runs: List["_Run"], start: "_Seen", lines: List[bytes], i: int, reader: "_Reader",
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
                    _add_capped(f.dropped_results, name)
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

    def _wrapped_pair(self, n: int, raw: bytes, nxt: bytes, e: "_Seen", reader: "_Reader",
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

    def _seen_bare(self, rec: _Rec) -> Optional["_Seen"]:
        """:meth:`_seen` for a line without an NCCL prefix: only a plain line, or an error line past its bound,
        that asks nothing of the next line, is only counted."""
        msg = rec.msg
        if "Last error:" in msg:
            return _NEVER
        app = "Watchdog" in msg or "NCCL error in" in msg or "Test " in msg or "NCCL Error " in msg
        if not app and "failure " in msg and not _app_noop(msg):
            return _NEVER  # nccl-tests' first failure lines: read every time, as app_lines reads them
        watchdog = None
        if app and not _app_noop(msg):
            watchdog = _watchdog_key(rec)
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
        kind = _error_kind(msg)
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
        e.wrap = _wrapped("(", msg)
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

    def _seen(self, rec: _Rec) -> Optional["_Seen"]:
        """What reading ``rec`` again would do, if only counting (its record lists are full); ``None`` when it
        would keep a record now (ask again later), :data:`_NEVER` when it reads more than counts."""
        msg = rec.msg
        if "NCCL Error " in msg or "Watchdog" in msg or "NCCL error in" in msg or "Test " in msg or \
                ("failure " in msg and not _app_noop(msg)):
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
            e.warn = _fails(Warn(msg, at, rec.text, rec.file, rec.fline, rec.func, rec.timestamp))
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
            category = _category(str(v["transport"]), v.get("net"), bool(v.get("gdrdma")))
            st = f.channel_stats.get(category) or f.channel_stats.get("NET/other")
            if st is None or len(st.first) < 4 or st.first[-1].at is at:
                return None
            dst = _int(g.get("dst"))
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

    def mergeable(self, o: "_Parser") -> bool:
        """Whether :meth:`merge` gives exactly what reading ``o``'s files after this parser's would: not where a
        bound on processes or transport categories would have changed how the later lines were read."""
        if set(o.f.sources) & set(self.f.sources) or o.open_warn or o.open_orphan or o.want:
            return False
        procs = len(self.procs) + sum(1 for k in o.procs if k not in self.procs)
        cats = len(self.f.channel_stats) + sum(1 for c in o.f.channel_stats if c not in self.f.channel_stats)
        return procs < MAX_PROCS and cats <= MAX_CATEGORIES and "NET/other" not in o.f.channel_stats

    def merge(self, o: "_Parser") -> None:
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
                    _classify(w)
                    if w.failure:
                        f.dropped_failures += 1
                        for st in w.chain:
                            if st.code in ERROR_RESULTS:
                                _add_capped(f.dropped_results, st.code_name)
        f.dropped_failures += of.dropped_failures
        for r in of.dropped_results:
            _add_capped(f.dropped_results, r)
        for v in of.version_names:
            _add_capped(f.version_names, v)
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
                    _add_capped(lst, x, cap)
        for key, op in o.procs.items():
            p = self.procs.get(key)
            if p is None:
                self.procs[key] = op
                continue
            for attr, cap in self._PROC_CAPS:
                lst = getattr(p, attr)
                for x in getattr(op, attr):
                    _add_capped(lst, x, cap)
        for key, opt in o.pairs.items():
            pt = self.pairs.get(key)
            if pt is None:
                if len(self.pairs) < MAX_PAIRS:
                    self.pairs[key] = opt
                continue
            for attr, cap in (("categories", 16), ("vias", 16), ("channels", 256)):
                lst = getattr(pt, attr)
                for x in getattr(opt, attr):
                    _add_capped(lst, x, cap)
            pt.lines += opt.lines
        for rank, hosts in o.rank_hosts.items():
            mine_h = self.rank_hosts.get(rank)
            if mine_h is None:
                if len(self.rank_hosts) >= MAX_PAIRS:
                    continue
                mine_h = self.rank_hosts[rank] = []
            for h in hosts:
                _add_capped(mine_h, h, 8)
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
                   rec: _Rec, item) -> None:
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

    def bench_line(self, rec: _Rec) -> None:
        self._keep_from(self.bench, self.bench_bytes, _BENCH_START, MAX_BENCH_BYTES, rec, rec.msg[:4096])

    def ras_line(self, rec: _Rec) -> None:
        self._keep_from(self.ras, self.ras_bytes, _RAS_START, MAX_RAS_BYTES, rec, (rec.at.lineno, rec.msg[:4096]))

    def bare(self, rec: _Rec, last_proc: Optional[Tuple[str, int]]) -> None:
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
                self.warn(_Rec("warn", mw.group("msg").strip(), rec.at, rec.text, mw.group("file"),
                               _int(mw.group("fline")), launcher_rank=rec.launcher_rank))
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
                self.info(_Rec("info", mi.group("msg").strip(), rec.at, rec.text, launcher_rank=rec.launcher_rank),
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

    def last_error(self, rec: _Rec, text: str) -> None:
        """NCCL's last error as PyTorch or nccl-tests quote it: read as the WARN it was."""
        text = _TAG.sub("", text.strip()).strip().strip("'\"").strip()
        mw = _BARE_WARN.search(text) if "NCCL WARN " in text else None
        if mw:
            text = mw.group("msg").strip()
            self.f.unprefixed += 1
        if not text:
            return
        self.f.nccl_lines += 1
        self.warn(_Rec("warn", text, rec.at, rec.text, launcher_rank=rec.launcher_rank), origin="last-error")

    def error_line(self, rec: _Rec) -> None:
        """Keep a plain line that reports an error, or a kernel line; one ending in ':' takes the next line."""
        msg = rec.msg
        kind = _error_kind(msg)
        if kind is None:
            return
        kernel = kind == "kernel"
        el = ErrorLine(msg[:MAX_ERROR_TEXT], rec.at, kind)
        self._keep("kernel" if kernel else "errors", el)
        if msg.endswith(":") or _TESTS_CUDA.search(msg) and "'" not in msg:
            def join(nxt: _Rec) -> None:
                el.text = (el.text + " " + nxt.msg.strip())[:MAX_ERROR_TEXT]
            self.want[rec.at.source] = join

    def version(self, v: VersionLine) -> None:
        _add_capped(self.f.version_names, v.version)
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

    def app_lines(self, rec: _Rec) -> None:
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
            rank = _int(rm.group("rank") or rm.group("rank2")) if rm else None
            if rank is None and rec.launcher_rank is not None:
                rank = rec.launcher_rank
            w = Watchdog(rec.at, rec.text, rank, _int(fields.get("SeqNum")), fields.get("OpType"),
                         _int(fields.get("NumelIn")), _int(fields.get("NumelOut")), _int(fields.get("Timeout(ms)")),
                         _int(m.group("ran")))
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
                _add_capped(self.f.version_names, m.group("ver"))
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

    def continue_watchdog(self, rec: _Rec, more: int) -> None:
        """A watchdog message wrapped over lines (as pasted): read it once the next lines complete it."""
        def then(nxt: _Rec) -> None:
            joined = _Rec(rec.kind, f"{rec.msg} {nxt.msg.strip()}", rec.at, f"{rec.text} {nxt.text.strip()}",
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
            failure = w.failure = _fails(w)
        if failure:
            self.f.dropped_failures += 1
            for s in w.chain:
                if s.code in ERROR_RESULTS:
                    _add_capped(self.f.dropped_results, s.code_name)
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

    def warn(self, rec: _Rec, origin: str = "warn") -> None:
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

    def info(self, rec: _Rec, p: Optional[Proc]) -> None:
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
        ro = RingOrder(int(m.group("ch")), order, at, text, _int(m.group("n")))
        self._keep("rings", ro)
        if p is not None:
            _add_capped(p.ranks, 0, 1024)  # only rank 0 prints the ring order
        self.rank_fact(0, len(order), at, p)

    def fact_version(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        v = VersionLine(m.group("v"), m.group("cuda"), at, text)
        if self._keep("versions", v):
            self.kept_versions.add(id(v))
        self.version(v)
        if p is not None:
            _add_capped(p.versions, m.group("v"))

    def fact_network(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("networks", NetworkChoice(m.group("name"), at, text))
        if p is not None:
            _add_capped(p.networks, m.group("name"))

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
        ifs = [NetDevice(_int(s.group("idx")), s.group("name"), address=s.group("addr"))
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
                       _int(m.group("cdev")), _int(m.group("nvml")), m.group("bus"), m.group("cid"))
        self._keep("inits", ev)
        self.rank_host(ev.rank, at)
        self.rank_fact(ev.rank, ev.nranks, at, p)
        if p is not None:
            _add_capped(p.ranks, ev.rank, 1024)
            _add_capped(p.init_started if ev.phase == "START" else p.init_completed, ev.rank, 1024)

    def fact_comm(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self.comm(CommInfo(m.group("comm"), int(m.group("rank")), int(m.group("nranks")), at, text,
                           int(m.group("nnodes")), int(m.group("lranks")), int(m.group("lrank")),
                           _int(m.group("mnnvl"))), p)

    def fact_comm_old(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self.comm(CommInfo(m.group("comm"), int(m.group("rank")), int(m.group("nranks")), at, text), p)

    def fact_connected(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("connected", Connected(m.group("what"), at, text, _int(m.group("pxn")), _int(m.group("gdr"))))

    def fact_counts(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        self._keep("channel_counts", ChannelCounts(int(m.group("coll")), int(m.group("p2p")), int(m.group("ppp")),
                                                   at, text, _int(m.group("collnet")), _int(m.group("nvls"))))

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
            _add_capped(p.ranks, c.rank, 1024)

    def rank_host(self, rank: int, at: Loc) -> None:
        if not at.host:
            return
        hosts = self.rank_hosts.get(rank)
        if hosts is None:
            if len(self.rank_hosts) >= MAX_PAIRS:
                return
            hosts = self.rank_hosts[rank] = []
        _add_capped(hosts, at.host, 8)

    def channel(self, m: "re.Match[str]", at: Loc, text: str, p: Optional[Proc]) -> None:
        g = m.groupdict()
        if g.get("label") is None:  # a fragment without its 'Channel NN :' head
            g = dict(g, label="Channel", ch="-1")
        v = parse_via(g["via"])
        transport = str(v["transport"])
        gdr = bool(v.get("gdrdma"))
        dst = _int(g.get("dst"))
        category = _category(transport, v.get("net"), gdr)
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
            _add_capped(st.hosts, at.host)
        if dst is not None:
            _add_capped(st.pairs, f"{src}->{dst}")
        net = v.get("net")
        if net:
            _add_capped(st.nets, net, 16)
        direction = g.get("dir")
        if direction is not None or g["label"] == "Channel":
            mine = dst if direction == "receive" and dst is not None else src
            if p is not None:
                _add_capped(p.ranks, mine, 1024)
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
            _add_capped(pt.categories, category, 16)
            _add_capped(pt.vias, str(v["via"]), 16)
            _add_capped(pt.channels, int(g["ch"]), 256)
            pt.lines += 1

    @staticmethod
    def channel_line(g: Dict[str, Optional[str]], v: Dict[str, object], transport: str, gdr: bool,
                     dst: Optional[int], category: str, at: Loc, text: str) -> Channel:
        return Channel(
            channel=int(g["ch"]), src=int(g["src"]), dst=dst, transport=transport, via=str(v["via"]),
            category=category, at=at, text=text, label=g["label"],
            conn_index=_int(g.get("conn")), src_dev=g.get("sdev"), dst_dev=g.get("ddev"), direction=g.get("dir"),
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
            _classify(w)
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
                _add_capped(target.versions, v.version)
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


def _int(s: Optional[str]) -> Optional[int]:
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
        devs = [NetDevice(_int(s.group("idx")), s.group("name"), address=s.group("addr"))
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


# --------------------------------------------------------------------------- summary


def summarize(f: NcclLogFacts) -> Summary:
    """Versions, networks, transports overall and per pair, errors: from the tallies, not the kept lists."""
    versions: List[str] = list(f.version_names)
    for v in f.versions:
        _add(versions, v.version)
    by_proc = {p.name: list(p.versions) for p in f.procs if p.versions}
    networks: List[str] = []
    for n in f.networks:
        _add(networks, n.name)
    cats: List[str] = list(f.channel_stats) or []
    for ch in f.channels:
        _add(cats, ch.category)
    nvls = any((c.nvls or 0) > 0 for c in f.channel_counts) or any(n.kind == "comm" for n in f.nvls) or \
        any(c.what == "NVLS tree" for c in f.connected)
    collnet = "CollNet" in cats or any(ch.transport == "COLLNET" for ch in f.channels) or \
        any((c.collnet or 0) > 0 for c in f.channel_counts)
    if nvls:
        _add(cats, NVLS)
    if collnet:
        _add(cats, COLLNET)
    results: List[str] = list(f.dropped_results)
    for w in f.warns:
        for s in w.chain:
            if s.code in ERROR_RESULTS:
                _add(results, s.code_name)
    for oc in f.orphan_chains:
        if oc.benign:
            continue
        for s in oc.steps:
            if s.code in ERROR_RESULTS:
                _add(results, s.code_name)
    failures = sum(1 for w in f.warns if w.failure) + f.dropped_failures + f.total("watchdogs") + \
        f.total("app_errors") + sum(1 for oc in f.orphan_chains if oc.failed)
    ranks: Set[int] = set()
    for p in f.procs:
        ranks.update(p.ranks)
    nranks: List[int] = []
    for x in list(f.comms) + list(f.inits) + list(f.rings):
        _add(nranks, x.nranks)
    pairs = f.pair_list
    if not pairs and f.channels:  # facts assembled by hand, without the parser's tallies
        pairs = _pairs_of(f.channels)
    return Summary(
        versions=versions, versions_by_proc=by_proc, networks=networks, transports=sorted(cats),
        pairs=pairs,
        net_ib_used=any(c in (NET_IB, NET_IB_GDR) for c in cats),
        gdrdma_used=any(c.endswith("+GDRDMA") for c in cats),
        nvls_used=nvls, collnet_used=collnet, error_results=sorted(results), failures=failures,
        warns=f.total("warns"), ranks=sorted(ranks), hosts=sorted({p.host for p in f.procs}), nranks=sorted(nranks),
    )


def _pairs_of(channels: Iterable[Channel]) -> List[PairTransport]:
    pairs: Dict[Tuple[int, int], PairTransport] = {}
    for ch in channels:
        if ch.dst is None:
            continue
        pt = pairs.setdefault((ch.src, ch.dst), PairTransport(ch.src, ch.dst, [], [], [], [], [], 0))
        _add(pt.categories, ch.category)
        _add(pt.vias, ch.via)
        _add(pt.channels, ch.channel)
        pt.lines += 1
    return [pairs[k] for k in sorted(pairs)]


LogInput = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


def parse_logs(logs: LogInput, keep: int = KEEP) -> NcclLogFacts:
    """Parse several logs (``{name: text}`` or ``(name, text)`` pairs) into one set of facts.

    Logs of one job belong together: versions are compared across them and
    rank pairs are joined from both sides.
    """
    items = logs.items() if isinstance(logs, Mapping) else logs
    p = _Parser(keep)
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
    p = _Parser(keep)
    for name, stream in streams:
        p.feed_lines(read_lines(stream), name)
    return p.finish()
