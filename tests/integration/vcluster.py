"""Drive and read the virtual cluster that ``scripts/vcluster`` builds.

The script owns every side effect (namespaces, bridge, sshd, iptables,
/etc/hosts); this module only calls it and reads the state it leaves in its
state directory, so tests and benchmarks see the same cluster a person at a
shell sees. Every subprocess runs under a timeout.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "vcluster"
STATE_ROOT = Path(os.environ.get("VCLUSTER_STATE_ROOT", "/var/lib/nccldiag-vcluster"))
TAG_BASE = "nccldiag-vcluster"
FAULTS = ("sshd-stop", "sshd-start", "sshd-freeze", "sshd-thaw", "link-down", "link-up", "blackhole", "unblackhole", "rate", "loss",
          "block-ports", "clear")


class VClusterError(RuntimeError):
    """A ``scripts/vcluster`` command failed; the message carries its stderr."""


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> Optional[str]:
    """Why the virtual cluster cannot run here, or None when it can.

    The script's own ``check`` decides (root, each command and the package
    that provides it), so the reason a test is skipped is the one a person
    running the script would read.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root (network namespaces, a bridge, iptables and sshd on port 22)"
    try:
        proc = subprocess.run(
            ["bash", str(SCRIPT), "check"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"scripts/vcluster check could not run: {exc}"
    if proc.returncode != 0:
        return (proc.stderr.strip() or proc.stdout.strip() or f"scripts/vcluster check exited {proc.returncode}")
    return None


@dataclass
class VCluster:
    """One cluster, named by its prefix (namespaces ``<prefix>-<node>``, bridge ``<prefix>br0``).

    ``names`` is the host name stem (``node`` gives node01, node02, ...;
    by default ``node`` for prefix ``ncd``, the prefix for others) and
    ``subnet`` the first three octets of its /24 (by default derived from the
    prefix); clusters that are up at the same time need different prefixes,
    names and subnets.
    """

    prefix: str = "ncd"
    names: Optional[str] = None
    subnet: Optional[str] = None
    no_hosts: bool = False  # the nodes' /etc/hosts names no node (their own names do not resolve)
    second_net: Optional[str] = None  # first three octets of a second network (a second bridge and interface)

    # --- the script -------------------------------------------------------

    def _script(self, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess:
        argv = ["bash", str(SCRIPT), "--prefix", self.prefix]
        if self.names:
            argv += ["--names", self.names]
        if self.subnet:
            argv += ["--subnet", self.subnet]
        if self.no_hosts:
            argv += ["--no-hosts"]
        if self.second_net:
            argv += ["--second-net", self.second_net]
        argv += list(args)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise VClusterError(f"scripts/vcluster {' '.join(args)} did not finish in {timeout:g} s") from None
        if proc.returncode != 0:
            raise VClusterError(f"scripts/vcluster {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def up(self, n: int, timeout: float = 180) -> "VCluster":
        """Bring up ``n`` nodes, replacing whatever this prefix had before."""
        self._script(["up", str(n)], timeout)
        return self

    def down(self, timeout: float = 120) -> None:
        """Remove everything of this prefix; succeeds when nothing is up."""
        self._script(["down"], timeout)

    def fault(self, node: str, action: str, *args: str, timeout: float = 60) -> None:
        """Inject or clear a fault: one of :data:`FAULTS`, with its arguments (``rate``, ``"10mbit"``, ``"all"``)."""
        if action not in FAULTS:
            raise ValueError(f"unknown fault {action!r}; one of {', '.join(FAULTS)}")
        self._script(["fault", node, action, *args], timeout)

    def hostkey_rotate(self, node: str, timeout: float = 60) -> None:
        """Give ``node`` a new host key; known_hosts keeps the old one."""
        self._script(["hostkey-rotate", node], timeout)

    def login(self, mode: str, seconds: Optional[float] = None, timeout: float = 30) -> None:
        """The nodes' logins: ``"plain"``; ``"shared-home"``, each login working ``seconds`` under one lock of
        the shared home (as pyenv's init does), so that logins started together queue; or ``"admin"``, each
        login running the admin's own ~/.bashrc (a copy of the host's) on the shared home."""
        self._script(["login", mode] + ([f"{seconds:g}"] if seconds is not None else []), timeout)

    # --- state ------------------------------------------------------------

    @property
    def state(self) -> Path:
        return STATE_ROOT / self.prefix

    @property
    def is_up(self) -> bool:
        return (self.state / "config").is_file()

    @property
    def ssh_config(self) -> Path:
        """``ssh -F`` file: one Host entry per node, strict host key checking, batch mode."""
        return self.state / "ssh" / "config"

    @property
    def known_hosts(self) -> Path:
        return self.state / "ssh" / "known_hosts"

    @property
    def key(self) -> Path:
        """The client's private key (ed25519, no passphrase), authorized for root on every node."""
        return self.state / "ssh" / "id_ed25519"

    @property
    def hostfile(self) -> Path:
        """One node name per line, in order."""
        return self.state / "hostfile"

    @property
    def hosts(self) -> List[str]:
        return self.hostfile.read_text().split()

    def addresses(self) -> Dict[str, str]:
        """Node name -> IPv4 address, as written to /etc/hosts."""
        out: Dict[str, str] = {}
        for line in (self.state / "hosts.block").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 2:
                out[fields[1]] = fields[0]
        return out

    def address(self, host: str) -> str:
        return self.addresses()[host]

    def bridge_address(self) -> str:
        """The host's address on the cluster bridge (.1 of the subnet)."""
        first = next(iter(self.addresses().values()))
        return first.rsplit(".", 1)[0] + ".1"

    def holder_pid(self, host: str) -> int:
        """The process that keeps the node's UTS and mount namespaces."""
        return int((self.state / "nodes" / host / "holder.pid").read_text())

    def sshd_pid(self, host: str) -> Optional[int]:
        p = self.state / "nodes" / host / "sshd.pid"
        return int(p.read_text()) if p.is_file() else None

    # --- running things ---------------------------------------------------

    def exec(
        self,
        node: str,
        argv: Sequence[str],
        timeout: float = 30,
        input: Optional[str] = None,
        check: bool = False,
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` inside the node's net, UTS and mount namespaces (no SSH)."""
        cmd = ["nsenter", "--target", str(self.holder_pid(node)), "--uts", "--mount", "--net", "--", *argv]
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            check=check,
        )

    def ssh(
        self, node: str, command: str, options: Sequence[str] = (), timeout: float = 30
    ) -> subprocess.CompletedProcess:
        """``ssh -F <ssh_config> [options] node command`` from the host."""
        argv = ["ssh", "-F", str(self.ssh_config), *options, node, command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    # --- what is left -----------------------------------------------------

    def leftovers(self) -> Dict[str, List[str]]:
        """Everything of this prefix still present on the host (all empty after ``down``)."""
        out: Dict[str, List[str]] = {}
        ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
        out["namespaces"] = [l.split()[0] for l in ns.splitlines() if l.startswith(self.prefix + "-")]
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=10).stdout
        names = [re.sub(r"@.*", "", l.split(": ")[1]) for l in links.splitlines() if ": " in l]
        out["links"] = [n for n in names if re.fullmatch(rf"{self.prefix}(br[01]|[vw]\d+)", n)]
        rules = subprocess.run(["iptables", "-w", "10", "-S"], capture_output=True, text=True, timeout=20).stdout
        out["iptables"] = [r for r in rules.splitlines() if f"{TAG_BASE}:{self.prefix}:" in r]
        hosts = Path("/etc/hosts").read_text().splitlines()
        out["etc_hosts"] = [l for l in hosts if l.endswith(f"{TAG_BASE} {self.prefix}")]
        out["processes"] = list(self._processes())
        out["state"] = [str(self.state)] if self.state.exists() else []
        return out

    def _processes(self) -> Iterator[str]:
        """Holders (by argv[0]) and sshds (by config path) of this prefix."""
        holder = f"{TAG_BASE}-holder:{self.prefix}:"
        config = f"{self.state}/nodes/"
        for path in glob.glob("/proc/[0-9]*/cmdline"):
            try:
                with open(path, "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if cmdline.startswith(holder) or (config in cmdline and "sshd" in cmdline):
                yield f"{path.split('/')[2]} {cmdline.strip()}"


def vcluster_fixture(
    n: int = 4,
    prefix: str = "ncd",
    names: Optional[str] = None,
    subnet: Optional[str] = None,
    scope: str = "session",
    no_hosts: bool = False,
    second_net: Optional[str] = None,
):
    """A pytest fixture that brings up ``n`` nodes and takes them down afterwards.

    Skips (with the reason) where the cluster cannot run: not root, or a
    command missing.
    """

    @pytest.fixture(scope=scope)
    def _vcluster() -> Iterator[VCluster]:
        reason = unavailable_reason()
        if reason:
            pytest.skip(f"virtual cluster unavailable: {reason}")
        vc = VCluster(prefix=prefix, names=names, subnet=subnet, no_hosts=no_hosts, second_net=second_net)
        try:
            vc.up(n)
            yield vc
        finally:
            vc.down()

    return _vcluster
