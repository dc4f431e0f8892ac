"""Options and small helpers shared by the commands; no command lives here."""
from __future__ import annotations

from typing import List, Optional, Sequence

import click

from nccldiag.collect import TRANSPORTS
from nccldiag.model.errors import UsageError
from nccldiag.report.outputs import check_output_file  # noqa: F401  (the commands' check of an output file)

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class LauncherChoice(click.Choice):
    """``--launcher``: one of nccldiag's launchers, or a site's by the dotted path of its module (whose
    ``LAUNCHER`` has what ``probe/launchers/base.Launcher`` names); ``jobs``: it must start isolate's jobs."""

    def __init__(self, choices: Sequence[str], jobs: bool = False) -> None:
        super().__init__(list(choices))
        self.jobs = jobs

    def convert(self, value, param, ctx):
        from nccldiag.model import registry

        if not (isinstance(value, str) and registry.dotted(value)):
            return super().convert(value, param, ctx)
        from nccldiag.probe import launchers

        try:
            launcher = launchers.get(value)
        except (ImportError, AttributeError) as exc:
            self.fail(f"{value}: no launcher there ({exc})", param, ctx)
        if self.jobs and not getattr(launcher, "jobs", False):
            self.fail(f"{value}: its launcher cannot start isolate's jobs", param, ctx)
        return value


def split_csv(values: Sequence[str]) -> List[str]:
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
                     help="Hosts worked on at once (connections, commands, file transfers)."),
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
                     help="Seconds a node may stay silent while it runs a command, counted from when that "
                          "node's command starts; the collection on one node stops at 4 times this in any case."),
        click.option("--python", "python", default="python3", show_default=True, metavar="PATH",
                     help="Python interpreter on the nodes."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


login_timeout_option = click.option(
    "--login-timeout", type=click.FloatRange(1, 86400), default=None,
    help="Seconds a node's login (its shell and startup files, e.g. a ~/.bashrc on a shared home) may take "
         "before the collection script starts; not counted as the script's silence. A node stopped at any "
         "bound is tried once more, on a new connection.  [default: 2 times --command-timeout]")

import_torch_option = click.option(
    "--import-torch", is_flag=True,
    help="Import torch on every node, GPUs or not, to prove the import works "
         "(by default nodes without NVIDIA GPUs only locate it: an import costs seconds).")

spec_option = click.option(
    "--spec", "spec_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
    help="A site spec (default $NCCLDIAG_SPEC): its [severity] applies to every finding, the node keys the "
         "command's own facts tell are judged, and its [bandwidth] and [thresholds] (busbw_share, "
         "isolate_fraction) set the busbw judgement (docs/spec.md).")

causes_option = click.option(
    "--causes", "causes_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
    help="Causes the site adds: a TOML file of [[cause]] rows (a failure line's pattern and what it means), as a "
         "spec's [[cause]] rows are read (docs/spec.md).")

color_option = click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
                            show_default=True)


def ssh_options(kw):
    from nccldiag.transport.ssh import SSHOptions

    return SSHOptions(
        config_path=kw["ssh_config"],
        connect_timeout=kw["connect_timeout"],
        auth_timeout=max(kw["connect_timeout"], 5.0),
        command_timeout=kw["command_timeout"],
        login_timeout=kw.get("login_timeout"),
        accept_new_host_keys=kw["accept_new_host_keys"],
        identity_files=list(kw["identities"]),
    )


def inventory(kw):
    from nccldiag import inventory as inv

    return inv.build(kw["hostfiles"], kw["hosts_exprs"], kw["exclude_exprs"])


def areas(only, skip):
    from nccldiag import areas as registry

    try:
        return registry.select(split_csv(only), split_csv(skip))
    except ValueError as exc:
        raise UsageError(f"--only/--skip: {exc}") from None


ALLOC_WAIT = 60.0  # seconds to wait for a Slurm allocation when --alloc-timeout is not given


def deprecated(old: str, new: str):
    """A click callback for an old spelling that still works: one line on stderr when it is given."""

    def warn(ctx, param, value):
        if value is not None:
            click.echo(f"nccldiag: warning: {old} is deprecated here: use {new}", err=True)
        return value

    return warn


def slurm_options(old_timeout: bool = False):
    """How to run through Slurm: the transport, and an allocation asked for from a login node.

    ``--alloc-timeout`` bounds the wait for that allocation on every command; with ``old_timeout``
    (check, collect, spec init) ``--timeout`` is still read as its deprecated spelling."""

    def deco(f):
        opts = [
            click.option("--partition", default=None, metavar="NAME", help="Slurm: allocate nodes in this partition."),
            click.option("--nodelist", default=None, metavar="NODESET", help="Slurm: allocate these nodes."),
            click.option("--reservation", default=None, metavar="NAME", help="Slurm: allocate in this reservation."),
            click.option("--nodes", "alloc_nodes", type=click.IntRange(1, 100000), default=None,
                         help="Slurm: number of nodes to allocate."),
            click.option("--account", default=None, help="Slurm: charge the allocation to this account."),
            click.option("--qos", default=None, help="Slurm: quality of service of the allocation."),
            click.option("--time", "alloc_time", default=None, metavar="TIME",
                         help="Slurm: time limit of the allocation (salloc's format, e.g. 10 or 0:30:00)."),
            click.option("--alloc-timeout", "alloc_wait", type=click.FloatRange(1, 86400), default=None,
                         metavar="SECONDS",
                         help=f"Slurm: seconds to wait for the allocation to be granted (salloc --immediate).  "
                              f"[default: {ALLOC_WAIT:g}]"),
        ]
        if old_timeout:
            opts.append(click.option("--timeout", "alloc_wait_old", type=click.FloatRange(1, 86400), default=None,
                                     hidden=True, callback=deprecated("--timeout", "--alloc-timeout")))
        for o in reversed(opts):
            f = o(f)
        return f

    return deco


def alloc_wait(kw) -> float:
    """The seconds to wait for a Slurm allocation: ``--alloc-timeout``, or the deprecated ``--timeout`` of
    check, collect and spec init (both given is a usage error), else :data:`ALLOC_WAIT`."""
    new, old = kw.get("alloc_wait"), kw.get("alloc_wait_old")
    if new is not None and old is not None:
        raise UsageError("--timeout is the old name of --alloc-timeout: give one")
    return new if new is not None else old if old is not None else ALLOC_WAIT


transport_option = click.option(
    "--transport", type=click.Choice(list(TRANSPORTS)), default=TRANSPORTS[0], show_default=True,
    help="ssh: one connection per node from here. srun: one Slurm step on every node (no SSH; "
         "inside an allocation, or with --partition/--nodes/... to ask for one).")


def alloc_request(kw, wait: Optional[float] = None):
    from nccldiag.slurm.commands import AllocRequest

    wait = alloc_wait(kw) if wait is None else wait
    return AllocRequest(partition=kw.get("partition"), nodelist=kw.get("nodelist"), reservation=kw.get("reservation"),
                        nodes=kw.get("alloc_nodes"), account=kw.get("account"), qos=kw.get("qos"),
                        time=kw.get("alloc_time"), wait=wait)


def slurm_inventory(kw, wait: Optional[float] = None):
    """``(inventory, allocation)``: hosts from the command line, or from an allocation nccldiag asks Slurm for.

    With any of --partition/--nodelist/--reservation/--nodes/--account/--qos/--time,
    salloc is asked for an allocation (hosts given with -w or a hostfile
    become its node list); the allocation's nodes are the hosts, and the
    caller releases it (``allocation.release()``).
    """
    from nccldiag import inventory as inv_mod
    from nccldiag.slurm import client

    req = alloc_request(kw, wait)
    if not req.asked:
        return inventory(kw), None
    given = inv_mod.build(kw["hostfiles"], kw["hosts_exprs"], kw["exclude_exprs"], environ={})
    if given is not None:
        if req.nodelist:
            raise UsageError("--nodelist and hosts (a hostfile or -w) both name the nodes: give one")
        req.nodelist = ",".join(given.names)
    alloc = client.allocate(req)
    hosts = given if given is not None else inv_mod.build((), [alloc.nodelist], kw["exclude_exprs"], environ={})
    return hosts, alloc


def workers_option(f):
    """``--workers N``: processes the SSH collection is spread over (check and collect)."""
    return click.option(
        "--workers", type=click.IntRange(1, 256), default=None, metavar="N",
        help="Spread the SSH collection over N processes, each with its share of --fanout (default: one per 64 "
             "hosts, at most one per core; 1: this process alone).")(f)
