"""``HostCommand``: what a command that works on hosts builds once from its options.

The hosts (an inventory, or the nodes of a Slurm allocation asked for on the command line), the
allocation itself as a resource released when the command leaves the ``with`` block (after an error
or Ctrl-C too), the Slurm job the work runs in, the SSH options, the fanout and the Python of the
nodes. check, collect, spec init, probe and isolate use it.
"""
from __future__ import annotations

import contextlib
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

    def ssh(self):
        return options.ssh_options(self.kw)

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
