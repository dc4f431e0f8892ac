"""How a job's processes ended, as a launcher or the kernel says it (pure): a signal (torchelastic's failure block
``exitcode : -9``, ``Signal 9 (SIGKILL) received by PID``, Open MPI, UCX, Slurm, DeepSpeed) and the OOM killer."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from nccldiag import rx

# how a launcher says a process ended by a signal
_SIGNAL = rx.compile(r"Signal (?P<no>\d{1,3}) \((?:SIG[A-Z]{1,10})\) received by PID \d{1,10}|"  # torchelastic
                     r"\bexitcode[ \t]{0,20}:[ \t]{0,20}-(?P<neg>\d{1,3})\b|"  # torchelastic's failure block and error line
                     r"exits with return code = -(?P<ds>\d{1,3})\b|"  # DeepSpeed's launcher
                     r"exited on signal (?P<ompi>\d{1,3}) \(|"  # Open MPI
                     r"^[ \t]{0,40}(?:\[[^\]]{0,200}\][ \t]{0,4})?Signal: [A-Za-z ]{1,40} \((?P<ompi2>\d{1,3})\)|"  # Open MPI's handler
                     r"Caught signal (?P<ucx>\d{1,3}) \(|"  # UCX's signal handler
                     r"\bterminated by signal (?P<sig>\d{1,3})\b|"
                     r"\bKilled by signal (?P<slurm>\d{1,3})\b|"  # Slurm
                     r"received signal (?P<name>SIG(?:KILL|BUS|SEGV|ABRT))\b")  # gdb
SIGNAL_NAMES = {6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV"}
OOM = rx.compile(r"Out of memory: Kill(?:ed)? process|oom-kill(?:er)?:|Memory cgroup out of memory|OOMKilled|"
                 r"invoked oom-killer")
# a locked-memory limit set or read as unlimited where the processes ran: a shell's 'ulimit -l unlimited' (in a
# launcher's command), docker's '--ulimit memlock=-1', systemd's LimitMEMLOCK=infinity, limits.conf's 'memlock
# unlimited', the 'max locked memory' row of 'ulimit -a' (one literal, then a bounded window: linear in the line)
MEMLOCK_UNLIMITED = rx.compile(r"ulimit -l unlimited|--ulimit[ =]memlock=-1|LimitMEMLOCK=infinity|"
                               r"memlock[ \t]{1,20}unlimited|max locked memory[^\n]{0,60}?[ \t]unlimited\b")
# a shell's 'lsmod | grep <peer-memory module>' (a command after a prompt): when the next line is the next prompt,
# grep printed nothing and the module is not loaded
LSMOD_GREP_PEERMEM = rx.compile(r"(?:sudo[ \t]{1,4})?lsmod[ \t]{0,4}\|[ \t]{0,4}grep[ \t]{1,4}(?:-\w{1,4}[ \t]{1,4}){0,3}"
                                r"['\"]?(?:nv_peer\w{0,20}|nvidia[-_]peermem|peermem|nv_mem)['\"]?[ \t]{0,4}$")
# an RDMA test typed with the path MTU it asks for: rdma-core's pingpong examples ('-m, --mtu=<size>', 256 to 4096,
# libibverbs/examples/rc_pingpong.c and the others) and perftest ('-m, --mtu=<mtu>', src/perftest_parameters.c); the
# QP is moved to RTR with that path MTU whatever the port's active MTU is
_RDMA_TESTS = r"(?:ibv_(?:rc|uc|ud|srq|xsrq)_pingpong|ib_(?:write|read|send|atomic)_(?:bw|lat))"
RDMA_TEST_MTU = rx.compile(r"(?:^|[ \t;&|(/])" + _RDMA_TESTS +
                           r"\b[^\n]{0,300}?[ \t](?:-m[ \t]{0,2}|--mtu[= \t][ \t]{0,2})(?P<mtu>256|512|1024|2048|4096)\b")
# the device such a test was told to use (-d, --ib-dev): the HCA the test ran on, whatever the others' state
RDMA_TEST_DEVICE = rx.compile(r"(?:^|[ \t;&|(/\"'`])" + _RDMA_TESTS +
                              r"\b[^\n]{0,300}?[ \t](?:-d[ \t]{0,2}|--ib-dev[= \t][ \t]{0,2})(?P<dev>[A-Za-z][\w.-]{0,63})")
# the same test typed at the front of a line (behind a quote, a launcher's label or an indent the paste added, and
# a prompt's mark or sudo): its command, whichever prompt the shell showed
RDMA_TEST_START = rx.compile(r"[ \t]{0,12}(?:[#$%>][ \t]{1,4})?(?:sudo[ \t]{1,4})?" + _RDMA_TESTS + r"\b")
# a shell's command that starts a container (Apptainer/Singularity, Docker, Podman), and the options that give it
# the node's GPUs: Apptainer binds the host's driver libraries and devices only with --nv (or --nvccli); Docker and
# Podman give GPUs with --gpus, the NVIDIA runtime, or a CDI/device option naming them
CONTAINER_START = rx.compile(r"(?:^|[ \t;&|(])(?:singularity|apptainer)[ \t]{1,4}(?:exec|run|shell|test)\b|"
                             r"(?:^|[ \t;&|(])(?:docker|podman|nerdctl)[ \t]{1,4}(?:container[ \t]{1,4})?run\b")
# such a command typed on a line of its own: after a prompt ('casper$ ', 'user@host:~$ ', '# '), sudo, or a launcher
CONTAINER_COMMAND = rx.compile(r"[ \t]{0,4}(?:(?:\([\w.-]{1,40}\)[ \t])?(?:\[[^\]\n]{1,200}\]|[\w.@:~/-]{1,120})?[#$%>][ \t]{1,4})?"
                               r"(?:sudo[ \t]{1,4})?"
                               r"(?:(?:srun|mpirun|mpiexec)[ \t][^\n]{0,200}?[ \t])?"
                               r"(?P<command>(?:singularity|apptainer|docker|podman|nerdctl)[ \t][^\n]{0,2000})$")
CONTAINER_GPU_OPTION = rx.compile(r"[ \t]--nv(?:ccli)?\b|[ \t]--gpus\b|--runtime[ \t=]{1,4}nvidia\b|"
                                  r"--device[ \t=]{1,4}(?:nvidia\.com/gpu|/dev/nvidia)|NVIDIA_VISIBLE_DEVICES")
# what a program in a container without the driver's libraries or devices prints first: NVML or CUDA finding no
# usable driver, or no nvidia-smi at all
GPU_UNREACHABLE = rx.compile(r"Failed to initialize NVML|NVIDIA-SMI has failed|no CUDA-capable device is detected|"
                             r"nvidia-smi: (?:command )?not found|\bcommand not found: nvidia-smi|"
                             r"\"nvidia-smi\": executable file not found|Found no NVIDIA driver on your system")
CONTAINER_AFTER = 4  # the lines after the command searched for that failure (the next prompt ends them)

# Slurm's 'sinfo -R' (--list-reasons) typed on a line of its own: the nodes down, drained or failing, each with the
# reason Slurm or an admin gave; its header cells and the rows under them (also rendered one cell a line)
SINFO_REASONS = rx.compile(r"[ \t]{0,4}(?:(?:\([\w.-]{1,40}\)[ \t])?(?:\[[^\]\n]{1,200}\]|[\w.@:~/-]{1,120})?[#$%>]"
                           r"[ \t]{1,4})?(?:sudo[ \t]{1,4})?sinfo(?:[ \t]{1,4}\S{1,200}){0,8}?[ \t]{1,4}"
                           r"(?:-[A-Za-z]{0,6}R[A-Za-z]{0,6}|--list-reasons)\b[^\n]{0,400}$")
SINFO_HEADER = ("REASON", "USER", "TIMESTAMP", "STATE", "NODELIST")
SINFO_HEADER_LINE = rx.compile(r"[ \t]{0,40}REASON[ \t]{1,200}(?:USER[ \t]{1,200}TIMESTAMP[ \t]{1,200}(?:STATE[ \t]{1,200})?)?"
                               r"NODELIST[ \t]{0,40}$")  # the header of its table, pasted without the command
SINFO_AFTER = 400  # the lines after the command read as its output at most (the next prompt ends them)
# NCCL's configuration files: at init NCCL reads ~/.nccl.conf (or the file NCCL_CONF_FILE names) and /etc/nccl.conf,
# each line 'NAME=VALUE' set as the variable NAME, lines starting with '#' and lines without '=' skipped (NVIDIA/nccl
# src/misc/param.cc, setEnvFile and initEnvFunc). A pasted 'cat' of one is settings every run on that node read,
# whether or not it logged them ('set by environment to'); its output ends at the first line no such file holds.
NCCL_CONF_CAT = rx.compile(r"(?:^|[ \t;&|])(?:sudo[ \t]{1,4})?cat[ \t]{1,4}(?P<path>[^\s;&|<>]{0,200}nccl\.conf)[ \t]{0,4}$")
NCCL_CONF_VAR = rx.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]{0,127})=(?P<value>[^\n]{0,1023})$")
NCCL_CONF_AFTER = 200  # the lines after the command read as the file at most (a prompt, or a line no such file holds,
# ends them first)
_NODELIST = rx.compile(r"[A-Za-z0-9][\w.-]{0,200}(?:\[[\d,\-]{1,400}\][\w.-]{0,40})?(?:,[A-Za-z0-9][\w.-]{0,200}"
                       r"(?:\[[\d,\-]{1,400}\][\w.-]{0,40})?){0,200}")
_SINFO_ROW = rx.compile(r"(?P<reason>\S.{0,400}?)[ \t]{1,40}(?P<user>\S{1,64})[ \t]{1,40}"
                        r"(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown|None)"
                        r"(?:[ \t]{1,40}(?P<state>[a-z][a-z*~#!%$@^+-]{1,20}))?[ \t]{1,40}(?P<nodes>\S{1,2000})")

# a CUDA program's list of the node's GPUs, a line each, in the order of their indexes: nvbandwidth prints
# 'Device <i>: <name>' for each device cuDeviceGetCount counts, then an empty line (nvbandwidth.cpp, NVIDIA/nvbandwidth
# at 6cefdda0b5dec0b75c3df90bf5c36fc7d250acd6): a list whose first line is not followed by the second lists one GPU
FIRST_DEVICE = "Device 0: "
SECOND_DEVICE = "Device 1: "

# the words each line these read holds (supersets of the expressions): only the lines holding one are tried
WORDS = ("ignal", "exitcode", "return code", "Out of memory: Kill", "oom-kill", "Memory cgroup out of memory",
         "OOMKilled", "ulimit -l", "memlock", "LimitMEMLOCK", "max locked memory", "lsmod", "singularity",
         "apptainer", "docker", "podman", "nerdctl", "sinfo", "NODELIST", "_pingpong", "ib_write_", "ib_read_",
         "ib_send_", "ib_atomic_", "nccl.conf", "Device 0: ")

_ELASTIC_HOST = rx.compile(r"[ \t]{0,40}host[ \t]{0,20}:[ \t]{0,20}(\S{1,253})[ \t]{0,40}$")  # torchelastic's block
_HANDLER_HOST = rx.compile(r"[ \t]{0,40}\[([A-Za-z0-9][\w.-]{0,252}):[ \t]{0,4}\d{1,10}[ \t]{0,4}:")  # '[host:pid:0:tid] Caught'


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


def container_without_gpus(line: str) -> str:
    """The command typed on ``line`` when it starts a container without any option that gives it the node's GPUs,
    else ''."""
    m = CONTAINER_COMMAND.match(line)
    if not m or not CONTAINER_START.match(m.group("command")) or CONTAINER_GPU_OPTION.search(m.group("command")):
        return ""
    return m.group("command").strip()


def sinfo_reasons(lines: List[str]) -> List[Tuple[str, str]]:
    """The (reason, node list) rows of ``sinfo -R``'s output (``lines``, the command's own line excluded): its
    header ``REASON [USER TIMESTAMP] NODELIST`` on one line with rows under it, or each cell on a line of its own
    (a page that rendered the table so); [] for a header alone (no node out of service) or for another output."""
    cells = [line.strip() for line in lines if line.strip()]
    if not cells:
        return []
    head = cells[0].split()
    if len(head) > 1 and all(h in SINFO_HEADER for h in head) and head[0] == "REASON" and head[-1] == "NODELIST":
        out = []
        for row in cells[1:]:
            if len(head) == 2:
                reason, _, nodes = row.rpartition(" ")
            else:
                m = _SINFO_ROW.fullmatch(row)
                if not m:
                    return out
                reason, nodes = m.group("reason"), m.group("nodes")
            if not reason.strip() or not _NODELIST.fullmatch(nodes):
                return out
            out.append((reason.strip(), nodes))
        return out
    n = 0
    while n < len(cells) and cells[n] in SINFO_HEADER:
        n += 1
    if n < 2 or cells[0] != "REASON" or cells[n - 1] != "NODELIST":
        return []
    out = []
    for i in range(n, len(cells) - n + 1, n):
        group = cells[i:i + n]
        if not _NODELIST.fullmatch(group[-1]):
            break
        out.append((group[0], group[-1]))
    return out


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
