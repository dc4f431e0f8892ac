"""The kernel's own reports of a node in trouble: hung tasks and unresponsive NFS servers, the OOM killer,
CPU lockups and RCU stalls, oopses and panics, a process's crash in an NVIDIA library, CPU thermal throttling,
machine checks and EDAC memory errors, disks and file systems failing I/O.

Reads the shared ``kernel_log`` source (:mod:`nccldiag.areas.kernlog`); the messages are the rows of
``nccldiag/knowledge/kmsg.toml`` whose area is ``kernel``, each with its source. One finding per check:

- ``kernel.io_hang``: ``INFO: task <name>:<pid> blocked for more than N seconds`` (the hung-task detector;
  its ``hung_task_timeout_secs`` notice where the task line was not kept), ``nfs: server X not responding``
  not followed by ``nfs: server X OK``: a rank stuck in I/O stops the collective it belongs to (**warn**; **fail**
  for a task reported again and again over ten minutes and more: the row's ``fail_blocked_s``).
- ``kernel.oom``: a process the OOM killer killed, named by its pid and name (``Out of memory: Killed process N
  (name)``; a container's or a job's ``Memory cgroup out of memory: Killed process N (name)``) (**warn**).
- ``kernel.lockups``: soft lockups and RCU stalls (**warn**), hard lockups (**fail**).
- ``kernel.mce``: machine checks logged, corrected EDAC memory errors and the hardware errors the firmware reports
  through APEI (GHES) (**warn**), uncorrected EDAC memory errors (**fail**).
- ``kernel.oops``: a kernel oops (``Oops: 0000 [#1]``, ``general protection fault ...: 0000 [#1]``, ``invalid
  opcode: 0000 [#1]``, arm64's ``Internal error: ...``), ``kernel BUG at <file>:<line>!``, a bad kernel pointer
  (``BUG: kernel NULL pointer dereference``) or a panic (**fail**).
- ``kernel.process_crash``: a process killed for a bad access in an NVIDIA or CUDA library (``<comm>[<pid>]:
  segfault at ... in libcuda.so...``, a user-space general protection fault there): a rank that crashed (**warn**).
- ``kernel.thermal``: a CPU throttled for its temperature, not followed by its ``temperature/speed normal``
  (**warn**).
- ``kernel.storage_io``: file-system and block-device I/O errors of a disk (``EXT4-fs error (device X)``, XFS
  metadata I/O errors and corruption, ``Buffer I/O error on dev X``, ``I/O error, dev X, sector N``) (**fail**);
  NVMe commands that timed out (``nvme nvmeN: I/O ... QID N timeout, aborting``) (**warn**).

Each skips when the kernel log was not collected or could not be read; "none" is only said of a log that
was read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from nccldiag.areas import kernlog
from nccldiag.areas.base import NodeFacts, parsed
from nccldiag.model.findings import Finding

NAME = "kernel"
TITLE = "Kernel events"

SOURCES = (kernlog.SOURCE,)


@dataclass
class KernelFacts:
    events: List[kernlog.Event] = field(default_factory=list)
    log_read: Optional[bool] = None  # see kernlog.KernelLog.read
    log_lines: Optional[int] = None


def parse(raw) -> KernelFacts:
    log = parsed(raw, kernlog.SOURCE.name, kernlog.parse)
    return KernelFacts(kernlog.area_events(log, NAME, ""), log.read, log.total)


def judge(facts: Optional[KernelFacts], node: NodeFacts) -> List[Finding]:
    facts = facts if facts is not None else KernelFacts()
    return kernlog.judge_rows(NAME, facts.events, facts.log_read, facts.log_lines)


def summarize(facts: Optional[KernelFacts]) -> Dict[str, Optional[str]]:
    return {}
