"""The probe worker: runs in every rank, verifies and times each collective.

Started by torchrun (``python -m torch.distributed.run ... -m
nccldiag.node.worker``), which sets RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/
MASTER_PORT, or by mpirun with ``--bootstrap mpi``, where the worker derives
them itself. It is staged onto nodes, so it needs the standard library,
torch, mpi4py (MPI bootstrap only) and ``nccldiag.node`` only.

Every rank writes JSON lines, flushed as they happen, one ``write`` each so
ranks sharing a pipe or file do not interleave inside a line:

- ``start``: who and where (host, ranks, versions, device, address used);
- ``progress`` before each phase and size, so a rank that hangs names the
  collective and size it is in;
- ``result``: ``phase`` ``check`` (correctness, ``wrong`` = mismatching
  elements like nccl-tests' ``#wrong``), ``sweep`` (time, algbw, busbw of
  the slowest rank) or ``bootstrap`` (the MPI sanity allreduce);
- ``error`` (setup failures) and ``end``.

Per collective the check runs first; a collective that raises stops the
run (the process group is no longer trustworthy), one that is merely
unsupported by the backend is reported as such and skipped.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from nccldiag.node import collectives as registry
from nccldiag.node import sizes as plan

EXIT_OK, EXIT_WRONG, EXIT_ERROR, EXIT_SETUP, EXIT_USAGE = 0, 1, 2, 3, 6

_UNSUPPORTED = re.compile(r"not supported|unsupported|not implemented|does not support|no support", re.I)
_TIMEOUT = re.compile(r"timed out|timeout|deadline exceeded", re.I)
# Progress records inside a sweep size: one a second at most, then one per eighth of the time the collective
# has run, 64 at most per collective (results.MAX_PER_COLLECTIVE leaves room for them beside every size's own).
PROGRESS_EVERY = 1.0
PROGRESS_MAX = 64
# a failure while communicating, even when its text says "not supported" (CUDA's "operation not supported")
_FAILURE = re.compile(r"cuda error|nccl error|ncclInternal|ncclSystem|ncclRemote|ncclInvalid|unhandled", re.I)
_ENV_PREFIXES = ("NCCL_", "GLOO_", "TORCH_NCCL_", "TORCH_DISTRIBUTED_", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS")


class DeviceTimeout(RuntimeError):
    """The GPU did not finish a queued collective in time (nccl-tests ``-T``)."""


# --------------------------------------------------------------------------- output


class Emitter:
    """Writes one JSON record per line to stdout or appends to a file."""

    def __init__(self, path: Optional[str] = None):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else sys.stdout.fileno()
        self.base: Dict[str, Any] = {}

    def emit(self, kind: str, **fields: Any) -> dict:
        rec = {"type": kind, **self.base, **fields, "ts": round(time.time(), 6)}
        data = (json.dumps(rec, default=str, separators=(",", ":")) + "\n").encode()
        while data:
            try:
                n = os.write(self.fd, data)
            except InterruptedError:
                continue
            data = data[n:]
        return rec


# --------------------------------------------------------------------------- identity and addresses


@dataclass
class Identity:
    rank: int
    world: int
    local_rank: int
    local_world: int
    master_addr: str
    master_port: int
    bootstrap: str = "env"
    mpi_result: Optional[dict] = None  # the MPI sanity allreduce, reported as its own result


def env_identity(environ: Dict[str, str]) -> Identity:
    """Rank layout from the variables torchrun sets."""
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not environ.get(k)]
    if missing:
        raise ValueError(f"{', '.join(missing)} not set: run under torchrun, or use --bootstrap mpi under mpirun")
    return Identity(
        rank=int(environ["RANK"]),
        world=int(environ["WORLD_SIZE"]),
        local_rank=int(environ.get("LOCAL_RANK", "0")),
        local_world=int(environ.get("LOCAL_WORLD_SIZE", "1")),
        master_addr=environ["MASTER_ADDR"],
        master_port=int(environ["MASTER_PORT"]),
    )


def slurm_env(environ: Dict[str, str]) -> Dict[str, str]:
    """torch.distributed's variables from the ones srun sets for each task (``--bootstrap slurm``).

    SLURM_PROCID is the global rank, SLURM_NTASKS the world size,
    SLURM_LOCALID the rank on this node; the ranks on this node are
    SLURM_NTASKS_PER_NODE, or this node's entry of SLURM_TASKS_PER_NODE
    (``2(x3),1``) picked by SLURM_NODEID. MASTER_ADDR and MASTER_PORT come
    from the launch (rank 0's node address and a port free there).
    """
    missing = [k for k in ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "MASTER_ADDR", "MASTER_PORT")
               if not environ.get(k)]
    if missing:
        raise ValueError(f"{', '.join(missing)} not set: --bootstrap slurm runs under srun with MASTER_ADDR/MASTER_PORT")
    local_world = environ.get("SLURM_NTASKS_PER_NODE", "")
    if not local_world.isdigit():
        counts: List[int] = []
        for part in (environ.get("SLURM_STEP_TASKS_PER_NODE") or environ.get("SLURM_TASKS_PER_NODE") or "1").split(","):
            num, _, rep = part.partition("(x")
            counts.extend([int(num)] * (int(rep.rstrip(")")) if rep else 1))
        node = int(environ.get("SLURM_NODEID", "0") or 0)
        local_world = str(counts[node] if node < len(counts) else counts[-1])
    return {
        "RANK": environ["SLURM_PROCID"], "WORLD_SIZE": environ["SLURM_NTASKS"], "LOCAL_RANK": environ["SLURM_LOCALID"],
        "LOCAL_WORLD_SIZE": local_world, "GROUP_RANK": environ.get("SLURM_NODEID", "0"),
        "MASTER_ADDR": environ["MASTER_ADDR"], "MASTER_PORT": environ["MASTER_PORT"],
    }


def local_rank_from_names(names: List[str], rank: int) -> tuple:
    """``(local_rank, local_world)``: ranks on the same host, counted in rank order (DeepSpeed mpi_discovery)."""
    mine = names[rank]
    return names[:rank].count(mine), names.count(mine)


def free_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def iface_address(name: str) -> Optional[str]:
    """IPv4 address of interface ``name`` (Linux SIOCGIFADDR), or None."""
    try:
        import fcntl

        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))
        finally:
            s.close()
        return socket.inet_ntoa(packed[20:24])
    except (OSError, ImportError, ValueError):
        return None


def iface_of(address: str) -> Optional[str]:
    """The interface that holds ``address`` (None if unknown)."""
    try:
        names = [n for _, n in socket.if_nameindex()]
    except OSError:
        return None
    for n in names:
        if iface_address(n) == address:
            return n
    return None


def route_address(peer: str) -> Optional[str]:
    """The local address the kernel would use to reach ``peer`` (a UDP connect sends nothing)."""
    try:
        ip = socket.gethostbyname(peer)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect((ip, 9))
            return s.getsockname()[0]
        finally:
            s.close()
    except OSError:
        return None


def _ifname_setting(environ: Dict[str, str]) -> Optional[str]:
    """First usable interface named by GLOO/NCCL_SOCKET_IFNAME (not an exclusion list)."""
    for key in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
        value = environ.get(key, "")
        first = value.split(",")[0].strip()
        if first and not first.startswith("^"):
            return first.lstrip("=")
    return None


def pick_master_addr(names: List[str], my_name: str, environ: Dict[str, str]) -> str:
    """Rank 0's address for the rendezvous, as other ranks should reach it.

    ``hostname -I``'s first address can be the wrong NIC (docker0, a
    management network), so prefer: MASTER_ADDR if given; loopback when all
    ranks share this host; the address of the socket interface the user
    named; the address that routes to another rank's host.
    """
    if environ.get("MASTER_ADDR"):
        return environ["MASTER_ADDR"]
    others = [n for n in names if n != my_name]
    if not others:
        return "127.0.0.1"
    ifname = _ifname_setting(environ)
    if ifname:
        addr = iface_address(ifname)
        if addr:
            return addr
    addr = route_address(others[0])
    if addr and not addr.startswith("127."):
        return addr
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return my_name


def mpi_identity(emitter: Emitter, environ: Dict[str, str]) -> Identity:
    """Bootstrap from MPI: sanity allreduce first, then local ranks and the rendezvous address.

    NCCL's troubleshooting guide advises proving MPI itself works before
    blaming NCCL, so the MPI allreduce is reported as its own result.
    """
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    host = socket.gethostname()
    emitter.base.update(rank=rank, host=host)
    emitter.emit("progress", collective=registry.MPI_CHECK, phase="bootstrap")
    t0 = time.perf_counter()
    total = comm.allreduce(rank, op=MPI.SUM)
    dt = time.perf_counter() - t0
    expected = world * (world - 1) // 2
    names = comm.allgather(MPI.Get_processor_name())
    local_rank, local_world = local_rank_from_names(names, rank)
    if rank == 0:
        addr = pick_master_addr(names, names[0], environ)
        port = int(environ.get("MASTER_PORT") or free_port())
        shared = (addr, port)
    else:
        shared = None
    addr, port = comm.bcast(shared, root=0)
    ident_env = {
        "RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(local_rank),
        "LOCAL_WORLD_SIZE": str(local_world), "MASTER_ADDR": addr, "MASTER_PORT": str(port),
    }
    os.environ.update(ident_env)
    result = {
        "collective": registry.MPI_CHECK, "phase": "bootstrap",
        "status": "ok" if total == expected else "wrong",
        "wrong": 0 if total == expected else 1,
        "sample": {"index": 0, "value": total, "expected": expected},
        "time_us": round(dt * 1e6, 3),
        "mpi": _mpi_version(MPI),
        "processor": names[rank],
    }
    return Identity(rank, world, local_rank, local_world, addr, port, bootstrap="mpi", mpi_result=result)


def _mpi_version(mpi: Any) -> str:
    try:
        return mpi.Get_library_version().replace("\x00", "").strip().splitlines()[0][:120]
    except Exception:  # noqa: BLE001 - informational only
        return ""


# --------------------------------------------------------------------------- torch side


def versions(torch: Any, backend: str) -> Dict[str, Optional[str]]:
    v: Dict[str, Optional[str]] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
    }
    if backend == "nccl":
        try:
            n = torch.cuda.nccl.version()
            v["nccl"] = ".".join(str(x) for x in n) if isinstance(n, tuple) else str(n)
        except Exception as exc:  # noqa: BLE001 - a CPU build has no NCCL
            v["nccl"] = None
            v["nccl_error"] = str(exc)[:200]
    return v


def device_info(torch: Any, device: Any) -> Dict[str, Any]:
    if device.type != "cuda":
        return {"type": "cpu"}
    p = torch.cuda.get_device_properties(device)
    info: Dict[str, Any] = {"type": "cuda", "index": device.index, "name": p.name,
                            "memory_gib": round(p.total_memory / 2**30, 1)}
    bus = [getattr(p, a, None) for a in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if None not in bus:
        info["bus_id"] = "%04x:%02x:%02x.0" % tuple(bus)
    uuid = getattr(p, "uuid", None)
    if uuid is not None:
        info["uuid"] = str(uuid)
    return info


def relevant_env(environ: Dict[str, str]) -> Dict[str, str]:
    return {k: v[:200] for k, v in sorted(environ.items()) if k.startswith(_ENV_PREFIXES)}


class Syncer:
    """Waits for queued GPU work with a bound, one event per call.

    Each event gets ``limit`` seconds from when the previous one finished,
    the same per-operation bound as the process-group watchdog, so a long
    but moving sweep is not cut short while a stuck one is.
    """

    def __init__(self, torch: Any, device: Any, limit: float):
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.limit = limit
        self.pending: List[Any] = []

    def mark(self) -> None:
        if self.cuda:
            ev = self.torch.cuda.Event()
            ev.record()
            self.pending.append(ev)

    def wait(self) -> None:
        if not self.cuda:
            return
        if not self.pending:
            self.mark()
        try:
            for ev in self.pending:
                deadline = time.monotonic() + self.limit
                while not ev.query():
                    if time.monotonic() > deadline:
                        raise DeviceTimeout(f"GPU work did not complete within {self.limit:g} s (timed out)")
                    time.sleep(0.0001)
        finally:
            self.pending = []


def classify(exc: BaseException) -> str:
    """``unsupported`` for a backend that lacks the operation, else ``error``."""
    text = str(exc)
    if isinstance(exc, (RuntimeError, NotImplementedError, ValueError, TypeError)) \
            and _UNSUPPORTED.search(text) and not _TIMEOUT.search(text) and not _FAILURE.search(text):
        return "unsupported"
    return "error"


def _sig(x: float) -> float:
    """Six significant digits: GB/s spans 1e-5 (gloo, small sizes) to 1e3 (NVLink)."""
    return float(f"{x:.6g}")


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 2000 else text[:2000] + "..."


# --------------------------------------------------------------------------- the probe


@dataclass
class Options:
    backend: str
    names: List[str]
    sweep: List[int]
    checks: List[int]
    iters: int
    warmup: int
    check_only: bool
    pg_timeout: float
    corrupt_rank: Optional[int] = None
    stall_rank: Optional[int] = None
    stall_in: Optional[str] = None
    stall_seconds: float = 3600.0


class Prober:
    """Runs the collectives of one process group and reports each step."""

    def __init__(self, torch: Any, dist: Any, ctx: Any, opts: Options, emitter: Emitter):
        self.torch, self.dist, self.ctx, self.opts, self.out = torch, dist, ctx, opts, emitter
        self.sync = Syncer(torch, ctx.device, max(1.0, opts.pg_timeout))
        self.any_wrong = False
        self._coll_t0 = self._last_out = time.monotonic()
        self._moving_sent = 0

    # -- building blocks --
    def _barrier(self) -> None:
        if self.ctx.backend == "nccl":
            self.dist.barrier(device_ids=[self.ctx.local_rank])
        else:
            self.dist.barrier()
        self.sync.wait()

    def _gather_counts(self, wrong: int) -> List[int]:
        t = self.torch.zeros(self.ctx.world, dtype=self.torch.int64, device=self.ctx.device)
        t[self.ctx.rank] = wrong
        self.dist.all_reduce(t)
        self.sync.wait()
        return [int(x) for x in t.cpu().tolist()]

    def _max_time(self, seconds: float) -> float:
        t = self.torch.tensor([seconds], dtype=self.torch.float64, device=self.ctx.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        self.sync.wait()
        return float(t.item())

    def _max_time_and_counts(self, seconds: float, wrong: int) -> tuple:
        """The slowest rank's time and every rank's count of wrong values, in one all_reduce (MAX over a
        vector in which each rank fills its own slot)."""
        t = self.torch.zeros(self.ctx.world + 1, dtype=self.torch.float64, device=self.ctx.device)
        t[0] = seconds
        t[self.ctx.rank + 1] = wrong
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        self.sync.wait()
        vals = t.cpu().tolist()
        return float(vals[0]), [int(x) for x in vals[1:]]

    def _moving(self, coll: Any, size: int, count: int, before: int, issued: int, t0: float) -> None:
        """A progress record for the calls of one sweep size completed so far (``before`` in the warm-up,
        those of the ``issued`` in the loop that started at ``t0``), at most one a second and fewer as the
        collective goes on, 64 at most: a slow link is told from a hung one by them."""
        now = time.monotonic()
        since = now - self._coll_t0
        if self._moving_sent >= PROGRESS_MAX or now - self._last_out < max(PROGRESS_EVERY, since / 8):
            return
        calls = self._calls_done(issued)
        if calls < 1:
            return
        self._last_out = now
        self._moving_sent += 1
        per_call = (time.perf_counter() - t0) / calls
        self.out.emit("progress", collective=coll.name, phase="sweep", size=size, count=count, done=before + calls,
                      iters=self.opts.iters, warmup=self.opts.warmup, rank_time_us=round(per_call * 1e6, 3),
                      busbw=_sig(coll.busbw(count, self.ctx.world, per_call)))

    def _calls_done(self, issued: int) -> int:
        """Calls of the loop that have completed: all issued on the CPU (blocking), the finished GPU events."""
        if not self.sync.cuda:
            return issued
        done = 0
        for ev in self.sync.pending:
            if not ev.query():
                break
            done += 1
        return done

    def _stall(self, name: str) -> None:
        o = self.opts
        if o.stall_rank == self.ctx.rank and o.stall_in == name:
            threading.Event().wait(o.stall_seconds)

    # -- phases --
    def _checked_call(self, coll: Any, count: int, size: int) -> tuple:
        """One call on patterned buffers, verified here: ``(buffers, verdict, seconds)``."""
        ctx = self.ctx
        self.phase = "check"
        self.out.emit("progress", collective=coll.name, phase="check", size=size, count=count)
        self._stall(coll.name)
        bufs = coll.prepare(ctx, count, data=True)
        self.sync.wait()
        t0 = time.perf_counter()
        bufs.call()
        self.sync.mark()
        self.sync.wait()
        dt = time.perf_counter() - t0
        out = bufs.output
        if out is not None and self.opts.corrupt_rank == ctx.rank and out.numel():
            flat = out.view(-1)
            flat[:: max(1, flat.numel() // 4)] += 1  # test hook: what a corrupting link would do
        return bufs, coll.verify(bufs), dt

    def _check_record(self, coll: Any, count: int, size: int, verdict: Any, dt: float, per_rank: List[int]) -> str:
        wrong = verdict.wrong
        ranks_wrong = [r for r, n in enumerate(per_rank) if n]
        self.any_wrong = self.any_wrong or bool(ranks_wrong)
        rec = dict(collective=coll.name, phase="check", status="wrong" if wrong else "ok", wrong=wrong,
                   wrong_total=sum(per_rank), ranks_wrong=ranks_wrong, verified=verdict.verified,
                   size=size, count=count, dtype="float32", redop=coll.redop, root=coll.root,
                   time_us=round(dt * 1e6, 3))
        if verdict.sample is not None:
            rec["sample"] = verdict.sample
        if verdict.first_wrong is not None:
            rec["first_wrong"] = verdict.first_wrong
        self.out.emit("result", **rec)
        return rec["status"]

    def check(self, coll: Any, nbytes: int) -> str:
        """The correctness check alone at one size (``--check-only``, or a check size the sweep does not hold)."""
        count = coll.count_for(nbytes, self.ctx.world)
        size = coll.size_for(count, self.ctx.world)
        _, verdict, dt = self._checked_call(coll, count, size)
        return self._check_record(coll, count, size, verdict, dt, self._gather_counts(verdict.wrong))

    def sweep_one(self, coll: Any, nbytes: int, checked: bool = False) -> str:
        """One size of the sweep: warm-up, barrier, timed calls, the slowest rank's time. ``checked``: the
        first call of the warm-up runs on patterned buffers and is verified (the check at this size), and
        every rank's count of wrong values travels with the times; returns the check's status (``ok``
        when not checked)."""
        ctx, o = self.ctx, self.opts
        count = coll.count_for(nbytes, ctx.world)
        size = coll.size_for(count, ctx.world)
        verdict, dt, first = None, 0.0, 0
        if checked:
            bufs, verdict, dt = self._checked_call(coll, count, size)
            first = 1
        self.phase = "sweep"
        self.out.emit("progress", collective=coll.name, phase="sweep", size=size, count=count)
        if not checked:
            bufs = coll.prepare(ctx, count, data=False)
        self._last_out = time.monotonic()
        w0 = time.perf_counter()
        for i in range(first, o.warmup):
            bufs.call()
            self.sync.mark()
            self._moving(coll, size, count, first, i + 1 - first, w0)
        self.sync.wait()
        self._barrier()
        t0 = time.perf_counter()
        for i in range(o.iters):
            bufs.call()
            self.sync.mark()
            self._moving(coll, size, count, o.warmup, i + 1, t0)
        self.sync.wait()
        mine = (time.perf_counter() - t0) / o.iters
        status = "ok"
        if verdict is None:
            slowest = self._max_time(mine)
        else:
            slowest, per_rank = self._max_time_and_counts(mine, verdict.wrong)
            status = self._check_record(coll, count, size, verdict, dt, per_rank)
        self.out.emit(
            "result", collective=coll.name, phase="sweep", status="ok", size=size, count=count,
            dtype="float32", redop=coll.redop, root=coll.root, iters=o.iters, warmup=o.warmup,
            time_us=round(slowest * 1e6, 3), rank_time_us=round(mine * 1e6, 3),
            algbw=_sig(coll.algbw(count, ctx.world, slowest)),
            busbw=_sig(coll.busbw(count, ctx.world, slowest)),
        )
        return status

    def run_one(self, coll: Any) -> str:
        """``ok``, ``wrong``, ``unsupported`` or ``error`` for one collective."""
        if self.ctx.world < coll.min_world:
            self.out.emit("result", collective=coll.name, phase="check", status="unsupported",
                          reason=f"needs at least {coll.min_world} ranks")
            return "unsupported"
        size = None
        self.phase = "check"
        status = "ok"
        self._coll_t0, self._moving_sent = time.monotonic(), 0
        world = self.ctx.world
        try:
            checks = self.opts.checks if coll.sized else [0]
            sizes = [] if self.opts.check_only else self.opts.sweep if coll.sized else [0]
            swept = {coll.count_for(n, world) for n in sizes}
            # a check at a size the sweep holds is the first call of that size's warm-up; any other runs alone
            to_check = {}
            for nbytes in checks:
                count = coll.count_for(nbytes, world)
                if count in swept:
                    to_check.setdefault(count, nbytes)
                else:
                    size = nbytes
                    if self.check(coll, nbytes) == "wrong":
                        status = "wrong"
            seen = set()
            for nbytes in sizes:
                count = coll.count_for(nbytes, world)
                if count in seen:
                    continue
                seen.add(count)
                size = nbytes
                if self.sweep_one(coll, nbytes, checked=count in to_check) == "wrong":
                    status = "wrong"
            return status
        except Exception as exc:  # noqa: BLE001 - every failure becomes a record
            kind = classify(exc)
            rec = dict(collective=coll.name, phase=self.phase, status=kind, requested_size=size, error=_short(exc))
            if kind == "error":
                rec["timeout"] = bool(_TIMEOUT.search(str(exc))) or isinstance(exc, DeviceTimeout)
            self.out.emit("result", **rec)
            return kind

    def run(self) -> Dict[str, str]:
        done: Dict[str, str] = {}
        for name in self.opts.names:
            coll = registry.load(name)
            done[name] = self.run_one(coll)
            if done[name] == "error":
                break
        return done


# --------------------------------------------------------------------------- command line


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m nccldiag.node.worker", description=__doc__.split("\n")[0])
    p.add_argument("--bootstrap", choices=["env", "mpi", "slurm"], default="env",
                   help="env: RANK/WORLD_SIZE/... as torchrun sets them; mpi: derive them with mpi4py; "
                        "slurm: from srun's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID")
    p.add_argument("--backend", choices=["gloo", "nccl"], default=None, help="default: nccl if CUDA is available")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--collectives", default="all", help="comma list; known: " + ",".join(registry.NAMES))
    p.add_argument("--min-bytes", default=None)
    p.add_argument("--max-bytes", default=None)
    p.add_argument("--factor", type=int, default=None)
    p.add_argument("--iters", type=int, default=None)
    p.add_argument("--warmup", type=int, default=None)
    p.add_argument("--check-only", action="store_true", help="verify correctness, skip the bandwidth sweep")
    p.add_argument("--check-all-sizes", action="store_true", help="verify at every sweep size, not three")
    p.add_argument("--pg-timeout", type=float, default=None, help="seconds for init and each collective")
    p.add_argument("--out", default=None, help="append JSON lines here (default stdout)")
    p.add_argument("--go-file", default=None,
                   help="after init, wait until this file exists before the first collective (jobs that run "
                        "side by side then measure at the same time)")
    p.add_argument("--go-wait", type=float, default=30.0, help="seconds to wait for --go-file at most")
    p.add_argument("--corrupt-rank", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--stall-rank", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--stall-in", default=None, help=argparse.SUPPRESS)
    p.add_argument("--stall-seconds", type=float, default=3600.0, help=argparse.SUPPRESS)
    return p


def build_options(args: argparse.Namespace, backend: str) -> Options:
    """Options with backend defaults filled in; ValueError on a bad value."""
    d = plan.defaults(backend)
    lo = plan.parse_size(args.min_bytes) if args.min_bytes is not None else d.min_bytes
    hi = plan.parse_size(args.max_bytes) if args.max_bytes is not None else max(d.max_bytes, lo)
    factor = args.factor if args.factor is not None else d.factor
    sweep = plan.sizes(lo, hi, factor)
    iters = args.iters if args.iters is not None else d.iters
    warmup = args.warmup if args.warmup is not None else d.warmup
    if iters < 1 or warmup < 0:
        raise ValueError("--iters must be at least 1 and --warmup at least 0")
    names = registry.select(args.collectives)
    if args.stall_in is not None and args.stall_in not in registry.NAMES:
        raise ValueError(f"--stall-in {args.stall_in!r}: not a collective")
    return Options(
        backend=backend, names=names, sweep=sweep,
        checks=sorted(set(sweep)) if args.check_all_sizes else plan.check_sizes(sweep),
        iters=iters, warmup=warmup, check_only=args.check_only,
        pg_timeout=args.pg_timeout if args.pg_timeout is not None else float(d.pg_timeout),
        corrupt_rank=args.corrupt_rank, stall_rank=args.stall_rank, stall_in=args.stall_in,
        stall_seconds=args.stall_seconds,
    )


def _init_process_group(dist: Any, backend: str, timeout: float, device: Any) -> None:
    import inspect

    kwargs: Dict[str, Any] = {"backend": backend, "init_method": "env://",
                              "timeout": datetime.timedelta(seconds=timeout)}
    if backend == "nccl" and "device_id" in inspect.signature(dist.init_process_group).parameters:
        kwargs["device_id"] = device  # eager communicator set-up: an init hang shows as init
    dist.init_process_group(**kwargs)


def apply_ifname_map(environ: Dict[str, str], host: str) -> Optional[str]:
    """Set GLOO/NCCL_SOCKET_IFNAME from ``NCCLDIAG_IFNAMES`` (``host=iface,...``).

    mpirun gives every rank the same environment; where nodes name their
    interfaces differently, each rank picks its own here, before any
    process group exists.
    """
    mapping = dict(p.split("=", 1) for p in environ.get("NCCLDIAG_IFNAMES", "").split(",") if "=" in p)
    iface = mapping.get(host) or mapping.get(host.split(".")[0])
    if iface:
        environ["GLOO_SOCKET_IFNAME"] = iface
        environ.setdefault("NCCL_SOCKET_IFNAME", iface)
    return iface


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    out = Emitter(args.out)
    host = socket.gethostname()
    apply_ifname_map(os.environ, host)
    slurm_problem = None
    if args.bootstrap == "slurm":
        try:
            os.environ.update(slurm_env(dict(os.environ)))
        except ValueError as exc:
            slurm_problem = str(exc)
    out.base.update(rank=int(os.environ.get("RANK", "-1")), host=host)
    t_start = time.monotonic()

    def fail(phase: str, message: str, code: int, **extra: Any) -> int:
        out.emit("error", phase=phase, message=message, **extra)
        out.emit("end", status="error", exit_code=code, elapsed_s=round(time.monotonic() - t_start, 3))
        return code

    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        return fail("import", f"torch is not importable: {exc}", EXIT_SETUP, python=sys.executable)

    backend = args.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    try:
        opts = build_options(args, backend)
    except ValueError as exc:
        return fail("usage", str(exc), EXIT_USAGE)

    if slurm_problem:
        return fail("bootstrap", slurm_problem, EXIT_SETUP)
    try:
        ident = mpi_identity(out, dict(os.environ)) if args.bootstrap == "mpi" else env_identity(dict(os.environ))
        if args.bootstrap == "slurm":
            ident.bootstrap = "slurm"
    except ImportError as exc:
        return fail("bootstrap", f"--bootstrap mpi needs mpi4py (pip install 'nccldiag[mpi]'): {exc}", EXIT_SETUP)
    except Exception as exc:  # noqa: BLE001
        return fail("bootstrap", _short(exc), EXIT_SETUP)
    out.base.update(rank=ident.rank, host=host)

    want = args.device if args.device != "auto" else ("cuda" if backend == "nccl" else "cpu")
    address = ident.master_addr if ident.master_addr.startswith("127.") else route_address(ident.master_addr)
    start = dict(
        local_rank=ident.local_rank, local_world_size=ident.local_world, world_size=ident.world,
        backend=backend, bootstrap=ident.bootstrap, pid=os.getpid(), versions=versions(torch, backend),
        master_addr=ident.master_addr, master_port=ident.master_port,
        address=address, interface=iface_of(address) if address else None,
        socket_ifname=os.environ.get("GLOO_SOCKET_IFNAME" if backend == "gloo" else "NCCL_SOCKET_IFNAME"),
        env=relevant_env(dict(os.environ)), collectives=opts.names, sizes=opts.sweep, check_sizes=opts.checks,
        iters=opts.iters, warmup=opts.warmup, pg_timeout=opts.pg_timeout,
    )
    try:
        if want == "cuda":
            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if ident.local_rank >= n:
                out.emit("start", device={"type": "cuda", "visible": n}, **start)
                return fail("device", f"local rank {ident.local_rank} needs GPU {ident.local_rank} but "
                                      f"{n} GPU(s) are visible: one GPU per local rank", EXIT_SETUP)
            torch.cuda.set_device(ident.local_rank)
            device = torch.device("cuda", ident.local_rank)
        else:
            device = torch.device("cpu")
        out.emit("start", device=device_info(torch, device), **start)
    except Exception as exc:  # noqa: BLE001
        return fail("device", _short(exc), EXIT_SETUP)

    if ident.mpi_result is not None:
        out.emit("result", **ident.mpi_result)

    out.emit("progress", collective=None, phase="init")
    try:
        _init_process_group(dist, backend, opts.pg_timeout, device)
    except Exception as exc:  # noqa: BLE001
        return fail("init", _short(exc), EXIT_SETUP, timeout=bool(_TIMEOUT.search(str(exc))))
    out.emit("progress", collective=None, phase="ready")
    if args.go_file:
        go_until = time.monotonic() + max(0.0, args.go_wait)
        while not os.path.exists(args.go_file) and time.monotonic() < go_until:
            time.sleep(0.05)
        # Every rank of the job past its own node's go before any sends: a rank that starts on its go while its
        # peer's node has not seen its own yet floods that node's links, and the go still on its way there (one
        # command over the same links) is held up behind the flood.
        try:
            if backend == "nccl":
                dist.barrier(device_ids=[ident.local_rank])
            else:
                dist.barrier()
        except Exception:  # noqa: BLE001 - the group's failure shows again, and is reported, in the first collective
            pass

    from nccldiag.node.collectives.base import Ctx

    ctx = Ctx(rank=ident.rank, world=ident.world, device=device, backend=backend, local_rank=ident.local_rank)
    prober = Prober(torch, dist, ctx, opts, out)
    done = prober.run()
    aborted = "error" in done.values()
    code = EXIT_ERROR if aborted else (EXIT_WRONG if prober.any_wrong or "wrong" in done.values() else EXIT_OK)
    status = "aborted" if aborted else ("wrong" if code == EXIT_WRONG else "ok")
    out.emit("end", status=status, exit_code=code, collectives=done,
             elapsed_s=round(time.monotonic() - t_start, 3))
    if aborted:
        # the group is broken: tearing it down could block on the peer that hung
        os._exit(code)
    try:
        prober._barrier()  # every rank has written its end record before any exits
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - the records are already out
        pass
    return code


def _entry() -> None:
    try:
        from torch.distributed.elastic.multiprocessing.errors import record
    except ImportError:  # pragma: no cover - old torch
        def record(fn: Callable) -> Callable:
            return fn
    code = record(main)()
    # Everything is reported and the group is destroyed: skip the interpreter's
    # teardown of torch (most of a second per rank on a loaded node). MPI is
    # finalized first, as mpirun expects of every rank that exits 0.
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        try:
            if mpi.Is_initialized() and not mpi.Is_finalized():
                mpi.Finalize()
        except Exception:  # noqa: BLE001 - the records are already out
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    _entry()
