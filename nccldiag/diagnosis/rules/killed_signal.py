"""A process of the job ended by a signal, as the launcher reports it: torchelastic's failure block (``exitcode :
-9``, ``Signal 9 (SIGKILL) received by PID``), Open MPI's 'exited on signal 9 (Killed)', Slurm's 'Killed by signal'.
A rank killed is a failure, whatever else the log says.

- SIGKILL (9): nothing in the job sends it; the kernel's OOM killer (host memory exhausted, or the container's
  memory limit) is the usual sender, and the kernel's 'Out of memory: Killed process' line confirms it. Without
  that line the cause is unconfirmed, and said so (low confidence: any cause the log names comes first; a
  launcher also kills the other ranks once one has failed).
- SIGBUS (7): a page of a memory-mapped file could not be backed; NCCL's and PyTorch's shared memory lives in
  /dev/shm, and a container's 64 MB /dev/shm is the classic cause.
- SIGSEGV (11) / SIGABRT (6): a crash or an abort; PyTorch's NCCL watchdog aborts the process after a failed or
  timed-out collective, so the causes the log names come first.

The OOM killer's lines alone (the ``kernel.oom`` finding, or the kernel's lines in any output: the events of
category ``other:host-oom``) say the same of the process they name.

Evidence: the launcher's lines of how a process ended; the OOM killer's lines in pasted dmesg; the events of
category ``other:host-oom`` (:mod:`nccldiag.diagnosis.events`).
References: torch.distributed.elastic (ChildFailedError, 'Signal 9 (SIGKILL) received by PID'); docker run
--shm-size; Linux mm/oom_kill.c ('Out of memory: Killed process').
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "killed-by-signal"
TITLE = "A process of the job was killed by a signal"
FIX = ("Find who killed it: 'dmesg -T | grep -iE \"out of memory|oom\"' (and 'journalctl -k') on the rank's node at "
       "the time it died. For the OOM killer: give the job more host memory (fewer dataloader workers, smaller "
       "pinned-memory pools, the container's memory limit raised), or run fewer processes per node.")
CONFIRM = "dmesg -T | grep -iE 'out of memory|oom-kill|killed process'; kubectl describe pod (OOMKilled)"
FIX_BUS = ("Give the job a larger /dev/shm: docker run --shm-size=1g (or --ipc=host); Kubernetes: an emptyDir with "
           "medium: Memory on /dev/shm; check 'df -h /dev/shm' inside the container.")
FIX_CRASH = ("Read the process's own last lines (its traceback, a core dump) and the NCCL log before it: an abort after "
             "an NCCL error or a watchdog timeout has that error as its cause.")


def _ev(lines, limit: int = 3) -> List[Evidence]:
    out, seen = [], set()
    for ln in lines:
        if ln.text.strip() in seen:
            continue
        seen.add(ln.text.strip())
        out.append(Evidence("log", ln.cite(), f"{ln.path}:{ln.lineno}", ln.host))
        if len(out) >= limit:
            break
    return out


def _hosts(lines) -> List[str]:
    return sorted({ln.host for ln in lines if ln.host})


def diagnose(inp: Inputs) -> List[Diagnosis]:
    p = inp.pasted
    oom = E.clues_of(E.of(inp, "other:host-oom"))
    if p is None or not p.signals:
        return _oom_alone(oom)
    by_sig = {}
    for no, line in p.signals:
        by_sig.setdefault(no, []).append(line)
    me = sys.modules[__name__]
    out: List[Diagnosis] = []
    if 9 in by_sig:
        lines = by_sig[9]
        if p.oom or oom:
            out.append(C.make(me, "a process of the job was killed by the kernel's OOM killer (SIGKILL): the host "
                              "ran out of memory: " + (p.oom[0].text if p.oom else oom[0].text).strip()[:120],
                              [] if p.oom else oom, confidence="high",
                              why="the launcher reports signal 9 and the kernel's OOM killer reports killing a process",
                              extra=_ev(lines, 2) + _ev(p.oom, 2), nodes=_hosts(lines)))
        else:
            out.append(C.make(me, "a process of the job was killed by signal 9 (SIGKILL); cause unconfirmed: the "
                              "kernel's OOM killer (host memory) is the usual sender: " + lines[0].text.strip()[:120], (), confidence="low",
                              why="nothing in the job sends SIGKILL: the OOM killer, a memory limit or an admin did",
                              extra=_ev(lines), nodes=_hosts(lines),
                              missing=["dmesg -T | grep -iE 'out of memory|killed process' on the rank's node"]))
    if 7 in by_sig:
        out.append(C.make(me, "a process of the job died of SIGBUS: memory it mapped could not be backed; /dev/shm too "
                          "small (a container's default is 64 MB) is the usual cause: " + by_sig[7][0].text.strip()[:120], (), confidence="medium",
                          why="SIGBUS is what a process gets when a page of a mapped /dev/shm file cannot be "
                              "allocated; a container's default /dev/shm is 64 MB",
                          extra=_ev(by_sig[7]), nodes=_hosts(by_sig[7]), fix=FIX_BUS, category="shm_too_small",
                          title="A process died of SIGBUS (/dev/shm)",
                          missing=["df -h /dev/shm inside the job's container"]))
    if 9 not in by_sig:
        out += _oom_alone(oom)
    crashed = [(no, ln) for no in (11, 6) for ln in by_sig.get(no, [])]
    if crashed and not out:
        names = ", ".join(dict.fromkeys(f"signal {no} ({'SIGSEGV' if no == 11 else 'SIGABRT'})" for no, _ in crashed))
        d = C.make(me, f"a process of the job crashed: {names}; no cause recognised", (), confidence="low",
                   why="the launcher reports the process ended by a signal; an abort follows an error the process "
                       "met, a segmentation fault a defect or bad memory",
                   extra=_ev([ln for _, ln in crashed]), nodes=_hosts([ln for _, ln in crashed]), fix=FIX_CRASH, category="unexplained",
                   title=CRASH_TITLE)
        d.tier = 2
        out.append(d)
    return out


CRASH_TITLE = "A process of the job crashed"


def after_named(out: List[Diagnosis]) -> None:
    """A crash whose cause the process's own lines do not name (SIGSEGV, SIGABRT), beside a failure another cause
    names (in place): the abort is how that failure ended the process (PyTorch's NCCL watchdog aborts after a CUDA
    or NCCL error, a launcher after a rank failed), so it is said as its end, under the named cause's category,
    never as 'no cause recognised'. Where no other cause fails, the crash stays unexplained."""
    named = [d for d in out if d.severity == "fail" and d.category not in ("", "unexplained") and d.id != ID]
    if not named:
        return
    for d in out:
        if d.id == ID and d.title == CRASH_TITLE and d.category == "unexplained":
            first = named[0]
            d.summary = d.summary.replace("; no cause recognised", f", after the failure named above ({first.title})")
            d.why = (f"the launcher reports the process ended by a signal after the job failed: {first.title.lower()}"
                     "; an abort follows the error a process met")
            d.category = first.category
            d.confidence = "low"


def _oom_alone(oom: List[C.Clue]) -> List[Diagnosis]:
    """The OOM killer's lines with no launcher's report of the kill."""
    if not oom:
        return []
    return [C.make(sys.modules[__name__], "the kernel's OOM killer killed a process" + C.on(C.hosts(oom)), oom,
                   confidence="high", why="the kernel reports killing a process for want of host memory: it died "
                   "with SIGKILL, and its job with it", title="A process killed by the OOM killer")]
