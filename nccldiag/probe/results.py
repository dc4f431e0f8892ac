"""Reading what the ranks wrote (pure): records -> outcomes -> findings.

Every rank writes its own JSON lines (see ``worker``). Here they are put
back together per setting and collective:

- ``ok``: every rank verified its output;
- ``wrong``: some ranks hold wrong data (named, with element counts);
- ``error``: a rank raised (timeouts flagged);
- ``hang``: a rank's last record is a ``progress`` record with nothing
  after it, so it never came back from that collective (it hung, or died
  there and was killed); ranks that timed out waiting in the same
  collective are its victims, not the culprits;
- ``unsupported``: the backend lacks the operation;
- ``not-run`` / ``incomplete``: the run stopped before, or some ranks
  never reported.

Bandwidth per size comes from rank 0's sweep records (every rank reports
the slowest rank's time, so any rank would do).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from nccldiag.areas.base import json_line
from nccldiag.model.findings import Finding, error, fail, ok, skip
from nccldiag.model.sizes import size_text
from nccldiag.node.collectives import MPI_CHECK, NAMES as COLLECTIVES

AREA = "probe"
STATUSES = ("ok", "wrong", "error", "hang", "unsupported", "not-run", "incomplete")
_NOT_THE_NODE = ("usage", "import")
_ORDER = ["hang", "error", "incomplete", "wrong", "unsupported", "ok", "not-run"]


# --------------------------------------------------------------------------- reading


def parse_line(line: str) -> Optional[dict]:
    """One record, or None for anything else (launcher noise, a line cut short).

    Launchers may prefix lines (mpirun ``--tag-output`` writes ``[1,0]<stdout>:``),
    so the JSON starts at the first ``{``.
    """
    idx = line.find("{")
    if idx < 0:
        return None
    rec, _ = json_line(line[idx:])  # bounded in length and depth: a rank's line is not trusted
    return rec if isinstance(rec, dict) and isinstance(rec.get("type"), str) else None


def read_records(lines: Iterable[str]) -> List[dict]:
    """Records from lines; partial or foreign lines (a rank killed mid-write) are skipped."""
    out = []
    for line in lines:
        rec = parse_line(line)
        if rec is not None:
            out.append(rec)
    return out


def read_text(text: str) -> List[dict]:
    return read_records(text.splitlines())


# --------------------------------------------------------------------------- admitting what a node sent
#
# A rank's records come from a node that may be broken or hostile. Each record
# is checked field by field against what the worker writes (anything else is
# noise, dropped), bound to the node that launched its rank (a node cannot
# speak for a rank it did not launch, nor name another host), and counted: a
# rank gets a bounded number of records, for the collectives planned only. So
# memory and analysis time are bounded by the launched world, whatever a node
# prints.

MAX_LINE = 256 * 1024  # characters of one record line; the worker's largest (a start record) is a few KiB
MAX_TEXT = 2000  # characters kept of a string a rank sends (an error message)
MAX_PER_COLLECTIVE = 256  # records per rank and collective (progress and results of every size checked and swept)
MAX_OTHER = 16  # records per rank outside any collective: start, init, ready, error, end
MAX_WORLD = 1 << 16  # ranks read back without their launch (records.jsonl alone)
KINDS = frozenset({"start", "progress", "result", "error", "end"})


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _v_int(v: Any) -> bool:
    return v is None or (_is_int(v) and -(1 << 62) < v < (1 << 62))


def _v_count(v: Any) -> bool:
    return v is None or (_is_int(v) and 0 <= v < (1 << 62))


def _v_num(v: Any) -> bool:
    return v is None or ((_is_int(v) or isinstance(v, float)) and math.isfinite(v) and abs(v) < 1e300)


def _v_bool(v: Any) -> bool:
    return v is None or isinstance(v, bool)


def _v_text(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _v_word(v: Any) -> bool:
    return v is None or (isinstance(v, str) and len(v) <= 64)


def _scalar(v: Any) -> bool:
    return _v_num(v) or _v_bool(v) or (isinstance(v, str) and len(v) <= 256)


def _v_small_map(limit: int) -> Callable[[Any], bool]:
    def check(v: Any) -> bool:
        return v is None or (isinstance(v, dict) and len(v) <= limit
                             and all(isinstance(k, str) and len(k) <= 64 and _scalar(x) for k, x in v.items()))
    return check


def _v_element(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and len(v) <= 8 and all(
        isinstance(k, str) and len(k) <= 32 and _v_num(x) for k, x in v.items()))


def _v_ints(v: Any) -> bool:
    return v is None or (isinstance(v, list) and len(v) <= MAX_WORLD and all(_v_count(x) and x is not None for x in v))


def _v_names(v: Any) -> bool:
    """The collectives of a start record (a list) or an end record (name -> status)."""
    if v is None:
        return True
    if isinstance(v, list):
        return len(v) <= 64 and all(isinstance(x, str) and len(x) <= 64 for x in v)
    return isinstance(v, dict) and len(v) <= 64 and all(
        isinstance(k, str) and len(k) <= 64 and _v_word(x) for k, x in v.items())


# every field the worker writes, and what it must be; any other field is dropped
_FIELDS: Dict[str, Callable[[Any], bool]] = {
    "rank": _v_int, "setting": _v_text, "ts": _v_num, "collective": _v_word, "phase": _v_word,
    "status": _v_word, "wrong": _v_count, "wrong_total": _v_count, "ranks_wrong": _v_ints, "verified": _v_bool,
    "size": _v_count, "count": _v_count, "requested_size": _v_count, "dtype": _v_word, "redop": _v_word,
    "root": _v_int, "time_us": _v_num, "rank_time_us": _v_num, "algbw": _v_num, "busbw": _v_num,
    "iters": _v_count, "warmup": _v_count, "done": _v_count, "sample": _v_element, "first_wrong": _v_element,
    "error": _v_text, "reason": _v_text, "message": _v_text, "timeout": _v_bool, "exit_code": _v_int,
    "elapsed_s": _v_num, "collectives": _v_names, "local_rank": _v_count, "local_world_size": _v_count,
    "world_size": _v_count, "backend": _v_word, "bootstrap": _v_word, "pid": _v_count,
    "versions": _v_small_map(16), "device": _v_small_map(32), "env": _v_small_map(64),
    "master_addr": _v_text, "master_port": _v_count, "address": _v_text, "interface": _v_word,
    "socket_ifname": _v_text, "sizes": _v_ints, "check_sizes": _v_ints, "pg_timeout": _v_num,
    "python": _v_text, "mpi": _v_text, "processor": _v_text, "host": _v_text,
}


def clean_record(rec: Any, world: Optional[int] = None) -> Optional[dict]:
    """The record with only the fields the worker writes, each of its type; None when it is noise.

    A record with a field of the wrong type (``"wrong": "abc"``) is noise as
    a whole; strings are cut to :data:`MAX_TEXT` characters; ``ranks_wrong``
    keeps the ranks of the world only. A node's records get their ``host``
    from :class:`Gate`, which binds each to the node that launched its rank.
    """
    if not isinstance(rec, dict) or rec.get("type") not in KINDS:
        return None
    out: Dict[str, Any] = {"type": rec["type"]}
    for key, value in rec.items():
        check = _FIELDS.get(key)
        if check is None:
            continue
        if not check(value):
            return None
        if isinstance(value, str) and len(value) > MAX_TEXT:
            value = value[:MAX_TEXT]
        out[key] = value
    limit = world if world is not None else MAX_WORLD
    if isinstance(out.get("ranks_wrong"), list):
        out["ranks_wrong"] = sorted({r for r in out["ranks_wrong"] if r < limit})
    if _is_int(out.get("rank")) and out["rank"] >= limit:
        return None
    return out


@dataclass(frozen=True)
class Launched:
    """What one setting launched: the nodes in node-rank order, each with ``nproc`` ranks, and the collectives.

    ``tagged``: how the launcher marks which rank (or node) wrote a line, when one stream carries many
    (its :class:`~nccldiag.probe.launchers.base.Tagging`); None when each node streams its own ranks.
    """

    hosts: Tuple[str, ...]
    nproc: int
    collectives: Tuple[str, ...] = tuple(COLLECTIVES)
    tagged: Optional["Tagging"] = None

    @property
    def world(self) -> int:
        return len(self.hosts) * self.nproc

    @property
    def planned(self) -> FrozenSet[str]:
        return frozenset(self.collectives) | frozenset(self.tagged.adds if self.tagged is not None else ())

    def node_of(self, rank: int) -> Optional[str]:
        return self.hosts[rank // self.nproc] if 0 <= rank < self.world else None


class Gate:
    """Admits a setting's records line by line (pure: no I/O): each one checked, bound to its node, counted.

    ``admit(host, line)`` returns the record to keep, with ``host`` set to the
    node that launched its rank, or None. What a node sent that was not kept
    is counted in ``rejected`` (node -> reason -> lines), for a finding that
    names the node.
    """

    def __init__(self, launched: Launched):
        self.launched = launched
        self.planned = launched.planned
        self.counts: Dict[Tuple[Any, str], int] = {}
        self.rejected: Dict[str, Dict[str, int]] = {}

    def reject(self, host: str, why: str) -> None:
        per = self.rejected.setdefault(host, {})
        per[why] = per.get(why, 0) + 1

    def admit(self, host: str, line: str) -> Optional[dict]:
        la = self.launched
        if len(line) > MAX_LINE:
            self.reject(host, "line too long")
            return None
        tag: Optional[int] = None
        tagging = la.tagged
        if tagging is not None and tagging.by_node:
            m = tagging.pattern.match(line)
            if m is None:
                return None  # the launcher's own output
            if m.group(1) not in la.hosts:
                if parse_line(line[m.end():]) is not None:
                    self.reject(host, "records of nodes outside those launched")
                return None
            host, line = m.group(1), line[m.end():]  # then as if the node streamed its own ranks
        where: Optional[str] = host
        if tagging is not None and not tagging.by_node:
            m = tagging.pattern.match(line)
            if m is None:
                return None  # the launcher's own output
            tag, line = int(m.group(1)), line[m.end():]
            where = la.node_of(tag)
            if where is None:
                self.reject(host, "records of ranks outside those launched")
                return None
        raw = parse_line(line)
        if raw is None:
            return None
        rec = clean_record(raw)
        if rec is None:
            self.reject(where, "malformed record")
            return None
        rank = rec.get("rank")
        if tag is not None:
            if _is_int(rank) and rank >= 0 and rank != tag:
                self.reject(where, "records about another rank")
                return None
            rec["rank"] = rank = tag
        elif _is_int(rank) and rank >= 0:
            where = la.node_of(rank)
            if where != host:
                self.reject(host, "records about ranks it did not launch")
                return None
        # else: a rank that failed before it knew its number (a setup error), on the stream's node
        coll = rec.get("collective")
        if coll is not None and coll not in self.planned:
            self.reject(where, "records about collectives not planned")
            return None
        key = (rank if _is_int(rank) and rank >= 0 else where, coll or "")
        n = self.counts.get(key, 0)
        if n >= (MAX_PER_COLLECTIVE if coll else MAX_OTHER):
            self.reject(where, "too many records")
            return None
        self.counts[key] = n + 1
        rec["host"] = where
        return rec



class Reread:
    """A run directory's records admitted again one by one as they are read (pure: no I/O), so that what is
    held stays bounded by the launched world whatever the file holds: each record checked
    (:func:`clean_record`, the world ``launched``), collectives outside those planned left out, and per rank
    (or, for a record of no rank, per node launched) at most the records a live setting keeps."""

    def __init__(self, launched: Optional[Launched]):
        self.launched = launched
        self.counts: Dict[Tuple[Any, str], int] = {}

    def admit(self, rec: Any) -> Optional[dict]:
        la = self.launched
        clean = clean_record(rec, la.world if la is not None else None)
        if clean is None:
            return None
        coll = clean.get("collective")
        if coll is not None and coll != MPI_CHECK and coll not in (la.planned if la is not None else COLLECTIVES):
            return None
        rank = clean.get("rank")
        host = clean.get("host")
        who = rank if _is_int(rank) and rank >= 0 else host if la is None or host in la.hosts else ""
        if la is None and not _is_int(who):
            who = ""  # no world to bound the node names by
        key = (who, coll or "")
        n = self.counts.get(key, 0)
        if n >= (MAX_PER_COLLECTIVE if coll else MAX_OTHER):
            return None
        self.counts[key] = n + 1
        return clean

# --------------------------------------------------------------------------- outcomes


@dataclass
class SweepPoint:
    size: int
    count: int
    time_us: float
    algbw: float
    busbw: float


@dataclass
class RankInfo:
    """What one rank said about itself, and where it stopped."""

    rank: int
    host: Optional[str] = None
    local_rank: Optional[int] = None
    pid: Optional[int] = None
    versions: Dict[str, Any] = field(default_factory=dict)
    device: Dict[str, Any] = field(default_factory=dict)
    address: Optional[str] = None
    interface: Optional[str] = None
    socket_ifname: Optional[str] = None  # GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME the rank was given
    started: bool = False
    ended: bool = False
    end_status: Optional[str] = None
    last: Optional[dict] = None

    def where(self) -> str:
        return f"rank {self.rank} ({self.host})" if self.host else f"rank {self.rank}"

    def stuck_in(self) -> Optional[dict]:
        """The progress record this rank never came back from, if any."""
        if self.last is not None and self.last.get("type") == "progress":
            return self.last
        return None


@dataclass
class CollectiveOutcome:
    setting: str
    collective: str
    status: str = "not-run"
    ranks_ok: List[int] = field(default_factory=list)
    ranks_wrong: List[int] = field(default_factory=list)
    wrong_by_rank: Dict[int, int] = field(default_factory=dict)
    ranks_error: Dict[int, str] = field(default_factory=dict)
    ranks_timeout: List[int] = field(default_factory=list)
    ranks_hung: List[int] = field(default_factory=list)
    ranks_missing: List[int] = field(default_factory=list)
    ranks_unsupported: Dict[int, str] = field(default_factory=dict)
    hung_at: Dict[int, dict] = field(default_factory=dict)  # rank -> {phase, size}
    wrong_at: Dict[int, dict] = field(default_factory=dict)  # rank -> first wrong check record
    sweep: List[SweepPoint] = field(default_factory=list)

    @property
    def peak_busbw(self) -> Optional[float]:
        return max((p.busbw for p in self.sweep), default=None)

    @property
    def largest(self) -> Optional[SweepPoint]:
        return max(self.sweep, key=lambda p: p.size) if self.sweep else None


@dataclass
class SettingOutcome:
    setting: str
    world_size: Optional[int] = None
    backend: Optional[str] = None
    ranks: Dict[int, RankInfo] = field(default_factory=dict)
    collectives: Dict[str, CollectiveOutcome] = field(default_factory=OrderedDict)
    setup_errors: List[dict] = field(default_factory=list)
    missing_ranks: List[int] = field(default_factory=list)
    stuck_in_init: List[int] = field(default_factory=list)
    died: List[int] = field(default_factory=list)  # no end record, not stuck in a collective
    mpi: Optional[CollectiveOutcome] = None

    @property
    def status(self) -> str:
        statuses = [c.status for c in self.collectives.values()]
        if self.mpi is not None:
            statuses.append(self.mpi.status)
        if self.stuck_in_init and not self.setup_errors:  # beside a rank that failed to start, its peers wait
            statuses.append("hang")                         # for it in the rendezvous: victims, not a hang
        if self.setup_errors or self.missing_ranks:
            statuses.append("error")
        if self.died:
            statuses.append("incomplete")
        ran = [s for s in statuses if s != "not-run"]
        if not ran:
            return "not-run"
        # a collective the backend or the world cannot run (sendrecv in a world of one rank) is no failure of
        # the setting: it is skipped beside those that were verified, and the setting's status only when alone
        judged = [s for s in ran if s != "unsupported"]
        return min(judged or ran, key=_ORDER.index)

    def host_of(self, rank: int) -> Optional[str]:
        info = self.ranks.get(rank)
        return info.host if info else None


def _rank_of(rec: dict) -> Optional[int]:
    r = rec.get("rank")
    return r if isinstance(r, int) and r >= 0 else None


def _collect_rank(info: RankInfo, rec: dict) -> None:
    info.last = rec
    info.host = rec.get("host") or info.host
    kind = rec["type"]
    if kind == "start":
        info.started = True
        info.local_rank = rec.get("local_rank", info.local_rank)
        info.pid = rec.get("pid", info.pid)
        info.versions = rec.get("versions") or info.versions
        info.device = rec.get("device") or info.device
        info.address = rec.get("address", info.address)
        info.interface = rec.get("interface", info.interface)
        info.socket_ifname = rec.get("socket_ifname", info.socket_ifname)
    elif kind == "end":
        info.ended = True
        info.end_status = rec.get("status")


def _outcome(setting: str, name: str, world: List[int], by_rank: Dict[int, List[dict]],
             ranks: Dict[int, RankInfo]) -> CollectiveOutcome:
    out = CollectiveOutcome(setting, name)
    reported = set()
    check_ok: Dict[int, bool] = {}
    for rank, recs in by_rank.items():
        for rec in recs:
            reported.add(rank)
            status = rec.get("status")
            if status == "error":
                out.ranks_error[rank] = str(rec.get("error", ""))
                if rec.get("timeout"):
                    out.ranks_timeout.append(rank)
            elif status == "unsupported":
                out.ranks_unsupported[rank] = str(rec.get("error") or rec.get("reason") or "")
            elif rec.get("phase") in ("check", "bootstrap"):
                n = int(rec.get("wrong") or 0)
                if status == "wrong" or n:
                    out.wrong_by_rank[rank] = out.wrong_by_rank.get(rank, 0) + n
                    out.wrong_at.setdefault(rank, rec)
                    check_ok[rank] = False
                else:
                    check_ok.setdefault(rank, True)
                # the ranks every rank was told were wrong: believed of a rank on the same node only, so
                # that no node can put a rank of another on the list
                mine = ranks[rank].host if rank in ranks else None
                for r in rec.get("ranks_wrong") or []:
                    if r == rank or (mine is not None and r in ranks and ranks[r].host == mine):
                        out.wrong_by_rank.setdefault(r, 0)
    for rank, info in ranks.items():
        stuck = info.stuck_in()
        if stuck is not None and stuck.get("collective") == name:
            out.ranks_hung.append(rank)
            out.hung_at[rank] = {"phase": stuck.get("phase"), "size": stuck.get("size")}
            reported.add(rank)
    out.ranks_wrong = sorted(out.wrong_by_rank)
    hung = set(out.ranks_hung)
    out.ranks_ok = sorted(r for r, good in check_ok.items() if good and r not in out.wrong_by_rank
                          and r not in out.ranks_error and r not in hung)
    out.ranks_timeout.sort()
    out.ranks_hung.sort()
    if reported:
        out.ranks_missing = [r for r in world if r not in reported]
    if out.ranks_hung:
        out.status = "hang"
    elif out.ranks_error:
        out.status = "error"
    elif out.ranks_wrong:
        out.status = "wrong"
    elif out.ranks_missing:
        out.status = "incomplete"
    elif out.ranks_unsupported and not out.ranks_ok:
        out.status = "unsupported"
    elif out.ranks_ok:
        out.status = "ok"
    return out


def _sweep(recs_by_rank: Dict[int, List[dict]]) -> List[SweepPoint]:
    if not recs_by_rank:
        return []
    rank = min(recs_by_rank)  # rank 0 when present
    points = []
    for rec in recs_by_rank[rank]:
        if rec.get("phase") == "sweep" and rec.get("status") == "ok":
            points.append(SweepPoint(int(rec.get("size") or 0), int(rec.get("count") or 0),
                                     float(rec.get("time_us") or 0.0), float(rec.get("algbw") or 0.0),
                                     float(rec.get("busbw") or 0.0)))
    return sorted(points, key=lambda p: p.size)


def aggregate_setting(name: str, records: Sequence[dict], world: Optional[int] = None,
                      planned: Optional[Sequence[str]] = None) -> SettingOutcome:
    """One setting's outcome from its records (in the order each rank wrote them).

    ``world`` and ``planned``: the ranks launched and the collectives they
    were given (:class:`Launched`). Records are checked again here (a run
    directory read back is no more trusted than a node): ranks outside the
    world, collectives not planned and records past a rank's caps are left
    out. Without ``world`` the ranks' own ``world_size`` counts, up to
    :data:`MAX_WORLD`.
    """
    out = SettingOutcome(name)
    limit = world if world is not None else MAX_WORLD
    known = set(planned) if planned is not None else set(COLLECTIVES)
    known.add(MPI_CHECK)
    planned_order, results, claimed = _read_setting(out, records, limit, known)
    out.world_size = world if world is not None else (claimed or None)
    everyone = list(range(out.world_size)) if out.world_size else sorted(out.ranks)
    out.missing_ranks = [r for r in everyone if r not in out.ranks]
    names = planned_order + [n for n in results if n not in planned_order and n != MPI_CHECK]
    for n in names:
        by_rank = {r: v for r, v in results.get(n, {}).items()}
        oc = _outcome(name, n, everyone, by_rank, out.ranks)
        oc.sweep = _sweep(by_rank)
        out.collectives[n] = oc
    if MPI_CHECK in results:
        out.mpi = _outcome(name, MPI_CHECK, everyone, results[MPI_CHECK], out.ranks)
    for rank, info in sorted(out.ranks.items()):
        stuck = info.stuck_in()
        if stuck is not None and not stuck.get("collective"):
            out.stuck_in_init.append(rank)
        elif stuck is None and not info.ended and not (info.last or {}).get("type") == "error":
            out.died.append(rank)
    return out


def _read_setting(out: SettingOutcome, records: Sequence[dict], limit: int, known: set
                  ) -> Tuple[List[str], Dict[str, Dict[int, List[dict]]], int]:
    """The records of one setting read into ``out`` (its ranks, backend, setup errors), each checked again:
    ``(collectives in the order the ranks planned them, results per collective and rank, the largest world
    a rank claimed)``."""
    planned_order: List[str] = []
    results: Dict[str, Dict[int, List[dict]]] = OrderedDict()
    counts: Dict[Tuple[int, str], int] = {}
    claimed = 0
    for raw in records:
        rec = clean_record(raw, limit)
        if rec is None:
            continue
        kind = rec["type"]
        rank = _rank_of(rec)
        coll = rec.get("collective")
        if coll is not None and coll not in known:
            continue
        if rank is not None:
            key = (rank, coll or "")
            n = counts.get(key, 0)
            if n >= (MAX_PER_COLLECTIVE if coll else MAX_OTHER):
                continue
            counts[key] = n + 1
        if kind == "error":
            if len(out.setup_errors) < limit + MAX_OTHER:
                out.setup_errors.append(rec)
        if rank is None:
            continue
        info = out.ranks.setdefault(rank, RankInfo(rank))
        _collect_rank(info, rec)
        if kind == "start":
            ws = rec.get("world_size")
            if isinstance(ws, int) and ws <= limit:
                claimed = max(claimed, ws)
            out.backend = rec.get("backend") or out.backend
            started = rec.get("collectives")
            for c in started if isinstance(started, list) else []:
                if c in known and c not in planned_order:
                    planned_order.append(c)
        elif kind in ("result", "progress") and coll:
            results.setdefault(coll, OrderedDict()).setdefault(rank, [])
            if kind == "result":
                results[coll][rank].append(rec)
    return planned_order, results, claimed


# --------------------------------------------------------------------------- findings


def _who(so: SettingOutcome, ranks: Iterable[int]) -> str:
    """``rank 1 (node2), rank 3 (node4)``; grouped by host when a host has several."""
    ranks = sorted(ranks)
    by_host: Dict[Optional[str], List[int]] = OrderedDict()
    for r in ranks:
        by_host.setdefault(so.host_of(r), []).append(r)
    parts = []
    for host, rs in by_host.items():
        label = ("rank " if len(rs) == 1 else "ranks ") + ",".join(str(r) for r in rs)
        parts.append(f"{label} ({host})" if host else label)
    return ", ".join(parts)


def _one_host(so: SettingOutcome, ranks: Iterable[int]) -> Optional[str]:
    hosts = {so.host_of(r) for r in ranks}
    return hosts.pop() if len(hosts) == 1 else None


def _hosts(so: SettingOutcome, ranks: Iterable[int]) -> List[str]:
    return sorted({h for h in (so.host_of(r) for r in ranks) if h})


def _collective_finding(so: SettingOutcome, oc: CollectiveOutcome) -> Finding:
    check = f"{AREA}.{oc.collective}"
    tag = f"[{so.setting}] {oc.collective}"
    judged = {"ok": _verified, "wrong": _wrong, "hang": _hung, "error": _failed}.get(oc.status)
    if judged is not None:
        return judged(so, oc, check, tag)
    if oc.status == "incomplete":
        return fail(AREA, check, f"{tag}: no result from {_who(so, oc.ranks_missing)}",
                    actual={"ranks_missing": oc.ranks_missing}, host=_one_host(so, oc.ranks_missing))
    if oc.status == "unsupported":
        reason = next(iter(oc.ranks_unsupported.values()), "")
        if reason.startswith("needs "):  # the worker's own reason: the world is too small for it
            return skip(AREA, check, f"{tag}: cannot run in this world ({reason[:160]})")
        return skip(AREA, check, f"{tag}: not supported by the {so.backend or ''} backend here"
                                 + (f" ({reason[:160]})" if reason else ""))
    return skip(AREA, check, f"{tag}: not run (the run stopped before it)")


def _verified(so: SettingOutcome, oc: CollectiveOutcome, check: str, tag: str) -> Finding:
    """Every rank verified the collective: its busbw at the largest size and its peak."""
    p = oc.largest
    if p is not None and p.size <= 0:
        bw = f": {p.time_us:.1f} us"
    elif p is not None:
        bw = f": busbw {p.busbw:.2f} GB/s at {size_text(p.size)}, peak {oc.peak_busbw:.2f} GB/s"
    else:
        bw = ""
    return ok(AREA, check, f"{tag}: verified on {len(oc.ranks_ok)} ranks{bw}",
              actual=oc.peak_busbw, evidence=[])


def _wrong(so: SettingOutcome, oc: CollectiveOutcome, check: str, tag: str) -> Finding:
    """Ranks hold wrong data: which, how many elements, the first one wrong."""
    evidence = []
    for r in oc.ranks_wrong:
        rec = oc.wrong_at.get(r)
        if rec is not None:
            fw = rec.get("first_wrong") or {}
            evidence.append(f"rank {r} {so.host_of(r) or ''}: {rec.get('wrong')} of {rec.get('count')} elements "
                            f"wrong at {size_text(rec.get('size'))}; element {fw.get('index')} = {fw.get('value')} "
                            f"(expected {fw.get('expected')})")
    total = sum(oc.wrong_by_rank.values())
    return fail(AREA, check, f"{tag}: wrong result on {_who(so, oc.ranks_wrong)}: {total} element(s) differ "
                             "from the exact expected values",
                actual={"ranks_wrong": oc.ranks_wrong, "wrong": total}, expected={"wrong": 0},
                evidence=evidence, host=_one_host(so, oc.ranks_wrong),
                fix="silent corruption on the path these ranks use: compare with the p2p-off/ib-off rows; "
                    "check IOMMU/ACS (iommu=pt, ACS off on PCIe switches) and the GPUs/NICs of the named hosts")


def _hung(so: SettingOutcome, oc: CollectiveOutcome, check: str, tag: str) -> Finding:
    """Ranks never came back from the collective: the culprits first, the ranks that waited on them after."""
    at = oc.hung_at[oc.ranks_hung[0]]
    where = f"{at.get('phase')}" + (f" at {size_text(at.get('size'))}" if at.get("size") else "")
    victims = [r for r in oc.ranks_error if r not in oc.ranks_hung]
    msg = f"{tag}: {_who(so, oc.ranks_hung)} never completed it ({where})"
    if victims:
        msg += f"; {_who(so, victims)} " + ("timed out waiting" if set(victims) <= set(oc.ranks_timeout)
                                             else "failed") + " in it"
    evidence = [f"{so.ranks[r].where()}: last record: progress {oc.collective} {oc.hung_at[r].get('phase')} "
                f"{size_text(oc.hung_at[r].get('size'))}" for r in oc.ranks_hung]
    evidence += [f"rank {r}: {oc.ranks_error[r][:300]}" for r in victims]
    everyone = so.world_size is not None and len(oc.ranks_hung) >= so.world_size
    return fail(AREA, check, msg, actual={"ranks_hung": oc.ranks_hung, "phase": at.get("phase"),
                                          "size": at.get("size")},
                expected="every rank completes", evidence=evidence,
                host=None if everyone else _one_host(so, oc.ranks_hung),
                fix="every rank stuck: the transport of this setting hangs (compare the other rows)"
                if everyone else "look at the named ranks' hosts first: the collective waited on them")


def _failed(so: SettingOutcome, oc: CollectiveOutcome, check: str, tag: str) -> Finding:
    """Ranks raised in the collective (timed out, or failed), and the ranks that never reported."""
    ranks = sorted(oc.ranks_error)
    first = oc.ranks_error[ranks[0]]
    timeout = set(ranks) <= set(oc.ranks_timeout)
    suspects = oc.ranks_missing
    msg = f"{tag}: {'timed out' if timeout else 'failed'} on {_who(so, ranks)}: {first[:200]}"
    if suspects:
        msg += f"; no record from {_who(so, suspects)}"
    return fail(AREA, check, msg, actual={"ranks_error": ranks, "timeout": timeout},
                evidence=[f"rank {r} {so.host_of(r) or ''}: {oc.ranks_error[r][:500]}" for r in ranks],
                host=_one_host(so, suspects or ranks))


def findings(so: SettingOutcome) -> List[Finding]:
    """Findings for one setting: setup, ranks, MPI sanity, versions, then one per collective."""
    out: List[Finding] = []
    tag = f"[{so.setting}]"
    for rec in so.setup_errors:
        r = _rank_of(rec)
        who = f"rank {r} ({rec.get('host')})" if r is not None else str(rec.get("host") or "a rank")
        phase = str(rec.get("phase") or "setup")
        # a probe that could not start (no torch, bad options) says nothing about the node's fabric
        make = error if phase in _NOT_THE_NODE else fail
        out.append(make(AREA, f"{AREA}.{phase}", f"{tag} {who}: {phase} failed: {str(rec.get('message'))[:300]}",
                        evidence=[str(rec.get("message"))[:1000]], host=rec.get("host")))
    if so.missing_ranks:
        out.append(fail(AREA, f"{AREA}.ranks", f"{tag} ranks {','.join(map(str, so.missing_ranks))} of "
                                               f"{so.world_size} never reported",
                        actual=len(so.ranks), expected=so.world_size))
    if so.stuck_in_init:
        out.append(fail(AREA, f"{AREA}.init", f"{tag} {_who(so, so.stuck_in_init)} never finished "
                                              "process-group initialisation",
                        host=_one_host(so, so.stuck_in_init),
                        fix="rendezvous or bootstrap connectivity: interface (GLOO/NCCL_SOCKET_IFNAME), "
                            "firewall, MASTER_ADDR reachable from every node"))
    if so.died:
        out.append(fail(AREA, f"{AREA}.ranks", f"{tag} {_who(so, so.died)} stopped without an end record",
                        host=_one_host(so, so.died)))
    if so.mpi is not None:
        if so.mpi.status == "ok":
            out.append(ok(AREA, f"{AREA}.mpi", f"{tag} MPI allreduce sanity check passed on "
                                               f"{len(so.mpi.ranks_ok)} ranks"))
        else:
            out.append(_collective_finding(so, so.mpi))
    out.extend(version_findings(so))
    for oc in so.collectives.values():
        out.append(_collective_finding(so, oc))
    return out


def version_findings(so: SettingOutcome) -> List[Finding]:
    """Different torch or NCCL versions across ranks (NCCL ≥2.23.4 refuses, older ones may hang)."""
    out: List[Finding] = []
    for key in ("torch", "nccl"):
        seen: Dict[str, List[int]] = OrderedDict()
        for r, info in sorted(so.ranks.items()):
            v = info.versions.get(key)
            if v:
                seen.setdefault(str(v), []).append(r)
        if len(seen) > 1:
            majority = max(seen, key=lambda v: len(seen[v]))
            odd = [r for v, rs in seen.items() if v != majority for r in rs]
            out.append(fail(AREA, f"{AREA}.version.{key}",
                            f"[{so.setting}] {key} versions differ: "
                            + "; ".join(f"{v} on {_who(so, rs)}" for v, rs in seen.items()),
                            actual={v: _hosts(so, rs) for v, rs in seen.items()}, expected=majority,
                            host=_one_host(so, odd), fix="use the same build (container/wheel) on every node"))
    return out


def all_findings(outcomes: Sequence[SettingOutcome]) -> List[Finding]:
    out: List[Finding] = []
    for so in outcomes:
        out.extend(findings(so))
    return out
