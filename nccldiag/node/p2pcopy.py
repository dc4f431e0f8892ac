"""Active GPU peer-to-peer copy test: every ordered device pair, verified and timed.

Self-contained (standard library and torch only) because it is shipped to the
nodes inside the collection script and run with the node's Python::

    python3 p2pcopy.py --json            # all CUDA devices
    python3 p2pcopy.py --virtual 2       # no GPU: two CPU "devices" (tests)

For each ordered pair (src, dst) it fills a buffer on src with a known
pattern, copies it to dst (warm-up, then timed iterations), checks every
element arrived, and reports GB/s (10^9 bytes/s, as nccl-tests does) and what
``torch.cuda.can_device_access_peer`` says. A copy that arrives wrong is the
IOMMU/ACS failure mode where P2P "works" but delivers zeros. Per device it
also times pinned host<->device copies: a pair that the driver calls
P2P-capable but that copies no faster than through host memory is not using
a direct path.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Callable, Dict, List, Optional

FORMAT = "nccldiag.p2pcopy/1"
DEFAULT_MIB = 64

# A hook (src, dst, received tensor) called after each verified copy's
# transfer and before its check; tests use it to corrupt data on purpose.
CorruptHook = Callable[[int, int, Any], None]


def _pattern(torch: Any, n: int, seed: int, device: Any) -> Any:
    """Integer-valued int32 pattern, different per source device, exact to compare."""
    base = torch.arange(n, dtype=torch.int32, device=device)
    return (base * 7 + seed * 101 + 13) % 65521


class _Devices:
    """CUDA devices, or N CPU tensors standing in for devices."""

    def __init__(self, torch: Any, virtual: Optional[int]) -> None:
        self.torch = torch
        self.cuda = virtual is None
        self.count = torch.cuda.device_count() if self.cuda else int(virtual)

    def device(self, i: int) -> Any:
        return self.torch.device("cuda", i) if self.cuda else self.torch.device("cpu")

    def sync(self, *idx: int) -> None:
        if self.cuda:
            for i in idx:
                self.torch.cuda.synchronize(i)

    def name(self, i: int) -> str:
        return self.torch.cuda.get_device_name(i) if self.cuda else f"virtual-cpu-{i}"

    def can_access_peer(self, a: int, b: int) -> Optional[bool]:
        if not self.cuda:
            return None
        try:
            return bool(self.torch.cuda.can_device_access_peer(a, b))
        except Exception:
            return None


def _timed_copy(devs: _Devices, dst: Any, src: Any, idx: tuple, warmup: int, iters: int) -> float:
    """Seconds for ``iters`` copies after ``warmup`` untimed ones."""
    for _ in range(warmup):
        dst.copy_(src, non_blocking=True)
    devs.sync(*idx)
    t0 = time.perf_counter()
    for _ in range(iters):
        dst.copy_(src, non_blocking=True)
    devs.sync(*idx)
    return time.perf_counter() - t0


def _gbps(nbytes: int, iters: int, seconds: float) -> Optional[float]:
    return round(nbytes * iters / seconds / 1e9, 3) if seconds > 0 else None


def run(
    size_mib: float = DEFAULT_MIB,
    warmup: int = 2,
    iters: int = 10,
    virtual: Optional[int] = None,
    devices: Optional[List[int]] = None,
    corrupt: Optional[CorruptHook] = None,
) -> Dict[str, Any]:
    """Copy between every ordered pair of devices; a JSON-ready dict, never raises.

    ``virtual=N`` uses N CPU "devices" (the data path and checks are the same,
    the timings mean nothing); otherwise CUDA devices, and with none the
    result carries ``error`` and no pairs.
    """
    result: Dict[str, Any] = {"format": FORMAT, "backend": None, "bytes": 0, "warmup": warmup, "iters": iters,
                              "devices": [], "pairs": [], "error": None}
    try:
        import torch
    except Exception as exc:  # the node's Python has no torch
        result["error"] = f"torch not importable: {exc}"
        return result
    result["torch"] = getattr(torch, "__version__", None)
    devs = _Devices(torch, virtual)
    result["backend"] = "cuda" if devs.cuda else "cpu"
    if devs.cuda and not torch.cuda.is_available():
        result["error"] = "no CUDA device (torch.cuda.is_available() is False)"
        return result
    chosen = list(range(devs.count)) if devices is None else [d for d in devices if 0 <= d < devs.count]
    n = max(1, int(size_mib * 1024 * 1024) // 4)
    nbytes = n * 4
    result["bytes"] = nbytes
    try:
        bufs = {i: _pattern(torch, n, i, devs.device(i)) for i in chosen}
    except Exception as exc:
        result["error"] = f"allocating {nbytes} bytes per device failed: {type(exc).__name__}: {exc}"
        return result
    for i in chosen:
        entry: Dict[str, Any] = {"index": i, "name": devs.name(i), "h2d_gbps": None, "d2h_gbps": None}
        if devs.cuda:
            try:
                host = torch.empty(n, dtype=torch.int32, pin_memory=True)
                entry["h2d_gbps"] = _gbps(nbytes, iters, _timed_copy(devs, bufs[i], host, (i,), warmup, iters))
                entry["d2h_gbps"] = _gbps(nbytes, iters, _timed_copy(devs, host, bufs[i], (i,), warmup, iters))
                bufs[i] = _pattern(torch, n, i, devs.device(i))  # the H2D copies overwrote it
                devs.sync(i)
            except Exception as exc:
                entry["error"] = f"{type(exc).__name__}: {exc}"
        result["devices"].append(entry)
    for a in chosen:
        for b in chosen:
            if a != b:
                result["pairs"].append(_pair(torch, devs, bufs, a, b, n, warmup, iters, corrupt))
    return result


def _pair(torch: Any, devs: _Devices, bufs: Dict[int, Any], a: int, b: int, n: int, warmup: int, iters: int,
          corrupt: Optional[CorruptHook]) -> Dict[str, Any]:
    entry: Dict[str, Any] = {"src": a, "dst": b, "can_access_peer": devs.can_access_peer(a, b),
                             "gbps": None, "verified": False, "mismatches": None, "error": None}
    try:
        dst = torch.zeros(n, dtype=torch.int32, device=devs.device(b))
        entry["gbps"] = _gbps(n * 4, iters, _timed_copy(devs, dst, bufs[a], (a, b), warmup, iters))
        # the check copy: a fresh, zeroed buffer so stale data cannot pass for a copy
        dst.zero_()
        devs.sync(b)
        dst.copy_(bufs[a])
        devs.sync(a, b)
        if corrupt is not None:
            corrupt(a, b, dst)
        expected = _pattern(torch, n, a, devs.device(b))
        bad = int((dst != expected).sum().item())
        entry["mismatches"] = bad
        entry["verified"] = bad == 0
        if bad:
            first = int((dst != expected).nonzero()[0].item())
            entry["error"] = (f"{bad} of {n} int32 elements wrong after copy GPU{a}->GPU{b}; first at {first}: "
                              f"got {int(dst[first].item())}, expected {int(expected[first].item())}")
    except Exception as exc:
        entry["error"] = f"{type(exc).__name__}: {exc}"
    return entry


def _table(result: Dict[str, Any]) -> str:
    lines = [f"backend {result.get('backend')}, {result.get('bytes', 0)} bytes, {result.get('iters')} iterations"]
    if result.get("error"):
        lines.append(f"error: {result['error']}")
    for d in result.get("devices", []):
        lines.append(f"  dev {d['index']} {d['name']}: H2D {d.get('h2d_gbps')} GB/s, D2H {d.get('d2h_gbps')} GB/s")
    for p in result.get("pairs", []):
        state = "ok" if p["verified"] else "WRONG"
        lines.append(f"  {p['src']} -> {p['dst']}: {p['gbps']} GB/s, peer access {p['can_access_peer']}, data {state}"
                     + (f" ({p['error']})" if p.get("error") else ""))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Copy a buffer between every ordered GPU pair; verify and time it.")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--size-mib", type=float, default=DEFAULT_MIB, help="buffer size in MiB (default %(default)s)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--devices", default=None, help="comma-separated device indices (default: all)")
    ap.add_argument("--virtual", type=int, default=None, metavar="N", help="use N CPU tensors as devices")
    args = ap.parse_args(argv)
    devices = [int(x) for x in args.devices.split(",") if x.strip()] if args.devices else None
    result = run(args.size_mib, max(0, args.warmup), max(1, args.iters), args.virtual, devices)
    print(json.dumps(result) if args.json else _table(result))
    if result.get("error"):
        return 2
    return 0 if all(p["verified"] for p in result["pairs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
