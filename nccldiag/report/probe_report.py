"""A probe's report document (JSON), and the document on the terminal: per setting, each collective's status and
busbw; transports; findings."""
from __future__ import annotations

import json
from typing import Any, Dict, List

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.model.findings import to_jsonable
from nccldiag.model.sizes import size_text
from nccldiag.probe.analysis import SCHEMA, ProbeReport
from nccldiag.probe.results import MPI_CHECK
from nccldiag.report import diagnoses_report, findings
from nccldiag.report import matrix as tmatrix
from nccldiag.report.jsonout import dumps, envelope

_STYLE = {"ok": "ok", "wrong": "wrong", "error": "fail", "hang": "hang", "unsupported": "unsupported",
          "not-run": "muted", "incomplete": "warn"}
CELL_STYLE = {"works": "ok", "hang": "hang", "error": "fail", "wrong": "wrong", "not used": "muted",
              tmatrix.ONE_RANK: "muted", "?": "muted", "not run": "muted", "ok": "ok", "incomplete": "warn",
              "not-run": "muted"}


def transport_table(doc: Dict[str, Any]) -> Table:
    """The transport matrix of a probe document as a rich table."""
    m = tmatrix.build(doc)
    t = Table(header_style="bold", box=None, pad_edge=False)
    t.add_column("setting", no_wrap=True)
    for c in m.columns:
        t.add_column(c, no_wrap=True)
    t.add_column("busbw GB/s", justify="right", no_wrap=True)
    if any(r.expected for r in m.rows):
        t.add_column("% expected", justify="right", no_wrap=True)
    for r in m.rows:
        cells = [Text(r.cells[c], style=CELL_STYLE.get(r.cells[c], "")) for c in m.columns]
        bw = "-" if r.busbw is None else f"{r.busbw:.2f}"
        extra = [("-" if r.percent is None else f"{r.percent:.0f}%")] if any(x.expected for x in m.rows) else []
        t.add_row(Text(r.setting, style="bold"), *cells, bw, *extra)
    return t


def _gbps(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _sockets(s: Dict[str, Any]) -> List[str]:
    """Per host, the interface and address its ranks used (gloo has no log of its own)."""
    by: Dict[tuple, List[int]] = {}
    for r, info in sorted(((int(r), i) for r, i in (s.get("ranks") or {}).items()), key=lambda x: x[0]):
        by.setdefault((info.get("host") or "?", info.get("interface") or "?", info.get("address") or "?"), []).append(r)
    return [f"{h}: {i} {a} (rank{'s' if len(rs) > 1 else ''} {','.join(map(str, rs))})" for (h, i, a), rs in by.items()]


def _verdict(doc: Dict[str, Any]) -> Text:
    settings = doc.get("settings") or []
    worked = [str(s.get("name")) for s in settings if s.get("status") == "ok"]
    unrun = [str(s.get("name")) for s in settings if s.get("status") in NOT_RUN]
    broken = [str(s.get("name")) for s in settings if s.get("status") not in ("ok",) + NOT_RUN]
    elapsed = "" if doc.get("elapsed_s") is None else f"{float(doc['elapsed_s']):.1f} s, "
    return Text.assemble(
        f"{len(settings)} setting(s): ",
        (f"{len(worked)} worked", "ok"), (f" ({', '.join(worked)})" if worked else ""), ", ",
        (f"{len(broken)} failed", "fail" if broken else ""), (f" ({', '.join(broken)})" if broken else ""),
        (f", {len(unrun)} not run ({', '.join(unrun)})" if unrun else ""),
        (f"  ({elapsed}exit {doc.get('exit_code')})", "muted"),
    )


#: Setting statuses that are no outcome: nothing of the setting ran, or nothing it asked for can run here.
NOT_RUN = ("not-run", "unsupported")


def _label(s: Dict[str, Any]) -> str:
    """``name (K=V K=V)``, as ``Setting.label()``."""
    env = s.get("env") or {}
    return f"{s.get('name')} ({' '.join(f'{k}={v}' for k, v in env.items())})" if env else str(s.get("name"))


def _rows(s: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A setting's collectives, the MPI check first (the document keeps it last)."""
    colls = s.get("collectives") or {}
    mpi = [oc for name, oc in colls.items() if name == MPI_CHECK]
    return mpi + [oc for name, oc in colls.items() if name != MPI_CHECK]


def _collectives(s: Dict[str, Any]) -> Table:
    ranks = s.get("ranks") or {}
    table = Table(show_header=True, header_style="bold", pad_edge=False, box=None)
    for col in ("collective", "status", "ranks at fault", "largest size", "algbw GB/s", "busbw GB/s"):
        table.add_column(col, no_wrap=True)
    for oc in _rows(s):
        bad = sorted({int(r) for key in ("ranks_wrong", "ranks_error", "ranks_hung", "ranks_missing")
                      for r in oc.get(key) or []})
        who = ",".join(f"{r}@{(ranks.get(str(r)) or {}).get('host') or '?'}" for r in bad[:6]) \
            + ("..." if len(bad) > 6 else "")
        sweep = oc.get("sweep") or []
        big = max(sweep, key=lambda p: p.get("size") or 0) if sweep else None
        if big is not None and not big.get("size"):
            big = None  # barrier: nothing moved, nothing to show
        status = str(oc.get("status"))
        table.add_row(str(oc.get("collective")), Text(status, style=_STYLE.get(status, "")), who or "-",
                      size_text(big.get("size")) if big else "-", _gbps(big.get("algbw") if big else None),
                      _gbps(big.get("busbw") if big else None))
    return table


def render(doc: Dict[str, Any], con: Console, verbose: bool = False) -> None:
    """A probe's report document on the terminal: summary first (the verdict, the transport matrix, the
    diagnoses), then each setting, then the findings. ``verbose`` shows every evidence line and the findings
    that passed."""
    settings = doc.get("settings") or []
    if settings:
        diagnoses_report.print_headline(doc, con)
    con.print(Text.assemble(("nccldiag probe", "bold"),
                            f": {doc.get('backend')} via {doc.get('launcher')}, {len(doc.get('hosts') or [])} "
                            f"node(s) × {doc.get('nproc_per_node')} rank(s)"))
    if doc.get("note"):
        con.print(Text(str(doc["note"]), style="muted"))
    if settings:
        con.print(_verdict(doc))
        con.print()
        paths = "transport paths" if doc.get("backend") == "nccl" else "socket interfaces (gloo)"
        con.print(Text(f"transport matrix: per setting, the {paths} it used", style="bold"))
        con.print(transport_table(doc))
        con.print()
        diagnoses_report.render(doc, con, verbose=verbose, head=False)
    bandwidth = (doc.get("diagnosis_summary") or {}).get("bandwidth") or {}
    for s in settings:
        con.print()
        status = str(s.get("status"))
        con.print(Text.assemble(("setting ", "bold"), (_label(s), "bold"), "  ",
                                (str(s.get("verdict")), _STYLE.get(status, "")),
                                (f"  {float(s.get('elapsed_s') or 0):.1f} s", "muted")))
        if s.get("collectives"):
            con.print(_collectives(s))
        elif not s.get("findings"):
            con.print(Text("  no rank reported anything", style="muted"))
        bw = diagnoses_report.bandwidth_line(bandwidth, str(s.get("name")))
        if bw is not None:
            con.print(bw)
        if doc.get("backend") == "gloo" and s.get("ranks"):
            for line in _sockets(s):
                con.print(Text(f"  gloo socket {line}", style="muted"))
    findings.render(con, list(doc.get("findings") or []) + [f for s in settings for f in s.get("findings") or []],
                    verbose)
    con.print()
    con.print(_verdict(doc))
    if doc.get("out_dir"):
        con.print(Text(f"records and logs: {doc['out_dir']}", style="muted"))


def to_json(report: ProbeReport) -> Dict:
    """The report as one JSON object (schema ``nccldiag.probe/1``)."""
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
            "verdict": sr.verdict,
            "unfinished": sr.unfinished,
            "calls_done": sr.calls if sr.unfinished else None,
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
        **diagnoses_report.to_json(report.diagnoses, report.diagnosis_summary),
    }


def render_commands(report: ProbeReport, con: Console) -> None:
    """``--dry-run``: every command, per setting and node, exactly as it would run."""
    con.print("# dry run: no node was contacted and nothing was started. A real run first finds each node's "
              "interface to the first node and a free rendezvous port there.", markup=False, highlight=False)
    if report.bounds:
        con.print("# bounds: " + ", ".join(report.bounds), markup=False, highlight=False, soft_wrap=True)
    for setting, host, cmd in report.commands or []:
        con.print(f"# {setting} on {host}", markup=False, highlight=False)
        con.print(cmd, markup=False, highlight=False, soft_wrap=True)


def document(report: ProbeReport) -> Dict:
    """The report document exactly as ``report.json`` and every format hold it."""
    return json.loads(dumps(to_json(report)))


def emit(report: ProbeReport, con: Console, outs, verbose: bool = False) -> None:
    """The table (unless JSON goes to stdout), then report.json in the run directory, then the report files
    (:func:`nccldiag.report.finish.finish`). ``outs`` is a :class:`~nccldiag.report.outputs.Outputs`."""
    from nccldiag.report.finish import finish

    finish(document(report), outs, lambda doc: render(doc, con, verbose=verbose), report.out_dir)
