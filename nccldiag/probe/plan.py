"""What a probe runs (pure): the settings matrix and the message-size sweep.

NCCL reads its environment once per process and caches it, so each row of
the matrix is run in fresh processes with its variables in their
environment. The rows are the A/B tests that localise a transport fault:
if the default hangs or corrupts and ``p2p-off`` works, P2P (IOMMU/ACS,
consumer GPUs) is at fault; if ``shm-off`` fails, the intra-node network
path is; ``ib-off`` separates the IB/RoCE fabric from the socket path.

The message sizes themselves are :mod:`nccldiag.node.sizes`, which the
worker uses on the nodes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from nccldiag import rx
from nccldiag.model.errors import UsageError
from nccldiag.node import sizes


class PlanError(UsageError):
    """A --setting row or a size that cannot be used."""


@dataclass(frozen=True)
class Setting:
    """One row of the matrix: a stable ``name``, the variables, why it is there."""

    name: str
    env: Dict[str, str] = field(default_factory=dict)
    why: str = ""
    custom: bool = False
    requires_ib: bool = False  # the row only makes sense if NET/IB is used

    def label(self) -> str:
        """``name (K=V K=V)`` for reports."""
        if not self.env:
            return self.name
        return f"{self.name} ({' '.join(f'{k}={v}' for k, v in self.env.items())})"


# An external net plugin (HPC-X IBext) ignores NCCL_IB_DISABLE, so rows that
# mean "no IB" also force the internal socket transport by name.
_SOCKET = {"NCCL_NET": "Socket"}

NCCL_ROWS: List[Setting] = [
    Setting("default", {}, "what jobs get: NCCL picks every transport itself"),
    Setting("p2p-off", {"NCCL_P2P_DISABLE": "1"},
            "no CUDA P2P between GPUs (NVLink/PCIe): intra-node traffic goes through SHM; "
            "works here but default fails = P2P path broken (IOMMU/ACS, GPUs without P2P)"),
    Setting("shm-off", {"NCCL_SHM_DISABLE": "1"},
            "no shared-memory transport: where P2P is not possible, intra-node traffic uses the network"),
    Setting("ib-off", {"NCCL_IB_DISABLE": "1", **_SOCKET},
            "no IB/RoCE: inter-node traffic over IP sockets; works here but default fails = IB fabric or GDR at fault"),
    Setting("p2p-ib-off", {"NCCL_P2P_DISABLE": "1", "NCCL_IB_DISABLE": "1", **_SOCKET},
            "neither P2P nor IB: the most conservative path (SHM and sockets)"),
]

IB_ROWS: List[Setting] = [
    Setting("ib-gdr", {"NCCL_NET": "IB", "NCCL_NET_GDR_LEVEL": "SYS"},
            "IB forced (no silent socket fallback), GPUDirect RDMA at any GPU-NIC distance",
            requires_ib=True),
    Setting("ib-no-gdr", {"NCCL_NET": "IB", "NCCL_NET_GDR_LEVEL": "LOC"},
            "IB forced, GPUDirect RDMA off (staged through host memory): works here but ib-gdr "
            "fails = nvidia-peermem/DMA-BUF or PCIe path at fault", requires_ib=True),
]

# Two nodes: tree and NVLS-tree busbw can exceed the line rate (nccl-tests#196), so the figure compared
# with the expected bandwidth comes from a ring.
RING_ROW = Setting("ring", {"NCCL_ALGO": "Ring"},
                   "two nodes: tree busbw can exceed the line rate; the ring figure is compared with the expected "
                   "bandwidth")

GLOO_REASON = "NCCL settings do not apply to the gloo backend: one run with the default environment"

_KEY = rx.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PAIR_START = rx.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Values go into the environment (shell-quoted where a shell is involved);
# this allowlist covers every NCCL value form (``^=eth0,eth1``,
# ``allreduce:tree;ring``, ``/path/nccl.%h.%p.log``) and no shell syntax.
_VALUE = rx.compile(r"^[A-Za-z0-9_.,:;=^/+@%~-]*$")
# Variables the launcher itself sets for every rank.
RESERVED = frozenset({
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
    "PYTHONPATH", "NCCLDIAG_RUN", "TORCHELASTIC_RUN_ID",
})


def parse_row(text: str) -> Dict[str, str]:
    """``KEY=VAL[,KEY=VAL]`` -> env. A comma followed by no ``KEY=`` continues the value.

    So ``NCCL_SOCKET_IFNAME==eth0,=eth1,NCCL_IB_DISABLE=1`` keeps the
    interface list whole: NCCL values are comma lists themselves.
    """
    text = text.strip()
    if not text:
        raise PlanError("empty --setting row")
    pairs: List[List[str]] = []
    for part in text.split(","):
        if _PAIR_START.match(part):
            key, _, value = part.partition("=")
            pairs.append([key, value])
        elif pairs:
            pairs[-1][1] += "," + part
        else:
            raise PlanError(f"--setting {text!r}: expected KEY=VALUE, got {part!r}")
    env: Dict[str, str] = {}
    for key, value in pairs:
        if not _KEY.match(key):
            raise PlanError(f"--setting {text!r}: {key!r} is not an environment variable name")
        if key in RESERVED:
            raise PlanError(f"--setting {text!r}: {key} is set by the probe launcher itself")
        if not _VALUE.match(value):
            bad = sorted({c for c in value if not _VALUE.match(c)})
            raise PlanError(f"--setting {text!r}: value of {key} contains {''.join(bad)!r}; "
                            "allowed: letters, digits and . , : ; = ^ / + @ % ~ - _")
        if key in env:
            raise PlanError(f"--setting {text!r}: {key} given twice")
        env[key] = value
    return env


def row_name(env: Dict[str, str]) -> str:
    """A stable, file-name-safe name for a custom row, derived from its content."""
    words = []
    for key, value in env.items():
        short = key[5:] if key.startswith("NCCL_") else key
        words.append(f"{short}={value}".lower())
    name = "+".join(words)
    name = re.sub(r"[^a-z0-9_.=+-]", "_", name)
    return name[:80] or "custom"


def build_settings(
    backend: str,
    require_ib: bool = False,
    custom: Sequence[str] = (),
    mode: str = "all",
    nnodes: int = 0,
) -> List[Setting]:
    """The rows to run, in order. ``mode='default'`` keeps only the default row (plus custom rows).

    With ``nnodes`` 2, NCCL's rows end with :data:`RING_ROW` unless a custom row already is that.
    """
    if mode not in ("all", "default"):
        raise PlanError(f"settings mode {mode!r}: expected 'all' or 'default'")
    if backend == "gloo":
        # custom rows stay: they are what the user asked for (GLOO_* variables, say)
        rows = [Setting("default", {}, GLOO_REASON)]
    elif backend == "nccl":
        rows = list(NCCL_ROWS) if mode == "all" else [NCCL_ROWS[0]]
        if require_ib:
            rows += IB_ROWS
        if nnodes == 2 and mode == "all" and not any(parse_row(t) == RING_ROW.env for t in custom):
            rows.append(RING_ROW)
    else:
        raise PlanError(f"backend {backend!r}: expected nccl or gloo")
    seen = {r.name for r in rows}
    by_env = {tuple(sorted(r.env.items())): r.name for r in rows}
    for text in custom:
        env = parse_row(text)
        key = tuple(sorted(env.items()))
        if key in by_env:
            raise PlanError(f"--setting {text!r} repeats the row {by_env[key]!r}")
        name = "custom-" + row_name(env)
        base, i = name, 2
        while name in seen:
            name, i = f"{base}-{i}", i + 1
        seen.add(name)
        by_env[key] = name
        rows.append(Setting(name, env, f"custom row {text}", custom=True))
    return rows


def parse_size(text: str) -> int:
    """``"1K"`` -> 1024, ``"128M"``, ``"1G"``, ``"4096"`` (see :func:`nccldiag.node.sizes.parse_size`)."""
    try:
        return sizes.parse_size(text)
    except ValueError as exc:
        raise PlanError(str(exc)) from None


RAS_WAIT = 5  # seconds NCCL's RAS may spend gathering the job's state (ncclras's default)
RAS_GUARD = RAS_WAIT + 20  # how much longer a setting's streams live when its hang is queried over RAS first


@dataclass(frozen=True)
class Bounds:
    """Every time bound derived from one ``--timeout`` (seconds), the same for probe and isolate.

    ``timeout``: one setting (or job) on all its nodes; ``pg``: the ranks'
    process-group timeout (a collective that waits longer fails on its own);
    ``join``: the rendezvous' wait for every node to join; ``grace``: how long
    the others may still report once one node's launcher failed;
    ``watchdog``: when the nodes kill the ranks themselves, should nccldiag be
    gone; ``stream``: how long the ranks' output is read when an NCCL hang is
    queried over RAS first; ``launcher``: the launcher's own limit (mpirun
    ``--timeout``; srun's ``--time`` is this, rounded up to minutes).
    """

    timeout: float
    pg: int
    join: int
    grace: float
    watchdog: int
    stream: float
    launcher: int

    def lines(self) -> List[str]:
        """``name: value`` per bound, for ``--dry-run``."""
        return [f"timeout {self.timeout:g} s", f"process group {self.pg} s", f"rendezvous join {self.join} s",
                f"grace after a failure {self.grace:g} s", f"node watchdog {self.watchdog} s",
                f"output read (NCCL hang, RAS query) {self.stream:g} s", f"launcher limit {self.launcher} s"]


def bounds(timeout: Optional[float], backend: str, grace: Optional[float] = None) -> Bounds:
    """The bounds of ``--timeout`` (None: 600 s with NCCL, 120 s with gloo) (pure).

    ``grace``: the grace after a failure when the caller fixes its own
    (isolate's pairs end with their first failure: 5 s); by default the
    process-group timeout plus 10 s, at most 30 s.
    """
    t = float(timeout or (600.0 if backend == "nccl" else 120.0))
    pg = max(5, int(t * 0.5))
    g = float(grace) if grace is not None else min(30.0, pg + 10.0)
    return Bounds(timeout=t, pg=pg, join=max(10, min(60, int(t * 0.25))), grace=g, watchdog=int(t + g + 60),
                  stream=t + (RAS_GUARD if backend == "nccl" else 0), launcher=int(t))
