"""``--launcher local``: every rank on this machine, torchrun ``--standalone``, the installed nccldiag.

Nothing is staged: the run directory is a new temporary directory here,
removed at the end, and the ranks import the nccldiag installed for this
Python. torch must be installed for it.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import shlex
import shutil
import sys
import tempfile
from typing import Dict, List, Optional

from nccldiag.model.errors import UsageError
from nccldiag.probe import launch
from nccldiag.probe.launchers.base import OverSSH
from nccldiag.probe.launchers.torchrun import Torchrun


def torch_missing(python: str) -> Optional[str]:
    """Why the local launcher cannot run (torch absent for this interpreter), with the install command."""
    if importlib.util.find_spec("torch") is not None:
        return None
    return (f"torch is not installed for {python}, and the probe runs its ranks with it: "
            f"install it with `{python} -m pip install torch` (or `pip install 'nccldiag[probe]'`), then run again")


def local_gpus() -> int:
    return len(glob.glob("/proc/driver/nvidia/gpus/*"))


def command(spec: launch.LaunchSpec, ifname: Optional[str] = None) -> List[str]:
    """argv for all ranks on this machine (``--launcher local``)."""
    return [
        spec.python, "-m", "nccldiag.node.torchrun", "--standalone",
        f"--nproc-per-node={spec.nproc_per_node}", "--max-restarts=0", "--monitor-interval=0.2",
        "-m", "nccldiag.node.worker",
    ] + list(spec.worker_args)


class Local(OverSSH):
    name = "local"
    installed = True
    here = True
    counts = False  # the counters are read before each setting, never compared after it

    def nodes(self, hosts, opts) -> list:
        from nccldiag.transport.nodes import LocalNode

        return [LocalNode()]

    def refuse(self, opts, hosts, nodes) -> None:
        if not getattr(opts, "dry_run", False):
            missing = torch_missing(sys.executable)
            if missing:
                raise UsageError(missing)

    def prepare(self, live, opts, run_id: str, watchdog: int):
        from nccldiag.probe import runner

        if opts.dry_run:
            rundir = os.path.join(tempfile.gettempdir(), f"{run_id}-XXXXXXXX")
        else:
            rundir = tempfile.mkdtemp(prefix=f"{run_id}-")
            try:
                os.mkdir(os.path.join(rundir, launch.TMP), 0o700)
            except OSError:
                shutil.rmtree(rundir, ignore_errors=True)
                raise
        prep = runner.Prepared(run_id, rundir, "127.0.0.1", 0, {live[0].name: None}, {}, {}, {})
        prep.info[live[0].name] = {"torch": True, "gpus": local_gpus()}
        if opts.python == "python3":
            opts.python = sys.executable
        return prep

    def commands(self, spec, nodes, prep, bounds, name: str = "nccldiag-probe") -> Dict[str, str]:
        env = launch.node_env(spec, prep.ifnames.get(nodes[0].name))
        argv = command(spec)
        inner = ("env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " "
                 + " ".join(shlex.quote(a) for a in argv))
        return {nodes[0].name: launch.wrap(inner, spec.rundir, spec.run_id, spec.watchdog)}

    deaths = Torchrun.deaths  # torchrun --standalone's root-cause block: read once for both

    def cleanup(self, nodes, prep, opts) -> Dict[str, str]:
        shutil.rmtree(prep.rundir, ignore_errors=True)
        return {}

    def abort(self, nodes, run_id: str, prep, opts) -> None:
        from nccldiag.probe import runner

        runner.reap_all(nodes, run_id, opts.fanout)
        if prep is not None and not opts.dry_run:
            shutil.rmtree(prep.rundir, ignore_errors=True)


LAUNCHER = Local()
