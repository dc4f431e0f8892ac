"""``nccldiag check``: check nodes and report findings."""
from __future__ import annotations

import sys
import time
from typing import Optional

import click

from nccldiag.cli.options import (
    CONTEXT, areas, check_output_file, color_option, host_options, import_torch_option, inventory, ssh_options,
)
from nccldiag.model.errors import UsageError


def collect_options(kw, mesh_mode: str = "none", extra_sources=()):
    from nccldiag.collect import runner

    return runner.CollectOptions(
        ssh=ssh_options(kw), fanout=kw["fanout"], python=kw["python"], import_torch=kw.get("import_torch", False),
        mesh=mesh_mode, extra_sources=extra_sources,
    )


def run_collection(kw, areas_sel, save_dir: Optional[str], extra_sources=(), mesh_mode="first", not_saved=None):
    """Collect live with a progress bar on a terminal; each node saved as it arrives."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from nccldiag.collect import session
    from nccldiag.report.console import console

    progress = Progress(
        TextColumn("[bold]collecting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console(stderr=True), transient=True, disable=not sys.stderr.isatty(),
    )
    with progress:
        task = progress.add_task("collect", total=0, last="")

        def on_start(total: int) -> None:
            progress.update(task, total=total)

        def on_node(node) -> None:
            last = node.host + (" (" + node.error["kind"] + ")" if node.error else "")
            progress.update(task, advance=1, last=last)

        opts = collect_options(kw, mesh_mode, extra_sources)
        return session.collect(inventory(kw), areas_sel, opts, save_dir, on_start, on_node, not_saved)


@click.command("check", context_settings=CONTEXT)
@host_options
@import_torch_option
@click.option("--bundle", type=click.Path(exists=False, file_okay=False), default=None,
              help="Analyze a saved bundle (from 'nccldiag collect -o DIR') instead of collecting.")
@click.option("--only", multiple=True, metavar="AREA,...", help="Check only these areas.")
@click.option("--skip", multiple=True, metavar="AREA,...", help="Do not check these areas.")
@click.option("--mesh", "mesh_mode", type=click.Choice(["first", "all", "none"]), default="first", show_default=True,
              help="Node-to-node SSH test: from the first node to every other (what mpirun needs), "
                   "between every ordered pair, or none.")
@click.option("--json", "json_path", metavar="PATH|-", default=None, help="Write the report as JSON ('-' for stdout).")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default=None,
              help="Also save the raw outputs as a bundle in DIR, each node as it arrives.")
@click.option("--p2p-test", is_flag=True, help="Copy buffers between every GPU pair with torch and time them.")
@click.option("-v", "--verbose", is_flag=True, help="Show ok and skip findings too.")
@color_option
def check(bundle, only, skip, mesh_mode, json_path, save_dir, p2p_test, verbose, color, **kw):
    """Check nodes: SSH, IOMMU, PCIe ACS, InfiniBand/RoCE, GPUs and P2P, GPUDirect RDMA, limits.

    With no HOSTFILE and no -w, checks this machine without SSH.
    """
    from nccldiag.check import engine
    from nccldiag.report import check_report
    from nccldiag.report.console import console
    from nccldiag.report.jsonout import write_json

    t0 = time.monotonic()
    check_output_file(json_path, "--json")
    areas_sel = areas(only, skip)
    extra = ()
    if p2p_test:
        from nccldiag.areas import topology

        extra = topology.p2p_test_sources()
        # importing torch and starting CUDA on every GPU takes its time
        kw["command_timeout"] = max(kw["command_timeout"], 180.0)
    if bundle:
        if kw["hostfiles"] or kw["hosts_exprs"]:
            raise UsageError("--bundle analyzes saved outputs: give no hostfile or -w with it")
        from nccldiag.collect import session

        raws, areas_sel = session.from_bundle(bundle, areas_sel, bool(only))
        notes = []
    else:
        raws, notes = run_collection(kw, areas_sel, save_dir, extra, mesh_mode)
    report = engine.analyze(raws, areas_sel, {"p2p_test": p2p_test})
    report.elapsed = time.monotonic() - t0
    report.inventory_notes = notes
    if json_path != "-":
        check_report.render(report, console(color=color), verbose=verbose)
    if json_path:
        try:
            write_json(check_report.to_json(report), json_path)
        except OSError as exc:
            raise UsageError(f"--json {json_path}: cannot write: {exc.strerror or exc}") from None
    sys.exit(report.exit_code)
