"""``nccldiag log FILE...``: read NCCL logs you already have and say what they show.

Exit codes: 0 the logs parsed and show no failure, 1 they show a failure
(a WARN with an error result, a watchdog timeout, a Socket fallback under
``--require-ib`` ...), 2 usage error (a file that cannot be read, a bad
option). Messages go to stderr; ``--json -`` keeps stdout for JSON alone.
"""
from __future__ import annotations

import contextlib
import gc
import sys
from typing import Dict, Iterator, Sequence

import click

from nccldiag.cli.options import CONTEXT, causes_option
from nccldiag.model.errors import UsageError
from nccldiag.report import outputs


def parse_expect(values: Sequence[str]) -> Dict[str, str]:
    """``--expect KEY=VAL[,KEY=VAL]`` -> dict."""
    env: Dict[str, str] = {}
    for v in values:
        for item in v.split(","):
            item = item.strip()
            if not item:
                continue
            key, sep, val = item.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"--expect {item!r}: expected KEY=VALUE, e.g. NCCL_IB_DISABLE=1")
            env[key.strip()] = val.strip()
    return env


@click.command("log", context_settings=CONTEXT)
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@outputs.options()
@click.option("--require-ib", is_flag=True,
              help="Inter-node traffic must use InfiniBand/RoCE: a Socket fallback fails.")
@click.option("--expect", "expect", multiple=True, metavar="KEY=VAL[,KEY=VAL]",
              help="NCCL variables the job set (e.g. NCCL_IB_DISABLE=1); differing echoed values fail (repeatable).")
@click.option("--channels", "include_channels", is_flag=True, help="Include the channel lines in the JSON (the first 1000; every line is counted).")
@click.option("-v", "--verbose", is_flag=True, help="Show all evidence lines and the skipped checks.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Processes reading several files at once (default: one per core; 1: one process).")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="A site spec (default $NCCLDIAG_SPEC): its [[cause]] rows name failure lines the site knows, and "
                   "its [severity] applies to the log's findings (docs/spec.md).")
@causes_option
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
def log(files, require_ib, expect, include_channels, verbose, color, workers, spec_path, causes_path, **kw):
    """Read NCCL logs (NCCL_DEBUG=INFO) and report versions, networks, transports and failures.

    nccl-tests result tables and perftest outputs in the same files are read
    too: wrong results fail, and their figures are reported. So are NCCL RAS
    reports (ncclras, text or JSON): dead, missing and failed ranks fail.

    \b
    nccldiag log nccl.*.log                 one file per process (NCCL_DEBUG_FILE=nccl.%h.%p.log)
    nccldiag log logs/                      every file of a directory, read in parallel
    nccldiag log job.out --require-ib       a job's stdout; Socket fallback is a failure
    nccldiag log job.out --json -           JSON on stdout

    FILE '-' reads standard input (paste, then Ctrl-D).

    Exit codes: 0 no failure in the logs, 1 the logs show a failure (a
    failing finding or verdict), 2 usage error.
    """
    from nccldiag.report import log_report as report
    from nccldiag.report.console import console
    from nccldiag.report.finish import finish, plain_cleaned
    from nccldiag.sessions import log as session
    from nccldiag.spec import runs

    outs = outputs.Outputs.pop(kw)
    with _collecting_less():
        try:
            outs.validate()
            read = session.run(files, workers, require_ib, parse_expect(expect),
                               runs.from_option(spec_path, causes_path))
            # made plain and cleaned in one walk (finish() would clean it again otherwise)
            doc = plain_cleaned(report.to_json(read.facts, read.findings, read.diagnoses, include_channels,
                                               read.pastes))
            finish(doc, outs, lambda d: report.render(d, console(color=color), verbose=verbose), cleaned=True)
        except UsageError as exc:
            click.echo(f"nccldiag: error: {exc}", err=True)
            sys.exit(2)
    if outs.stdout_json and not read.facts.nccl_lines and not (read.pastes is not None and read.pastes.blocks):
        click.echo(f"nccldiag: {report.no_nccl_lines(read.facts)}", err=True)
    sys.exit(doc["exit_code"])


@contextlib.contextmanager
def _collecting_less() -> Iterator[None]:
    """Python's cyclic collector made to run less often while one ``nccldiag log`` reads and reports: what was
    imported is set aside from its passes (``gc.freeze``), and it runs after 20,000 new containers, not 700;
    both as they were afterwards (the command may run inside another program). Reading a log makes many
    containers that live until the report is written (the parser's records, the report's values), and each
    pass of the collector went over all of them: about 0.1 s of a 200 MiB job stdout's 1.9 s. Cycles are still
    collected, later."""
    threshold = gc.get_threshold()
    gc.freeze()
    if threshold[0]:
        gc.set_threshold(max(threshold[0], 20000), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
