"""Rendering a probe: per setting, each collective's status and busbw; transports; findings; JSON."""
from __future__ import annotations

import json
import os
from typing import Dict, List

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.model.findings import SEVERITY, Status, to_jsonable
from nccldiag.probe.analysis import SCHEMA, ProbeReport
from nccldiag.report import diagnoses_report
from nccldiag.report.jsonout import dumps, envelope

_STYLE = {"ok": "ok", "wrong": "wrong", "error": "fail", "hang": "hang", "unsupported": "unsupported",
          "not-run": "muted", "incomplete": "warn"}


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


def _verdict(report: ProbeReport) -> Text:
    worked = [sr.setting.name for sr in report.settings if sr.status == "ok"]
    broken = [sr.setting.name for sr in report.settings if sr.status != "ok"]
    return Text.assemble(
        f"{len(report.settings)} setting(s): ",
        (f"{len(worked)} worked", "ok"), (f" ({', '.join(worked)})" if worked else ""), ", ",
        (f"{len(broken)} failed", "fail" if broken else ""), (f" ({', '.join(broken)})" if broken else ""),
        (f"  ({report.elapsed:.1f} s, exit {report.exit_code})", "muted"),
    )


def render(report: ProbeReport, con: Console, verbose: bool = False) -> None:
    """Summary first (the verdict, the transport matrix, the diagnoses), then each setting, then the findings.

    ``verbose`` shows every evidence line and the findings that passed.
    """
    diags, dsum = diagnoses_report.for_probe(report)
    if report.settings:
        diagnoses_report.print_headline(diags, con)
    con.print(Text.assemble(("nccldiag probe", "bold"),
                            f": {report.backend} via {report.launcher}, {len(report.hosts)} node(s) × "
                            f"{report.nproc_per_node} rank(s)"))
    if report.note:
        con.print(Text(report.note, style="muted"))
    if report.settings:
        from nccldiag.report.summary import transport_table

        con.print(_verdict(report))
        con.print()
        paths = "transport paths" if report.backend == "nccl" else "socket interfaces (gloo)"
        con.print(Text(f"transport matrix: per setting, the {paths} it used", style="bold"))
        con.print(transport_table(document(report)))
        con.print()
        diagnoses_report.render(diags, dsum, con, verbose=verbose, head=False)
    for sr in report.settings:
        so = sr.outcome
        con.print()
        head = Text.assemble(("setting ", "bold"), (sr.setting.label(), "bold"), "  ",
                             (sr.verdict, _STYLE.get(sr.status, "")), (f"  {sr.elapsed:.1f} s", "muted"))
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
        bw = diagnoses_report.bandwidth_line(dsum, sr.setting.name)
        if bw is not None:
            con.print(bw)
        if report.backend == "gloo" and so.ranks:
            for line in _sockets(so):
                con.print(Text(f"  gloo socket {line}", style="muted"))
    floor = Status.OK if verbose else Status.WARN
    problems = [f for f in report.all_findings if SEVERITY[f.status] >= SEVERITY[floor]]
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
        if f.status == Status.OK:
            continue
        for line in f.evidence[: None if verbose else 4]:
            con.print(Text(f"        | {line}", style="muted"))
        if len(f.evidence) > 4 and not verbose:
            con.print(Text(f"        | ... {len(f.evidence) - 4} more (-v)", style="muted"))
        if f.fix:
            con.print(Text(f"        fix: {f.fix}"))
    con.print()
    con.print(_verdict(report))
    if report.out_dir:
        con.print(Text(f"records and logs: {report.out_dir}", style="muted"))


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
        **diagnoses_report.to_json(*diagnoses_report.for_probe(report)),
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
    """The table (unless JSON goes to stdout), then report.json in the run directory, then the report files.

    ``outs`` is a :class:`~nccldiag.report.outputs.Outputs` (or a JSON path, '-' for stdout). A failing
    write never hides the table.
    """
    from nccldiag.report.outputs import Outputs

    if not isinstance(outs, Outputs):
        outs = Outputs(json=outs)
    doc = document(report)
    if not outs.stdout_json:
        from nccldiag.report.outputs import reader_may_leave

        with reader_may_leave():
            render(report, con, verbose=verbose)
    if report.out_dir and os.path.isdir(report.out_dir):
        from nccldiag import rundir

        rundir.save_report(report.out_dir, doc)
    outs.write(doc)
