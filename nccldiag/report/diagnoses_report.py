"""The "Diagnoses" section every report opens with, and its JSON.

Summary first (healthy and failing nodes, the transport paths that worked,
the top diagnoses), then each diagnosis in a few lines; ``-v`` adds its
evidence. The same diagnoses go into every command's JSON as ``diagnoses``
(and the summary as ``diagnosis_summary``).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from rich.console import Console
from rich.text import Text

from nccldiag.diagnosis import Diagnosis, Inputs, Summary, diagnose, summary

TOP = 5
_STYLE = {"fail": "fail", "warn": "warn", "info": "muted"}


def run(inputs: Inputs) -> Tuple[List[Diagnosis], Summary]:
    diags = diagnose(inputs)
    return diags, summary(inputs, diags)


def _once(report, make) -> Tuple[List[Diagnosis], Summary]:
    """The diagnoses of ``report``, computed once however many views (terminal, JSON, exit code) ask."""
    done = getattr(report, "_diagnosed", None)
    if done is None:
        done = make()
        try:
            report._diagnosed = done
        except AttributeError:
            pass
    return done


def for_check(report) -> Tuple[List[Diagnosis], Summary]:
    return _once(report, lambda: run(Inputs(check=report)))


def for_probe(report) -> Tuple[List[Diagnosis], Summary]:
    return _once(report, lambda: run(Inputs(probe=report)))


def verdict_exit_code(code: int, diags: List[Diagnosis]) -> int:
    """An exit code that follows the verdict: a failing diagnosis makes it 1 (unhealthy), as a failing finding does."""
    return 1 if any(d.severity == "fail" for d in diags) and code in (0, 3) else code


def for_log(facts, findings, pasted=None) -> Tuple[List[Diagnosis], Summary]:
    """``pasted``: node outputs and process ends found in the same text (:mod:`nccldiag.diagnosis.pasted`)."""
    return run(Inputs(logs=facts, log_findings=list(findings), pasted=pasted))


def to_json(diags: List[Diagnosis], s: Summary) -> Dict[str, Any]:
    return {"diagnoses": [d.to_dict() for d in diags], "diagnosis_summary": s.to_dict()}


def _nodes(names: List[str]) -> str:
    try:
        from ClusterShell.NodeSet import NodeSet

        folded = str(NodeSet.fromlist(names))
        return folded if len(folded) < len(",".join(names)) else ",".join(names)
    except Exception:
        return ",".join(names)


def bandwidth_line(s: Summary, setting: str) -> Optional[Text]:
    """``busbw vs expected: ...`` for one probe setting, or None without a figure."""
    from nccldiag.diagnosis.expected import FLOOR

    c = s.bandwidth.get(setting)
    if not c:
        return None
    exp = c.get("expected")
    if not exp:
        return Text(f"  busbw {c['measured_gbps']:.2f} GB/s: no expectation ({c['why_not']})", style="muted")
    b = exp["bottleneck"]
    style = "warn" if c["below"] else ("ok" if c["comparable"] else "muted")
    whence = (f"expected by {b['basis']}" if b["segment"] == "site spec" else
              f"bottleneck {b['segment']}: {b['basis']}" + (f" on {b['host']}" if b.get("host") else ""))
    floor = c.get("floor")
    low = f", low below {floor:.0%}" if floor is not None and abs(floor - FLOOR) > 1e-9 else ""
    line = Text.assemble("  busbw ", (f"{c['measured_gbps']:.2f} / {exp['gbps']:.1f} GB/s = {c['percent']:.0f}% of expected",
                                      style),
                         f" ({c['collective']}, {whence}{low})")
    if not c["comparable"]:
        line.append(f"; not judged: {c['why_not']}", style="muted")
    return line


def print_headline(diags: List[Diagnosis], con: Console, empty: bool = False, unchecked: List[str] = ()) -> None:
    """The report's first line: the verdict (see :func:`nccldiag.report.diagnoses.headline`)."""
    from nccldiag.report.diagnoses import headline

    text, style = headline(diags, empty, unchecked)
    con.print(Text(text, style=f"bold {style}"))


def render(diags: List[Diagnosis], s: Summary, con: Console, verbose: bool = False, paths: bool = True,
           empty: bool = False, head: bool = True) -> None:
    """``empty``: the input held nothing to judge (the headline says so instead of "nothing broken");
    ``head``: print the verdict line first (a report that opens with it already says no)."""
    if head:
        print_headline(diags, con, empty, s.unchecked)
    con.print(Text("Diagnoses", style="bold"))
    parts: List[Any] = []
    if s.healthy or s.failing or s.unchecked or s.warned:
        parts = [(f"{len(s.healthy)} healthy", "ok"), (f" ({_nodes(s.healthy)})" if s.healthy else ""), ", "]
        if s.warned:
            parts += [(f"{len(s.warned)} with warnings", "warn"), f" ({_nodes(s.warned)}), "]
        parts += [(f"{len(s.failing)} failing", "fail" if s.failing else ""),
                 (f" ({_nodes(s.failing)})" if s.failing else "")]
        if s.unchecked:
            parts += [", ", (f"{len(s.unchecked)} not checked ({_nodes(s.unchecked)})", "error")]
        con.print(Text.assemble("  nodes: ", *parts))
    if paths and (s.paths_ok or s.paths_bad):
        if s.paths_ok:
            con.print(Text.assemble("  worked: ", ("; ".join(s.paths_ok), "ok")))
        if s.paths_bad:
            con.print(Text.assemble("  failed: ", ("; ".join(s.paths_bad), "fail")))
    if not diags and not empty:
        con.print(Text("  no diagnosis: the evidence shows nothing broken", style="ok"))
    shown = diags if verbose else diags[:TOP]
    for d in shown:
        con.print(Text.assemble("  ", (f"{d.severity.upper():4}", _STYLE[d.severity]), " ", (d.title, "bold"),
                                f"  [{d.confidence} confidence]", ("  " + _nodes(d.nodes) if d.nodes else "", "cyan")))
        con.print(Text(f"       {d.summary}"))
        if verbose:
            con.print(Text(f"       why {d.confidence}: {d.confidence_why}", style="muted"))
            for e in d.evidence:
                con.print(Text(f"       | {e.line()}", style="muted"))
        con.print(Text(f"       fix: {d.fix}"))
        if d.workaround:
            con.print(Text(f"       workaround: {d.workaround}" + (f" (cost: {d.workaround_cost})" if d.workaround_cost else "")))
        if d.confirm:
            con.print(Text(f"       confirm: {d.confirm}", style="muted"))
        for a in d.alternatives if verbose else []:
            con.print(Text(f"       or: {a}", style="muted"))
        for m in d.missing:
            con.print(Text(f"       to confirm, run: {m}", style="muted"))
    if len(diags) > len(shown):
        con.print(Text(f"  ... {len(diags) - len(shown)} more (-v shows all, with evidence)", style="muted"))
    elif diags and not verbose:
        con.print(Text("  (-v shows the evidence)", style="muted"))
    con.print()
