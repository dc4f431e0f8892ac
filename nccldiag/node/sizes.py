"""The message-size sweep (nccl-tests' ``-b -e -f``) and the per-backend defaults."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence


def parse_size(text: str) -> int:
    """``"1K"`` -> 1024, ``"128M"``, ``"1G"``, ``"4096"``; powers of 1024 as nccl-tests. ValueError otherwise."""
    v = str(text).strip().upper()
    if v.endswith("IB"):
        v = v[:-2]
    elif v.endswith("B"):
        v = v[:-1]
    mult = 1
    if v and v[-1] in "KMGT":
        mult = 1 << (10 * ("KMGT".index(v[-1]) + 1))
        v = v[:-1]
    try:
        n = int(float(v) * mult)
    except ValueError:
        raise ValueError(f"size {text!r}: expected a number with an optional K, M, G or T suffix") from None
    if n <= 0:
        raise ValueError(f"size {text!r}: must be positive")
    return n


def sizes(min_bytes: int, max_bytes: int, factor: int = 2) -> List[int]:
    """Message sizes from ``min_bytes`` to ``max_bytes`` multiplying by ``factor`` (nccl-tests ``-b -e -f``).

    ``max_bytes`` is always included, so a sweep never stops short of the
    size asked for.
    """
    if min_bytes <= 0 or max_bytes <= 0:
        raise ValueError("sizes must be positive")
    if min_bytes > max_bytes:
        raise ValueError(f"min size {min_bytes} is larger than max size {max_bytes}")
    if factor < 2:
        raise ValueError(f"factor {factor}: must be at least 2")
    out = []
    s = min_bytes
    while s < max_bytes:
        out.append(s)
        s *= factor
    out.append(max_bytes)
    return out


def check_sizes(sweep: Sequence[int]) -> List[int]:
    """Sizes the correctness check runs at: the smallest, the largest and one in between.

    NCCL changes protocol with size (LL for small messages, LL128, Simple for
    large ones), and corruption may show in one protocol only.
    """
    if not sweep:
        return []
    ordered = sorted(set(sweep))
    picks = {ordered[0], ordered[len(ordered) // 2], ordered[-1]}
    return sorted(picks)


@dataclass(frozen=True)
class Defaults:
    min_bytes: int
    max_bytes: int
    factor: int
    iters: int
    warmup: int
    pg_timeout: int


# gloo is a CPU path for checking wiring, not bandwidth: small and quick. Its three sizes (1 KiB, 32 KiB,
# 1 MiB) are the three the correctness check runs at; each call costs the same few milliseconds of latency
# at all of them on shared cores, so a size more is time spent, not information.
# NCCL goes to 1 GiB, where busbw reaches the bus limit.
DEFAULTS = {
    "gloo": Defaults(min_bytes=1 << 10, max_bytes=1 << 20, factor=32, iters=5, warmup=1, pg_timeout=60),
    "nccl": Defaults(min_bytes=1 << 10, max_bytes=1 << 30, factor=2, iters=20, warmup=5, pg_timeout=300),
}


def defaults(backend: str) -> Defaults:
    return DEFAULTS.get(backend, DEFAULTS["gloo"])
