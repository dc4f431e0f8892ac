"""Unexplained failure: the evidence shows something broken or a run that did not finish, and no cause of the
catalog fits. Never "nothing broken" then: the verdict cites the first failing evidence and the command that
would tell more.

The evidence includes the lines of the failure lexicon (``knowledge/lexicon.toml``: a line of a log, or of a node's
output, that says something failed). Such a line is explained when a fail or warn diagnosis of a cause (any but
this one)

- cites it: its evidence names the line's ``file:line``, or quotes its text; or
- covers its shape: the diagnosis's category is in the row's ``covered_by`` (``"any"``: any cause's diagnosis).

The others are unexplained: beside no cause, they make this verdict (``fail`` when a row of them says so, else
``warn``); beside causes, a ``warn`` of this verdict after them, so that what was found comes first and the lines
no cause explains are still said. Either way the run does not exit 0 (:func:`nccldiag.diagnosis.model.fails_run`).

Not a rule of the registry: :func:`nccldiag.diagnosis.diagnose` calls :func:`fallback` after every rule, and
before it :func:`run_failed`, which makes a cause named by a warning alone fail where the log says the run failed.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from nccldiag import rx
from nccldiag.areas import all_areas, kernlog
from nccldiag.diagnosis.events import _PREFIX_HOST, _SYSLOG_HOST
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import FAILURE_LINES, Diagnosis, Evidence, finding_evidence, sort_key
from nccldiag.diagnosis.signs import log_failed, unfinished
from nccldiag.knowledge import lexicon
from nccldiag.model.findings import SEVERITY, Finding, Status

ID = "unexplained"
TITLE = "Unexplained failure"
CATEGORY = "unexplained"
ADVICE_ID = "advice"  # warnings of a run that shows no failure (see advice_only)
ADVICE_TITLE = "Warnings to read, no failure"
TIER = 2
MORE_LOG = ("rerun the job with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV and give every rank's log to "
            "'nccldiag log'; on the job's nodes run 'nccldiag check HOSTFILE'")
MORE_CHECK = "nccldiag probe HOSTFILE  (runs the collectives on these nodes and names the failing path)"

# Warnings of the log's checks about how a run communicates, not whether it worked: TCP sockets between nodes
# (the only network of many clusters), an interface listed beside the routable one that no channel is seen to use,
# NCCL or plugin WARN lines that returned no error (a failure printed at NCCL_DEBUG=WARN has a kind of its own:
# a CUDA failure, a refused connection, a completion error).
WARN_LINES = "nccl.warn"
ADVICE = ("nccl.network", "nccl.socket_if", WARN_LINES)


def advice_only(inp: Inputs) -> bool:
    """Logs alone, none showing a failure, and no warning but advice (:data:`ADVICE`): a run that did not fail is
    not a failure to name. The checks' table still shows the advice."""
    sets = inp.log_sets()
    alarms = [f for f in inp.all_findings() if f.status in (Status.FAIL, Status.WARN)]
    if any(f.check == WARN_LINES for f in alarms) and not any(_went_on(ls.facts) for ls in sets):
        # a WARN no row knows, and nothing after it says the run went on: NCCL prints a WARN where something
        # failed, and a paste that ends on it (or holds only it) shows no run that got through
        return False
    return (bool(sets) and inp.check is None and inp.probe is None and not any(log_failed(ls.facts) for ls in sets)
            and all(f.status == Status.WARN and f.check in ADVICE for f in alarms))


# the facts of NCCL's INFO lines a log holds with where they were read: steps of a run
_STEPS = ("inits", "channels", "connected", "comms", "notes", "nets", "networks", "bootstrap", "versions", "gdr",
          "plugins", "rings", "nvls")


def _went_on(f) -> bool:
    """Whether an NCCL log shows its run going on past its WARN lines: a communicator's init completed, a result,
    a step of the run read after the last WARN in the same file, or NCCL lines besides the WARNs and their call
    chains (a log of WARN lines alone shows no run)."""
    if any(e.phase == "COMPLETE" for e in f.inits) or f.nccl_tests:
        return True
    own = sum(1 + len(w.chain) for w in f.warns)
    if f.nccl_lines > own and len(f.warns) >= f.total("warns"):
        return True
    last: Dict[str, int] = {}
    for w in f.warns:
        last[w.at.source] = max(last.get(w.at.source, 0), w.at.lineno)
    for name in _STEPS:
        for fact in getattr(f, name, ()) or ():
            at = getattr(fact, "at", None)
            if at is not None and at.lineno > last.get(at.source, 1 << 62):
                return True
    return False


def _first_finding(inp: Inputs, diagnoses: List[Diagnosis]) -> Tuple[Optional[Finding], int]:
    """The worst fail/warn finding that no diagnosis cites (an info diagnosis may account for a warning: P2P that
    consumer GPUs do not offer is expected), and how many there are."""
    cited = {(e.ref, e.host) for d in diagnoses for e in d.evidence if e.kind == "finding"}
    # an ERROR is a part not checked (a node not reached, a command that timed out): the summary counts it as
    # not checked, and it says nothing of a cause
    # a node output pasted beside a log is evidence like a node's: a failure in it that no cause explains is named
    found = [f for f in inp.all_findings() if f.status in (Status.FAIL, Status.WARN) and (f.check, f.host) not in cited]
    found.sort(key=lambda f: -SEVERITY[f.status])
    return (found[0] if found else None), len(found)


def unexplained_lines(inp: Inputs, diagnoses: List[Diagnosis]) -> List[lexicon.Line]:
    """The lines of the failure lexicon in the evidence that no fail or warn diagnosis of a cause explains (see the
    module's docstring), worst first."""
    causes = [d for d in diagnoses if d.severity in ("fail", "warn") and d.category != CATEGORY]
    if not inp.failure_lines:
        return []
    refs = {e.ref for d in causes for e in d.evidence if e.ref}  # a log's file:line (its host is NCCL's)
    node_refs = {(e.ref, e.host) for d in causes for e in d.evidence if e.ref and e.host}  # a node's source:line
    quoted = [e.text for d in causes for e in d.evidence]
    out = []
    for line in inp.failure_lines:
        shape = lexicon.shape(line.shape)
        if shape.two_gpus and inp.pasted is not None and inp.pasted.lists_one_gpu(line.source):
            continue
        covered = shape.covered_by
        covering = [d for d in causes if lexicon.ANY in covered or d.category in covered]
        if covering:
            rest = _elsewhere(line, covering)
            if rest is not None:
                out.append(rest)
            continue
        if shape.judged_by and _judged_in_paste(inp, line, shape):
            continue
        if any(ref in refs if line.host is None else (ref, line.host) in node_refs for ref in line.refs()):
            continue
        if any(text and text in q for text in line.texts() for q in quoted):
            continue
        out.append(line)
    return lexicon.ordered(out)


# a per-host label before a line where the paste reader names no host: a health check's distributed run writes
# 'host | ERROR: nhc: Health check failed: ...' (azurehpc-health-checks distributed_nhc), a table 'host | ...'
_LABEL = rx.compile(r"(?P<host>[A-Za-z0-9][\w.-]{0,252}) {1,8}\| ")
# the front of a log line's evidence text: 'file:line: '
_CITED = rx.compile(r"[^\n]{1,4096}?:\d{1,9}: ")


def origin(text: str) -> Optional[str]:
    """The host a line of a log names at its front (a pdsh or syslog prefix, a per-host label), None where none."""
    m = _SYSLOG_HOST.search(text[:400]) or _PREFIX_HOST.match(text)
    if m:
        return m.group("host")
    m = _LABEL.match(text)
    if m and any(c.isdigit() or c in ".-" for c in m.group("host")):
        return m.group("host")
    return None


def _elsewhere(line: lexicon.Line, covering: Sequence[Diagnosis]) -> Optional[lexicon.Line]:
    """The kept lines of ``line`` that name a host none of the ``covering`` causes is on, as a line of their own;
    None when every kept line is on a host a cause names, or names none, or a cause names no host. A cause on one
    node explains the failure lines of that node, not those another node printed beside it (a health check's
    lines from many nodes, pdsh's output of one command on each)."""
    hosts: set = set()
    for d in covering:
        mine = set(d.nodes)
        for e in d.evidence:
            if e.host:
                mine.add(e.host)
            elif e.kind == "log":
                m = _CITED.match(e.text)
                o = origin(e.text[m.end():] if m else e.text)
                if o:
                    mine.add(o)
        if not mine:
            return None  # a cause that names no host: it may be any line's
        hosts |= mine
    kept = [(n, t, origin(t)) for n, t in [(line.lineno, line.text)] + list(line.more)]
    away = [(n, t, o) for n, t, o in kept if o is not None and o not in hosts]
    if not away:
        return None
    counted = line.count - len(kept)  # the lines of the shape past the kept ones: their hosts are not known
    (n, t, o), rest = away[0], [(n2, t2) for n2, t2, _ in away[1:]]
    return lexicon.Line(line.shape, line.severity, line.source, n, t, o,
                        len(away) + (counted if len(away) == len(kept) else 0), rest)


def _judged_in_paste(inp: Inputs, line: lexicon.Line, shape: lexicon.Shape) -> bool:
    """Whether every kept line of ``line`` (a file given to 'nccldiag log') lies in a node output pasted there that
    an area of the shape's ``judged_by`` read (:mod:`nccldiag.diagnosis.pasted`) and found healthy: that area's
    findings say what it is, as in a check of the node. An area that skipped every check of it (a table cut
    above its header, counters pasted without their section) judged nothing: the line is the lexicon's. Where
    such an area found something failing or warning, the line stays unexplained (unless a diagnosis cites it or
    covers its shape) but beside an NCCL log of a run that worked: a port or a GPU that run did without says
    nothing of it, or where the line lies in the output of nccldiag's own program (a source marked ``own``: a
    facts line no job prints) and the area's failing finding quotes a line of that shape: it said what the line is
    (the python area's 'nccldiag is not importable ... (ModuleNotFoundError: ...)' of its snippet's line). A tool's
    output (an ibstat's 'State: Down') stays the lexicon's too where the area warns of it: the line says something
    failed."""
    if line.host is not None or inp.pasted is None or not inp.pasted.blocks:
        return False
    failing = [f for f in inp.pasted.findings if f.area in shape.judged_by and SEVERITY[f.status] >= SEVERITY[Status.WARN]]
    # an area whose failing finding quotes a line of this shape said what it is (as in a check of the node)
    quoted = _in_own_output(inp, line) and any(lexicon.shape_of(str(text)) is shape
                                               for f in failing for text in [f.message, *(f.evidence or [])])
    if failing and not quoted and not _run_worked(inp):
        return False
    readers = _readers()
    judges = set(shape.judged_by)
    # a pasted kernel log is its areas' only where a row of knowledge/kmsg.toml reads the line, as in a check
    kmsg_reads = all(kernlog.reads(t) for t in line.texts())
    spans = [(b.lineno, b.lineno + b.text.count("\n") + 1) for b in inp.pasted.blocks
             if b.path == line.source
             and any(readers.get(s, set()) & judges for s in b.sections if s != _KERNEL or kmsg_reads)
             and judges & inp.pasted.judged.get((b.path, b.lineno), frozenset())]
    numbers = [line.lineno] + [n for n, _ in line.more]
    return bool(spans) and all(any(a <= n < b for a, b in spans) for n in numbers)


_KERNEL = kernlog.SOURCE.name


def _judged_healthy(inp: Inputs, line: lexicon.Line) -> bool:
    """Whether ``line`` lies in a pasted node output whose area judged it (:func:`_judged_in_paste`)."""
    shape = lexicon.shape(line.shape)
    return bool(shape.judged_by) and _judged_in_paste(inp, line, shape)


def _in_own_output(inp: Inputs, line: lexicon.Line) -> bool:
    """Whether every kept line of ``line`` lies in a pasted block of sources marked ``own`` only."""
    own = _own_sources()
    spans = [(b.lineno, b.lineno + b.text.count("\n") + 1) for b in inp.pasted.blocks
             if b.path == line.source and b.sections and set(b.sections) <= own]
    return bool(spans) and all(any(a <= n < b for a, b in spans) for n in [line.lineno] + [n for n, _ in line.more])


def _own_sources() -> set:
    """The sources whose output is nccldiag's own program's."""
    return {s.name for area in all_areas() for s in getattr(area, "SOURCES", ()) if getattr(s, "own", False)}


def _run_worked(inp: Inputs) -> bool:
    """Whether the files given to 'nccldiag log' hold NCCL lines of a run that neither failed nor stopped."""
    f = inp.logs
    return f is not None and f.nccl_lines > 0 and not log_failed(f) and not unfinished(inp)


def _readers() -> Dict[str, set]:
    """The check areas that read each source, by its name."""
    out: Dict[str, set] = {}
    for area in all_areas():
        for s in getattr(area, "SOURCES", ()):
            out.setdefault(s.name, set()).add(area.NAME)
    return out


def line_evidence(lines: List[lexicon.Line], limit: int = 4) -> List[Evidence]:
    """The first ``limit`` groups of lines as evidence (``file:line: text`` of a log, ``source:line: text`` of a
    node's output, with the lexicon's row), then how many more there are and of what shapes."""
    ev: List[Evidence] = []
    for line in lines[:limit]:
        shape = lexicon.shape(line.shape)
        others = f" (and {line.count - 1} more such line(s) there)" if line.count > 1 else ""
        if line.host is None:  # a file given to 'nccldiag log', cited as its reader cites a line
            ev.append(Evidence("log", f"{line.ref}: {line.text}{others}", line.ref))
        else:  # a node's output
            ev.append(Evidence("node", f"{line.text}{others}", line.ref, line.host))
        ev.append(Evidence("figure", f"the failure lexicon's {shape.id}: {shape.meaning}", shape.where, line.host))
    rest = lines[limit:]
    if rest:
        shapes: Dict[str, int] = {}
        for line in rest:
            shapes[line.shape] = shapes.get(line.shape, 0) + line.count
        ev.append(Evidence("figure", f"and {sum(shapes.values())} more line(s) that say something failed: "
                                     + ", ".join(f"{k} x{v}" for k, v in shapes.items()), lexicon.TABLE))
    return ev


def _lines_only(inp: Inputs, lines: List[lexicon.Line], beside_causes: bool) -> Diagnosis:
    """The verdict on unexplained lines alone (no finding, no run that stopped): they say what failed."""
    first = lines[0]
    shape = lexicon.shape(first.shape)
    n = sum(line.count for line in lines)
    where = f" on {first.host}" if first.host else ""
    severity = "warn" if beside_causes or all(line.severity == "warn" for line in lines) else "fail"
    why = (f"{n} line(s) say something failed and no known cause explains them" if n > 1 else
           "a line says something failed and no known cause explains it")
    if beside_causes:
        why += " (the diagnoses above explain other lines)"
    more = MORE_LOG if inp.logs is not None else MORE_CHECK
    return Diagnosis(ID, TITLE, severity, f"{shape.meaning}{where}: {first.text}", "low", why,
                     f"Not recognised: read the lines below. {more}",
                     nodes=sorted({line.host for line in lines if line.host}), evidence=line_evidence(lines),
                     figures={FAILURE_LINES: n}, category=CATEGORY, tier=TIER,
                     confirm=MORE_LOG if inp.logs is not None else MORE_CHECK)


def run_failed(inp: Inputs, diagnoses: List[Diagnosis]) -> None:
    """A cause named by a warning alone, in files given to 'nccldiag log' that say the run failed: the warning's
    diagnosis becomes a failure. A line of the failure lexicon that fails and that any cause explains (covered_by
    ``any``: a traceback, a program's exception, a non-zero exit, a process killed, NCCL's call that failed) says how
    the run ended, whatever the cause; where the only causes found are warnings (a corrected PCIe error, a small
    /dev/shm, an Xid of an application's fault), the run still failed, and the verdict must not exit 0. The first of
    them (the verdict's) fails, and cites the line. Where the files hold no such line but other lines of the lexicon
    that the warnings explain (an ibstat port 'State: Down', an Xid of an application's fault), the first warning
    carries their count (``failure_lines``): it stays a warning, and the exit code is 1, as it is where the same
    lines are left unexplained."""
    causes = [d for d in diagnoses if d.severity in ("fail", "warn") and d.category != CATEGORY]
    if not causes or any(d.severity == "fail" for d in causes) or inp.logs is None:
        return
    ended = [line for line in inp.failure_lines or [] if line.host is None and line.severity == "fail"
             and lexicon.ANY in lexicon.shape(line.shape).covered_by]
    d = min(causes, key=sort_key)
    if not ended:
        # the causes explain the files' lines that say something failed: a warning that names what went wrong
        # is no all-clear, as the same lines unexplained are none (the exit code is 1 either way)
        said = [line for line in inp.failure_lines or [] if line.host is None and not _judged_healthy(inp, line)]
        if said:
            d.figures = {**(d.figures or {}), FAILURE_LINES: sum(line.count for line in said)}
        return
    first = lexicon.ordered(ended)[0]
    d.severity = "fail"
    d.confidence_why += f"; the run failed: {first.text.strip()[:200]}"
    d.evidence.append(Evidence("log", f"{first.ref}: {first.text.strip()}  (the run failed)", first.ref))


def fallback(inp: Inputs, diagnoses: List[Diagnosis]) -> List[Diagnosis]:
    """The unexplained verdict when nothing in ``diagnoses`` is fail or warn but the evidence shows a failure; and,
    beside fail or warn diagnoses, the lines of the failure lexicon none of them explains."""
    lines = unexplained_lines(inp, diagnoses)
    if any(d.severity in ("fail", "warn") for d in diagnoses):
        return [_lines_only(inp, lines, beside_causes=True)] if lines else []
    first, n = _first_finding(inp, diagnoses)
    ended = unfinished(inp)
    if first is None and not ended:
        return [_lines_only(inp, lines, beside_causes=False)] if lines else []
    if not ended and not lines and first.status == Status.WARN and advice_only(inp):
        # no failure to name, but no all-clear either: the warnings are noted for the reader
        return [Diagnosis(ADVICE_ID, ADVICE_TITLE, "info", first.message, "low",
                          f"the log shows no failure; {n} warning(s) of its checks are advice on how the run "
                          "communicates or what NCCL printed, not a fault",
                          first.fix or MORE_LOG, nodes=[first.host] if first.host else [],
                          evidence=finding_evidence(first, 3), category=CATEGORY, tier=TIER, confirm=MORE_LOG)]
    ev: List[Evidence] = []
    if first is not None:
        ev.extend(finding_evidence(first, 3))
    ev.extend(ended[:3])
    ev.extend(line_evidence(lines, 2))
    failed = ((first is not None and first.status == Status.FAIL) or bool(ended)
              or any(line.severity == "fail" for line in lines))
    if first is not None:
        what = first.message
        where = [first.host] if first.host else []
        more = first.fix or (MORE_LOG if inp.logs is not None else MORE_CHECK)
        why = (f"{n} finding(s) fail or warn and no known cause fits them" if n > 1 else
               "a finding fails or warns and no known cause fits it")
    else:
        what = ended[0].text
        where = [ended[0].host] if ended[0].host else []
        more = MORE_LOG
        why = "the evidence shows the run did not finish, and no known cause fits what it printed"
    if lines:
        why += f"; {sum(line.count for line in lines)} line(s) say something failed"
    confirm = MORE_LOG if inp.logs is not None else MORE_CHECK
    return [Diagnosis(ID, TITLE, "fail" if failed else "warn", what, "low", why,
                      f"Not recognised: read the evidence below. {more}",
                      nodes=sorted(set(where) | {line.host for line in lines if line.host}), evidence=ev,
                      figures={FAILURE_LINES: sum(line.count for line in lines)} if lines else {},
                      category=CATEGORY, tier=TIER, confirm=confirm)]
