"""``nccldiag spec``: site specs (``spec init``: derive one from known-good nodes; ``spec show``: validate one)."""
from __future__ import annotations

import os

import click

from nccldiag.cli.options import CONTEXT, areas, host_options, import_torch_option, slurm_options, transport_option
from nccldiag.model.errors import UsageError
from nccldiag.model.findings import clean_text


@click.group("spec", context_settings=CONTEXT)
def spec() -> None:
    """Site specs: what every node should be (docs/spec.md).

    \b
    nccldiag spec init --bundle good-node/ > site.toml
    nccldiag check --spec site.toml hosts.txt
    """


@spec.command("init", context_settings=CONTEXT)
@host_options
@import_torch_option
@click.option("--bundle", type=click.Path(file_okay=False), default=None,
              help="Derive from a saved bundle (nccldiag collect -o DIR, check --save DIR) or a kept check run "
                   "directory, instead of collecting.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the spec to this file (default: standard output).")
@transport_option
@slurm_options(old_timeout=True)
def init(bundle, output, **kw):
    """Write a commented TOML spec derived from known-good nodes.

    The reference nodes are those of HOSTFILE/-w (collected live), of
    --bundle, or this machine. Where they disagree, the key is written
    commented out with every value, and a note on stderr asks you to choose.
    """
    from nccldiag.areas import all_areas
    from nccldiag.check import engine
    from nccldiag.cli.options import check_output_file
    from nccldiag.spec import derive

    check_output_file(output, "--output")
    areas_sel = areas((), ())
    if bundle:
        if kw["hostfiles"] or kw["hosts_exprs"]:
            raise UsageError("--bundle reads saved outputs: give no hostfile or -w with it")
        raws, areas_sel, source = _from_saved(bundle, areas_sel)
    else:
        from nccldiag.cli.host import HostCommand, collecting
        from nccldiag.sessions.collection import collect

        with HostCommand(kw) as target:
            target.collection_target()
            with collecting() as (on_start, on_node):
                raws, _notes = collect(target.inv, target.collect_options(), areas_sel, release=False,
                                       on_start=on_start, on_node=on_node)
        source = "collected live" if target.inv is not None else "collected on this machine"
    report = engine.analyze(raws, areas_sel or all_areas())
    nodes = []
    for n in report.nodes:
        if not n.reachable:
            click.echo(clean_text(f"nccldiag: spec init: {n.host}: not read ({_why(n)}); left out of the spec"), err=True)
            continue
        failing = sorted({f.check for f in n.findings if f.status.value in ("fail", "error")})
        if failing:
            shown = ", ".join(failing[:6]) + (f" and {len(failing) - 6} more" if len(failing) > 6 else "")
            click.echo(f"nccldiag: spec init: warning: {n.host} fails or could not run {len(failing)} check(s) "
                       f"({shown}): the spec holds what this node has; check it before taking it as the reference",
                       err=True)
        nodes.append((n.host, n.facts))
    if not nodes:
        raise UsageError("spec init: no reference node could be read")
    from nccldiag.diagnosis import expected

    derived = derive.derive(nodes, source, derive.line_rates(nodes, expected.expect))
    for note in derived.disagreements:
        click.echo(clean_text(f"nccldiag: spec init: {note}"), err=True)
    if output:
        from nccldiag import atomic

        try:
            atomic.write_text(output, derived.text)
        except OSError as exc:
            raise UsageError(f"--output {output}: cannot write: {exc.strerror or exc}") from None
        click.echo(f"spec with {derived.keys} keys from {len(nodes)} node(s) written to {output}", err=True)
    else:
        click.echo(derived.text, nl=False)


@spec.command("show", context_settings=CONTEXT)
@click.argument("path", type=click.Path(dir_okay=False), required=False)
def show(path):
    """Validate a spec (PATH, else $NCCLDIAG_SPEC) and list what it checks, one key a line."""
    from nccldiag.spec import model

    path = model.path_from(path)
    if not path:
        raise UsageError(f"spec show needs a file (PATH or ${model.ENV})")
    s = model.load(path)
    say = lambda text, err=False: click.echo(clean_text(text), err=err)  # noqa: E731 - keys are the file's text
    for e in s.expects:
        say(f"{s.ref(e.line)}: {e.key} -> {e.field.check}")
    for r in s.severity:
        say(f"{s.ref(r.line)}: [severity] {r.check} = {r.level}")
    for key, (gbps, ref) in s.bandwidth.items():
        say(f"{ref}: [bandwidth] {key} = {gbps:g} GB/s -> the probe's expected busbw")
    for key, (limit, ref) in s.thresholds.items():
        say(f"{ref}: [thresholds] {key} = {limit:g}")
    say(f"{path}: {len(s.expects)} keys, {len(s.severity)} severity rules, {len(s.bandwidth)} bandwidth "
        f"figures, {len(s.thresholds)} thresholds", err=True)


def _why(node) -> str:
    for f in node.findings:
        if f.status.value == "error":
            return f.message
    return "unreachable"


def _from_saved(path: str, areas_sel):
    """The nodes of a bundle, or of a check run directory's raw outputs: ``(raws, areas, what it was)``."""
    from nccldiag import rundir
    from nccldiag.collect import session
    from nccldiag.sessions.check import CheckMeta

    if os.path.exists(os.path.join(path, rundir.META)):
        meta = rundir.read_meta(path)
        if meta.get("command") != "check":
            raise UsageError(f"--bundle {path}: a {meta.get('command')} run directory; spec init reads check runs")
        try:
            raw_dir = CheckMeta.from_json(meta).bundle or os.path.join(path, rundir.RAW)
        except ValueError as exc:
            raise UsageError(f"--bundle {path}/{rundir.META}: {exc}") from None
        raws, sel = session.from_bundle(raw_dir, areas_sel, False)
        return raws, sel, f"from the check run {path}"
    raws, sel = session.from_bundle(path, areas_sel, False)
    return raws, sel, f"from the bundle {path}"
