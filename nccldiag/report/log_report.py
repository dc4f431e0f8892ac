"""What NCCL logs say as a report document (JSON), and the document on the terminal: a process table, a rank-pair
transport table, findings."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Sequence, Tuple

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nccldiag.diagnosis.model import fails_run
from nccldiag.model.findings import Finding, Status, to_jsonable
from nccldiag.model.findings import exit_code as findings_exit_code
from nccldiag.report import diagnoses_report, findings
from nccldiag.report.jsonout import envelope
from nccldiag.nccl.facts import NcclLogFacts

SCHEMA = "nccldiag.log/1"
Diagnosed = Tuple[List[Any], Any]  # (diagnoses, their summary), as nccldiag.diagnosis.conclude returns them
MAX_ROWS = 64


def exit_code(findings: Sequence[Finding], diagnosed: Diagnosed) -> int:
    """1 when any finding failed or the verdict is a failure (the logs show one, or lines that say something failed
    and no cause explains: :func:`nccldiag.diagnosis.model.fails_run`), else 0."""
    code = findings_exit_code(f.status for f in findings if f.status != Status.ERROR)
    if any(fails_run(d) for d in diagnosed[0]):
        code = max(code, 1)
    return code


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


def _procs_table(procs: List[Dict[str, Any]]) -> Table:
    t = Table(title="processes", title_justify="left", header_style="bold", pad_edge=False)
    for col in ("process", "ranks", "cudaDev", "NCCL", "network"):
        t.add_column(col, no_wrap=True)
    for p in procs[:MAX_ROWS]:
        t.add_row(str(p.get("name")), _ranks(p.get("ranks") or []), _ranks(p.get("devs") or []),
                  ", ".join(p.get("versions") or []) or "-", ", ".join(p.get("networks") or []) or "-")
    if len(procs) > MAX_ROWS:
        t.add_row(Text(f"... {len(procs) - MAX_ROWS} more", style="muted"), "", "", "", "")
    return t


def _pairs_table(pairs: List[Dict[str, Any]]) -> Table:
    t = Table(title="transports by rank pair", title_justify="left", header_style="bold", pad_edge=False)
    for col in ("pair", "hosts", "transports", "via", "channels"):
        t.add_column(col, no_wrap=True)
    for p in pairs[:MAX_ROWS]:
        hosts = f"{','.join(p.get('src_hosts') or []) or '?'} -> {','.join(p.get('dst_hosts') or []) or '?'}"
        cats = p.get("categories") or []
        vias = p.get("vias") or []
        t.add_row(str(p.get("key")), hosts, Text(", ".join(cats), style="warn" if "NET/Socket" in cats else ""),
                  ", ".join(vias[:3]) + (" ..." if len(vias) > 3 else ""), str(len(p.get("channels") or [])))
    if len(pairs) > MAX_ROWS:
        t.add_row(Text(f"... {len(pairs) - MAX_ROWS} more", style="muted"), "", "", "", "")
    return t


def _empty(f: Dict[str, Any], pasted: Dict[str, Any]) -> bool:
    """Whether the logs held nothing to judge: no NCCL line, error, benchmark or RAS report, and no node output
    or process's end read (in part, too)."""
    return not (f.get("nccl_lines") or f.get("errors") or f.get("kernel") or f.get("nccl_tests")
                or f.get("perftests") or f.get("p2p_bandwidth") or f.get("ras") or f.get("nccl_tests_no_result")
                or _judged(pasted) or pasted.get("partial") or pasted.get("signals") or pasted.get("oom"))


def _judged(pasted: Dict[str, Any]) -> bool:
    """Whether a node output read in the text feeds a check (a kind no area reads, such as ``nvidia-smi dmon``, is
    read and shown only: it judges nothing, so a text of such outputs alone is no all-clear)."""
    return any(b.get("sources") for b in pasted.get("blocks") or [])


def _pasted(con: Console, p: Dict[str, Any], verbose: bool) -> None:
    """The node outputs read in the texts (where, whose), the lines read in part, the bounds met, and the failing
    and warning findings of the outputs (as ``check`` shows a node's)."""
    blocks, partial = p.get("blocks") or [], p.get("partial") or []
    if blocks:
        con.print()
        t = Table(title="Node outputs read in the text", title_justify="left", header_style="bold")
        for col in ("output", "where", "host", "read through"):
            t.add_column(col)
        for b in blocks[:MAX_ROWS]:
            where = f"{b.get('file')}:{b.get('line')}" + (f"-{b['end_line']}" if b.get("end_line") != b.get("line")
                                                          else "")
            t.add_row(str(b.get("kind")), where, str(b.get("host") or "-"), ", ".join(b.get("stripped") or []))
        if len(blocks) > MAX_ROWS:
            t.add_row(Text(f"... {len(blocks) - MAX_ROWS} more", style="muted"), "", "", "")
        con.print(t)
    for x in partial[:MAX_ROWS if verbose else 5]:
        con.print(Text(f"read in part ({x.get('kind')}): {x.get('file')}:{x.get('line')}: {x.get('text')}",
                       style="warn"))
    for why in p.get("bounded") or []:
        con.print(Text(why, style="warn"))
    findings.render(con, p.get("findings") or [], verbose)


def render(doc: Dict[str, Any], con: Console, verbose: bool = False) -> None:
    """A log report document on the terminal: diagnoses, tables, then findings (worst first), then a one-line
    summary."""
    f = doc.get("facts") or {}
    s = doc.get("summary") or None
    p = doc.get("pasted") or {}
    diagnoses_report.render(doc, con, verbose=verbose, empty=_empty(f, p))
    _pasted(con, p, verbose)
    if f.get("procs"):
        con.print(_procs_table(f["procs"]))
    if s and s.get("pairs"):
        con.print(_pairs_table(s["pairs"]))
    findings.render(con, doc.get("findings") or [], verbose, floor="ok")
    n_fail = sum(1 for x in (doc.get("findings") or []) + (p.get("findings") or []) if x.get("status") == "fail")
    con.print()
    lines = f"{f.get('nccl_lines') or 0} NCCL line(s)"
    if f.get("unprefixed"):
        lines += f" ({f['unprefixed']} without their NCCL prefix, process unknown)"
    parts = [f"{len(f.get('sources') or [])} file(s)", lines, _processes(f)]
    if p.get("blocks"):
        parts.append(f"{len(p['blocks'])} node output(s) read")
    if s is not None:
        parts.append("transports: " + (", ".join(s.get("transports") or []) or "none seen"))
        if s.get("versions"):
            parts.append("NCCL " + ", ".join(s["versions"]))
        if s.get("nranks"):
            parts.append("world " + ", ".join(str(n) for n in s["nranks"][:6]) + " ranks")
    for key, what in (("nccl_tests", "nccl-tests result table(s)"), ("perftests", "perftest result(s)"),
                      ("p2p_bandwidth", "p2pBandwidthLatencyTest output(s)"), ("ras", "NCCL RAS report(s)")):
        if f.get(key):
            parts.append(f"{len(f[key])} {what}")
    if n_fail:
        verdict = Text(f"{n_fail} failure(s)", style="fail")
    elif doc.get("exit_code"):  # the diagnoses name a failure no check found (lines that say something failed)
        verdict = Text("no failing check; the verdict above names what failed", style="warn")
    else:
        verdict = Text("no failure", style="ok")
    con.print(Text.assemble("; ".join(parts) + "; ", verdict))
    if not f.get("nccl_lines"):
        benchmarks = bool(f.get("nccl_tests") or f.get("perftests") or f.get("p2p_bandwidth"))
        ras = bool(f.get("ras"))
        if _judged(p) and not (benchmarks or ras):  # a node's outputs pasted alone: no job to rerun
            con.print(Text("no NCCL lines: the text holds node outputs, judged above", style="dim"))
        elif p.get("blocks") and not (benchmarks or ras):
            kinds = ", ".join(sorted({str(b.get("kind")) for b in p["blocks"]}))
            con.print(Text(f"no NCCL lines: the text holds node outputs no check judges ({kinds}): "
                           "read and shown above, nothing judged", style="warn"))
        else:
            con.print(Text(_no_nccl_lines(benchmarks, ras), style="warn"))


def _processes(f: Dict[str, Any]) -> str:
    """How many processes the NCCL lines came from; without any, the ranks and hosts of nccl-tests' device list."""
    if f.get("procs"):
        return f"{len(f['procs'])} process(es)"
    runs = list(f.get("nccl_tests") or []) + list(f.get("nccl_tests_no_result") or [])
    hosts: List[str] = []
    for r in runs:
        for h in r.get("hosts") or []:
            if h not in hosts:
                hosts.append(h)
    ranks = max((r.get("ranks") or 0 for r in runs), default=0)
    if ranks:
        on = f" on {len(hosts)} host(s)" if hosts else ""
        return f"{ranks} rank(s){on} (nccl-tests' device list)"
    return "0 process(es)"


def no_nccl_lines(facts: NcclLogFacts) -> str:
    return _no_nccl_lines(bool(facts.nccl_tests or facts.perftests or facts.p2p_bandwidth), bool(facts.ras))


def _no_nccl_lines(benchmarks: bool, ras: bool) -> str:
    if benchmarks or ras:
        what = "the benchmark output" if benchmarks else "the RAS report"
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


def to_json(facts: NcclLogFacts, findings: Sequence[Finding], diagnosed: Diagnosed,
            include_channels: bool = False, pasted: Any = None) -> Dict[str, Any]:
    """The whole report as one JSON object (schema ``nccldiag.log/1``); ``diagnosed``: the diagnoses and their
    summary (:func:`nccldiag.diagnosis.conclude`); ``pasted``: the node outputs read in the texts
    (:class:`nccldiag.paste.Pasted`)."""
    d = facts_json(facts, include_channels)
    return {
        **envelope(SCHEMA),
        "files": list(facts.sources),
        "exit_code": exit_code(findings, diagnosed),
        "summary": d.pop("summary"),
        "findings": [f.to_dict() for f in findings],
        "facts": d,
        "pasted": pasted.to_dict() if pasted is not None else {},
        **diagnoses_report.to_json(*diagnosed),
    }
