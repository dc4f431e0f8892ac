"""Clues: every line of evidence a cause can be recognised by, in one searchable list (pure).

A failure shows itself in many places, depending on what the admin has: an
NCCL WARN, the "Last error:" text PyTorch quotes, nccl-tests' failure line,
a launcher's or library's error line, a kernel line, a check finding. A cause
names the words it is known by; :func:`find` searches them all, so that a
cause is recognised whichever of them was pasted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, List, Optional, Pattern, Sequence, Union

from nccldiag import rx
from nccldiag.diagnosis.inputs import Inputs, LogView
from nccldiag.diagnosis.model import Evidence, finding_evidence, log_evidence
from nccldiag.model.findings import SEVERITY, Finding, Status
from nccldiag.nccl.facts import Loc

KINDS = ("warn", "last-error", "app", "error", "kernel", "finding", "failure")  # and "line": a site's (signature.py),
# "last": each text's last line that is not blank, read only by the rows that name it (a process that stopped there)


@dataclass
class Clue:
    kind: str  # one of KINDS
    text: str  # the message (a WARN's text after its prefix, a finding's message and evidence)
    at: object = None  # nccl.facts.Loc for log lines
    cite: str = ""  # the line as written, for evidence
    host: Optional[str] = None
    finding: Optional[Finding] = None
    warn: object = None  # nccl.facts.Warn for WARN and last-error clues
    rank: Optional[int] = None  # the rank of the launcher's tag the log reader took off the line, where it took one
    lead: str = ""  # what launchers and pastes put before the line, which the log reader took off ('node7: ')

    def evidence(self) -> List[Evidence]:
        if self.finding is not None:
            return finding_evidence(self.finding, 1)
        return [log_evidence(self.at, self.cite or self.text)]


def _log_clues(facts: LogView) -> Iterable[Clue]:
    for w in facts.warns:
        yield Clue("last-error" if w.origin == "last-error" else "warn", w.message, w.at, w.text, w.at.host, warn=w)
    for a in facts.app_errors:
        yield Clue("app", f"{a.message}", a.at, a.text, a.at.host)
    for e in facts.errors:
        yield Clue("error", e.text, e.at, e.text, e.at.host, rank=e.launcher_rank, lead=e.lead)
    for e in facts.kernel:
        yield Clue("kernel", e.text, e.at, e.text, e.at.host, rank=e.launcher_rank, lead=e.lead)
    for n in facts.notes:
        yield Clue("error", n.text, n.at, n.text, n.at.host)


def clues(inp: Inputs) -> List[Clue]:
    """Every clue of the inputs: log lines of each log set, the lines a site's patterns matched in the files given
    to 'nccldiag log', then fail/warn findings of every source."""
    out: List[Clue] = []
    for ls in inp.log_sets():
        out.extend(_log_clues(ls.facts))
    out.extend(_failure_clues(inp, out))
    out.extend(inp.site_lines)  # kind "line": a site's causes read them, the catalog's do not
    if inp.pasted is not None:
        out.extend(Clue("last", x.text, Loc(x.path, x.lineno), x.text, x.host) for x in inp.pasted.last)
    for f in inp.all_findings():
        if SEVERITY[f.status] >= SEVERITY[Status.WARN]:
            out.append(Clue("finding", " | ".join([f.message] + list(f.evidence or [])[:6]), host=f.host,
                            finding=f))
    return out


def _failure_clues(inp: Inputs, kept: List[Clue]) -> Iterable[Clue]:
    """The lines of the files given to 'nccldiag log' that the failure lexicon reads and the log reader kept as no
    line of its own (a line of a node output it did not recognise as one, behind a prefix it did not take off): a
    cause's pattern reads them as it reads the lines the reader kept, wherever in a paste they stand."""
    at = {(c.at.source, c.at.lineno) for c in kept if c.at is not None}
    for line in inp.failure_lines or []:
        if line.host is not None:  # a checked node's output: its areas judge it
            continue
        for lineno, text in [(line.lineno, line.text)] + list(line.more):
            if (line.source, lineno) not in at:
                at.add((line.source, lineno))
                yield Clue("failure", text, Loc(line.source, lineno), text)


Pat = Union[str, Pattern[str]]

#: How far into a clue's text a cause's pattern is searched. A cause is told by a line's first words (a real log
#: line, a finding's message and its first evidence lines); beyond this a line is a run of repeated output (a
#: megabyte line), where every one of the catalog's patterns would otherwise read all of it.
SPAN = 16384


def find(inp: Inputs, pattern: Pat, kinds: Sequence[str] = KINDS, flags: int = 0) -> List[Clue]:
    """The clues of ``kinds`` whose text matches ``pattern`` (a regex, searched)."""
    pat = rx.compile(pattern, flags) if isinstance(pattern, str) else pattern
    if inp.clue_index is None:
        every = clues(inp)
        inp.clue_index = (every, list(dict.fromkeys(c.text for c in every)))  # a text repeated is searched once
    every, texts = inp.clue_index
    search = pat.search
    matching = {t for t in texts if search(t, 0, SPAN)}
    if not matching:
        return []
    return [c for c in every if c.text in matching and c.kind in kinds]


def hosts(found: Iterable[Clue]) -> List[str]:
    return sorted({c.host for c in found if c.host})


def evidence(found: Sequence[Clue], limit: int = 4) -> List[Evidence]:
    """The first ``limit`` clues as evidence, one per distinct text."""
    out: List[Evidence] = []
    seen = set()
    for c in found:
        key = (c.kind, c.text[:200])
        if key in seen:
            continue
        seen.add(key)
        out.extend(c.evidence())
        if len(seen) >= limit:
            break
    return out


def env_values(inp: Inputs, name: str) -> List[str]:
    """The values NCCL echoed for ``name`` ('set by environment to'), and what a probe setting set."""
    vals: List[str] = []
    for ls in inp.log_sets():
        if name in ls.env and ls.env[name] not in vals:
            vals.append(ls.env[name])
        for v in ls.facts.env_values().get(name, []):
            if v not in vals:
                vals.append(v)
    return vals


def nccl_versions(inp: Inputs) -> List[str]:
    out: List[str] = []
    for ls in inp.log_sets():
        for v in (ls.facts.summary.versions if ls.facts.summary else []):
            if v not in out:
                out.append(v)
    return out


def version_tuple(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def make(rule, summary: str, found: Sequence[Clue] = (), *, confidence: str, why: str, severity: str = "fail",
         nodes: Optional[Sequence[str]] = None, extra: Sequence[Evidence] = (), alternatives: Sequence[str] = (),
         missing: Sequence[str] = (), fix: Optional[str] = None, workaround: Optional[str] = None,
         title: Optional[str] = None, category: Optional[str] = None, figures: Optional[dict] = None):
    """A diagnosis of cause ``rule`` (its rule module, or its signature: ID, TITLE, FIX, WORKAROUND) from the clues
    that matched it, cited as evidence, and their hosts unless ``nodes`` are given. Its category, tier and
    confirming command are the catalog row's (:func:`nccldiag.diagnosis.diagnose` sets them) unless given."""
    from nccldiag.diagnosis.model import Diagnosis

    ev = list(extra) + evidence(found)
    if found:  # the words of the first piece of evidence, as the admin will grep for them
        said = found[0].text.split(" | ")[0].strip()
        if said and said not in summary:
            head = said.split(":")[0]
            if head != said and summary.endswith(": " + head):  # the summary ends with the words the evidence opens with
                summary = summary[:-len(head) - 2]
            summary = f"{summary}: {said[:160]}{'...' if len(said) > 160 else ''}"
    return Diagnosis(rule.ID, title or rule.TITLE, severity, summary, confidence, why, fix or rule.FIX,
                     nodes=list(nodes) if nodes is not None else hosts(found), evidence=ev,
                     workaround=workaround if workaround is not None else getattr(rule, "WORKAROUND", ""),
                     missing=list(missing), figures=dict(figures or {}), category=category or "",
                     alternatives=list(alternatives))


def findings(inp: Inputs, prefix: str, min_status: Status = Status.WARN) -> List[Finding]:
    """Findings of any source (check, probe, or node outputs found in logs) whose id starts with ``prefix``."""
    return [f for f in inp.all_findings() if f.check.startswith(prefix) and SEVERITY[f.status] >= SEVERITY[min_status]]


def on(nodes: Sequence[str]) -> str:
    return f" on {', '.join(nodes[:6])}" + (f" and {len(nodes) - 6} more" if len(nodes) > 6 else "") if nodes else ""
