"""perftest output (``ib_write_bw``, ``ib_read_bw``, ``ib_read_lat`` ...): header fields and result rows."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from nccldiag import rx


def _lines(text: Optional[str]) -> List[str]:
    return [l.replace("\t", " ").rstrip() for l in (text or "").splitlines()]


@dataclass
class PerftestResult:
    test: Optional[str] = None  # "RDMA_Write BW Test"
    device: Optional[str] = None
    link_type: Optional[str] = None
    gid_index: Optional[int] = None
    mtu: Optional[int] = None
    unit: Optional[str] = None  # "Gb/sec" (--report_gbits) or "MB/sec"
    rows: List[Dict[str, float]] = field(default_factory=list)  # bytes, iterations, peak, average, msg_rate
    warnings: List[str] = field(default_factory=list)
    kind: Optional[str] = None  # "bw" or "lat": which table the output holds
    lat_columns: List[str] = field(default_factory=list)
    latency_rows: List[Dict[str, float]] = field(default_factory=list)  # bytes, iterations, t_min, t_max, ...
    source: str = ""  # the file it was read from (``nccldiag log``)


_RUN = rx.compile(r"[A-Za-z .]+:?")  # a run of a key's characters, and the colon after it
_VALUE = rx.compile(r"\s*(\S+)")
_BW_AVERAGE = rx.compile(r"BW average\[([^\]]{1,512})\]")


def _fields(line: str) -> List[Tuple[str, str]]:
    """``[(key, value)]`` of a header line (``Device : mlx5_0  Link type : IB``), in one pass: each run of a
    key's characters is read once, so the line costs linear time whatever it holds."""
    out: List[Tuple[str, str]] = []
    pos = 0
    while True:
        m = _RUN.search(line, pos)
        if not m:
            return out
        pos = m.end()
        key = m.group(0)
        if not key.endswith(":"):
            continue
        key = key[:-1].lstrip(" .").rstrip()
        v = _VALUE.match(line, pos)
        if key and v:
            out.append((key, v.group(1)))
            pos = v.end()


def parse_perftest(text: Optional[str]) -> PerftestResult:
    """The header fields and result rows of a perftest run.

    Bandwidth tests (``ib_write_bw``, ``ib_read_bw``, ...) fill ``rows``;
    latency tests (``ib_read_lat``: ``t_min t_max t_typical t_avg ...``) fill
    ``latency_rows`` and leave ``rows`` empty: a latency is not a bandwidth.
    """
    r = PerftestResult()
    for line in _lines(text):
        s = line.strip()
        if not s or set(s) <= set("-"):
            continue
        if re.search(r"\bBW Test\b|\bLat(?:ency)? Test\b", s) and r.test is None:
            r.test = s
            continue
        for key, val in _fields(s):
            key = key.lower()
            if key == "device":
                r.device = val
            elif key == "link type":
                r.link_type = val
            elif key == "gid index" and val.isdigit():
                r.gid_index = int(val)
            elif key == "mtu":
                m = re.match(r"(\d+)", val)
                r.mtu = int(m.group(1)) if m else None
        m = _BW_AVERAGE.search(s)
        if m:
            r.unit, r.kind = m.group(1), "bw"
            continue
        if re.search(r"\bt_min\b|\bt_typical\b|\bt_avg\b", s):
            # ib_*_lat: #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] ...
            r.kind = "lat"
            r.lat_columns = [c.split("[")[0] for c in re.findall(r"t_\w+(?:\[[^\]]*\])?", s)]
            continue
        nums = s.split()
        if r.kind == "lat":
            if len(nums) >= 3 and all(re.fullmatch(r"\d+(?:\.\d+)?", n) for n in nums):
                row = {"bytes": float(nums[0]), "iterations": float(nums[1])}
                for name, val in zip(r.lat_columns, nums[2:]):
                    row[name] = float(val)
                r.latency_rows.append(row)
                continue
        elif len(nums) >= 4 and all(re.fullmatch(r"\d+(?:\.\d+)?", n) for n in nums[:4]):
            row = {"bytes": float(nums[0]), "iterations": float(nums[1]), "peak": float(nums[2]),
                   "average": float(nums[3])}
            if len(nums) >= 5 and re.fullmatch(r"\d+(?:\.\d+)?", nums[4]):
                row["msg_rate"] = float(nums[4])
            r.rows.append(row)
            continue
        if re.search(r"warning|conflicting|not max|error", s, re.I) and ":" in s:
            r.warnings.append(s)
    return r
