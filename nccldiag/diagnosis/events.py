"""Events: what a node or a rank reported broken, each with the category the knowledge tables give it (pure).

A failure reads the same whichever way its evidence came: a check finding judged from a node's kernel log, the
same kernel lines pasted into a job's output, an Xid code counted by the ``xid`` check, a CUDA error a rank
printed before it died. :func:`events` reads them all, once per :class:`~nccldiag.diagnosis.inputs.Inputs`,
into one list of :class:`Event`, each with its category (the diagnoses' vocabulary), severity, the class rank
of what it asks (a node reboot above a GPU reset above a warning) and the clue that cites it:

- fail/warn findings that carry their category in ``actual`` (``{"category": ..., "events": ...}``): the
  findings made from ``knowledge/kmsg.toml`` (a GPU the driver could not initialise, a BAR left unassigned,
  hung tasks and NFS servers not responding, an HCA's health failures, the OOM killer, lockups, machine checks),
  and any other finding that names its category;
- the Xid findings of the ``xid`` check (``actual``: GPU -> {code: count}): each code's category and class
  from ``knowledge/xid.toml``;
- kernel lines in the logs (the NCCL log reader keeps them as kernel or error lines), read by the same tables
  and the same readers as a node's kernel log (:func:`nccldiag.areas.kernlog.events`,
  :func:`nccldiag.areas.xid.parse_events`): an Xid line whose address is anonymised (``PCI:...``), or a line
  behind a host, a file name or a time stamp, reads as on the node;
- a CUDA error a program printed (``CUDA error: <text>``, NCCL's ``Cuda failure '<text>'``, a ``cudaError*``
  name), by ``knowledge/cuda.toml``, with the rank the launcher's prefix names;
- PyTorch distributed's own messages that name a cause (c10d's store, gloo, torch's CUDA side), by
  ``knowledge/torch.toml`` (:mod:`nccldiag.diagnosis.torchmsg`); a victim's message makes none.

An Xid that follows another's lead takes its category: Xid 45 (the driver's cleanup of channels after other
errors; the catalog: "follow the Xid that caused it") and Xid 154 (the recovery action the driver chose after an
error) are the error they follow on the same GPU (an NVLink error's reset is the NVLink error); alone they keep
their own. Codes whose category the table leaves ``unexplained`` and informational ones make no event.

Which cause diagnoses the events of a category is the catalog's (``knowledge/causes.toml``: a row with
``events``); the others are ``node-event``'s.

NCCL's own WARNs are read the same way, by ``knowledge/nccl.toml`` (:func:`nccl_warns`), but kept apart from
:func:`events`: the causes of the catalog read NCCL's words themselves, each in its own way, so a WARN's category is
a diagnosis only where none of them explains it (:mod:`nccldiag.diagnosis.rules.nccl_warn`, after the catalog).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from nccldiag import knowledge, rx
from nccldiag.areas import kernlog, xid
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import signs, torchmsg
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.knowledge import nccl_source
from nccldiag.nccl.facts import Loc
from nccldiag.model.findings import SEVERITY, Finding, Status

# what a class asks of the admin, as a rank: the worse, the higher (areas/xid.py names the classes)
CLASS_RANK = {"reboot": 4, "hardware": 4, "reset": 3, "memory": 1, "other": 1, "unused": 1, "driver": 1, "job": 1,
              "info": 0}
FOLLOWERS = (45, 154)  # Xids that follow another error's lead
_SKIP_CATEGORIES = ("unexplained", "other:informational", "varies")
_LINE_KINDS = ("kernel", "error")  # where the NCCL log reader keeps kernel lines
_CUDA_KINDS = ("app", "error", "warn", "last-error")
# the host a kernel line names: syslog's ('Jun 17 20:20:44 node7 kernel: ...', behind a grep's 'file:' too), or a
# per-host prefix before the kernel's facility or time ('192.168.11.119: kern: warning: ...', 'node7: [ 12.3] ...')
_SYSLOG_HOST = rx.compile(r"(?:^|[\s:])[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (?P<host>[\w.\-]{1,253}) kernel(?:\[\d{1,9}\])?:")
# pdsh's 'host: ' before the kernel's line (its --decode facility, or a dmesg time '[ 12.3]' / '[Mon May  1 ...]');
# not the kernel's own 'IP: [<ffffffffc0740f8f>] func+0x1f/0x170 [module]' of an oops before 4.20
_PREFIX_HOST = rx.compile(r"^(?P<host>[\w.\-]{1,253}): (?:kern ?: ?\w{1,12} ?: |\[(?!<))")


@dataclass
class Event:
    """One thing a node or a rank reported broken."""

    category: str
    severity: str  # fail | warn
    what: str  # the meaning, as a finding prints it ("Xid 74 (NVLink error)")
    clue: C.Clue  # the evidence: the finding, or the line
    check: str  # the finding's check id, or the one the table's row makes ("xid.critical", "kernel.io_hang")
    rank: int = 1  # CLASS_RANK of what it asks
    confidence: str = "high"
    fix: str = ""
    where: str = ""  # the table row that says so ("xid.toml:412", "kmsg.toml:120", "cuda.toml:30")
    device: str = ""
    code: Optional[int] = None  # an Xid's code

    @property
    def host(self) -> Optional[str]:
        return self.clue.host


def events(inp: Inputs) -> List[Event]:
    """Every event of the inputs, read once (kept on ``inp``)."""
    known = getattr(inp, "_events", None)
    if known is None:
        known = _wedged(_of_findings(inp.all_findings()) + _of_lines(inp) + _of_cuda(inp))
        known += _of_torch(inp) + _of_ps(inp)
        inp._events = known  # type: ignore[attr-defined]
    return known


def of(inp: Inputs, category: str, checks: Sequence[str] = ()) -> List[Event]:
    """The events of ``category`` (of the checks starting with one of ``checks``, when given), the worst first: an
    error before the Xids that follow it, a higher class before a lower one."""
    found = [e for e in events(inp) if e.category == category and (not checks or e.check.startswith(tuple(checks)))]
    return ordered(found)


def ordered(found: Sequence[Event]) -> List[Event]:
    """``found`` the worst first (stable): errors before the Xids that follow their lead, then by class rank."""
    return sorted(found, key=lambda e: (e.code in FOLLOWERS, -e.rank, e.severity != "fail"))


def clues_of(found: Iterable[Event]) -> List[C.Clue]:
    """The clues of ``found``, each once."""
    out: List[C.Clue] = []
    for e in found:
        if not any(e.clue is c for c in out):
            out.append(e.clue)
    return out


def worst(found: Sequence[Event]) -> str:
    return "fail" if any(e.severity == "fail" for e in found) else "warn"


def summary(found: Sequence[Event], limit: int = 3) -> str:
    """What the events say, each meaning once: 'Xid 74 (NVLink error), Xid 154 (...)'."""
    whats = list(dict.fromkeys(e.what for e in found))
    return ", ".join(whats[:limit]) + (f" and {len(whats) - limit} more" if len(whats) > limit else "")


# ---- a GPU torn down, its users hung ----------------------------------------------------------------------

TORN_DOWN = 45  # the driver's removal of a GPU's channels (ROBUST_CHANNEL_PREEMPTIVE_REMOVAL)
_HUNG_TASK = rx.compile(r"blocked for more than")
_WEDGED_FIX = ("A process hangs in the kernel (state D) after the driver tore down the GPU's channels: the GPU or its "
               "driver is wedged and no job can use it. Drain the node and reset the GPU ('nvidia-smi -r -i <id>') "
               "or, with processes stuck in D state (nvidia-smi included), reboot.")


def _wedged(found: List[Event]) -> List[Event]:
    """Xid 45 (the driver tore down a GPU's channels) followed on the same node by tasks hung in the kernel: the
    catalog reads Xid 45 alone as the end of a job (its bucket: follow the Xid that caused it, alone restart the
    job), which holds while the node goes on; a task blocked in the kernel after it, on the node whose GPU was
    torn down, is a GPU (or its driver) that does not come back, and every user of it (nvidia-smi, the next job's
    rank) hangs. Those Xid 45 with no error to follow read as a GPU in need of a reset (``gpu_lost_xid``), and the
    hung tasks after any Xid 45 take its category: they are what the torn-down GPU left, not I/O of their own; so do
    NVIDIA's own tools hung beside any Xid (:func:`_nvidia_tools_hung`). On a node whose file server stopped
    responding ('nfs: server ... not responding') the hung tasks stay ``io_hang``."""
    torn = [e for e in found if e.code == TORN_DOWN]
    hung = [e for e in found if e.category == "io_hang" and _HUNG_TASK.search(e.clue.text)]
    storage = {e.host for e in found if e.category == "io_hang" and not _HUNG_TASK.search(e.clue.text)}
    hung = [h for h in hung if h.host not in storage]  # a file server not responding on the node explains its hangs
    if not hung:
        return found
    out = list(found)
    for i, e in enumerate(found if torn else ()):
        if e.code != TORN_DOWN:
            continue
        after = [h for h in hung if h.host == e.host and _before(e.clue, h.clue)]
        if not after:
            continue
        alone = e.category == _row_category(TORN_DOWN)
        category = "gpu_lost_xid" if alone else e.category
        if alone:
            said = (f"Xid {TORN_DOWN} on {e.device or 'a GPU'} (its channels torn down), then a task hung in the kernel: "
                    f"{_hung_line(after)[:200]}")
            out[i] = replace(e, category=category, severity="fail", rank=max(e.rank, CLASS_RANK["reset"]),
                             what=f"{e.what}, then tasks hung in the kernel", fix=_WEDGED_FIX, check="xid.critical",
                             clue=replace(e.clue, text=f"{said} | {e.clue.text}"))
        for h in after:
            j = next(k for k, x in enumerate(found) if x is h)
            if out[j].category == "io_hang":
                out[j] = replace(h, category=category, severity="fail", confidence="medium",
                                 what=f"{h.what}, after Xid {TORN_DOWN} on its GPU")
    still = [x for x in out if x.category == "io_hang" and _HUNG_TASK.search(x.clue.text) and x.host not in storage]
    return _nvidia_tools_hung(out, still)


# NVIDIA's own tools and services, which block in the driver when the GPU or the driver does not answer
_NVIDIA_TASK = rx.compile(r"task (?:nvidia-smi|nvidia-[\w-]{1,30}|nv-hostengine|NvmlTaskRunner|dcgm[\w-]{0,30}):\d")


def _nvidia_tools_hung(found: List[Event], hung: List[Event]) -> List[Event]:
    """Hung tasks that are NVIDIA's own tools (nvidia-smi, nvidia-persistenced, DCGM's host engine), on a node whose
    GPUs reported Xid errors: the tools block in the driver, which does not answer; the GPU needs a reset (the
    category of a worse Xid there, else ``gpu_lost_xid``), not the node's I/O."""
    out = list(found)
    for h in hung:
        if not _NVIDIA_TASK.search(h.clue.text):
            continue
        xids = [e for e in found if e.code is not None and e.host == h.host]
        if not xids:
            continue
        worst = max(xids, key=lambda e: e.rank)
        category = worst.category if worst.rank >= CLASS_RANK["reset"] else "gpu_lost_xid"
        j = next(k for k, x in enumerate(found) if x is h)
        out[j] = replace(h, category=category, severity="fail", confidence="medium",
                         what=f"{h.what}: an NVIDIA tool blocked in the driver beside {worst.what}")
    return out


def _hung_line(hung: Sequence[Event]) -> str:
    """The hung-task line itself among the clues (a finding's clue holds it among its evidence)."""
    parts = [p for h in hung for p in h.clue.text.split(" | ") if _HUNG_TASK.search(p)]
    return parts[0].strip() if parts else hung[0].what


def _before(a: C.Clue, b: C.Clue) -> bool:
    """Whether ``a`` comes before ``b``: by their lines in one file; a finding (a node's whole kernel log) holds no
    order against another, and is taken as both sides of one node."""
    at_a, at_b = a.at, b.at
    if at_a is None or at_b is None:
        return True
    if getattr(at_a, "source", None) != getattr(at_b, "source", None):
        return True
    return getattr(at_a, "lineno", 0) < getattr(at_b, "lineno", 0)


# ---- findings -------------------------------------------------------------------------------------------------

XID_CHECKS = ("xid.critical", "xid.memory", "xid.other", "xid.driver", "xid.application")


def _of_findings(found: Sequence[Finding]) -> List[Event]:
    out: List[Event] = []
    for f in found:
        if SEVERITY[f.status] < SEVERITY[Status.WARN] or f.status == Status.ERROR:
            continue
        severity = "fail" if f.status == Status.FAIL else "warn"
        clue = C.Clue("finding", " | ".join([f.message] + list(f.evidence or [])[:6]), host=f.host, finding=f)
        actual = f.actual if isinstance(f.actual, dict) else {}
        category = actual.get("category")
        if f.check in kernlog.NO_EVENT_CHECKS:  # its lines are read by their own words (kmsg.toml column event)
            continue
        if isinstance(category, str) and category not in _SKIP_CATEGORIES:
            out.append(Event(category, severity, f.message.split(":")[0], clue, f.check,
                             rank=3 if severity == "fail" else 1, fix=f.fix or ""))
        elif f.check in XID_CHECKS:
            out += _xid_finding(f, severity, clue, actual)
    return out


def _xid_finding(f: Finding, severity: str, clue: C.Clue, actual: Dict) -> List[Event]:
    """The events of an Xid finding: each GPU's codes, the followers given the category of the codes they follow."""
    out: List[Event] = []
    for gpu, codes in actual.items():
        if not isinstance(codes, dict):
            continue
        found = [(c, n) for c, n in codes.items() if isinstance(c, int)]
        leads = [c for c, _ in found if c not in FOLLOWERS and _row_category(c)]
        lead = max(leads, key=_rank_of, default=None)
        for code, _ in found:
            category = _row_category(code)
            if code in FOLLOWERS and lead is not None:
                category = _row_category(lead)
            if not category:
                continue
            rank = max(_rank_of(code), 3) if f.check == "xid.critical" else _rank_of(code)
            out.append(Event(category, severity, xid.label(code), clue, f.check, rank=rank,
                             fix=_xid_fix(code), where=xid.ROWS.get(code, {}).get("where", ""), device=str(gpu),
                             code=code))
    return out


def _row_category(code: int) -> str:
    c = xid.ROWS.get(code, {}).get("category", "")
    return "" if c in _SKIP_CATEGORIES else c


def _rank_of(code: int) -> int:
    return CLASS_RANK.get(xid.CODES.get(code, ("other",))[0], 1)


def _xid_fix(code: int) -> str:
    action = xid.CODES.get(code, ("", "", ""))[2]
    return f"Xid {code}: {action} ({xid.ROWS[code]['where']})" if code in xid.ROWS and action else ""


# ---- kernel lines in the logs ---------------------------------------------------------------------------------

# the readers whose rows are events here: the rows every area judges alike, the BARs; the Xid lines are read by the
# Xid reader; AER lines and link flaps are the pcie-link and ib-port-down causes' own reading
_READERS = ("", "bar")


def _of_lines(inp: Inputs) -> List[Event]:
    by_source: Dict[str, List[C.Clue]] = {}
    for c in C.find(inp, kernlog.PATTERN, _LINE_KINDS):
        if c.at is not None:
            by_source.setdefault(getattr(c.at, "source", ""), []).append(c)
    out: List[Event] = []
    for found in by_source.values():
        out += _log_events(sorted(found, key=lambda c: getattr(c.at, "lineno", 0)))
    return out


def _log_events(found: List[C.Clue]) -> List[Event]:
    """The events of one file's kernel lines, in order."""
    log = kernlog.KernelLog(read=True)
    at: Dict[str, C.Clue] = {}
    for c in found:
        when, text = kernlog.split_line(c.text[:kernlog.MAX_LINE])
        log.lines.append((when, text))
        at.setdefault(kernlog.short(f"{when} {text}".strip()), _with_host(c))
    facts = xid.parse_events(log)
    out: List[Event] = []
    xids = [e for e in facts.events if at.get(e.line) is not None]
    gsp = any(e.code in (119, 120) for e in xids)
    for e in xids:
        kind = e.kind
        category = _row_category(e.code)
        if e.code in FOLLOWERS:
            lead = _lead(xids, e)
            category = _row_category(lead.code) if lead is not None else category
            kind = lead.kind if lead is not None and e.code == 45 else kind
        if kind == "info" or not category:
            continue
        out.append(Event(category, "fail" if kind in xid.DRAIN else "warn", e.meaning, at[e.line],
                         "xid.critical" if kind in xid.DRAIN else "xid.other", rank=CLASS_RANK.get(kind, 1),
                         fix=_xid_fix(e.code), where=xid.ROWS.get(e.code, {}).get("where", ""), device=e.bus,
                         code=e.code))
    for e in kernlog.events(log):
        m = e.message
        if m.reader not in _READERS or m.category in _SKIP_CATEGORIES or not m.event or e.line not in at:
            continue
        if gsp and m.check == "xid.gsp":  # the GSP timeout of an Xid 119/120 line is that event
            continue
        severity = "fail" if e.severity == "fail" else "warn"
        out.append(Event(m.category, severity, m.meaning, at[e.line], m.check, rank=3 if severity == "fail" else 1,
                         fix=f"{m.fix} ({m.where})", where=m.where, device=e.device))
    return out


def _lead(xids: Sequence["xid.XidEvent"], e: "xid.XidEvent") -> Optional["xid.XidEvent"]:
    """The Xid a follower follows: the one it names ('caused by previous Xid N'), else the nearest before it on its
    GPU, else the nearest after."""
    same = [x for x in xids if x.bus == e.bus and x.code not in FOLLOWERS and _row_category(x.code)]
    named = e.cause
    if named is not None and named not in FOLLOWERS:
        return next((x for x in same if x.code == named), None) or xid.XidEvent(e.bus, named, "", e.when, e.line)
    i = xids.index(e)
    before = [x for x in same if xids.index(x) < i]
    after = [x for x in same if xids.index(x) > i]
    return before[-1] if before else (after[0] if after else None)


def _with_host(c: C.Clue) -> C.Clue:
    """The clue, with the host its line names where the reader named none."""
    if c.host:
        return c
    m = _SYSLOG_HOST.search(c.text[:400]) or _PREFIX_HOST.match(c.text)
    if m is None:
        return c
    c.host = m.group("host")
    return c


# ---- CUDA errors a program printed ----------------------------------------------------------------------------

CUDA_TABLE = "cuda.toml"


def _cuda_rows() -> Tuple[Dict[str, Dict], Dict[str, Dict]]:
    rows = knowledge.rows(CUDA_TABLE)
    names = {r["name"]: r for r in rows}
    names.update({r["driver"]: r for r in rows if r.get("driver")})
    texts: Dict[str, Dict] = {}
    for r in rows:  # the first of two enumerators of one text; the longest text first, so that a line is read by
        texts.setdefault(r["text"].lower(), r)  # 'unspecified launch failure in prior launch', not its prefix
    return dict(sorted(texts.items(), key=lambda kv: -len(kv[0]))), names


CUDA_BY_TEXT, CUDA_BY_NAME = _cuda_rows()
CUDA_BY_CODE = {r["code"]: r for r in reversed(knowledge.rows(CUDA_TABLE))}  # of one value, the first row
# 'CUDA error: <text>' (PyTorch, most programs), NCCL's "Cuda failure 'text'", nccl-tests' "CUDA failure ... 'text'",
# 'error code <text>' (CUDA samples and validators; a text's own apostrophe, "doesn't", is in the text, a quote
# that closes it is not), and the enums' names: the runtime's (cudaErrorX) and the driver
# API's (CUDA_ERROR_X, as JAX/XLA and other driver-API programs print it before the text); and a runtime call's
# non-zero value ('cudaGetDeviceCount returned 802', as the CUDA samples' deviceQuery prints it before '-> <text>') or
# its failure with the error's value or text ('cudaGetDeviceCount() call failed with error 804', '... failed
# initialization error'); a driver call's value as Open MPI's CUDA help texts print it ('cuIpcOpenMemHandle return
# value:   217', opal/mca/common/cuda/help-mpi-common-cuda.txt); FasterTransformer's '[FT][ERROR] CUDA runtime error:
# <text> <file>:<line>' (src/fastertransformer/utils/cuda_utils.h check()); PyTorch's older THC forms, 'THCudaCheck FAIL
# file=%s line=%i error=%i : %s' and 'cuda runtime error (%d) : %s' (aten/src/THC/THCGeneral.cpp __THCudaCheck, whose
# value is of the CUDA release of the day, so the text is read, not the value); c10's device count, 'Unexpected error
# from cudaGetDeviceCount(). ... that might have already set an error? Error <value>: <text>' (c10/cuda/
# CUDAFunctions.cpp device_count_impl); and a kernel's failed assert(), as the device runtime prints it per thread
# ('<file>:<line>: <function>: block: [x,y,z], thread: [x,y,z] Assertion `<expression>` failed.'), the line of the
# error cudaErrorAssert ('device-side assert triggered') that follows it
_CUDA_TEXT = rx.compile(r"(?:CUDA (?:runtime )?error|[Cc]uda failure(?: \d{1,4})?|CUDA failure [\w./\-]{1,80}:\d{1,6})"
                        r"\s{0,3}[:']\s{0,3}'?(?P<text>[A-Za-z_](?:[^'\n]|'(?=\w)){0,160})|"
                        r"(?:\bcuda runtime error \(\d{1,4}\)|\bTHCudaCheck FAIL file=\S{1,300} line=\d{1,6} error=\d{1,4}|"
                        r"\bthat might have already set an error\? Error \d{1,4}:) {0,3}:? {0,3}"
                        r"(?P<thc_text>[A-Za-z_][^\n]{0,160})|"
                        r"\bblock: \[\d{1,10},\d{1,10},\d{1,10}\], thread: \[\d{1,10},\d{1,10},\d{1,10}\] (?P<assert>Assertion) `|"
                        r"\(error code (?P<code_text>[A-Za-z_][^)\n]{0,160})\)|"
                        r"\b(?P<name>cudaError[A-Z]\w{0,60}|CUDA_ERROR_[A-Z0-9_]{2,60})|"
                        r"\bcuda[A-Z][A-Za-z]{2,40}(?:\(\))? (?:returned (?P<code>[1-9]\d{0,3})\b|(?:call )?failed"
                        r"(?: with error (?P<failed_code>\d{1,4})\b|[:,]? {0,3}(?P<failed_text>[A-Za-z][^'\n]{0,160})))|"
                        r"\bcu[A-Z][A-Za-z]{2,40} return value: {0,12}(?P<return_code>[1-9]\d{0,3})\b")
# the rank a launcher's prefix names: torchrun's '[default3]:' (local rank) and '[rank3]:', Open MPI's
# '[1,3]<stderr>:', srun --label's '3: '
_RANK = rx.compile(r"\s{0,8}(?:\[(?P<kind>default|rank)(?P<n>\d{1,6})\]:|\[\d{1,6},(?P<ompi>\d{1,6})\]<std(?:out|err)>:|"
                   r"(?P<srun>\d{1,6}): )")


def cuda_row(text: str) -> Optional[Dict]:
    """The row of ``knowledge/cuda.toml`` of the CUDA error ``text`` names, None when it names none of them."""
    m = _CUDA_TEXT.search(text)
    while m is not None:
        if m.group("name"):
            row = CUDA_BY_NAME.get(m.group("name"))
        elif m.group("assert"):
            row = CUDA_BY_NAME.get("cudaErrorAssert")
        elif m.group("code") or m.group("failed_code"):
            row = CUDA_BY_CODE.get(int(m.group("code") or m.group("failed_code")))
        elif m.group("return_code"):
            # a driver call's value in an MPI's help text: the call failed on the node, which the value's row
            # names where it names a cause of the node or its setup; a program's own fault it does not say
            row = CUDA_BY_CODE.get(int(m.group("return_code")))
            if row is not None and row["category"] == "other:gpu-application-fault":
                row = None
        else:
            said = (m.group("text") or m.group("code_text") or m.group("failed_text") or m.group("thc_text")
                    or "").strip().lower()
            row = next((r for t, r in CUDA_BY_TEXT.items() if said.startswith(t)), None)
        if row is not None:
            return row
        m = _CUDA_TEXT.search(text, m.end())
    return None


# pdsh's, clush's or a log shipper's 'host: ' before a rank's line: a name with a digit or a dash (an exception's
# dotted name, 'torch.distributed.DistNetworkError: ', has neither), or an address
_LAUNCHER_HOST = rx.compile(r"\s{0,8}(?P<host>[A-Za-z0-9][A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9-]{1,63}){0,8}): ")


def rank_of(text: str) -> str:
    """The rank a launcher's prefix of ``text`` names ('local rank 3'), '' when none."""
    m = _RANK.match(text)
    if m is None:
        return ""
    if m.group("kind") == "default":
        return f"local rank {m.group('n')}"
    return f"rank {m.group('n') or m.group('ompi') or m.group('srun')}"


def _host_like(name: str) -> bool:
    return not name.isdigit() and any(ch.isdigit() or ch == "-" for ch in name)


def launcher_of(c: C.Clue) -> str:
    """Who printed the clue's line, as its launcher's prefixes name it ('rank 3 of node7', 'local rank 3', 'node7'):
    the prefixes still on the line (a host's before a rank's, as pdsh puts them), else the rank of the tag the log
    reader took off it; '' when none names anyone."""
    text = c.lead + (c.cite or c.text)
    rank = host = ""
    at = 0
    for _ in range(3):
        m = _RANK.match(text, at)
        if m is not None and not rank:
            rank, at = rank_of(text[at:]), m.end()
            continue
        h = _LAUNCHER_HOST.match(text, at)
        if h is not None and not host and _host_like(h.group("host")):
            host, at = h.group("host"), h.end()
            continue
        break
    if not rank and c.rank is not None:
        rank = f"rank {c.rank}"
    if host and not c.host:
        c.host = host
    return f"{rank} of {host}" if rank and host else rank or host


def besides_host(c: C.Clue) -> str:
    """:func:`launcher_of` less the clue's host, which a diagnosis names on its own ('rank 3' for 'rank 3 of node7'
    on node7's clue, '' for 'node7'): the words an event adds to its message, so that no summary says the host
    twice."""
    who = launcher_of(c)
    if c.host and who == c.host:
        return ""
    if c.host and who.endswith(f" of {c.host}"):
        return who[:-len(f" of {c.host}")]
    return who


def _cuda_lines(inp: Inputs, held: Sequence[C.Clue]) -> List[C.Clue]:
    """The failure lexicon's lines of a CUDA error (shape ``cuda-error``) that no clue of the log reader holds: an
    enumerator's name printed on its own line or after a call ('CUDA_ERROR_SYSTEM_NOT_READY', 'cudaGetDeviceCount
    returned 802 -> cudaErrorSystemNotReady'), which the reader keeps as no error line of its own (``held``: the
    clues already found)."""
    lines = [line for line in inp.failure_lines or [] if line.shape == "cuda-error"]
    if not lines:
        return []
    texts = {c.text for c in held}
    out: List[C.Clue] = []
    for line in lines:
        for lineno, text in [(line.lineno, line.text)] + list(line.more):
            if text not in texts and not any(text.endswith(t) or t.endswith(text) for t in texts):
                out.append(C.Clue("error", text, Loc(line.source, lineno, line.host), text, line.host))
    return out


def _of_cuda(inp: Inputs) -> List[Event]:
    """The CUDA errors programs printed, each read through ``knowledge/cuda.toml``; a CUDA failure NCCL met while
    setting up NVLink SHARP (its NVLS transport) is left to the causes that read that set-up whole (fabric
    manager, NVLS multicast): what the GPU answered there says how the set-up failed, not that the GPU did."""
    out: List[Event] = []
    nvls = None
    found = C.find(inp, _CUDA_TEXT, _CUDA_KINDS)
    for c in found + _cuda_lines(inp, found):
        row = cuda_row(c.text)
        if row is None or row["category"] in _SKIP_CATEGORIES:
            continue
        if nvls is None:
            nvls = {x.text for x in signs.nvls_failures(inp)}
        if c.text in nvls:
            continue
        who = besides_host(c)
        what = f"CUDA error '{row['text']}' ({row['name']})" + (f" on {who}" if who else "")
        out.append(Event(row["category"], "fail", what, c, "cuda." + row["name"], rank=2,
                         confidence=row.get("confidence", "high"), fix=row.get("fix", ""), where=row["where"]))
    return out


# ---- NCCL's own WARNs -----------------------------------------------------------------------------------------

_WARN_KINDS = ("warn", "last-error")  # an NCCL WARN line, and its message quoted as 'Last error:'


def nccl_warns(inp: Inputs) -> List[Event]:
    """The NCCL WARNs of the inputs whose row of ``knowledge/nccl.toml`` names a cause (its category is not
    ``none``), each an event of that category with the row's meaning and fix (kept on ``inp``)."""
    known = getattr(inp, "_nccl_warns", None)
    if known is not None:
        return known
    out: List[Event] = []
    texts = {c.text for c in C.find(inp, _ANY, _WARN_KINDS)}
    rows = {t: nccl_source.message_of(t) for t in texts}
    for c in C.find(inp, _ANY, _WARN_KINDS):
        m = rows.get(c.text)
        if m is None or m.category == nccl_source.NONE:
            continue
        out.append(Event(m.category, m.severity, m.meaning, c, "nccl." + m.id, rank=1, confidence="medium",
                         fix=m.fix, where=m.where))
    inp._nccl_warns = out  # type: ignore[attr-defined]
    return out


_ANY = rx.compile(r"\S")


PS = "ps"  # the paste kind of process listings (paste/kinds/ps.py)


def _of_ps(inp: Inputs) -> List[Event]:
    """Processes a pasted ``ps`` or ``top`` listing shows in uninterruptible sleep (state D): stuck in the kernel,
    most often waiting on a file system or a device (the ``io_hang`` the kernel's hung-task lines tell at length);
    one listing does not say for how long, hence a warning."""
    out: List[Event] = []
    for b in (inp.pasted.blocks if inp.pasted is not None else ()):
        if b.kind != PS:
            continue
        lines = b.text.splitlines()
        for i, pid, state, cmd in signs.ps_stuck(b.text):
            at = Loc(b.path, b.lineno + i, b.host)
            what = (f"{cmd} (pid {pid}) in state {state} when the listing was taken: uninterruptible sleep in the "
                    "kernel, most often waiting on a file system or a device")
            out.append(Event("io_hang", "warn", what, C.Clue("kernel", what, at, lines[i].strip(), b.host),
                             "ps.uninterruptible", confidence="medium",
                             fix="Read where it waits: cat /proc/<pid>/stack and the kernel's hung-task lines "
                                 "(dmesg | grep 'blocked for more than') name the file system or device; a second "
                                 "listing a minute later shows whether it stays in D."))
    return out


def _of_torch(inp: Inputs) -> List[Event]:
    """PyTorch distributed's messages whose row of ``knowledge/torch.toml`` names a cause, with the rank the launcher's
    prefix names."""
    out: List[Event] = []
    for row, c in torchmsg.found(inp):
        who = besides_host(c)
        out.append(Event(row["category"], row["severity"], torchmsg.what(row) + (f" on {who}" if who else ""), c,
                         "torch." + row["id"], rank=2, confidence=row["confidence"], fix=row["fix"],
                         where=row["where"]))
    return out
