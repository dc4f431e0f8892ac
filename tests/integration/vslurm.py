"""Drive the real Slurm that ``scripts/vslurm`` starts on a virtual cluster.

munged and slurmctld run on the host, one slurmd in each node's namespaces
under the node's own host name. Every subprocess runs under a timeout.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

import pytest

from tests.integration.vcluster import REPO, VCluster, unavailable_reason

SCRIPT = REPO / "scripts" / "vslurm"
BINARIES = ("munged", "slurmctld", "slurmd", "srun", "salloc", "scontrol", "sinfo", "scancel")


@functools.lru_cache(maxsize=1)
def missing_reason() -> Optional[str]:
    """Why Slurm cannot run here (one reason), or None."""
    missing = [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
    if missing:
        return f"Slurm binaries missing: {', '.join(missing)} (apt-get install munge slurmctld slurmd slurm-client)"
    return unavailable_reason()


class VSlurm:
    def __init__(self, vc: VCluster, ctld_port: Optional[int] = None):
        self.vc = vc
        self.conf = vc.state / "slurm" / "slurm.conf"
        self.ctld_port = ctld_port  # slurmctld listens on the host: clusters up at once need ports of their own

    def _script(self, command: str, timeout: float) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        if self.ctld_port:
            env["VSLURM_CTLD_PORT"] = str(self.ctld_port)
        r = subprocess.run(["bash", str(SCRIPT), "--prefix", self.vc.prefix, command], capture_output=True,
                           text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"vslurm {command}: {r.stderr.strip() or r.stdout.strip()}")
        return r

    def up(self) -> "VSlurm":
        self._script("up", 180)
        return self

    def down(self) -> None:
        self._script("down", 60)

    @property
    def env(self) -> Dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, argv: Sequence[str], timeout: float = 30, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=self.env,
                           stdin=subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(argv)}: {r.stderr.strip()}")
        return r

    def states(self) -> Dict[str, str]:
        """node -> state, without sinfo's flag characters (``idle*``: not responding for a moment after a resume)."""
        out = self.run(["sinfo", "-h", "-N", "-o", "%N %T"]).stdout
        return {k: v.rstrip("*~#!%$@^-") for k, v in (line.split(None, 1) for line in out.splitlines() if line.strip())}

    def reasons(self) -> Dict[str, str]:
        """``sinfo -R`` with the whole reason: node -> reason."""
        out = self.run(["sinfo", "-h", "-R", "-N", "-o", "%n|%E"]).stdout
        return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)

    def set_state(self, node: str, state: str, reason: Optional[str] = None) -> None:
        argv = ["scontrol", "update", f"nodename={node}", f"state={state}"]
        if reason:
            argv.append(f"reason={reason}")
        self.run(argv)

    def restore(self, node: str) -> None:
        """Back to service if drained or down (a node already in service is left as it is)."""
        if self.states().get(node, "idle") not in ("idle", "allocated", "mixed"):
            self.set_state(node, "resume")

    def daemons(self) -> List[str]:
        """munged, slurmctld and slurmd processes of this cluster still alive."""
        path = f"{self.vc.state}/slurm/"
        found = []
        for p in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                cmd = p.read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if path in cmd:
                found.append(f"{p.parent.name} {cmd.strip()}")
        return found


def vslurm_fixture(n: int, prefix: str, subnet: str, scope: str = "module", ctld_port: Optional[int] = None):
    """A virtual cluster of ``n`` nodes with a real Slurm on it, torn down completely afterwards.

    ``ctld_port``: slurmctld's port on the host (default 6817).

    Skips with one reason where Slurm or the cluster cannot run, except under
    CI (``CI=true``), where that is a failure.
    """

    @pytest.fixture(scope=scope)
    def _vslurm() -> Iterator[VSlurm]:
        reason = missing_reason()
        if reason:
            if os.environ.get("CI") == "true":
                pytest.fail(f"CI=true but Slurm cannot run: {reason}")
            pytest.skip(reason)
        vc = VCluster(prefix=prefix, subnet=subnet)
        saved = os.environ.get("SLURM_CONF")
        try:
            vc.up(n)
            s = VSlurm(vc, ctld_port).up()
            os.environ["SLURM_CONF"] = str(s.conf)
            yield s
        finally:
            if saved is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = saved
            try:
                VSlurm(vc).down()
            finally:
                vc.down()

    return _vslurm
