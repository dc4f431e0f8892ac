"""The transport matrix of a probe (pure): one row per setting, a column per path.

NCCL's paths are the transports its logs show (P2P, SHM, NET/IB, NET/Socket,
NVLS, CollNet); gloo has one path, TCP over the interfaces its ranks bound,
so its columns are those interfaces. A cell says what happened on that path
under that setting: works, hang, error, wrong (result) or not used; ``one
rank`` where the setting ran a single rank (no path between ranks to use);
``?`` where the setting left no log to tell.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

NCCL_PATHS = ("P2P", "SHM", "NET/IB", "NET/Socket", "NVLS")
ONE_RANK = "one rank"  # a setting of a single rank: NCCL connects no peer, so it logs no transport
_STATE = {"ok": "works", "hang": "hang", "wrong": "wrong", "error": "error", "incomplete": "error",
          "not-run": "not run", "unsupported": "not run"}


@dataclass
class Row:
    setting: str
    label: str
    status: str
    cells: Dict[str, str] = field(default_factory=dict)  # column -> works/hang/error/wrong/not used/one rank/?
    busbw: Optional[float] = None  # peak busbw of the reference collective (GB/s)
    collective: Optional[str] = None  # that collective
    expected: Optional[float] = None  # expected busbw when known (GB/s)

    @property
    def percent(self) -> Optional[float]:
        if self.busbw is None or not self.expected:
            return None
        return 100.0 * self.busbw / self.expected


@dataclass
class Matrix:
    columns: List[str]
    rows: List[Row]


def _path(transport: str) -> str:
    if transport.startswith("NET/IB"):
        return "NET/IB"
    return transport


def _peak(setting: Dict[str, Any]):
    """(collective, peak busbw): all_reduce when it moved data, else the best collective."""
    best = None
    for name, oc in (setting.get("collectives") or {}).items():
        points = [float(p.get("busbw") or 0.0) for p in oc.get("sweep") or [] if p.get("size")]
        if not points:
            continue
        peak = max(points)
        if name == "all_reduce":
            return name, peak
        if best is None or peak > best[1]:
            best = (name, peak)
    return best or (None, None)


def expectation(doc: Dict[str, Any], setting: Dict[str, Any]):
    """(collective, expected busbw GB/s, measured busbw GB/s) of a setting where the diagnosis derived one.

    The diagnosis' bandwidth comparison (``diagnosis_summary.bandwidth``) comes first; a setting's own
    ``expected_busbw_gbps`` next; else ``(None, None, None)``.
    """
    cmp = (((doc.get("diagnosis_summary") or {}).get("bandwidth") or {}).get(setting.get("name") or "")) or {}
    exp = cmp.get("expected") or {}
    if isinstance(exp.get("gbps"), (int, float)) and exp["gbps"] > 0:
        measured = cmp.get("measured_gbps")
        return cmp.get("collective"), float(exp["gbps"]), float(measured) if isinstance(measured, (int, float)) else None
    own = setting.get("expected_busbw_gbps")
    if isinstance(own, (int, float)) and own > 0:
        return None, float(own), None
    return None, None, None


def _label(setting: Dict[str, Any]) -> str:
    env = setting.get("env") or {}
    name = setting.get("name") or "?"
    return name if not env else f"{name} ({' '.join(f'{k}={v}' for k, v in env.items())})"


def build(doc: Dict[str, Any]) -> Matrix:
    """The matrix of a probe document (``probe_report.to_json``)."""
    settings = doc.get("settings") or []
    gloo = doc.get("backend") != "nccl"
    if gloo:
        columns: List[str] = []
        for s in settings:
            ranks = s.get("ranks") or {}
            for _, r in sorted(ranks.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 1 << 30):
                iface = r.get("interface")
                if iface and iface not in columns:
                    columns.append(iface)
    else:
        used = {_path(t) for s in settings for t in s.get("transports") or []}
        columns = list(NCCL_PATHS) + sorted(used - set(NCCL_PATHS))
    rows = []
    for s in settings:
        status = s.get("status") or "not-run"
        state = _STATE.get(status, "error")
        if gloo:
            mine = {r.get("interface") for r in (s.get("ranks") or {}).values() if r.get("interface")}
        else:
            mine = {_path(t) for t in s.get("transports") or []}
        cells = {}
        for c in columns:
            if c in mine:
                cells[c] = state
            elif not mine:
                cells[c] = ONE_RANK if s.get("world_size") == 1 else "?"
            else:
                cells[c] = "not used"
        coll, peak = _peak(s)
        exp_coll, expected, measured = expectation(doc, s)
        if measured is not None:  # the figure the expectation is compared with (its collective, its algorithm)
            coll, peak = exp_coll or coll, measured
        rows.append(Row(setting=s.get("name") or "?", label=_label(s), status=status, cells=cells, busbw=peak,
                        collective=coll, expected=expected))
    return Matrix(columns=columns, rows=rows)
