"""The in-repo cases (``tests/cases``) the tool does not get right yet, with what it does today.

One entry per case whose outcome is not ``right`` (a failed run) or ``ok`` (a healthy run), and per failed run
named ``right`` by a warning only, on which the CLI still exits 0 (``exits_0``). The case
tests mark each listed case ``xfail(strict=True)`` against the outcome it should reach, and check that
the outcome recorded here is the one the tool gives: when a change fixes a case, or moves it to another
outcome, its test fails until the entry here is removed or updated. Remove an entry when the case
becomes ``right``/``ok``; never add one to make a new failure pass.

``outcome`` is :func:`tests.realcases.score`'s word; ``said`` is what the tool answered (verdict line
and first fail/warn diagnosis), and what it could not read in the evidence.
"""
from __future__ import annotations

from typing import Dict, NamedTuple


class Gap(NamedTuple):
    outcome: str
    said: str
    exits_0: bool = False  # a failed run whose fail/warn verdict is a warning only: the CLI still exits 0


#: The outcomes that also break a hard invariant: a failed run given no fail/warn diagnosis (and
#: exit 0), or a healthy run given one.
INVARIANT_BROKEN = ("false all-clear", "false alarm")

KNOWN_GAPS: Dict[str, Gap] = {
    "gpu-bloom176b-logbook-eval-hang-no-timeout-dataloader-deadlock": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: a job log whose "
        "iteration lines stop and whose monitor then prints only 'PULSE: ... is running for 1-09:27:40' for "
        'hours (a run that did not finish) is not read as a hang'),
    "net-gitcode-blog-vllm-3x4090-socket-connect-abort-spare-server-ifname": Gap(
        "missed",
        "'FAIL Unexplained failure on jnlh102072': 'socketStartConnect: Connect to 10.37.12.78<46417> failed "
        ": Software caused connection abort' toward an address in another subnet than the node's is not read "
        'as a wrong or inconsistent bootstrap interface'),
    "gpu-gpud117-dmesg-xid45-nvidia-smi-hung-task-d-state": Gap(
        "wrong cause",
        "'Verdict: WARN Failure reported by a node or a rank: gpu application fault', exit 0: six Xid 45 lines of "
        "one GPU are read as an application's fault (other:gpu-application-fault), the hung task in state D after "
        "them as an I/O hang (io_hang, second); a GPU whose channels were torn down and whose users then hang in "
        "the kernel is not read as a GPU needing a reset", exits_0=True),
    "net-nvidia-freebsd-docs-ifconfig-mce0-no-carrier-fec-sync-loss": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: an ifconfig record of "
        "a ConnectX Ethernet port with 'status: no carrier (FEC sync loss)' (the port's link down, FreeBSD mce "
        "driver) is not read"),
    "net-rccl1423-rdma-link-down-polling-flapping-port": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure', exit 1: 'rdma link' lines of mlx5_7/1 going DOWN/POLLING, "
        "DOWN/LINK_UP, ACTIVE/LINK_UP are read as 'State Down, Physical state Polling' but left unexplained, not as "
        "a port down (or flapping)"),
    "node-gpuoperator-docs-operand-pods-init-driver-daemonset-not-ready": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the 'kubectl get pods' row of "
        "nvidia-driver-daemonset 0/2 ready after 3 restarts is read as a pod failing and left unexplained; that the "
        "GPU Operator's operand pods wait in Init:0/1 for the driver container is not read as the driver not coming up"),
    "node-gpuoperator-docs-operator-pod-crashloop-memory-limit-large-cluster": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the gpu-operator pod in CrashLoopBackOff is read "
        "as a pod failing and left unexplained (its memory limit, too low for the cluster, is not in the evidence)"),
    "net-olcf-docs-frontier-mpich-nic-policy-numa-mpi4py-after-torch": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: Cray MPICH's 'Unable to use a NIC_POLICY of "
        "'NUMA'' and 'Fatal error in PMPI_Init_thread' are read as a program's error and left unexplained; that "
        "mpi4py was imported after torch is not in the evidence"),
    "gpu-abhik-blog-journalctl-xid31-mmu-fault-pde-allocator-race": Gap(
        "right",
        "'Verdict: WARN Failure reported by a node or a rank: gpu application fault (high confidence)', exit 0: the "
        "bare Xid 31 line (an MMU fault that killed the process's CUDA context) is named an application's fault, "
        "but as a warning only, so the CLI exits 0 on a run that failed", exits_0=True),
}
