"""Node outputs pasted beside an NCCL log, and how the job's processes ended (pure).

Admins paste into one text the NCCL log and what they ran on the node: ``ibstat``/``ibstatus``,
``ibv_devinfo``, ``rdma link``, ``nvidia-smi -q``, ``ulimit -a``, ``df -h /dev/shm``, and the launcher's report of how each process
ended (torchelastic's failure block: ``exitcode : -9``, ``Signal 9 (SIGKILL) received by PID``).
:func:`scan` finds those blocks by their shapes, gives each to the parser and the checks of its area
(the same functions ``nccldiag check`` runs on a node's outputs), and keeps the failing findings that
say something about the run: a port not Active or at a degraded rate, GPU memory errors (row remapping
pending or failed, uncorrectable ECC, retired pages), a small locked-memory limit, a small /dev/shm. It reads the whole text apart from the NCCL log parser, which keeps none of these lines.

A block is attributed to the host of the shell prompt just above it (``root@node1:~# ibstat``), else
to no host. Healthy outputs give no failing finding: the checks judge them exactly as on a live node.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, overload

from nccldiag.areas import gpuhealth, infiniband, limits
from nccldiag.areas.base import NodeFacts
from nccldiag.model.findings import SEVERITY, Finding, Status

# the findings of pasted outputs that speak of the run; the others (CPU governor, GID tables) are left to 'check'
KEPT = ("ib.port_state", "ib.port_rate", "limits.memlock", "limits.shm", "gpuhealth.row_remap", "gpuhealth.ecc",
        "gpuhealth.retired")
MAX_TEXT = 8 * 1024 * 1024  # a larger text is not scanned for pasted outputs (logs of that size are not pastes)

_QUOTE = re.compile(r"^(?:>\s?)+")  # a quoted paste ("> CA 'mlx5_0'")
_PROMPT = re.compile(r"^\s*(?:\[)?[\w.-]+@(?P<host>[\w.-]+)[\s:\]][^#$]{0,120}[#$]\s*(?P<cmd>\S.*)?$")
_CA = re.compile(r"^\s*CA '[^']+'\s*$")
_IBSTATUS = re.compile(r"^\s*Infiniband device '[^']+' port \d+ status:\s*$")
_HCA_ID = re.compile(r"^\s*hca_id:\s*\S+")
_KV = re.compile(r"^\s*[A-Za-z][A-Za-z0-9_ ./()-]{0,40}:\s*\S?.*$")
_PORT = re.compile(r"^\s*[Pp]ort:?\s*\d+:?\s*$")
_ULIMIT = re.compile(r"^\s*[A-Za-z][A-Za-z -]*?\s+\((?:[^()]*?,\s*)?-[a-zA-Z]\)\s+\S+\s*$")  # ulimit -a
_NVSMI = re.compile(r"^\s*={5,}\s*NVSMI LOG\s*={5,}\s*$")  # nvidia-smi -q
_SMI_GPU = re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]\s*$")
_SMI_TOP = re.compile(r"^[A-Z][A-Za-z0-9 ()/.-]{1,40}?\s+:\s")  # 'Driver Version                  : 535.1'
_RDMA_LINK = re.compile(r"^\s*(?:\d+/\d+:\s*)?link \S+/\d+\s.*\bstate\s+\S+")  # rdma link (show)
_DF_HEADER = re.compile(r"^\s*Filesystem\s+(?:Size|1K-blocks|1024-blocks)\s+Used\s+Avail")
_DF_SHM = re.compile(r"^\s*(?P<fs>\S+)\s+(?P<size>[\d.]+[KMGTP]?i?)\s+(?P<used>[\d.]+[KMGTP]?i?)\s+"
                     r"(?P<avail>[\d.]+[KMGTP]?i?)\s+(?P<pct>\d+%|-)\s+(?P<mnt>/dev/shm)\s*$")
_UNITS = {"": 1, "K": 1, "M": 1024, "G": 1024 ** 2, "T": 1024 ** 3, "P": 1024 ** 4}

# how a launcher says a process ended by a signal
_SIGNAL = re.compile(r"Signal (?P<no>\d+) \((?:SIG[A-Z]+)\) received by PID \d+|"  # torchelastic
                     r"\bexitcode\s*:\s*-(?P<neg>\d+)\b|"  # torchelastic's failure block and its error line
                     r"exits with return code = -(?P<ds>\d+)\b|"  # DeepSpeed's launcher
                     r"exited on signal (?P<ompi>\d+) \(|"  # Open MPI
                     r"^\s*(?:\[[^\]]*\]\s*)?Signal: [A-Za-z ]+ \((?P<ompi2>\d+)\)|"  # Open MPI's signal handler
                     r"Caught signal (?P<ucx>\d+) \(|"  # UCX's signal handler
                     r"\bterminated by signal (?P<sig>\d+)\b|"
                     r"\bKilled by signal (?P<slurm>\d+)\b|"  # Slurm
                     r"received signal (?P<name>SIG(?:KILL|BUS|SEGV|ABRT))\b")  # gdb
SIGNAL_NAMES = {6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV"}
_OOM = re.compile(r"Out of memory: Kill(?:ed)? process|oom-kill(?:er)?:|Memory cgroup out of memory|OOMKilled|"
                  r"invoked oom-killer")


@dataclass
class Block:
    """One pasted node output: its source name (as a bundle names it), its text, where it starts."""

    source: str
    text: str
    path: str
    lineno: int
    host: Optional[str] = None


@dataclass
class Line:
    """A line of the text, cited ``path:lineno``."""

    path: str
    lineno: int
    text: str
    host: Optional[str] = None  # the host the launcher names for the process, where it does

    def cite(self) -> str:
        return f"{self.path}:{self.lineno}: {self.text.strip()[:300]}"


@dataclass
class Pasted:
    blocks: List[Block] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)  # failing (or warning) findings of the blocks, KEPT only
    facts: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # host ("" unknown) -> area -> facts
    signals: List[Tuple[int, Line]] = field(default_factory=list)  # (signal number, line) of processes killed
    oom: List[Line] = field(default_factory=list)  # the kernel's or the runtime's OOM-kill lines

    def __bool__(self) -> bool:
        return bool(self.blocks or self.signals or self.oom)

    def merge(self, other: "Pasted") -> None:
        self.blocks += other.blocks
        self.findings += other.findings
        for host, areas in other.facts.items():
            self.facts.setdefault(host, {}).update(areas)
        self.signals += other.signals
        self.oom += other.oom


def _clean(line: str) -> str:
    return _QUOTE.sub("", line.rstrip("\r\n"))


def _bare(line: str) -> str:
    return line


# what each line a block or a process's end is told by holds (supersets of the expressions that read them), each
# an expression that starts with a word: a text is searched for each apart (an alternation of them is searched
# at a tenth of the speed), and only the lines they find are tried
_STARTS = tuple(re.compile(x, re.M) for x in (
    r"@", r"CA '", r"Infiniband device '", r"hca_id:", r"NVSMI LOG", r"GPU [0-9A-Fa-f]{4,8}:", r"link \S+/\d",
    r"-[a-zA-Z]\)", r"/dev/shm\s*$"))
_ENDS = tuple(re.compile(x) for x in (
    "ignal", "exitcode", "Killed", "return code",  # signal_of
    "Out of memory: Kill", "oom-kill", "Memory cgroup out of memory", "OOMKilled"))  # _OOM
# the line breaks of str.splitlines that a split on '\n' does not make ('\r' is one unless '\r\n')
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


class _Lines(Sequence[str]):
    """The lines of a text (``str.splitlines``), each through ``tidy`` when it is first read, and the indexes of
    the lines holding a match of an expression, found in the whole text at once: a long log is walked only
    where a block or a word may be, and only those lines are split apart and tidied."""

    def __init__(self, text: str, tidy: Callable[[str], str]) -> None:
        self.text, self.tidy = text, tidy
        # '\n' ends every line ('\r\n' too)
        self.plain = not any(c in text for c in _OTHER_BREAKS) and \
            ("\r" not in text or text.count("\r") == text.count("\r\n"))
        self.done: Dict[int, str] = {}
        self._raw: Optional[List[str]] = None

    @property
    def raw(self) -> List[str]:
        """The lines as split, split when first needed."""
        if self._raw is None:
            text = self.text
            self._raw = text.split("\n") if self.plain else text.splitlines()
            if self.plain and self._raw[-1] == "":
                self._raw.pop()  # the text's last line break, or none at all: splitlines gives no line after it
        return self._raw

    def __len__(self) -> int:
        return len(self.raw)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> List[str]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self.raw)))]
        if i < 0:
            i += len(self.raw)
        line = self.done.get(i)
        if line is None:
            line = self.raw[i]  # IndexError past the end, as a list
            if self.plain and line.endswith("\r"):
                line = line[:-1]
            line = self.done[i] = self.tidy(line)
        return line

    def candidates(self, words: Sequence["re.Pattern[str]"]) -> Iterator[int]:
        """The indexes of the lines holding a match of any of ``words``, in order, once each."""
        if not self.plain:
            yield from (i for i, line in enumerate(self.raw) if any(w.search(line) for w in words))
            return
        text = self.text
        found = sorted({m.start() for w in words for m in w.finditer(text)})
        count = text.count
        at, index, last = 0, 0, -1
        for pos in found:
            index += count("\n", at, pos)
            at = pos
            if index != last:
                last = index
                yield index


def _take(lines: Sequence[str], i: int, starts: "re.Pattern[str]", body) -> int:
    """The index after the block that starts at ``i``: lines of the block's shape (or blank lines inside it)."""
    j = i + 1
    while j < len(lines):
        line = lines[j]
        if not line.strip():
            k = j + 1  # a blank line ends the block unless the block goes on after it
            if k < len(lines) and (starts.match(lines[k]) or (lines[k][:1] in (" ", "\t") and body(lines[k]))):
                j = k
                continue
            break
        if starts.match(line) or body(line):
            j += 1
            continue
        break
    return j


def _ib_body(line: str) -> bool:
    return bool(_PORT.match(line) or _KV.match(line) or re.match(r"^\s+\S", line))


def _df_kb(text: str) -> Optional[int]:
    m = re.fullmatch(r"([\d.]+)([KMGTP]?)i?", text)
    if not m:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2)])


# words every output read here prints; a text without any of them holds none (a plain log is not walked)
MARKERS = ("CA '", "Infiniband device '", "hca_id:", "NVSMI LOG", "GPU 0", "-l)", "/dev/shm", "physical_state")


def blocks(text: str, path: str = "<text>") -> List[Block]:
    """The node outputs pasted in ``text``, in order."""
    lines = _Lines(text, _clean)
    starts = list(lines.candidates(_STARTS))
    if not starts or not any(m in text for m in MARKERS):
        return []
    out: List[Block] = []
    host: Optional[str] = None
    i = 0
    for c in starts:
        if c < i:  # inside the block read last
            continue
        i = c
        line = lines[i]
        pm = _PROMPT.match(line)
        if pm:
            host = pm.group("host")
            i += 1
            continue
        if _CA.match(line) or _IBSTATUS.match(line):
            start = _CA if _CA.match(line) else _IBSTATUS
            j = _take(lines, i, start, _ib_body)
            if j - i > 2:
                out.append(Block("ibstat", "\n".join(lines[i:j]) + "\n", path, i + 1, host))
            i = j
            continue
        if _HCA_ID.match(line):
            j = _take(lines, i, _HCA_ID, _ib_body)
            if j - i > 2:
                out.append(Block("ibv_devinfo", "\n".join(lines[i:j]) + "\n", path, i + 1, host))
            i = j
            continue
        if _NVSMI.match(line) or (_SMI_GPU.match(line) and i + 1 < len(lines) and lines[i + 1][:1] in (" ", "\t")):
            j = _take(lines, i, _SMI_GPU, lambda l: bool(l[:1] in (" ", "\t") or _SMI_TOP.match(l)))
            if j - i > 2:
                out.append(Block("nvidia_smi_full", "\n".join(lines[i:j]) + "\n", path, i + 1, host))
            i = j
            continue
        if _RDMA_LINK.match(line):
            j = i
            while j < len(lines) and _RDMA_LINK.match(lines[j]):
                j += 1
            out.append(Block("rdma_link", "\n".join(lines[i:j]) + "\n", path, i + 1, host))
            i = j
            continue
        if _ULIMIT.match(line):
            j = i
            while j < len(lines) and _ULIMIT.match(lines[j]):
                j += 1
            if j - i >= 3:  # 'ulimit -a': many limits, one a line
                out.append(Block("ulimit", "\n".join(lines[i:j]) + "\n", path, i + 1, host))
            i = max(j, i + 1)
            continue
        m = _DF_SHM.match(line)
        if m and (i > 0 and _DF_HEADER.match(lines[i - 1])):
            kb = _df_kb(m.group("size")) if "Size" in lines[i - 1] else _df_kb(m.group("size") + "K")
            if kb is not None:
                out.append(Block("shm", f"{m.group('fs')} {kb} 0 {kb} 0% /dev/shm\n", path, i + 1, host))
        i += 1
    return out


def _judge(block_list: List[Block]) -> Tuple[List[Finding], Dict[str, Dict[str, Any]]]:
    """Each host's blocks through their areas' parse and judge; the KEPT findings at warn or worse."""
    by_host: Dict[str, Dict[str, str]] = {}
    for b in block_list:
        sections = by_host.setdefault(b.host or "", {})
        sections[b.source] = sections.get(b.source, "") + b.text
    findings: List[Finding] = []
    facts: Dict[str, Dict[str, Any]] = {}
    for host, sections in by_host.items():
        node = NodeFacts(host=host or "pasted")
        for area in (infiniband, limits, gpuhealth):
            if not any(s.name in sections for s in area.SOURCES):
                continue
            try:
                node.facts[area.NAME] = area.parse(sections)
                found = area.judge(node.facts[area.NAME], node)
            except Exception:  # a paste the parser cannot read says nothing; the log's verdict stands
                continue
            for f in found:
                if f.check in KEPT and SEVERITY[f.status] >= SEVERITY[Status.WARN] and _judged_on(f, sections):
                    f.host = host or None
                    findings.append(f)
        facts[host] = dict(node.facts)
    return findings, facts


def _judged_on(f: Finding, sections: Dict[str, str]) -> bool:
    """Whether the finding judged something pasted (a /dev/shm check on a paste without df says nothing)."""
    if f.check == "limits.shm":
        return "shm" in sections
    if f.check.startswith("limits.memlock"):
        return "ulimit" in sections
    return True


def signal_of(text: str) -> Optional[int]:
    m = _SIGNAL.search(text)
    if not m:
        return None
    if m.group("name"):
        return {v: k for k, v in SIGNAL_NAMES.items()}[m.group("name")]
    for g in ("no", "neg", "ds", "ompi", "ompi2", "ucx", "sig", "slurm"):
        if m.group(g):
            return int(m.group(g))
    return None


_ELASTIC_HOST = re.compile(r"^\s*host\s*:\s*(\S+)\s*$")  # torchelastic's failure block
_HANDLER_HOST = re.compile(r"^\s*\[([A-Za-z0-9][\w.-]*):\s*\d+\s*:")  # UCX / Open MPI: '[host:pid:0:tid] Caught'


def _signal_host(lines: Sequence[str], i: int) -> Optional[str]:
    """The host of the process whose end line ``i`` reports: its own prefix, or torchelastic's 'host :' above."""
    m = _HANDLER_HOST.match(lines[i])
    if m:
        return m.group(1)
    for k in range(i - 1, max(-1, i - 6), -1):
        m = _ELASTIC_HOST.match(lines[k])
        if m:
            return m.group(1)
    return None


def scan(text: str, path: str = "<text>") -> Pasted:
    """The node outputs and process ends pasted in ``text`` (one file of the log)."""
    out = Pasted()
    if len(text) > MAX_TEXT:
        return out
    out.blocks = blocks(text, path)
    out.findings, out.facts = _judge(out.blocks)
    lines = _Lines(text, _bare)
    for i in lines.candidates(_ENDS):
        n, raw = i + 1, lines[i]
        if "ignal" in raw or "exitcode" in raw or "Killed" in raw or "return code" in raw:
            no = signal_of(raw)
            if no is not None and no > 0:
                out.signals.append((no, Line(path, n, raw, _signal_host(lines, n - 1))))
        if ("emory" in raw or "oom" in raw or "OOM" in raw) and _OOM.search(raw):
            out.oom.append(Line(path, n, raw))
    return out
