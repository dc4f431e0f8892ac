"""``nccldiag report RUN_DIR``: render a kept run again, in any format, as the live run did."""
from __future__ import annotations

import sys

import click

from nccldiag.cli.options import CONTEXT, color_option
from nccldiag.report import outputs


@click.command("report", context_settings=CONTEXT)
@click.argument("run_dir", type=click.Path(file_okay=False), metavar="RUN_DIR")
@outputs.options()
@click.option("-v", "--verbose", is_flag=True, help="Show ok findings and every evidence line.")
@color_option
def report(run_dir, verbose, color, **kw):
    """Render the report of a check, probe or isolate run from its run directory.

    \b
    nccldiag report ~/.local/state/nccldiag/probe/nccldiag-20261123-ab12cd --html probe.html
    nccldiag report RUN_DIR --json -         the report document on stdout

    A finished run is rendered from its report.json, byte for byte as the live
    run wrote it; a run stopped early (Ctrl-C, a crash) from what it kept.
    Exit codes: those of the run (0, 1, 3); 2 when RUN_DIR is not a run directory.
    """
    from nccldiag.model.errors import UsageError
    from nccldiag.report import rebuild, summary
    from nccldiag.report.console import console
    from nccldiag.report.finish import finish

    outs = outputs.Outputs.pop(kw)
    outs.validate()
    doc = rebuild.load(run_dir)
    try:
        # the view the live run printed, from the same document (finish cleans every string of it first)
        finish(doc, outs, lambda d: summary.render(d, console(color=color), verbose=verbose))
    except ValueError as exc:
        raise UsageError(f"{run_dir}: {exc}") from None
    code = doc.get("exit_code")
    sys.exit(code if isinstance(code, int) and 0 <= code <= 4 else 3)
