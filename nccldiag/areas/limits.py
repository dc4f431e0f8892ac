"""Process limits and host settings that NCCL depends on.

- Locked memory (``ulimit -l``): RDMA registers (pins) every buffer it sends
  from. With a low memlock limit ``ibv_reg_mr`` / ``ibv_create_qp`` fail and
  NCCL reports "unhandled system error". What counts is the limit a launched
  process gets: the non-interactive shell that SSH gives ``mpirun`` or
  ``torchrun`` (this collection runs in exactly such a shell), and for jobs
  started by a service (slurmd, containerd), systemd's ``DefaultLimitMEMLOCK``.
- CPU frequency governor: NCCL's proxy threads and the launch path are CPU
  bound; ``powersave``/``ondemand`` governors add latency and jitter
  (perftest prints "CPU Frequency is not max").
- ``/dev/shm``: NCCL's SHM transport and its proxy buffers live there; Docker's
  64 MiB default makes NCCL fail with "failed to extend /dev/shm/nccl-...".
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from nccldiag import rx
from nccldiag.areas.base import DUMP_HEADER, NodeFacts, Source, parse_dump, section
from nccldiag.areas.pcie import node_rdma
from nccldiag.model.findings import Finding, fail, ok, skip, warn
from nccldiag.model.sizes import size_text

NAME = "limits"
TITLE = "Limits"

GIB = 1024 ** 3
SHM_MIN = GIB

SOURCES = (
    Source(
        "ulimit",
        "printf 'memlock soft %s\\n' \"$(ulimit -S -l)\"; printf 'memlock hard %s\\n' \"$(ulimit -H -l)\"; "
        "printf 'nofile soft %s\\n' \"$(ulimit -S -n)\"; printf 'nofile hard %s\\n' \"$(ulimit -H -n)\"; "
        "command -v systemctl >/dev/null 2>&1 && systemctl show --property=DefaultLimitMEMLOCK 2>/dev/null; true",
        description="ulimit -l / -n of the non-interactive shell (what mpirun/torchrun get); systemd's DefaultLimitMEMLOCK",
    ),
    Source("proc_limits", '_dump "$R/proc/self/limits" "$R/proc/1/limits"', description="/proc/self/limits and /proc/1/limits"),
    Source(
        "limits_conf",
        '_dump "$R/etc/security/limits.conf" "$R"/etc/security/limits.d/*.conf | grep -vE "^[[:space:]]*(#|$)" | head -n 500',
        description="/etc/security/limits.conf and limits.d, without comments",
    ),
    Source(
        "cpufreq",
        'set -- "$R"/sys/devices/system/cpu/cpufreq/policy*/scaling_governor; '
        '[ -r "$1" ] || set -- "$R"/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor; '
        '[ -r "$1" ] || exit 0; d="${1%/scaling_governor}"; '
        '[ -r "$d/scaling_driver" ] && echo "driver: $(cat "$d/scaling_driver")"; '
        'cat "$@" 2>/dev/null | sort | uniq -c',
        description="cpufreq scaling driver and governors (count per governor)",
    ),
    Source(
        "shm",
        '[ -d "$R/dev/shm" ] && df -Pk "$R/dev/shm" 2>/dev/null | tail -n 1; true',
        description="size of /dev/shm (df -Pk)",
    ),
)

Limit = Union[int, str]  # bytes, or "unlimited"
UNLIMITED = "unlimited"


@dataclass
class ConfLine:
    path: str
    domain: str
    type: str  # soft, hard, -
    item: str
    value: Limit  # bytes for memlock, a count for nofile, or "unlimited"
    line: str


@dataclass
class LimitsFacts:
    memlock_soft: Optional[Limit] = None  # bytes; from ulimit -l (KiB) or /proc/self/limits
    memlock_hard: Optional[Limit] = None
    memlock_source: Optional[str] = None
    nofile_soft: Optional[Limit] = None
    nofile_hard: Optional[Limit] = None
    systemd_memlock: Optional[Limit] = None  # DefaultLimitMEMLOCK
    proc_limits: Dict[str, Dict[str, Dict[str, Limit]]] = field(default_factory=dict)  # {"self": {"memlock": {"soft":..}}}
    conf: List[ConfLine] = field(default_factory=list)
    governors: Dict[str, int] = field(default_factory=dict)
    cpufreq_driver: Optional[str] = None
    shm_bytes: Optional[int] = None
    shm_line: Optional[str] = None
    ulimit_lines: List[str] = field(default_factory=list)
    cpufreq_collected: str = "read"  # absent (not collected), empty (no cpufreq), unreadable, read
    cpufreq_first_line: Optional[str] = None


def _limit(text: str, unit: int = 1) -> Optional[Limit]:
    t = text.strip().lower()
    if t in ("unlimited", "infinity", "-1"):
        return UNLIMITED
    if t.isdigit():
        return int(t) * unit
    return None


def human(v: Optional[Limit]) -> str:
    if v is None:
        return "unknown"
    if v == UNLIMITED:
        return "unlimited"
    return size_text(v)


_PROC = {"Max locked memory": "memlock", "Max open files": "nofile"}


def _split_dump(text: str, default: str) -> Dict[str, List[str]]:
    """``{path: lines}`` of ``_dump`` output; text without headers belongs to ``default``."""
    files, _links = parse_dump(text, default)
    return {path: body.splitlines() for path, body in files.items()}


def parse_proc_limits(lines: List[str]) -> Dict[str, Dict[str, Limit]]:
    out: Dict[str, Dict[str, Limit]] = {}
    for line in lines:
        for label, key in _PROC.items():
            if line.strip().startswith(label):
                parts = line.strip()[len(label):].split()
                if len(parts) >= 2:
                    soft, hard = _limit(parts[0]), _limit(parts[1])
                    out[key] = {k: v for k, v in (("soft", soft), ("hard", hard)) if v is not None}
    return out


def parse_limits_conf(text: Optional[str]) -> List[ConfLine]:
    out: List[ConfLine] = []
    for path, lines in _split_dump(text or "", "/etc/security/limits.conf").items():
        for line in lines:
            body = line.split("#", 1)[0].strip()
            parts = body.split()
            if len(parts) != 4 or parts[2] not in ("memlock", "nofile"):
                continue
            value = _limit(parts[3], 1024 if parts[2] == "memlock" else 1)
            if value is not None:
                out.append(ConfLine(path, parts[0], parts[1], parts[2], value, body))
    return out


# `grep . /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`: "<path>:<governor>" per CPU.
_GREP_GOVERNOR = rx.compile(r"^\S*scaling_governor:\s*(\S+)$")
# bash's `ulimit -a`: "max locked memory           (kbytes, -l) 64", "open files                      (-n) 1024"
_ULIMIT_A = rx.compile(r"^\s*(?P<label>[a-z](?:[a-z ]*[a-z])?)\s+\((?:(?P<unit>[a-z]+),\s*)?-(?P<opt>[a-zA-Z])\)\s+(?P<v>\S+)\s*$")


def parse_governors(text: Optional[str]) -> Dict[str, int]:
    """Governor counts from ``sort | uniq -c`` output, ``_dump`` output, ``grep . .../scaling_governor``
    (``<path>:<governor>`` per CPU) or a plain list of names."""
    counts: Dict[str, int] = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or DUMP_HEADER.match(line) or line.startswith("driver:"):
            continue
        g = _GREP_GOVERNOR.match(line)
        if g:
            counts[g.group(1)] = counts.get(g.group(1), 0) + 1
            continue
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            name, n = parts[1], int(parts[0])
        elif len(parts) == 1 and re.fullmatch(r"[a-z][a-z0-9_-]*", parts[0]):
            name, n = parts[0], 1
        else:
            continue  # elisions ("...") and anything else
        counts[name] = counts.get(name, 0) + n
    return counts


def parse(raw) -> LimitsFacts:
    f = LimitsFacts()
    for line in (section(raw, "ulimit") or "").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in ("memlock", "nofile") and parts[1] in ("soft", "hard"):
            value = _limit(parts[2], 1024 if parts[0] == "memlock" else 1)
            setattr(f, f"{parts[0]}_{parts[1]}", value)
            f.ulimit_lines.append(line.strip())
        elif line.startswith("DefaultLimitMEMLOCK="):
            f.systemd_memlock = _limit(line.split("=", 1)[1])
            f.ulimit_lines.append(line.strip())
        else:
            m = _ULIMIT_A.match(line)
            if m and m.group("opt") in ("l", "n"):
                # `ulimit -a` prints the soft limits; -l in KiB ("kbytes")
                item = "memlock" if m.group("opt") == "l" else "nofile"
                unit = 1024 if m.group("unit") == "kbytes" or item == "memlock" else 1
                if getattr(f, f"{item}_soft") is None:
                    setattr(f, f"{item}_soft", _limit(m.group("v"), unit))
                    f.ulimit_lines.append(line.strip())
    if f.memlock_soft is not None:
        f.memlock_source = "ulimit -l"
    for path, lines in _split_dump(section(raw, "proc_limits") or "", "/proc/self/limits").items():
        who = path.split("/")[2] if path.startswith("/proc/") and path.count("/") >= 3 else path
        parsed = parse_proc_limits(lines)
        if parsed:
            f.proc_limits[who] = parsed
    own = f.proc_limits.get("self", {})
    if f.memlock_soft is None and "memlock" in own:
        f.memlock_soft = own["memlock"].get("soft")
        f.memlock_hard = own["memlock"].get("hard")
        f.memlock_source = "/proc/self/limits"
    if f.nofile_soft is None and "nofile" in own:
        f.nofile_soft, f.nofile_hard = own["nofile"].get("soft"), own["nofile"].get("hard")
    f.conf = parse_limits_conf(section(raw, "limits_conf"))
    cpu_raw = section(raw, "cpufreq")
    cpu = cpu_raw or ""
    m = re.search(r"^\s*driver:\s*(\S+)", cpu, re.M)
    f.cpufreq_driver = m.group(1) if m else None
    f.governors = parse_governors(cpu)
    if "cpufreq" not in raw:
        f.cpufreq_collected = "absent"
    elif not [l for l in cpu.splitlines() if l.strip() and not l.strip().startswith("driver:")]:
        f.cpufreq_collected = "empty"
    elif not f.governors:
        f.cpufreq_collected = "unreadable"
        f.cpufreq_first_line = next(l.strip() for l in cpu.splitlines() if l.strip())[:160]
    shm = section(raw, "shm")
    if shm:
        for line in shm.splitlines():
            parts = line.split()
            if len(parts) >= 6 and parts[1].isdigit():
                f.shm_bytes, f.shm_line = int(parts[1]) * 1024, line.strip()
    return f


def _judge_memlock(facts: LimitsFacts, rdma: Optional[bool], rdma_words: str) -> List[Finding]:
    findings: List[Finding] = []
    conf = [c for c in facts.conf if c.item == "memlock"]
    evidence = [l for l in facts.ulimit_lines if "memlock" in l.lower() or "locked memory" in l.lower()] + [
        f"{c.path}: {c.line}" for c in conf[:8]]
    conf_unlimited = any(c.value == UNLIMITED for c in conf if c.domain == "*")
    if facts.memlock_soft is None and conf_unlimited and facts.systemd_memlock is None and not facts.proc_limits:
        # limits.conf alone: it applies to PAM logins, not to what services start (slurmd's jobs, containers)
        findings.append(warn(NAME, "limits.memlock", "limits.conf sets memlock unlimited, but that applies to PAM "
                             "logins only: jobs a service starts (slurmd, containerd, docker) get the service's "
                             "LimitMEMLOCK, and the limit the jobs got was not collected", evidence=evidence,
                             actual=None, expected=UNLIMITED,
                             fix=("Check the limit where the job runs ('ulimit -l' in a job, cat /proc/$(pidof "
                                  "slurmd)/limits) and set LimitMEMLOCK=infinity in the service's unit (systemctl edit "
                                  "slurmd; then restart it); slurm.conf PropagateResourceLimits passes the submitting "
                                  "shell's limit on.")))
    elif facts.memlock_soft is None:
        findings.append(skip(NAME, "limits.memlock", "memlock limit not collected", evidence=evidence))
    elif facts.memlock_soft == UNLIMITED:
        findings.append(ok(NAME, "limits.memlock", f"memlock unlimited ({facts.memlock_source})",
                           actual=UNLIMITED, expected=UNLIMITED, evidence=evidence))
    elif rdma is False:  # looked and found no RDMA NIC: nothing on this node needs its memory pinned
        findings.append(ok(NAME, "limits.memlock", f"memlock {human(facts.memlock_soft)} ({facts.memlock_source}): "
                           "no RDMA NIC on this node, so NCCL pins no memory here (RDMA would need it unlimited)",
                           actual=facts.memlock_soft, expected=UNLIMITED, evidence=evidence))
    else:
        why = (f"RDMA ({rdma_words}) must pin NCCL's buffers: ibv_reg_mr/ibv_create_qp fail and NCCL reports "
               "'unhandled system error'" if rdma else "RDMA would need it unlimited (no RDMA NIC known here)")
        msg = (f"memlock soft limit {human(facts.memlock_soft)} (hard {human(facts.memlock_hard)}) in a non-interactive "
               f"shell ({facts.memlock_source}), expected unlimited: {why}")
        fix = ("Add '* soft memlock unlimited' and '* hard memlock unlimited' to /etc/security/limits.conf and log in "
               "again; for services (slurmd, containerd, docker) set LimitMEMLOCK=infinity in the unit "
               "(or DefaultLimitMEMLOCK=infinity in /etc/systemd/system.conf); containers need --ulimit memlock=-1.")
        if conf_unlimited:
            fix = ("limits.conf already sets memlock unlimited, but SSH sessions do not get it: check 'UsePAM yes' in "
                   "/etc/ssh/sshd_config and that /etc/pam.d/sshd includes pam_limits; restart sshd. " + fix)
        make = fail if rdma else warn
        findings.append(make(NAME, "limits.memlock", msg, actual=facts.memlock_soft, expected=UNLIMITED,
                             evidence=evidence, fix=fix))
    service = facts.systemd_memlock
    service_src = "systemd DefaultLimitMEMLOCK"
    if service is None and "memlock" in facts.proc_limits.get("1", {}):
        service = facts.proc_limits["1"]["memlock"].get("soft")
        service_src = "PID 1 (/proc/1/limits)"
    if rdma and service is not None and service != UNLIMITED:
        findings.append(warn(
            NAME, "limits.memlock_services",
            f"{service_src} memlock is {human(service)}: jobs started by a service (slurmd, containerd) get this, not limits.conf",
            actual=service, expected=UNLIMITED, evidence=[f"{service_src}: {human(service)}"],
            fix="Set LimitMEMLOCK=infinity in the service's unit (systemctl edit slurmd) or DefaultLimitMEMLOCK=infinity "
                "in /etc/systemd/system.conf, then restart the service.",
        ))
    return findings


def _judge_governor(facts: LimitsFacts) -> List[Finding]:
    if not facts.governors:
        if facts.cpufreq_collected == "absent":
            return [skip(NAME, "limits.cpu_governor", "cpufreq governors not collected")]
        if facts.cpufreq_collected == "unreadable":
            return [skip(NAME, "limits.cpu_governor", "cpufreq output collected but unreadable",
                         evidence=[facts.cpufreq_first_line or ""])]
        return [skip(NAME, "limits.cpu_governor", "no cpufreq governor (VM, or frequency managed by firmware)")]
    total = sum(facts.governors.values())
    counts = ", ".join(f"{n} {g}" for g, n in sorted(facts.governors.items(), key=lambda kv: -kv[1]))
    driver = f" ({facts.cpufreq_driver})" if facts.cpufreq_driver else ""
    other = {g: n for g, n in facts.governors.items() if g != "performance"}
    if not other:
        return [ok(NAME, "limits.cpu_governor", f"governor performance on {total} CPU policies{driver}",
                   actual=facts.governors, expected="performance")]
    return [warn(
        NAME, "limits.cpu_governor",
        f"CPU governor {counts}{driver}, expected performance: lower clocks add latency to NCCL's proxy threads and launches",
        actual=facts.governors, expected="performance", evidence=[f"scaling_governor: {counts}"],
        fix="cpupower frequency-set -g performance (persist it with a tuned profile such as "
            "'tuned-adm profile throughput-performance' or the BIOS power profile 'Maximum Performance').",
    )]


def _judge_shm(facts: LimitsFacts) -> List[Finding]:
    if facts.shm_bytes is None:
        return [skip(NAME, "limits.shm", "/dev/shm size not collected")]
    if facts.shm_bytes < SHM_MIN:
        return [warn(
            NAME, "limits.shm",
            f"/dev/shm is {human(facts.shm_bytes)}, expected at least 1 GiB: NCCL's SHM transport fails with "
            "'failed to extend /dev/shm/nccl-...' or 'unhandled system error'",
            actual=facts.shm_bytes, expected=SHM_MIN, evidence=[facts.shm_line or ""],
            fix="In Docker run with --shm-size=1g (or --ipc=host), in Kubernetes mount an emptyDir with medium: Memory "
                "on /dev/shm; on a host 'mount -o remount,size=50% /dev/shm'. Workaround: NCCL_SHM_DISABLE=1.",
        )]
    return [ok(NAME, "limits.shm", f"/dev/shm is {human(facts.shm_bytes)}", actual=facts.shm_bytes, expected=SHM_MIN)]


def judge(facts: Optional[LimitsFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "limits.memlock", "no limits collected")]
    rdma, rdma_words = node_rdma(node)
    return _judge_memlock(facts, rdma, rdma_words) + _judge_governor(facts) + _judge_shm(facts)


def summarize(facts: Optional[LimitsFacts]) -> Dict[str, Optional[str]]:
    if facts is None:
        return {}
    governor = ",".join(sorted(facts.governors)) or None
    return {
        "memlock": None if facts.memlock_soft is None else human(facts.memlock_soft),
        "nofile": None if facts.nofile_soft is None else str(facts.nofile_soft),
        "cpu_governor": governor,
    }
