"""One ``nccldiag probe`` run from start to end (I/O edge).

connect -> prepare (stage, interfaces, rendezvous port) -> for each setting:
launch, stream records to ``records.jsonl``, kill, fetch NCCL logs ->
analyze (pure) -> report. Every setting runs even when an earlier one hung.
"""
from __future__ import annotations

import contextlib
import shlex
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from nccldiag.rundir import Run as RunDir, prepare
from nccldiag.inventory import Host
from nccldiag.model.errors import UsageError
from nccldiag.probe import counters, launch, launchers, plan, records, runner
from nccldiag.transport.ssh import SSHOptions


if TYPE_CHECKING:
    from nccldiag.probe.analysis import ProbeReport


@dataclass
class ProbeOptions:
    launcher: str = launchers.LOCAL
    backend: str = "auto"
    nproc_per_node: Optional[int] = None
    require_ib: bool = False
    custom: List[str] = field(default_factory=list)
    settings_mode: str = "all"
    collectives: Optional[str] = None
    min_bytes: Optional[int] = None
    max_bytes: Optional[int] = None
    factor: Optional[int] = None
    iters: Optional[int] = None
    timeout: Optional[float] = None
    ifname: Optional[str] = None
    shared_dir: Optional[str] = None
    python: str = "python3"
    ssh: SSHOptions = field(default_factory=SSHOptions)
    out_dir: Optional[str] = None
    dry_run: bool = False
    extra_worker_args: List[str] = field(default_factory=list)
    fanout: int = 64
    slurm_job: Optional[str] = None  # --launcher srun: the allocation every step runs in
    spec_path: Optional[str] = None  # the site spec of --spec (absolute): run.json names it for a rebuilt report
    spec: object = None  # that spec, read (nccldiag.spec.model.Spec): its findings and policy end the run


def worker_args(opts: ProbeOptions, backend: str, pg_timeout: int) -> List[str]:
    args = ["--backend", backend, "--pg-timeout", str(pg_timeout)]
    if opts.collectives:
        args += ["--collectives", opts.collectives]
    for flag, value in (("--min-bytes", opts.min_bytes), ("--max-bytes", opts.max_bytes),
                        ("--factor", opts.factor), ("--iters", opts.iters)):
        if value is not None:
            args += [flag, str(value)]
    return args + list(opts.extra_worker_args)


def _debug_env(backend: str, rundir: str, setting_name: str) -> Dict[str, str]:
    if backend != "nccl":
        return {}
    return {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": "INIT,NET,GRAPH,ENV",
        "NCCL_DEBUG_FILE": f"{rundir}/{setting_name}/nccl.%h.%p.log",
    }


# what the head needs only once the ranks have run (the diagnosis, its rules and knowledge), loaded while
# they start: ``module`` or ``module:function`` (called without arguments; its result cached where it is)
WARM_MODULES = ("nccldiag.diagnosis", "nccldiag.diagnosis.rules:all_rules", "nccldiag.nccl.parser")


def warm_imports(names: Sequence[str]) -> None:
    """Import ``names`` on a thread of its own: the head is idle while the ranks import torch and meet."""
    import importlib
    import threading

    def load() -> None:
        for name in names:
            module, _, func = name.partition(":")
            with contextlib.suppress(Exception):  # imported again, and any error raised, where it is used
                loaded = importlib.import_module(module)
                if func:
                    getattr(loaded, func)()

    threading.Thread(target=load, name="nccldiag-warm-imports", daemon=True).start()


def run(hosts: Sequence[Host], opts: ProbeOptions,
        progress: Optional[Callable[[str], None]] = None, warm: Sequence[str] = ()) -> "ProbeReport":
    """One probe run, end to end; returns its report (``--dry-run``: the commands, in ``report.commands``).

    ``progress`` receives a line as each setting starts; nothing is printed here. ``warm``: modules the caller
    needs afterwards, imported with :data:`WARM_MODULES` once the first setting's ranks are launched.
    """
    from nccldiag.probe import analysis
    from nccldiag.transport.nodes import connect_all

    t0 = time.monotonic()
    launcher = launchers.get(opts.launcher)
    if opts.out_dir and not opts.dry_run:
        prepare(opts.out_dir)  # a new run directory, or refused before any node is contacted
    most = validate(opts, len(hosts))
    nodes = launcher.nodes(hosts, opts)
    launcher.refuse(opts, hosts, nodes)
    run = RunDir("probe", opts.out_dir)  # written once the nodes are prepared
    run_id, out_dir = run.run_id, run.path

    # connect, fanout at a time, each bounded by the SSH timeouts
    unreachable: Dict[str, str] = {} if opts.dry_run else connect_all(nodes, opts.fanout)
    live = [n for n in nodes if n.name not in unreachable]
    if not live or (nodes and nodes[0].name in unreachable):
        report = analysis.unreachable_report(unreachable, [n.name for n in nodes], run_id)
        for n in nodes:
            n.close()
        return analysis.conclude(report, opts.spec)

    cleaned = opts.dry_run  # set once the run's processes and directories are gone; until then, `finally` does it
    prep: Optional[runner.Prepared] = None
    try:
        prep = launcher.prepare(live, opts, run_id, _run_bound(opts, most))
        shape = _shape(launcher, opts, hosts, live, prep, progress)
        if opts.dry_run:
            return _dry_run(launcher, opts, nodes, shape)
        can_run = bool(shape.participants) and len(shape.participants) == len(live) and not unreachable
        keep = records.Writer(run)
        runs = _run_settings(launcher, opts, shape, [n.name for n in nodes], keep, can_run, progress,
                             tuple(WARM_MODULES) + tuple(warm))
        node_facts = {}
        if shape.backend == "nccl" and runs:
            from nccldiag.probe import facts

            node_facts = facts.collect(shape.participants, timeout=min(60.0, opts.ssh.command_timeout),
                                       fanout=opts.fanout, keep=keep.facts)
        keep.close()
        cleanup_failed = launcher.cleanup(live, prep, opts)
        cleaned = True
        for n in nodes:
            n.close()
        return _report(opts, shape, runs, nodes, unreachable, out_dir, cleanup_failed, t0, node_facts)
    finally:
        run.close()
        if not cleaned:
            # Ctrl-C, SIGTERM, a full disk, a bug: kill the run's processes on every node and remove its run
            # directories, whatever stopped the run
            launcher.abort(live, run_id, prep, opts)
            for n in nodes:
                n.close()


@dataclass
class _Shape:
    """What the prepared nodes make of the run: who takes part, the backend, ranks per node, the bounds."""

    prep: runner.Prepared
    participants: list
    backend: str
    nproc: int
    bounds: "plan.Bounds"
    settings: list
    note: str = ""


def _shape(launcher, opts: ProbeOptions, hosts: Sequence[Host], live: list, prep: runner.Prepared,
           progress: Optional[Callable[[str], None]]) -> _Shape:
    """The participants, backend, ranks per node (what an allocation holds), bounds and settings of a run."""
    participants = [n for n in live if n.name not in prep.problems]
    gpus = min((prep.info.get(n.name, {}).get("gpus", 0) for n in participants), default=0)
    backend = opts.backend if opts.backend != "auto" else ("nccl" if gpus > 0 else "gloo")
    given = opts.nproc_per_node or (hosts[0].slots if hosts and hosts[0].slots else None)
    nproc = given or (gpus if backend == "nccl" and gpus else 2)
    note = ""
    if not given:
        nproc, note = launcher.ranks(opts, hosts, participants, nproc)
        if note and progress is not None:
            progress(note)
    if backend == "nccl" and 0 < gpus < nproc:
        fewest = min(participants, key=lambda n: prep.info.get(n.name, {}).get("gpus", 0)).name
        raise UsageError(f"{nproc} ranks per node, but {fewest} has {gpus} NVIDIA GPU(s): NCCL takes one GPU per rank "
                         "(two ranks on one GPU fail with 'Duplicate GPU detected'); use --nproc-per-node "
                         f"{gpus}{' (or fix the hostfile slots)' if not opts.nproc_per_node else ''}, or --backend "
                         "gloo to run more ranks than GPUs")
    settings = plan.build_settings(backend, opts.require_ib, opts.custom, opts.settings_mode,
                                   nnodes=len(participants))
    return _Shape(prep, participants, backend, nproc, plan.bounds(opts.timeout, backend), settings, note)


def _spec(launcher, opts: ProbeOptions, shape: _Shape, setting) -> launch.LaunchSpec:
    """The launch of one setting: its variables (and NCCL's debug log), the worker's arguments, the bounds."""
    prep, b = shape.prep, shape.bounds
    env = dict(setting.env)
    env.update(_debug_env(shape.backend, prep.rundir, setting.name))
    return launch.LaunchSpec(
        run_id=prep.run_id, rundir=prep.rundir, python=opts.python, nproc_per_node=shape.nproc,
        rdzv_host=prep.rdzv_host, rdzv_port=prep.rdzv_port, env=env,
        worker_args=worker_args(opts, shape.backend, b.pg), join_timeout=b.join,
        use_installed=launcher.installed, watchdog=b.watchdog,
    )


def _dry_run(launcher, opts: ProbeOptions, nodes: Sequence, shape: _Shape) -> "ProbeReport":
    """``--dry-run``: every command per setting and place, and the bounds; nothing was contacted."""
    from nccldiag.probe import analysis

    dry: List[Tuple[str, str, str]] = []  # (setting, host, command)
    for setting in shape.settings:
        commands = launcher.commands(_spec(launcher, opts, shape, setting), shape.participants, shape.prep,
                                     shape.bounds)
        dry.extend((setting.name, host, cmd) for host, cmd in commands.items())
    for n in nodes:
        n.close()
    report = analysis.ProbeReport(backend=shape.backend, launcher=opts.launcher, hosts=[n.name for n in nodes],
                                  nproc_per_node=shape.nproc, run_id=shape.prep.run_id)
    report.commands = dry
    report.bounds = shape.bounds.lines()
    report.note = shape.note
    return report


def _run_settings(launcher, opts: ProbeOptions, shape: _Shape, hosts: List[str], keep: "records.Writer",
                  can_run: bool, progress: Optional[Callable[[str], None]],
                  warm: Sequence[str] = ()) -> List[runner.SettingRun]:
    """Every setting in turn (none when a node cannot take part), each run's records and logs kept as they
    arrive; ``warm`` imported once the first setting's ranks are launched."""
    prep = shape.prep
    runs: List[runner.SettingRun] = []
    if can_run:
        try:
            keep.start(records.ProbeMeta(
                backend=shape.backend, launcher=opts.launcher, hosts=hosts, nproc_per_node=shape.nproc,
                timeout=shape.bounds.timeout, require_ib=opts.require_ib, settings=shape.settings,
                loopback=prep.loopback, ifnames=prep.ifnames, iface_speeds=_iface_speeds(prep),
                route_ifnames=_route_ifnames(prep), spec=opts.spec_path))
        except OSError as exc:
            raise UsageError(f"cannot write the run directory {keep.run.path}: {exc.strerror or exc}; nothing ran, "
                             "and the nodes were cleaned up") from None
    with contextlib.closing(keep):  # its records and settings files end with the last setting
        for i, setting in enumerate(shape.settings):
            if not can_run:
                break
            if progress is not None:
                progress(f"setting {i + 1}/{len(shape.settings)}: {setting.name}")
            sr = _run_setting(launcher, opts, shape, setting, keep.record,
                              on_started=(lambda: warm_imports(warm)) if i == 0 and warm else None)
            keep.ended(sr)
            runs.append(sr)
    return runs


def _run_setting(launcher, opts: ProbeOptions, shape: _Shape, setting, on_record,
                 on_started: Optional[Callable[[], None]] = None) -> runner.SettingRun:
    """One setting: its directory on every node, the launch, the records streamed, the reap, the counters."""
    prep, b, nodes = shape.prep, shape.bounds, shape.participants
    spec = _spec(launcher, opts, shape, setting)
    setting_dir = prep.rundir + "/" + setting.name
    commands = launcher.commands(spec, nodes, prep, b)
    prefix = launcher.setting_dir(nodes, prep, setting.name, opts)
    commands = {h: prefix + c for h, c in commands.items()}
    glob = (f"{shlex.quote(prep.rundir)}/{shlex.quote(setting.name)}/nccl.*.log" if shape.backend == "nccl"
            else None)
    sr = runner.run_setting(nodes, commands, setting, b.timeout, grace=b.grace, run_id=prep.run_id,
                            on_record=on_record, log_glob=glob, fanout=opts.fanout,
                            launchers=launcher.starts_on(nodes),
                            after=counters.counters_after(setting_dir) if launcher.counts else None,
                            on_timeout=ras_query(shape.backend, opts.python, spec.env),
                            launched=launcher.launched(nodes, shape.nproc, collectives_of(spec.worker_args)),
                            hostnames=prep.hostnames, on_started=on_started)
    sr.counters = counters.counter_deltas(sr.after)
    return sr


def _report(opts: ProbeOptions, shape: _Shape, runs, nodes, unreachable, out_dir: str, cleanup_failed,
            t0: float, node_facts) -> "ProbeReport":
    from nccldiag.probe import analysis

    prep = shape.prep
    report = analysis.analyze(
        runs=runs, settings=shape.settings, backend=shape.backend, require_ib=opts.require_ib,
        launcher=opts.launcher, hosts=[n.name for n in nodes], unreachable=unreachable, problems=prep.problems,
        loopback=prep.loopback, ifnames=prep.ifnames, nproc_per_node=shape.nproc, out_dir=out_dir if runs else None,
        cleanup_failed=cleanup_failed, elapsed=time.monotonic() - t0, timeout=shape.bounds.timeout,
        run_id=prep.run_id,
        iface_speeds=_iface_speeds(prep), route_ifnames=_route_ifnames(prep), node_facts=node_facts,
    )
    if shape.note:
        report.note = f"{report.note} {shape.note}".strip()
    return analysis.conclude(report, opts.spec)


def validate(opts: ProbeOptions, nnodes: int) -> int:
    """Refuse what the run would refuse later, before any node is contacted; returns the most settings it can run.

    The ``--setting`` rows (their syntax, and a repeat of a built-in row of the
    backend when one is given), the settings mode and ``--collectives``.
    """
    from nccldiag.node import collectives as registry
    from nccldiag.probe import plan

    try:
        registry.select(opts.collectives)
    except ValueError as exc:
        raise UsageError(f"--collectives: {exc}") from None
    backends = [opts.backend] if opts.backend in ("nccl", "gloo") else ["gloo", "nccl"]
    most = 0
    for backend in backends:
        for text in opts.custom:
            plan.parse_row(text)
        if opts.backend in ("nccl", "gloo") or backend == "gloo":
            most = max(most, len(plan.build_settings(backend, opts.require_ib, opts.custom, opts.settings_mode,
                                                     nnodes=nnodes)))
        else:  # auto: the rows NCCL would add, without refusing a row that only NCCL has built in
            most = max(most, len(plan.build_settings(backend, opts.require_ib, (), opts.settings_mode,
                                                     nnodes=nnodes)) + len(opts.custom))
    return most


def _run_bound(opts: ProbeOptions, settings: int) -> int:
    """Seconds the whole run may last at most (each setting its timeout, grace and reap), for the nodes' watchdogs."""
    per = (opts.timeout or 600.0) + 30.0 + plan.RAS_GUARD + 60.0
    return int(per * (settings + 1) + 600)


def collectives_of(args: Sequence[str]) -> Tuple[str, ...]:
    """The collectives the worker's arguments give (``--collectives``); every name when the worker would
    refuse them (a usage error of its own): every name is the bound."""
    from nccldiag.node import collectives as registry

    spec = None
    for i, a in enumerate(args):
        if a == "--collectives" and i + 1 < len(args):
            spec = args[i + 1]
    try:
        return tuple(registry.select(spec))
    except ValueError:
        return tuple(registry.NAMES)


def ras_query(backend: str, python: str, env: Dict[str, str]) -> Optional[str]:
    """The NCCL RAS query a hung NCCL setting gets on its nodes before its ranks are killed (none for gloo,
    or when the setting turned RAS off)."""
    if backend != "nccl" or env.get("NCCL_RAS_ENABLE", "1").strip() == "0":
        return None
    return runner.ras_command(python, env.get("NCCL_RAS_ADDR"))


def _iface_speeds(prep: runner.Prepared) -> Dict[str, Optional[int]]:
    return {h: (prep.info.get(h) or {}).get("iface_speed") for h in prep.info}


def _route_ifnames(prep: runner.Prepared) -> Dict[str, Optional[str]]:
    return {h: (prep.info.get(h) or {}).get("route_iface") for h in prep.info}
