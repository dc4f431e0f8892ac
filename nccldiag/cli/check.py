"""``nccldiag check``: check nodes and report findings."""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Dict, Optional

import click

from nccldiag.cli.host import HostCommand
from nccldiag.cli.options import (
    CONTEXT, areas, color_option, host_options, import_torch_option, inventory, login_timeout_option,
    slurm_options, ssh_options, transport_option, workers_option,
)
from nccldiag import rundir
from nccldiag.model.errors import UsageError
from nccldiag.model.findings import clean_text
from nccldiag.report import jsonout
from nccldiag.report.jsonout import plain
from nccldiag.report import outputs
from nccldiag.report.finish import finish


def collect_options(kw, mesh_mode: str = "none", extra_sources=()):
    from nccldiag.collect import runner

    return runner.CollectOptions(
        ssh=ssh_options(kw), fanout=kw["fanout"], python=kw["python"], import_torch=kw.get("import_torch", False),
        mesh=mesh_mode, extra_sources=extra_sources,
    )


# Areas a health check runs by default: those that read files and run status
# commands only (no Python or torch import, no topology matrix).
HEALTH_AREAS = ("system", "iommu", "pcie", "ib", "gdr", "gpu", "gpuhealth", "xid", "limits")


def run_collection(kw, areas_sel, save_dir: Optional[str], extra_sources=(), mesh_mode="first", not_saved=None,
                   target=None, arrived=None, release=True, keeper=None):
    """Collect live with a progress bar on a terminal; each node saved as it arrives (and given to ``arrived``).

    ``target`` is a :class:`~nccldiag.cli.host.HostCommand` whose :meth:`collection_target` chose the hosts
    (without one: the hosts of the options, over SSH).

    With ``release`` each node collected from a host is let go of its outputs once saved and given to
    ``arrived``: the nodes returned are :func:`~nccldiag.model.raw.released` ones, what a report needs of how
    each was reached (its error, its transport's notes), so memory does not grow with what each node sends.
    Without it (a few reference nodes, judged after the collection) the nodes keep their outputs.

    Over SSH with ``release``, the hosts are spread over ``--workers`` processes (default: one per 64 hosts, at
    most one per core); with a ``keeper`` (a check's :class:`_Keeper`, in place of ``arrived``) each node is
    judged and written in its worker and the keeper takes what the run keeps of it."""
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

        if target is not None:
            inv, transport, job = target.inv, target.transport, target.job
        else:
            inv, transport, job = inventory(kw), "ssh", None
        if transport == "srun":
            mesh_mode = "none"  # no SSH at all
        opts = collect_options(kw, mesh_mode, extra_sources)
        if transport == "srun":
            opts.transport, opts.slurm_job = "srun", job
            opts.alloc = None if job else target.request()
        workers = _workers(kw, inv, transport, release)
        if workers > 1:
            return _sharded(inv, areas_sel, opts, save_dir, on_start, on_node, not_saved, keeper, workers)
        if keeper is not None:
            arrived = keeper.node
        raws, notes = session.collect(inv, areas_sel, opts, save_dir, on_start, on_node, not_saved, release=release)
        if inv is None and arrived is not None:
            for node in raws:  # this machine: collected in one go
                arrived(node)
        return raws, notes


def _workers(kw, inv, transport: str, release: bool) -> int:
    """How many worker processes share the SSH collection (1: this process alone)."""
    given = kw.get("workers")
    if inv is None or transport != "ssh" or not release or given == 1:
        return 1
    if given is not None:
        return max(1, min(given, len(inv.hosts)))
    from nccldiag.shards.pool import default_workers

    return default_workers(len(inv.hosts))


def _sharded(inv, areas_sel, opts, save_dir, on_start, on_node, not_saved, keeper, workers):
    """The collection over ``workers`` processes (:mod:`nccldiag.shards`): each node written (the run
    directory's raw outputs, the --save bundle) and, with a ``keeper``, judged in its worker."""
    from nccldiag.collect import runner, session
    from nccldiag.shards import pool

    not_saved = not_saved if not_saved is not None else {}
    script = runner.script_for(areas_sel, opts.extra_sources, opts.mark)
    notes = session.inventory_notes(inv)
    hosts = inv.hosts
    if save_dir:
        session.check_save(save_dir)
        session.index_bundle(save_dir, [h.name for h in hosts], "ssh", [a.NAME for a in areas_sel])
    on_start(len(hosts))
    kept = keeper is not None and not keeper.failed
    from nccldiag.bundle import Bundle

    bundles = ([keeper.raw] if kept and keeper.bundle is None else []) + ([Bundle(save_dir)] if save_dir else [])

    def got(node, judged, unsaved) -> None:
        for d, why in unsaved.items():
            if d == save_dir:
                not_saved[node.host] = why
                notes.append(f"{node.host}: not saved to {save_dir}: {why}")
            elif keeper is not None and not keeper.failed:
                keeper.failed = why
        on_node(node)
        if keeper is not None:
            keeper.take(judged)

    nodes = pool.collect(hosts, script, opts, workers, areas=areas_sel if keeper is not None else None,
                         options=keeper.options if keeper is not None else None,
                         spec=keeper.spec if keeper is not None else None, bundles=bundles, on_node=got)
    return nodes, notes


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
def check(bundle, only, skip, mesh_mode, save_dir, run_dir, p2p_test, verbose, color, local, health_check,
          drain, drain_unchecked, resume_healthy, spec_path, **kw):
    """Check nodes: SSH, IOMMU, PCIe ACS, InfiniBand/RoCE, GPUs and P2P, GPUDirect RDMA, limits.

    With no HOSTFILE and no -w, checks this machine without SSH (inside a
    Slurm allocation: the allocation's nodes; --local: this machine).
    """
    from nccldiag import diagnosis
    from nccldiag.check import engine
    from nccldiag.report import check_report
    from nccldiag.report.console import console

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
    spec = _spec(spec_path)
    run = rundir.Run.given("check", run_dir)
    run_dir = run.path
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

        if drain or resume_healthy:
            raise UsageError("--drain and --resume-healthy act on live checks, not on a bundle")
        raws, areas_sel = session.from_bundle(bundle, areas_sel, bool(only))
        notes = []
        target = None
        keep = _Keeper(run, areas_sel, options, os.path.abspath(bundle), [r.host for r in raws], spec=spec)
        for raw in raws:
            keep.node(raw)
    else:
        with HostCommand(kw) as target:  # an allocation asked for is released once the nodes are collected
            target.collection_target(local)
            keep = _Keeper(run, areas_sel, options, None, _planned_hosts(target),
                           target.transport if target.inv is not None else "local", spec=spec)
            raws, notes = run_collection(kw, areas_sel, save_dir, extra, mesh_mode, target=target, keeper=keep)
    keep.close()
    report = engine.analyze(raws, areas_sel, options, judged=keep.judged, spec=spec)
    report.inventory_notes = list(notes) + trust_notes(raws)
    diagnosis.attach(report, check=report)
    if target is not None and (drain or resume_healthy or target.transport == "srun" or target.alloc is not None
                               or target.job is not None):
        from nccldiag.slurm import feedback

        report.slurm = feedback.run(report, raws, drain, drain_unchecked, resume_healthy,
                                    local_name=_own_slurm_name() if local else None, spec=spec)
    report.elapsed = time.monotonic() - t0
    # the report without its nodes; each node's part is made as it is written, its facts read back from where
    # the keeper put them, so that the whole report is never held
    doc = plain(check_report.to_json(report, include_nodes=False))
    nodes = keep.entries(report)
    if health_check:
        from nccldiag.report.check_report import health_line

        line, code = health_line(report)
        click.echo(line)
        finish(doc, outs, nodes=nodes)  # NHC's one line instead of the table; the run directory keeps no report
        sys.exit(code)
    err = console(stderr=True, color=color)

    def kept(failed: str) -> None:
        failed = keep.failed or failed
        if failed:
            err.print(f"nccldiag: warning: run directory {run_dir}: cannot write: {failed}", markup=False,
                      highlight=False, soft_wrap=True)
        elif not outs.stdout_json:
            err.print(f"run directory: {run_dir}", style="muted", markup=False, highlight=False, soft_wrap=True)

    def view(d) -> None:  # the table needs each node's findings, never its facts
        columns = report.columns
        light = [clean_text(_for_table(jsonout.plain(check_report.node_entry(n, columns, include_facts=False))))
                 for n in report.nodes]
        check_report.render(dict(d, nodes=light), console(color=color), verbose=verbose)

    finish(doc, outs, view, None if keep.failed else run_dir, kept, nodes=nodes)
    sys.exit(doc["exit_code"])


_TABLE_KEYS = ("area", "check", "status", "message", "fix", "host")  # what the table prints of a passed finding


def _for_table(entry: Dict) -> Dict:
    """A node's report entry as the terminal table reads it: a finding that passed or was skipped is printed
    without its evidence or values (:func:`nccldiag.report.findings.render`), so they are not kept for it."""
    entry["findings"] = [f if f.get("status") not in ("ok", "skip") else {k: f.get(k) for k in _TABLE_KEYS}
                         for f in entry.get("findings") or []]
    return entry


def _spec(given: Optional[str]):
    """The site spec of --spec or $NCCLDIAG_SPEC, read and validated before any work (None without one)."""
    from nccldiag.spec import model

    path = model.path_from(given)
    return model.load(path) if path else None


def trust_notes(raws, most: int = 8) -> list:
    """The host keys trusted on first use (--accept-new-host-keys, StrictHostKeyChecking accept-new), one note
    each, shown whatever the verbosity: a key nobody verified is the admin's to check."""
    found = [f"{r.host}: {n}" for r in raws for n in (r.extra.get("notes") or [])
             if isinstance(n, str) and ("trust on first use" in n or n.startswith("trusted "))]
    if len(found) > most:
        found = found[:most] + [f"... and {len(found) - most} more host keys trusted on first use (-v or the "
                                "JSON report names each)"]
    return found


def _planned_hosts(target) -> list:
    """The hosts a live check is to collect, in inventory order (this machine's name without an inventory)."""
    import socket

    inv = target.inv
    return list(inv.names) if inv is not None else [socket.gethostname()]


class _Keeper:
    """Writes the run directory of a check as nodes arrive: raw outputs (a bundle) and one judged line each.

    ``run.json`` and the raw bundle's ``_bundle.json`` name the hosts the run
    was to check, written before the first node arrives.
    """

    def __init__(self, run: "rundir.Run", areas_sel, options, bundle: Optional[str], hosts: list,
                 transport: str = "ssh", spec=None):
        self.run = run
        path = run.path
        self.spec = spec
        self.areas = areas_sel
        self.options = options
        self.bundle = bundle
        self.raw = run.bundle()
        self.judged = {}  # host -> NodeReport, judged once, as it arrived
        from nccldiag.shards.judged import Shared

        self.shared = Shared()  # the texts the nodes repeat, held once
        self.failed = ""  # why the run directory could not be written, once it could not
        self.lines = None
        try:
            run.create({"schema": "nccldiag.check/1", "hosts": list(hosts), "areas": [a.NAME for a in areas_sel],
                        "options": options, "bundle": bundle,
                        "spec": os.path.abspath(spec.path) if spec is not None else None})
            self.lines = run.lines("nodes.jsonl")
            if bundle is None:
                self.raw.start(list(hosts), {"transport": transport, "areas": [a.NAME for a in areas_sel]})
        except OSError as exc:  # the default state directory unwritable: the check runs, unkept
            self.failed = f"{exc.strerror or exc}"
        self.facts = _Spool(path if os.path.isdir(path) else None)

    def node(self, raw) -> None:
        """A node as it arrives: judged, its outputs written, what the run keeps of it taken."""
        from nccldiag.shards import judged

        j = judged.judge(raw, self.areas, self.options, self.spec)
        if not self.failed and self.bundle is None:
            try:
                self.raw.node(raw)
            except OSError as exc:  # a full disk loses the run directory, never the check
                self.failed = f"{exc.strerror or exc}"
        self.take(j)

    def take(self, j) -> None:
        """What the check keeps of a judged node (:class:`nccldiag.shards.judged.Judged`): its findings, the
        summary the cluster areas compare and the facts the diagnoses read; the rest of its facts wait in the
        spool, read back as the report is written."""
        nr = j.node
        self.shared.node(nr)
        self.judged[nr.host] = nr
        self.facts.add(nr.host, j.facts)
        if self.failed:
            return
        try:
            self.lines.add(nr.to_line())
        except OSError as exc:  # a full disk loses the run directory, never the check
            self.failed = f"{exc.strerror or exc}"

    def entries(self, report):
        """``nodes()``: each node's part of the report document, in order, made as it is asked for."""
        from nccldiag.report import check_report

        columns = report.columns

        def nodes():
            for n in report.nodes:
                entry = plain(check_report.node_entry(n, columns, include_facts=False))
                entry["facts"] = self.facts.get(n.host)
                yield entry
                entry = None  # written: let go before the next is made

        return nodes

    def close(self) -> None:
        self.run.close()


class _Spool:
    """Each node's facts as JSON text, by host: in an unnamed temporary file of the run directory (in memory
    where no file can be written), so that a thousand nodes' facts are not held until the report is written."""

    def __init__(self, where: Optional[str]):
        import tempfile

        self.at = {}  # host -> (offset, length) in the file, or the text itself
        self.file = None
        for d in ([where] if where else []) + [None]:
            try:
                self.file = tempfile.TemporaryFile(dir=d)
                break
            except OSError:
                continue
        self.end = 0
        self.writable = self.file is not None

    def add(self, host: str, text: str) -> None:
        data = text.encode()
        if self.writable:
            try:
                self.file.seek(self.end)
                self.file.write(data)
                self.at[host] = (self.end, len(data))
                self.end += len(data)
                return
            except OSError:  # a full disk: what comes next is held
                self.writable = False
        self.at[host] = data

    def get(self, host: str):
        where = self.at.get(host)
        if where is None:
            return {}
        if isinstance(where, tuple):
            self.file.seek(where[0])
            where = self.file.read(where[1])
        return json.loads(where)


def _own_slurm_name() -> Optional[str]:
    import os

    return os.environ.get("SLURMD_NODENAME") or None
