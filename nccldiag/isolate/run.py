"""One ``nccldiag isolate`` run from start to end (I/O edge).

connect -> prepare (stage the worker once, interfaces, each row's interface
per node) -> round 0 (every node alone) -> rounds 1-3 (disjoint pairs, every
row at once) -> confirmation (suspects against proven-good nodes) ->
all nodes, and bisection where only the whole fails -> judge (pure,
:mod:`nccldiag.isolate.judge`) -> report.

Every job of a round starts at once, each with its own rendezvous (its
first node's address, a port of its own) and its own ``NCCLDIAG_RUN``
marker; each is bounded by ``--timeout`` and reaped like any probe (every
process carrying its marker killed on its nodes, survivors looked for).
Per-node work (staging, counters, reaping, clean-up) goes ``--fanout``
nodes at a time.

How a job starts is the launcher's (:mod:`nccldiag.probe.launchers`):
over SSH, torchrun on each of its nodes; with ``--launcher srun``, one srun
step inside the allocation, every per-node command an srun step too, and
no SSH at all.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from nccldiag.inventory import Host
from nccldiag.isolate import judge, pairing
from nccldiag.isolate.judge import IsolateReport, Job, Round, Row
from nccldiag.model.errors import UsageError
from nccldiag.model.findings import Status, error, fail, ok, warn
from nccldiag.probe import analysis, counters, launch, launchers, plan, progress, records, results, runner
from nccldiag.rundir import Run as RunDir, prepare
from nccldiag.probe.plan import Setting
from nccldiag.transport.nodes import run_all
from nccldiag.transport.ssh import SSHOptions

AREA = "isolate"
PORT_SPAN = 100  # rendezvous ports used: --rdzv-port .. --rdzv-port + 99
DEFAULT_SIZE_GLOO = 1 << 20
DEFAULT_SIZE_NCCL = 256 << 20


@dataclass
class IsolateOptions:
    backend: str = "auto"
    nproc_per_node: int = 1
    nets: List[str] = field(default_factory=list)
    hcas: List[str] = field(default_factory=list)
    fraction: float = 0.5
    expected_busbw: Optional[float] = None
    seed: Optional[int] = 1
    pair_rounds: int = 3
    collective: str = "all_reduce"
    size: Optional[int] = None
    iters: Optional[int] = None
    timeout: Optional[float] = None
    rdzv_port: int = 29400
    full: bool = True  # run all nodes together when every pair passed, bisect if that fails
    max_bisect: int = 8
    python: str = "python3"
    ssh: SSHOptions = field(default_factory=SSHOptions)
    out_dir: Optional[str] = None
    fanout: int = 64
    launcher: str = "ssh"  # ssh: torchrun per node over SSH; srun: one Slurm step per job, no SSH
    slurm_job: Optional[str] = None  # --launcher srun: the allocation every step runs in


def _resolve_command(rows: Sequence[Row]) -> str:
    """sh printing ``row<i>=<interface>`` for each row given by ``--net`` (empty when the node has none)."""
    parts = []
    for i, row in enumerate(rows):
        if row.net is None:
            continue
        q = shlex.quote(row.net)
        if "/" in row.net:
            parts.append(f"echo \"row{i}=$(ip -o -4 addr show to {q} 2>/dev/null | awk '{{print $2; exit}}')\"")
        else:
            parts.append(f"if ip -o link show dev {q} >/dev/null 2>&1; then echo row{i}={q}; else echo row{i}=; fi")
    return "; ".join(parts) + "; true" if parts else "true"


def job_timeout(opts: IsolateOptions, backend: str) -> float:
    """Seconds each job may run: ``--timeout``, else the backend's default."""
    return plan.bounds(opts.timeout, backend).timeout


class _Cluster:
    """The nodes of one run, their launcher, and what every job needs to launch on them."""

    def __init__(self, launcher, nodes, prep: runner.Prepared, rows: Sequence[Row],
                 ifaces: Dict[str, Dict[str, Optional[str]]], opts: IsolateOptions, backend: str, out,
                 lock: threading.Lock):
        self.launcher = launcher
        self.by_name = {n.name: n for n in nodes}
        self.prep = prep
        self.rows = list(rows)
        self.ifaces = ifaces
        self.opts = opts
        self.backend = backend
        self.out = out
        self.lock = lock
        self.bounds = plan.bounds(opts.timeout, backend, grace=GRACE)
        self.timeout = self.bounds.timeout
        self.counter = 0

    def go_file(self, index: int, row: int = 0, attempt: int = 0) -> str:
        """The go file of round ``index``'s jobs on its ``row``-th row (each row's jobs start together), and of
        those run again (``attempt`` 1)."""
        return f"{self.prep.rundir}/go-{index}-{row}" + (f"-{attempt}" if attempt else "")

    def worker_args(self, index: int, row: int = 0, attempt: int = 0) -> List[str]:
        args = ["--backend", self.backend, "--pg-timeout", str(self.bounds.pg), "--collectives", self.opts.collective,
                "--go-file", self.go_file(index, row, attempt), "--go-wait", str(int(self.timeout * 0.5))]
        size = self.opts.size or (DEFAULT_SIZE_NCCL if self.backend == "nccl" else DEFAULT_SIZE_GLOO)
        args += ["--min-bytes", str(size), "--max-bytes", str(size)]
        if self.opts.iters:
            args += ["--iters", str(self.opts.iters)]
        return args

    def on_record(self, rec: dict) -> None:
        self.out.add(rec)  # the run directory's records.jsonl, one flushed line each

    def run_job(self, job: Job, on_record: Optional[Callable[[dict], None]] = None) -> Job:
        """Launch, stream, bound, reap one job; fill in its outcome (not its verdict)."""
        row = next(r for r in self.rows if r.name == job.row)
        missing = [n for n in job.nodes if row.net is not None and not self.ifaces.get(row.name, {}).get(n)]
        if missing:
            job.status = "error"
            job.causes = ("interface",)
            job.evidence = [f"{n} has no interface on {row.net}" for n in missing]
            return job
        first = self.launcher.rank0([self.by_name[n] for n in job.nodes])
        spec = launch.LaunchSpec(
            run_id=job.run_id, rundir=self.prep.rundir, python=self.opts.python,
            nproc_per_node=self.opts.nproc_per_node, rdzv_host=first.address or getattr(first, "slurm_name", first.name),
            rdzv_port=job.port or 0, env=row.environ,
            worker_args=self.worker_args(job.round, [r.name for r in self.rows].index(job.row), job.attempt),
            join_timeout=self.bounds.join,
            watchdog=self.bounds.watchdog,  # the job's ranks go with nccldiag, or at the job's deadline
        )
        setting = Setting(f"r{job.round}-{job.stage}-{job.row.replace(' ', '_')}-{job.label()}", row.environ, row.why)
        forward = on_record or self.on_record
        t0 = time.monotonic()
        moving: Dict[int, float] = {}  # rank -> busbw of its calls done so far (its last progress record)

        def tracked(rec: dict) -> None:
            judge.note_progress(job, rec, time.monotonic() - t0, moving)
            forward(rec)

        sr = self.launch(job, row, spec, setting, tracked)
        return outcome(job, analysis.job_report(setting, sr, self.timeout), sr, self.opts.collective,
                       judge.partial_busbw(moving))

    def ifname(self, row: Row, name: str) -> Optional[str]:
        """The interface ``name``'s ranks use on ``row``."""
        return self.ifaces.get(row.name, {}).get(name) if row.net is not None else self.prep.ifnames.get(name)

    def launch(self, job: Job, row: Row, spec: launch.LaunchSpec, setting: Setting,
               on_record: Callable[[dict], None]) -> runner.SettingRun:
        """Start one job's ranks, stream their records, bound and reap them, with the run's launcher."""
        from dataclasses import replace

        nodes = [self.by_name[n] for n in job.nodes]
        prep = replace(self.prep, ifnames={n: self.ifname(row, n) for n in job.nodes})
        commands = self.launcher.commands(spec, nodes, prep, self.bounds, name=job.run_id)
        launched = self.launcher.launched(nodes, self.opts.nproc_per_node, (self.opts.collective,))
        # a pair is over when one of its launchers fails: the other only waits for it
        sr = runner.run_setting(nodes, commands, setting, self.timeout, grace=self.bounds.grace,
                                run_id=job.run_id, on_record=on_record, fanout=self.opts.fanout,
                                launchers=self.launcher.starts_on(nodes), launched=launched)
        self.launcher.stop(job.run_id, sr, wait=min(30.0, self.opts.ssh.command_timeout))
        return sr

    def run_round(self, index: int, stage: str, groups: Sequence[Tuple[str, Sequence[str]]],
                  progress: Optional[Callable[[str], None]]) -> Round:
        """The round's jobs, one row after another, every job of a row at once; returns when each has ended and
        been reaped. A row's jobs run alone: its traffic shares no node's cores, memory or PCIe with another
        row's, and no node starts the ranks of two rows at once."""
        t0 = time.monotonic()
        jobs = []
        row_index = {r.name: i for i, r in enumerate(self.rows)}
        for row, nodes in groups:
            self.counter += 1
            port = self.opts.rdzv_port + (index * len(self.rows) + row_index[row]) % PORT_SPAN
            jobs.append(Job(index, stage, row, tuple(nodes), run_id=f"{self.prep.run_id}-{self.counter}", port=port))
        if progress is not None:
            progress(f"round {index} ({stage}): {len(jobs)} job(s)")
        for row in sorted({j.row for j in jobs}, key=lambda r: row_index[r]):
            self.run_row(index, row_index[row], [j for j in jobs if j.row == row])
        return Round(index, stage, jobs, time.monotonic() - t0)

    def run_row(self, index: int, row: int, jobs: Sequence[Job], attempt: int = 0) -> None:
        """Every job of round ``index`` on its ``row``-th row at once; returns when each has ended and been
        reaped. A job of two nodes whose run said nothing of them (:func:`judge.unmeasurable`: its ranks still
        starting when the deadline cut it, or moving data for too few seconds to measure a rate) is run once
        more, with the others of the row that need it, and takes that run's outcome; the first run's is said in
        its evidence."""
        t0 = time.monotonic()
        # Every job's ranks wait after init for the row's go file, created on the row's nodes once every
        # job is ready or over (or RELEASE_WAIT of --timeout after the first was ready, and at the latest RELEASE_BY
        # of it after the launch once one is): the jobs then measure side by side, none of them while another is
        # still starting, and a loaded machine's slow start leaves the ready ones time to measure.
        ready: Dict[str, set] = {j.run_id: set() for j in jobs}
        over: set = set()
        changed = threading.Event()

        def watch(job: Job):
            def on_record(rec: dict) -> None:
                self.on_record(rec)
                if rec.get("type") == "progress" and rec.get("phase") == "ready" and isinstance(rec.get("rank"), int):
                    ready[job.run_id].add(rec["rank"])
                    changed.set()
            return on_record

        def go(job: Job) -> None:
            try:
                self.run_job(job, watch(job))
            finally:
                over.add(job.run_id)
                changed.set()

        threads = [threading.Thread(target=go, args=(j,), daemon=True) for j in jobs]
        for t in threads:
            t.start()
        world = {j.run_id: len(j.nodes) * self.opts.nproc_per_node for j in jobs}
        first_ready: Optional[float] = None
        released = False
        while any(t.is_alive() for t in threads):
            changed.wait(0.2)
            changed.clear()
            if released:
                continue
            if first_ready is None and any(ready.values()):
                first_ready = time.monotonic()
            all_in = all(i in over or len(ready[i]) >= world[i] for i in ready)
            if all_in or release_due(time.monotonic() - t0, first_ready - t0 if first_ready is not None else None,
                                     self.timeout):
                self.release(index, row, sorted({n for j in jobs for n in j.nodes}), attempt)
                released = True
        for t in threads:
            t.join()
        if attempt == 0:
            self.run_again(index, row, jobs)

    def run_again(self, index: int, row: int, jobs: Sequence[Job]) -> None:
        """Run once more the jobs of a row whose first run said nothing of their nodes (:func:`judge.unmeasurable`),
        each under a new run id and rendezvous port; each job takes its second run's outcome."""
        why = {j.run_id: judge.unmeasurable(j, self.timeout) for j in jobs if len(j.nodes) == 2}
        again = [j for j in jobs if why.get(j.run_id)]
        if not again:
            return
        fresh = []
        for j in again:
            self.counter += 1
            port = self.opts.rdzv_port + ((index * len(self.rows) + row) + PORT_SPAN // 2) % PORT_SPAN
            fresh.append(Job(j.round, j.stage, j.row, j.nodes, run_id=f"{self.prep.run_id}-{self.counter}",
                             port=port, attempt=1))
        self.run_row(index, row, fresh, attempt=1)
        for j, f in zip(again, fresh):
            first = (f"run again: its first run ({j.run_id}, {j.elapsed:.0f} s) said nothing of its nodes: "
                     f"{why[j.run_id]}")
            vars(j).update(vars(f))
            j.evidence.append(first)

    def release(self, index: int, row: int, names: Sequence[str], attempt: int = 0) -> None:
        """Create the go file of a round's row on its nodes (one bounded command each, or the launcher's one
        step)."""
        self.launcher.each([self.by_name[n] for n in names], f"touch {shlex.quote(self.go_file(index, row, attempt))}",
                           min(15.0, self.opts.ssh.command_timeout), self.opts.fanout, f"{self.prep.run_id}-each")

    def snapshot(self, names: Sequence[str]) -> Dict[str, Dict[str, int]]:
        """Each node's TCP and interface error counters (one bounded command per node, or the launcher's one
        step)."""
        got = self.launcher.each([self.by_name[n] for n in names], counters.counters_command(),
                                 min(30.0, self.opts.ssh.command_timeout), self.opts.fanout, f"{self.prep.run_id}-each")
        return {n: counters.parse_counters(text) for n, text in got.items()}


GRACE = 5.0  # a job is over when one of its launchers fails: the others only wait for it
# The go file waits for jobs not yet ready at most this share of --timeout after the first job was ready, and, once
# one is, never past this share of it after the launch (the share left is more than progress.ENTERED_LATE_SHARE)
RELEASE_WAIT = 0.25
RELEASE_BY = 0.6


def release_due(now: float, first_ready: Optional[float], timeout: float) -> bool:
    """Whether a round whose jobs are not all ready or over is released now (pure; seconds after its launch):
    :data:`RELEASE_WAIT` of ``timeout`` after the first job was ready, or, once one is, :data:`RELEASE_BY` of it
    after the launch."""
    if first_ready is None:
        return False
    return now - first_ready > timeout * RELEASE_WAIT or now > timeout * RELEASE_BY


def run(hosts: Sequence[Host], opts: IsolateOptions, progress: Optional[Callable[[str], None]] = None) -> IsolateReport:
    """One isolation run end to end; returns its report (nothing is printed here)."""
    from nccldiag.transport.nodes import connect_all

    t0 = time.monotonic()
    if len(hosts) < 2:
        raise UsageError("isolate needs at least 2 hosts (a hostfile or -w)")
    if opts.out_dir:
        prepare(opts.out_dir)
    try:  # the syntax of every row before any connection (auto: checked as NCCL's, which has every kind)
        judge.build_rows(opts.backend if opts.backend in ("gloo", "nccl") else "nccl", opts.nets, opts.hcas)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    launcher = launchers.get(opts.launcher)
    if not launcher.jobs:
        raise UsageError(f"--launcher {opts.launcher} cannot start isolate's jobs")
    nodes = launcher.nodes(hosts, opts)
    launcher.refuse(opts, hosts, nodes)  # srun: every job's step asks for R tasks per node, refused here when
    # Slurm would
    report = IsolateReport(hosts=[n.name for n in nodes], seed=opts.seed, nproc_per_node=opts.nproc_per_node,
                           collective=opts.collective, size=opts.size, launcher=opts.launcher)
    unreachable: Dict[str, str] = connect_all(nodes, opts.fanout)
    live = [n for n in nodes if n.name not in unreachable]
    for name, msg in unreachable.items():
        report.findings.append(error(AREA, f"{AREA}.ssh", f"{name}: {msg}", host=name,
                                     fix="Run 'nccldiag check' on this host to see why it cannot be reached."))
    if len(live) < 2:
        report.findings.append(error(AREA, f"{AREA}.not_run", "fewer than 2 nodes could be reached: nothing to pair"))
        for n in nodes:
            n.close()
        report.elapsed = time.monotonic() - t0
        return report
    # the first reachable node is the one prepare() checks for a free port; every job picks its own
    run_id = runner.new_run_id()
    report.run_id = run_id
    done = False
    try:
        prep = launcher.prepare(live, opts, run_id, _run_bound(opts, len(live)))
        report = _run(report, launcher, nodes, live, prep, opts, unreachable, progress, t0)
        done = True
        return report
    finally:
        if not done:
            # Ctrl-C, SIGTERM, a bug: kill every job's processes on every node (they share the run's marker
            # prefix) and remove the run directories, whatever stopped the run
            _reap_prefix(live, run_id, opts.fanout)
            launcher.stop(run_id, None, wait=15.0)
            runner.cleanup(live, os.path.join("/tmp", run_id), fanout=opts.fanout)
            for n in nodes:
                n.close()


def _run_bound(opts: IsolateOptions, nodes: int) -> int:
    """Seconds an isolation may last at most, for the nodes' watchdogs: every round its timeout and the reap.

    Rounds: one alone, the pair rounds, confirmations (at most one per node), one with all nodes and the
    bisection steps.
    """
    rows = max(1, len(opts.nets)) + len(opts.hcas)  # a round runs its rows one after another
    per = ((opts.timeout or 600.0) + 5.0 + 120.0) * rows
    return int(per * (2 + opts.pair_rounds + nodes + opts.max_bisect) + 600)


def _reap_prefix(nodes, run_id: str, fanout: int) -> None:
    pat = shlex.quote(f"^{launch.RUN_MARK}={run_id}-[0-9]*$")
    cmd = (f"_p=$(grep -lsaz {pat} /proc/[0-9]*/environ 2>/dev/null | sed -n 's|^/proc/\\([0-9]*\\)/environ$|\\1|p' "
           "| grep -vx \"$$\"); [ -n \"$_p\" ] && kill -9 $_p 2>/dev/null; true")
    run_all(nodes, cmd, 15, fanout)


def _run(report: IsolateReport, launcher, nodes, live, prep: runner.Prepared, opts: IsolateOptions,
         unreachable: Dict[str, str], progress, t0: float) -> IsolateReport:
    excluded: Dict[str, str] = {}
    for name, msg in unreachable.items():
        excluded[name] = f"could not be reached: {msg}"
    for name, msg in prep.problems.items():
        excluded[name] = msg
        report.findings.append(error(AREA, f"{AREA}.prepare", msg, host=name))
    participants = [n for n in live if n.name not in prep.problems]
    gpus = min((prep.info.get(n.name, {}).get("gpus", 0) for n in participants), default=0)
    backend = opts.backend if opts.backend != "auto" else ("nccl" if gpus > 0 else "gloo")
    report.backend = backend
    report.size = opts.size or (DEFAULT_SIZE_NCCL if backend == "nccl" else DEFAULT_SIZE_GLOO)
    try:
        rows = judge.build_rows(backend, opts.nets, opts.hcas)
    except ValueError as exc:
        raise UsageError(str(exc)) from None  # the run's directories go in run()
    report.rows = rows
    # each --net row: the interface each node holds on that network
    ifaces: Dict[str, Dict[str, Optional[str]]] = {r.name: {} for r in rows if r.net is not None}
    if ifaces:
        cmd = _resolve_command(rows)

        for name, r in run_all(participants, cmd, opts.ssh.command_timeout, opts.fanout).items():
            kv = runner._parse_kv(r.stdout if r.error is None else "")
            for i, row in enumerate(rows):
                if row.net is not None:
                    ifaces[row.name][name] = kv.get(f"row{i}") or None
    report.interfaces = {r.name: dict(ifaces.get(r.name) or {n.name: prep.ifnames.get(n.name) for n in participants})
                         for r in rows}
    run = RunDir("isolate", opts.out_dir, run_id=prep.run_id)
    try:
        run.create(report.meta())
        kept = _Kept(run)
    except OSError as exc:  # the run's directories go in run()
        raise UsageError(f"cannot write the run directory {run.path}: {exc.strerror or exc}; nothing ran") from None
    report.out_dir = run.path
    lock = threading.Lock()
    with contextlib.closing(run):
        cl = _Cluster(launcher, participants, prep, rows, ifaces, opts, backend, kept, lock)
        _schedule(report, cl, [n.name for n in participants], rows, opts, excluded, progress)
    cleanup_failed = launcher.cleanup(live, prep, opts)
    for host, msg in sorted(cleanup_failed.items()):
        report.findings.append(warn(AREA, f"{AREA}.cleanup", f"could not remove the run directory on {host}: {msg}",
                                    host=host))
    for n in nodes:
        n.close()
    report.elapsed = time.monotonic() - t0
    return report


class _Kept:
    """The run directory of an isolation as it goes: every rank's record as it comes, each round once it ended."""

    def __init__(self, run: RunDir):
        self.run = run
        run.lines(records.RECORDS)  # there from the start, as the run's mark

    def add(self, rec: dict) -> None:
        self.run.lines(records.RECORDS).add(rec)

    def round(self, rnd: Round) -> None:
        self.run.lines(judge.ROUNDS).add(rnd.to_line())


class _Schedule:
    """The rounds of one isolation, played in order: each round's counters around it, its jobs, its record."""

    def __init__(self, report: IsolateReport, cl: _Cluster, rows: Sequence[Row], opts: IsolateOptions,
                 excluded: Dict[str, str], progress):
        self.report, self.cl, self.opts, self.excluded, self.progress = report, cl, opts, excluded, progress
        self.rows = [r.name for r in rows]
        self.jobs: List[Job] = []
        self.index = 0

    def play(self, stage: str, groups: Sequence[Tuple[str, Sequence[str]]]) -> Round:
        cl, report = self.cl, self.report
        names = sorted({n for _, g in groups for n in g})
        before = cl.snapshot(names)
        rnd = cl.run_round(self.index, stage, groups, self.progress)
        after = cl.snapshot(names)
        deltas = {n: counters.counter_delta(before[n], after[n]) for n in names if n in before and n in after}
        report.counters[str(self.index)] = deltas
        for j in rnd.jobs:
            j.ratio = counters.retrans_ratio(deltas[n] for n in j.nodes if n in deltas)
            moved = {n: counters.error_counters(deltas.get(n, {})) for n in j.nodes}
            for n, c in moved.items():
                if c:
                    j.evidence.append(f"{n} counters: " + ", ".join(f"{k} +{v}" for k, v in sorted(c.items())))
        report.rounds.append(rnd)
        cl.out.round(rnd)
        self.jobs.extend(rnd.jobs)
        self.index += 1
        return rnd

    def classify(self) -> None:
        _classify(self.report, self.jobs, self.rows, self.opts)

    def alone(self, pool: List[str]) -> List[str]:
        """Round 0: every node alone (all its local ranks), the first row; the nodes that passed."""
        r0 = self.play(judge.ALONE, [(self.rows[0], [n]) for n in pool])
        for j in r0.jobs:
            j.kind = judge.classify(j, None, timeout=self.cl.timeout)
        judge.started_alone(r0.jobs)
        for j in r0.jobs:
            if j.failed:
                self.excluded[j.nodes[0]] = "failed alone in round 0"
        return [n for n in pool if n not in self.excluded]

    def confirm(self, live: List[str], schedule) -> None:
        """Each suspect against a proven-good node it did not meet."""
        met = pairing.partners(schedule)
        need = judge.to_confirm(self.rows, self.jobs, live)
        per_row = {row: pairing.confirmation_pairs(names, judge.confirm_partners(row, self.jobs, live), met)[0]
                   for row, names in need.items()}
        for k in range(max((len(v) for v in per_row.values()), default=0)):
            groups = [(row, p) for row, rounds in per_row.items() if k < len(rounds) for p in rounds[k]]
            if groups:
                self.play(judge.CONFIRM, groups)
        self.classify()

    def whole(self, order: List[str]) -> None:
        """All nodes at once, per row; bisection where only the whole fails."""
        report = self.report
        rnd = self.play(judge.ALL, [(row, order) for row in self.rows])
        self.classify()
        failing = {j.row: [list(j.nodes)] for j in rnd.jobs if j.failed}
        steps = 0
        while failing and steps < self.opts.max_bisect:
            groups, located = judge.bisect_plan(failing)
            report.groups.extend(located)
            if not groups:
                failing = {}
                break
            rnd = self.play(judge.BISECT, groups)
            self.classify()
            steps += 1
            failing, located = judge.bisect_next(failing, rnd.jobs)
            report.groups.extend(located)
        for row, gs in failing.items():
            for g in gs:
                report.groups.append({"row": row, "nodes": g, "why": "still failing when bisection stopped"})


def _schedule(report: IsolateReport, cl: _Cluster, pool: List[str], rows: Sequence[Row], opts: IsolateOptions,
              excluded: Dict[str, str], progress) -> None:
    s = _Schedule(report, cl, rows, opts, excluded, progress)
    live = s.alone(pool)
    order = pairing.shuffled(live, opts.seed)
    report.order = order
    schedule = pairing.circle_rounds(order, opts.pair_rounds)
    for pairs in schedule:
        s.play(judge.PAIRS, [(row, p) for p in pairs for row in s.rows])
    s.classify()
    s.confirm(live, schedule)
    # all nodes at once when every pair passed; bisect where only the whole fails
    if opts.full and len(live) > 2 and not any(j.failed for j in s.jobs):
        s.whole(order)
    report.nodes, report.pairs = judge.verdicts(report.hosts, s.rows, s.jobs, excluded)
    _findings(report, excluded)


def _classify(report: IsolateReport, jobs: Sequence[Job], rows: Sequence[str], opts: IsolateOptions) -> None:
    """Thresholds per row from the healthy pairs, then every job's kind."""
    for row in rows:
        pairs = [j for j in jobs if j.row == row and j.stage in (judge.PAIRS, judge.CONFIRM) and j.status == "ok"]
        per_round, thr, med = judge.job_thresholds(row, jobs, opts.fraction, opts.expected_busbw)
        report.thresholds[row] = {"threshold": thr, "median": med, "fraction": opts.fraction,
                                  "expected": opts.expected_busbw,
                                  "per_round": {str(k): v for k, v in per_round.items()},
                                  "distribution": judge.distribution(j.busbw for j in pairs)}
        for j in jobs:
            if j.row != row or j.stage == judge.ALONE:
                continue
            j.threshold = (per_round.get(j.round, thr) if j.stage == judge.PAIRS else thr) if len(j.nodes) == 2 else None
            j.kind = judge.classify(j, j.threshold, j.ratio, job_timeout(opts, report.backend))


def _findings(report: IsolateReport, excluded: Mapping[str, str] = {}) -> None:
    for v in report.nodes:
        if v.verdict == "bad":
            report.findings.append(fail(AREA, f"{AREA}.node", f"{v.node}: {v.describe()}", host=v.node,
                                        actual={"class": v.cls, "rows": v.rows}, evidence=v.evidence[:12],
                                        fix=_FIX.get(v.cls.split(" (")[0], "")))
        elif v.verdict == "untested" and v.node not in excluded:
            report.findings.append(error(AREA, f"{AREA}.not_started",
                                         f"{v.node}: not judged: its jobs were cut by --timeout before their ranks "
                                         "had entered the collective, or before they had moved enough data to "
                                         "measure their rate", host=v.node, evidence=v.evidence[:12],
                                         fix="Its ranks were still starting (importing torch, joining the "
                                             "rendezvous) at the deadline, or started too late to measure: run "
                                             "again with a longer --timeout, or "
                                             "when the machines are less loaded; a node that stays so on an idle "
                                             "machine is slow to start Python and torch (its file system, its "
                                             "CPUs)."))
        elif v.verdict == "suspect":
            report.findings.append(warn(AREA, f"{AREA}.suspect",
                                        f"{v.node}: failed in pairs, not confirmed against a proven-good node",
                                        host=v.node, evidence=v.evidence[:12]))
    for p in report.pairs:
        if p.verdict == "suspect path":
            report.findings.append(fail(AREA, f"{AREA}.path",
                                        f"[{p.row}] the path between {p.nodes[0]} and {p.nodes[1]} fails, "
                                        "while both nodes pass with proven-good partners",
                                        actual={"nodes": list(p.nodes), "row": p.row}, evidence=p.evidence[:12],
                                        fix="Check the cables, switch ports and routes between these two nodes "
                                            "(a spine or ToR link they share, a route or firewall between them)."))
        elif p.verdict == "suspect pair (not confirmed)":
            report.findings.append(fail(AREA, f"{AREA}.pair",
                                        f"[{p.row}] the pair {p.nodes[0]} + {p.nodes[1]} fails, and no node proven "
                                        "good was left to tell which end is at fault",
                                        actual={"nodes": list(p.nodes), "row": p.row}, evidence=p.evidence[:12],
                                        fix="Run again with a node known to be good added to the hosts: the "
                                            "confirmation round then tests each end against it."))
    for g in report.groups:
        report.findings.append(fail(AREA, f"{AREA}.group",
                                    f"[{g['row']}] {len(g['nodes'])} nodes fail together: {g['why']}",
                                    actual={"nodes": g["nodes"]}, evidence=[", ".join(g["nodes"])],
                                    fix="A fault that shows only at this group size: oversubscription, a spine "
                                        "link, or a setting that differs between the halves."))
    if not any(f.status in (Status.FAIL, Status.ERROR) for f in report.findings):
        tested = [v.node for v in report.nodes if v.verdict == "ok"]
        report.findings.append(ok(AREA, f"{AREA}.summary",
                                  f"{len(tested)} node(s) cleared in {report.pair_rounds} round(s) after round 0, "
                                  f"on {len(report.rows)} network path(s)"))


_FIX = {
    "slow node": "Its links run below the healthy pairs' bandwidth on every path: check the NIC's speed and "
                 "width (ethtool, ibstat), PCIe link, CPU/NUMA placement and any rate limit (tc qdisc) on it.",
    "slow link": "That path runs slow on this node only: check the NIC of that network (speed, errors, qdisc).",
    "lossy link": "TCP retransmitted much of what this node's pairs sent: check the cable and switch port of "
                  "that interface (ip -s link, ethtool -S errors, ibstat counters), and any firewall dropping packets.",
    "blocked": "Its pairs never formed their rendezvous: open the rendezvous ports (--rdzv-port and the next 99) "
               "between the nodes and check with 'nc -zv ADDR PORT'.",
    "broken network": "Its ranks could not connect over that network: check the interface is up and has its "
                      "address (ip -br addr), the cable, and the routes to the other nodes' addresses there.",
    "wrong data": "Corrupted results with several partners: check its NIC, GPU and memory; drain it.",
    "hang": "Collectives with it hang: look at its NIC and the switch port.",
    "error": "Collectives with it fail: read the evidence lines for the error.",
    "fails alone": "It fails without any network: fix the node itself first (nccldiag check).",
}


def outcome(job: Job, rep: "analysis.SettingReport", sr: "runner.SettingRun", collective: str,
            moving: Optional[float]) -> Job:
    """A job's outcome (not its verdict) from its run's report (pure): status, how it ended, causes, busbw and
    evidence. ``moving``: the busbw so far of its slowest rank's last progress record."""
    job.elapsed = sr.elapsed
    job.partial_busbw = moving if rep.status != "ok" else None
    job.status = rep.status
    # NOT_STARTED where the deadline cut it before any rank had entered the collective, or so soon after the last had
    # that its first call could not end, none having failed: its ranks were still starting (a loaded machine stretches the import of torch and the rendezvous); no evidence either way
    job.unfinished = rep.unfinished or ""
    causes = []
    for f in rep.findings:
        if isinstance(f.actual, dict) and f.actual.get("cause"):
            causes.append(str(f.actual["cause"]))
    job.causes = tuple(dict.fromkeys(causes))
    # ranks still in init when the deadline cut a job in which no rank had failed were slow to start (a busy
    # machine), not cut off from their peers: only a failure says the network is broken
    job.init_failed = not rep.cut and (bool(rep.outcome.stuck_in_init) or any(
        f.check in judge.INIT_CHECKS and f.status == Status.FAIL for f in rep.findings))
    oc = rep.outcome.collectives.get(collective)
    big = oc.largest if oc is not None else None
    job.busbw = big.busbw if big is not None and oc.status == "ok" else None
    job.evidence = [f.message for f in rep.findings if f.status in (Status.FAIL, Status.ERROR)][:6]
    if sr.survivors:
        job.evidence.append("survivors after the kill: " + ", ".join(sorted(sr.survivors)))
    return job
