"""Rendering what NCCL logs say: a process table, a rank-pair transport table, findings, and JSON."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence, Tuple

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.model.findings import SEVERITY, Finding, Status, to_jsonable
from nccldiag.model.findings import exit_code as findings_exit_code
from nccldiag.report import diagnoses_report
from nccldiag.report.jsonout import envelope
from nccldiag.nccl.log import NcclLogFacts

SCHEMA = "nccldiag.log/1"
Diagnosed = Tuple[List[Any], Any]  # (diagnoses, their summary), as diagnoses_report.run returns them
MAX_ROWS = 64


def exit_code(findings: Sequence[Finding], diagnosed: Optional[Diagnosed] = None) -> int:
    """1 when any finding failed or the verdict is a failure (the logs show one), else 0."""
    code = findings_exit_code(f.status for f in findings if f.status != Status.ERROR)
    if diagnosed is not None and any(d.severity == "fail" for d in diagnosed[0]):
        code = max(code, 1)
    return code


def diagnose(facts: NcclLogFacts, findings: Sequence[Finding], pasted: Any = None) -> Diagnosed:
    """The diagnoses of the logs, computed once for every view of them; ``pasted``: the node outputs pasted in
    them (:func:`nccldiag.diagnosis.pasted.scan`)."""
    return diagnoses_report.for_log(facts, findings, pasted)


def _ranks(ranks: Sequence[int]) -> str:
    """Compact rank list: 0-3,8,10-11."""
    out: List[str] = []
    rs = sorted(set(ranks))
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        out.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    return ",".join(out) or "-"


def _procs_table(facts: NcclLogFacts) -> Table:
    t = Table(title="processes", title_justify="left", header_style="bold", pad_edge=False)
    for col in ("process", "ranks", "cudaDev", "NCCL", "network"):
        t.add_column(col, no_wrap=True)
    for p in facts.procs[:MAX_ROWS]:
        t.add_row(p.name, _ranks(p.ranks), _ranks(p.devs), ", ".join(p.versions) or "-", ", ".join(p.networks) or "-")
    if len(facts.procs) > MAX_ROWS:
        t.add_row(Text(f"... {len(facts.procs) - MAX_ROWS} more", style="muted"), "", "", "", "")
    return t


def _pairs_table(facts: NcclLogFacts) -> Table:
    t = Table(title="transports by rank pair", title_justify="left", header_style="bold", pad_edge=False)
    for col in ("pair", "hosts", "transports", "via", "channels"):
        t.add_column(col, no_wrap=True)
    pairs = facts.summary.pairs if facts.summary else []
    for p in pairs[:MAX_ROWS]:
        hosts = f"{','.join(p.src_hosts) or '?'} -> {','.join(p.dst_hosts) or '?'}"
        cats = Text(", ".join(p.categories), style="warn" if "NET/Socket" in p.categories else "")
        t.add_row(p.key, hosts, cats, ", ".join(p.vias[:3]) + (" ..." if len(p.vias) > 3 else ""), str(len(p.channels)))
    if len(pairs) > MAX_ROWS:
        t.add_row(Text(f"... {len(pairs) - MAX_ROWS} more", style="muted"), "", "", "", "")
    return t


def render(facts: NcclLogFacts, findings: Sequence[Finding], con: Console, verbose: bool = False,
           diagnosed: Optional[Diagnosed] = None) -> None:
    """Diagnoses, tables, then findings (worst first), then a one-line summary."""
    empty = not (facts.nccl_lines or facts.errors or facts.kernel or facts.nccl_tests or facts.perftests or facts.ras
                 or facts.nccl_tests_no_result)
    diagnoses_report.render(*(diagnosed or diagnose(facts, findings)), con, verbose=verbose, empty=empty)
    if facts.procs:
        con.print(_procs_table(facts))
    if facts.summary and facts.summary.pairs:
        con.print(_pairs_table(facts))
    floor = Status.SKIP if verbose else Status.OK
    items = sorted((f for f in findings if SEVERITY[f.status] >= SEVERITY[floor]),
                   key=lambda f: -SEVERITY[f.status])
    if items:
        con.print()
    for f in items:
        label = Text(f" {f.status.value.upper():5} ", style=f.status.value)
        con.print(Text.assemble(label, " ", (f.check, "bold"), "  ", f.message))
        if f.status in (Status.OK, Status.SKIP) and not verbose:
            continue
        for line in f.evidence[: (len(f.evidence) if verbose else 5)]:
            con.print(Text(f"        | {line}", style="muted"))
        if f.fix and f.status not in (Status.OK, Status.SKIP):
            con.print(Text(f"        fix: {f.fix}"))
    s = facts.summary
    n_fail = sum(1 for f in findings if f.status == Status.FAIL)
    con.print()
    lines = f"{facts.nccl_lines} NCCL line(s)"
    if facts.unprefixed:
        lines += f" ({facts.unprefixed} without their NCCL prefix, process unknown)"
    parts = [f"{len(facts.sources)} file(s)", lines, _processes(facts)]
    if s is not None:
        parts.append("transports: " + (", ".join(s.transports) or "none seen"))
        if s.versions:
            parts.append("NCCL " + ", ".join(s.versions))
        if s.nranks:
            parts.append("world " + ", ".join(str(n) for n in s.nranks[:6]) + " ranks")
    if facts.nccl_tests:
        parts.append(f"{len(facts.nccl_tests)} nccl-tests result table(s)")
    if facts.perftests:
        parts.append(f"{len(facts.perftests)} perftest result(s)")
    if facts.ras:
        parts.append(f"{len(facts.ras)} NCCL RAS report(s)")
    verdict = Text(f"{n_fail} failure(s)" if n_fail else "no failure", style="fail" if n_fail else "ok")
    con.print(Text.assemble("; ".join(parts) + "; ", verdict))
    if not facts.nccl_lines:
        con.print(Text(no_nccl_lines(facts), style="warn"))


def _processes(facts: NcclLogFacts) -> str:
    """How many processes the NCCL lines came from; without any, the ranks and hosts of nccl-tests' device list."""
    if facts.procs:
        return f"{len(facts.procs)} process(es)"
    ranks, hosts = tests_ranks(facts)
    if ranks:
        on = f" on {len(hosts)} host(s)" if hosts else ""
        return f"{ranks} rank(s){on} (nccl-tests' device list)"
    return "0 process(es)"


def tests_ranks(facts: NcclLogFacts) -> Tuple[int, List[str]]:
    """Ranks and hosts named by the ``# Using devices`` lines of the nccl-tests outputs in the logs (the most ranks
    one output listed: a run split over files lists them once)."""
    runs = list(facts.nccl_tests) + list(facts.nccl_tests_no_result)
    hosts: List[str] = []
    for r in runs:
        for h in r.hosts:
            if h not in hosts:
                hosts.append(h)
    return max((r.ranks for r in runs), default=0), hosts


def no_nccl_lines(facts: NcclLogFacts) -> str:
    if facts.nccl_tests or facts.perftests or facts.ras:
        what = "the benchmark output" if facts.nccl_tests or facts.perftests else "the RAS report"
        return (f"no NCCL lines found beside {what}: run the job with NCCL_DEBUG=INFO to see the "
                "transports and network NCCL chose")
    return "no NCCL lines found: was the job run with NCCL_DEBUG=INFO?"


def facts_json(facts: NcclLogFacts, include_channels: bool = False) -> Dict[str, Any]:
    """The facts as JSON values; channel lines are summarised per pair unless asked for."""
    skip = set() if include_channels else {"channels"}
    d = {f.name: to_jsonable(getattr(facts, f.name)) for f in dataclasses.fields(facts) if f.name not in skip}
    d["channel_lines"] = facts.total("channels")
    for wd, w in zip(d["warns"], facts.warns):
        wd["result"] = w.result
        wd["result_name"] = w.result_name
    for od, o in zip(d["orphan_chains"], facts.orphan_chains):
        od["result"] = o.result
    if d.get("summary"):
        for pd, p in zip(d["summary"]["pairs"], facts.summary.pairs):
            pd["key"] = p.key
    for pd, p in zip(d["procs"], facts.procs):
        pd["name"] = p.name
    return d


def to_json(facts: NcclLogFacts, findings: Sequence[Finding], include_channels: bool = False,
            diagnosed: Optional[Diagnosed] = None) -> Dict[str, Any]:
    """The whole report as one JSON object (schema ``nccldiag.log/1``)."""
    d = facts_json(facts, include_channels)
    diagnosed = diagnosed or diagnose(facts, findings)
    return {
        **envelope(SCHEMA),
        "files": list(facts.sources),
        "exit_code": exit_code(findings, diagnosed),
        "summary": d.pop("summary"),
        "findings": [f.to_dict() for f in findings],
        "facts": d,
        **diagnoses_report.to_json(*diagnosed),
    }
