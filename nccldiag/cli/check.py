"""``nccldiag check``: check nodes and report findings (the run itself: :mod:`nccldiag.sessions.check`)."""
from __future__ import annotations

import sys
import time

import click

from nccldiag import rundir
from nccldiag.cli.host import HostCommand, collecting
from nccldiag.cli.options import (
    CONTEXT, areas, causes_option, color_option, host_options, import_torch_option, login_timeout_option,
    slurm_options, transport_option, workers_option,
)
from nccldiag.model.errors import UsageError
from nccldiag.report import outputs
from nccldiag.report.finish import finish
from nccldiag.report.jsonout import plain


@click.command("check", context_settings=CONTEXT)
@host_options
@workers_option
@login_timeout_option
@import_torch_option
@click.option("--bundle", type=click.Path(exists=False, file_okay=False), default=None,
              help="Analyze a saved bundle (from 'nccldiag collect -o DIR') instead of collecting.")
@click.option("--only", multiple=True, metavar="AREA,...", help="Check only these areas.")
@click.option("--skip", multiple=True, metavar="AREA,...", help="Do not check these areas.")
@click.option("--mesh", "mesh_mode", type=click.Choice(["first", "all", "none"]), default="first", show_default=True,
              help="Node-to-node SSH test: from the first node to every other (what mpirun needs), "
                   "between every ordered pair, or none.")
@click.option("--mesh-timeout", type=click.IntRange(1, 300), default=5, show_default=True, metavar="SECONDS",
              help="Node-to-node SSH test: each connection's timeout (a peer that does not answer within it, twice, "
                   "is 'could not tell', never a failure).")
@outputs.options()
@click.option("--run-dir", "run_dir", type=click.Path(file_okay=False), default=None,
              help="Keep this run's results, raw outputs and report here, written as they arrive "
                   "(default $XDG_STATE_HOME/nccldiag/check/<run id>); 'nccldiag report DIR' renders it again.")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default=None,
              help="Also save the raw outputs as a bundle in DIR, each node as it arrives.")
@click.option("--p2p-test", is_flag=True, help="Copy buffers between every GPU pair with torch and time them.")
@click.option("-v", "--verbose", is_flag=True, help="Show ok and skip findings too.")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Compare every node with this site spec and apply its policy ([severity], [thresholds], "
                   "[drain]); default $NCCLDIAG_SPEC. 'nccldiag spec init' writes one (docs/spec.md).")
@causes_option
@transport_option
@slurm_options(old_timeout=True)
@click.option("--local", is_flag=True, help="Check this machine only, without SSH, even inside a Slurm allocation.")
@click.option("--health-check", is_flag=True,
              help="Node health check (Slurm HealthCheckProgram, Prolog, Epilog): this machine, the cheap areas "
                   "unless --only names others, one line of output; exit 0 healthy, 1 failing, 3 not checkable.")
@click.option("--drain", is_flag=True,
              help="Slurm: drain every failing node (scontrol update state=drain reason='nccldiag: ...').")
@click.option("--drain-unchecked", is_flag=True, help="Slurm: with --drain, drain nodes that could not be checked too.")
@click.option("--resume-healthy", is_flag=True,
              help="Slurm: resume nodes that nccldiag drained earlier (reason 'nccldiag: ...') and that pass now.")
@color_option
def check(bundle, only, skip, mesh_mode, mesh_timeout, save_dir, run_dir, p2p_test, verbose, color, local, health_check,
          drain, drain_unchecked, resume_healthy, spec_path, causes_path, **kw):
    """Check nodes: SSH, IOMMU, PCIe ACS, InfiniBand/RoCE, GPUs and P2P, GPUDirect RDMA, limits.

    With no HOSTFILE and no -w, checks this machine without SSH (inside a
    Slurm allocation: the allocation's nodes; --local: this machine).
    """
    from nccldiag.report import check_report
    from nccldiag.report.console import console
    from nccldiag.sessions.check import HEALTH_AREAS, CheckRun, Slurm
    from nccldiag.spec import runs

    t0 = time.monotonic()
    outs = outputs.Outputs.pop(kw)
    outs.validate()
    if drain_unchecked and not drain:
        raise UsageError("--drain-unchecked goes with --drain")
    if health_check:
        local = True
        if not only:
            only = (",".join(HEALTH_AREAS),)
    areas_sel = areas(only, skip)
    spec = runs.from_option(spec_path, causes_path)  # read and validated before any work
    run = rundir.Run.given("check", run_dir)
    extra = ()
    if p2p_test:
        from nccldiag.areas import topology

        extra = topology.p2p_test_sources()
        # importing torch and starting CUDA on every GPU takes its time
        kw["command_timeout"] = max(kw["command_timeout"], 180.0)
    session = CheckRun(run, areas_sel, {"p2p_test": p2p_test}, spec)
    if bundle:
        if kw["hostfiles"] or kw["hosts_exprs"]:
            raise UsageError("--bundle analyzes saved outputs: give no hostfile or -w with it")
        if drain or resume_healthy:
            raise UsageError("--drain and --resume-healthy act on live checks, not on a bundle")
        session.from_bundle(bundle, bool(only))
    else:
        with HostCommand(kw) as target:  # an allocation asked for is released once the nodes are collected
            target.collection_target(local)
            with collecting() as (on_start, on_node):
                session.live(target, target.collect_options(mesh_mode, extra, mesh_timeout), save_dir, target.workers,
                             on_start, on_node)
    report = session.conclude(Slurm(drain, drain_unchecked, resume_healthy, local))
    report.elapsed = time.monotonic() - t0
    # the report without its nodes; each node's part is made as it is written, its facts read back from where
    # they waited, so that the whole report is never held
    doc = plain(check_report.to_json(report, include_nodes=False))
    nodes = check_report.node_entries(report, session.facts)
    if health_check:
        line, code = check_report.health_line(report)
        # the one line is the contract: written whole before anything else can fail, on stderr where stdout
        # cannot take it
        if not check_report.emit_health_line(line):
            check_report.emit_health_line(line, 2)
        finish(doc, outs, nodes=nodes)  # NHC's one line instead of the table; the run directory keeps no report
        sys.exit(code)
    err = console(stderr=True, color=color)

    def kept(failed: str) -> None:
        failed = session.failed or failed
        if failed:
            err.print(f"nccldiag: warning: run directory {run.path}: cannot write: {failed}", markup=False,
                      highlight=False, soft_wrap=True)
        elif not outs.stdout_json:
            err.print(f"run directory: {run.path}", style="muted", markup=False, highlight=False, soft_wrap=True)

    def view(d) -> None:  # the table needs each node's findings, never its facts
        check_report.render(dict(d, nodes=check_report.table_entries(report)), console(color=color), verbose=verbose)

    finish(doc, outs, view, None if session.failed else run.path, kept, nodes=nodes)
    sys.exit(doc["exit_code"])
