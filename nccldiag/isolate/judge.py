"""Naming the bad node, link or network path from small jobs (pure).

``nccldiag isolate`` runs small jobs in rounds (see ``docs/isolate.md``):
round 0 every node alone, rounds 1-3 disjoint pairs (circle method), then a
confirmation round against proven-good nodes, and bisection when only a
larger group fails. Everything here is pure: a job's probe outcome in, its
verdict out (:func:`classify`); the verdicts of all jobs in, a verdict per
node and per pair with its evidence out (:func:`judge_row`, :func:`verdicts`).

A pair fails when it errors, hangs, returns wrong data, or its busbw falls
below ``max(expected, fraction x median)`` of the healthy pairs of the same
network path (row) in the same run. A node that fails with two or more
partners is a bad node; a single failing pair is a suspect path, which the
confirmation round resolves.
"""
from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from nccldiag import rx
from nccldiag.model.findings import Finding, exit_code, to_jsonable
from nccldiag.probe import progress
from nccldiag.probe.progress import (HANG, SLOW, STALL_GAPS, STALL_MIN, STALL_SHARE, STALLED,  # noqa: F401
                                     entered_collective, shows_progress, unfinished_kind)

# What a job's failure says (its "kind"), most telling first.
BLOCKED = "blocked"  # the launcher never reached the rendezvous (port blocked or refused)
NETWORK = "network"  # ranks started but could not connect over the row's network
WRONG = "wrong"  # wrong data
ERROR = "error"
LOSSY = "lossy"  # too slow, or a collective failed, while TCP retransmitted a large share of what it sent
# STALLED: not done at the deadline: data moved, then nothing for a long while before it (probe.progress)
# SLOW: completed, too slow; or not done at the deadline while its data still moved
OK = "ok"
KINDS = (BLOCKED, NETWORK, WRONG, HANG, ERROR, LOSSY, STALLED, SLOW)
# Not done at the deadline before any rank had entered the collective, and no rank had failed: its ranks were still
# starting (loading their libraries, joining the rendezvous, waiting for the round's go). Neither a failure nor a
# pass: no evidence on its nodes either way.
NOT_STARTED = progress.NOT_STARTED
# Not done at the deadline while its data still moved, with too little moved to measure its rate (its signs of progress
# span less than the longer of RATE_SPAN_MIN seconds and RATE_SPAN_SHARE of the timeout, or there is no rate or
# threshold to compare): it started late, on a loaded machine. No evidence on its nodes either way, as NOT_STARTED.
UNMEASURED = "unmeasured"
UNJUDGED = (NOT_STARTED, UNMEASURED)
# The worker writes a progress record with the busbw of the calls done so far at most once a second: a rate read over
# fewer seconds than these (5 s, and a fifth of the timeout, the share a quiet must last to be a stall) rests on a
# handful of calls in the job's last seconds, when a loaded machine started it late.
RATE_SPAN_MIN = 5.0
RATE_SPAN_SHARE = 0.2

# A slow job whose nodes retransmitted at least this share of the TCP segments they sent is lossy.
LOSSY_RATIO = 0.01
RENDEZVOUS_CAUSES = frozenset({"rendezvous_unreachable", "rendezvous_incomplete"})
INIT_CHECKS = frozenset({"probe.init", "probe.bootstrap"})

# Stages of the schedule, in order.
ALONE, PAIRS, CONFIRM, ALL, BISECT = "alone", "pairs", "confirm", "all", "bisect"


@dataclass(frozen=True)
class Row:
    """One network path tested: a name, the variables its ranks get, the network it names.

    ``net`` is what ``--net`` gave (an interface name or an IPv4 CIDR), which
    each node resolves to its own interface; None for the default path (the
    interface that routes to the first host).
    """

    name: str
    env: Tuple[Tuple[str, str], ...] = ()
    net: Optional[str] = None
    why: str = ""

    @property
    def environ(self) -> Dict[str, str]:
        return dict(self.env)


_IFNAME = rx.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_CIDR = rx.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})/(\d{1,2})$")
_HCA = rx.compile(r"^[A-Za-z0-9_.-]{1,64}(:\d{1,2})?$")


def build_rows(backend: str, nets: Sequence[str] = (), hcas: Sequence[str] = ()) -> List[Row]:
    """The network paths to test: ``default`` (or one per ``--net``), plus one per ``--hca`` with NCCL.

    gloo: one row per interface (``GLOO_SOCKET_IFNAME``). NCCL: one per socket
    interface (``NCCL_SOCKET_IFNAME``, IB off so the data takes that
    interface) and one per HCA (``NCCL_IB_HCA``, IB forced). Raises
    ValueError for a spec that is neither an interface name nor a CIDR.
    """
    rows: List[Row] = []
    seen: Set[str] = set()
    for spec in nets:
        spec = spec.strip()
        m = _CIDR.match(spec)
        if m:
            if any(int(x) > 255 for x in m.groups()[:4]) or int(m.group(5)) > 32:
                raise ValueError(f"--net {spec}: not an IPv4 network")
        elif not _IFNAME.match(spec):
            raise ValueError(f"--net {spec!r}: expected an interface name (eth1) or an IPv4 network (10.1.0.0/16)")
        if spec in seen:
            raise ValueError(f"--net {spec} given twice")
        seen.add(spec)
        env: Tuple[Tuple[str, str], ...] = ()
        if backend == "nccl":
            env = (("NCCL_IB_DISABLE", "1"), ("NCCL_NET", "Socket"))
        rows.append(Row(f"net {spec}", env, spec, f"{'gloo' if backend == 'gloo' else 'NCCL sockets'} over {spec}"))
    if not rows:
        rows.append(Row("default", (), None, "the interface that routes to the first host"))
    for hca in hcas:
        if backend != "nccl":
            raise ValueError("--hca needs the nccl backend (NCCL_IB_HCA); gloo has no HCA rows")
        if not _HCA.match(hca):
            raise ValueError(f"--hca {hca!r}: expected an HCA name such as mlx5_0 or mlx5_0:1")
        if hca in seen:
            raise ValueError(f"--hca {hca} given twice")
        seen.add(hca)
        rows.append(Row(f"hca {hca}", (("NCCL_IB_HCA", "=" + hca), ("NCCL_NET", "IB")), None,
                        f"NCCL over InfiniBand/RoCE on {hca} only"))
    return rows


# --------------------------------------------------------------------------- one job


@dataclass
class Job:
    """One small probe job: its place in the schedule and what it showed."""

    round: int
    stage: str
    row: str
    nodes: Tuple[str, ...]
    status: str = "not-run"  # the probe's status: ok, wrong, error, hang, incomplete, not-run
    causes: Tuple[str, ...] = ()  # launch causes recognised (rendezvous_unreachable, ...)
    init_failed: bool = False  # ranks started and failed or hung before the first collective
    busbw: Optional[float] = None  # GB/s at the largest size
    elapsed: float = 0.0
    evidence: List[str] = field(default_factory=list)
    run_id: str = ""
    port: Optional[int] = None
    # arrivals (seconds after the launch) of the records that show data moved: a collective call completed
    # (a result, or a progress record counting calls done)
    progress: List[float] = field(default_factory=list)
    partial_busbw: Optional[float] = None  # GB/s of the calls done so far, on its slowest rank (not finished)
    # not done at its deadline: HANG, STALLED or SLOW from when its progress arrived against when the deadline
    # stopped it (probe.analysis), NOT_STARTED when no rank had entered the collective by then and none had failed;
    # "" where it finished, or for a job judged without it
    unfinished: str = ""
    kind: str = ""  # set by classify
    ratio: Optional[float] = None  # TCP retransmitted share on the job's nodes in its round
    threshold: Optional[float] = None
    # 1 for a job run a second time because its first run said nothing of its nodes (:func:`unmeasurable`)
    attempt: int = 0

    @property
    def failed(self) -> bool:
        return self.kind not in ("", OK) + UNJUDGED

    @property
    def judged(self) -> bool:
        """Whether the job says anything of its nodes: it passed or failed (one whose ranks were still starting
        at its deadline, or that moved too little before it to measure its rate, says neither)."""
        return self.kind not in UNJUDGED

    def label(self) -> str:
        return "+".join(self.nodes)


def note_progress(job: Job, rec: Mapping[str, Any], at: float, moving: Dict[int, float]) -> None:
    """One record of a running job (pure): when it shows data moved, its arrival (``at``, seconds after the launch)
    joins ``job.progress``, and a progress record's busbw of the calls done so far becomes its rank's in ``moving``
    (the job's ``partial_busbw`` is the slowest rank's: :func:`partial_busbw`)."""
    if not shows_progress(rec):
        return
    job.progress.append(at)
    rank, bw = rec.get("rank"), rec.get("busbw")
    if rec.get("type") == "progress" and isinstance(bw, (int, float)) and not isinstance(bw, bool) \
            and isinstance(rank, int) and not isinstance(rank, bool):
        moving[rank] = float(bw)


def partial_busbw(moving: Mapping[int, float]) -> Optional[float]:
    """The busbw so far of the job's slowest rank (its last progress record), None when no rank wrote one."""
    return min(moving.values()) if moving else None


def classify(job: Job, threshold: Optional[float], ratio: Optional[float] = None,
             timeout: Optional[float] = None) -> str:
    """The job's kind: ``ok``, :data:`NOT_STARTED`, :data:`UNMEASURED`, or what its failure says (one of
    :data:`KINDS`). A job the deadline cut while still moving is judged by its rate (:func:`moving_kind`)."""
    if job.status != "ok":
        if RENDEZVOUS_CAUSES & set(job.causes):
            return BLOCKED
        if job.status == "wrong":
            return WRONG
        if ratio is not None and ratio >= LOSSY_RATIO:
            return LOSSY  # ranks that could not connect, or a collective that failed, while TCP retransmitted heavily
        if "interface" in job.causes or job.init_failed:
            return NETWORK
        if job.status == "hang":
            limit = timeout if timeout is not None else job.elapsed
            kind = job.unfinished or unfinished_kind(job.progress, job.elapsed, limit)  # NOT_STARTED, or how it moved
            if kind == SLOW:
                return moving_kind(job, threshold, limit)
            if kind == STALLED and moving_kind(job, threshold, limit) == SLOW:
                # it moved below its round's rate, then paused: a slow link's pause (TCP backing off on a link
                # whose queue overflows), told by the rate it moved at; a stall is a stop after a healthy rate
                return SLOW
            return kind
        return ERROR
    if threshold is not None and job.busbw is not None and len(job.nodes) > 1 and job.busbw < threshold:
        return LOSSY if ratio is not None and ratio >= LOSSY_RATIO else SLOW
    return OK


def rate_span(job: Job) -> float:
    """The seconds over which the job's signs of progress arrived (first to last)."""
    return max(job.progress) - min(job.progress) if job.progress else 0.0


def moving_kind(job: Job, threshold: Optional[float], timeout: float) -> str:
    """A job the deadline cut while its data still moved, judged by its rate: :data:`SLOW` when the busbw of the
    calls its slowest rank had done (``partial_busbw``, over the time its calls ran) is below ``threshold``, the one
    its round's completed jobs are held to; :data:`OK` when at or above it (it started late and then ran at a healthy
    rate); :data:`UNMEASURED` when its signs of progress span too few seconds to measure a rate, or there is no rate
    or threshold to compare. Where its collective completed before the deadline cut the job (its ranks still
    finishing), the busbw of all its calls is the rate."""
    if threshold is None:
        return UNMEASURED
    if job.busbw is not None:
        return SLOW if job.busbw < threshold else OK
    if job.partial_busbw is None or rate_span(job) < max(RATE_SPAN_MIN, RATE_SPAN_SHARE * timeout):
        return UNMEASURED
    return SLOW if job.partial_busbw < threshold else OK


def unmeasurable(job: Job, timeout: float) -> str:
    """Why a job the deadline cut says nothing of its nodes whatever its round's threshold, in words; "" when it
    does (pure, on its outcome before it is classified). Its ranks were still starting (:data:`NOT_STARTED`), or its
    data still moved but for too few seconds to measure a rate (the span :func:`moving_kind` needs): a loaded
    machine stretched its start into the deadline. Such a job is run once more (``nccldiag isolate``), so that the
    class rests on what the job did, not on how much of the deadline its start took."""
    if job.status != "hang" or RENDEZVOUS_CAUSES & set(job.causes) or "interface" in job.causes or job.init_failed:
        return ""
    kind = job.unfinished or unfinished_kind(job.progress, job.elapsed, timeout)
    if kind == NOT_STARTED:
        return "its ranks were still starting when the deadline cut it"
    if kind == SLOW and job.busbw is None and rate_span(job) < max(RATE_SPAN_MIN, RATE_SPAN_SHARE * timeout):
        return (f"its data moved for {rate_span(job):.0f} s before the deadline cut it ({len(job.progress)} sign(s) "
                "of progress): too little to measure its rate")
    return ""


def threshold(busbws: Iterable[Optional[float]], fraction: float,
              expected: Optional[float] = None) -> Tuple[Optional[float], Optional[float]]:
    """``(threshold, median)``: ``max(expected, fraction x median)`` over the busbw of healthy jobs."""
    vals = [b for b in busbws if b is not None and b > 0]
    med = statistics.median(vals) if vals else None
    cands = [v for v in ((fraction * med) if med is not None else None, expected) if v is not None]
    return (max(cands) if cands else None), med


def job_thresholds(row: str, jobs: Sequence[Job], fraction: float,
                   expected: Optional[float] = None) -> Tuple[Dict[int, Optional[float]], Optional[float], Optional[float]]:
    """``({round: threshold}, row threshold, row median)`` for the 2-node jobs of ``row``.

    A pair round is judged against the median of its own completed pairs: a
    round that ran slower as a whole (the fabric or the machine busier while
    it ran) moves every pair of it alike and is no fault of any node. Other
    2-node jobs (confirmation) are judged against the median over all pair
    rounds of the row.
    """
    pairs = [j for j in jobs if j.row == row and j.stage == PAIRS and len(j.nodes) == 2 and j.status == "ok"]
    row_thr, row_med = threshold((j.busbw for j in pairs), fraction, expected)
    per_round: Dict[int, Optional[float]] = {}
    for r in sorted({j.round for j in pairs}):
        per_round[r] = threshold((j.busbw for j in pairs if j.round == r), fraction, expected)[0]
    return per_round, row_thr, row_med


def distribution(values: Iterable[Optional[float]]) -> Dict[str, float]:
    """min, quartiles, median and max of the busbw values (what the report shows)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return {}
    if len(vals) == 1:
        q1 = q3 = vals[0]
    else:
        q1, _, q3 = statistics.quantiles(vals, n=4, method="inclusive")
    return {"n": len(vals), "min": vals[0], "p25": q1, "median": statistics.median(vals), "p75": q3, "max": vals[-1]}


# --------------------------------------------------------------------------- verdicts per row


@dataclass
class RowJudgement:
    """What the pair rounds of one row say, before and after confirmation."""

    row: str
    bad: List[str] = field(default_factory=list)  # failed with >= 2 partners (not explained by another bad node)
    suspects: List[Tuple[str, str]] = field(default_factory=list)  # single failing pairs, neither end bad
    cleared: List[str] = field(default_factory=list)  # failed only with bad partners
    good: List[str] = field(default_factory=list)  # never failed in this row


def judge_pairs(row: str, jobs: Sequence[Job], nodes: Sequence[str]) -> RowJudgement:
    """Bad nodes and suspect pairs of one row from its pair jobs (already classified).

    A node that fails with two or more partners is bad. A healthy node that
    met two bad nodes also fails twice, so failures are explained away
    greedily: nodes with the most failing partners are judged first, and a
    pair whose other end is already bad does not count against a node.
    """
    failing: Dict[str, Set[str]] = {n: set() for n in nodes}
    for j in jobs:
        if j.row != row or j.stage != PAIRS or len(j.nodes) != 2 or not j.failed:
            continue
        a, b = j.nodes
        failing.setdefault(a, set()).add(b)
        failing.setdefault(b, set()).add(a)
    out = RowJudgement(row)
    bad: List[str] = []
    for n in sorted(failing, key=lambda x: (-len(failing[x]), list(nodes).index(x) if x in nodes else 0)):
        if len({p for p in failing[n] if p not in bad}) >= 2:
            bad.append(n)
    out.bad = bad
    pairs = set()
    for n, ps in failing.items():
        if n in bad:
            continue
        rest = {p for p in ps if p not in bad}
        for p in rest:
            pairs.add(tuple(sorted((n, p))))
        if ps and not rest:
            out.cleared.append(n)
    out.suspects = sorted(pairs)
    out.good = [n for n in nodes if not failing.get(n)]
    return out


@dataclass
class NodeVerdict:
    node: str
    verdict: str = "ok"  # ok, bad, suspect, excluded (round 0 failed), untested
    cls: str = ""  # slow node, lossy link, blocked, broken network, wrong data, hang, error, fails alone
    rows: List[str] = field(default_factory=list)  # rows in which it is bad
    evidence: List[str] = field(default_factory=list)

    def describe(self) -> str:
        where = f" ({', '.join(self.rows)})" if self.rows else ""
        return f"{self.cls}{where}" if self.cls else self.verdict


@dataclass
class PairVerdict:
    row: str
    nodes: Tuple[str, str]
    verdict: str  # "suspect path", "bad node", "ok"
    evidence: List[str] = field(default_factory=list)


_NODE_CLASS_ALL = {SLOW: "slow node", LOSSY: "lossy link", BLOCKED: "blocked", NETWORK: "broken network",
                   WRONG: "wrong data", HANG: "hang", ERROR: "error", STALLED: "slow or stalled"}
_NODE_CLASS_SOME = {SLOW: "slow link", LOSSY: "lossy link", BLOCKED: "blocked", NETWORK: "broken network",
                    WRONG: "wrong data", HANG: "broken network", ERROR: "broken network",
                    STALLED: "slow or stalled link"}


def main_kind(kinds: Iterable[str]) -> str:
    """The kind most jobs showed; ties go to the more telling kind (order of :data:`KINDS`)."""
    c = Counter(k for k in kinds if k in KINDS)
    if not c:
        return ""
    return min(c, key=lambda k: (-c[k], KINDS.index(k)))


def job_line(j: Job) -> str:
    """One evidence line: round, row, nodes, what happened, the numbers."""
    bits = [f"round {j.round} {j.stage} [{j.row}] {j.label()}: {j.kind or j.status}"]
    if j.busbw is not None and len(j.nodes) > 1:
        bits.append(f"busbw {j.busbw:.4g} GB/s" + (f" < {j.threshold:.4g}" if j.kind in (SLOW, LOSSY) and
                                                     j.threshold is not None else ""))
    if j.kind == NOT_STARTED:
        bits.append("not done at the deadline, and no rank had entered the collective: its ranks were still "
                    "starting (no evidence on its nodes either way)")
    if j.kind == UNMEASURED:
        bits.append(f"not done at the deadline, data still moving, but its {len(j.progress)} sign(s) of progress "
                    f"span {rate_span(j):.0f} s: too little to measure its rate (no evidence on its nodes either way)")
    if j.kind in (SLOW, STALLED, OK) and j.status == "hang":
        moved = f"not done at the deadline; {len(j.progress)} sign(s) of progress"
        if j.progress:
            moved += f", the last {max(0.0, j.elapsed - max(j.progress)):.0f} s before its end"
        paused = j.unfinished == STALLED  # it moved, then paused long before the deadline
        bits.append(moved + (": progress seen, then stopped" if j.kind == STALLED else
                             ": moving below its round's rate, then paused" if j.kind == SLOW and paused else
                             ": still moving" + (" at a healthy rate (started late, not slow)" if j.kind == OK else "")))
        if j.partial_busbw is not None:
            bits.append(f"busbw so far {j.partial_busbw:.4g} GB/s" + (f" < {j.threshold:.4g}" if j.threshold is not None
                                                                        and j.partial_busbw < j.threshold else ""))
    if j.ratio is not None:
        bits.append(f"TCP retransmitted {100 * j.ratio:.1f}%")
    if j.kind not in (OK, "", SLOW, LOSSY) + UNJUDGED and j.evidence:
        bits.append(j.evidence[0][:200])
    return "; ".join(bits)


def verdicts(nodes: Sequence[str], rows: Sequence[str], jobs: Sequence[Job],
             excluded: Mapping[str, str] = {}) -> Tuple[List[NodeVerdict], List[PairVerdict]]:
    """A verdict per node and per failing pair, from every job (classified) of every round.

    ``excluded`` maps nodes left out of the pairing (they failed alone in
    round 0, or could not take part) to why. Confirmation jobs (stage
    ``confirm``, a suspect against a proven-good node) decide: a suspect that
    fails there is bad; a bad node that passes there is only a suspect; a
    suspect pair whose both ends pass with good partners is a suspect path.
    """
    out: Dict[str, NodeVerdict] = {n: NodeVerdict(n) for n in nodes}
    for n, why in excluded.items():
        out[n] = _excluded_verdict(out.get(n) or NodeVerdict(n), why, jobs)
    tally = _Tally()
    pool = [n for n in nodes if n not in excluded]
    for row in rows:
        tally.row(row, jobs, pool)
    tally.name(out, rows)
    for n in pool:
        _unjudged(out[n], rows, jobs)
    return [out[n] for n in nodes if n in out], tally.pairs


# A node alone whose ranks had not started in this many times the time its slowest peer took to finish is stuck
STARTED_BY_PEERS = 1.5


def started_alone(jobs: Sequence[Job]) -> None:
    """Round 0, every node alone and all at once (pure, on the round's classified jobs): a job whose ranks had not
    entered the collective when the deadline cut it, after :data:`STARTED_BY_PEERS` times the time the slowest of
    the round's finished jobs took, is a hang of its node. Its peers started torch and ran the collective whole in
    far less time, under the same machine's load; this node could not start its ranks (an interpreter, a file
    system or a GPU stuck). Where no job of the round finished, or the slowest took nearly the whole deadline, the
    load may have slowed every start alike: the job stays not started."""
    done = [j.elapsed for j in jobs if j.kind == OK and j.status == "ok"]
    if not done:
        return
    slowest = max(done)
    for j in jobs:
        if j.kind == NOT_STARTED and j.elapsed >= STARTED_BY_PEERS * slowest:
            j.kind = HANG
            j.evidence.append(f"its ranks had not entered the collective after {j.elapsed:.0f} s, while every other "
                              f"node alone in the same round finished in at most {slowest:.0f} s")


def _unjudged(v: NodeVerdict, rows: Sequence[str], jobs: Sequence[Job]) -> None:
    """A node cleared so far whose jobs on some row all ended before their ranks had started, or before they had
    moved enough to measure their rate: it is untested there, not cleared (its jobs say nothing of it)."""
    if v.verdict != "ok":
        return
    lines: List[str] = []
    for row in rows:
        mine = [j for j in jobs if j.row == row and j.stage != ALONE and v.node in j.nodes]
        if mine and not any(j.judged for j in mine):
            lines += [job_line(j) for j in mine]
    if lines:
        v.verdict = "untested"
        v.evidence = lines


def _excluded_verdict(v: NodeVerdict, why: str, jobs: Sequence[Job]) -> NodeVerdict:
    """A node left out of the pairing: bad when it failed alone in round 0, else untested, and why."""
    alone = [j for j in jobs if j.stage == ALONE and j.nodes == (v.node,) and j.failed]
    v.verdict = "bad" if alone else "untested"
    v.cls = "fails alone" if alone else ""
    if alone:
        k = main_kind(j.kind for j in alone)
        v.cls = f"fails alone ({_NODE_CLASS_ALL.get(k, k)})" if k else "fails alone"
    v.evidence = [job_line(j) for j in alone] or [why]
    return v


class _Tally:
    """What every row's pairs and confirmations say of each node, gathered row by row, then named (:meth:`name`)."""

    def __init__(self) -> None:
        self.bad_rows: Dict[str, List[str]] = {}
        self.kinds: Dict[str, List[str]] = {}
        self.evidence: Dict[str, List[str]] = {}
        self.suspect_nodes: Dict[str, List[str]] = {}
        self.suspect_with: Dict[str, Set[str]] = {}
        self.pairs: List[PairVerdict] = []

    def bad(self, n: str, row: str, failing_jobs: Sequence[Job]) -> None:
        mine = [j for j in failing_jobs if n in j.nodes and (j.stage == PAIRS or j.nodes[0] == n)]
        self.bad_rows.setdefault(n, []).append(row)
        self.kinds.setdefault(n, []).extend(j.kind for j in mine)
        self.evidence.setdefault(n, []).extend(job_line(j) for j in mine)

    def row(self, row: str, jobs: Sequence[Job], pool: Sequence[str]) -> None:
        rj = judge_pairs(row, jobs, pool)
        confirm = [j for j in jobs if j.row == row and j.stage == CONFIRM and len(j.nodes) == 2]

        def confirmed(node: str) -> Optional[bool]:
            mine = [j for j in confirm if j.nodes[0] == node]
            if not mine:
                return None
            return any(j.failed for j in mine)

        failing_jobs = [j for j in jobs if j.row == row and j.stage in (PAIRS, CONFIRM) and j.failed]
        for n in rj.bad:
            c = confirmed(n)
            if c:
                self.bad(n, row, failing_jobs)
                continue
            # it passed with a good partner, or no partner was left to confirm it: its failures alone do not tell
            # it from a node that met bad partners or a machine too loaded for its jobs
            mine = [j for j in failing_jobs if n in j.nodes and (j.stage == PAIRS or j.nodes[0] == n)]
            self.suspect_nodes.setdefault(n, []).extend(job_line(j) for j in mine)
            self.suspect_nodes[n].extend(job_line(j) for j in confirm if j.nodes[0] == n)
            if c is None:
                self.suspect_nodes[n].append(f"[{row}] not confirmed: no node on this row passed its jobs to be "
                                             "its partner in the confirmation round")
        for a, b in rj.suspects:
            ca, cb = confirmed(a), confirmed(b)
            pair_jobs = [j for j in failing_jobs if set(j.nodes) == {a, b}]
            lines = [job_line(j) for j in pair_jobs] + [job_line(j) for j in confirm if j.nodes[0] in (a, b)]
            if ca or cb:
                for n, c in ((a, ca), (b, cb)):
                    if c:
                        self.bad(n, row, failing_jobs)
                self.pairs.append(PairVerdict(row, (a, b), "bad node", lines))
                continue
            verdict = "suspect path" if (ca is False and cb is False) else "suspect pair (not confirmed)"
            self.pairs.append(PairVerdict(row, (a, b), verdict, lines))
            for n, other in ((a, b), (b, a)):
                self.suspect_nodes.setdefault(n, []).extend(lines)
                self.suspect_with.setdefault(n, set()).add(other)

    def name(self, out: Dict[str, NodeVerdict], rows: Sequence[str]) -> None:
        """Each bad node's verdict, class and rows; each suspect not explained by a bad node, a suspect."""
        for n, rs in self.bad_rows.items():
            v = out[n]
            v.verdict = "bad"
            v.rows = list(dict.fromkeys(rs))
            k = main_kind(self.kinds.get(n, []))
            some = len(rows) > 1 and len(v.rows) < len(rows)
            v.cls = (_NODE_CLASS_SOME if some else _NODE_CLASS_ALL).get(k, k or "bad node")
            if not some:
                v.rows = [] if len(rows) > 1 else v.rows
            v.evidence = list(dict.fromkeys(self.evidence.get(n, [])))
        for n, lines in self.suspect_nodes.items():
            v = out[n]
            if self.suspect_with.get(n) and self.suspect_with[n] <= set(self.bad_rows):
                continue  # its one failing pair was with a node found bad (on another row): explained
            if v.verdict == "ok":
                v.verdict = "suspect"
                v.evidence = list(dict.fromkeys(lines))


def bisect_plan(failing: Mapping[str, Sequence[Sequence[str]]]) -> Tuple[List[Tuple[str, List[str]]], List[dict]]:
    """The next bisection round: both halves of every failing group, and the groups too small to split.

    ``failing`` maps a row to the groups that failed on it. Returns the jobs
    to run, ``(row, nodes)``, and the groups of 2 or fewer, reported as they
    are (their pairs passed before, so only the group as a whole fails).
    """
    from nccldiag.isolate.pairing import halves

    jobs: List[Tuple[str, List[str]]] = []
    located: List[dict] = []
    for row, groups in failing.items():
        for g in groups:
            if len(g) > 2:
                a, b = halves(g)
                jobs += [(row, a), (row, b)]
            else:
                located.append({"row": row, "nodes": list(g), "why": f"fails as a group of {len(g)}"})
    return jobs, located


def bisect_next(failing: Mapping[str, Sequence[Sequence[str]]],
                jobs: Sequence[Job]) -> Tuple[Dict[str, List[List[str]]], List[dict]]:
    """After a bisection round: the halves that still fail, and the groups located (each half passed)."""
    nxt: Dict[str, List[List[str]]] = {}
    located: List[dict] = []
    for row, groups in failing.items():
        for g in groups:
            if len(g) <= 2:
                continue
            parts = [j for j in jobs if j.row == row and set(j.nodes) <= set(g)]
            bad = [list(j.nodes) for j in parts if j.failed]
            if bad:
                nxt.setdefault(row, []).extend(bad)
            elif not all(j.judged for j in parts):
                located.append({"row": row, "nodes": list(g),
                                "why": "fails as a whole; a half's ranks were still starting at the deadline (or "
                                       "moved too little to measure), so the halves tell nothing more"})
            else:
                located.append({"row": row, "nodes": list(g),
                                "why": "fails as a whole while each half passes: the fault is between the halves"})
    return nxt, located


def to_confirm(rows: Sequence[str], jobs: Sequence[Job], pool: Sequence[str]) -> Dict[str, List[str]]:
    """Row -> the nodes the confirmation round re-tests: bad candidates and both ends of each suspect pair."""
    out: Dict[str, List[str]] = {}
    for row in rows:
        rj = judge_pairs(row, jobs, pool)
        names = list(rj.bad) + [n for p in rj.suspects for n in p]
        if names:
            out[row] = list(dict.fromkeys(names))
    return out


def proven_good(row: str, jobs: Sequence[Job], pool: Sequence[str]) -> List[str]:
    """Nodes that passed every job they ran on ``row`` (the partners its confirmation uses)."""
    ran = {n for j in jobs if j.row == row and j.judged for n in j.nodes}
    failed = {n for j in jobs if j.row == row and j.failed for n in j.nodes}
    return [n for n in pool if n in ran and n not in failed]


def confirm_partners(row: str, jobs: Sequence[Job], pool: Sequence[str]) -> List[str]:
    """The partners the confirmation round pairs a row's candidates with: its proven-good nodes; where there is
    none (every node failed some job, as when two bad nodes met every other node, or a loaded machine failed jobs
    everywhere), the nodes whose every failure was with a bad candidate and that passed at least one pair. A
    candidate that fails again with such a partner is bad; one that passes, or that no partner was left for, is
    only a suspect."""
    good = proven_good(row, jobs, pool)
    if good:
        return good
    passed = {n for j in jobs if j.row == row and j.stage == PAIRS and j.judged and not j.failed for n in j.nodes}
    return [n for n in judge_pairs(row, jobs, pool).cleared if n in passed]


# --------------------------------------------------------------------------- the run's report

SCHEMA = "nccldiag.isolate/1"
ROUNDS = "rounds.jsonl"  # the run directory's file of the rounds that ended (Round.to_line)


@dataclass
class Round:
    index: int
    stage: str
    jobs: List[Job] = field(default_factory=list)
    elapsed: float = 0.0

    def to_line(self) -> Dict[str, Any]:
        """The round as a report document holds it, and as its run directory's ``rounds.jsonl`` keeps it when it
        ends (its jobs judged or not yet)."""
        return {"index": self.index, "stage": self.stage, "elapsed_s": round(self.elapsed, 3),
                "jobs": [to_jsonable(j) for j in self.jobs]}


@dataclass
class IsolateReport:
    hosts: List[str]
    backend: str = "?"
    rows: List[Row] = field(default_factory=list)
    seed: Optional[int] = None
    order: List[str] = field(default_factory=list)
    rounds: List[Round] = field(default_factory=list)
    thresholds: Dict[str, dict] = field(default_factory=dict)  # row -> threshold, median, distribution
    nodes: List[NodeVerdict] = field(default_factory=list)
    pairs: List[PairVerdict] = field(default_factory=list)
    groups: List[dict] = field(default_factory=list)  # bisection: groups that fail only together
    findings: List[Finding] = field(default_factory=list)
    interfaces: Dict[str, Dict[str, Optional[str]]] = field(default_factory=dict)  # row -> node -> interface
    counters: Dict[str, Dict[str, Dict[str, int]]] = field(default_factory=dict)  # round -> node -> delta
    run_id: Optional[str] = None
    out_dir: Optional[str] = None
    elapsed: float = 0.0
    started: float = field(default_factory=time.time)
    nproc_per_node: int = 1
    collective: str = "all_reduce"
    size: Optional[int] = None
    launcher: str = "ssh"

    @property
    def exit_code(self) -> int:
        return exit_code((f.status for f in self.findings), incomplete=not self.rounds)

    @property
    def pair_rounds(self) -> int:
        return sum(1 for r in self.rounds if r.stage != ALONE)

    def meta(self) -> Dict[str, Any]:
        """Its run directory's ``run.json`` (before the first round): what a report of a run stopped early says."""
        return {"schema": SCHEMA, "backend": self.backend, "launcher": self.launcher, "hosts": list(self.hosts),
                "nproc_per_node": self.nproc_per_node, "collective": self.collective, "size": self.size,
                "seed": self.seed, "rows": [{"name": r.name, "env": r.environ, "net": r.net, "why": r.why}
                                            for r in self.rows],
                "interfaces": self.interfaces}

    @classmethod
    def from_meta(cls, meta: Dict[str, Any], out_dir: Optional[str] = None) -> "IsolateReport":
        """The report of a run that stopped before its end, from its ``run.json`` (no round, no verdict)."""
        def strs(v: Any) -> List[str]:
            return [str(x) for x in v] if isinstance(v, list) else []

        def num(v: Any) -> Optional[int]:
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        rows = [Row(str(r["name"]), tuple((str(k), str(v)) for k, v in (r.get("env") or {}).items()),
                    r.get("net") if isinstance(r.get("net"), str) else None, str(r.get("why") or ""))
                for r in meta.get("rows") or [] if isinstance(r, dict) and r.get("name")]
        report = cls(hosts=strs(meta.get("hosts")), backend=str(meta.get("backend") or "?"), rows=rows,
                     seed=num(meta.get("seed")), run_id=str(meta.get("run_id") or "") or None, out_dir=out_dir,
                     nproc_per_node=num(meta.get("nproc_per_node")) or 1,
                     collective=str(meta.get("collective") or "all_reduce"), size=num(meta.get("size")),
                     launcher=str(meta.get("launcher") or "ssh"))
        if isinstance(meta.get("interfaces"), dict):
            report.interfaces = meta["interfaces"]
        return report
