"""``HostCommand``: what a command that works on hosts builds once from its options.

The hosts (an inventory, or the nodes of a Slurm allocation asked for on the command line), the
allocation itself as a resource released when the command leaves the ``with`` block (after an error
or Ctrl-C too), the Slurm job the work runs in, the SSH options, the fanout and the Python of the
nodes, and a collection's options made of them. check, collect, spec init, probe and isolate use it;
:func:`collecting` is the progress bar of a collection.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Optional

from nccldiag.cli import options
from nccldiag.model.errors import UsageError


class HostCommand(contextlib.ExitStack):
    """Options read once; :meth:`hosts` or :meth:`collection_target` ask for the allocation, released on exit."""

    def __init__(self, kw: dict):
        super().__init__()
        self.kw = kw
        self.wait = options.alloc_wait(kw)  # both spellings given: a usage error before any work
        self.inv = None
        self.alloc = None
        self.job: Optional[str] = None
        self.transport = kw.get("transport") or "ssh"

    @property
    def fanout(self) -> int:
        return self.kw["fanout"]

    @property
    def python(self) -> str:
        return self.kw["python"]

    @property
    def workers(self) -> Optional[int]:
        """``--workers``: processes an SSH collection is spread over (None: as many as the hosts are worth)."""
        return self.kw.get("workers")

    def ssh(self):
        return options.ssh_options(self.kw)

    def collect_options(self, mesh: str = "none", extra_sources=(), mesh_timeout: int = 5):
        """How :meth:`collection_target`'s hosts are collected: the transport, SSH options, fanout, Python, the
        node-to-node test (none through srun: no SSH at all) and the sources added to the areas'."""
        from nccldiag.collect import runner

        srun = self.transport == "srun"
        opts = runner.CollectOptions(ssh=self.ssh(), fanout=self.fanout, python=self.python,
                                     import_torch=self.kw.get("import_torch", False), mesh="none" if srun else mesh,
                                     mesh_timeout=mesh_timeout, extra_sources=extra_sources)
        if srun:
            opts.transport, opts.slurm_job = "srun", self.job
            opts.alloc = None if self.job else self.request()
        return opts

    def request(self):
        """The allocation the options ask for (``.asked`` False when they ask for none)."""
        return options.alloc_request(self.kw, self.wait)

    def hosts(self):
        """The inventory (None: no hosts given, none allocated); an allocation asked for is made now and
        released when the ``with`` block ends."""
        from nccldiag.slurm import client

        self.inv, self.alloc = options.slurm_inventory(self.kw, self.wait)
        if self.alloc is not None:
            self.enter_context(self.alloc)  # released (scancel) when the command's ``with`` block ends
            self.job = self.alloc.job
        else:
            self.job = client.current_job()
        return self.inv

    def collection_target(self, local: bool = False) -> "HostCommand":
        """The hosts to collect from and how (``transport``: ssh, srun, or local for this machine alone)."""
        if local:
            if self.kw["hostfiles"] or self.kw["hosts_exprs"] or self.transport != "ssh":
                raise UsageError("--local checks this machine: give no hostfile, -w or --transport with it")
            self.transport = "local"
            return self
        self.hosts()
        if self.transport == "srun" and self.inv is None:
            raise UsageError("--transport srun needs nodes: run inside an allocation, give hosts, or ask for an "
                             "allocation (--partition, --nodes, ...)")
        return self


@contextlib.contextmanager
def collecting():
    """A collection's progress bar on stderr, when it is a terminal: ``(on_start(total), on_node(node))``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from nccldiag.report.console import console

    progress = Progress(
        TextColumn("[bold]collecting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=console(stderr=True), transient=True, disable=not sys.stderr.isatty(),
    )
    with progress:
        task = progress.add_task("collect", total=0, last="")

        def on_start(total: int) -> None:
            progress.update(task, total=total)

        def on_node(node) -> None:
            progress.update(task, advance=1, last=node.host + (" (" + node.error["kind"] + ")" if node.error else ""))

        yield on_start, on_node
