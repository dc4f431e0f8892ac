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
    """Render the report of a check or probe run from its run directory.

    \b
    nccldiag report ~/.local/state/nccldiag/probe/nccldiag-20261123-ab12cd --html probe.html
    nccldiag report RUN_DIR --json -         the report document on stdout

    A finished run is rendered from its report.json, byte for byte as the live
    run wrote it; a run stopped early (Ctrl-C, a crash) from what it kept.
    Exit codes: those of the run (0, 1, 3); 2 when RUN_DIR is not a run directory.
    """
    from nccldiag.report import rebuild, summary
    from nccldiag.report.console import console

    outs = outputs.Outputs.pop(kw)
    outs.validate()
    from nccldiag.model.findings import clean_text

    doc = rebuild.load(run_dir)
    if not outs.stdout_json:
        with outputs.reader_may_leave():
            # a stored document is a file like any other: every string of it is cleaned before the terminal
            summary.render(clean_text(doc), console(color=color), verbose=verbose)
    outs.write(doc)
    code = doc.get("exit_code")
    sys.exit(code if isinstance(code, int) and 0 <= code <= 4 else 3)
