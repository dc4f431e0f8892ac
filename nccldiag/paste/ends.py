"""How a job's processes ended, as a launcher or the kernel says it (pure): a signal (torchelastic's failure block
``exitcode : -9``, ``Signal 9 (SIGKILL) received by PID``, Open MPI, UCX, Slurm, DeepSpeed) and the OOM killer."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

# how a launcher says a process ended by a signal
_SIGNAL = re.compile(r"Signal (?P<no>\d{1,3}) \((?:SIG[A-Z]{1,10})\) received by PID \d{1,10}|"  # torchelastic
                     r"\bexitcode[ \t]{0,20}:[ \t]{0,20}-(?P<neg>\d{1,3})\b|"  # torchelastic's failure block and error line
                     r"exits with return code = -(?P<ds>\d{1,3})\b|"  # DeepSpeed's launcher
                     r"exited on signal (?P<ompi>\d{1,3}) \(|"  # Open MPI
                     r"^[ \t]{0,40}(?:\[[^\]]{0,200}\][ \t]{0,4})?Signal: [A-Za-z ]{1,40} \((?P<ompi2>\d{1,3})\)|"  # Open MPI's handler
                     r"Caught signal (?P<ucx>\d{1,3}) \(|"  # UCX's signal handler
                     r"\bterminated by signal (?P<sig>\d{1,3})\b|"
                     r"\bKilled by signal (?P<slurm>\d{1,3})\b|"  # Slurm
                     r"received signal (?P<name>SIG(?:KILL|BUS|SEGV|ABRT))\b")  # gdb
SIGNAL_NAMES = {6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV"}
OOM = re.compile(r"Out of memory: Kill(?:ed)? process|oom-kill(?:er)?:|Memory cgroup out of memory|OOMKilled|"
                 r"invoked oom-killer")
# a locked-memory limit set or read as unlimited where the processes ran: a shell's 'ulimit -l unlimited' (in a
# launcher's command), docker's '--ulimit memlock=-1', systemd's LimitMEMLOCK=infinity, limits.conf's 'memlock
# unlimited', the 'max locked memory' row of 'ulimit -a' (one literal, then a bounded window: linear in the line)
MEMLOCK_UNLIMITED = re.compile(r"ulimit -l unlimited|--ulimit[ =]memlock=-1|LimitMEMLOCK=infinity|"
                               r"memlock[ \t]{1,20}unlimited|max locked memory[^\n]{0,60}?[ \t]unlimited\b")
# a shell's 'lsmod | grep <peer-memory module>' (a command after a prompt): when the next line is the next prompt,
# grep printed nothing and the module is not loaded
LSMOD_GREP_PEERMEM = re.compile(r"(?:sudo[ \t]{1,4})?lsmod[ \t]{0,4}\|[ \t]{0,4}grep[ \t]{1,4}(?:-\w{1,4}[ \t]{1,4}){0,3}"
                                r"['\"]?(?:nv_peer\w{0,20}|nvidia[-_]peermem|peermem|nv_mem)['\"]?[ \t]{0,4}$")
# the words each line these read holds (supersets of the expressions): only the lines holding one are tried
WORDS = ("ignal", "exitcode", "return code", "Out of memory: Kill", "oom-kill", "Memory cgroup out of memory",
         "OOMKilled", "ulimit -l", "memlock", "LimitMEMLOCK", "max locked memory", "lsmod")

_ELASTIC_HOST = re.compile(r"[ \t]{0,40}host[ \t]{0,20}:[ \t]{0,20}(\S{1,253})[ \t]{0,40}$")  # torchelastic's block
_HANDLER_HOST = re.compile(r"[ \t]{0,40}\[([A-Za-z0-9][\w.-]{0,252}):[ \t]{0,4}\d{1,10}[ \t]{0,4}:")  # '[host:pid:0:tid] Caught'


@dataclass
class Line:
    """A line of the text, cited ``path:lineno``."""

    path: str
    lineno: int
    text: str
    host: Optional[str] = None  # the host the launcher names for the process, where it does

    def cite(self) -> str:
        return f"{self.path}:{self.lineno}: {self.text.strip()[:300]}"


def signal_of(text: str) -> Optional[int]:
    """The signal a launcher's line says a process ended by, None when it says none."""
    m = _SIGNAL.search(text)
    if not m:
        return None
    if m.group("name"):
        return {v: k for k, v in SIGNAL_NAMES.items()}[m.group("name")]
    for g in ("no", "neg", "ds", "ompi", "ompi2", "ucx", "sig", "slurm"):
        if m.group(g):
            return int(m.group(g))
    return None


def oom(text: str) -> bool:
    return bool(OOM.search(text))


def memlock_unlimited(text: str) -> bool:
    return bool(MEMLOCK_UNLIMITED.search(text))


def host_of(text: str, above: Callable[[int], Optional[str]]) -> Optional[str]:
    """The host of the process whose end ``text`` reports: its own prefix, or torchelastic's ``host :`` in the
    lines above (``above(k)``: the k-th line above, None past the start)."""
    m = _HANDLER_HOST.match(text)
    if m:
        return m.group(1)
    for k in range(1, 6):
        line = above(k)
        if line is None:
            break
        m = _ELASTIC_HOST.match(line)
        if m:
            return m.group(1)
    return None
