"""Signatures: causes that are data, a row of the catalog each, judged by one evaluator (pure).

A signature row (``knowledge/causes.toml``, or a site's ``[[cause]]``) names
the words a cause is known by and what to say when they are found; no code
of its own. :class:`Signature` searches every clue of the evidence
(:mod:`nccldiag.diagnosis.clues`: NCCL WARNs, ``Last error`` texts, a
program's or launcher's error lines, kernel lines, check findings, and the
lines of the files given to ``nccldiag log`` that a site's pattern matched)
and makes one diagnosis from what matched. The keys (``docs/diagnoses.md``):

- ``pattern``: a regex, or a list of them, found in turn; an entry may be a
  table ``{pattern, beside}``: its lines count only beside a line matching
  ``beside``;
- ``kinds``: the clue kinds searched; ``unless``: a regex whose clues are not
  evidence; ``findings``: check-id prefixes whose fail/warn findings are
  evidence too (listed first);
- ``events``: ``true``, or a list of check-id prefixes: the events of the
  row's category (:mod:`nccldiag.diagnosis.events`: findings that carry it,
  kernel lines and CUDA errors read through the knowledge tables; of those
  checks only, for a list) are evidence too, listed after the findings; a
  row with events needs no ``pattern``. Events alone make the diagnosis as
  severe as the worst of them, and as sure as the surest;
- ``summary`` and ``why``: templates of ``{on}`` (the hosts), ``{nccl}`` (the
  NCCL versions), ``{peers}`` (the peer addresses the lines name), the named
  groups of the first line's match, and ``defaults`` for those left empty;
- ``severity`` (``fail``), ``fail_on`` (a regex: a ``warn`` cause whose line
  or event matches it, or whose finding fails, fails), ``confidence`` and
  ``confidence_findings`` (with a finding among the evidence), ``nodes``
  (false: the diagnosis names no node), ``figures`` (a figure per named
  group), ``reasons`` (the first whose ``match`` finds the ``reason`` group,
  or the line, gives the fix and template values);
- ``tested``: ``true``: where the texts hold an RDMA test told which HCA to use
  (``ib_write_bw -d mlx5_0``), a line whose ``device`` group names another
  HCA is no evidence (the test did not run on it);
- ``title``, ``fix``, ``workaround``, ``confirm``, ``alternatives``.

A site's line is searched as the reader kept it, at most :data:`MAX_LINE`
characters of it: each pattern is compiled once, and what it runs on is
bounded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import IO, Any, Dict, List, Optional, Pattern, Sequence, Tuple

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

# the keys of a signature row; besides them a row has its catalog keys (id, category, tier, explained_by), where it
# comes from (about, references) and, read in, where it is defined (where) and whether a site added it (site)
KEYS = ("pattern", "kinds", "unless", "findings", "events", "summary", "why", "defaults", "severity", "fail_on",
        "confidence", "confidence_findings", "nodes", "figures", "reasons", "title", "fix", "workaround", "confirm", "alternatives",
        "tested")
ROW_KEYS = ("id", "category", "tier", "explained_by", "about", "references", "where", "site")

MAX_LINE = 4096  # the characters of a line a site's pattern is run on
MAX_LINES = 200  # the lines of the files given to 'log' that a site's patterns keep, per cause
SITE_KINDS = C.KINDS + ("line",)  # a site's cause also reads the raw lines of the files given to 'log'
ROW_ONLY = ("last",)  # read only where a row names it: each text's last line
_PEERS = rx.compile(r"(?:from|to|peer)\s+\[?(\d{1,3}(?:\.[\d.]+)+|[0-9a-f:]{6,})")
_VAR = rx.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Sign:
    """One entry of a row's ``pattern``: the regex, and the one its lines need beside them."""

    pattern: Pattern[str]
    beside: Optional[Pattern[str]] = None


def signs(row: Dict[str, Any]) -> List[Sign]:
    """The row's ``pattern``, compiled once."""
    given = row.get("pattern") or []
    out = []
    for p in given if isinstance(given, list) else [given]:
        if isinstance(p, dict):
            out.append(Sign(rx.compile(p["pattern"]), rx.compile(p["beside"]) if p.get("beside") else None))
        else:
            out.append(Sign(rx.compile(p)))
    return out


def _fill(template: str, values: Dict[str, str]) -> str:
    """``template`` with each ``{name}`` it has a value for replaced (other braces stay as written)."""
    return _VAR.sub(lambda m: values[m.group(1)] if m.group(1) in values else m.group(0), template)


class Signature:
    """The evaluator of one signature row."""

    def __init__(self, row: Dict[str, Any]) -> None:
        self.row = row
        self.ID = row["id"]
        self.TITLE = row.get("title") or row["id"]
        self.FIX = row.get("fix", "")
        self.WORKAROUND = row.get("workaround", "")
        self.CONFIRM = row.get("confirm", "")
        self.signs = signs(row)
        self.kinds = tuple(row.get("kinds") or (SITE_KINDS if row.get("site") else C.KINDS))
        self.unless = rx.compile(row["unless"]) if row.get("unless") else None
        self.fail_on = rx.compile(row["fail_on"]) if row.get("fail_on") else None
        self.reasons = [(rx.compile(r["match"]), r) for r in row.get("reasons", [])]

    def found(self, inp: Inputs) -> List[C.Clue]:
        """The clues of the row's patterns, in turn, each once."""
        out: List[C.Clue] = []
        for i, sign in enumerate(self.signs):
            got = C.find(inp, sign.pattern, self.kinds)
            if sign.beside is not None and got and not C.find(inp, sign.beside, self.kinds):
                got = []
            out += got if i == 0 else [c for c in got if c not in out]
        if self.unless is not None:
            out = [c for c in out if not self.unless.search(c.text)]
        if self.row.get("tested") and inp.pasted is not None and inp.pasted.rdma_test_device:
            tested = {dev for _, dev in inp.pasted.rdma_test_device}
            out = [c for c in out if (self._device(c) or next(iter(tested))) in tested]
        return _once(out)

    def _device(self, clue: C.Clue) -> str:
        """The RDMA device the first pattern's ``device`` group names in ``clue``, "" where none."""
        m = self.signs[0].pattern.search(clue.text) if self.signs else None
        return (m.groupdict().get("device") or "") if m else ""

    def events(self, inp: Inputs) -> List[E.Event]:
        """The events of the row's category (of the checks its ``events`` list names), when it reads them."""
        given = self.row.get("events")
        if not given:
            return []
        return E.of(inp, self.row["category"], given if isinstance(given, list) else ())

    def diagnose(self, inp: Inputs) -> List[Diagnosis]:
        node = [C.Clue("finding", f.message, host=f.host, finding=f)
                for prefix in self.row.get("findings", []) for f in C.findings(inp, prefix)]
        ev = self.events(inp)
        told = E.clues_of(ev)
        lines = [c for c in self.found(inp) if not any(c is t for t in told)]
        found = node + [c for c in told if c.finding is None or not any(c.finding is n.finding for n in node)] + lines
        if not found:
            return []
        severity = self.row.get("severity", "fail")
        if severity == "warn" and (any(c.finding.status.value == "fail" for c in node) or E.worst(ev) == "fail" and ev or
                                   self.fail_on is not None and any(self.fail_on.search(c.text) for c in lines + told)):
            severity = "fail"
        elif severity == "fail" and ev and not node and not lines:
            severity = E.worst(ev)  # events alone: as severe as the worst of them
        confidence = self.row.get("confidence_findings") if node and self.row.get("confidence_findings") else \
            self.row.get("confidence", "medium")
        if ev and not node and not lines and all(e.confidence != "high" for e in ev):
            confidence = "medium" if confidence == "high" else confidence
        groups = self._groups(lines)
        figures = {k: groups.get(g, "") for k, g in self.row.get("figures", {}).items()}
        values, fix = self._values(inp, found, lines, groups)
        values["events"] = f": {E.summary(ev)}" if ev else ""
        summary = _fill(self.row.get("summary", "{title}{on}"), values)
        return [C.make(self, summary, found, confidence=confidence, severity=severity, fix=fix,
                       why=_fill(self.row.get("why") or _SITE_WHY, values), figures=figures,
                       nodes=None if self.row.get("nodes", True) else [],
                       alternatives=self.row.get("alternatives", []))]

    def _groups(self, lines: Sequence[C.Clue]) -> Dict[str, str]:
        """The named groups of the row's first pattern on the first line found, stripped."""
        first = self.signs[0].pattern.search(lines[0].text) if lines and self.signs else None
        return {k: (v or "").strip() for k, v in (first.groupdict() if first else {}).items()}

    def _values(self, inp: Inputs, found: Sequence[C.Clue], lines: Sequence[C.Clue], groups: Dict[str, str]
                ) -> Tuple[Dict[str, str], Optional[str]]:
        """The template values (and the fix, where a reason gives one) of what was found."""
        versions = C.nccl_versions(inp)
        peers = sorted(set(_PEERS.findall(" ".join(c.text for c in found))))
        values = {"title": self.TITLE, "on": C.on(C.hosts(found)), "where": self.row["where"],
                  "nccl": f" {', '.join(versions)}" if versions else "",
                  "peers": f" (peer {', '.join(peers[:4])})" if peers else ""}
        fix = None
        for match, reason in self.reasons:
            if match.search(groups.get("reason", lines[0].text if lines else "")):
                fix = reason.get("fix")
                values.update({k: v for k, v in reason.items() if k not in ("match", "fix")})
                break
        for k, v in self.row.get("defaults", {}).items():
            if not groups.get(k) and k not in values:
                values[k] = v
        values.update({k: v for k, v in groups.items() if v})
        return values, fix


_SITE_WHY = "a line matched the pattern of the site's cause defined at {where}"


def _once(found: List[C.Clue]) -> List[C.Clue]:
    """A line of a file given to 'log' that another clue already cites (the reader kept it) counts once."""
    cited = {(c.at.source, c.at.lineno) for c in found if c.kind != "line" and c.at is not None}
    return [c for c in found if c.kind != "line" or (c.at.source, c.at.lineno) not in cited]


# ---- the lines of the files given to 'nccldiag log' ------------------------------------------------------------


@dataclass(frozen=True)
class At:
    """Where a line of a file was read (as :class:`nccldiag.nccl.facts.Loc` cites it)."""

    source: str
    lineno: int
    host: Optional[str] = None

    def cite(self, text: str) -> str:
        return f"{self.source}:{self.lineno}: {text}"


# the host a line names: NCCL's 'host:pid:tid [dev]' prefix, or a syslog line's ('Nov 28 12:00:01 node7 mmfs...')
_HOST = rx.compile(r"^(?:\[\d+,\d+\]<\w+>: *)?(?:(?P<nccl>[\w.\-]+):\d+:\d+ \[|"
                   r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (?P<syslog>[\w.\-]+) )")


def line_clue(source: str, lineno: int, text: str) -> C.Clue:
    m = _HOST.match(text)
    host = (m.group("nccl") or m.group("syslog")) if m else None
    return C.Clue("line", text, At(source, lineno, host), text, host)


class LineScan:
    """The lines of one file given to ``nccldiag log`` that one of a site's ``patterns`` matches, fed a block of
    bytes at a time as it is read: each line searched in its first :data:`MAX_LINE` characters, at most
    :data:`MAX_LINES` lines kept per pattern."""

    def __init__(self, source: str, patterns: Sequence[Pattern[str]]) -> None:
        self.source, self.patterns = source, list(patterns)
        self.left = [MAX_LINES] * len(self.patterns)
        self.found: List[C.Clue] = []
        self.carry = b""
        self.n = 0

    @property
    def done(self) -> bool:
        return not any(self.left)

    def feed(self, data: bytes) -> None:
        if not data or self.done:
            return
        parts = (self.carry + data).split(b"\n")
        self.carry = parts.pop()
        for raw in parts:
            self._line(raw)
        if len(self.carry) > MAX_LINE * 4:  # a line longer than any searched: its start is kept, the rest waits
            self.carry = self.carry[:MAX_LINE * 4]

    def finish(self) -> List[C.Clue]:
        if self.carry and not self.done:
            self._line(self.carry)
        self.carry = b""
        return self.found

    def _line(self, raw: bytes) -> None:
        self.n += 1
        text = raw[:MAX_LINE * 4].decode("utf-8", "replace").rstrip("\r")[:MAX_LINE]
        hit = False
        for i, rx in enumerate(self.patterns):
            if self.left[i] and rx.search(text):
                self.left[i] -= 1
                hit = True
        if hit:
            self.found.append(line_clue(self.source, self.n, text))


def lines_in(stream: IO[bytes], source: str, patterns: Sequence[Pattern[str]], block: int = 1 << 20) -> List[C.Clue]:
    """The lines of ``stream`` (a file given to ``nccldiag log``) that one of a site's ``patterns`` matches
    (:class:`LineScan`)."""
    scan = LineScan(source, patterns)
    while not scan.done:
        data = stream.read(block)
        if not data:
            break
        scan.feed(data)
    return scan.finish()
