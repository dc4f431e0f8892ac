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
    "net-dekr18-quoted-bare-ncclsystemerror-docker-without-ipc-host": Gap(
        "wrong cause",
        "'Verdict: FAIL NCCL failed a system call (which one not logged) (low confidence)', exit 1: the bare "
        "'unhandled system error' and 'ncclSystemError: System call (socket, malloc, munmap, etc) failed.' are named a "
        "failed system call (/dev/shm, a socket or a limit) with the next steps; that it was the container's /dev/shm "
        "(fixed by --ipc=host) is not in the evidence: no NCCL WARN, no host, no sign of one node"),
    "net-nanogpt55-multinode-ddp-some-nccl-operations-failed-ib-not-usable": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: ProcessGroupNCCL's 'Some NCCL operations have "
        "failed or timed out' is read and left unexplained; that NCCL used InfiniBand the nodes could not use between "
        "them is not in the evidence"),
    "net-horovod666-nccl23-untagged-warn-connection-closed-by-remote-peer-ifname": Gap(
        "wrong cause",
        "'Verdict: FAIL A peer rank or its node went away on seyun (medium confidence)', exit 1: NCCL 2.3's "
        "'WARN Connection closed by remote peer' during bootstrap is read as a peer that died; that the bootstrap used "
        "an interface the hosts cannot reach each other on (docker0/lo) is not in the lines"),
    "gpu-raylightning24-pid-prefixed-p2p-ipc-217-per-worker-visible-devices": Gap(
        "wrong cause",
        "'Verdict: FAIL GPU peer-to-peer not supported by these GPUs on z-pc (high confidence)', exit 1: the CUDA IPC "
        "failure 217 between two local ranks behind Ray's '(pid=N)' worker prefix is read as GPUs that cannot do P2P; "
        "that each Ray worker sees only its own GPU (CUDA_VISIBLE_DEVICES per worker, every rank on device [0]) is not "
        "read"),
    "net-fastllm-docs-desync-detected-barrier-train-begin-pythonhashseed": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: Fast-LLM's 'RuntimeError: Desync detected for "
        "barrier train begin (a != b)' is read as a Python exception and left unexplained; that the processes' Python "
        "hash seeds differ is not in the evidence"),
    "node-lambdalabs-notes-dmesg-bar15-bar0-no-space-failed-to-assign": Gap(
        "right",
        "'Verdict: WARN PCIe BAR / MMIO space not assigned (high confidence)', exit 0: the boot log's 'BAR 15: no space "
        "for' / 'BAR 0: failed to assign' lines are named right, but as a warning only, so the CLI exits 0 on a node "
        "whose devices behind those BARs are not seen", exits_0=True),
    "net-kubeflowpto125-kubectl-logs-worker-host-not-found-master-not-up": Gap(
        "wrong cause",
        "'Verdict: FAIL Host names do not resolve (or resolve to loopback) (high confidence)', exit 1: TCPStore's "
        "'ValueError: host not found: Name or service not known' in the rendezvous handler is read as host names "
        "that do not resolve; that the name is the rendezvous address (MASTER_ADDR, the master pod's service) not "
        "up yet is not read"),
    "net-kubeflowpto333-host-not-found-rendezvous-master-not-ready": Gap(
        "wrong cause",
        "'Verdict: FAIL Host names do not resolve (or resolve to loopback) (high confidence)', exit 1: the same "
        "TCPStore 'host not found' in _env_rendezvous_handler is read as host names that do not resolve, not as the "
        "rendezvous address not reachable yet"),
    "net-accelerate2107-containers-bridge-network-unhandled-system-error-barrier": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the barrier's 'unhandled system error' with an "
        "empty 'Last error:' on every rank is left unexplained; that the containers ran on Docker's bridge network "
        "is not in the evidence (no NCCL INFO or WARN line, no address)"),
    "net-llamafactory3715-c10d-client-socket-connect-netmask-as-master-addr": Gap(
        "wrong cause",
        "'Verdict: FAIL Connections between nodes blocked (low confidence)', exit 1: c10d's 'The client socket has "
        "failed to connect to [::ffff:255.255.0.0]:29500 (errno: 110 - Connection timed out)' is read as a firewall; "
        "that the client socket is the rendezvous store's, aimed at an address that is no host, is not read"),
    "net-nemospeech13996-bare-warn-could-not-find-net-id-0-multinode-ib": Gap(
        "false all-clear",
        "'Verdict: no fault found; noted: Warnings to read, no failure', exit 0: the bare 'graph/topo.h:230 NCCL WARN "
        "Could not find NET with id 0' is noted as a WARN without an error result; that NCCL's topology code failed "
        "(a defect of the NCCL in NeMo 25.04+ containers, fixed in 2.27) is not read"),
}
