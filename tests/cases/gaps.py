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
    "node-pages53-m4-tr141-exp05-node-unresponsive-ssh-ping-ok-cuda-unknown-error": Gap(
        "wrong cause",
        "'Verdict: FAIL GPU lost or needing a reset (medium confidence)', exit 1: the ranks' 'CUDA error: unknown error' "
        "in PyTorch's NCCL watchdog is read as a lost GPU; that the whole node (jean-zay-iam15) hung is only in the "
        "transcripts' silence (ping answered, ssh stopped after 'Last login') and the logbook's words, no line a node "
        "failure prints"),
    "gpu-hpcdocs49-cscs-ngc-pytorch-ucx-signal-handler-segv-masks-broken-nvrtc": Gap(
        "missed",
        "'Verdict: FAIL A process of the job crashed (low confidence)', exit 1: the SIGSEGV is said unexplained; that the "
        "frames are UCX's own signal handler (ucs_handle_error) over a fault in libnvrtc, hiding the first error, is the "
        "centre's reading of a container's broken NVRTC, not a cause the lines name"),
    "net-hpcdocs49-cscs-openmpi-osu-iallreduce-cuda-buffers-segv-invalid-permissions": Gap(
        "missed",
        "'Verdict: FAIL A process of the job crashed (low confidence)', exit 1: the SIGSEGV ('Invalid permissions') in "
        "Open MPI's libnbc progress of MPI_Iallreduce on CUDA buffers is said unexplained; that this Open MPI's "
        "non-blocking collectives do not support GPU buffers is the centre's known issue"),
    "node-hpcdocs49-cscs-srun-switch-hpe-slingshot-plugin-libjson-c-sbatch-environment": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: srun's 'plugin_load_from_file: dlopen(...switch_hpe_"
        "slingshot.so): libjson-c.so.3: cannot open shared object file' is said unexplained; that srun ran inside the "
        "container (--environment given to sbatch) is the centre's statement"),
    "node-kb48-nvbfsw-bfb-install-rshim-boot-write-connection-timed-out": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'cat: write error: Connection timed out' writing a "
        "BFB to /dev/rshim1/boot is said unexplained (something timed out); that the BlueField halted on an unexpected boot "
        "event during the install is NVIDIA's statement, and the RShim log that would name the error is not in the text"),
    "net-node45-ucx5970-ci-port-table-mlx5-0-down-mlx5-1-init-lnksta-x8": Gap(
        "false all-clear",
        "'Verdict: nothing to judge', exit 0: the UCX CI's own port table ('PCI_addr | RDMA | Net | Numa | LnkStat | "
        "...', 'mlx5_0 | ib0 | 2 | down', 'mlx5_1 | ib1 | 2 | init') is the output of a script of that project's CI, "
        "no tool a node outputs reader knows; its columns are not read"),
    "node-hpc43-alcf-aurora-pbsnodes-failed-to-acquire-job-resources-qsub-export-all": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: PBS's 'failed to acquire job resources; job "
        "startup aborted' is said unexplained; that 'qsub -V' caused it is the centre's statement only, nothing in the "
        "line names the submission's options"),
    "node-hpc43-alcf-aurora-daos-interception-gpu-tile-compact-stoul-abort-rank-134": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the C++ 'terminate called ... std::invalid_argument' "
        "/ 'what():  stoul' abort in the centre's gpu_tile_compact.sh wrapper is said unexplained; the DAOS interception "
        "library preloaded around the wrapper's udevadm call is not in the text"),
    "net-hpc43-alcf-aurora-daos-na-ofi-mem-register-fi-mr-enable-no-space-left": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: Mercury's 'na_ofi_mem_register() fi_mr_enable() "
        "failed, rc: -28 (No space left on device), mr_reg_count: 15677' is a failure no cause names (was wrong cause: "
        "a full file system by its errno's words); that the NIC's memory registrations ran out because the I/O came "
        "from a severely fragmented buffer is the centre's statement, which no source of libfabric's cxi provider "
        "read here ties to ENOSPC"),
    "net-hpc43-alcf-aurora-daos-mercury-na-hostunreach-no-vni": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: Mercury's 'hg_core_send_input_cb() NA callback "
        "returned error (NA_HOSTUNREACH)' is read as an RPC that failed (was a false all-clear); that the job was "
        "launched with '--no-vni', or the network path is broken, is the centre's statement, not in the line"),
    "gpu-hpc43-olcf-frontier-hip-error-no-binary-for-gpu-xnack-plus-on-xnack-off": Gap(
        "wrong cause",
        "'Verdict: FAIL The program has no GPU code for this AMD GPU (hipErrorNoBinaryForGpu, hipErrorInvalidDeviceFunction) (high confidence)', exit 1: "
        "HIP's 'hipErrorNoBinaryForGpu' is read as a binary without code for the GPU, with the XNACK mode only among "
        "its alternatives; that the architecture is in the bundle for the other mode is in the command's HSA_XNACK=0 "
        "and the centre's words, not in a line the reader keeps"),
    "gpu-hpc43-olcf-frontier-amd-log-level-hip-code-object-gfx90a-xnack-minus-not-found": Gap(
        "wrong cause",
        "'Verdict: FAIL The program has no GPU code for this AMD GPU (hipErrorNoBinaryForGpu, hipErrorInvalidDeviceFunction) (high confidence)', exit 1: "
        "as the run without AMD_LOG_LEVEL; the HIP runtime's level-1 listing of each device's mode "
        "('gfx90a:sramecc+:xnack- - [Not Found]') beside the bundled 'gfx90a:xnack+' is not read, so the XNACK mode "
        "mismatch is left among the alternatives"),
    "net-fw41-pytorch23363-two-docker-containers-unhanled-system-error": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: PyTorch's one line 'NCCL error in: "
        ".../ProcessGroupNCCL.cpp:272, unhanled system error' (the reporter's spelling) is read as an NCCL failure with "
        "no cause; that the two ranks ran in Docker containers on the isolated bridge network is in the issue's prose "
        "only, and the line names no interface, address or container"),
    "node-nccltrk379-topo-file-attribute-arch-of-node-cpu-not-found-fixed-28": Gap(
        "wrong cause",
        "'Verdict: FAIL Network plugin failing or differing across nodes (medium confidence)', exit 1: 'Attribute arch of "
        "node cpu not found' with no NCCL_TOPO_FILE echoed is read as a network plugin's static topology file (its usual "
        "cause); here the file was the user's own and the defect NCCL's (topology injection before 2.8), which the "
        "pasted lines, without the NCCL version or the environment, do not tell apart"),
    "gpu-nccltrk1611-gb200-10-nodes-free-corrupted-unsorted-chunks-nccl2215": Gap(
        "wrong cause",
        "'Verdict: FAIL A process aborted: glibc found its heap corrupted (medium confidence)', exit 1: glibc's 'free(): "
        "corrupted unsorted chunks' and Open MPI's 'Signal: Aborted (6)' are named memory corruption in a library of the "
        "job (heap-corruption, with an NCCL too old for the GPU as its first alternative); that NCCL 2.21.5 predates "
        "GB200 support is in the attached log only (no NCCL version, no GPU name in the pasted text), so nothing names "
        "the version (was missed: a crash with no cause)"),
    "net-nccltrk1612-bootstrap-socketprogress-closed-before-magic-fixed-2273": Gap(
        "wrong cause",
        "'Verdict: FAIL A peer rank or its node went away (medium confidence)', exit 1: 'socketProgress: Connection closed by "
        "remote peer' during bootstrap is read as a peer that went away, its usual cause; that the peer was a foreign "
        "connection closed before NCCL's 8-byte magic (a defect of NCCL before 2.27.3) is not in the text, which has no "
        "NCCL version to tell an affected release apart"),
    "net-nccltrk426-roce-completion-error12-vendor-err-129-gid-index": Gap(
        "wrong cause",
        "'Verdict: FAIL RDMA connections time out: NICs cannot reach each other on -worker-1 (high confidence)', exit 1: "
        "completion error 12 (transport retry counter exceeded) is read as NICs that cannot reach each other "
        "(ib_qp_timeout_routing); the one pasted line does not say the link is RoCE nor which GID index was used, so "
        "a wrong GID index is not told apart from a routing fault"),
    "gpu-bloom176b-runlog-eval-redux-pyspy-dataloader-deadlock-broadcast-allreduce": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: the logbook's own summary of the py-spy dumps (a 'trace-<host>' line, then "
        "the innermost frame of each process: broadcast, all_reduce, send, wait) is no tool's output the reader "
        "knows, and the one py-spy trace pasted whole shows a single process waiting in the DataLoader's queue, "
        "which alone is no hang (a working run is caught there too)"),
    "net-jax22740-quoted-ibv-modify-qp-einval-irdma-roce-not-configured": Gap(
        "wrong cause",
        "'Verdict: WARN NCCL named the cause: roce gid config (medium confidence)', exit 1: NCCL's 'Call to ibv_modify_qp "
        "failed with error Invalid argument errno 22' beside 'NET/IB : Using [0]irdma0:1/RoCE' is read as a RoCE GID the "
        "NIC cannot use (the usual cause of that failure); the thread established only that the irdma0 device was not "
        "set up for RoCE (soft RoCE; NCCL_IB_DISABLE=1 ran), not which part of its set-up, so no line tells a GID "
        "apart from the rest"),
    "gpu-dcgmexporter148-fatal-third-party-profiling-module-unrecoverable-gsp-driver-bug": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: dcgm-exporter's level=fatal 'Failed to watch "
        "metrics: Error watching fields: The third-party Profiling module returned an unrecoverable error' is read as a "
        "Go daemon's fatal error and left unexplained; that it was the driver's GSP firmware bug is not in the evidence "
        "(the same message came from two exporters watching at once in NVIDIA/dcgm-exporter#126)"),
    "node-volcanodevices17-kubelet-unexpectedadmissionerror-failed-to-find-gpu-id": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: kubelet's UnexpectedAdmissionError 'Allocate "
        "failed due to rpc error: ... failed to find gpu id' is read as a refused pod and left unexplained; Volcano's "
        "device plugin prints 'failed to find gpu id' when the pod carries no GPU id from the scheduler (GPU sharing not "
        "enabled in the scheduler, or GPU numbers with gaps as here), so the line alone names no cause"),
    "node-gpuoperator-docs-operator-pod-crashloop-memory-limit-large-cluster": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the gpu-operator pod in CrashLoopBackOff is read "
        "as a pod failing and left unexplained (its memory limit, too low for the cluster, is not in the evidence)"),
    "net-olcf-docs-frontier-mpich-nic-policy-numa-mpi4py-after-torch": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: Cray MPICH's 'Unable to use a NIC_POLICY of "
        "'NUMA'' and 'Fatal error in PMPI_Init_thread' are read as a program's error and left unexplained; that "
        "mpi4py was imported after torch is not in the evidence"),
    "net-dekr18-quoted-bare-ncclsystemerror-docker-without-ipc-host": Gap(
        "wrong cause",
        "'Verdict: FAIL NCCL failed a system call (which one not logged) (low confidence)', exit 1: the bare "
        "'unhandled system error' and 'ncclSystemError: System call (socket, malloc, munmap, etc) failed.' are named a "
        "failed system call (/dev/shm, a socket or a limit) with the next steps; that it was the container's /dev/shm "
        "(fixed by --ipc=host) is not in the evidence: no NCCL WARN, no host, no sign of one node; the same bare error "
        "with no host is the containers' bridge network in net-accelerate2107 (socket_ifname_wrong), so no general "
        "rule tells the two apart"),
    "net-nanogpt55-multinode-ddp-some-nccl-operations-failed-ib-not-usable": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: ProcessGroupNCCL's 'Some NCCL operations have "
        "failed or timed out' is read and left unexplained; that NCCL used InfiniBand the nodes could not use between "
        "them is not in the evidence"),
    "net-gitcode-blog-nccl-2194-gdr-disabled-hca-peermem-path-not-found": Gap(
        "wrong cause",
        "'Verdict: WARN Peer-memory module not loaded: no GPUDirect RDMA (medium confidence)', exit 0: NCCL's 'GPU Direct "
        "RDMA Disabled for HCA 0' alone is read as the peer-memory module not loaded; that NCCL 2.19.4 did not find the "
        "loaded module where newer drivers expose it is not in the line (it is what NCCL prints when no module is "
        "found, and no NCCL version or lsmod is given beside it); a warning only, so the CLI exits 0",
        exits_0=True),
    "node-cloudnetops-blog-lspci-lnksta-8gts-x2-downgraded-from-16gts-x4": Gap(
        "right",
        "'Verdict: WARN PCIe link errors or a degraded link (high confidence)', exit 0: lspci's link lines without their "
        "device ('LnkSta: Speed 8GT/s (downgraded), Width x2 (downgraded)' under port 0's 'LnkCap: ... Width x4') are "
        "named a link on fewer lanes than it supports, but as a warning only (as lost lanes of a device named in full "
        "lspci output are), so the CLI exits 0", exits_0=True),
    "list-gaps76e-freebsd-hackers-ql41212-25gbe-pciconf-link-x2-of-x8-lspci-downgraded-13gbps": Gap(
        "right",
        "'Verdict: WARN PCIe link errors or a degraded link (high confidence)', exit 0: lspci's 'LnkSta: Speed 8GT/s, "
        "Width x2 (downgraded)' under 'LnkCap: ... Width x8' is named a link on fewer lanes than it supports, but as a "
        "warning only, so the CLI exits 0; the pciconf line beside it ('link x2(x8)') is not read", exits_0=True),
    "node-deltaops-medium-aer-multiple-corrected-error-syslog-flood-wrapped": Gap(
        "right",
        "'Verdict: WARN PCIe link errors or a degraded link on x99 (high confidence)', exit 0: corrected AER errors of a "
        "root port are named right, but as a warning only (corrected errors alone do not stop a node), so the CLI exits 0 "
        "on a run whose log flood filled the disk", exits_0=True),
    "node-redhat-kb-rhel6-rhel7-pcie-bus-error-corrected-replay-timer-bad-tlp": Gap(
        "right",
        "'Verdict: WARN PCIe link errors or a degraded link on hostname (high confidence)', exit 0: corrected "
        "data-link-layer AER errors (replay timer timeout, bad TLP/DLLP) are named right, but as a warning only "
        "(corrected errors alone do not stop a node)", exits_0=True),
    "node-enroot88-nvidia-container-cli-capability-change-failed-selinux": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'nvidia-container-cli: permission error: "
        "capability change failed: operation not permitted' is read as a program's error and left unexplained (that "
        "SELinux refused it is not in the lines)"),
    "gpu-k8sdp170-device-plugin-could-not-load-nvml-before-driver-deployed": Gap(
        "wrong cause",
        "'Verdict: FAIL The driver's NVML library is not where the program runs (medium confidence)', exit 1: the "
        "device plugin's 'Failed to initialize NVML: could not load NVML library.' is read as a container the runtime "
        "gave no driver libraries (the plugin's own hint: the default runtime not nvidia, as in k8sdp23), with the "
        "driver not yet deployed as the alternative; that the GPU Operator had not yet deployed the driver on the new "
        "node is not in the lines, which are the same in both (was missed: left unexplained)"),
    "gpu-dcgm198-dcgmi-nvlink-link-status-all-down-diag-passes": Gap(
        "right",
        "'Verdict: WARN NVLink errors', exit 0: every link of both GPUs Down and none Up is named nvlink_error as a "
        "warning only: PCIe cards with no NVLink bridge fitted show the same states, and the output names no GPU "
        "model, so the CLI exits 0 on a node whose bridged links are down", exits_0=True),
    "gpu-alcf-docs-polaris-jax-xla-no-kernel-image-parallel-compilation": Gap(
        "wrong cause",
        "'Verdict: FAIL', exit 1: JAX's 'XlaRuntimeError: UNKNOWN: no kernel image is available for execution on the "
        "device', a traceback's last line kept as an error line, is read by the signature 'nccl-too-old-for-gpu' (CUDA's "
        "'no kernel image' in any output: a build without kernels for the GPU); that it is a bug of JAX 0.4.26's "
        "parallel GPU compilation on that system (XLA_FLAGS=--xla_gpu_force_compilation_parallelism=1) is not in the "
        "evidence, which reads as a build without the GPU's kernels does"),
    "node-gpuoperator-docs-cdi-hostusers-false-sync-socket-no-such-process": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'Error: container create failed: read status from "
        "sync socket: No such process' is read as an error and left unexplained; that the pod runs in a user namespace "
        "(hostUsers: false), which the NVIDIA Container Toolkit's CDI hook does not support, is not in the line"),
    "net-accelerate2107-containers-bridge-network-unhandled-system-error-barrier": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the barrier's 'unhandled system error' with an "
        "empty 'Last error:' on every rank is left unexplained; that the containers ran on Docker's bridge network "
        "is not in the evidence (no NCCL INFO or WARN line, no address)"),
    "gpu-bloom176b-logbook-throughput-drop-5pct-slow-gpu-node": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: Megatron-DeepSpeed's "
        "iteration lines, whose time per iteration rises from 105 s to 111 s and TFLOPs fall from 149 to 141 with no "
        "restart and no error, are not read; that one node's slow GPU holds back the whole synchronous run is not in "
        "any line"),
    "net-opensora-lambda-lessons-nccl-operations-failed-clock-jumps-ntp": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: ProcessGroupNCCL's 'Some NCCL operations have "
        "failed or timed out' is read and left unexplained; that the nodes' clocks jumped (an NTP client slewing one "
        "node's clock backwards) is not in the evidence"),
    "net-mlengineering-nccl-net-ib-mlx5-bond-roce-included-low-bandwidth": Gap(
        "right",
        "'Verdict: WARN NCCL uses an Ethernet (RoCE) port beside its InfiniBand HCAs (medium confidence)', exit 0: the "
        "'NET/IB : Using' line listing [8]mlx5_bond_0:1/RoCE beside eight IB HCAs is named right, but as a warning: "
        "the line alone says the run was slow, not that it failed", exits_0=True),
    "net-mlengineering-gdb-core-backtrace-watchdog-rethrow-unhandled-system-error": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: gdb's backtrace of the core file is read as a "
        "process that aborted (frames 'raise ()' and 'abort ()' under 'std::rethrow_exception' in "
        "'c10d::ProcessGroupNCCL::WorkNCCL::handleNCCLGuard()' and 'workCleanupLoop()') and left unexplained; that the "
        "error PyTorch's watchdog rethrew was an OPA fabric error is not in the backtrace (was a false all-clear: "
        "'nothing to judge', exit 0)"),


    "net-horovod-docs-p2p-cu-warn-cuda-ipc-handle-unknown-error-same-hostname": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure on node1 (low confidence)', exit 1: NCCL's 'transport/p2p.cu:431 WARN failed "
        "to open CUDA IPC handle : 30 unknown error' is read as an NCCL WARN line without an error result and left "
        "unexplained; that two servers share one host name (so NCCL tried CUDA IPC between them) is not read"),
    "net-awshpctutorials-fi-info-p-efa-fi-getinfo-61-head-node-without-efa": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: libfabric's bare 'fi_getinfo: -61' answer to "
        "'fi_info -p efa' is read as no provider found (the lexicon's libfabric-no-provider shape) and left "
        "unexplained; that this instance has no EFA at all is not in the evidence (was a false all-clear: "
        "'nothing broken', exit 0)"),
    "gpu-mindspore-faq-zh-openmpi-setdevice-invalid-ordinal-same-hostname": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: MindSpore's '[ERROR] DEVICE ... SetDevice for id:7 "
        "failed, ret[101], invalid device ordinal' and 'Failed to set current device id' are read as a program's error "
        "and left unexplained; that the machines share one HOSTNAME, so the local GPU index ran past the host's GPUs, "
        "is not in the evidence (the same two lines are, in the FAQ's other question, fewer visible GPUs than processes)"),
    "gpu-mindspore-faq-zh-setdevice-invalid-ordinal-cuda-visible-devices-fewer-than-ranks": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: MindSpore's 'SetDevice for id:7 failed, ret[101], "
        "invalid device ordinal' is read as a program's error and left unexplained; that CUDA_VISIBLE_DEVICES listed fewer "
        "GPUs than processes started is not in the evidence (the same lines are, in the FAQ's other question, machines "
        "sharing one HOSTNAME)"),
    "net-mindspore-faq-zh-ibv-modify-qp-einval-connect-refused-ib-and-roce-hosts": Gap(
        "wrong cause",
        "'Verdict: WARN NCCL named the cause: roce gid config (medium confidence)', exit 1: 'Call to ibv_modify_qp failed "
        "with error Invalid argument' is named a RoCE GID the NIC cannot use toward the peer, its usual cause; that some "
        "hosts run InfiniBand and RoCE NICs at once, so NCCL must be held to one kind with NCCL_IB_HCA, is not in the "
        "evidence (no HCA list, no link layer)"),
    "net-mindspore-faq-zh-openmpi-pml-ucx-worker-address-not-found-nic-differs": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: Open MPI's 'pml_ucx.c:175 Error: Failed to receive "
        "UCX worker address: Not found (-13)' is read as a program that failed to do something and left unexplained (in "
        "Open MPI's pml_ucx.c the peer's worker address is missing from the modex: the peer published none); that the "
        "machines' interfaces differ, as the FAQ answers, is not in the evidence (was a wrong cause: 'Failed to resolve "
        "UCX endpoint for rank X' taken for a host name that does not resolve)"),
    "node-cloudts-gcp-toolkit-setup-log-errno-101-network-unreachable-no-cloud-nat": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the startup script's 'OSError: [Errno 101] Network "
        "is unreachable' and 'ERROR: Aborting setup...' are read as a Python exception and left unexplained; that the "
        "controller's VPC has no route to Google's APIs (no Cloud NAT, no public IP, no Private Google Access) is not in "
        "the evidence: the errno names no address and no network"),
    "gpu-trk-ogkm116-open-modules-missing-nvdec0-gsp-rm-init-failed": Gap(
        "wrong cause",
        "'Verdict: FAIL GPU the driver could not initialise (high confidence)', exit 1: 'RmInitAdapter: Cannot initialize "
        "GSP firmware RM' and 'RmInitAdapter failed!' are named a GPU the driver could not initialise (gpu_lost_xid) with "
        "the checks for it; that GSP-RM stopped on 'missing NVDEC0 engine' because of a defect of that release of the "
        "open kernel modules (the proprietary module loaded) is a single message of one release, told apart only by "
        "NVIDIA's triage, not a shape a row can take"),
    "node-gaps65g-acehpcledger-sinfo-r-kill-task-failed-drained-cpu-nodes": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the drain reason 'Kill task failed' is read as a "
        "failure line (the lexicon's slurm-kill-task-failed) and said unexplained; the rows were grep'd out of 'sinfo -R' "
        "without its REASON ... NODELIST header, so they are not read as sinfo's table, and the reason says only that a "
        "job's processes could not be killed, not why (a process stuck in I/O, a device, an epilog), which the page "
        "does not establish either"),
    "node-nst-deepops660-nhc-v-check-nv-gpu-count-2-returned-1": Gap(
        "wrong cause",
        "'Verdict: FAIL The node health check (NHC) failed the node (medium confidence)', exit 1: NHC's 'Health check "
        "failed:  Check check_nv_gpu_count 2 returned 1' is read as NHC failing the node on that check (was said "
        "unexplained); a GPU count below the one configured is either a lost GPU or a count configured wrong (here), "
        "which the line alone does not tell apart"),
    "node-nst-gdrcopy30-dmesg-gdrdrv-nvidia-p2p-get-pages-einval-driver-cuda-mismatch": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: gdrdrv's 'nvidia_p2p_get_pages(...) failed "
        "[ret = -22]' is a failure line (gdrdrv-pin-failed), said unexplained: the driver refuses a pin for more than "
        "one reason (a driver and CUDA that do not go together here, an unaligned buffer, a gdrdrv defect), none of "
        "them in the line"),
    "node-nst-gdrcopy305-sanity-gdr-pin-buffer-failed-560-a100-gdrdrv-fixed-in-master": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: gdrcopy_sanity's failed assertions on "
        "gdr_pin_buffer and its summary 'Failed: 2' are failure lines (gdrcopy-test-failed), said unexplained; that "
        "the failure is a gdrdrv defect fixed in gdrcopy 2.4.2 is the maintainer's word, not in the output"),
    "net-cloud42-azhc142-aznhc-h200-check-nccl-allreduce-busbw-15gbs-topo-file": Gap(
        "wrong cause",
        "'Verdict: FAIL The node health check (NHC) failed the node (medium confidence)', exit 1: Azure NHC's 'Health "
        "check failed:  check_nccl_allreduce: NCCL allreduce, BUS BW (expected >=431.0 GB/s, but measured 15.1043 "
        "GB/s)' is read as NHC failing the node on that check (was said unexplained): an all-reduce far below its bar "
        "has many causes (a GPU, NVLink, the fabric, the settings), and that the check's own NCCL_TOPO_FILE slowed it "
        "is in the issue's second block (cut in the stored copy) and the maintainers' fix, not in the line"),
    "net-cloud42-libfabric12708-k8s-efa-fi-getinfo-61-unopenable-non-efa-verbs-device": Gap(
        "wrong cause",
        "'Verdict: FAIL RDMA devices not available inside the container (medium confidence)', exit 1: 'ibv_open_device "
        "failed! errno: 2' and 'fi_getinfo: -61' in a pod are read as the pod not given its RDMA devices; the EFA "
        "devices were given, and the failure is libfabric's EFA provider giving up on all of them because another "
        "(non-EFA) verbs device is visible but unopenable, which the lines do not say (no device name, no EFA "
        "device count)"),
    "node-blog44-lambdadalton-notes-wrx80e-nvme-m2-slot-apei-corrected-aer-rxerr": Gap(
        "right",
        "'Verdict: WARN PCIe link errors or a degraded link (high confidence)', exit 0: the firmware's APEI record of a "
        "corrected PCIe error on 0000:2c:00.0 and the kernel's 'aer_status' line after it are named a PCIe link fault "
        "by a warning only, as every corrected AER event is: the link corrected what it met", exits_0=True),
    "net-fora53-nvforum-dgx-spark-gdr-disabled-both-hcas-peermem-invalid-argument-unified-memory": Gap(
        "wrong cause",
        "'Verdict: FAIL Peer-memory module built for another RDMA stack or kernel (high confidence)', exit 1: modprobe's "
        "'could not insert 'nvidia_peermem': Invalid argument' is what nvidia-peermem returns when it was built without "
        "the MLNX peer-memory symbols (kernel-open/nvidia-peermem/nvidia-peermem.c, nv_mem_client_init), so the reading "
        "of the module is right; that the DGX Spark's unified memory supports no GPUDirect RDMA at all, so no rebuild "
        "helps (NVIDIA's answer on the forum), is not in the lines, which name no GPU or platform"),
    "net-gaps60b-rhkb-blog-multinode-hang-ncclinternalerror-2181-socket-ifname-eth1": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: torch's 'NCCL error in: ...ProcessGroupNCCL.cpp:1333, "
        "internal error - please report this issue to the NCCL developers, NCCL version 2.18.1 ... ncclInternalError: "
        "Internal check failed.' is read as an NCCL internal error and said unexplained, with the advice to read NCCL's "
        "WARN before it; the post gives no WARN, and that the nodes' interfaces differed (fixed by NCCL_SOCKET_IFNAME=eth1) "
        "is only in the author's prose (single-node training worked, the machines ping each other)"),
    "gpu-gaps62a-trtllm4238-tp2-allreduce-enqueue-cuda-failure-invalid-argument-nccl-2-25-1": Gap(
        "wrong cause",
        "'Verdict: FAIL Failure reported by a node or a rank: gpu application fault (medium confidence)', exit 1: NCCL's "
        "'enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'' is read as a CUDA call the program misused; that "
        "the kernel launch failed inside NCCL 2.25.1 and NCCL 2.26.2 runs it is the reporter's finding, and the lines "
        "name no NCCL version and no change of NCCL's that fixed it"),
    "net-gaps62d-easybuild18925-openmpi-libfabric-psm3-cant-open-nic-unit-err23-eth0-mpi-init-hangs": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: PSM3's 'Failed to get eth0 (unit 0) cpu set' is "
        "said unexplained; 'PSM3 can't open nic unit: 0 (err=23)' is a message the MPI may go on after (another "
        "provider), and the run that hung in MPI_Init_thread prints no line that it failed or stopped"),

    "list-gaps63e-openmpi-users-22717-openib-reg-mem-limit-low-mlx4-mtt-parameters": Gap(
        "right",
        "'Verdict: WARN The HCA can register only part of the node's memory (Open MPI openib: 'reg mem limit low') "
        "(medium confidence)', exit 0: named by a warning only, since Open MPI's warning says the job goes on (here it "
        "completed) and releases before 1.8.3 also printed it falsely on drivers that size the MTT table themselves", exits_0=True),

    "net-gaps63e-linuxcluster-blog-openib-registerable-memory-32768-of-65476-mib-log-num-mtt": Gap(
        "right",
        "'Verdict: WARN The HCA can register only part of the node's memory (Open MPI openib: 'reg mem limit low') "
        "(medium confidence)', exit 0: named by a warning only; the pasted warning is all there is and it says the job "
        "goes on", exits_0=True),

    "gpu-gaps62e-rccltests16-test-hip-failure-hiperrorinvaliddevice-docker-without-dev-kfd": Gap(
        "missed",
        "'Verdict: FAIL' unexplained, exit 1: rccl-tests' 'Test HIP failure common.cu:1129 'hipErrorInvalidDevice'' is a "
        "failed run of the test, but HIP's invalid device is any device index the process cannot see (fewer GPUs than "
        "-g asks for, HIP_VISIBLE_DEVICES); that the container was started without /dev/kfd and /dev/dri is the "
        "reporter's fix, not in the line"),

    "net-gaps63a-mooncake-docs-erdma-out-of-mr-size-64gb-registration-limit": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: the erdma driver's 'infiniband erdma_0: ERROR: "
        "Out of mr size: 0, max 68719476736' is read as a program that says an error happened; no row reads the "
        "driver's refusal of a memory registration larger than the device's max_mr_size"),

    "net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225": Gap(
        "right",
        "'Verdict: WARN An NCCL environment variable set wrong (medium confidence)', exit 0: the NCCL_GRAPH_FILE of the "
        "pasted /etc/nccl.conf is named by a warning only, since the all-reduce it slowed completed and verified (0 "
        "wrong); that 57 GB/s is a quarter of what the NVLink bridge of an NC48ads A100 v4 carries needs the machine's "
        "expected bandwidth, which the lines do not give", exits_0=True),
    "node-gaps64f-wadadev-blog-rtx5090-server-kernel-list-del-corruption-bit-flip-defective-dimm": Gap(
        "wrong cause",
        "'Verdict: FAIL Failure reported by a node or a rank: kernel oops (high confidence)', exit 1: lib/list_debug.c's "
        "'list_del corruption. prev->next should be fffff7eac79a1808, but was fffff7eac39a1808' is read as a kernel "
        "oops; that the two pointers differ in one bit, a flip of the host memory that memtest86+ later confirmed, is the "
        "author's reading, and the line alone does not tell faulty RAM from a driver that overwrote the list"),
    "cf-gaps64f-level1techs-185531-2x-rtx3070ti-busgrind-peer-copies-3gbs-phb": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: the topology matrix (PHB between the two GPUs) is read and is no fault; "
        "CUDA BusGrind's 'P2P Bandwidth Matrix (GB/s) - Unidirectional, P2P=Enabled' with 3.32 GB/s between two "
        "GeForce RTX 3070 Ti is no output any reader knows, and a consumer card without peer access is the normal state "
        "of such a node, so the low figure alone names no fault"),

    "node-gaps64e-awsomedt-megatron-gpt3-assert-num-samples-benchmark-mode-split-eval-iters": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: Megatron-LM's 'assert num_samples > 0' in "
        "MegatronDataset, under build_train_valid_test_datasets, is the program's own assertion; that the job "
        "script's --eval-iters and --split were not changed together for benchmark mode is the README's reading of "
        "the arguments, which the traceback does not show"),

    "gpu-gaps64a-nvtrust64-h100-tdx-guest-fsp-boot-cmds-failed-vbios-without-cc": Gap(
        "wrong cause",
        "'Verdict: FAIL GPU the driver could not initialise (high confidence)', exit 1: the FSP's refused boot "
        "commands ('FSP command timed out', 'FSP boot cmds failed. RM cannot boot.') and the failed rm_init_adapter are "
        "read as a GPU the driver could not initialise (gpu_lost_xid); that the H100's VBIOS predates confidential "
        "computing is the thread's reading of 'nvidia-smi -q' finding no VBIOS version, which is not in the lines"),
    "gpu-gaps65c-start9pr3693-gb10-proprietary-module-xid169-rminitadapter-failed-open-modules": Gap(
        "wrong cause",
        "'Verdict: FAIL GPU lost or needing a reset (high confidence)', exit 1: the GB10's Xid 169 (SEC2 halt) and "
        "'RmInitAdapter failed! (0x62:0x1a:2631)' are read as a lost GPU (gpu_lost_xid); that the proprietary kernel "
        "modules were loaded on a Blackwell GPU is the author's statement, and no line names the module's flavour (its "
        "'loading NVIDIA UNIX Kernel Module' line or 'requires use of the NVIDIA open kernel modules' is not in the paste)"),
    "gpu-gaps64a-gpuoperator523-a100-kubelet-nvidia-container-cli-driver-error-timed-out": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the kubelet's RunContainerError is read as a "
        "Python-style exception line; nvidia-container-cli's 'detection error: driver error: timed out' says the "
        "driver did not answer in time, and that a faulty GPU made it so is the maintainer's reading, not in the lines"),


    "node-gaps65f-hpe-advisory-a00127211-xl675d-hgx-a100-ilo-iml-power-on-fault-gpu-board-vrd": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: iLO's 'Server Critical Fault (Service "
        "Information: Power-On Fault, GPU Board/Modules, GPU Board VRD (02h))' is read as a critical hardware fault the "
        "lines do not explain; that the GPU baseboard's FPGA firmware before v3.14 leaves the server unable to power on "
        "is HPE's advisory, not in the line, which names the GPU board's voltage regulator"),
    "cf-gaps65e-ompi4963-two-subnets-per-node-btl-tcp-connect-einprogress-hang": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the tcp BTL's 'client connect fail' help text "
        "('connect() to 10.10.10.2:1024 failed', 'Operation now in progress (115)') names no cause; that the master "
        "branch's BTL mishandled two subnets per node is the Open MPI developers' reading of the issue, not in the lines"),

    "cf-gaps65e-mpich6719-hydra-hostfile-parse-drops-last-char-ssh-could-not-resolve-localhos": Gap(
        "wrong cause",
        "'Verdict: FAIL Host names do not resolve (or resolve to loopback) (high confidence)', exit 1: ssh's 'Could not "
        "resolve hostname localhos' is read as a name that does not resolve; that Hydra's hostfile parser cut the last "
        "letter of 'localhost' (the hostfile line above it) is the maintainer's reading of a defect, which no row reads"),
    "net-gaps65d-crusoe-support-flightrecorder-disabled-stack-trace-not-found-collective-timeout": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: PyTorch's watchdog line ('Stack trace of the "
        "failed collective not found, potentially because FlightRecorder is disabled') says a collective failed or "
        "timed out, not which nor why; that it was a collective timeout is the vendor's account, and the watchdog's "
        "timeout line that would name the collective and its ranks is not in the text"),
    "net-gaps65d-together-worklog-dsv3-512gpu-ncclremoteerror-ib-status-12-retry-exceeded-mlx5-15": Gap(
        "wrong cause",
        "'Verdict: FAIL RDMA connections time out: NICs cannot reach each other (high confidence)', exit 1: the status 12 "
        "completion (transport retry counter exceeded) on mlx5_15 is read as NICs that never reach each other (routing, "
        "a rail-only fabric); that the job had run 32 iterations over the same HCAs before, so that a link or a peer's HCA "
        "failed mid-run, is in the worklog's prose, not in the lines"),
    "net-gaps65d-together-worklog-dsv3-512gpu-bootstrap-socketpollconnect-storage-fabric-timed-out": Gap(
        "wrong cause",
        "'Verdict: FAIL Connections between nodes blocked (low confidence)', exit 1: the bootstrap's connect that timed "
        "out 35 times is read as a firewall dropping the ports; that 7.247.226.174 is another node's storage-fabric NIC, "
        "not routable between the compute nodes, is the worklog's reading of its host names, not in the lines"),
    "gpu-gaps67c-together-worklog-512gpu-illegal-memory-access-rank493-flaky-gpu-node-228": Gap(
        "wrong cause",
        "'Verdict: FAIL Failure reported by a node or a rank: gpu application fault (medium confidence)', exit 1: CUDA's "
        "'an illegal memory access was encountered' is read as the program's own fault; that the same recipe ran clean "
        "once node use3a-ss-b200-gpu-228 was excluded, so that its GPU 5 is flaky, is the worklog's account of later jobs, "
        "not in the line"),
    "node-gaps67c-together-worklog-llama70b-pyxis-mkdir-home-permission-denied": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: pyxis's 'mkdir: cannot create directory "
        "'/home/johnson': Permission denied' is read as a system call that failed, not as the container runtime unable "
        "to create the user's home on the compute node"),
    "net-gaps68a-alcf-polaris-aws-ofi-nccl-net-gdr-level-phb-allreduce-watchdog-timeout-beyond-one-node": Gap(
        "wrong cause",
        "'Verdict: FAIL Hang localised (low confidence)', exit 1: the first AllReduce's watchdog timeout on ranks 1 and 2 "
        "(SeqNum 1, 120 s) is read as a hang to localise on the named nodes; that NCCL_NET_GDR_LEVEL=PHB, set with the "
        "AWS OFI plugin on Polaris, hangs every job beyond one node is the study's finding over its table of environment "
        "setups, and the variable is in no line of the paste"),

    "net-gaps68d-crater-rdma-vllm-nccl-socketprogress-closed-sigsegv-ncclproxyserviceuds-no-ipc-lock": Gap(
        "wrong cause",
        "'Verdict: FAIL A peer rank or its node went away on -master-0 (medium confidence)', exit 1: NCCL's "
        "'socketProgress: Connection closed by remote peer' is read as this rank the victim of the worker's failure; "
        "that neither Pod had the IPC_LOCK capability, so that the memory NCCL's IB transport registers could not be "
        "locked, is the page's account of its Pod spec, in no line of the master's log (the worker's is not posted)"),
    "net-gaps68d-sirzzang-blog-eks-sg-rules-removed-tcpstore-client-socket-timed-out-29500": Gap(
        "wrong cause",
        "'Verdict: FAIL Rendezvous (MASTER_ADDR:MASTER_PORT) unreachable (high confidence)', exit 1: the c10d store's "
        "'waiting for clients. 1/2 clients joined' and the worker's connect to nccl-master:29500 that timed out are read "
        "as the rendezvous unreachable; that the nodes' security-group rules between them had been removed, so that the "
        "packets were dropped, is the post's own injected fault, not in the lines (a connect that times out is also what "
        "a wrong address or a peer not yet up gives)"),
    "net-gaps68e-rdma-shared-dev-plugin-94-missing-rdma-device-spec-issm-not-found-selector": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: the RDMA shared device plugin's 'error creating new device: \"missing RDMA "
        "device spec for device 0000:e1:00.0, RDMA device \\\"issm\\\" not found\"' is read as a warning "
        "only (the plugin checks every network device of the node before its selectors apply, so it prints the line for "
        "a NIC without RDMA on a working node too); the failure it counts beside, the resource served with no device "
        "('Warning: no Rdma Devices were found for resource ...'), is not in the one line posted"),
    "gpu-gaps69b-huozaimengli-blog-vllm-3x-rtx6000ada-nccl-init-complete-hang-iommu-acs": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: two ranks' 'NCCL INFO comm ... - Init COMPLETE' are read as a good init "
        "('OK nccl.init Init COMPLETE on 2 rank(s)'); that the paste ends there, after vLLM's 'vLLM is using "
        "nccl==2.20.5', because the job hung in its first P2P transfer on a host whose IOMMU/ACS redirects GPU peer "
        "traffic is the post's account (the hang and NCCL_P2P_DISABLE=1 letting it load), in no line of the paste"),
    "node-gaps69b-thomaskrenn-wiki-aer-data-link-relay-num-rollover-replay-timer-timeout-aspm": Gap(
        "right",
        "'Verdict: WARN PCIe link errors or a degraded link on debian (high confidence)', exit 0: the root port's "
        "corrected Data Link Layer errors (RELAY_NUM Rollover, Replay Timer Timeout, status 00001100) are named as "
        "AER events, a warning only; the fix it prints is reseating and firmware, not ASPM (pcie_aspm=off), the "
        "vendor's cause of this status repeating on servers with Intel 10/25 GbE cards",
        exits_0=True),
    "gpu-gaps70d-lumi-notes-20240423-salloc-then-rocm-smi-on-login-node-amdgpu-not-found": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'cat: /sys/module/amdgpu/initstate: No such file "
        "or directory' is read as an unexplained failed system call; that the prompt after 'salloc: Granted job "
        "allocation' is still the login node (uan01), so rocm-smi's 'Driver not initialized (amdgpu not found in "
        "modules)' means no GPU driver on that host rather than a broken one, is not read"),
    "net-gaps71a-deepspeed6875-docker-2x8-a100-ibp152s0-status-12-vendor-129-then-status-5-249": Gap(
        "partly",
        "'Verdict: FAIL RDMA connections time out: NICs cannot reach each other on 50428e4af543 (high confidence)', "
        "exit 1: the IB completions with status 12 / vendor err 129 are read as unreachable NICs (ib_qp_timeout_routing) "
        "and the case's completion error comes second, as a warning; nothing in the lines tells unreachable nodes from one "
        "failing NIC or link (the post's note that the run works with 4 GPUs per node is prose, not pasted), so a first "
        "status 12 on one HCA followed by a status 5 flush (vendor err 249) on the same HCA is named a fabric-wide "
        "reachability fault"),
    "node-gaps71c-llmd352-dp16-pod-ls-dev-shm-stale-nccl-psm-segments-crashloop": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: the pasted 'ls -alht "
        "/dev/shm' of a serving pod ('total 1.3G', sixteen psm_* segments of 101M/161M and nccl-* segments of 32M left "
        "from an earlier start) is not read as a node output; that /dev/shm is full of stale NCCL and fabric-library "
        "segments, so the next start cannot create its own and the pod crash-loops, is the maintainer's account in the "
        "issue"),
    "net-gaps71c-ray30333-train-multinode-tune-trial-failed-default-nccl-ifname-excludes-wireless": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: Ray Tune's failure table and 'ERROR tune.py:773 "
        "-- Trials did not complete: [TorchTrainer_96bfe_00000]' are read as an unexplained error line; the cause (Ray "
        "Train's default NCCL_SOCKET_IFNAME allow-list 'en,eth,bond' leaving out the nodes' wireless wl* interface) is "
        "in no line of the paste, which stops before the trial's error.txt"),
    "list-gaps71d-openmpi-users-16571-qlogic-48-cores-error-creating-qp-cannot-allocate-memory-rdmacm": Gap(
        "wrong cause",
        "'Verdict: FAIL A launcher or test tool named the cause: ib completion error (high confidence)', exit 1: the last "
        "line's 'error polling LP CQ with status RETRY EXCEEDED ERROR status number 12' (a rank of the same node whose "
        "peer had aborted) is named the cause; the openib BTL's 'qp_create_one] error creating qp errno says Cannot "
        "allocate memory' before it, the HCA out of queue-pair resources with 48 ranks per node, is in no row"),
    "list-gaps71d-openmpi-users-19878-six-c2070-two-iohs-cuipcopenmemhandle-205-failed-to-register-remote-memory": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: '[typhoon1:06098] Failed to register remote "
        "memory, rc=-1' is read as an unexplained failure; Open MPI's help text 'The call to cuIpcOpenMemHandle failed' "
        "with 'cuIpcOpenMemHandle return value:   205' (CUDA IPC refused between GPUs under two IO hubs, after the "
        "transfers to the GPUs of the same hub worked) is in no row"),
    "list-gaps71d-openmpi-users-22781-mellanox-and-qlogic-nodes-psm-mtl-unable-to-reach-each-other-btl-tcp-self": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: Open MPI's 'At least one pair of MPI processes are "
        "unable to reach each other for' is a launcher failure no row explains; that one rank's BTL verbose lines open "
        "and close self and tcp without a 'select: initializing btl component' line (its rank on the PSM MTL of a "
        "QLogic node, the other on the BTLs of a Mellanox node) is not read"),
    "gpu-gaps72a-together-worklog-512gpu-legacy-nemo-userbuffers-failed-to-get-world-size-rank": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: TransformerEngine's userbuffers error "
        "'RuntimeError: Failed to get the world_size / rank' (tensor-parallel communication overlap initialised "
        "without the MPI bootstrap it needs, here under an MPI stub) is read as an unexplained Python exception; no "
        "row knows the message"),
    "node-gaps72a-bigscience-jz-megatron-hangs-compiling-fused-kernels-stale-build-lock": Gap(
        "right",
        "'Verdict: WARN The log stops where a JIT extension build waits for its lock (a lock file left by a killed "
        "build) (medium confidence)', exit 0: the last line, Megatron's '> compiling and loading fused kernels ...', is "
        "read as the start of a JIT build that waits for its lock; a warning only (a paste may end anywhere), so the "
        "CLI exits 0",
        exits_0=True),
    "node-gaps73m-openrlhf208-multi-node-sft-stuck-using-torch-extensions-root": Gap(
        "right",
        "'Verdict: WARN The log stops where a JIT extension build waits for its lock (a lock file left by a killed "
        "build) (medium confidence)', exit 0: the last line, 'Using .cache/torch_extensions/py310_cu118 as PyTorch "
        "extensions root...', is read as where the JIT extension loader waits for its lock; a warning only (a paste may "
        "end anywhere), so the CLI exits 0",
        exits_0=True),
    "gpu-gaps73b-paddle10608-v100-parallelexecutor-unhandled-cuda-error-nccl-helper-nccl-not-installed": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the traceback is read as an unexplained Python "
        "exception; Paddle's own NCCL error line 'paddle.fluid.core.EnforceNotMet: unhandled cuda error at "
        "[.../paddle/fluid/platform/nccl_helper.h:93]' (NCCL failing when ParallelExecutor creates its communicators, "
        "here because no NCCL library was installed on the machine) is not read as an NCCL error at all"),
    "gpu-gaps73b-paddledet4139-8-gpu-oserror-nccl-error-unhandled-cuda-error-collective-helper-libnccl-installed": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: Paddle's 'OSError: (External)  Nccl error, "
        "unhandled cuda error  (at /paddle/paddle/fluid/platform/collective_helper.cc:100)' is seen as an NCCL call "
        "that returned an error but no row explains it; that an 'unhandled cuda error' at communicator creation, "
        "with no NCCL line before it, points first at the NCCL library Paddle loads (absent, or built for another "
        "CUDA) is not read"),
    "net-gaps73b-paddlefleetx1054-two-nodes-fleetrun-hang-after-init-nccl-context-socket-ifname": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: the one posted line, "
        "Paddle's glog 'nccl_context.cc:83] init nccl context nranks: 4 local rank: 0/1 gpu id: 0/1 ring id: 0/1', "
        "is not read as NCCL communicator set-up at all, so a paste that ends there (the job hung after it until "
        "NCCL_SOCKET_IFNAME was exported) is not read as a hang in NCCL init"),
    "node-gaps73b-paddledet3973-find-libnccl-2-9-9-cuda11-3-rpm-on-cuda10-1-host-unhandled-cuda-error": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: a listing of the NCCL "
        "files and packages on the host ('find / -name libnccl*': /usr/lib64/libnccl.so.2.9.9 beside unpacked "
        "cuda10.1 RPMs; 'rpm -qa | grep nccl': libnccl-2.9.9-1+cuda11.3) is not read as a node output; the "
        "installed NCCL's '+cudaXX.Y' build tag is not compared with the host's CUDA (10.1 here)"),
    "net-gaps73d-rccuchicago-polaris-libfabric-fi-log-cxi-invalid-memory-registration-mode-prov-key": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: libfabric's FI_LOG lines of the cxi provider ('cxi:core:ofi_check_mr_mode():611"
        "<info> Invalid memory registration mode', 'Expected: FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_ENDPOINT' against "
        "'Given: FI_MR_ALLOCATED, FI_MR_ENDPOINT', 'Tag size exceeds supported size', 'Unsupported protocol') are not read: "
        "libfabric's 'prov:subsys:function():line<level> message' log shape, in which a provider refuses a network plugin's "
        "fi_getinfo hints, is in no row"),
    "net-gaps73d-rccuchicago-polaris-nccl-tests-all-gather-16-ranks-stops-after-256k-cxi-rendezvous-unset": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: an all_gather_perf table of 16 ranks that stops after the 262144-byte row, with "
        "no '# Out of bounds values' or '# Avg bus bandwidth' line, is read as results without a failure; a nccl-tests "
        "sweep that ends before its size range and summary (a collective wedged at a message size, here libfabric's CXI "
        "rendezvous without HPE's FI_CXI_RDZV_* settings) is not read as a hang"),
    "gpu-gaps73e-gpud338-diagnose-scan-nvswitch-sxid-12028-egress-nonposted-priv-error": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: the NVSwitch line 'SXid (PCI:0000:84:00.0): "
        "12028, Data {...}' (behind dmesg's 'kern  :err   :' level prefix) is read as an SXid not marked fatal; SXid "
        "12028 (egress nonposted PRIV error) is fatal in NVIDIA's SXid table and the gpud output around it says "
        "'event_type: Fatal', but no row knows the SXid number"),
    "node-gaps73e-nhc111-check-hw-ib-version-mismatch-ofed-when-omnipath-adapter-removed": Gap(
        "wrong cause",
        "'Verdict: FAIL The node health check (NHC) failed the node (medium confidence)', exit 1: NHC's 'check_hw_ib:  "
        "Version mismatch between kernel OFED drivers and userspace OFED libraries.' is named only as a failed NHC "
        "check; that NHC prints this message when no InfiniBand/OPA device exists at all (no ABI version file under "
        "/sys/class/infiniband_mad), so the adapter is missing or dead, is not read"),
    "gpu-gaps73f-sirzzang-blog-ray-8x1-rtx5090-all-reduce-illegal-memory-access-cuda-failure-700": Gap(
        "wrong cause",
        "'Verdict: FAIL Failure reported by a node or a rank: gpu application fault (medium confidence)', exit 1: "
        "'CUDA error: an illegal memory access was encountered (Cuda failure 700)' is read as an application's fault; "
        "the one line names neither NCCL's build nor the GPU's architecture, so an NCCL without kernels for the GPU "
        "(sm_120 missing from NCCL 2.26.2+cuda12.2 on RTX 5090) is not among the readings or the fix"),
    "gpu-gaps73f-sirzzang-blog-ray-rtx5090-dmesg-xid13-out-of-range-xid43-nccl-2-26-without-sm120": Gap(
        "wrong cause",
        "'Verdict: WARN Failure reported by a node or a rank: gpu application fault (high confidence)', exit 1: "
        "Xid 13 'Out Of Range Address' x2 and Xid 43 of process ray::_RayTrainW are read as a job's own fault; that "
        "the faulting kernels can be NCCL's, built without code for the GPU's architecture, is not among the "
        "readings or the fix (the NCCL version and the GPU are only in the post's prose)"),
    "node-gaps73f-sirzzang-blog-eks-device-plugin-disabled-failedscheduling-insufficient-nvidia-com-gpu": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'FailedScheduling ... 0/4 nodes are "
        "available: 4 Insufficient nvidia.com/gpu.' is read (its text names the device plugin among the causes) but "
        "left unexplained; the gpu-operator DaemonSet list without nvidia-device-plugin-daemonset and 'No resources "
        "found in gpu-operator namespace.' for its Pods, which show the plugin not running, are not read"),
    "net-gaps73a-enizaksoy-lab-2x2-v100-roce-cx3-nccltests-net-ib-no-gdrdma-host-staged": Gap(
        "right",
        "'Verdict: WARN NET/IB without GPUDirect RDMA (low confidence)', exit 0: the cross-node channel 'via NET/IB/0' "
        "without /GDRDMA is named right, but as a warning only (a slower path, not a stopped job), so the CLI exits 0 "
        "on a run whose all-reduce reached half the raw RDMA bandwidth", exits_0=True),
    "list-gaps73c-linux-rdma-mthca-aarch64-6-1-null-deref-mthca-poll-cq-hca-fw-old-warning": Gap(
        "wrong cause",
        "'Verdict: FAIL Failure reported by a node or a rank: kernel oops (high confidence)', exit 1: a kernel oops "
        "of 'an unnamed device'; the aarch64 'pc : mthca_poll_cq+0x4f0/0x9a0 [ib_mthca]' line (the faulting function "
        "and its module, the arm64 counterpart of x86's 'RIP:') and the 'ib-comp-unb-wq ib_cq_poll_work [ib_core]' "
        "work queue are not read as an RDMA driver's own crash; that it is a known ib_mthca defect fixed upstream is "
        "the SUSE developer's answer"),
    "list-gaps73c-linux-rdma-5-4-21-ipoib-open-null-deref-port-pkey-list-insert-ibstat-ports-down": Gap(
        "wrong cause",
        "'Verdict: FAIL IB/RoCE port down, flapping or degraded (medium confidence)', exit 1: the pasted ibstat's "
        "port 1 'State: Down / Physical state: Polling' is taken for the cause; the kernel 'Call Trace:' of journal "
        "lines (without the 'BUG: kernel NULL pointer dereference' header, which is only in the subject) through "
        "port_pkey_list_insert and ib_security_modify_qp [ib_core] from ipoib_open [ib_ipoib] is not read as an RDMA "
        "core crash"),
    "list-gaps73c-linux-rdma-cx5-rhel-8-1-ibv-rc-pingpong-couldnt-create-cq-fixed-by-newer-kernel": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the i40iw0 port Down is no longer "
        "blamed (the pasted ibv_rc_pingpong ran on mlx5_0), but the unexplained verdict opens on that port's "
        "finding; 'Couldn't create CQ' is a line of the lexicon no cause explains, and that the RHEL 8.1 "
        "kernel's RDMA stack could not create a CQ for rdma-core 32's userspace (fixed by a newer kernel) is "
        "not read"),
    "list-gaps73c-linux-rdma-ib-write-bw-couldnt-get-device-attributes-mofed-userspace-upstream-kernel": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the mlx5_1 port Down is no longer "
        "blamed (the pasted ib_write_bw ran with -d mlx5_0), but the unexplained verdict opens on that port's "
        "finding; 'Couldn't get device attributes' and 'Unable to create QP' are lines of the lexicon no "
        "cause explains, and that Mellanox OFED's userspace does not work with an upstream kernel is not read"),
    "list-gaps73c-linux-rdma-ib-send-bw-hangs-in-reg-mr-mlx5-ib-post-send-wait-mlnx-ofed-5-7": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: the /proc/<pid>/stack listing's frames "
        "in mlx5_ib and ib_uverbs are read as a kernel stack in a module, a line no cause explains; that "
        "ib_send_bw waits for ever in mlx5_ib_post_send_wait under ib_uverbs_reg_mr, a defect of that "
        "MLNX_OFED's driver, is not named"),
    "list-gaps73c-linux-rdma-v6-8-rc1-mlx5-vf-probe-create-tis-bad-parameter-reverted-commits": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: the mlx5 firmware's refusal of CREATE_TIS "
        "(status bad parameter, syndrome 0x595b5d) is reported unexplained; that it ends in 'mlx5e_resume failed, "
        "-22' and 'probe of mlx5_core.eth.2 failed with error -22' (a new VF whose netdev never probed, a driver "
        "regression the mlx5 maintainer named) is not read"),
    "gpu-gaps74a-kernelbugzilla216373-amdgpu-aer-uncorrected-unsupreq-hdp-flush-before-remap": Gap(
        "wrong cause",
        "'Verdict: FAIL PCIe link errors or a degraded link (high confidence)', exit 1: an AER 'Uncorrected "
        "(Non-Fatal)' Transaction Layer error '[20] UnsupReq' logged against the GPU itself, whose TLP header "
        "is a 1-DW memory write into the device's own BAR, is read as a link fault; an Unsupported Request is "
        "the device refusing an access (here the GPU driver writing a register before remapping it), with no "
        "Physical or Data Link Layer error beside it"),
    "node-gaps74a-kernelbugzilla209345-tesla-k80-nouveau-unknown-chipset-0f22d0a1-gk210-not-in-nouveau": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'nouveau 0000:0d:00.0: unknown chipset "
        "(0f22d0a1)' for both GPUs is read as the GPU driver not knowing the chip and left unexplained; no cause of "
        "the catalog says that nouveau, not NVIDIA's driver, is bound to a data-centre GPU"),
    "node-gaps74a-kernelbugzilla209345-tesla-k80-tb3-nouveau-bar-one-time-init-failed-bar1-unassigned": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'nouveau ...: bar: one-time init failed, "
        "-12' followed by 'probe of 0000:08:00.0 failed with error -12' on both GPUs is reported unexplained; "
        "a GPU driver's BAR set-up failing with ENOMEM (the large BAR1 left unassigned behind a bridge window "
        "too small for it) is not read as a BAR/MMIO assignment failure"),
    "node-gaps74a-kernelbugzilla215644-mx250-aspm-enabled-aer-corrected-data-link-flood": Gap(
        "right",
        "'Verdict: WARN PCIe link errors or a degraded link (high confidence)', exit 0: the root port's corrected "
        "Data Link Layer errors ('[12] Timeout', '[ 7] BadDLLP', behind the mail's '> ' quote prefix) are named "
        "a PCIe link problem, but as a warning only, as every corrected AER event is, so the CLI exits 0; that the "
        "flood starts when ASPM is enabled on the GPU's link is the reporter's sentence, not read", exits_0=True),
    "node-gaps74b-slinkycontainers-pr2-pyxis-in-slurmd-container-nvidia-container-cli-ldcache-error": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: srun's 'task 0: Exited with exit code 1' is said "
        "unexplained; the enroot log's 'nvidia-container-cli: ldcache error: process /usr/sbin/ldconfig.' (wrapped "
        "before 'real failed with error code: 1') and '98-nvidia.sh exited with return code' (wrapped before ' 1') "
        "are not read as enroot's NVIDIA hook failing to give the container its GPUs"),
    "gpu-gaps74c-convergence-ninja-blog-wrx90e-4x-blackwell-ipmi-sel-pcie-retimer-temp-upper-noncritical": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: the IPMI System Event Log lines ('Temperature "
        "sensor #0x10 | Upper Non-critical going high') are read as a sensor past its threshold and left unexplained; "
        "that these sensors are the board's PCIe slot retimers, overheating before the daily hard lockups of a 4-GPU "
        "node, is in the author's words, not the lines"),
    "node-gaps74c-uoregon-synapticon-report-idrac-lclog-3rd-gpu-pcie-ribbon-post-boot-loops": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: the iDRAC Lifecycle "
        "log's events (a markdown table of 'racadm lclog view': 'The chassis is open while the power is off', then "
        "'System is turning on' / 'System CPU Resetting' loops for 26 minutes) are not read; a server that cannot "
        "finish POST after a GPU was added on a PCIe riser is not named"),
    "gpu-gaps74d-aicr-docs-gke-gb200-partition-gpus-init-amd64-image-exec-format-error-arm64": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'exec format error' is read only as a C "
        "library reason after a failed system call; that it is ENOEXEC of a container image built for another "
        "architecture (an amd64-only init-container image on arm64 Grace nodes) is not named"),
    "gpu-gaps74d-aicr-docs-rke2-vr200-computedomain-imex-nv-err-in-use-host-nvidia-imex-service": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: the driver status 'NV_ERR_IN_USE' on its own "
        "is read as a refused driver call and left unexplained; that the ComputeDomain's nvidia-imex cannot take the "
        "IMEX session a host nvidia-imex service holds is NVIDIA's statement, not the line's"),
    "node-gaps74d-aicr-docs-gke-a4x-pvc-pd-balanced-disk-type-cannot-be-used-by-a4x-highgpu-4g": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: GKE's 'pd-balanced disk type cannot be used by a4x-highgpu-4g machine "
        "type' (wrapped over two lines as quoted), a volume the GPU machine type cannot attach, is not read"),
    "cf-gaps76a-pytorch84803-so73656975-tensor-to-cuda1-zeros-staged-copy-right-iommu": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: a Python session's "
        "printed tensors are no output any reader knows; that 'x.to(1)' arrives on cuda:1 as zeros or garbage while "
        "'x.to('cpu').to(1)' arrives intact (a direct peer copy differing from the host-staged one, the IOMMU's "
        "silent corruption) is not read"),
    "cf-gaps76a-pytorch87363-4x-a100-pcie-tensor-to-cuda1-zeros-iommu-bios": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: the session's "
        "'a.to('cuda:1')' printing 'tensor([0., 0.], device='cuda:1')' for a source of [1., 2.], and "
        "'a.to('cpu').to('cuda:1')' printing the right values, are not read"),
    "gpu-gaps78a-bestnetllc-blog-2x-2v100-vllm-pp2-ray-accelerator-channel-attributeerror": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: the traceback's last line \"AttributeError: "
        "'_TorchTensorAcceleratorChannel' object\" (cut where the page breaks it) and Ray's ActorUnavailableError are "
        "said unexplained; that vLLM's pipeline parallelism over Ray's compiled-graph accelerator channel fails on these "
        "V100 nodes, and that tensor parallelism alone (TP=4, PP=1) avoids it, is the operators' reading, not the lines'"),
    "gpu-gaps78a-alengr-blog-sglang-tp2-2x-dgx-spark-cuda-graph-capture-hang-dmon-sm96-mem0": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: the nvidia-smi dmon "
        "block is read and shown (paste19: its kind), and no area judges it; a sampled SM 96% with memory bandwidth 0% on both GPUs says nothing broken by itself, and "
        "that SGLang's multi-node CUDA-graph capture makes no progress meanwhile (a spinning collective, the "
        "deadlock --disable-cuda-graph avoids) is in the author's words, not in the paste"),
    "net-gaps78d-gardener1832-efa-unresponsive-receiver-handshake-failed-sg-egress-self": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: libfabric's EFA 'Unresponsive receiver "
        "(reachable by EFA device but handshake failed)' (4126) is a failure line nobody explains; the provider's own "
        "help names a peer process no longer present, and that live peers failed the handshake because the security "
        "group had no egress rule to itself is the project's investigation, not a word of the line"),

    "net-gaps78f-torchx540-ray-commandactor-c10d-store-connection-failed-ports-not-exposed": Gap(
        "wrong cause",
        "'Verdict: FAIL Rendezvous (MASTER_ADDR:MASTER_PORT) unreachable (high confidence)', exit 1: the c10d "
        "backend's RendezvousConnectionError behind Ray's '(CommandActor pid=553, ip=...)' prefix is read as the "
        "rendezvous unreachable; that the Ray cluster exposed only a few ports while torchrun picked random ones, so "
        "the store's port was closed between the nodes, is the reporter's finding, not in the lines (a wrong address "
        "or a store not yet up fails the same way)"),
    "gpu-gaps78f-metaseq554-torchrun-multinode-all-reduce-internal-error-device-not-set": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: torch's 'NCCL error in: ...ProcessGroupNCCL.cpp:"
        "1269, internal error, NCCL version 2.14.3' and 'ncclInternalError: Internal check failed.' are said "
        "unexplained; the line that names the cause ('Duplicate GPU detected : rank 5 and rank 0 ...') is the one the "
        "stored copy cuts, and an internal error alone names none"),
    "node-gaps80e-charliecloud209-ch-fromhost-nvidia-cli-cuda-unknown-error-host-without-gpus": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: 'nvidia-container-cli: initialization error: cuda "
        "error: unknown error' (libnvidia-container 1.0's driver initialisation through CUDA) is said unexplained; that "
        "the host has no NVIDIA GPU, so no driver for nvidia-container-cli to initialise, is the maintainer's reading, and "
        "the line alone does not tell a host without GPUs from a driver not loaded"),
    "net-gaps80b-jax35905-tpu-multislice-registertask-deadline-exceeded-coordinator-port-firewall": Gap(
        "missed",
        "'Verdict: FAIL Unexplained failure (low confidence)', exit 1: 'DEADLINE_EXCEEDED: Deadline Exceeded' with "
        "'RPC: /tensorflow.CoordinationService/RegisterTask' is read as a failed call to the coordination service that "
        "nothing explains; a task that could not register in time may face a blocked or wrong coordinator port or other "
        "tasks that started late, and that jax 0.8.1 moved the coordinator to port 8482, which the pod's firewall rule "
        "does not open, is the reporter's finding, not a word of the lines"),
    "node-gaps80d-dradriver328-imex-startup-probe-ipv6-address-family-not-supported": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: the kubelet's 'Startup probe failed: Query Status "
        "returned error code: 14 - failed to connect to all addresses; last error: UNKNOWN: ipv6:%5B::%5D:50005: Address "
        "family not supported by protocol' is said unexplained; that the probe's nvidia-imex-ctl resolved the local IMEX "
        "daemon to the IPv6 any-address on a node without IPv6, the daemon itself being up, is the maintainers' finding "
        "(no cause reads a gRPC client's EAFNOSUPPORT toward [::] yet)"),
    "net-gaps81d-easyconfigs14801-gompi-2021a-ucx-cuda-osu-alltoall-segv-openmpi-without-cuda": Gap(
        "missed",
        "'Verdict: FAIL A process of the job crashed (low confidence)', exit 1: UCX's backtrace of a SIGSEGV in "
        "__memmove_avx_unaligned_erms under Open MPI's alltoall (ompi_datatype_sndrcv, ompi_coll_base_alltoall_intra_"
        "pairwise) is said unexplained; that this Open MPI was configured --with-cuda=no beside a CUDA-aware UCX, so its "
        "collectives memcpy from device buffers, is the build's configuration and an Open MPI developer's reading, not a "
        "line of the paste"),
    "gpu-gaps81b-llmfoundry203-2x-a100-composer-allgather-watchdog-timeout-p2p-level-nvl": Gap(
        "wrong cause",
        "'Verdict: FAIL Hang localised (low confidence)', exit 1: ProcessGroupNCCL's watchdog timeout of the first FSDP "
        "_ALLGATHER_BASE (SeqNum 2) on a two-GPU host is read as a hang on rank 0; that GPU peer traffic over PCIe did "
        "not work on the host (NCCL_P2P_LEVEL=NVL made it run) is the thread's finding, and the paste holds no NCCL "
        "line (no NCCL_DEBUG=INFO) that would show the P2P transport in use"),
    "net-gaps82b-azhpcimages51-nc24rsv3-centos-hpc78-ibstatus-sys-files-not-found-cx3pro-vf": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: ibstatus's 'Fatal error:  device '*': sys files not "
        "found (/sys/class/infiniband/*/ports)' is said unexplained (no IB device at all); that the image's Mellanox OFED "
        "(5.1 or later) no longer drives the ConnectX-3 Pro VF lspci lists is the image maintainer's statement: no line "
        "names the OFED's version, and a ConnectX-3 beside no IB device is also what old firmware or an absent driver "
        "shows"),
    "node-gaps83b-dellkb-000141221-13g-lclog-mem0702-correctable-rate-then-reset-bios-2-3": Gap(
        "missed",
        "'Verdict: WARN Unexplained failure (low confidence)', exit 1: iDRAC's 'MEM0702 Correctable memory error rate "
        "exceeded for DIMM_xx.' is read as a failure line that nothing explains (a DIMM's correctable errors, no data "
        "lost); that BIOS 2.3.x of the 13G servers reset the server after logging it is Dell's knowledge base, and the "
        "log names no BIOS version ('SYS1003 System CPU Resetting.' beside it is what every reset logs)"),
    "net-gaps83c-awsdoeks54-eks-efa-init-failed-socket-fallback-pod-identity-link-local-refused": Gap(
        "partly",
        "'Verdict: FAIL Network plugin failing or differing across nodes (high confidence)', exit 1: aws-ofi-nccl's "
        "'initialization failed' after 'No eligible providers were found' comes first (EFA did fail on that node, the "
        "first of the two chained problems the author names); the refused connects to the EKS Pod Identity link-local "
        "address 169.254.170.23 are named second, as NCCL's sockets on a link-local interface (socket_ifname_wrong), the "
        "fault the author's NCCL_SOCKET_IFNAME exclusion fixed"),
    "gpu-gaps83c-sdpo39-modal-clustered-2x8-h100-duplicate-gpu-rank9-rank1-identical-busids": Gap(
        "wrong cause",
        "'Verdict: FAIL Two ranks on one GPU (high confidence)', exit 1: NCCL's 'Duplicate GPU detected : rank 9 and rank "
        "1 both on CUDA device 5a000' is read as two ranks bound to one GPU; that the two ranks are on different Modal "
        "containers (hosts) whose identical PCI layouts give the same busId, and that NCCL took them for one host because "
        "the image lacked the OFI libraries Modal configures its clustered NCCL from, is the reporter's finding: the two "
        "lines name neither the containers nor the hosts"),
    "gpu-gaps84b-cortwave-rented-4x-rtx4090-ddp-slower-than-one-p2p-disabled-phb-sys": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: the 'nvidia-smi topo -m' matrix (PHB and SYS, no NVLink) is read and NCCL's "
        "'P2P is disabled between connected GPUs' is kept as a note; both are what a working consumer-GPU host prints "
        "(NCCL then moves the traffic through host memory), so neither is a failure line; that DDP on this rented host "
        "ran slower on two GPUs than on one is the author's timing in prose, no line a tool printed"),
}
