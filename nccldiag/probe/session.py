"""One ``nccldiag probe`` run from start to end (I/O edge).

connect -> prepare (stage, interfaces, rendezvous port) -> for each setting:
launch, stream records to ``records.jsonl``, kill, fetch NCCL logs ->
analyze (pure) -> report. Every setting runs even when an earlier one hung.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from nccldiag.rundir import Run as RunDir
from nccldiag.inventory import Host
from nccldiag.probe import counters, launch, records, runner
from nccldiag.model.errors import UsageError
from nccldiag.transport.ssh import SSHOptions
from nccldiag.transport.task import fan_out


if TYPE_CHECKING:
    from nccldiag.probe.analysis import ProbeReport


@dataclass
class ProbeOptions:
    launcher: str = "local"
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


def torch_missing(python: str) -> Optional[str]:
    """Why the local launcher cannot run (torch absent for this interpreter), with the install command."""
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        return None
    return (f"torch is not installed for {python}, and the probe runs its ranks with it: "
            f"install it with `{python} -m pip install torch` (or `pip install 'nccldiag[probe]'`), then run again")


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


def run(hosts: Sequence[Host], opts: ProbeOptions,
        progress: Optional[Callable[[str], None]] = None) -> "ProbeReport":
    """One probe run, end to end; returns its report (``--dry-run``: the commands, in ``report.commands``).

    ``progress`` receives a line as each setting starts; nothing is printed here.
    """
    from nccldiag.probe import analysis, plan
    from nccldiag.probe.nodes import LocalNode, SSHNode, connect_all

    t0 = time.monotonic()
    local = opts.launcher == "local"
    if local and not opts.dry_run:
        missing = torch_missing(sys.executable)
        if missing:
            raise UsageError(missing)
    if opts.out_dir and not opts.dry_run:
        if os.path.exists(opts.out_dir) and not os.path.isdir(opts.out_dir):
            raise UsageError(f"-o {opts.out_dir}: exists and is not a directory")
        if os.path.exists(os.path.join(opts.out_dir, "records.jsonl")):
            raise UsageError(f"-o {opts.out_dir}: holds the records of an earlier run; give a new directory")
    most = validate(opts, len(hosts))
    granted = None
    if local:
        nodes = [LocalNode()]
    elif opts.launcher == "srun":
        nodes = slurm_nodes(hosts, opts)
        granted = allocation_grant(opts)
        explicit = opts.nproc_per_node or (hosts[0].slots if hosts and hosts[0].slots else None)
        if granted is not None and explicit:
            fit_allocation(granted, nodes, explicit, True)  # refused here, before any node is contacted
    else:
        nodes = [SSHNode(h, opts.ssh) for h in hosts]
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
    rundir_here: Optional[str] = None
    try:
        if local:
            import tempfile

            rundir = (os.path.join(tempfile.gettempdir(), f"{run_id}-XXXXXXXX") if opts.dry_run
                      else tempfile.mkdtemp(prefix=f"{run_id}-"))
            if not opts.dry_run:
                rundir_here = rundir
                os.mkdir(os.path.join(rundir, launch.TMP), 0o700)
            prep = runner.Prepared(run_id, rundir, "127.0.0.1", 0, {live[0].name: None}, {}, {}, {})
            prep.info[live[0].name] = {"torch": True, "gpus": _local_gpus()}
            if opts.python == "python3":
                opts.python = sys.executable
        elif opts.dry_run:
            # nothing is contacted: the interface and the port are what the run would find out
            prep = runner.Prepared(run_id, os.path.join(opts.shared_dir or "/tmp", run_id), live[0].name, 29400,
                                   {n.name: opts.ifname for n in live}, {}, {}, {n.name: {"torch": True} for n in live},
                                   {n.name: n.name for n in live})
        else:
            prep = runner.prepare(live, opts.python, opts.ifname, opts.shared_dir, timeout=opts.ssh.command_timeout,
                                  run_id=run_id, stage=not opts.dry_run, fanout=opts.fanout,
                                  watchdog=_run_bound(opts, most))
        participants = [n for n in live if n.name not in prep.problems]

        gpus = min((prep.info.get(n.name, {}).get("gpus", 0) for n in participants), default=0)
        backend = opts.backend if opts.backend != "auto" else ("nccl" if gpus > 0 else "gloo")
        given = opts.nproc_per_node or (hosts[0].slots if hosts and hosts[0].slots else None)
        nproc = given or (gpus if backend == "nccl" and gpus else 2)
        grant_note = ""
        if granted is not None and not given:
            nproc, grant_note = fit_allocation(granted, participants, nproc, False)
            if grant_note and progress is not None:
                progress(grant_note)
        timeout = opts.timeout or (600.0 if backend == "nccl" else 120.0)
        pg_timeout = max(5, int(timeout * 0.5))
        settings = plan.build_settings(backend, opts.require_ib, opts.custom, opts.settings_mode,
                                       nnodes=len(participants))

        runs: List[runner.SettingRun] = []
        dry: List[Tuple[str, str, str]] = []  # (setting, host, command) for --dry-run
        can_run = bool(participants) and len(participants) == len(live) and not unreachable
        keep = records.Writer(run)
        if can_run and not opts.dry_run:
            try:
                keep.start(records.ProbeMeta(
                    backend=backend, launcher=opts.launcher, hosts=[n.name for n in nodes], nproc_per_node=nproc,
                    timeout=timeout, require_ib=opts.require_ib, settings=settings, loopback=prep.loopback,
                    ifnames=prep.ifnames, iface_speeds=_iface_speeds(prep), route_ifnames=_route_ifnames(prep),
                    spec=opts.spec_path))
            except OSError as exc:
                raise UsageError(f"cannot write the run directory {out_dir}: {exc.strerror or exc}; nothing ran, "
                                 "and the nodes were cleaned up") from None
        with contextlib.closing(keep):  # its records and settings files end with the last setting
            on_record = keep.record

            grace = min(30.0, pg_timeout + 10.0)
            for i, setting in enumerate(settings):
                env = dict(setting.env)
                env.update(_debug_env(backend, prep.rundir, setting.name))
                spec = launch.LaunchSpec(
                    run_id=prep.run_id, rundir=prep.rundir, python=opts.python, nproc_per_node=nproc,
                    rdzv_host=prep.rdzv_host, rdzv_port=prep.rdzv_port, env=env,
                    worker_args=worker_args(opts, backend, pg_timeout),
                    join_timeout=max(10, min(60, int(timeout * 0.25))), use_installed=local,
                    watchdog=int(timeout + grace + 60),
                )
                commands = build_commands(opts.launcher, spec, participants, prep, timeout, local)
                if opts.dry_run:
                    dry.extend((setting.name, host, cmd) for host, cmd in commands.items())
                    continue
                if not can_run:
                    break
                setting_dir = prep.rundir + '/' + setting.name
                mkdir = (launch.owned_rundir(prep.rundir) + f"mkdir -p {shlex.quote(setting_dir)} && "
                         + counters.counters_before(setting_dir))
                commands = {h: mkdir + c for h, c in commands.items()}
                if progress is not None:
                    progress(f"setting {i + 1}/{len(settings)}: {setting.name}")
                glob = f"{shlex.quote(prep.rundir)}/{shlex.quote(setting.name)}/nccl.*.log" if backend == "nccl" else None
                launchers = None
                if opts.launcher == "srun":
                    from nccldiag.probe.nodes import LaunchHere

                    launchers = [LaunchHere("srun")]
                    commands = {"srun": commands["srun"].replace(mkdir, "")}
                    # the setting's directory on every node first (one step each, fanout at a time)
                    fan_out(participants, lambda n: n.run(launch.owned_rundir(prep.rundir) + f"mkdir -p "
                                                          f"{shlex.quote(prep.rundir + '/' + setting.name)}",
                                                          opts.ssh.command_timeout), opts.fanout)
                sr = runner.run_setting(participants, commands, setting, timeout,
                                        grace=grace, run_id=prep.run_id,
                                        on_record=on_record, log_glob=glob, fanout=opts.fanout,
                                        launchers=launchers,
                                        after=None if local else counters.counters_after(setting_dir),
                                        on_timeout=ras_query(backend, opts.python, env),
                                        launched=launched_by(opts.launcher, participants, nproc, spec.worker_args),
                                        hostnames=prep.hostnames)
                sr.counters = counters.counter_deltas(sr.after)
                keep.ended(sr)
                runs.append(sr)
        if opts.dry_run:
            for n in nodes:
                n.close()
            report = analysis.ProbeReport(backend=backend, launcher=opts.launcher, hosts=[n.name for n in nodes],
                                          nproc_per_node=nproc, run_id=run_id)
            report.commands = dry
            report.note = grant_note
            return report
        node_facts = {}
        if backend == "nccl" and runs:
            from nccldiag.probe import facts

            node_facts = facts.collect(participants, timeout=min(60.0, opts.ssh.command_timeout), fanout=opts.fanout,
                                       keep=keep.facts)
        keep.close()
        # a shared run directory is one directory: the first node removes it
        cleanup_failed = ({} if local else
                          runner.cleanup(live[:1] if opts.shared_dir else live, prep.rundir,
                                         timeout=min(15.0, opts.ssh.command_timeout), fanout=opts.fanout))
        if local:
            import shutil

            shutil.rmtree(prep.rundir, ignore_errors=True)
        cleaned = True
        for n in nodes:
            n.close()
        report = analysis.analyze(
            runs=runs, settings=settings, backend=backend, require_ib=opts.require_ib, launcher=opts.launcher,
            hosts=[n.name for n in nodes], unreachable=unreachable, problems=prep.problems, loopback=prep.loopback,
            ifnames=prep.ifnames, nproc_per_node=nproc, out_dir=out_dir if runs else None, cleanup_failed=cleanup_failed,
            elapsed=time.monotonic() - t0, timeout=timeout, run_id=prep.run_id,
            iface_speeds=_iface_speeds(prep), route_ifnames=_route_ifnames(prep),
            node_facts=node_facts,
        )
        if grant_note:
            report.note = f"{report.note} {grant_note}".strip()
        return analysis.conclude(report, opts.spec)
    finally:
        run.close()
        if not cleaned:
            # Ctrl-C, SIGTERM, a full disk, a bug: kill the run's processes on every node and remove its run
            # directories, whatever stopped the run
            runner.reap_all(live, run_id, opts.fanout)
            if rundir_here is not None:
                import shutil

                shutil.rmtree(rundir_here, ignore_errors=True)
            elif not local:
                runner.cleanup(live[:1] if opts.shared_dir else live, os.path.join(opts.shared_dir or "/tmp", run_id),
                               fanout=opts.fanout)
            for n in nodes:
                n.close()


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
    per = (opts.timeout or 600.0) + 30.0 + RAS_GUARD + 60.0
    return int(per * (settings + 1) + 600)


RAS_GUARD = runner.RAS_WAIT + 20


def launched_by(launcher: str, nodes: Sequence, nproc: int, args: Sequence[str]) -> "results.Launched":
    """The ranks one setting launches, on which node, and the collectives they are given (``--collectives``).

    torchrun and the local launcher: node ``i`` runs ranks ``i*nproc ..``
    and streams them itself. mpirun maps ``nproc`` ranks per node in host
    order and tags each line with its rank; srun lays them out in Slurm's
    node order and labels each line with its task, which is the rank.
    """
    from nccldiag.node import collectives as registry
    from nccldiag.probe import results

    spec = None
    for i, a in enumerate(args):
        if a == "--collectives" and i + 1 < len(args):
            spec = args[i + 1]
    try:
        names = tuple(registry.select(spec))
    except ValueError:  # the worker refuses it (a usage error of its own): every name is the bound
        names = tuple(registry.NAMES)
    if launcher == "srun":
        ordered = sorted(nodes, key=lambda n: (getattr(n, "order", 0), getattr(n, "slurm_name", n.name)))
        return results.Launched(tuple(n.name for n in ordered), nproc, names, tagged="srun")
    return results.Launched(tuple(n.name for n in nodes), nproc, names,
                            tagged="mpirun" if launcher == "mpirun" else None)


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


def _local_gpus() -> int:
    import glob

    return len(glob.glob("/proc/driver/nvidia/gpus/*"))


def allocation_grant(opts: ProbeOptions):
    """What the allocation the probe runs in grants per node, when nccldiag runs inside it (salloc, sbatch);
    None for an allocation nccldiag asked for itself (whole nodes) or when Slurm's variables do not say."""
    from nccldiag.slurm import grant

    return grant.read(os.environ, opts.slurm_job) if opts.slurm_job else None


def fit_allocation(granted, nodes: Sequence, wanted: int, explicit: bool) -> Tuple[int, str]:
    """``(ranks per node, note)`` that the allocation holds on ``nodes``; a count given explicitly that it
    cannot hold is a usage error saying what to ask salloc for."""
    from nccldiag.slurm import grant

    try:
        r = grant.ranks_per_node(granted, [getattr(n, "slurm_name", n.name) for n in nodes], wanted, explicit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return r.count, r.note


def slurm_nodes(hosts: Sequence[Host], opts: ProbeOptions) -> list:
    """The hosts as Slurm nodes (name and NodeAddr), each command an srun step in ``opts.slurm_job``."""
    from nccldiag.slurm.client import resolve_all
    from nccldiag.probe.nodes import SlurmNode
    from nccldiag.slurm import client
    from nccldiag.slurm.nodes import match_hosts

    if not opts.slurm_job:
        raise UsageError("--launcher srun runs inside an allocation: run nccldiag under salloc/sbatch, "
                         "or ask for one with --partition/--nodes/...")
    known = client.show_nodes()
    names = match_hosts([h.name for h in hosts], known, addresses=resolve_all([h.name for h in hosts], known))
    missing = [h.name for h in hosts if h.name not in names]
    if missing:
        raise UsageError(f"--launcher srun: {', '.join(missing[:5])} {'is' if len(missing) == 1 else 'are'} not "
                         "Slurm node(s) (no NodeName, NodeHostName or NodeAddr matches)")
    addr = {n.name: n.addr for n in known}
    order = {n.name: i for i, n in enumerate(known)}
    return [SlurmNode(h, names[h.name], addr.get(names[h.name], ""), opts.slurm_job,
                      order.get(names[h.name], len(known))) for h in hosts]


def build_commands(launcher: str, spec: launch.LaunchSpec, nodes: Sequence, prep: runner.Prepared,
                   timeout: float, local: bool) -> Dict[str, str]:
    """The command each node runs for one setting (printed by --dry-run)."""
    if local:
        env = launch.node_env(spec, prep.ifnames.get(nodes[0].name))
        argv = launch.local_command(spec)
        inner = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + " ".join(shlex.quote(a) for a in argv)
        return {nodes[0].name: launch.wrap(inner, spec.rundir, spec.run_id, spec.watchdog)}
    if launcher == "srun":
        by_hostname = {prep.hostnames.get(n.name, n.name): prep.ifnames.get(n.name) for n in nodes}
        return {"srun": launch.srun_command(spec, [n.slurm_name for n in nodes], by_hostname,
                                            nodes[0].job, timeout)}
    if launcher == "mpirun":
        head = nodes[0]
        by_hostname = {prep.hostnames.get(n.name, n.name): prep.ifnames.get(n.name) for n in nodes}
        cmd, hostfile = launch.mpirun_command(spec, [n.name for n in nodes], by_hostname,
                                              as_root=True, timeout=int(timeout))
        write = f"printf %s {shlex.quote(hostfile)} > {shlex.quote(spec.rundir)}/hostfile && "
        return {head.name: write + cmd}
    return {n.name: launch.torchrun_command(spec, len(nodes), i, prep.ifnames.get(n.name)) for i, n in enumerate(nodes)}
