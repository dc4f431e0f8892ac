"""Rendering a check: the node × area table, the findings, and JSON."""
from __future__ import annotations

from collections import OrderedDict
from typing import Dict, List, Tuple

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.check.engine import SCHEMA, CheckReport
from nccldiag.model.findings import SEVERITY, Finding, Status, to_jsonable
from nccldiag.report import diagnoses_report
from nccldiag.report.jsonout import envelope


def exit_code(report: CheckReport) -> int:
    """The check's exit code, following the verdict: 1 when a finding or a diagnosis fails, else 3 when a node
    could not be checked, else 0."""
    return diagnoses_report.verdict_exit_code(report.exit_code, diagnoses_report.for_check(report)[0])


def _fold(hosts: List[str]) -> str:
    try:
        from ClusterShell.NodeSet import NodeSet

        folded = str(NodeSet.fromlist(hosts))
        return folded if len(folded) < len(",".join(hosts)) else ",".join(hosts)
    except Exception:
        return ",".join(hosts)


def grouped(report: CheckReport, min_status: Status = Status.WARN) -> List[Tuple[Finding, List[str]]]:
    """Findings at ``min_status`` or worse, identical ones across hosts merged."""
    groups: "OrderedDict[tuple, Tuple[Finding, List[str]]]" = OrderedDict()
    for f in report.findings:
        if SEVERITY[f.status] < SEVERITY[min_status]:
            continue
        key = (f.status, f.check, f.message, f.fix)
        if key in groups:
            groups[key][1].append(f.host or "")
        else:
            groups[key] = (f, [f.host or ""])
    return sorted(groups.values(), key=lambda g: (-SEVERITY[g[0].status], g[0].check))


def _judged(report: CheckReport, column: str) -> bool:
    """Whether any node has a finding other than skip in ``column``."""
    return any(f.area == column and f.status != Status.SKIP for f in report.findings)


def _by_status(node, cols: List[str]) -> Text:
    """``fail: gpu, xid  warn: nvlink  ok: 9`` for the compact table."""
    groups: Dict[Status, List[str]] = {}
    for c in cols:
        st = node.area_status(c)
        if st is not None:
            groups.setdefault(st, []).append(c)
    parts: List[Tuple[str, str]] = []
    for st in sorted(groups, key=lambda s: -SEVERITY[s]):
        names = groups[st]
        shown = str(len(names)) if st in (Status.OK, Status.SKIP) else ", ".join(names)
        parts += [(f"{st.value}: ", st.value), (shown + "  ", "")]
    return Text.assemble(*parts)


def render(report: CheckReport, con: Console, verbose: bool = False) -> None:
    diagnoses_report.render(*diagnoses_report.for_check(report), con, verbose=verbose)
    # columns where every node skipped (the hardware or tool is absent everywhere) are named below the table
    # instead, so that the table of a GPU node with every area stays readable in a terminal
    cols = [c for c in report.columns if c == "ssh" or _judged(report, c)]
    skipped = [c for c in report.columns if c not in cols]
    node_width = min(40, max([4] + [len(n.host) for n in report.nodes]))
    table = Table(title=None, show_lines=False, header_style="bold", pad_edge=False)
    table.add_column("node", no_wrap=True, min_width=node_width)
    if node_width + 2 + sum(max(len(c), 5) + 3 for c in cols) <= con.width:
        for c in cols:
            table.add_column(c, no_wrap=True, min_width=4)
        for node in report.nodes:
            cells = []
            for c in cols:
                st = node.area_status(c)
                if st is None:
                    cells.append(Text("-", style="muted"))
                else:
                    cells.append(Text(st.value, style=st.value))
            table.add_row(Text(node.host, style="bold" if node.status in (Status.FAIL, Status.ERROR) else ""), *cells)
    else:
        # one column per area would not fit the terminal: the areas of each node grouped by status
        table.add_column("status", no_wrap=True)
        table.add_column("areas")
        for node in report.nodes:
            table.add_row(Text(node.host, style="bold" if node.status in (Status.FAIL, Status.ERROR) else ""),
                          Text(node.status.value, style=node.status.value), _by_status(node, cols))
    con.print(table)
    if skipped:
        con.print(Text(f"skipped on every node: {', '.join(skipped)}", style="muted"))
    floor = Status.OK if verbose else Status.WARN
    items = grouped(report, floor)
    if items:
        con.print()
    for f, hosts in items:
        if f.status == Status.OK and not verbose:
            continue
        label = Text(f" {f.status.value.upper():5} ", style=f.status.value)
        con.print(Text.assemble(label, " ", (f.check, "bold"), " ", (_fold(hosts), "cyan"), "  ", f.message))
        for line in f.evidence[:5] if f.status != Status.OK else []:
            con.print(Text(f"        | {line}", style="muted"))
        if f.fix and f.status != Status.OK:
            con.print(Text(f"        fix: {f.fix}"))
    if verbose:
        skips = grouped(report, Status.SKIP)
        for f, hosts in skips:
            if f.status == Status.SKIP:
                con.print(Text(" SKIP  ", style="skip"), Text(f.check), Text(_fold(hosts)), Text(f.message, style="muted"))
    n = len(report.nodes)
    unhealthy = sum(1 for x in report.nodes if x.status == Status.FAIL)
    unreachable = sum(1 for x in report.nodes if not x.reachable or x.status == Status.ERROR)
    warned = sum(1 for x in report.nodes if x.status == Status.WARN)
    healthy = n - unhealthy - unreachable - warned
    con.print()
    con.print(
        Text.assemble(
            f"{n} node{'s' if n != 1 else ''}: ",
            (f"{healthy} healthy", "ok"),
            ", ",
            (f"{warned} with warnings", "warn" if warned else ""),
            ", ",
            (f"{unhealthy} unhealthy", "fail" if unhealthy else ""),
            ", ",
            (f"{unreachable} not checked", "error" if unreachable else ""),
            (f"  ({report.elapsed:.1f} s, exit {exit_code(report)})", "muted"),
        )
    )
    for note in report.inventory_notes:
        con.print(Text(f"note: {note}", style="muted"))
    if report.slurm is not None:
        render_slurm(report.slurm, con)


def render_slurm(section: Dict, con: Console) -> None:
    """The nodes to drain with their reasons, and what --drain / --resume-healthy did."""
    if section.get("error"):
        con.print(Text(f"slurm: {section['error']}", style="muted"))
        return
    applied = section.get("applied") or []
    drained = {a["node"] for a in applied if a["action"] == "drain" and a["ok"]}
    if section.get("to_drain"):
        con.print()
        con.print(Text("Slurm nodes to drain:", style="bold"))
        for a in section["to_drain"]:
            done = " (drained)" if a["node"] in drained else ""
            con.print(Text.assemble("  ", (a["node"], "cyan"), f"  reason={a['reason']!r}{done}"))
    for a in applied:
        if a["action"] == "drain" and a["ok"]:
            continue
        if a["action"] == "resume":
            msg = "resumed" if a["ok"] else f"resume failed: {a['message']}"
        elif a["action"] == "keep":
            msg = f"left drained: {a['why']}"
        else:
            msg = f"drain failed: {a['message']}"
        con.print(Text.assemble("  slurm: ", (a["node"], "cyan"), f" {msg}"))


def health_line(report: CheckReport) -> Tuple[str, int]:
    """One line and an exit status in LBNL NHC's manner: nothing to say and 0 when healthy."""
    host = report.nodes[0].host if report.nodes else "?"
    failed = [f for f in report.findings if f.status == Status.FAIL]
    errors = [f for f in report.findings if f.status == Status.ERROR]
    drained = [a for a in (report.slurm or {}).get("applied", []) if a["action"] == "drain" and a["ok"]]
    suffix = f" (drained {drained[0]['node']})" if drained else ""
    if failed:
        checks = ", ".join(dict.fromkeys(f.check for f in failed))
        return f"ERROR: nccldiag: Health check failed: {host}: {checks}: {failed[0].message}{suffix}", 1
    if errors or exit_code(report) == 3:
        checks = ", ".join(dict.fromkeys(f.check for f in errors)) or "incomplete"
        return f"ERROR: nccldiag: Health check could not complete: {host}: {checks}{suffix}", 3
    return f"nccldiag: {host} healthy ({report.elapsed:.2f} s)", 0


def node_entry(n, columns: List[str], include_facts: bool = True) -> Dict:
    """One node's part of the JSON report (``columns``: the report's :attr:`CheckReport.columns`)."""
    entry = {
        "host": n.host,
        "status": n.status.value,
        "reachable": n.reachable,
        "elapsed_s": round(n.elapsed, 3),
        "areas": {c: (n.area_status(c).value if n.area_status(c) else None) for c in columns},
        "findings": [f.to_dict() for f in n.findings],
    }
    if include_facts:
        entry["facts"] = to_jsonable(n.facts)
    return entry


def to_json(report: CheckReport, include_facts: bool = True, include_nodes: bool = True) -> Dict:
    """The report as one JSON object (schema ``nccldiag.check/1``), its diagnoses included. Without
    ``include_nodes`` its ``nodes`` is an empty list, for a writer that makes each node's part as it writes it
    (:func:`node_entry`, :func:`nccldiag.report.jsonout.streamed`)."""
    columns = report.columns
    nodes = [node_entry(n, columns, include_facts) for n in report.nodes] if include_nodes else []
    counts: Dict[str, int] = {s.value: 0 for s in Status}
    for n in report.nodes:
        counts[n.status.value] += 1
    return {
        **envelope(SCHEMA, report.started, report.elapsed),
        "areas": columns,
        "exit_code": exit_code(report),
        "summary": {"nodes": len(report.nodes), "by_status": counts},
        "notes": report.inventory_notes,
        "nodes": nodes,
        **diagnoses_report.to_json(*diagnoses_report.for_check(report)),
        **({"slurm": report.slurm} if report.slurm is not None else {}),
    }

