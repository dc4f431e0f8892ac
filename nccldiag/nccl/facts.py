"""The facts of NCCL logs: what the parser (:mod:`nccldiag.nccl.parser`) gives, and the bounds that keep it small.

Pure values: dataclasses of what a log said (versions, networks, transports, WARNs with their call chains,
application errors, ...), :class:`NcclLogFacts` holding them all, :func:`summarize` (the answers people grep
logs for), and the bounds on every list (a log is not trusted to be small).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

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
    launcher_rank: Optional[int] = None  # the rank of the launcher's tag the reader took off the line ('[rank3]: ')
    lead: str = ""  # what launchers, loggers and pastes put before the text, taken off it ('node7: [default3]:')


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
    p2p_bandwidth: List[Any] = field(default_factory=list)  # benchmarks.p2pbw.P2pBandwidth, one per file
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


# --------------------------------------------------------------------------- bounds

# Bounds that keep memory flat whatever the log's size (a log is not trusted to be small).
KEEP = 1000  # records kept per fact list; the rest are counted
MAX_ERROR_TEXT = 1000  # characters kept of one error line
# Benchmark outputs (nccl-tests, perftest) and NCCL RAS reports in the same files are kept per file from their
# first line up to these bounds, and read by nccldiag.benchmarks and nccldiag.nccl.ras when the logs end.
MAX_BENCH_BYTES = 4 * 1024 * 1024
MAX_RAS_BYTES = 1024 * 1024
MAX_BENCH_FILES = 256
MAX_LINE = 64 * 1024  # longer physical lines are cut (the rest of the line is skipped unread)
MAX_PROCS = 16384
MAX_PAIRS = 20000
MAX_SMALL = 64  # hosts, pairs, vias ... listed per tally
MAX_STEPS = 64  # frames kept per call chain
MAX_THREADS = 65536  # threads with an open WARN or call chain; past it the oldest state is closed
MAX_CATEGORIES = 64  # transport categories tallied (NET/<plugin name> makes new ones)


def add_capped(lst: list, value, cap: int = MAX_SMALL) -> None:
    """Append ``value`` unless ``lst`` holds it already or holds ``cap`` values."""
    if value not in lst and len(lst) < cap:
        lst.append(value)


def _add(lst: list, value) -> None:
    if value not in lst:
        lst.append(value)

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
    # NCCL 2.21 and later print the coll channel count in the collnet slot of the counts line (init.cc:
    # "comm->nChannels, comm->nChannels", v2.21.5-1 to v2.30.7-1), so equal counts say nothing about CollNet
    collnet = "CollNet" in cats or any(ch.transport == "COLLNET" for ch in f.channels) or \
        any((c.collnet or 0) > 0 and c.collnet != c.coll for c in f.channel_counts)
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
