"""/dev/shm not writable: NCCL (or PyTorch's shared-memory manager) may not create its segment there because of
the mode or the ownership of /dev/shm, or a read-only mount of it in a container, not because it is too small.

How it shows itself, read from the sources that print it: NCCL up to 2.8 opened its segments with shm_open and
printed ``Call to shm_open failed : <strerror>`` (src/include/shm.h, SYSCHECKVAL of src/include/checks.h) before
``Error while creating shared memory segment ...``; later releases create ``/dev/shm/nccl-XXXXXX`` with mkstemp and
print ``Error: failed to create shared memory file <path>, error <strerror> (<errno>)`` (src/os/linux.cc in
2.30), and the segment's failure with its errno. PyTorch's shared-memory allocator prints ``unable to open shared
memory object <name> in read-write mode: <strerror> (<errno>)``. The errno tells the causes apart: EACCES
'Permission denied' (13), EPERM 'Operation not permitted' (1) and EROFS 'Read-only file system' (30) are this
cause; ENOSPC 'No space left on device', a failed fallocate/extend and SIGBUS are /dev/shm too small (rule
``shm``), and where they are in the evidence this rule says nothing.

References: NVIDIA/nccl#328 (shm_open EACCES, fixed by 'chmod 777 /dev/shm'; the maintainer: NCCL passes on the
errno of shm_open); NCCL sources v2.7.8 src/include/shm.h and v2.30.7 src/os/linux.cc.
"""
from __future__ import annotations

import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.model import Diagnosis

ID = "shm-permission"
TITLE = "/dev/shm not writable"
FIX = ("Let the job write to /dev/shm: its mode must be 1777 ('chmod 1777 /dev/shm' on the host, or the tmpfs "
       "mount option mode=1777), owned by root; in a container mount /dev/shm read-write (docker --ipc=host or "
       "--shm-size, a Kubernetes emptyDir with medium: Memory; no readOnlyRootFilesystem covering /dev/shm), and "
       "check that no security profile (SELinux, AppArmor) denies it.")
WORKAROUND = "NCCL_SHM_DISABLE=1 (intra-node traffic then uses P2P or the network)"
CONFIRM = "ls -ld /dev/shm (drwxrwxrwt); findmnt /dev/shm (rw); touch /dev/shm/x && rm /dev/shm/x as the job's user"

# the shared-memory call or object, then its errno within a bounded window: one lazy window after a literal
_DENIED = (r"(?:Permission denied|Operation not permitted|Read-only file system|EACCES|EROFS|errno:? ?(?:13|30)\b|"
           r"\((?:13|30)\))")
PERMISSION = rx.compile(r"(?:shm_open|shared memory (?:file|segment|object)|/dev/shm|Call to open failed)"
                        r"[^\n]{0,300}?" + _DENIED)
READ_ONLY = rx.compile(r"Read-only file system|EROFS|errno:? ?30\b|\(30\)")
# what says /dev/shm is too small or full instead: the other cause
# the segment's failure NCCL prints after the refused call (no errno in releases before 2.12): its consequence
SEGMENT = rx.compile(r"Error while (?:creating|attaching to) shared memory segment|failed to create shared memory file")
SIZE = rx.compile(r"No space left on device|failed to extend|posix_fallocate|\bBus error\b|SIGBUS|ENOSPC|errno:? ?28\b")


def diagnose(inp) -> List[Diagnosis]:
    found = C.find(inp, PERMISSION, ("warn", "last-error", "app", "error"))
    if not found or C.find(inp, SIZE, ("warn", "last-error", "app", "error", "kernel")):
        return []
    found += [c for c in C.find(inp, SEGMENT, ("warn", "last-error")) if c not in found]
    ro = any(READ_ONLY.search(c.text) for c in found)
    return [C.make(sys.modules[__name__], f"/dev/shm is not writable{C.on(C.hosts(found))}"
                   + (" (mounted read-only)" if ro else ": permission denied"), found, confidence="high",
                   why=("the shared-memory segment could not be created: the system refused the call "
                        + ("(read-only file system)" if ro else "(EACCES: the mode or owner of /dev/shm)")
                        + ", before any size was asked, so /dev/shm is not too small"),
                   alternatives=["shm_too_small: 'No space left on device', a failed extend or SIGBUS instead"])]
