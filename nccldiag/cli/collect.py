"""``nccldiag collect``: save the raw outputs of every node as a bundle."""
from __future__ import annotations

import sys

import click

from nccldiag.cli.host import HostCommand, collecting
from nccldiag.cli.options import (
    CONTEXT, areas, host_options, import_torch_option, login_timeout_option, slurm_options, transport_option,
    workers_option,
)
from nccldiag.model.errors import UsageError
from nccldiag.model.findings import clean_text


@click.command("collect", context_settings=CONTEXT)
@host_options
@workers_option
@login_timeout_option
@import_torch_option
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Directory for the bundle: one sub-directory per node, one file per source.")
@click.option("--script", "print_script", is_flag=True, help="Print the script that runs on each node, and exit.")
@click.option("--only", multiple=True, metavar="AREA,...", help="Collect only these areas.")
@click.option("--skip", multiple=True, metavar="AREA,...", help="Do not collect these areas.")
@transport_option
@slurm_options(old_timeout=True)
def collect(out_dir, print_script, only, skip, **kw):
    """Gather raw outputs into a bundle, for 'check --bundle' or a support ticket."""
    from nccldiag.collect import runner
    from nccldiag.sessions.collection import collect as collect_nodes, trust_notes

    areas_sel = areas(only, skip)
    if print_script:
        sys.stdout.write(runner.script_for(areas_sel))
        return
    if not out_dir:
        raise UsageError("collect needs -o DIR (or --script to print the collection script)")
    not_saved: dict = {}
    with HostCommand(kw) as target:
        target.collection_target()
        with collecting() as (on_start, on_node):
            raws, _notes = collect_nodes(target.inv, target.collect_options(), areas_sel, out_dir, target.workers,
                                         not_saved, on_start=on_start, on_node=on_node)
    for note in trust_notes(raws):
        click.echo(clean_text(f"nccldiag: note: {note}"), err=True)
    failed = [r for r in raws if r.error]
    for r in failed:  # what a node (or whatever answered on its address) said: cleaned like every report
        click.echo(clean_text(f"nccldiag: {r.host}: {r.error['message']}"), err=True)
    for host, why in not_saved.items():
        click.echo(clean_text(f"nccldiag: {host}: collected but not saved to {out_dir}: {why}"), err=True)
    saved = len(raws) - len(set(r.host for r in failed) | set(not_saved))
    click.echo(f"collected {saved} of {len(raws)} nodes into {out_dir}", err=True)
    sys.exit(3 if failed or not_saved else 0)
