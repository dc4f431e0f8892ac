"""``nccldiag probe``: collective probes across hosts, one setting at a time."""
from __future__ import annotations

import os
import sys
from typing import Optional

import click

from nccldiag.cli.host import HostCommand
from nccldiag.cli.options import (
    CONTEXT, LauncherChoice, alloc_request, causes_option, color_option, host_options, slurm_options, spec_option,
    ssh_options,
)
from nccldiag.probe import launchers
from nccldiag.report import outputs


def _parse_size(value: Optional[str]) -> Optional[int]:
    from nccldiag.probe.plan import parse_size

    return None if value is None else parse_size(value)


@click.command("probe", context_settings=CONTEXT)
@host_options
@click.option("--launcher", type=LauncherChoice(launchers.probe_choices()), default="auto",
              show_default=True,
              help="auto: local without hosts, torchrun with hosts. srun: one Slurm task per rank, "
                   "every command an srun step (no SSH). clush: torchrun on every node, started by one clush. "
                   "A site's own launcher: its module's dotted path (docs/probe.md).")
@click.option("--backend", type=click.Choice(["auto", "nccl", "gloo"]), default="auto", show_default=True,
              help="auto: nccl when the nodes have NVIDIA GPUs, gloo otherwise.")
@click.option("--nproc-per-node", type=click.IntRange(1, 1024), default=None,
              help="Ranks per node (default: hostfile slots, else one per GPU, else 2 with gloo).")
@click.option("--ib", is_flag=True, help="Require the InfiniBand/RoCE path (NET/IB) and add IB settings.")
@click.option("--setting", "custom", multiple=True, metavar="KEY=VAL[,KEY=VAL]",
              help="Add a row to the settings matrix (repeatable).")
@click.option("--settings", "settings_mode", type=click.Choice(["all", "default"]), default="all", show_default=True,
              help="'default' runs only the default row (plus --setting rows).")
@click.option("--collectives", default=None, metavar="NAME,...", help="Collectives to run (default: all).")
@click.option("--min-bytes", default=None, help="Smallest message size (e.g. 1K).")
@click.option("--max-bytes", default=None, help="Largest message size (e.g. 1G).")
@click.option("--factor", type=click.IntRange(2, 1024), default=None, help="Size step factor.")
@click.option("--iters", type=click.IntRange(1, 100000), default=None, help="Timed iterations per size.")
@click.option("--timeout", "timeout", type=click.FloatRange(5, 86400), default=None,
              help="Seconds for one setting on all nodes (default 120 with gloo, 600 with nccl); the wait for a "
                   "Slurm allocation is --alloc-timeout.")
@click.option("--ifname", default=None, help="Socket interface for gloo/NCCL bootstrap (default: the one routing to rank 0's host).")
@click.option("--shared-dir", default=None, type=click.Path(file_okay=False),
              help="A directory every node shares (NFS): stage the worker once there.")
@click.option("--dry-run", is_flag=True, help="Print every command per node, run nothing.")
@click.option("--run-dir", "-o", "--output", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Run directory: records.jsonl, settings.jsonl, NCCL logs and report.json, written as they arrive "
                   "(default $XDG_STATE_HOME/nccldiag/probe/<run id>, i.e. ~/.local/state/nccldiag/probe/...); "
                   "'nccldiag report DIR' renders it again.")
@outputs.options()
@click.option("-v", "--verbose", is_flag=True, help="Show every evidence line and the checks that passed.")
@slurm_options()
@spec_option
@causes_option
@color_option
def probe(launcher, backend, nproc_per_node, ib, custom, settings_mode, collectives, min_bytes, max_bytes,
                  factor, iters, timeout, ifname, shared_dir, dry_run, out_dir, verbose, color, spec_path,
                  causes_path, **kw):
    """Run verified, timed collective probes under a matrix of NCCL settings.

    Each setting runs in fresh processes on every node, bounded by --timeout;
    afterwards every process of the run is killed on every node.
    """
    from nccldiag.spec import model

    outs = outputs.Outputs.pop(kw)
    outs.validate()
    kw["spec"] = model.load_given(spec_path, causes_path)  # read and validated before any node is contacted
    if out_dir and not dry_run:
        from nccldiag import rundir

        rundir.prepare(out_dir, "--run-dir")
    launchers.refuse_allocation(launcher, alloc_request(kw).asked)
    with HostCommand(kw) as host:  # an allocation asked for is released however the probe ends
        _probe(host.hosts(), host.job, launcher, backend, nproc_per_node, ib, custom, settings_mode, collectives,
               min_bytes, max_bytes, factor, iters, timeout, ifname, shared_dir, dry_run, out_dir, verbose, color,
               outs, kw)


def _probe(inv, job, launcher, backend, nproc_per_node, ib, custom, settings_mode, collectives, min_bytes, max_bytes,
           factor, iters, timeout, ifname, shared_dir, dry_run, out_dir, verbose, color, outs, kw):
    from nccldiag.probe import session

    launcher = launchers.chosen(launcher, inv.hosts if inv is not None else None)
    opts = session.ProbeOptions(
        launcher=launcher,
        backend=backend,
        nproc_per_node=nproc_per_node,
        require_ib=ib,
        custom=list(custom),
        settings_mode=settings_mode,
        collectives=collectives,
        min_bytes=_parse_size(min_bytes),
        max_bytes=_parse_size(max_bytes),
        factor=factor,
        iters=iters,
        timeout=timeout,
        ifname=ifname,
        shared_dir=shared_dir,
        python=kw["python"],
        ssh=ssh_options(kw),
        out_dir=out_dir,
        dry_run=dry_run,
        fanout=kw["fanout"],
        slurm_job=job,
        spec_path=os.path.abspath(kw["spec"].path) if kw.get("spec") is not None else None,
        spec=kw.get("spec"),
    )
    from nccldiag.report.console import console

    err = console(stderr=True, color=color)
    hosts = inv.hosts if inv is not None else []
    report = session.run(hosts, opts, progress=lambda line: err.print(line, style="muted", markup=False),
                         warm=("nccldiag.report.probe_report",))
    from nccldiag.report import probe_report

    out = console(color=color)
    if report.commands is not None:
        probe_report.render_commands(report, out)
        sys.exit(0)
    probe_report.emit(report, out, outs, verbose=verbose)
    sys.exit(report.exit_code)
