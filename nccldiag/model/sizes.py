"""How a byte count is written for people, everywhere nccldiag writes one (pure)."""
from __future__ import annotations

from typing import Any

UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def size_text(n: Any, short: bool = False) -> str:
    """``n`` bytes in the largest binary unit it reaches, to six significant digits: ``1 GiB``, ``1.5 MiB``,
    ``512 B``. ``short``: as a plot's axis labels it (``1.5M``, ``512``). Anything that is not a count of bytes
    (None, a negative number, not a number) is ``-``."""
    if not isinstance(n, (int, float)) or isinstance(n, bool) or n < 0:
        return "-"
    for unit, scale in UNITS:
        if n >= scale:
            return f"{n / scale:g}{unit[0]}" if short else f"{n / scale:g} {unit}"
    return f"{n:g}" if short else f"{n:g} B"


def exact_size_text(n: int) -> str:
    """``n`` bytes written so that reading it back gives ``n`` again: in the largest binary unit that divides it
    (``64 GiB``, ``24684128 KiB``), else in bytes. For what is written to be compared later (a site spec)."""
    for unit, scale in UNITS:
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B" if n else "0"
