"""Rendering a probe: per setting, each collective's status and busbw; transports; findings; JSON."""
from __future__ import annotations

from typing import Dict, List

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.model.findings import SEVERITY, Status, to_jsonable
from nccldiag.probe.analysis import SCHEMA, ProbeReport
from nccldiag.report.jsonout import envelope, write_json

_STYLE = {"ok": "ok", "wrong": "wrong", "error": "fail", "hang": "hang", "unsupported": "unsupported",
          "not-run": "muted", "incomplete": "warn"}
_PATHS = ("P2P", "SHM", "NET/IB", "NET/IB+GDRDMA", "NET/Socket", "NVLS", "CollNet")


def _gbps(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _size(n) -> str:
    if n is None:
        return "-"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:g} {unit}"
    return f"{n} B"


def _sockets(so) -> List[str]:
    """Per host, the interface and address its ranks used (gloo has no log of its own)."""
    by: Dict[tuple, List[int]] = {}
    for r, info in sorted(so.ranks.items()):
        by.setdefault((info.host or "?", info.interface or "?", info.address or "?"), []).append(r)
    return [f"{h}: {i} {a} (rank{'s' if len(rs) > 1 else ''} {','.join(map(str, rs))})" for (h, i, a), rs in by.items()]


def render(report: ProbeReport, con: Console) -> None:
    con.print(Text.assemble(("nccldiag probe", "bold"),
                            f": {report.backend} via {report.launcher}, {len(report.hosts)} node(s) × "
                            f"{report.nproc_per_node} rank(s)"))
    if report.note:
        con.print(Text(report.note, style="muted"))
    for sr in report.settings:
        so = sr.outcome
        con.print()
        head = Text.assemble(("setting ", "bold"), (sr.setting.label(), "bold"), "  ",
                             (sr.status, _STYLE.get(sr.status, "")), (f"  {sr.elapsed:.1f} s", "muted"))
        con.print(head)
        table = Table(show_header=True, header_style="bold", pad_edge=False, box=None)
        for col in ("collective", "status", "ranks at fault", "largest size", "algbw GB/s", "busbw GB/s"):
            table.add_column(col, no_wrap=True)
        rows = list(so.collectives.values())
        if so.mpi is not None:
            rows.insert(0, so.mpi)
        for oc in rows:
            bad = sorted(set(oc.ranks_wrong) | set(oc.ranks_error) | set(oc.ranks_hung) | set(oc.ranks_missing))
            who = ",".join(f"{r}@{so.host_of(r) or '?'}" for r in bad[:6]) + ("..." if len(bad) > 6 else "")
            big = oc.largest
            if big is not None and not big.size:
                big = None  # barrier: nothing moved, nothing to show
            table.add_row(oc.collective, Text(oc.status, style=_STYLE.get(oc.status, "")), who or "-",
                          _size(big.size) if big else "-", _gbps(big.algbw if big else None),
                          _gbps(big.busbw if big else None))
        if rows:
            con.print(table)
        elif not sr.findings:
            con.print(Text("  no rank reported anything", style="muted"))
        if report.backend == "gloo" and so.ranks:
            for line in _sockets(so):
                con.print(Text(f"  gloo socket {line}", style="muted"))
    if report.backend == "nccl" and report.settings:
        con.print()
        t = Table(title=None, header_style="bold", box=None, pad_edge=False)
        t.add_column("setting")
        t.add_column("worked")
        t.add_column("network")
        for p in _PATHS:
            t.add_column(p)
        for sr in report.settings:
            used = set(sr.transports)
            t.add_row(sr.setting.name, Text("yes" if sr.status == "ok" else "no", style="ok" if sr.status == "ok" else "fail"),
                      ",".join(sr.networks) or "-", *[("x" if p in used else "") for p in _PATHS])
        con.print(Text("transports NCCL used, per setting", style="bold"))
        con.print(t)
    problems = [f for f in report.all_findings if SEVERITY[f.status] >= SEVERITY[Status.WARN]]
    if problems:
        con.print()
    seen = set()
    for f in sorted(problems, key=lambda f: -SEVERITY[f.status]):
        key = (f.check, f.message)
        if key in seen:
            continue
        seen.add(key)
        con.print(Text.assemble((f" {f.status.value.upper():5} ", f.status.value), " ", (f.check, "bold"), " ",
                                (f.host or "", "cyan"), "  ", f.message))
        for line in f.evidence[:4]:
            con.print(Text(f"        | {line}", style="muted"))
        if f.fix:
            con.print(Text(f"        fix: {f.fix}"))
    con.print()
    worked = [sr.setting.name for sr in report.settings if sr.status == "ok"]
    broken = [sr.setting.name for sr in report.settings if sr.status != "ok"]
    con.print(Text.assemble(
        f"{len(report.settings)} setting(s): ",
        (f"{len(worked)} worked", "ok"), (f" ({', '.join(worked)})" if worked else ""), ", ",
        (f"{len(broken)} failed", "fail" if broken else ""), (f" ({', '.join(broken)})" if broken else ""),
        (f"  ({report.elapsed:.1f} s, exit {report.exit_code})", "muted"),
    ))
    if report.out_dir:
        con.print(Text(f"records and logs: {report.out_dir}", style="muted"))


def to_json(report: ProbeReport) -> Dict:
    settings: List[Dict] = []
    for sr in report.settings:
        so = sr.outcome
        colls = {}
        rows = list(so.collectives.values()) + ([so.mpi] if so.mpi is not None else [])
        for oc in rows:
            colls[oc.collective] = to_jsonable(oc)
        settings.append({
            "name": sr.setting.name,
            "env": sr.setting.env,
            "why": sr.setting.why,
            "status": sr.status,
            "elapsed_s": round(sr.elapsed, 3),
            "timed_out": sr.timed_out,
            "world_size": so.world_size,
            "ranks": {str(r): {"host": i.host, "local_rank": i.local_rank, "versions": i.versions,
                               "interface": i.interface, "address": i.address} for r, i in so.ranks.items()},
            "collectives": colls,
            "transports": sr.transports,
            "networks": sr.networks,
            "nccl_versions": sr.nccl_versions,
            "findings": [f.to_dict() for f in sr.findings],
        })
    return {
        **envelope(SCHEMA, report.started, report.elapsed),
        "backend": report.backend,
        "launcher": report.launcher,
        "hosts": report.hosts,
        "nproc_per_node": report.nproc_per_node,
        "note": report.note,
        "exit_code": report.exit_code,
        "out_dir": report.out_dir,
        "run_id": report.run_id,
        "findings": [f.to_dict() for f in report.findings],
        "settings": settings,
    }


def render_commands(report: ProbeReport, con: Console) -> None:
    """``--dry-run``: every command, per setting and node, exactly as it would run."""
    con.print("# dry run: no node was contacted and nothing was started. A real run first finds each node's "
              "interface to the first node and a free rendezvous port there.", markup=False, highlight=False)
    for setting, host, cmd in report.commands or []:
        con.print(f"# {setting} on {host}", markup=False, highlight=False)
        con.print(cmd, markup=False, highlight=False, soft_wrap=True)


def emit(report: ProbeReport, con: Console, json_path) -> None:
    """The table (unless JSON goes to stdout), then the JSON file: a failing write never hides the table."""
    if json_path != "-":
        render(report, con)
    if json_path:
        write_json(to_json(report), json_path)
