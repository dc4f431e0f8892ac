"""``nccldiag isolate``: name the bad node, link or network path in a constant number of rounds."""
from __future__ import annotations

import os
import sys

import click

from nccldiag.cli.host import HostCommand
from nccldiag.cli.options import (CONTEXT, LauncherChoice, alloc_request, color_option, host_options, slurm_options,
                                  spec_option)
from nccldiag.model.errors import UsageError
from nccldiag.probe import launchers
from nccldiag.report import outputs


@click.command("isolate", context_settings=CONTEXT)
@host_options
@click.option("--launcher", type=LauncherChoice(launchers.isolate_choices(), jobs=True), default=launchers.SSH,
              show_default=True,
              help="ssh: torchrun on each node of a job over SSH. srun: each job one Slurm step inside the "
                   "allocation (one task per rank, no SSH), the jobs of a round side by side. A site's own "
                   "launcher: its module's dotted path (docs/probe.md).")
@click.option("--backend", type=click.Choice(["auto", "nccl", "gloo"]), default="auto", show_default=True,
              help="auto: nccl when the nodes have NVIDIA GPUs, gloo otherwise.")
@click.option("--nproc-per-node", type=click.IntRange(1, 1024), default=1, show_default=True,
              help="Ranks per node in every job.")
@click.option("--net", "nets", multiple=True, metavar="IFACE|CIDR",
              help="Test this network path as its own row: an interface name or an IPv4 network each node "
                   "resolves to its own interface (repeatable; default: the interface that routes to the first host).")
@click.option("--hca", "hcas", multiple=True, metavar="HCA[:PORT]",
              help="With NCCL, test this HCA as its own row (NCCL_IB_HCA; repeatable).")
@click.option("--fraction", type=click.FloatRange(0.01, 1.0), default=None,
              help="A pair fails below this fraction of the median busbw of the healthy pairs on the same row "
                   "[default: the spec's thresholds.isolate_fraction, else 0.5].")
@click.option("--expected-busbw", type=click.FloatRange(0, None), default=None, metavar="GB/s",
              help="A pair also fails below this busbw (the threshold is the larger of the two).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the node order the pairing uses.")
@click.option("--pair-rounds", type=click.IntRange(1, 100000), default=3, show_default=True,
              help="Rounds of disjoint pairs: 3 gives every node three partners; N-1 runs every pair once "
                   "(exhaustive, as an all-pairs matrix).")
@click.option("--size", default=None, help="Message size of each job (default: 1M with gloo, 256M with nccl).")
@click.option("--iters", type=click.IntRange(1, 100000), default=None, help="Timed iterations per job.")
@click.option("--timeout", type=click.FloatRange(5, 86400), default=None,
              help="Seconds one job may run (default 120 with gloo, 600 with nccl); the wait for a Slurm "
                   "allocation is --alloc-timeout.")
@click.option("--rdzv-port", type=click.IntRange(1024, 65535 - 100), default=29400, show_default=True,
              help="First rendezvous port; jobs use this port and the next 99 on their first node.")
@click.option("--no-full", is_flag=True, help="Skip the all-nodes run (and bisection) after every pair passed.")
@click.option("--run-dir", "-o", "--output", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Run directory: run.json, records.jsonl, rounds.jsonl, report.json "
                   "(default $XDG_STATE_HOME/nccldiag/isolate/<run id>).")
@outputs.options()
@slurm_options()
@spec_option
@color_option
def isolate(launcher, backend, nproc_per_node, nets, hcas, fraction, expected_busbw, seed, pair_rounds, size, iters, timeout, rdzv_port,
            no_full, out_dir, color, spec_path, **kw):
    """Name the bad node, link or network path among the hosts.

    Round 0 runs every node alone; rounds 1-3 run every node in disjoint
    pairs (three different partners each); a final round re-tests each
    suspect against nodes already proven good. See docs/isolate.md.
    """
    from nccldiag.isolate import run as isolate_run
    from nccldiag.probe.plan import parse_size
    from nccldiag.report import isolate_report
    from nccldiag.report.console import console
    from nccldiag.spec import runs

    outs = outputs.Outputs.pop(kw)
    outs.validate()
    spec = runs.from_option(spec_path)  # read and validated before any node is contacted
    fraction, fraction_note = runs.isolate_fraction(spec, fraction)
    launchers.refuse_allocation(launcher, alloc_request(kw).asked)
    if hcas and backend == "gloo":
        raise UsageError("--hca needs the nccl backend (NCCL_IB_HCA); gloo has no HCA rows")
    if out_dir:
        from nccldiag import rundir

        out_dir = rundir.prepare(out_dir, "--run-dir")
    host = HostCommand(kw)  # an allocation asked for is released however the run ends (host.close())
    inv = host.hosts()
    made = None
    try:
        if inv is None or len(inv.hosts) < 2:
            raise UsageError("isolate needs at least 2 hosts (a hostfile, -w, or an allocation of 2 nodes or more)")
        if out_dir:
            made = _own_out_dir(out_dir)
        opts = isolate_run.IsolateOptions(
            backend=backend, nproc_per_node=nproc_per_node, nets=list(nets), hcas=list(hcas), fraction=fraction,
            expected_busbw=expected_busbw, seed=seed, pair_rounds=pair_rounds, size=parse_size(size) if size else None,
            iters=iters, timeout=timeout, rdzv_port=rdzv_port, full=not no_full, python=host.python,
            ssh=host.ssh(), out_dir=out_dir, fanout=host.fanout, launcher=launcher, slurm_job=host.job,
        )
        err = console(stderr=True, color=color)
        report = isolate_run.run(inv.hosts, opts, progress=lambda line: err.print(line, style="muted", markup=False))
        made = None
        if spec is not None:
            report.findings.extend(runs.isolate_findings(spec, fraction_note))
            runs.apply_policy(spec, report.findings)
    finally:
        if made is not None:  # nothing was kept in it: leave no empty directory behind
            try:
                os.rmdir(made)
            except OSError:
                pass
        host.close()
    isolate_report.emit(report, console(color=color), outs)
    sys.exit(report.exit_code)


def _own_out_dir(path: str) -> str:
    """Make the ``--run-dir`` directory now, before any node is contacted, so that nobody can make it first
    (or accept the empty one of this user's that :func:`nccldiag.rundir.prepare` checked)."""
    from nccldiag.atomic import Unsafe, own_dir

    existed = os.path.lexists(path)
    try:
        own_dir(path)
    except Unsafe as exc:
        raise UsageError(f"--run-dir {path}: {exc.strerror}") from None
    except OSError as exc:
        raise UsageError(f"--run-dir {path}: cannot create it: {exc.strerror or exc}") from None
    return None if existed else path
