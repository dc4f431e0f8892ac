"""Command line: ``nccldiag check | collect | probe | isolate | log | report``.

Each command lives in its own module and is registered here, explicitly (:data:`COMMANDS`); a command's module is
imported when the command is looked up, so ``nccldiag log`` does not import what ``check`` or ``isolate`` needs.
Exit codes: 0 healthy, 1 unhealthy (a check failed), 2 usage error (bad
option, hostfile or bundle), 3 some host could not be checked, 4 nccldiag itself
failed (an internal error, never a verdict). Messages go to
stderr; ``--json -`` keeps stdout for JSON alone.
"""
from __future__ import annotations

import errno
import importlib
import io
import os
import signal
import sys
from typing import Dict, Optional

import click

from nccldiag import __version__
from nccldiag.cli.options import CONTEXT
from nccldiag.model.errors import NccldiagError
from nccldiag.model.findings import EXIT_INTERNAL, clean_text


class Terminated(KeyboardInterrupt):
    """SIGTERM: handled as Ctrl-C is (queued work cancelled, the run's processes and directories removed)."""

    code, said = 143, "terminated"


class HungUp(Terminated):
    """SIGHUP (the terminal or the SSH session that ran nccldiag went away): handled as SIGTERM is."""

    code, said = 129, "hung up (SIGHUP)"


def _on_sigterm(signum, frame):
    raise HungUp() if signum == signal.SIGHUP else Terminated()


# What a stdout that takes no more says: a full disk, a quota, a file too large, an I/O error.
_STDOUT_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


class _Stdout(io.TextIOBase):
    """``sys.stdout`` while a command runs: once it cannot take more (``nccldiag check > file`` on a full
    disk), what it could not take is lost with one warning on stderr, and the run goes on: the run
    directory and the report files are written and the exit code is the run's (it was an internal error,
    exit 4). A reader that closed the pipe is still :func:`nccldiag.report.outputs.reader_may_leave`'s."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.lost: Optional[str] = None

    def _guard(self, call, *args):
        if self.lost is not None:
            return len(args[0]) if args else None
        try:
            return call(*args)
        except OSError as exc:
            if exc.errno not in _STDOUT_FULL:
                raise
            self.lost = exc.strerror or str(exc)
            try:  # what the buffer still holds goes nowhere, at exit too
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, self.inner.fileno())
                os.close(null)
                self.inner.flush()
            except (OSError, ValueError):
                pass
            click.echo(f"nccldiag: warning: stdout: {self.lost}: the rest of the output to stdout is lost; the run "
                       "directory and any report files are still written", err=True)
            return len(args[0]) if args else None

    def write(self, text):
        return self._guard(self.inner.write, text)

    def flush(self):
        return self._guard(self.inner.flush)

    def writable(self):
        return True

    def isatty(self):
        return self.inner.isatty()

    def fileno(self):
        return self.inner.fileno()

    @property
    def encoding(self):
        return self.inner.encoding

    @property
    def errors(self):
        return self.inner.errors

    @property
    def buffer(self):
        return self.inner.buffer


class _Group(click.Group):
    def invoke(self, ctx):
        for signum in (signal.SIGTERM, signal.SIGHUP):  # one ignored (nohup) stays ignored
            try:
                if signal.getsignal(signum) is signal.SIG_DFL:
                    signal.signal(signum, _on_sigterm)
            except ValueError:  # not the main thread (embedded use): the signal keeps its default
                pass
        real = sys.stdout
        sys.stdout = _Stdout(real)
        try:
            try:
                return super().invoke(ctx)
            finally:
                try:
                    sys.stdout.flush()
                except BrokenPipeError:  # the reader left after the table: nothing more is for it
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, real.fileno())
                    os.close(null)
                finally:
                    sys.stdout = real
        except NccldiagError as exc:
            # a message may quote a file's name or words: cleaned as every printed string is
            click.echo(f"nccldiag: error: {clean_text(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            # a second Ctrl-C during clean-up lands here too: no traceback either way
            term = isinstance(exc, Terminated)
            try:  # after a hang-up the terminal may take nothing more
                click.echo(f"nccldiag: {exc.said}" if term else "nccldiag: interrupted", err=True)
            except OSError:
                pass
            ctx.exit(exc.code if term else 130)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # a bug in nccldiag: never reported as a verdict on a node
            if os.environ.get("NCCLDIAG_DEBUG"):
                raise
            click.echo(f"nccldiag: internal error ({type(exc).__name__}: {clean_text(str(exc)[:300])}); this is a bug in "
                       "nccldiag, not a finding about any node. NCCLDIAG_DEBUG=1 shows the traceback.", err=True)
            ctx.exit(EXIT_INTERNAL)


@click.group(cls=_Group, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="nccldiag")
def main() -> None:
    """Validate GPU nodes for multi-node training.

    \b
    nccldiag check                 check this machine
    nccldiag check hosts.txt       check every host of a hostfile over SSH
    nccldiag probe hosts.txt       run collective probes across the hosts
    nccldiag isolate hosts.txt     name the bad node, link or network path
    nccldiag log nccl.*.log        read NCCL logs you already have
    nccldiag report RUN_DIR        render a kept run again (--html, --junit, --prom, --json)
    nccldiag spec init --bundle D  write a site spec from known-good nodes (check --spec FILE)

    Hostfiles: plain, Open MPI (host slots=N), MPICH (host:N), DeepSpeed,
    user@host, node sets (gpu[001-032]). Inside a Slurm allocation the hosts
    default to SLURM_JOB_NODELIST.

    Exit codes: 0 healthy, 1 unhealthy, 2 usage error, 3 a host could not be checked,
    4 nccldiag itself failed (a bug).
    """


class _Commands(dict):
    """The group's commands: each name of :data:`COMMANDS` bound to its command once its module is imported, on
    the first look-up (``dict`` for click, which reads ``Group.commands`` as one)."""

    def __init__(self, where: Dict[str, str]) -> None:
        super().__init__((name, None) for name in where)
        self.where = where

    def __getitem__(self, name):
        cmd = dict.__getitem__(self, name)
        if cmd is None:
            module, _, attr = self.where[name].partition(":")
            cmd = getattr(importlib.import_module(module), attr)
            dict.__setitem__(self, name, cmd)
        return cmd

    def get(self, name, default=None):
        return self[name] if name in self else default

    def values(self):
        return [self[name] for name in self]

    def items(self):
        return [(name, self[name]) for name in self]


# every command, in the order --help lists them, and where it lives
COMMANDS = {"check": "nccldiag.cli.check:check", "collect": "nccldiag.cli.collect:collect",
            "probe": "nccldiag.cli.probe:probe", "isolate": "nccldiag.cli.isolate:isolate",
            "log": "nccldiag.cli.log:log", "report": "nccldiag.cli.report:report", "spec": "nccldiag.cli.spec:spec"}
main.commands = _Commands(COMMANDS)
