"""NCCL RAS status reports (``ncclras``, or ``STATUS`` on port 28028) -> facts.

NCCL 2.24 and later run a RAS thread in every process; a client on a node of
the job asks it for the job's state and gets a report: a job summary (nodes,
processes, GPUs), one table row per group of like communicators (status
RUNNING / INIT / FINALIZE / NOCOMM / ABORT, errors OK / INCOMPLETE / MISMATCH
/ ERROR), then ``Errors`` and ``Warnings`` sections. Those name the processes
that did not answer (INCOMPLETE) or stopped answering for 60 s (DEAD), the
ranks missing from each communicator, ranks whose operation counts differ
(MISMATCH), and the timeouts met while collecting. From NCCL 2.28.7 the same
data comes as JSON (``-f json``). Both forms are read here.

Pure: text in, :class:`RasReport` out. A text holding several reports (the
same query repeated) gives one report each, in order.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from nccldiag import rx

MAX_ITEMS = 256  # ranks, processes and lines kept per problem; the rest are counted
MAX_REPORTS = 64

ERROR_KINDS = ("DEAD", "INCOMPLETE", "ERROR")  # what the Errors section holds
WARNING_KINDS = ("MISMATCH", "TIMEOUT")


@dataclass
class RasRank:
    rank: int
    gpu: Optional[str] = None
    pid: Optional[int] = None
    node: Optional[str] = None

    def where(self) -> str:
        parts = []
        if self.gpu is not None:
            parts.append(f"GPU {self.gpu}")
        if self.pid is not None:
            parts.append(f"process {self.pid}")
        if self.node:
            parts.append(f"on node {self.node}")
        return f"rank {self.rank}" + (f" ({' '.join(parts)})" if parts else "")


@dataclass
class RasProcess:
    pid: int
    node: str
    gpus: str = ""

    def where(self) -> str:
        return f"process {self.pid} on node {self.node}" + (f" (GPU {self.gpus})" if self.gpus else "")


@dataclass
class RasGroup:
    group: int
    comms: int
    nodes: int
    ranks_per_node: str
    ranks_per_comm: int
    ranks_in_group: int
    status: str
    errors: List[str]


@dataclass
class RasProblem:
    kind: str  # DEAD, INCOMPLETE, ERROR, MISMATCH, TIMEOUT
    comm: Optional[str] = None  # "#0-0": group 0, communicator 0 of the group
    comm_hash: Optional[str] = None
    count: Optional[int] = None  # processes or ranks the problem covers, as RAS counted them
    lines: List[str] = field(default_factory=list)  # what RAS said, other than the rank and process lines
    ranks: List[RasRank] = field(default_factory=list)
    missing_ranks: List[int] = field(default_factory=list)
    processes: List[RasProcess] = field(default_factory=list)

    @property
    def severity(self) -> str:
        return "error" if self.kind in ERROR_KINDS else "warning"

    def nodes(self) -> List[str]:
        out: List[str] = []
        for n in [p.node for p in self.processes] + [r.node for r in self.ranks if r.node]:
            if n and n not in out:
                out.append(n)
        return out

    def signature(self) -> tuple:
        """What stays the same when a later query finds the job in the same state."""
        return (self.kind, self.comm_hash, tuple(self.lines), tuple(r.rank for r in self.ranks),
                tuple(self.missing_ranks), tuple(p.pid for p in self.processes))


@dataclass
class RasReport:
    format: str = "text"  # or "json"
    lineno: int = 0  # where the report starts in its text (1-based)
    nccl_version: Optional[str] = None
    cuda_runtime: Optional[int] = None
    cuda_driver: Optional[int] = None
    nodes: Optional[int] = None
    processes: Optional[int] = None
    gpus: Optional[int] = None
    outlier_nodes: List[str] = field(default_factory=list)
    collection_s: Optional[float] = None
    groups: List[RasGroup] = field(default_factory=list)
    communicators: Optional[int] = None
    no_communicators: bool = False
    problems: List[RasProblem] = field(default_factory=list)
    complete: bool = False  # the report reached its Communicators table (or is whole JSON)
    source: str = ""

    def statuses(self) -> List[str]:
        return sorted({g.status for g in self.groups})


# ---- text

_VERSION = rx.compile(r"^NCCL version (?P<v>\S+) compiled with CUDA (?P<cuda>\S+)\s*$")
_CUDA = rx.compile(r"^CUDA runtime version (?P<rt>-?\d+), driver version (?P<drv>-?\d+)")
_JOB = rx.compile(r"^Job summary\s*$")
_COMMS = rx.compile(r"^Communicators\.\.\.(?:\s*\((?P<s>[\d.]+)s\))?")
_NUMS = rx.compile(r"^\s*\d+(?:\s+\d+)*\s*$")
_GROUP_ROW = rx.compile(r"^\s*(?P<g>\d+)\s+(?P<comms>\d+)\s+(?P<nodes>\d+)\s+(?P<rpn>\d+(?:-\d+)?)\s+"
                        r"(?P<rpc>\d+)\s+(?P<rig>\d+)\s+(?P<status>[A-Z]+)\s+(?P<errors>[A-Z,]+)\s*$")
_OUTLIER = rx.compile(r"^\s*Node (?P<node>\S+) running process(?:es)? (?P<pids>[\d,]+)")
_BLOCK = rx.compile(r"^(?P<kind>INCOMPLETE|DEAD|TIMEOUT|ERROR|MISMATCH)\s*$")
_COMM_BLOCK = rx.compile(r"^#(?P<comm>\d+-\d+) \((?P<hash>[0-9a-fA-Fx]+)\) (?P<kind>INCOMPLETE|ERROR|MISMATCH)\s*$")
_PROCESS = rx.compile(r"^\s*Process (?P<pid>\d+) on node (?P<node>\S+) managing GPUs? (?P<gpus>.*\S|\s)\s*$")
_RANK = rx.compile(r"^\s*Rank (?P<rank>-?\d+) -- (?:GPU (?P<gpu>\S+(?: \(\S+\))?) managed by process (?P<pid>\d+) "
                   r"on node (?P<node>\S+)|\[process information not found\])")
_MISSING_LIST = rx.compile(r"^\s*The missing ranks?: (?P<list>[\d,\s-]+)$")
_COUNT = rx.compile(r"^\s*(?:Missing communicator data from (?P<missing>\d+)"
                    r"|(?P<dead>\d+) job process(?:es)? (?:is|are) considered dead"
                    r"|Encountered (?P<timeouts>\d+) communication timeout"
                    r"|(?:Initialization|Asynchronous) errors? on (?P<errors>\d+) rank)")


def _ints(spec: str) -> List[int]:
    out: List[int] = []
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        try:
            lo, hi = int(a), int(b or a)
        except ValueError:
            continue
        out.extend(range(lo, min(hi, lo + MAX_ITEMS) + 1))
        if len(out) >= MAX_ITEMS:
            break
    return out[:MAX_ITEMS]


class _TextReader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.reports: List[RasReport] = []
        self.cur: Optional[RasReport] = None
        self.section = ""  # "", "job", "comms", "errors", "warnings"
        self.problem: Optional[RasProblem] = None
        self.total_header = ""  # the "(total)" header line of the job table just read

    def new(self, lineno: int) -> RasReport:
        if len(self.reports) >= MAX_REPORTS:
            self.reports.pop(0)
        self.cur = RasReport(lineno=lineno, source=self.source)
        self.reports.append(self.cur)
        self.section, self.problem = "", None
        return self.cur

    def line(self, lineno: int, raw: str) -> None:
        text = raw.rstrip("\r\n")
        s = text.strip()
        m = _VERSION.match(s)
        if m:
            r = self.new(lineno)
            r.nccl_version = m.group("v")
            return
        if _JOB.match(s):
            if self.cur is None or self.cur.nodes is not None or self.section != "":
                self.new(lineno)
            self.section = "job"
            return
        if self.cur is None or self.section in ("errors", "warnings") or self.cur.groups:
            # an excerpt that starts past the job summary, or a query with only its table repeated
            if _COMMS.match(s) or (s.startswith("Group ") and "Status" in s):
                self.new(lineno)
                self.section = "comms"
            elif self.cur is None and s in ("Errors", "Warnings"):
                self.new(lineno)
            elif self.cur is None and _COUNT.match(s) and not _COUNT.match(s).group("timeouts"):
                # an excerpt that starts at a DEAD or INCOMPLETE message, its heading cut off
                self.new(lineno)
                self.section = "errors"
                self.problem = RasProblem("DEAD" if _COUNT.match(s).group("dead") else "INCOMPLETE")
                self.cur.problems.append(self.problem)
        if self.cur is not None and self.section == "" and s.startswith("Group ") and "Status" in s:
            self.section = "comms"
        r = self.cur
        if r is None:
            return
        m = _CUDA.match(s)
        if m and r.cuda_runtime is None:
            r.cuda_runtime, r.cuda_driver = int(m.group("rt")), int(m.group("drv"))
            return
        m = _COMMS.match(s)
        if m:
            self.section, self.problem = "comms", None
            if m.group("s"):
                try:
                    r.collection_s = float(m.group("s"))
                except ValueError:  # '1.2.3s': no time
                    pass
            return
        if self.section == "comms":
            r.complete = True
        if s == "Errors":
            self.section, self.problem = "errors", None
            return
        if s == "Warnings":
            self.section, self.problem = "warnings", None
            return
        if not s or set(s) == {"="}:
            self.problem = None
            return
        if self.section == "job":
            self.job_line(r, text, s)
        elif self.section == "comms":
            m = _COMM_BLOCK.match(s)
            if m:  # an excerpt that skipped the section's title
                self.section = "errors" if m.group("kind") in ERROR_KINDS else "warnings"
                self.problem_line(r, text, s)
                return
            if s.startswith("No communicator data collected"):
                r.no_communicators = True
                return
            m = _GROUP_ROW.match(text)
            if m:
                r.groups.append(RasGroup(int(m.group("g")), int(m.group("comms")), int(m.group("nodes")),
                                         m.group("rpn"), int(m.group("rpc")), int(m.group("rig")),
                                         m.group("status"), m.group("errors").split(",")))
                r.communicators = sum(g.comms for g in r.groups)
        elif self.section in ("errors", "warnings"):
            self.problem_line(r, text, s)

    def job_line(self, r: RasReport, text: str, s: str) -> None:
        if s.startswith("(total)"):
            self.total_header = s
            return
        if s.startswith("The outlier node"):
            return
        m = _OUTLIER.match(text)
        if m:
            if len(r.outlier_nodes) < MAX_ITEMS:
                r.outlier_nodes.append(m.group("node"))
            return
        if self.total_header and _NUMS.match(s):
            nums = [int(x) for x in s.split()]
            if len(nums) == 5:  # nodes, processes per node, GPUs per process, processes, GPUs
                r.nodes, r.processes, r.gpus = nums[0], nums[3], nums[4]
            elif len(nums) == 3:  # nodes, processes, GPUs (totals)
                r.nodes, r.processes, r.gpus = nums
            self.total_header = ""

    def problem_line(self, r: RasReport, text: str, s: str) -> None:
        m = _COMM_BLOCK.match(s)
        if m:
            self.problem = RasProblem(m.group("kind"), "#" + m.group("comm"), m.group("hash"))
            r.problems.append(self.problem)
            return
        m = _BLOCK.match(s)
        if m and not text.startswith(" "):
            self.problem = RasProblem(m.group("kind"))
            r.problems.append(self.problem)
            return
        p = self.problem
        if p is None:
            return
        m = _PROCESS.match(text)
        if m:
            if len(p.processes) < MAX_ITEMS:
                p.processes.append(RasProcess(int(m.group("pid")), m.group("node"), m.group("gpus")))
            return
        m = _RANK.match(text)
        if m:
            if len(p.ranks) < MAX_ITEMS:
                p.ranks.append(RasRank(int(m.group("rank")), m.group("gpu"),
                                       int(m.group("pid")) if m.group("pid") else None, m.group("node")))
            return
        m = _MISSING_LIST.match(text)
        if m:
            p.missing_ranks = _ints(m.group("list"))
            return
        m = _COUNT.match(text)
        if m:
            n = next(int(v) for v in m.groups() if v is not None)
            p.count = n if p.count is None else p.count
        if len(p.lines) < MAX_ITEMS:
            p.lines.append(s)


# Where a line of the report starts inside a line that holds several (a paragraph's lines run together when the
# report was pasted outside a code block): a section's rule, a problem's messages, its process and rank lines.
_JOINED = rx.compile(r"(?<=\S) (?=={3,}(?: |$)|\d+ job process(?:es)? (?:is|are) considered dead"
                     r"|Missing communicator data from \d|Process \d+ on node |Rank -?\d+ (?:--|has status) "
                     r"|The missing ranks?: |Encountered \d+ communication timeout|\d+ ranks have "
                     r"|Communicator ranks have |(?:Initialization|Asynchronous) errors? on \d"
                     r"|#\d+-\d+ \([0-9a-fA-Fx]+\) [A-Z]+(?: |$))|(?<==) (?=[A-Z][A-Za-z]+(?: |$))")


def _records(line: str) -> List[str]:
    """The report's lines a line holds: itself, or the pieces of a run-together paragraph."""
    if not _JOINED.search(line):
        return [line]
    return [x for x in _JOINED.split(line) if x.strip()]


def _parse_text(text: str, source: str, first_line: int = 1) -> List[RasReport]:
    reader = _TextReader(source)
    for i, line in enumerate(text.splitlines()):
        for piece in _records(line):
            reader.line(first_line + i, piece)
    return [r for r in reader.reports if r.complete or r.nodes is not None or r.problems]


# ---- JSON (NCCL 2.28.7 and later)

def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _json_rank(d: Dict[str, Any]) -> Optional[RasRank]:
    rank = _int(d.get("rank"))
    if rank is None:
        return None
    dev = _int(d.get("cuda_dev"))
    nvml = _int(d.get("nvml_dev"))
    gpu = None if dev is None else (str(dev) if nvml in (None, dev) else f"{dev} (NVML {nvml})")
    host = d.get("host")
    return RasRank(rank, gpu, _int(d.get("pid")), host if isinstance(host, str) else None)


def _comm_problems(idx: int, c: Dict[str, Any]) -> List[RasProblem]:
    out: List[RasProblem] = []
    name, h = f"#{idx}", str(c.get("hash") or "")[:40] or None
    missing = [m for m in (c.get("missing_ranks") or []) if isinstance(m, dict)]
    ranks = [m for m in (c.get("ranks") or []) if isinstance(m, dict)]
    if missing:
        dead = [m for m in missing if isinstance(m.get("status"), dict) and m["status"].get("considered_dead")]
        p = RasProblem("INCOMPLETE", name, h, count=_int(c.get("missing_ranks_count")) or len(missing),
                       lines=[f"Missing communicator data from {len(missing)} rank{'s' if len(missing) != 1 else ''}"])
        p.ranks = [r for r in (_json_rank(m) for m in missing[:MAX_ITEMS]) if r is not None]
        out.append(p)
        if dead:
            d = RasProblem("DEAD", name, h, count=len(dead),
                           lines=[f"{len(dead)} rank{'s are' if len(dead) != 1 else ' is'} considered dead"])
            d.ranks = [r for r in (_json_rank(m) for m in dead[:MAX_ITEMS]) if r is not None]
            out.append(d)
    bad = []
    for m in ranks:
        st = m.get("status") if isinstance(m.get("status"), dict) else {}
        init, err = _int(st.get("init_state")), _int(st.get("async_error"))
        if (init not in (None, 0, 7)) or (err not in (None, 0, 7)) or st.get("abort_flag") is True:
            bad.append((m, init, err))
    if bad:
        p = RasProblem("ERROR", name, h, count=len(bad))
        for m, init, err in bad[:MAX_ITEMS]:
            r = _json_rank(m)
            if r is not None:
                p.ranks.append(r)
        inits = sorted({i for _, i, _ in bad if i not in (None, 0, 7)})
        errs = sorted({e for _, _, e in bad if e not in (None, 0, 7)})
        if inits:
            p.lines.append(f"Initialization error {', '.join(map(str, inits))} on "
                           f"{sum(1 for _, i, _ in bad if i in inits)} rank(s)")
        if errs:
            p.lines.append(f"Asynchronous error {', '.join(map(str, errs))} on "
                           f"{sum(1 for _, _, e in bad if e in errs)} rank(s)")
        if not (inits or errs):
            p.lines.append("Communicator aborted")
        out.append(p)
    # operation counts that differ between the ranks of one communicator
    counts: Dict[str, Dict[int, List[RasRank]]] = {}
    for m in ranks:
        cc = m.get("collective_counts")
        r = _json_rank(m)
        if not isinstance(cc, dict) or r is None:
            continue
        for op, n in cc.items():
            if _int(n) is not None:
                counts.setdefault(str(op), {}).setdefault(int(n), []).append(r)
    for op, by_n in sorted(counts.items()):
        if len(by_n) < 2:
            continue
        p = RasProblem("MISMATCH", name, h, lines=[f"Communicator ranks have different {op} operation counts"])
        biggest = max(by_n, key=lambda n: len(by_n[n]))
        for n in sorted(by_n, reverse=True):
            p.lines.append(f"{len(by_n[n])} ranks have launched up to operation {n}")
            if n != biggest:
                p.ranks.extend(by_n[n][:MAX_ITEMS - len(p.ranks)])
        out.append(p)
    return out


def _parse_json(doc: Dict[str, Any], source: str, lineno: int) -> RasReport:
    r = RasReport(format="json", lineno=lineno, source=source, complete=True)
    v = doc.get("nccl_version")
    r.nccl_version = v if isinstance(v, str) else None
    r.cuda_runtime, r.cuda_driver = _int(doc.get("cuda_runtime_version")), _int(doc.get("cuda_driver_version"))
    comms = [c for c in (doc.get("communicators") or []) if isinstance(c, dict)]
    r.communicators = _int(doc.get("communicators_count"))
    if r.communicators is None:
        r.communicators = len(comms)
    r.no_communicators = not comms
    hosts, pids, gpus = set(), set(), set()
    for i, c in enumerate(comms):
        for m in list(c.get("ranks") or []) + list(c.get("missing_ranks") or []):
            if isinstance(m, dict):
                host, pid = m.get("host"), _int(m.get("pid"))
                if isinstance(host, str):
                    hosts.add(host)
                    if pid is not None:
                        pids.add((host, pid))
                        gpus.add((host, _int(m.get("nvml_dev"))))
        r.problems.extend(_comm_problems(i, c))
    if hosts:
        r.nodes, r.processes, r.gpus = len(hosts), len(pids), len(gpus)
    ras = doc.get("ras") if isinstance(doc.get("ras"), dict) else {}
    t = ras.get("collection_time_sec")
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        r.collection_s = float(t)
    n = _int(ras.get("timeouts_count"))
    if n:
        r.problems.append(RasProblem("TIMEOUT", count=n,
                                     lines=[f"Encountered {n} communication timeout{'s' if n != 1 else ''} "
                                            "while gathering communicator data"]))
    return r


_JSON_START = rx.compile(r"^[ \t]*\{", re.M)


def _json_reports(text: str, source: str) -> List[RasReport]:
    out: List[RasReport] = []
    dec = json.JSONDecoder()
    i = 0
    while len(out) < MAX_REPORTS:
        m = _JSON_START.search(text, i)
        if m is None:
            break
        i = m.end() - 1
        try:
            doc, end = dec.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(doc, dict) and "communicators" in doc and ("nccl_version" in doc or "ras" in doc):
            out.append(_parse_json(doc, source, text.count("\n", 0, i) + 1))
        i = end
    return out


def parse_lines(pairs: List[Tuple[int, str]], source: str) -> List[RasReport]:
    """The RAS reports in numbered lines (a log's lines from the first that may start one)."""
    reports = parse("\n".join(line for _, line in pairs), source)
    for r in reports:
        if 1 <= r.lineno <= len(pairs):
            r.lineno = pairs[r.lineno - 1][0]
    return reports


def parse(text: str, source: str = "<ras>", first_line: int = 1) -> List[RasReport]:
    """Every RAS report in ``text``, in order (text and JSON forms both)."""
    if '"communicators"' in text:
        reports = _json_reports(text, source)
        if reports:
            for r in reports:
                r.lineno += first_line - 1
            return reports
    return _parse_text(text, source, first_line)
