"""Command line: ``nccldiag check | collect | probe | log``.

Each command lives in its own module and is registered here, explicitly.
Exit codes: 0 healthy, 1 unhealthy (a check failed), 2 usage error (bad
option, hostfile or bundle), 3 some host could not be checked. Messages go to
stderr; ``--json -`` keeps stdout for JSON alone.
"""
from __future__ import annotations

import click

from nccldiag import __version__
from nccldiag.cli import check, collect, log, probe
from nccldiag.cli.options import CONTEXT
from nccldiag.model.errors import NccldiagError


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


main.add_command(check.check)
main.add_command(collect.collect)
main.add_command(probe.probe)
main.add_command(log.log)
