"""What every collective probe shares: the verifiable data, buffers, bandwidth.

Data follows nccl-tests' idea of inputs "crafted to produce exactly
predictable output": float32 elements that hold small integers, so every
sum any collective computes is exact and the expected output can be
computed locally from the rank and the world size alone. Element ``g`` of
rank ``r``'s data is ``(r + 3*g) % MOD``; element 0 is therefore the rank id,
and an all_reduce of element 0 gives ``world*(world-1)/2``.

Sums stay exact while ``world * (MOD - 1) < 2**24`` (about 16000 ranks).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch

MOD = 1021  # prime, so a shifted or misrouted chunk rarely matches by chance
STEP = 3
SENTINEL = -1.0  # outputs start as this; the data is never negative
DTYPE = torch.float32
ELEM = 4  # bytes per element


@dataclass
class Ctx:
    """Where this rank runs the collective."""

    rank: int
    world: int
    device: torch.device
    backend: str = "gloo"
    local_rank: int = 0


@dataclass
class Buffers:
    """One prepared call: ``call()`` runs the collective once.

    ``output`` is what this rank verifies (``None`` when the rank receives
    nothing, e.g. a non-root of reduce or gather); ``expected()`` computes
    what it must hold, only when a check needs it.
    """

    call: Callable[[], None]
    output: Optional[torch.Tensor] = None
    expected: Optional[Callable[[], torch.Tensor]] = None


def _index(start: int, n: int, device: torch.device) -> torch.Tensor:
    """Element indices; int32 while ``3*index + MOD`` fits, to halve the temporaries at 1 GiB."""
    small = (start + n) * STEP + MOD < 2**31
    return torch.arange(start, start + n, dtype=torch.int32 if small else torch.int64, device=device)


def pattern(rank: int, start: int, n: int, device: torch.device) -> torch.Tensor:
    """Rank ``rank``'s data elements ``start .. start+n-1`` as float32."""
    g = _index(start, n, device)
    return g.mul_(STEP).add_(rank % MOD).remainder_(MOD).to(DTYPE)


def pattern_sum(world: int, start: int, n: int, device: torch.device) -> torch.Tensor:
    """Sum over every rank of ``pattern(r, start, n)``, in closed form.

    With ``a = 3g mod MOD`` and ``world = q*MOD + s``: every full run of MOD
    consecutive ranks contributes ``MOD*(MOD-1)/2``, and the last ``s`` ranks
    contribute ``a, a+1, ...`` minus MOD once for the values that wrap.
    This costs O(n) whatever the world size.
    """
    a = _index(start, n, device).mul_(STEP).remainder_(MOD).to(torch.int64)
    q, s = divmod(world, MOD)
    wrapped = (a + (s - MOD)).clamp_(min=0).mul_(MOD)
    total = a.mul_(s).add_(q * (MOD * (MOD - 1) // 2) + s * (s - 1) // 2).sub_(wrapped)
    return total.to(DTYPE)


def filled(n: int, device: torch.device, value: float = SENTINEL) -> torch.Tensor:
    return torch.full((n,), value, dtype=DTYPE, device=device)


def zeros(n: int, device: torch.device) -> torch.Tensor:
    return torch.zeros(n, dtype=DTYPE, device=device)


def count_wrong(output: torch.Tensor, expected: torch.Tensor) -> int:
    """Mismatching elements, like nccl-tests' ``#wrong`` column."""
    if output.numel() != expected.numel():
        return max(output.numel(), expected.numel())
    return int((output.reshape(-1) != expected.reshape(-1)).sum().item())


class Collective:
    """One collective: its data, call, expected result and bandwidth factors.

    ``count`` follows nccl-tests: the per-call element count the library
    receives, so it is per rank (one chunk) for the ``chunked`` collectives
    (all_gather, reduce_scatter, all_to_all, gather, scatter). ``size`` is
    the largest buffer a rank holds, ``max(send, recv)`` bytes, and
    ``algbw = size / time`` in GB/s of 10^9 bytes.
    """

    name = ""
    redop = "none"
    root = -1
    chunked = False
    min_world = 1
    sized = True  # barrier moves no data

    def bus_factor(self, world: int) -> float:
        """busbw / algbw, nccl-tests' correction that makes busbw independent of the rank count."""
        return 1.0

    def count_for(self, nbytes: int, world: int) -> int:
        """Element count for a requested size, rounded down to whole elements (at least 1)."""
        if not self.sized:
            return 0
        per = nbytes // ELEM
        if self.chunked:
            per //= max(1, world)
        return max(1, per)

    def size_for(self, count: int, world: int) -> int:
        return count * ELEM * (world if self.chunked else 1)

    def algbw(self, count: int, world: int, seconds: float) -> float:
        if seconds <= 0 or not self.sized:
            return 0.0
        return self.size_for(count, world) / 1e9 / seconds

    def busbw(self, count: int, world: int, seconds: float) -> float:
        return self.algbw(count, world, seconds) * self.bus_factor(world)

    def prepare(self, ctx: Ctx, count: int, data: bool = True) -> Buffers:
        """Allocate buffers for one call; ``data=False`` skips the verifiable fill (timing only)."""
        raise NotImplementedError

    def verify(self, bufs: Buffers) -> "Verdict":
        """Compare this rank's output with the exact expected values (nothing to compare: 0 wrong)."""
        if bufs.output is None or bufs.expected is None:
            return Verdict(verified=False)
        return compare(bufs.output, bufs.expected())


@dataclass
class Verdict:
    """``wrong`` mismatching elements; ``sample`` element 0; ``first_wrong`` the first mismatch."""

    wrong: int = 0
    verified: bool = True
    sample: Optional[dict] = None
    first_wrong: Optional[dict] = None


def _at(output: torch.Tensor, expected: torch.Tensor, i: int) -> dict:
    return {"index": i, "value": float(output[i].item()), "expected": float(expected[i].item())}


def compare(output: torch.Tensor, expected: torch.Tensor) -> Verdict:
    out, exp = output.reshape(-1), expected.reshape(-1)
    wrong = count_wrong(out, exp)
    v = Verdict(wrong=wrong)
    if out.numel() and out.numel() == exp.numel():
        v.sample = _at(out, exp, 0)
        if wrong:
            v.first_wrong = _at(out, exp, int((out != exp).nonzero()[0].item()))
    return v


def ring_fraction(world: int) -> float:
    """(n-1)/n: the share of data that crosses links for gather-like collectives."""
    return (world - 1) / world if world > 0 else 0.0
