"""Rendering an isolation run: each round's plan and result, the busbw distribution, verdicts, JSON."""
from __future__ import annotations

import json
from typing import Dict

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.model.findings import to_jsonable
from nccldiag.isolate.judge import SCHEMA, IsolateReport
from nccldiag.probe.launchers import SSH
from nccldiag.report import findings
from nccldiag.report.jsonout import dumps, envelope

_STYLE = {"ok": "ok", "slow": "warn", "lossy": "warn", "blocked": "fail", "network": "fail", "wrong": "wrong",
          "hang": "hang", "error": "fail", "bad": "fail", "suspect": "warn", "untested": "muted",
          "not-started": "muted", "unmeasured": "muted"}


def _bw(v) -> str:
    return "-" if v is None else f"{v:.4g}"


def _through(launcher) -> str:
    """What the header says of how the jobs started: nothing for isolate's own torchrun over SSH, else the
    launcher that started them."""
    return "" if launcher in (None, "", SSH) else f" through {launcher}"


def _job_nodes(nodes) -> str:
    return "+".join(nodes) if len(nodes) <= 4 else f"{len(nodes)} nodes ({nodes[0]}..{nodes[-1]})"


def _describe(v: Dict) -> str:
    rows = v.get("rows") or []
    where = f" ({', '.join(rows)})" if rows else ""
    return f"{v['cls']}{where}" if v.get("cls") else "-"


def render(doc: Dict, con: Console, verbose: bool = False) -> None:
    """The isolation's report document on the terminal: each round, the busbw distribution, the verdicts."""
    rows = doc.get("rows") or []
    hosts = doc.get("hosts") or []
    con.print(Text.assemble(("nccldiag isolate", "bold"),
                            f": {doc.get('backend')}{_through(doc.get('launcher'))}, "
                            f"{len(hosts)} node(s) × {doc.get('nproc_per_node')} rank(s), "
                            f"{len(rows)} network path(s): {', '.join(str(r.get('name')) for r in rows)}"))
    if doc.get("note"):
        con.print(Text(str(doc["note"]), style="muted"))
    if doc.get("order"):
        con.print(Text(f"pairing order (seed {doc.get('seed')}): {' '.join(doc['order'])}", style="muted"))
    for rnd in doc.get("rounds") or []:
        jobs = rnd.get("jobs") or []
        failed = [j for j in jobs if j.get("kind") not in ("", None, "ok", "not-started", "unmeasured")]
        late = [j for j in jobs if j.get("kind") == "not-started"]
        short = [j for j in jobs if j.get("kind") == "unmeasured"]
        con.print()
        con.print(Text.assemble((f"round {rnd.get('index')} ", "bold"), (str(rnd.get("stage")), "bold"),
                                f": {len(jobs)} job(s), ",
                                (f"{len(failed)} failed", "fail" if failed else "ok"),
                                (f", {len(late)} not started before the deadline" if late else "", "muted"),
                                (f", {len(short)} cut before their rate could be measured" if short else "", "muted"),
                                (f"  {float(rnd.get('elapsed_s') or 0):.1f} s", "muted")))
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for col in ("row", "nodes", "result", "busbw GB/s", "retrans", "s"):
            t.add_column(col, no_wrap=True)
        for j in jobs:
            kind = j.get("kind") or ""
            t.add_row(Text(str(j.get("row"))), Text(_job_nodes(j.get("nodes") or [])),
                      Text(kind or str(j.get("status")), style=_STYLE.get(kind, "")),
                      Text(_bw(j.get("busbw"))), Text("-" if j.get("ratio") is None else f"{100 * j['ratio']:.1f}%"),
                      Text(f"{float(j.get('elapsed') or 0):.1f}"))
        con.print(t)
    thresholds = doc.get("thresholds") or {}
    if thresholds:
        con.print()
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False, title=None)
        for col in ("row", "pairs", "min", "p25", "median", "p75", "max", "threshold"):
            t.add_column(col, no_wrap=True)
        for row, th in thresholds.items():
            d = th.get("distribution") or {}
            t.add_row(*(Text(x) for x in (row, str(d.get("n", 0)), _bw(d.get("min")), _bw(d.get("p25")),
                                          _bw(d.get("median")), _bw(d.get("p75")), _bw(d.get("max")),
                                          _bw(th.get("threshold")))))
        con.print(Text(f"busbw of the completed pairs (GB/s); a pair fails below max(expected, "
                       f"{next(iter(thresholds.values())).get('fraction')} x median)", style="bold"))
        con.print(t)
    nodes = doc.get("nodes") or []
    if nodes:
        con.print()
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for col in ("node", "verdict", "class", "evidence"):
            t.add_column(col)
        for v in nodes:
            # node output (error messages) goes in as plain Text: never read as rich markup
            verdict = str(v.get("verdict"))
            t.add_row(Text(str(v.get("node"))), Text(verdict, style=_STYLE.get(verdict, "")), Text(_describe(v)),
                      Text(str((v.get("evidence") or ["-"])[0])))
        con.print(t)
    findings.render(con, doc.get("findings") or [], verbose)
    con.print()
    bad = [str(v.get("node")) for v in nodes if v.get("verdict") == "bad"]
    cleared = [v for v in nodes if v.get("verdict") == "ok"]
    elapsed = "" if doc.get("elapsed_s") is None else f"{float(doc['elapsed_s']):.1f} s, "
    con.print(Text.assemble(
        f"{len(hosts)} node(s): ", (f"{len(bad)} bad", "fail" if bad else "ok"),
        (f" ({', '.join(bad)})" if bad else ""), f", {len(cleared)} cleared; ",
        f"{doc.get('rounds_after_round0')} round(s) after round 0",
        (f"  ({elapsed}exit {doc.get('exit_code')})", "muted")))
    if doc.get("out_dir"):
        con.print(Text(f"records: {doc['out_dir']}", style="muted"))


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
        "rounds": [r.to_line() for r in report.rounds],
        "thresholds": report.thresholds,
        "nodes": [to_jsonable(v) for v in report.nodes],
        "pairs": [to_jsonable(p) for p in report.pairs],
        "groups": report.groups,
        "counters": report.counters,
        "findings": [f.to_dict() for f in report.findings],
    }


def document(report: IsolateReport) -> Dict:
    """The report document exactly as ``report.json`` and every format hold it."""
    return json.loads(dumps(to_json(report)))


def emit(report: IsolateReport, con: Console, outs) -> None:
    """The tables (unless JSON goes to stdout), then report.json in the run directory, then the report files
    (:func:`nccldiag.report.finish.finish`). ``outs`` is a :class:`~nccldiag.report.outputs.Outputs`."""
    from nccldiag.report.finish import finish

    finish(document(report), outs, lambda doc: render(doc, con), report.out_dir)
