"""nccl-tests output: the result table, ``Avg bus bandwidth`` and ``Out of bounds values``."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class NcclTestsRow:
    size: int
    count: int
    dtype: str
    redop: str
    busbw_oop: Optional[float]  # out-of-place busbw, GB/s
    busbw_ip: Optional[float]  # in-place busbw, GB/s
    wrong: Optional[str]  # "#wrong" (or the old "error") columns, "N/A" when unchecked


@dataclass
class NcclTestsRun:
    """The result table of an nccl-tests binary (``all_reduce_perf`` ...)."""

    rows: List[NcclTestsRow] = field(default_factory=list)
    avg_busbw: Optional[float] = None
    out_of_bounds: Optional[int] = None
    ranks: int = 0
    name: Optional[str] = None  # "all_reduce_perf", from "# Collective test starting: ..." where printed
    source: str = ""  # the file it was read from (``nccldiag log``)

    @property
    def verified(self) -> bool:
        """Whether the run checked its results (``-c 0`` prints N/A in the #wrong columns)."""
        return any((r.wrong or "").replace("N/A", "").strip("/") for r in self.rows)

    @property
    def peak_busbw(self) -> Optional[float]:
        vals = [v for r in self.rows for v in (r.busbw_oop, r.busbw_ip) if v is not None]
        return max(vals) if vals else None

    @property
    def wrong_rows(self) -> List[NcclTestsRow]:
        def bad(w: Optional[str]) -> bool:
            try:
                return w not in (None, "N/A") and float(w) >= 1  # old tables: a relative error, < 1
            except ValueError:
                return False
        return [r for r in self.rows if any(bad(w) for w in (r.wrong or "").split("/"))]


def _float(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


def parse_nccl_tests(text: Optional[str]) -> Optional[NcclTestsRun]:
    """Rows, ``Avg bus bandwidth`` and ``Out of bounds values`` of nccl-tests output.

    Parsed on whitespace (column widths changed across versions; the old
    tables have an ``error`` column and no ``root``). A row is size, count,
    type, redop, [root], then time/algbw/busbw/#wrong out of place and the
    same in place; NCCL INFO lines and mangled header lines are skipped.
    """
    run = NcclTestsRun()
    for line in (text or "").splitlines():
        s = line.strip()
        m = re.search(r"Avg bus bandwidth\s*:\s*([\d.]+)", s)
        if m:
            run.avg_busbw = float(m.group(1))
            continue
        m = re.search(r"Collective test starting:\s*(\S+)", s)
        if m and run.name is None:
            run.name = m.group(1)
            continue
        m = re.search(r"Out of bounds values\s*:\s*(\d+)", s)
        if m:
            run.out_of_bounds = int(m.group(1))
            continue
        if re.search(r"\bRank\s+\d+\s+Group\s+\d+\s+Pid\b", s):
            run.ranks += 1
            continue
        toks = s.split()
        if len(toks) < 12 or not toks[0].isdigit() or not toks[1].isdigit():
            continue
        rest = toks[4:]
        if len(rest) == 9:  # with the root column
            rest = rest[1:]
        if len(rest) != 8:
            continue
        run.rows.append(NcclTestsRow(int(toks[0]), int(toks[1]), toks[2], toks[3], _float(rest[2]), _float(rest[6]),
                                     f"{rest[3]}/{rest[7]}"))
    return run if run.rows or run.avg_busbw is not None else None
