"""A check's report document (JSON), and the document on the terminal: the node × area table, the findings."""
from __future__ import annotations

import json
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.check.engine import SCHEMA, CheckReport
from nccldiag.model.findings import Status, clean_text, to_jsonable
from nccldiag.report import diagnoses_report, findings
from nccldiag.report.findings import RANK as _RANK
from nccldiag.report import jsonout
from nccldiag.report.jsonout import dumps, envelope, plain


def exit_code(report: CheckReport) -> int:
    """The check's exit code, following the verdict: 1 when a finding or a diagnosis fails, else 3 when a node
    could not be checked, else 0."""
    return diagnoses_report.verdict_exit_code(report.exit_code, report.diagnoses)


def _area_status(node: Dict[str, Any], column: str) -> Optional[str]:
    return (node.get("areas") or {}).get(column)


def _judged(doc: Dict[str, Any], column: str) -> bool:
    """Whether any node has a finding other than skip in ``column``."""
    return any(f.get("area") == column and f.get("status") != "skip"
               for n in doc.get("nodes") or [] for f in n.get("findings") or [])


def _by_status(node: Dict[str, Any], cols: List[str]) -> Text:
    """``fail: gpu, xid  warn: nvlink  ok: 9`` for the compact table."""
    groups: Dict[str, List[str]] = {}
    for c in cols:
        st = _area_status(node, c)
        if st is not None:
            groups.setdefault(st, []).append(c)
    parts: List[Tuple[str, str]] = []
    for st in sorted(groups, key=lambda s: -_RANK.get(s, 0)):
        names = groups[st]
        shown = str(len(names)) if st in ("ok", "skip") else ", ".join(names)
        parts += [(f"{st}: ", st), (shown + "  ", "")]
    return Text.assemble(*parts)


def render(doc: Dict[str, Any], con: Console, verbose: bool = False) -> None:
    """A check's report document on the terminal: the diagnoses, the node × area table, the findings."""
    diagnoses_report.render(doc, con, verbose=verbose)
    nodes = doc.get("nodes") or []
    areas = list(doc.get("areas") or [])
    # columns where every node skipped (the hardware or tool is absent everywhere) are named below the table
    # instead, so that the table of a GPU node with every area stays readable in a terminal
    cols = [c for c in areas if c == "ssh" or _judged(doc, c)]
    skipped = [c for c in areas if c not in cols]
    node_width = min(40, max([4] + [len(str(n.get("host"))) for n in nodes]))
    table = Table(title=None, show_lines=False, header_style="bold", pad_edge=False)
    table.add_column("node", no_wrap=True, min_width=node_width)

    def name(node: Dict[str, Any]) -> Text:
        return Text(str(node.get("host")), style="bold" if node.get("status") in ("fail", "error") else "")

    if node_width + 2 + sum(max(len(c), 5) + 3 for c in cols) <= con.width:
        for c in cols:
            table.add_column(c, no_wrap=True, min_width=4)
        for node in nodes:
            cells = []
            for c in cols:
                st = _area_status(node, c)
                cells.append(Text("-", style="muted") if st is None else Text(st, style=st))
            table.add_row(name(node), *cells)
    else:
        # one column per area would not fit the terminal: the areas of each node grouped by status
        table.add_column("status", no_wrap=True)
        table.add_column("areas")
        for node in nodes:
            st = str(node.get("status"))
            table.add_row(name(node), Text(st, style=st), _by_status(node, cols))
    con.print(table)
    if skipped:
        con.print(Text(f"skipped on every node: {', '.join(skipped)}", style="muted"))
    findings.render(con, [f for n in nodes for f in n.get("findings") or []], verbose)
    n = len(nodes)
    unhealthy = sum(1 for x in nodes if x.get("status") == "fail")
    unreachable = sum(1 for x in nodes if not x.get("reachable") or x.get("status") == "error")
    warned = sum(1 for x in nodes if x.get("status") == "warn")
    healthy = n - unhealthy - unreachable - warned
    elapsed = "" if doc.get("elapsed_s") is None else f"{float(doc['elapsed_s']):.1f} s, "
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
            (f"  ({elapsed}exit {doc.get('exit_code')})", "muted"),
        )
    )
    for note in doc.get("notes") or []:
        con.print(Text(f"note: {note}", style="muted"))
    if doc.get("slurm") is not None:
        render_slurm(doc["slurm"], con)


def render_slurm(section: Dict, con: Console) -> None:
    """The nodes to drain with their reasons, and what --drain / --resume-healthy did."""
    if section.get("error"):
        con.print(Text(f"slurm: {section['error']}", style="muted"))
        return
    applied = section.get("applied") or []
    drained = {a["node"] for a in applied if a["action"] == "drain" and a["ok"]}
    for node, hosts in sorted((section.get("shared") or {}).items()):
        con.print(Text.assemble("  slurm: ", (str(node), "cyan"), f" left alone: {len(hosts)} hosts match it ("
                                f"{', '.join(map(str, hosts))}); which of them it is cannot be told"))
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


def emit_health_line(line: str, fd: int = 1) -> bool:
    """Write the health check's one line to ``fd`` (stdout) at once, whole, past every buffer: a scheduler's
    health program reads it from a pipe that the process leaves right after (srun, slurmd). Retries
    interrupted and partial writes and a pipe that is full for a moment; returns whether the whole line went.
    """
    import errno
    import os
    import select

    try:
        sys.stdout.flush()  # whatever was printed before goes first
    except (OSError, ValueError):
        pass
    data = (clean_text(line).replace("\n", " ") + "\n").encode("utf-8", "replace")
    waited = 0
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        except BlockingIOError:
            if waited >= 300:  # 30 s of a pipe nobody reads
                return False
            select.select([], [fd], [], 0.1)
            waited += 1
            continue
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return False
        data = data[n:]
    return True


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


def node_entries(report: CheckReport, facts_of: Callable[[str], Dict]) -> Callable[[], Iterator[Dict]]:
    """``nodes()``: each node's part of the report document, in order, made as it is asked for (its facts
    ``facts_of(host)``, read back from where they waited), so that the whole report is never held."""
    columns = report.columns

    def nodes() -> Iterator[Dict]:
        for n in report.nodes:
            entry = plain(node_entry(n, columns, include_facts=False))
            entry["facts"] = facts_of(n.host)
            yield entry
            entry = None  # written: let go before the next is made

    return nodes


_TABLE_KEYS = ("area", "check", "status", "message", "fix", "host")  # what the table prints of a passed finding


def table_entries(report: CheckReport) -> List[Dict]:
    """Each node's part of the document as the terminal table reads it: its findings, never its facts; a finding
    that passed or was skipped is printed without its evidence or values (:func:`nccldiag.report.findings.render`),
    so they are not kept for it."""
    out = []
    for n in report.nodes:
        entry = jsonout.plain(node_entry(n, report.columns, include_facts=False))
        entry["findings"] = [f if f.get("status") not in ("ok", "skip") else {k: f.get(k) for k in _TABLE_KEYS}
                             for f in entry.get("findings") or []]
        out.append(clean_text(entry))
    return out


def to_json(report: CheckReport, include_facts: bool = True, include_nodes: bool = True) -> Dict:
    """The report as one JSON object (schema ``nccldiag.check/1``), its diagnoses included. Without
    ``include_nodes`` its ``nodes`` is an empty list, for a writer that makes each node's part as it writes it
    (:func:`node_entry`, :func:`nccldiag.atomic.streamed`)."""
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
        **diagnoses_report.to_json(report.diagnoses, report.diagnosis_summary),
        **({"slurm": report.slurm} if report.slurm is not None else {}),
    }


def document(report: CheckReport) -> Dict:
    """The report document exactly as ``report.json`` and every format hold it."""
    return json.loads(dumps(to_json(report)))
