"""Rendering an isolation run: each round's plan and result, the busbw distribution, verdicts, JSON."""
from __future__ import annotations

from typing import Dict

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.model.findings import SEVERITY, Status, to_jsonable
from nccldiag.isolate.judge import SCHEMA, IsolateReport
from nccldiag.report.jsonout import envelope, write_json

_STYLE = {"ok": "ok", "slow": "warn", "lossy": "warn", "blocked": "fail", "network": "fail", "wrong": "wrong",
          "hang": "hang", "error": "fail", "bad": "fail", "suspect": "warn", "untested": "muted"}


def _bw(v) -> str:
    return "-" if v is None else f"{v:.4g}"


def render(report: IsolateReport, con: Console) -> None:
    con.print(Text.assemble(("nccldiag isolate", "bold"),
                            f": {report.backend}{' through srun' if report.launcher == 'srun' else ''}, {len(report.hosts)} node(s) × {report.nproc_per_node} rank(s), "
                            f"{len(report.rows)} network path(s): {', '.join(r.name for r in report.rows)}"))
    if report.order:
        con.print(Text(f"pairing order (seed {report.seed}): {' '.join(report.order)}", style="muted"))
    for rnd in report.rounds:
        failed = [j for j in rnd.jobs if j.failed]
        con.print()
        con.print(Text.assemble((f"round {rnd.index} ", "bold"), (rnd.stage, "bold"),
                                f": {len(rnd.jobs)} job(s), ",
                                (f"{len(failed)} failed", "fail" if failed else "ok"),
                                (f"  {rnd.elapsed:.1f} s", "muted")))
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for col in ("row", "nodes", "result", "busbw GB/s", "retrans", "s"):
            t.add_column(col, no_wrap=True)
        for j in rnd.jobs:
            nodes = j.label() if len(j.nodes) <= 4 else f"{len(j.nodes)} nodes ({j.nodes[0]}..{j.nodes[-1]})"
            t.add_row(Text(j.row), Text(nodes), Text(j.kind or j.status, style=_STYLE.get(j.kind, "")),
                      Text(_bw(j.busbw)), Text("-" if j.ratio is None else f"{100 * j.ratio:.1f}%"),
                      Text(f"{j.elapsed:.1f}"))
        con.print(t)
    if report.thresholds:
        con.print()
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False,
                  title=None)
        for col in ("row", "pairs", "min", "p25", "median", "p75", "max", "threshold"):
            t.add_column(col, no_wrap=True)
        for row, th in report.thresholds.items():
            d = th.get("distribution") or {}
            t.add_row(*(Text(x) for x in (row, str(d.get("n", 0)), _bw(d.get("min")), _bw(d.get("p25")),
                                          _bw(d.get("median")), _bw(d.get("p75")), _bw(d.get("max")),
                                          _bw(th.get("threshold")))))
        con.print(Text(f"busbw of the completed pairs (GB/s); a pair fails below max(expected, "
                       f"{next(iter(report.thresholds.values())).get('fraction')} x median)", style="bold"))
        con.print(t)
    if report.nodes:
        con.print()
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for col in ("node", "verdict", "class", "evidence"):
            t.add_column(col)
        for v in report.nodes:
            # node output (error messages) goes in as plain Text: never read as rich markup
            t.add_row(Text(v.node), Text(v.verdict, style=_STYLE.get(v.verdict, "")),
                      Text(v.describe() if v.cls else "-"), Text(v.evidence[0] if v.evidence else "-"))
        con.print(t)
    problems = [f for f in report.findings if SEVERITY[f.status] >= SEVERITY[Status.WARN]]
    if problems:
        con.print()
    for f in sorted(problems, key=lambda f: -SEVERITY[f.status]):
        con.print(Text.assemble((f" {f.status.value.upper():5} ", f.status.value), " ", (f.check, "bold"), " ",
                                (f.host or "", "cyan"), "  ", f.message))
        for line in f.evidence[:4]:
            con.print(Text(f"        | {line}", style="muted"))
        if f.fix:
            con.print(Text(f"        fix: {f.fix}"))
    con.print()
    bad = [v.node for v in report.nodes if v.verdict == "bad"]
    cleared = [v.node for v in report.nodes if v.verdict == "ok"]
    con.print(Text.assemble(
        f"{len(report.hosts)} node(s): ", (f"{len(bad)} bad", "fail" if bad else "ok"),
        (f" ({', '.join(bad)})" if bad else ""), f", {len(cleared)} cleared; ",
        f"{report.pair_rounds} round(s) after round 0",
        (f"  ({report.elapsed:.1f} s, exit {report.exit_code})", "muted")))
    if report.out_dir:
        con.print(Text(f"records: {report.out_dir}", style="muted"))


def to_json(report: IsolateReport) -> Dict:
    return {
        **envelope(SCHEMA, report.started, report.elapsed),
        "backend": report.backend,
        "launcher": report.launcher,
        "hosts": report.hosts,
        "nproc_per_node": report.nproc_per_node,
        "collective": report.collective,
        "size": report.size,
        "rows": [{"name": r.name, "env": r.environ, "net": r.net, "why": r.why} for r in report.rows],
        "interfaces": report.interfaces,
        "seed": report.seed,
        "order": report.order,
        "exit_code": report.exit_code,
        "run_id": report.run_id,
        "out_dir": report.out_dir,
        "rounds_after_round0": report.pair_rounds,
        "rounds": [{"index": r.index, "stage": r.stage, "elapsed_s": round(r.elapsed, 3),
                    "jobs": [to_jsonable(j) for j in r.jobs]} for r in report.rounds],
        "thresholds": report.thresholds,
        "nodes": [to_jsonable(v) for v in report.nodes],
        "pairs": [to_jsonable(p) for p in report.pairs],
        "groups": report.groups,
        "counters": report.counters,
        "findings": [f.to_dict() for f in report.findings],
    }


def emit(report: IsolateReport, con: Console, json_path) -> None:
    """The tables (unless JSON goes to stdout), then the JSON file."""
    if json_path != "-":
        render(report, con)
    if json_path:
        write_json(to_json(report), json_path)
