"""The in-repo cases (``tests/cases``) the tool does not get right yet, with what it does today.

One entry per case whose outcome is not ``right`` (a failed run) or ``ok`` (a healthy run). The case
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
    "gpu-gpuoperator-docs-device-plugin-xid48-marking-device-unhealthy": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the Kubernetes device plugin's health line "
        "'XidCriticalError: Xid=48 on Device=GPU-...; marking device as unhealthy.' is read as the last line of a Python "
        "traceback and left unexplained, not as Xid 48 (uncorrectable ECC) on that GPU"),
    "gpu-gpuoperator-docs-node-7-allocatable-gpus-device-plugin-xid79-unhealthy": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the device plugin's klog lines 'health.go:185] "
        "XidCriticalError: Xid=79 on Device=GPU-...; marking device as unhealthy.' are read as a Python exception and left "
        "unexplained, not as Xid 79 (fallen off the bus); the node's 7 allocatable GPUs are not read"),
    "gpu-gpuoperator-docs-validator-nvidia-smi-inforom-corrupted-rc14": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: 'WARNING: infoROM is corrupted at gpu "
        "0000:0B:00.0' after an nvidia-smi table is read ('infoROM corrupted on 1 GPUs') but left unexplained, not as a "
        "broken GPU to replace"),
    "gpu-containertoolkit-docs-nvml-unknown-error-container-lost-gpus": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: 'Failed to initialize NVML: Unknown Error' is "
        "read as nvidia-smi failing with no GPU listed and left unexplained, not as a container that lost its GPU "
        "devices (cgroup rewritten by a container update or systemctl daemon-reload)"),
    "node-gpuoperator-docs-operand-pods-init-driver-daemonset-not-ready": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: a 'kubectl get pods' "
        "table whose GPU Operator pods all wait in Init:0/1 while nvidia-driver-daemonset is 0/2 ready after 3 "
        "restarts is not read"),
    "node-gpuoperator-docs-operator-pod-crashloop-memory-limit-large-cluster": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: a 'kubectl get pod' row "
        "in CrashLoopBackOff (4 restarts) and the node's conditions are not read"),
    "node-askubuntu-xenial-nvidia-340-unsigned-module-taint-vga-console-healthy": Gap(
        "false alarm",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the driver's standing notice 'NVRM: Your "
        "system is not currently configured to drive a VGA console' on a boot where the driver loaded and works is "
        "read as the NVIDIA driver reporting a failure"),
}
