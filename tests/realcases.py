"""The real cases, run end to end through the CLI as a user would.

Two sets in one layout: the issue-thread cases of ``../shared/fixtures/cases``
(:data:`CASES`, absent where ``../shared`` is) and the cases kept in this
repository under ``tests/cases`` (:data:`IN_REPO`: blogs, training logbooks,
forum answers, vendor documentation; see its README and SOURCES.md), which are
always there. Each case folder holds the raw text of its source and
``case.json`` with the cause the source established (the shared README lists the
categories). A ``log`` case is given to ``nccldiag log FILES --json -``, a
``bundle`` case to ``nccldiag check --bundle DIR --json -``. :func:`score` says how the verdict
compares with the established cause:

- ``right``: the first fail/warn diagnosis has the case's category;
- ``partly``: a later fail/warn diagnosis has it;
- ``missed``: the first is the explicit ``unexplained`` verdict;
- ``wrong cause``: the first names another category;
- ``false all-clear``: a failed run with no fail/warn diagnosis;
- ``false alarm``: a healthy run with a fail/warn diagnosis;
- ``ok``: a healthy run with none.

Used by the case tests and by ``scripts/bench_cases``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("NCCLDIAG_FIXTURES") or REPO.parent / "shared" / "fixtures")
CASES = FIXTURES / "cases"
IN_REPO = REPO / "tests" / "cases"
OUTCOMES = ("right", "partly", "missed", "wrong cause", "false all-clear", "false alarm", "ok")


@dataclass
class Case:
    id: str
    path: Path
    meta: Dict

    @property
    def category(self) -> str:
        return self.meta["category"]

    @property
    def healthy(self) -> bool:
        return bool(self.meta.get("healthy")) or self.category == "healthy"

    @property
    def bundle(self) -> bool:
        return self.meta.get("input") == "bundle"

    def argv(self) -> List[str]:
        if self.bundle:
            return ["check", "--bundle", str(self.path), "--json", "-"]
        return ["log", *[str(self.path / f) for f in self.meta["files"]], "--json", "-"]


def cases(root: Path = CASES) -> List[Case]:
    out = []
    for meta in sorted(root.glob("*/case.json")):
        out.append(Case(meta.parent.name, meta.parent, json.loads(meta.read_text())))
    return out


@dataclass
class Result:
    case: Case
    rc: int
    diagnoses: List[Dict] = field(default_factory=list)
    headline: str = ""
    error: str = ""

    @property
    def alarms(self) -> List[Dict]:
        return [d for d in self.diagnoses if d.get("severity") in ("fail", "warn")]

    @property
    def top(self) -> Optional[Dict]:
        return self.alarms[0] if self.alarms else None

    @property
    def outcome(self) -> str:
        return score(self.case, self.alarms)


def score(case: Case, alarms: List[Dict]) -> str:
    if case.healthy:
        return "false alarm" if alarms else "ok"
    if not alarms:
        return "false all-clear"
    if alarms[0].get("category") == case.category:
        return "right"
    if any(d.get("category") == case.category for d in alarms):
        return "partly"
    if alarms[0].get("category") == "unexplained":
        return "missed"
    return "wrong cause"


def run(case: Case, timeout: float = 120) -> Result:
    proc = subprocess.run([sys.executable, "-m", "nccldiag", *case.argv()], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, cwd=str(REPO),
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return Result(case, proc.returncode, error=(proc.stderr or proc.stdout)[-2000:])
    return Result(case, proc.returncode, list(doc.get("diagnoses") or []),
                  (doc.get("verdict") or {}).get("headline", "") if isinstance(doc.get("verdict"), dict) else "")


def alarms_of(paths: List[Path]) -> List:
    """The fail and warn diagnoses of ``nccldiag log`` over ``paths``, read in this process (one worker)."""
    from nccldiag.sessions import log as session

    return [d for d in session.run([str(p) for p in paths], workers=1).diagnoses[0]
            if d.severity in ("fail", "warn")]


def alarms_of_case(folder: Path) -> List:
    """:func:`alarms_of` the files a case folder's ``case.json`` names."""
    meta = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    return alarms_of([folder / f for f in meta["files"]])
