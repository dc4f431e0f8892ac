"""nccl-tests output: the result table, ``Avg bus bandwidth`` and ``Out of bounds values``."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional

from nccldiag import rx


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
    started: bool = False  # its header was seen (nThread, the device list or the column titles)
    table: bool = False  # its column titles were printed: init is over and the first collective has started
    summaries: int = 0  # 'Avg bus bandwidth' lines
    headers: int = 0  # 'nThread' lines: the runs started in this output
    devices: List[str] = field(default_factory=list)  # the GPU names of its 'Using devices' lines
    hosts: List[str] = field(default_factory=list)  # the hosts of its ranks, where the device lines name them
    elided: bool = False  # a poster's elision mark ('...', '[...]', '<snip>') after the column titles: rows may be cut

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
    cut: Optional[List[str]] = None  # a row's first cells, the rest broken off onto the next line
    for line in _read(text or ""):
        before, cut = cut, None
        s = line.strip().lstrip(">#").strip()
        if _HEADER.search(s):
            run.started = True
            run.headers += s.startswith("nThread")
            run.table = run.table or bool(_TITLES.search(s))
            continue
        m = _AVG.search(s) if "Avg bus" in s else None
        if m:
            avg = _float(m.group(1))  # None: not a number ('1.2.3')
            if avg is not None:
                run.avg_busbw = avg
                run.summaries += 1
            continue
        m = _STARTING.search(s) if "Collective test" in s else None
        if m and run.name is None:
            run.name = m.group(1)
            continue
        m = _BOUNDS.search(s) if "Out of bounds" in s else None
        if m:
            run.out_of_bounds = int(m.group(1))
            continue
        m = _RANK.search(s) if "Rank" in s else None
        if m:
            run.ranks += 1
            run.started = True
            if len(run.devices) < 1024:
                run.devices.append(m.group("gpu").strip())
            if m.group("host") and m.group("host") not in run.hosts and len(run.hosts) < 1024:
                run.hosts.append(m.group("host"))
            continue
        if run.table and _ELISION.match(line.strip()):
            run.elided = True
            continue
        toks = s.split()
        if before is not None and toks and not toks[0].isalpha():
            row = _row(before + toks)  # a row broken between its cells (a mail's, an editor's or fold's break)
            if row is not None:
                run.rows.append(row)
                continue
        row = _row(toks)
        if row is not None:
            run.rows.append(row)
        elif run.table and 4 <= len(toks) < 11 and toks[0].isdigit() and toks[1].isdigit() and toks[2].isalpha():
            cut = toks
    return run if run.rows or run.avg_busbw is not None or run.out_of_bounds is not None or run.started else None


def _row(toks: List[str]) -> Optional[NcclTestsRow]:
    """A result row from its cells, or None: size, count, type, [redop], [root], then time, algbw, busbw, #wrong out
    of place and in place."""
    if len(toks) < 11 or not toks[0].isdigit() or not toks[1].isdigit():
        return None
    rest = toks[3:]
    if len(rest) < 8 or len(rest) > 10 or not all(_cell(t) for t in rest[-8:]):
        return None
    redop = rest[0] if len(rest) > 8 else ""
    rest = rest[-8:]
    return NcclTestsRow(int(toks[0]), int(toks[1]), toks[2], redop, _float(rest[2]), _float(rest[6]),
                        f"{rest[3]}/{rest[7]}")


# a line that is only an elision mark, as posters cut long outputs
_ELISION = rx.compile(r"^(?:\.{3,}|\u2026|\[\s*(?:\.{3,}|\u2026|snip(?:ped)?)\s*\]|\(\s*(?:\.{3,}|\u2026)\s*\)|"
                      r"<\s*snip(?:ped)?\s*>|-+\s*snip\s*-+)$", re.I)
_AVG = rx.compile(r"Avg bus bandwidth\s*:\s*([\d.]+)")
_STARTING = rx.compile(r"Collective test starting:\s*(\S+)")
_BOUNDS = rx.compile(r"Out of bounds values\s*:\s*(\d+)")
_TITLES = rx.compile(r"^(?:size|bytes)\s+(?:count|N)\s+type\b")
_HEADER = rx.compile(r"^nThread \d+|^Using devices\s*$|^(?:size|bytes)\s+(?:count|N)\s+type\b")
_RANK = rx.compile(r"\bRank\s+\d+\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+on\s+(?P<host>\S+)\s+)?(?:device\s+\d+|uses device"
                   r"\s+\d+)\s+\[[^\]]*\]\s*(?P<gpu>.*)$")


# The lines that may say something to parse_nccl_tests: those whose first character after blanks, '>' and '#' is
# not an ASCII letter or is the first of 'nThread', 'Using devices', 'size' or 'bytes' (found after a newline by
# one expression), and those holding a word read anywhere in them. Found over the whole text at once, in C, so
# that the lines of a job's stdout kept after a table's start (a training loop's progress lines, up to the bound)
# are never split apart and read one by one.
_STARTS = rx.compile(r"\n(?:[^\S\n]|[>#])*(?:[^A-Za-z\s>#]|[nUsb])")
_ANYWHERE = ("Avg bus", "Collective test", "Out of bounds", "Rank")
# the line breaks other than LF, where str.splitlines() cuts lines that the search above would not
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _read(text: str) -> List[str]:
    """The lines of ``text`` (as ``str.splitlines()`` cuts them) that may say something to
    :func:`parse_nccl_tests`, in order: the others say nothing to it."""
    if any(c in text for c in _OTHER_BREAKS):
        return text.splitlines()
    text = "\n" + text
    starts = {m.start() + 1 for m in _STARTS.finditer(text)}
    rfind, find = text.rfind, text.find
    for word in _ANYWHERE:
        at = find(word)
        while at >= 0:
            s = rfind("\n", 0, at) + 1
            starts.add(s)
            e = find("\n", at)
            if e < 0:
                break
            at = find(word, e)
    out = []
    for s in sorted(starts):
        e = find("\n", s)
        out.append(text[s:] if e < 0 else text[s:e])
    return out


def _cell(tok: str) -> bool:
    return tok == "N/A" or _float(tok) is not None
