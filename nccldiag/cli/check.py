"""``nccldiag check``: check nodes and report findings."""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Optional

import click

from nccldiag.cli.options import (
    CONTEXT, areas, color_option, host_options, import_torch_option, inventory, ssh_options,
)
from nccldiag import rundir
from nccldiag.model.errors import UsageError
from nccldiag.report.jsonout import dumps
from nccldiag.report import outputs


def collect_options(kw, mesh_mode: str = "none", extra_sources=()):
    from nccldiag.collect import runner

    return runner.CollectOptions(
        ssh=ssh_options(kw), fanout=kw["fanout"], python=kw["python"], import_torch=kw.get("import_torch", False),
        mesh=mesh_mode, extra_sources=extra_sources,
    )


def run_collection(kw, areas_sel, save_dir: Optional[str], extra_sources=(), mesh_mode="first", not_saved=None,
                   arrived=None):
    """Collect live with a progress bar on a terminal; each node saved as it arrives (and given to ``arrived``)."""
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
            if arrived is not None:
                arrived(node)

        opts = collect_options(kw, mesh_mode, extra_sources)
        inv = inventory(kw)
        raws, notes = session.collect(inv, areas_sel, opts, save_dir, on_start, on_node, not_saved)
        if inv is None and arrived is not None:
            for node in raws:  # this machine: collected in one go
                arrived(node)
        return raws, notes


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
@outputs.options()
@click.option("--run-dir", "run_dir", type=click.Path(file_okay=False), default=None,
              help="Keep this run's results, raw outputs and report here, written as they arrive "
                   "(default $XDG_STATE_HOME/nccldiag/check/<run id>); 'nccldiag report DIR' renders it again.")
@click.option("--save", "save_dir", type=click.Path(file_okay=False), default=None,
              help="Also save the raw outputs as a bundle in DIR, each node as it arrives.")
@click.option("--p2p-test", is_flag=True, help="Copy buffers between every GPU pair with torch and time them.")
@click.option("-v", "--verbose", is_flag=True, help="Show ok and skip findings too.")
@color_option
def check(bundle, only, skip, mesh_mode, save_dir, run_dir, p2p_test, verbose, color, **kw):
    """Check nodes: SSH, IOMMU, PCIe ACS, InfiniBand/RoCE, GPUs and P2P, GPUDirect RDMA, limits.

    With no HOSTFILE and no -w, checks this machine without SSH.
    """
    from nccldiag.check import engine
    from nccldiag.report import check_report
    from nccldiag.report.console import console

    t0 = time.monotonic()
    outs = outputs.Outputs.pop(kw)
    outs.validate()
    areas_sel = areas(only, skip)
    run_dir, run_id = _run_dir(run_dir)
    extra = ()
    if p2p_test:
        from nccldiag.areas import topology

        extra = topology.p2p_test_sources()
        # importing torch and starting CUDA on every GPU takes its time
        kw["command_timeout"] = max(kw["command_timeout"], 180.0)
    options = {"p2p_test": p2p_test}
    if bundle:
        if kw["hostfiles"] or kw["hosts_exprs"]:
            raise UsageError("--bundle analyzes saved outputs: give no hostfile or -w with it")
        from nccldiag.collect import session

        raws, areas_sel = session.from_bundle(bundle, areas_sel, bool(only))
        notes = []
        keep = _Keeper(run_dir, run_id, areas_sel, options, os.path.abspath(bundle))
        for raw in raws:
            keep.node(raw)
    else:
        keep = _Keeper(run_dir, run_id, areas_sel, options, None)
        raws, notes = run_collection(kw, areas_sel, save_dir, extra, mesh_mode, arrived=keep.node)
    keep.close()
    report = engine.analyze(raws, areas_sel, options, judged=keep.judged)
    report.elapsed = time.monotonic() - t0
    report.inventory_notes = notes
    doc = json.loads(dumps(check_report.to_json(report)))
    if not outs.stdout_json:
        with outputs.reader_may_leave():
            check_report.render(report, console(color=color), verbose=verbose)
    if not keep.failed:
        try:
            rundir.save_report(run_dir, doc)
        except OSError as exc:
            keep.failed = f"{exc.strerror or exc}"
    err = console(stderr=True, color=color)
    if keep.failed:
        err.print(f"nccldiag: warning: run directory {run_dir}: cannot write: {keep.failed}", markup=False,
                  highlight=False, soft_wrap=True)
    elif not outs.stdout_json:
        err.print(f"run directory: {run_dir}", style="muted", markup=False, highlight=False, soft_wrap=True)
    outs.write(doc)
    sys.exit(report.exit_code)


def _run_dir(given: Optional[str]):
    """The run directory (checked before any work) and the run's id."""
    from nccldiag.probe.runner import new_run_id

    run_id = new_run_id()
    if given:
        return rundir.prepare(given), run_id
    return os.path.join(rundir.state_dir("check"), run_id), run_id


class _Keeper:
    """Writes the run directory of a check as nodes arrive: raw outputs (a bundle) and one judged line each."""

    def __init__(self, path: str, run_id: str, areas_sel, options, bundle: Optional[str]):
        self.path = path
        self.areas = areas_sel
        self.options = options
        self.bundle = bundle
        self.raw = os.path.join(path, "raw")
        self.indexed = False
        self.judged = {}  # host -> NodeReport, judged once, as it arrived
        self.failed = ""  # why the run directory could not be written, once it could not
        self.lines = None
        try:
            rundir.create(path, {"command": "check", "run_id": run_id, "schema": "nccldiag.check/1",
                                 "areas": [a.NAME for a in areas_sel], "options": options, "bundle": bundle,
                                 "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
            self.lines = rundir.Lines(os.path.join(path, "nodes.jsonl"))
        except OSError as exc:  # the default state directory unwritable: the check runs, unkept
            self.failed = f"{exc.strerror or exc}"

    def node(self, raw) -> None:
        from nccldiag.check import engine
        from nccldiag.collect import sections

        nr = engine.analyze_node(raw, self.areas, self.options)
        self.judged[raw.host] = nr
        if self.failed:
            return
        try:
            if self.bundle is None:
                if not self.indexed:
                    sections.write_bundle_index(self.raw, [], {"transport": raw.extra.get("transport", "ssh"),
                                                               "areas": [a.NAME for a in self.areas]})
                    self.indexed = True
                sections.write_node(self.raw, raw)
            self.lines.add({"host": nr.host, "status": nr.status.value, "reachable": nr.reachable,
                            "elapsed_s": round(nr.elapsed, 3), "findings": [f.to_dict() for f in nr.findings]})
        except OSError as exc:  # a full disk loses the run directory, never the check
            self.failed = f"{exc.strerror or exc}"

    def close(self) -> None:
        if self.lines is not None:
            self.lines.close()
