"""Command line: ``nccldiag check | collect | probe | log``.

Exit codes: 0 healthy, 1 unhealthy (a check failed), 2 usage error (bad
option, hostfile or bundle), 3 some host could not be checked. Messages go to
stderr; ``--json -`` keeps stdout for JSON alone.
"""
from __future__ import annotations

import os
import sys
import time
from typing import List, Optional, Sequence

import click

from nccldiag import __version__
from nccldiag.errors import NccldiagError, UsageError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _split_csv(values: Sequence[str]) -> List[str]:
    out: List[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def host_options(f):
    """Options that choose hosts and how to reach them (check, collect, probe)."""
    opts = [
        click.argument("hostfiles", nargs=-1, type=click.Path(dir_okay=False), metavar="[HOSTFILE]..."),
        click.option("-w", "--hosts", "hosts_exprs", multiple=True, metavar="NODESET",
                     help="Hosts as a node-set expression, e.g. 'gpu[001-032,040]' (repeatable)."),
        click.option("-x", "--exclude", "exclude_exprs", multiple=True, metavar="NODESET",
                     help="Leave these hosts out (repeatable)."),
        click.option("--fanout", type=click.IntRange(1, 4096), default=64, show_default=True,
                     help="Hosts contacted at once."),
        click.option("--ssh-config", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="ssh_config file to use instead of ~/.ssh/config."),
        click.option("-i", "--identity", "identities", multiple=True, type=click.Path(dir_okay=False),
                     help="Private key to try first (repeatable)."),
        click.option("--accept-new-host-keys", is_flag=True,
                     help="Trust and save the key of a host not yet in known_hosts (trust on first use). "
                          "A changed key is always refused."),
        click.option("--connect-timeout", type=click.FloatRange(0.5, 600), default=10.0, show_default=True,
                     help="Seconds for TCP connect, SSH banner and key exchange."),
        click.option("--command-timeout", type=click.FloatRange(1, 86400), default=60.0, show_default=True,
                     help="Seconds for the whole collection on one node."),
        click.option("--python", "python", default="python3", show_default=True, metavar="PATH",
                     help="Python interpreter on the nodes that probes use."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


import_torch_option = click.option(
    "--import-torch", is_flag=True,
    help="Import torch on every node, GPUs or not, to prove the import works "
         "(by default nodes without NVIDIA GPUs only locate it: an import costs seconds).")


def _ssh_options(kw):
    from nccldiag.transport.ssh import SSHOptions

    return SSHOptions(
        config_path=kw["ssh_config"],
        connect_timeout=kw["connect_timeout"],
        auth_timeout=max(kw["connect_timeout"], 5.0),
        command_timeout=kw["command_timeout"],
        accept_new_host_keys=kw["accept_new_host_keys"],
        identity_files=list(kw["identities"]),
    )


def _inventory(kw):
    from nccldiag import inventory

    return inventory.build(kw["hostfiles"], kw["hosts_exprs"], kw["exclude_exprs"])


def _areas(only, skip):
    from nccldiag import areas

    try:
        return areas.select(_split_csv(only), _split_csv(skip))
    except ValueError as exc:
        raise UsageError(f"--only/--skip: {exc}") from None


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except NccldiagError as exc:
            click.echo(f"nccldiag: error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("nccldiag: interrupted", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="nccldiag")
def main() -> None:
    """Validate GPU nodes for multi-node training.

    \b
    nccldiag check                 check this machine
    nccldiag check hosts.txt       check every host of a hostfile over SSH
    nccldiag probe hosts.txt       run collective probes across the hosts
    nccldiag log nccl.*.log        read NCCL logs you already have

    Hostfiles: plain, Open MPI (host slots=N), MPICH (host:N), DeepSpeed,
    user@host, node sets (gpu[001-032]). Inside a Slurm allocation the hosts
    default to SLURM_JOB_NODELIST.

    Exit codes: 0 healthy, 1 unhealthy, 2 usage error, 3 a host could not be checked.
    """


def _progress(total: int, enabled: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from nccldiag.report.console import console

    return Progress(
        TextColumn("[bold]collecting"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console(stderr=True),
        transient=True,
        disable=not enabled,
    )


def run_collection(kw, areas_sel, save_dir: Optional[str], extra_sources=(), mesh_mode="first"):
    """Collect raw outputs live (local or SSH), saving each node as it arrives."""
    from nccldiag.collect import runner, sections

    inv = _inventory(kw)
    opts = runner.CollectOptions(
        ssh=_ssh_options(kw), fanout=kw["fanout"], python=kw["python"], import_torch=kw.get("import_torch", False),
        mesh=mesh_mode, extra_sources=extra_sources,
    )
    script = runner.script_for(areas_sel, extra_sources)
    notes = []
    if inv is None:
        node = runner.collect_local(script, opts)
        if save_dir:
            sections.write_bundle_index(save_dir, [node.host], {"transport": "local", "areas": [a.NAME for a in areas_sel]})
            sections.write_node(save_dir, node)
        return [node], notes
    for name, where, first in inv.duplicates:
        notes.append(f"{where}: duplicate host {name} (first at {first}), checked once")
    hosts = inv.hosts
    if save_dir:
        sections.write_bundle_index(
            save_dir, [h.name for h in hosts], {"transport": "ssh", "areas": [a.NAME for a in areas_sel]}
        )
    show = sys.stderr.isatty()
    with _progress(len(hosts), show) as prog:
        task = prog.add_task("collect", total=len(hosts), last="")

        def on_node(node):
            if save_dir:
                sections.write_node(save_dir, node)
            prog.update(task, advance=1, last=node.host + (" (" + node.error["kind"] + ")" if node.error else ""))

        raws = runner.collect_hosts(hosts, script, opts, on_node)
    return raws, notes


@main.command(context_settings=CONTEXT)
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
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
def check(bundle, only, skip, mesh_mode, json_path, save_dir, p2p_test, verbose, color, **kw):
    """Check nodes: SSH, IOMMU, PCIe ACS, InfiniBand/RoCE, GPUs and P2P, GPUDirect RDMA, limits.

    With no HOSTFILE and no -w, checks this machine without SSH.
    """
    from nccldiag import diagnosis
    from nccldiag.collect import sections
    from nccldiag.report import check_report
    from nccldiag.report.console import console

    t0 = time.monotonic()
    areas_sel = _areas(only, skip)
    extra = ()
    if p2p_test:
        from nccldiag.areas import topology

        extra = tuple(getattr(topology, "P2P_TEST_SOURCES", ()))
        # importing torch and starting CUDA on every GPU takes its time
        kw["command_timeout"] = max(kw["command_timeout"], 180.0)
    if bundle:
        if kw["hostfiles"] or kw["hosts_exprs"]:
            raise UsageError("--bundle analyzes saved outputs: give no hostfile or -w with it")
        try:
            raws = sections.read_bundle(bundle)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--bundle {bundle}: {exc}") from None
        if not raws:
            raise UsageError(f"--bundle {bundle}: no node directories in it")
        collected = sections.read_bundle_index(bundle).get("areas")
        if collected and not only:
            areas_sel = [a for a in areas_sel if a.NAME in collected or a.NAME == "system"]
        notes = []
    else:
        raws, notes = run_collection(kw, areas_sel, save_dir, extra, mesh_mode)
    report = diagnosis.analyze(raws, areas_sel, {"p2p_test": p2p_test})
    report.elapsed = time.monotonic() - t0
    report.inventory_notes = notes
    if json_path:
        check_report.write_json(check_report.to_json(report), json_path)
    if json_path != "-":
        check_report.render(report, console(color=color), verbose=verbose)
    sys.exit(report.exit_code)


@main.command(context_settings=CONTEXT)
@host_options
@import_torch_option
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Directory for the bundle: one sub-directory per node, one file per source.")
@click.option("--script", "print_script", is_flag=True, help="Print the script that runs on each node, and exit.")
@click.option("--only", multiple=True, metavar="AREA,...", help="Collect only these areas.")
@click.option("--skip", multiple=True, metavar="AREA,...", help="Do not collect these areas.")
def collect(out_dir, print_script, only, skip, **kw):
    """Gather raw outputs into a bundle, for 'check --bundle' or a support ticket."""
    from nccldiag.collect import runner

    areas_sel = _areas(only, skip)
    if print_script:
        sys.stdout.write(runner.script_for(areas_sel))
        return
    if not out_dir:
        raise UsageError("collect needs -o DIR (or --script to print the collection script)")
    raws, notes = run_collection(kw, areas_sel, out_dir, mesh_mode="none")
    failed = [r for r in raws if r.error]
    for r in failed:
        click.echo(f"nccldiag: {r.host}: {r.error['message']}", err=True)
    click.echo(f"collected {len(raws) - len(failed)} of {len(raws)} nodes into {out_dir}", err=True)
    sys.exit(3 if failed else 0)


def _register_optional() -> None:
    """Commands living in their own modules."""
    for mod, attr in (("nccldiag.cli_log", "log_command"), ("nccldiag.cli_probe", "probe_command")):
        try:
            module = __import__(mod, fromlist=[attr])
        except ImportError:
            continue
        cmd = getattr(module, attr, None)
        if cmd is not None:
            main.add_command(cmd)


_register_optional()
