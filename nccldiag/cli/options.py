"""Options and small helpers shared by the commands; no command lives here."""
from __future__ import annotations

from typing import List, Sequence

import click

from nccldiag.model.errors import UsageError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


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


import_torch_option = click.option(
    "--import-torch", is_flag=True,
    help="Import torch on every node, GPUs or not, to prove the import works "
         "(by default nodes without NVIDIA GPUs only locate it: an import costs seconds).")

color_option = click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
                            show_default=True)


def ssh_options(kw):
    from nccldiag.transport.ssh import SSHOptions

    return SSHOptions(
        config_path=kw["ssh_config"],
        connect_timeout=kw["connect_timeout"],
        auth_timeout=max(kw["connect_timeout"], 5.0),
        command_timeout=kw["command_timeout"],
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


def check_output_file(path, option: str) -> None:
    """Refuse, before any work, an output file that cannot be written (a usage error, exit 2)."""
    import os

    if not path or path == "-":
        return
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory, expected a file name")
    if os.path.exists(path) and not os.path.isfile(path):
        return  # a FIFO or a device such as /dev/stdout is written in place
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot write in {parent}")
