"""The launchers' and test tools' messages (nccldiag/knowledge/launchers.toml), their reader (diagnosis/toolmsg.py) and
the diagnoses they make (diagnosis/rules/tool_message.py).

Every row is held to its source both ways: its text is the text checked here (:data:`CHECKED`, the strings read in
the tools' sources at the commits the rows name), and where a source repository is at hand offline (a git directory
``<owner>+<name>/repo`` under ``$NCCLDIAG_SOURCES``, by default /work/.mirror) the text is in the cited file at the
cited commit; its pattern reads its own text printed (conversions filled) behind the launchers' prefixes and through
the log reader, and no earlier row takes it; every pattern is linear by construction; a row that claims ``seen``
reads a line of that real case; no row reads a line of the healthy inputs (../shared/fixtures/node,
../shared/fixtures/nccl-logs, the healthy cases of tests/cases and ../shared/fixtures/cases); a row that names no
failure's message is a line of the failure lexicon (a row that names no cause is said unexplained there).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nccldiag import knowledge
from nccldiag.diagnosis import Inputs, categories, diagnose
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import toolmsg
from nccldiag.diagnosis.rules import tool_message
from nccldiag.knowledge import lexicon
from nccldiag.nccl import parser as nccllog
from tests import real, realcases
from tests.unit.test_lexicon import _repeats

if sys.version_info >= (3, 11):
    from re import _parser as sre_parse
else:  # pragma: no cover
    import sre_parse

ROWS = knowledge.rows(toolmsg.TABLE)
IDS = [r["id"] for r in ROWS]
KEYS = ("id", "tool", "text", "source", "pattern", "words", "category", "severity", "confidence", "meaning", "fix")
PREFIXES = ("", "[1,3]<stderr>:", "[master:19546:0:19546] ib_mlx5_log.c:139  ", "node7: ", "0: ", "[rank3]: ",
            "2024-05-01T10:00:00 ")
SOURCES = Path(os.environ.get("NCCLDIAG_SOURCES", "/work/.mirror"))

# The texts read in the tools' sources (the row's file at the row's commit), kept here so that a row's text cannot
# change unchecked where the sources are not at hand.
CHECKED = {
    "mpirun-not-enough-slots": "There are not enough slots available in the system to satisfy the %d",
    "orte-tcp-connect-firewall": "This is usually caused by a firewall on the remote host. Please",
    "orte-lost-daemon": "ORTE has lost communication with a remote daemon.",
    "orte-daemons-not-started": "was unable to reliably start one or more daemons.",
    "mpirun-rank-exited-on-signal": "%s noticed that process rank %lu with PID %lu on node %s exited on signal %d",
    "ompi-pmix-client-init-unreachable": "OPAL ERROR: %s in file %s at line %d",
    "openib-locked-memory": "allocate some locked memory.  This typically can indicate that the",
    "openib-locked-memory-v1": "locked memory.  This typically can indicate that the memlock limits",
    "openib-retry-exceeded": "The InfiniBand retry count between two MPI processes has been",
    "openib-rnr-retry-exceeded": 'The OpenFabrics "receiver not ready" retry count on a per-peer',
    "openib-error-polling-cq": "error polling %s with status %s ",
    "openib-reg-mem-limit-low": "WARNING: It appears that your OpenFabrics subsystem is configured to only",
    "btl-tcp-connect-no-route": "connect() to %s failed: %s (%d)",
    "btl-tcp-peer-no-route": "Unable to connect to the peer %s on port %d: %s",
    "btl-tcp-connect-link-local-peer": "connect() to %s:%d failed",
    "btl-tcp-connect-failed": "WARNING: Open MPI failed to TCP connect to a peer MPI process.  This",
    "bml-unreachable": "At least one pair of MPI processes are unable to reach each other for",
    "ucx-memlock": "Please set max locked memory (ulimit -l) to 'unlimited'",
    "ucx-verbs-enomem": "ibv_create_cq(cqe=%d)",
    "ucx-reg-dmabuf-mr-refused": "%s(address=%p, length=%zu, access=0x%lx) failed: %s",
    "ucx-transport-retry-exceeded": "Transport retry count exceeded",
    "ucx-completion-error": "Remote access error",
    "ucx-ib-port-speed-width-unknown": "Invalid active_width on %s:%d: %d",
    "psm3-modify-ud-qp-failed": "Failed to modify UD QP to INIT on %s: %s",
    "psm3-cant-open-nic": "PSM3 can't open nic unit: %ld",
    "mooncake-gid-null": "GID is NULL, please check your GID index by ",
    "mooncake-no-suitable-gid": "No suitable GID found on ",
    "mooncake-port-not-active": " port not active",
    "tcpxo-rxdm-dmabuf-importer-context": "Failed to create dmabuf importer context.",
    "tcpxo-rxdm-addr-translator-init": "Memory importer: failed to initialize addr translator on NIC IP %s.",
    "tcpxo-rxdm-gpu-count-mismatch": "Number of GPUs detected in the PCI tree %d is not equal to the ",
    "tcpx-plugin-gpu-tx-reg-mr-failed": "gpu_tx_reg_mr failed %d",
    "tcpx-plugin-p2pdma-regmr-alignment": "p2pdma api won't work with only RegMr, due to alignment issue",
    "hydra-proxy-connect-firewall": "unable to connect to server %s at port %d (check for firewalls!)",
    "hydra-bad-termination": "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
    "slurm-time-limit": "*** %s ON %s CANCELLED AT %s DUE TO TIME LIMIT ***",
    "srun-node-failure": "Node failure on %s",
    "slurm-step-cancelled-node-failure": "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
    "slurm-job-state-node-fail": "NODE_FAIL",
    "slurm-job-state-boot-fail": "BOOT_FAIL",
    "slurm-job-state-out-of-memory": "OUT_OF_MEMORY",
    "slurm-job-state-timeout": "TIMEOUT",
    "slurm-oom-kill": "Some of the step tasks have been OOM Killed.",
    "srun-task-out-of-memory": "%s: %s %s: Out Of Memory",
    "srun-step-refused": "Unable to create step for job %u: %m",
    "slurm-unable-to-allocate": "Unable to allocate resources: %m",
    "slurm-job-prolog-failed": "Job prolog failed",
    "slurm-no-configuration-source": "Could not establish a configuration source",
    "slurm-job-epilog-failed": "Job epilog failed",
    "slurmd-prolog-failure-on-node": "Prolog failure on node %s",
    "slurmd-prolog-hung": "Prolog hung on node %s",
    "slurmd-prolog-failed-status": "prolog failed status=%d:%d",
    "slurmd-epilog-failed-status": "epilog failed status=%d:%d",
    "slurmd-prolog-script-failed-rc": "%s failed: rc:%u output:%s",
    "slurmd-epilog-script-failed-rc": "%s failed: rc:%u output:%s",
    "slurmd-health-check-failed-rc": "health_check failed: rc:%u output:%s",
    "slurmctld-prolog-error-reason": "Prolog error",
    "slurmctld-epilog-error-reason": "Epilog error",
    "slurm-task-launch-failed": "Task launch for %ps failed on node %s: %m",
    "slurm-job-memory-limit-exceeded": "Exceeded job memory limit",
    "slurmstepd-execve-not-found": "execve(): %s: %m",
    "slurm-preempted": "*** %s ON %s CANCELLED AT %s DUE TO PREEMPTION ***",
    "slurmstepd-unkillable-step": "*** %s STEPD TERMINATED ON %s AT %s DUE TO JOB NOT ENDING WITH SIGNALS ***",
    "slurmd-node-config-differs-from-hardware": "Node configuration differs from hardware: CPUs=%u:%u(hw) Boards=%u:%u(hw) "
                                                "SocketsPerBoard=%u:%u(hw) CoresPerSocket=%u:%u(hw) "
                                                "ThreadsPerCore=%u:%u(hw)",
    "srun-invalid-mpi-type": "Invalid MPI type '%s', --mpi=list for acceptable types",
    "slurm-mpi-context-not-created": "MPI: Cannot create context for %s",
    "slurm-pmix-library-not-loaded": "pmi/pmix: can not load PMIx library",
    "pmix-msg-size-too-large": "A received msg header indicates a size that is too large:",
    "cray-mpich-gtl-not-linked": "MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library is not linked",
    "ompi-cuda-support-not-compiled": "The user requested CUDA support with the --mca mpi_cuda_support 1 flag",
    "nvshmem-ib-gpu-memory-registration-failed": "mem registration failed",
    "spectrum-mpi-cuda-ipc-cgroups": "CUDA level IPC failure: this has been observed in environments where cgroups "
                                     "separate the visible GPUs between ranks.",
    "perftest-completion-error": " Completion with error at client",
    "perftest-failed-status": " Failed status-%s (%d): wr_id %d syndrom 0x%x",
    "perftest-connect-failed": "Couldn't connect to %s:%d",
    "perftest-socket-init-failed": " Unable to init the socket connection",
    "perftest-port-not-active": " Port number %d state is %s",
    "perftest-reg-mr-failed": "Couldn't allocate MR",
    "perftest-reg-mr-efault-gpu-memory": "Couldn't allocate MR with error=%d",
    "nvbandwidth-peer-test-waived": "Waiving ",
    "pingpong-failed-status": "Failed status %s (%d) for wr_id %d",
    "pingpong-modify-qp-failed": "Failed to modify QP to RTR",
    "verbs-wc-status-retry-exceeded": "transport retry counter exceeded",
    "verbs-wc-status-access-error": "remote access error",
    "slurm-gres-count-lower": "count reported lower than configured ",
    "slurm-gres-conf-duplicate-records": "gres.conf duplicate records for %s",
    "dcgm-exporter-profiling-not-supported": "Profiling is not supported for this group of GPUs or GPU",
    "dcgm-exporter-module-not-loaded": "This request is serviced by a module of DCGM that is not currently loaded",
    "rdma-shared-dp-no-rdma-devices-for-resource": "Warning: no Rdma Devices were found for resource %s",
    "rdma-shared-dp-missing-rdma-device-spec": "missing RDMA device spec for device %s, %v",
    "dcgm-diag-mig-incompatible": "'s MIG configuration is incompatible with the diagnostic because it prevents access to "
                                  "the entire GPU.",
    "kubelet-devices-unavailable": "requested number of devices unavailable for %s. Requested: %d, Available: %d",
    "slurm-gres-gpu-device-file-missing": "can't stat gres.conf file %s: %m",
    "slurm-gres-gpu-device-stat-missing": "%s: stat(%s): %m",
    "deepspeed-ssh-check-command-failed": "ssh -o PasswordAuthentication=no ",
    "deepspeed-ssh-check-unreachable": "was not reachable via ssh. If you are running with a single node please remove",
    "lightning-slurm-devices-mismatch": "in Lightning, but the number of tasks per node configured in SLURM",
    "lightning-slurm-nodes-mismatch": "in Lightning, but the number of nodes configured in SLURM",
    "accelerate-rtx40-p2p-ib-unsupported": "Using RTX 4000 series doesn't support faster communication broadband via P2P "
                                           "or IB. ",
    "physx-cuda-driver-too-old": "CUDA driver version is %u, expected at least %u.",
    "enroot-paths-not-creatable": "mkdir -p \"${ENROOT_CACHE_PATH}\" \"${ENROOT_DATA_PATH}\" \"${ENROOT_RUNTIME_PATH}\"",
    "pyxis-runtime-dir-not-creatable": "pyxis: couldn't mkdir %s: %s",
    "pyxis-seccomp-filter-failed": "pyxis: seccomp filter failed: %s",
    "enroot-switchroot-no-shell": "failed to execute: %s",
    "vllm-world-size-above-gpus": "is larger than the number of available GPUs",
    "vllm-gpu-free-memory-below-utilization": "is less than desired GPU memory utilization ",
    "vllm-no-memory-for-kv-cache": "No available memory for the cache blocks. ",
    "vllm-kv-cache-below-max-model-len": "cache is needed, which is larger than the available KV cache ",
    "vllm-v0-max-seq-len-above-kv-cache": "is larger than the maximum number of tokens that can be ",
    "sglang-not-enough-memory-kv-pool": "Not enough memory. Please try to increase --mem-fraction-static. ",
    "sglang-ci-killall-orphaned-cuda-contexts": "Orphaned CUDA contexts after ",
    "azure-check-gpu-ecc-row-remap": "Warning: Detected a GPU row remap Error for GPU ID ",
    "azure-check-gpu-ecc-uncorrectable": "Warning: Detected a very high GPU DRAM uncorrectable error count (",
    "slurm-gcp-bulkinsert-no-capacity": "bulkInsert operation errors: ",
    "slurm-gcp-bulkinsert-quota": "bulkInsert operation errors: ",
    "dkms-build-bad-return-status": "Bad return status for module build on kernel: $kernelver ($arch)",
    "openibd-module-not-mlnx-ofed": "Module $module belong to $rpm_name which is not a part of MLNX_OFED, skipping...",
    "dkms-autoinstall-failed": "Autoinstall on ${kernelver[0]} failed for module(s) ${failed_modules[*]}.",
    "xbps-dkms-module-failed-to-build": "DKMS module '$1-$2' failed to build, please check /var/lib/dkms",
    "make-failed-in-dkms-build-tree": "[%s: %s] Error %d",
    "make-kbuild-modules-target-failed": "[%s: %s] Error %d",
    "dkms-kernel-headers-not-found": "Your kernel headers for kernel $1 cannot be found at $install_tree/$1/build or "
                                     "$install_tree/$1/source.",
    "modprobe-nvidia-module-not-found": "Module %s not found in directory %s",
    "nvidia-installer-nouveau-in-use": "The Nouveau kernel driver is currently in use ",
    "dpkg-dependency-problems-prevent-configuration": "dependency problems prevent configuration of %s:",
    "accelerate-main-process-port-in-use": "Tried to launch distributed communication on port `",
    "ray-autoscaler-infeasible-resource-request": "Error: No available node types can fulfill resource ",
    "transformers-bf16-needs-ampere-gpu": "Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU "
                                          "with cuda>=11.0",
    "persistenced-numa-auto-online-failed": "NUMA: Failed to enable NUMA memory Auto-Online",
    "bash-fork-retry-eagain": "fork: retry",
    "shell-command-not-found": "command not found",
    "sbatch-submission-failed": "Batch job submission failed: %m",
    "openssh-connect-failed": "ssh: connect to host %s port %s: %s",
    "ld-so-shared-library-missing": "error while loading shared libraries",
    "ldd-shared-library-not-found": "%s => not found",
    "ld-so-version-not-found-nv-bound-host-library": "version `%s' not found (required by %s)",
    "openssh-banner-exchange-failed": "%s: Connection closed by remote host",
    "openssh-host-key-verification-failed": "Host key verification failed.",
    "openssh-permission-denied": "Permission denied (%s).",
    "libibumad-ib-umad-not-loaded": "can't read ABI version from %s/%s (%m): is ib_umad module loaded?",
    "nvidia-container-cli-nvml-function-not-found": "nvml error",
    "nvidia-container-cli-nvml-driver-not-loaded": "nvml error",
    "nvidia-container-cli-cuda-requirement": "unsatisfied condition: %s, please update your driver to a newer version, "
                                             "or use an earlier cuda container",
    "nvidia-container-runtime-cuda-requirement": "unsatisfied condition: %v (%v)",
    "nvidia-container-cli-cuda-requirement-bare": "unsatisfied condition: %s",
    "kubelet-no-healthy-devices": "no healthy devices present; cannot allocate unhealthy devices %s",
    "k8s-device-plugin-incompatible-strategy": "Incompatible strategy detected %v",
    "gpu-admin-tools-unexpected-cc-state": "Unexpected CC state 0x{cc_reg}",
    "gpu-admin-tools-cc-mode-set-on": "CC mode set to {opts.set_cc_mode}. It will be active after GPU reset.",
    "gpu-admin-tools-cc-mode-is-on": "CC mode is {cc_mode}",
    "lmod-module-unknown": "The following module(s) are unknown:",
    "lmod-module-exists-cannot-be-loaded": "These module(s) or extension(s) exist but cannot be loaded as requested:",
}

# The message as a tool prints it, where a row's text is a part of it or its conversions take words: written for this
# test from the text and the source around it (the values are made up).
PRINTED = {
    # slurmstepd's step terminate monitor, the step id and the node filled (src/slurmd/slurmstepd/step_terminate_monitor.c)
    "slurmstepd-unkillable-step": "slurmstepd: error: *** STEP 4242.0 STEPD TERMINATED ON node1 AT 2024-04-20T09:10:38 "
                                  "DUE TO JOB NOT ENDING WITH SIGNALS ***",
    "slurmd-node-config-differs-from-hardware": "slurmd: error: Node configuration differs from hardware: CPUs=64:128(hw) "
                                                "Boards=1:1(hw) SocketsPerBoard=2:2(hw) CoresPerSocket=32:32(hw) "
                                                "ThreadsPerCore=1:2(hw)",
    # srun's error() lines behind its own prefix, the plugin named as srun names it
    "srun-invalid-mpi-type": "srun: error: Invalid MPI type 'pmix', --mpi=list for acceptable types",
    "slurm-mpi-context-not-created": "srun: error: MPI: Cannot create context for mpi/pmix",
    # PMIXP_ERROR's prefix (src/plugins/mpi/pmix/pmixp_debug.h): the plugin, the function, the host and node id, file:line
    "slurm-pmix-library-not-loaded": "slurmstepd: error:  mpi/pmix_v4: init: node1 [0]: mpi_pmix.c:171: pmi/pmix: can not "
                                     "load PMIx library",
    # NVSHMEMI_NULL_ERROR_JMP's prefix (src/include/non_abi/nvshmemx_error.h): the source file and line, 'NULL value '
    "nvshmem-ib-gpu-memory-registration-failed": "src/modules/transport/common/transport_ib_common.cpp:128: NULL value mem "
                                                 "registration failed. Reason: Bad address",
    # OPAL_ERROR_LOG of OPAL_ERR_UNREACH in the pmix3x component's client init, the file as the build names it
    "ompi-pmix-client-init-unreachable": "[node1:4242] OPAL ERROR: Unreachable in file "
                                         "../../../../../opal/mca/pmix/pmix3x/pmix3x_client.c at line 111",
    "verbs-wc-status-retry-exceeded": "WARNING: mcxnex0: CQE transport retry counter exceeded",
    # UCX's rc_verbs transport printing a failed send's status (src/uct/ib/rc/verbs/rc_verbs_iface.c)
    "verbs-wc-status-access-error": "rc_verbs_iface.c:128  send completion with error: remote access error",
    # uct_ib_md_print_mem_reg_err_msg with the title of a dma-buf registration and strerror(EINVAL)
    "ucx-reg-dmabuf-mr-refused": "ib_md.c:538  UCX  ERROR ibv_reg_dmabuf_mr(address=0x7f3a40000000, length=65536, "
                                 "access=0xf) failed: Invalid argument",
    # openibd's log_msg form of the refusal ('ERROR: ' before the echo_failure text), behind the script's name
    "openibd-module-not-mlnx-ofed": "openibd: ERROR: Module rdma_cm belong to kernel-modules which is not a part of "
                                    "MLNX_OFED, skipping...",
    "gpu-admin-tools-cc-mode-set-on": "2023-12-29,11:51:50.191 INFO     GPU 0009:01:00.0 H100-PCIE 0x2342 BAR0 "
                                      "0x661002000000 CC mode set to on. It will be active after GPU reset.",
    "gpu-admin-tools-cc-mode-is-on": "2024-09-06,10:00:00.000 INFO     GPU 0000:43:00.0 H100-SXM 0x2330 BAR0 0xab042000000 "
                                     "CC mode is on",
    "nvidia-container-cli-nvml-function-not-found": "nvidia-container-cli: detection error: nvml error: function not found",
    "nvidia-container-cli-nvml-driver-not-loaded": "nvidia-container-cli: initialization error: nvml error: driver not loaded",
    # the CLI's requirement stage, as NVIDIA/nvidia-docker and vLLM threads quote it behind the runtime's hook error
    "nvidia-container-cli-cuda-requirement": "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, "
                                             "please update your driver to a newer version, or use an earlier cuda "
                                             "container: unknown",
    # internal/runtime/runtime.go wraps csv.go's 'requirements not met: %v' around the constraint's error
    "nvidia-container-runtime-cuda-requirement": "failed to create NVIDIA Container Runtime: failed to construct OCI spec "
                                                 "modifier: requirements not met: unsatisfied condition: cuda>=11.4 "
                                                 "(cuda=10.2)",
    "gpu-admin-tools-unexpected-cc-state": "gpu.error.GpuError: Unexpected CC state 0x2",
    "psm3-modify-ud-qp-failed": "node1:rank0.python: Failed to modify UD QP to INIT on mlx5_0: Operation not permitted",
    "psm3-cant-open-nic": "node1:rank0: PSM3 can't open nic unit: 0 (err=23)",
    "mooncake-gid-null": "W0710 10:00:01.000000  7 rdma_context.cpp:1400] GID is NULL, please check your GID index by "
                         "specifying MC_GID_INDEX",
    "mooncake-no-suitable-gid": "W0302 09:15:07.980530  7 rdma_context.cpp:1369] No suitable GID found on mlx5_bond_1/1",
    "mooncake-port-not-active": "W0302 09:15:07.980530  7 rdma_context.cpp:1228] Device mlx5_2 port not active",
    "tcpxo-rxdm-dmabuf-importer-context": "E0728 06:10:02.123456      1 fastrak_addr_translator.cc:60] Failed to create "
                                          "dmabuf importer context.",
    "tcpxo-rxdm-addr-translator-init": "E0728 06:10:02.123470      1 fastrak_gpumem_manager.cc:200] Memory importer: "
                                       "failed to initialize addr translator on NIC IP 192.169.0.3.",
    "tcpxo-rxdm-gpu-count-mismatch": "E0708 10:00:00.000000      1 fastrak_gpumem_manager.cc:200] Number of GPUs detected "
                                     "in the PCI tree 7 is not equal to the actual number of GPUs reported by CUDA 8.",
    "tcpx-plugin-gpu-tx-reg-mr-failed": "node1:4242:4300 [0] tcpxResult_t gpu_tx_reg_mr(void*, void**, int*, char*, "
                                        "void*, size_t):237 NCCL WARN gpu_tx_reg_mr failed -5",
    "tcpx-plugin-p2pdma-regmr-alignment": "node1:4242:4300 [0] tcpxResult_t tcpxRegMr(void*, void*, size_t, int, void**):807 "
                                          "NCCL WARN p2pdma api won't work with only RegMr, due to alignment issue",
    "btl-tcp-connect-no-route": "[n1][[463,1],0][btl_tcp_endpoint.c:803:mca_btl_tcp_endpoint_complete_connect] "
                                "connect() to 10.0.0.2 failed: No route to host (113)",
    "btl-tcp-peer-no-route": "[n1][[5925,1],0][btl_tcp_endpoint.c:857:mca_btl_tcp_endpoint_start_connect] peer: n2 "
                             "Unable to connect to the peer 10.0.0.2 on port 1024: No route to host",
    "ucx-verbs-enomem": "ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory",
    "ucx-completion-error": "ib_mlx5_log.c:177  Remote access error on mlx5_0:1/IB (synd 0x13 vend 0x88 hw_synd 0/0)",
    # openucx/ucx#10298 (UCX 1.16 on an NDR HCA as the post says) and #4556 (UCX 1.4 on HDR100) quote them
    "ucx-ib-port-speed-width-unknown": "[1731632081.707655] [gpu46:69078:0]        ib_iface.c:1674 UCX  ERROR Invalid "
                                       "active_speed on mlx5_0:1: 128",
    "ucx-memlock": "ib_log.c:246  UCX  ERROR mlx5_0: ibv_create_cq() failed: Cannot allocate memory : Please set max "
                   "locked memory (ulimit -l) to 'unlimited' (current: 64 kbytes)",
    "slurm-time-limit": "slurmstepd: error: *** JOB 4242 ON node1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***",
    "srun-task-out-of-memory": "srun: error: node1: tasks 0-3: Out Of Memory",
    "srun-node-failure": "srun: error: Node failure on node7",
    # a row of sacct's default table (JobID JobName Partition Account AllocCPUS State ExitCode) and scontrol show
    # job's line of the job's state, as the cases of tests/cases print them
    "slurm-job-state-node-fail": "   JobState=NODE_FAIL Reason=NodeDown Dependency=(null)",
    "slurm-job-state-boot-fail": "   JobState=BOOT_FAIL Reason=NodeDown Dependency=(null)",
    "slurm-job-state-out-of-memory": "3764934        mem_test       test   rc_admin          1 OUT_OF_ME+    0:125 ",
    "slurm-job-state-timeout": "569330             test        1         1G   00:01:02    TIMEOUT      0:0",
    "slurmd-prolog-failed-status": "[2024-05-01T10:00:00.000] error: JobId=4242 prolog failed status=1:0",
    "slurmd-epilog-failed-status": "[2024-05-01T10:00:00.000] error: JobId=4242 epilog failed status=1:0",
    "slurmd-prolog-script-failed-rc": "[2024-05-01T10:00:00.000] error: prolog failed: rc:230 output:nvidia-smi failed",
    "slurmd-epilog-script-failed-rc": "[2024-05-01T10:00:00.000] error: epilog failed: rc:1 output:umount failed",
    "slurmd-health-check-failed-rc": "[2024-05-01T10:00:00.000] error: health_check failed: rc:1 output:ERROR:  nhc:  "
                                     "Health check failed:  check_fs_mount:  /scratch not mounted",
    "shell-command-not-found": "/var/spool/slurmd/job4242/slurm_script: line 7: mpirun: command not found",
    "slurm-step-cancelled-node-failure": "slurmstepd: error: *** STEP 4242.0 ON node1 CANCELLED AT 2024-04-20T09:09:37 DUE "
                                         "TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
    "slurm-task-launch-failed": "srun: error: Task launch for StepId=4242.0 failed on node node1: Prolog failed",
    "slurmstepd-execve-not-found": "slurmstepd: error: execve(): python3: No such file or directory",
    "slurm-preempted": "slurmstepd: error: *** JOB 4242 ON node1 CANCELLED AT 2024-04-20T09:09:37 DUE TO PREEMPTION ***",
    "slurm-unable-to-allocate": "srun: error: Unable to allocate resources: Invalid account or account/partition "
                                "combination specified",
    "perftest-failed-status": " Failed status 12: wr_id 0 syndrom 0x81",
    "perftest-port-not-active": " Port number 1 state is Down",
    "perftest-reg-mr-efault-gpu-memory": "Couldn't allocate MR with error=14",
    "nvbandwidth-peer-test-waived": "Waiving device_to_device_memcpy_write_ce.",
    # the plugin's log in Mellanox/k8s-rdma-shared-dev-plugin issue 44
    "rdma-shared-dp-no-rdma-devices-for-resource": "2023/09/02 06:23:37 Warning: no Rdma Devices were found for "
                                                   "resource hpc_shared_devices_h",
    "rdma-shared-dp-missing-rdma-device-spec": '2023/09/02 06:23:37 error creating new device: "missing RDMA device '
                                               'spec for device 0000:ec:00.0, RDMA device \\"issm\\" not found"',
    "pingpong-failed-status": "Failed status transport retry counter exceeded (12) for wr_id 2",
    "mpirun-rank-exited-on-signal": "mpirun noticed that process rank 3 with PID 4242 on node node1 exited on signal 9 "
                                    "(Killed).",
    "slurm-gres-count-lower": "slurmctld: error: Setting node node1 state to INVAL with reason:gres/gpu count reported "
                              "lower than configured (7 < 8)",
    "slurm-gres-conf-duplicate-records": "slurmd: fatal: gres.conf duplicate records for gpu",
    "slurm-gres-gpu-device-file-missing": "slurmd: fatal: can't stat gres.conf file /dev/nvidia0: No such file or "
                                          "directory",
    "slurm-gres-gpu-device-stat-missing": "slurmd: error: _set_gres_device_desc: stat(/dev/nvidia0): No such file or "
                                          "directory",
    "dcgm-exporter-profiling-not-supported": 'time="2020-10-27T00:53:32Z" level=fatal msg="Error watching fields: '
                                             'Profiling is not supported for this group of GPUs or GPU"',
    "dcgm-exporter-module-not-loaded": 'time="2020-12-15T11:28:40Z" level=fatal msg="Error watching fields: This request '
                                       'is serviced by a module of DCGM that is not currently loaded"',
    "dcgm-diag-mig-incompatible": "GPU 0's MIG configuration is incompatible with the diagnostic because it prevents "
                                  "access to the entire GPU.",
    "deepspeed-ssh-check-command-failed": "subprocess.CalledProcessError: Command 'ssh -o PasswordAuthentication=no "
                                          "node1 hostname' returned non-zero exit status 255.",
    "deepspeed-ssh-check-unreachable": "RuntimeError: Using hostfile at /job/hostfile but host=node1 was not reachable via "
                                       "ssh. If you are running with a single node please remove /job/hostfile or setup "
                                       "passwordless ssh.",
    # the ValueErrors SLURMEnvironment.validate_settings raises, as Python prints them
    "lightning-slurm-devices-mismatch": "ValueError: You set `devices=4` in Lightning, but the number of tasks per node "
                                        "configured in SLURM `--ntasks-per-node=1` does not match. HINT: Set `devices=1`.",
    "lightning-slurm-nodes-mismatch": "ValueError: You set `num_nodes=2` in Lightning, but the number of nodes configured "
                                      "in SLURM `--nodes=1` does not match. HINT: Set `num_nodes=1`.",
    # coreutils' mkdir inside enroot, as pyxis prints enroot's log under slurmstepd
    "enroot-paths-not-creatable": "slurmstepd: error: pyxis:     mkdir: cannot create directory '/run/enroot': "
                                  "Permission denied",
    "pyxis-runtime-dir-not-creatable": "[2019-09-24T10:10:06.901] [321.0] error: pyxis: couldn't mkdir "
                                       "/run/pyxis/100005: No such file or directory",
    "pyxis-seccomp-filter-failed": "slurmstepd: error: pyxis: seccomp filter failed: Invalid argument",
    "enroot-switchroot-no-shell": "enroot-switchroot: failed to execute: /bin/sh: No such file or directory",
    # PhysX's report through its error callback, as Isaac Gym prints it (file, line, level, message)
    "physx-cuda-driver-too-old": "/buildAgent/work/45f70df4210b2e3e/source/cudamanager/src/CudaContextManager.cpp "
                                 "(635) : warning : CUDA driver version is 11020, expected at least 11040.",
    # pydantic's ValidationError of ParallelConfig, as vLLM's API server prints it
    "vllm-world-size-above-gpus": "  Value error, World size (2) is larger than the number of available GPUs (1) in "
                                  "this node. If this is intentional and you are using:",
    # vLLM's ValueError as the engine core prints it, the line vllm-project/vllm#20305 and #23192 quote
    "vllm-gpu-free-memory-below-utilization": "ValueError: Free memory on device (31.44/47.38 GiB) on startup is less "
                                              "than desired GPU memory utilization (0.95, 45.01 GiB). Decrease GPU "
                                              "memory utilization or reduce GPU memory used by other processes.",
    # SGLang's CI clean-up on a B200 runner, as sgl-project/sglang#24928 quotes its job log
    "sglang-ci-killall-orphaned-cuda-contexts": "Orphaned CUDA contexts after 100s \u2014 container needs restart.",
    # vllm-project/vllm#10439 and #17431 quote it
    "vllm-no-memory-for-kv-cache": "ValueError: No available memory for the cache blocks. Try increasing "
                                   "`gpu_memory_utilization` when initializing the engine.",
    # check_enough_kv_cache_memory's f-string filled (vllm/v1/core/kv_cache_utils.py; the values are made up)
    "vllm-kv-cache-below-max-model-len": "ValueError: To serve at least one request with the models's max seq len "
                                         "(131072), (16.00 GiB KV cache is needed, which is larger than the available "
                                         "KV cache memory (9.47 GiB). Based on the available memory, the estimated "
                                         "maximum model length is 77568. Try increasing `gpu_memory_utilization` or "
                                         "decreasing `max_model_len` when initializing the engine.",
    # basalam/product-catalog-generator#10 (vLLM 0.2.7's V0 worker, as Python prints it)
    "vllm-v0-max-seq-len-above-kv-cache": "ValueError: The model's max seq len (4096) is larger than the maximum "
                                          "number of tokens that can be stored in KV cache (3664). Try increasing "
                                          "gpu_memory_utilization or decreasing max_model_len when initializing the "
                                          "engine.",
    # sgl-project/sglang#4330 quotes it
    "sglang-not-enough-memory-kv-pool": "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    # the NotImplementedError PartialState raises, as Python prints it (src/accelerate/state.py)
    "accelerate-rtx40-p2p-ib-unsupported": "NotImplementedError: Using RTX 4000 series doesn't support faster "
                                           "communication broadband via P2P or IB. Please set `NCCL_P2P_DISABLE=\"1\"` "
                                           "and `NCCL_IB_DISABLE=\"1\" or use `accelerate launch` which will do this "
                                           "automatically.",
    "kubelet-devices-unavailable": "Message:        Pod Allocate failed due to requested number of devices unavailable "
                                   "for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
    # the kubelet's admission error as the pod's events show it (trueforge-org/truecharts#19201, an AMD GPU's plugin)
    "kubelet-no-healthy-devices": "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices "
                                  "amd.com/gpu, which is unexpected",
    # the CLI's requirement stage before the hint (Xilinx/Vitis-AI#103 and NVIDIA/nvidia-docker#536 quote it)
    "nvidia-container-cli-cuda-requirement-bare": "nvidia-container-cli: requirement error: unsatisfied condition: "
                                                  "cuda>=10.0",
    # klog's error line of the plugin (NVIDIA/k8s-device-plugin#1220)
    "k8s-device-plugin-incompatible-strategy": "E0506 17:45:45.421956       1 factory.go:112] Incompatible strategy "
                                               "detected auto",
    "azure-check-gpu-ecc-row-remap": "Warning: Detected a GPU row remap Error for GPU ID 7, please offline this node "
                                     "(node1), get the Azure HPC diagnostics and submit a support request.",
    "azure-check-gpu-ecc-uncorrectable": "Warning: Detected a very high GPU DRAM uncorrectable error count (1000001) for "
                                         "the aggregate counter for GPU ID 3, please try a reboot",
    "slurm-gcp-bulkinsert-no-capacity": "2024-05-01 10:00:00,000 resume.py WARNING: bulkInsert operation errors: "
                                        "ZONE_RESOURCE_POOL_EXHAUSTED name=operation-1 operationGroupId=7 nodes=c-[0-5]",
    "slurm-gcp-bulkinsert-quota": "2024-05-01 10:00:00,000 resume.py WARNING: bulkInsert operation errors: QUOTA_EXCEEDED "
                                  "name=operation-1 operationGroupId=7 nodes=c-[0-5]",
    "dkms-build-bad-return-status": "Error! Bad return status for module build on kernel: 6.8.0-45-generic (x86_64)",
    "dkms-autoinstall-failed": "Autoinstall on 6.8.0-45-generic failed for module(s) nvidia(10).",
    "xbps-dkms-module-failed-to-build": "DKMS module 'nvidia-580.142' failed to build, please check /var/lib/dkms",
    "make-failed-in-dkms-build-tree": "make[2]: *** [/usr/src/linux-headers-6.8.0-45-generic/Makefile:1925: "
                                      "/var/lib/dkms/nvidia/550.120/build] Error 2",
    "make-kbuild-modules-target-failed": "make: *** [/usr/src/linux-headers-6.3.0-1-common/Makefile:1967: modules] Error 2",
    # real: emilyst/hid-nx-dkms#20 (DKMS 3's form; older DKMS ended the line 'cannot be found.')
    "dkms-kernel-headers-not-found": "Error! Your kernel headers for kernel 6.6.15-amd64 cannot be found at "
                                     "/lib/modules/6.6.15-amd64/build or /lib/modules/6.6.15-amd64/source.",
    # real: Witko/nvidia-xrun#135, modprobe's LOG at the fatal level
    "modprobe-nvidia-module-not-found": "modprobe: FATAL: Module nvidia not found in directory "
                                        "/lib/modules/5.2.13-200.fc30.x86_64",
    # real: BenedictThompson-zz/Azure-Ethereum-mine#2, an older installer's ui_error form (its first line)
    "nvidia-installer-nouveau-in-use": " ERROR: The Nouveau kernel driver is currently in use by your system.  This",
    # real: vision-x-nyu/thinking-in-space#22
    "accelerate-main-process-port-in-use": "Tried to launch distributed communication on port `29500`, but another "
                                           "process is utilizing it. Please specify a different port (such as using "
                                           "the `--main_process_port` flag or specifying a different "
                                           "`main_process_port` in your config file) and rerun your script.",
    # real: real-stanford/scalingup#6, the autoscaler's event as the driver prints it
    "ray-autoscaler-infeasible-resource-request": "(autoscaler +32s) Error: No available node types can fulfill "
                                                  "resource request {'CPU': 1.0, 'GPU': 1.0}. Add suitable node types "
                                                  "to this cluster to resolve this issue.",
    # real: tatsu-lab/stanford_alpaca#133
    "transformers-bf16-needs-ampere-gpu": "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, "
                                          "using Ampere GPU with cuda>=11.0",
    "bash-fork-retry-eagain": "bash: fork: retry: Resource temporarily unavailable",
    "openssh-connect-failed": "ssh: connect to host node2 port 22: Connection refused",
    "openssh-permission-denied": "user@node2: Permission denied (publickey,gssapi-keyex,gssapi-with-mic).",
    "openssh-banner-exchange-failed": "kex_exchange_identification: Connection closed by remote host",
    # the openib BTL's completion handler (handle_wc) behind its process name, as Open MPI 1.3 printed it
    "openib-error-polling-cq": "[[10802,1],32][btl_openib_component.c:2893:handle_wc] from node21 to: node11 error "
                               "polling LP CQ with status RECEIVER NOT READY RETRY EXCEEDED ERROR status number 13 for "
                               "wr_id 37784704 opcode 0 qp_idx 0",
    "cray-mpich-gtl-not-linked": "MPICH ERROR [Rank 0] [job id 7.1] [Thu Feb 13 12:42:18 2025] [nid000007] - Abort(-1) "
                                 "(rank 0 in comm 0): MPIDI_CRAY_init: GPU_SUPPORT_ENABLED is requested, but GTL library "
                                 "is not linked",
    "btl-tcp-connect-link-local-peer": "  Message:    connect() to 169.254.7.7:1024 failed",
    # real: apptainer/apptainer#945 (tests/cases/gpu-gaps80e-apptainer945-*), a host library bound by --nv
    "ld-so-version-not-found-nv-bound-host-library": "glxgears: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' "
                                                      "not found (required by /.singularity.d/libs/libGLdispatch.so.0)",
    "ld-so-shared-library-missing": "./build/all_reduce_perf: error while loading shared libraries: libnccl.so.2: cannot "
                                    "open shared object file: No such file or directory",
    # real: Debian bug 898055 (tests/cases/node-gaps84a-debbug898055-*), ibverbs-providers for two architectures
    "dpkg-dependency-problems-prevent-configuration": "dpkg: dependency problems prevent configuration of "
                                                      "ibverbs-providers:i386:",
    # real: Red Hat Bugzilla 434805 (tests/cases/node-gaps84a-rhbz434805-*), ldd after an openmpi-libs upgrade
    "ldd-shared-library-not-found": "       libmpi.so.0 => not found",
    "sbatch-submission-failed": "sbatch: error: Batch job submission failed: Invalid account or account/partition "
                                "combination specified",
    # the line as rdma-core's PR 393 quotes ibacm's journal, wrapped after 'from' (a whole line holding 'ib_umad' is
    # read as a node-side kernel line, which the table does not read: the Fabric Manager rule reads NVLSM's)
    "libibumad-ib-umad-not-loaded": "ibacm[1796]: ibwarn: [1796] umad_init: can't read ABI version from",
    # real: ai4d-iasc/trixie#70 (tests/cases/node-gaps85c-trixie70-*), a batch job's module load of a Spack module
    "lmod-module-unknown": "Lmod has detected the following error: The following module(s) are unknown:",
    # real: TACC/Lmod#828 (tests/cases/node-gaps85c-lmod828-*), NCCL and OpenMPI under a compiler level not loaded
    "lmod-module-exists-cannot-be-loaded": "Lmod has detected the following error:  These module(s) or extension(s) "
                                           "exist but cannot be loaded as requested: \"NCCL\", \"OpenMPI\"",
}


def printed(row) -> str:
    """The row's message as printed: :data:`PRINTED`, else its text with each conversion filled with a number."""
    return PRINTED.get(row["id"]) or toolmsg.CONVERSION.sub("7", row["text"])


def log_inputs(name: str, text: str) -> Inputs:
    """The inputs of 'nccldiag log' given ``text`` as the file ``name``: the log reader's and the failure lexicon's."""
    return Inputs(logs=nccllog.parse_logs([(name, text)]), failure_lines=lexicon.lines_in(text, name))


# ---------------------------------------------------------------- the table and its sources


def test_every_row_is_complete_and_names_what_exists():
    assert len(set(IDS)) == len(IDS) and len(ROWS) >= 20
    for r in ROWS:
        assert all(k in r for k in KEYS), (r["id"], [k for k in KEYS if k not in r])
        assert r["severity"] in ("fail", "warn") and r["confidence"] in ("high", "medium"), r["id"]
        assert r["words"] and r["source"], r["id"]
        for s in r["source"]:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+", s["repo"]) and re.fullmatch(r"[0-9a-f]{40}", s["commit"])
            assert "/" in s["file"] or "." in s["file"], r["id"]
        c = r["category"]
        assert c == toolmsg.NONE or categories.known(c) or c.startswith("other:"), r["id"]


def test_every_rows_text_is_the_text_checked_in_its_source():
    assert {r["id"]: r["text"] for r in ROWS} == CHECKED


def _git(repo: str) -> Path:
    return SOURCES / repo.replace("/", "+") / "repo"


SOURCED = [(r["id"], s) for r in ROWS for s in r["source"]]


@pytest.mark.parametrize("row_id,source", SOURCED, ids=[f"{i}-{s['repo']}" for i, s in SOURCED])
def test_every_rows_text_is_in_the_file_it_cites(row_id, source):
    git = _git(source["repo"])
    if not git.is_dir():
        pytest.skip(f"{source['repo']} is not at hand under {SOURCES} (set NCCLDIAG_SOURCES)")
    held = subprocess.run(["git", "--git-dir", str(git), "cat-file", "-e", f"{source['commit']}^{{commit}}"],
                          capture_output=True, timeout=60)
    if held.returncode != 0:  # a snapshot of the repository that does not reach back to the cited commit
        pytest.skip(f"{source['repo']} under {SOURCES} does not hold commit {source['commit'][:12]}")
    got = subprocess.run(["git", "--git-dir", str(git), "show", f"{source['commit']}:{source['file']}"],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, (row_id, got.stderr)
    assert CHECKED[row_id] in got.stdout, (row_id, source["file"])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_every_pattern_is_linear_by_construction(row):
    unbounded, nested = _repeats(sre_parse.parse(row["pattern"]))
    assert not nested and unbounded <= 1, row["id"]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_every_row_reads_its_own_message_behind_any_prefix(row):
    text = printed(row)
    assert any(w in text for w in row["words"]), row["id"]
    if row["id"] not in PRINTED:  # the row's own text, filled, is the message
        assert CHECKED[row["id"]].strip(" =*") in row["text"]
    for prefix in PREFIXES:
        assert toolmsg.row_of(prefix + text)["id"] == row["id"], (row["id"], prefix)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_log_reader_keeps_every_rows_line_for_the_table(row):
    inp = log_inputs("job.out", "step 10 loss 2.31\n" + printed(row) + "\nstep 11\n")
    kept = [c for c in C.find(inp, re.compile(r"\S"), toolmsg.KINDS) if toolmsg.row_of(c.text) is not None]
    assert {c.at.lineno for c in kept} == {2}, row["id"]
    assert {toolmsg.row_of(c.text)["id"] for c in kept} == {row["id"]}, row["id"]
    assert bool(toolmsg.found(inp)) == toolmsg.names_cause(row)


FAILING = [r for r in ROWS if r["severity"] == "fail"]


@pytest.mark.parametrize("row", FAILING, ids=[r["id"] for r in FAILING])
def test_a_message_of_a_failure_is_a_line_of_the_failure_lexicon(row):
    """A row that names no cause leaves its line to the lexicon (said unexplained); one that names a cause is a failure
    line as well, so that a paste of the failure lines alone keeps it."""
    assert lexicon.shape_of(printed(row)) is not None, row["id"]


def test_a_message_printed_while_the_job_goes_on_is_no_line_of_the_lexicon():
    for row in (r for r in ROWS if r["severity"] == "warn"):
        assert lexicon.shape_of(printed(row)) is None, row["id"]


def test_a_line_of_no_family_is_read_by_no_row():
    for text in ("step 10 loss 2.31", "NCCL INFO Bootstrap : Using eth0", "Connection closed by remote peer node2<45074>",
                 "srun: error: node1: task 0: Exited with exit code 1", "UCX  WARN  unused env variable UCX_TLS_X",
                 "WARNING: There was an error initializing an OpenFabrics device.", "Failed status: ok"):
        assert toolmsg.row_of(text) is None, text


# ---------------------------------------------------------------- real lines


def test_a_jobs_state_in_sacct_and_scontrol_is_read_only_where_the_job_did_not_complete():
    """Rows of sacct's tables (tests/cases/node-gaps65g-*, and a batch step sacct shows CANCELLED 0:15 when its job
    timed out) and scontrol's JobState=: a state that ended the job names its cause, also cut by sacct to its column
    with '+'; a job that completed, a running one, or a step cancelled when its job ended is no failure line."""
    ended = {
        "1012.batch     00:00:01      1380K OUT_OF_ME+ ": "slurm-job-state-out-of-memory",
        "3764934        mem_test       test   rc_admin          1 OUT_OF_ME+    0:125 ": "slurm-job-state-out-of-memory",
        "   JobState=NODE_FAIL Reason=NodeDown Dependency=(null)": "slurm-job-state-node-fail",
    }
    for line, row_id in ended.items():
        assert toolmsg.row_of(line)["id"] == row_id, line
        assert lexicon.shape_of(line) is not None, line
    for line in ("3765959        mem_test       test   rc_admin          1  COMPLETED      0:0 ",
                 "1484.batch     00:00:00      1196K  COMPLETED ",
                 "3764934.ext+     extern              rc_admin          1  COMPLETED      0:0",
                 "569330.batch      batch        1              00:01:03  CANCELLED     0:15",
                 "   JobState=RUNNING Reason=None Dependency=(null)",
                 "State: COMPLETED (exit code 0)"):
        assert toolmsg.row_of(line) is None and lexicon.shape_of(line) is None, line


def _case(seen: str) -> realcases.Case:
    for root in (realcases.IN_REPO, realcases.CASES):
        if (root / seen / "case.json").is_file():
            return realcases.Case(seen, root / seen, json.loads((root / seen / "case.json").read_text()))
    raise AssertionError(f"no case {seen}")


def _lines(case: realcases.Case):
    if "shared" in str(case.path) and not real.AVAILABLE:
        pytest.skip(real.REASON)
    return [line for f in case.meta["files"]
            for line in (case.path / f).read_text(encoding="utf-8", errors="replace").splitlines()]


SEEN = [(r, s) for r in ROWS for s in r.get("seen", [])]


def test_rows_are_seen_in_real_outputs():
    assert len({r["id"] for r, _ in SEEN}) >= 8


@pytest.mark.parametrize("row,seen", SEEN, ids=[f"{r['id']}-{s[:40]}" for r, s in SEEN])
def test_every_row_that_claims_seen_reads_a_line_there(row, seen):
    assert [line for line in _lines(_case(seen)) if (toolmsg.row_of(line) or {}).get("id") == row["id"]], row["id"]


def _healthy_cases():
    out = []
    for root in (realcases.IN_REPO, realcases.CASES):
        if root.is_dir():
            out += [c for c in realcases.cases(root) if c.healthy and not c.bundle]
    return out


HEALTHY = _healthy_cases()


def test_the_healthy_inputs_are_there_to_be_read():
    assert len([c for c in HEALTHY if c.path.is_relative_to(realcases.IN_REPO)]) >= 3
    assert any(c.id.startswith("net-ompi7188-") for c in HEALTHY)  # a run that printed the openib BTL's warning


@pytest.mark.parametrize("case", HEALTHY, ids=[c.id for c in HEALTHY])
def test_no_row_reads_a_line_of_a_healthy_case(case):
    assert [line for line in _lines(case) if toolmsg.row_of(line)] == []


def test_no_row_reads_a_line_of_the_node_captures_or_the_nccl_logs():
    real.require()
    read = []
    for root in (real.NODE, real.NCCL_LOGS):
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            read += [(path.name, line) for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
                     if toolmsg.row_of(line)]
    assert read == []


# ---------------------------------------------------------------- the diagnoses they make
# The logs below are written for these tests, line by line in the shape the tools print each message (the texts of
# knowledge/launchers.toml, conversions filled).


def _failing(inp):
    return [d for d in diagnose(inp) if d.severity in ("fail", "warn")]


def test_a_tools_message_names_its_category_citing_the_row_and_the_source():
    text = "[n1:1:0:1] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)\n"
    top = _failing(log_inputs("job.out", text))[0]
    assert (top.id, top.category, top.severity) == (tool_message.ID, "ib_completion_error", "fail")
    assert any(e.ref.startswith("launchers.toml:") for e in top.evidence)
    assert "src/uct/ib/mlx5/ib_mlx5_log.c" in top.confidence_why


def test_a_category_a_cause_of_the_catalog_names_is_left_to_it():
    """UCX's verbs ENOMEM is read by the catalog's memlock-too-low: no second diagnosis of the same category."""
    text = "[1652739463.054681] [cn22:4071024:0]  ib_iface.c:1035 UCX  ERROR ibv_create_cq(cqe=4096) failed: Cannot allocate memory\n"
    got = _failing(log_inputs("job.out", text))
    assert got[0].category == "memlock_limit" and tool_message.ID not in {d.id for d in got}


def test_a_warning_the_tool_prints_while_the_job_goes_on_counts_only_beside_a_failure():
    warn = ("The OpenFabrics (openib) BTL failed to initialize while trying to\n"
            "allocate some locked memory.  This typically can indicate that the\n"
            "memlock limits are set too low.  For most HPC installations, the\n")
    assert tool_message.ID not in {d.id for d in _failing(log_inputs("job.out", warn + "rank 0 done\n"))}
    failed = warn + "mpirun noticed that process rank 1 with PID 4242 on node n2 exited on signal 9 (Killed).\n"
    got = _failing(log_inputs("job.out", failed))
    assert any(d.id == tool_message.ID and d.category == "memlock_limit" for d in got), [(d.id, d.category) for d in got]


def test_psm3_that_opens_no_nic_counts_beside_mpichs_abort_and_a_refused_qp_names_psm3_alone():
    """libfabric's PSM3 provider: a NIC it cannot open is printed where the MPI may take another provider (warn), and
    counts beside MPICH's fatal abort; its UD queue pair refused by the device is the endpoint's failure itself."""
    warn = "node1:rank0: PSM3 can't open nic unit: 0 (err=23)\n"
    assert tool_message.ID not in {d.id for d in _failing(log_inputs("job.out", warn + "rank 0 done\n"))}
    aborted = warn + ("Abort(673306767): Fatal error in internal_Init_thread: Other MPI error, error stack:\n"
                      "create_vni_context(982)..: OFI endpoint open failed (ofi_init.c:982:create_vni_context:Cannot "
                      "allocate memory)\n")
    got = _failing(log_inputs("job.out", aborted))
    assert got[0].id == tool_message.ID and got[0].category == "other:libfabric-psm3-provider", \
        [(d.id, d.category) for d in got]
    refused = "node1:rank0.python: Failed to modify UD QP to INIT on mlx5_4: Operation not permitted\n"
    got = _failing(log_inputs("job.out", refused))
    assert got[0].severity == "fail" and got[0].category == "other:libfabric-psm3-provider"


def test_mooncakes_dropped_device_counts_beside_its_transport_that_did_not_start_or_a_failed_kv_transfer():
    """Mooncake's Transfer Engine drops a device whose GID it cannot use and goes on with the others (warn); beside
    its RDMA transport that did not start, or SGLang's KV transfer that failed, the run failed for that GID."""
    gid = "W0302 09:15:07.980530  7 rdma_context.cpp:581] No suitable GID found on mlx5_bond_1/\n"
    assert tool_message.ID not in {d.id for d in _failing(log_inputs("job.out", gid + "I0302 transfer done\n"))}
    stopped = gid + ("E0302 09:15:07.980793  7 rdma_transport.cpp:662] RdmaTransport: No available RNIC\n"
                     "E0302 09:15:07.980794  7 rdma_transport.cpp:106] RdmaTransport: cannot initialize RDMA resources\n")
    got = _failing(log_inputs("job.out", stopped))
    assert got[0].id == tool_message.ID and got[0].category == "roce_gid_config", [(d.id, d.category) for d in got]
    null = ("Decode transfer failed ... KVTransferError: Failed to get kvcache from prefill instance, it might be dead\n"
            "GID is NULL, please check your GID index by specifying MC_GID_INDEX\n")
    got = _failing(log_inputs("job.out", null))
    assert got[0].id == tool_message.ID and got[0].category == "roce_gid_config", [(d.id, d.category) for d in got]


def test_gpudirect_tcpx_and_tcpxo_failures_name_the_net_plugin_and_their_routine_warnings_nothing():
    """GPUDirect-TCPXO's RxDM that could not open the dmabuf import helper, and the GPUDirect-TCPX plugin's failed
    GPU memory registration, are the net plugin's failure; the Google plugins' WARNs of runs that went on (real lines
    of google/nccl-plugin-gpudirecttcpx#1, a slow start, and google/nccl-fastsocket#4) are no row's."""
    rxdm = ("E fastrak_addr_translator.cc:60] Failed to create dmabuf importer context.\n"
            "E fastrak_gpumem_manager.cc:200] Memory importer: failed to initialize addr translator on NIC IP "
            "192.169.0.3.\n"
            "E fastrak_gpumem_manager_startup.cc:45] Exiting with result:1\n")
    got = _failing(log_inputs("tcpxo-daemon.log", rxdm))
    assert (got[0].id, got[0].category, got[0].severity) == (tool_message.ID, "net_plugin", "fail"), \
        [(d.id, d.category) for d in got]
    tcpx = ("  tcpxResult_t gpu_tx_reg_mr(...):223 NCCL WARN gpu_tx_reg_mr failed -5\n"
            "  proxy.cc:1501 NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3\n")
    got = _failing(log_inputs("rank0.log", tcpx))
    assert (got[0].id, got[0].category) == (tool_message.ID, "net_plugin"), [(d.id, d.category) for d in got]
    for line in ("[0] tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN 0xadca8062b70:0xadca805d0f0, nic 0, "
                 "enp12s0, 172.16.0.11<39187><-172.16.0.95<46723> rx rx ctrl timeout cnt 7331502, nanos 10000000585",
                 "full-debug2-test-1:4024:4048 [0] net_fastsocket.cc:765 NCCL WARN Cannot get incoming CPU."):
        assert toolmsg.row_of(line) is None, line


def test_openibs_failed_completions_name_their_status_and_a_flushed_request_is_left_to_the_error_before_it():
    def row(text):
        return (toolmsg.row_of(text) or {}).get("id")
    assert row("[[5963,1],13][btl_openib_component.c:2893:handle_wc] from node24 to: node11 error polling LP CQ with "
               "status RECEIVER NOT READY RETRY EXCEEDED ERROR status number 13 for wr_id 37779456 opcode 0 qp_idx 0") \
        == "openib-error-polling-cq"
    assert row("[node7][[7,1],3][btl_openib_component.c:3644:handle_wc] from node7 to: node8 error polling HP CQ with "
               "status RETRY EXCEEDED ERROR status number 12 for wr_id 7 opcode 0  vendor error 129 qp_idx 0") \
        == "openib-error-polling-cq"
    # Open MPI users list, 2009-05 (9329): the line as posted, wrapped after its status
    assert row("error polling LP CQ with status RECEIVER NOT READY RETRY EXCEEDED ERROR") == "openib-error-polling-cq"
    # a request flushed from a queue pair already in error follows the completion that failed it
    assert row("[[7,1],3][btl_openib_component.c:3644:handle_wc] from node7 to: node8 error polling HP CQ with status "
               "WORK REQUEST FLUSHED ERROR status number 5 for wr_id 7 opcode 0  vendor error 244 qp_idx 0") is None


def test_a_message_that_names_no_cause_is_unexplained_never_an_all_clear():
    text = "[mpiexec@n1] =   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
    got = _failing(log_inputs("job.out", text))
    assert got and got[0].category == "unexplained" and tool_message.ID not in {d.id for d in got}


def test_perftests_refused_memory_registration_names_the_locked_memory_limit_only_for_enomem_or_no_errno():
    """perftest's 'Couldn't allocate MR': v4.5 and older print the words alone (the real lines of tests/cases/net-gaps68d-
    crater-...-memlock-64kb), releases since 2022 the errno; ENOMEM (12) is the kernel's refusal past RLIMIT_MEMLOCK,
    another errno (14 EFAULT: GPU memory with no peer-memory module) is not read as the limit."""
    old = "Couldn't allocate MR\nfailed to create mr\nFailed to create MR\n Couldn't create IB resources\n"
    top = _failing(log_inputs("ib_read_bw.out", old))[0]
    assert (top.id, top.category) == (tool_message.ID, "memlock_limit")
    new = "Couldn't allocate MR with error=12\nfailed to create mr\nFailed to create MR\n Couldn't create IB resources\n"
    assert _failing(log_inputs("ib_write_bw.out", new))[0].category == "memlock_limit"
    efault = new.replace("error=12", "error=14")
    assert toolmsg.row_of("Couldn't allocate MR with error=14")["id"] == "perftest-reg-mr-efault-gpu-memory"
    assert "memlock_limit" not in {d.category for d in _failing(log_inputs("ib_write_bw.out", efault))}
    # the words run together with the lines after them, as a page's paragraph copies them
    assert toolmsg.row_of("$ ib_read_bw -q 30 10.0.0.1 Couldn't allocate MR failed to create mr") is not None
    assert toolmsg.row_of("Couldn't allocate MR with error=14 failed to create mr")["id"] != "perftest-reg-mr-failed"


def test_perftests_gpu_buffer_it_cannot_pin_names_the_missing_peer_memory_module_and_other_errnos_stay_its_own():
    """perftest's errno form with EFAULT on a CUDA buffer (real: linux-rdma/perftest#346, tests/cases net-gaps82a-
    perftest346-*: GPU memory registered with plain ibv_reg_mr where no peer-memory module is loaded) names the missing
    peer-memory module; ENOMEM stays the locked-memory limit and DMA-BUF's EOPNOTSUPP (95) no row of either."""
    text = ("creating CUDA Ctx\n"
            "making it the current CUDA Ctx\n"
            "CUDA device integrated: 0\n"
            "allocated GPU buffer of a 16777216 address at 0x594ca786d9b0 for type CUDA_MEM_DEVICE\n"
            "Couldn't allocate MR with error=14\n"
            "failed to create mr\n"
            "Failed to create MR\n"
            " Couldn't create IB resources\n"
            "destroying current CUDA Ctx\n")
    top = _failing(log_inputs("ib_write_bw.out", text))[0]
    assert (top.id, top.category) == (tool_message.ID, "peermem_missing"), top
    for line in ("Couldn't allocate MR with error=95", "Couldn't allocate MR with error=140",
                 "allocated GPU buffer of a 16777216 address at 0x594ca786d9b0 for type CUDA_MEM_DEVICE"):
        assert toolmsg.row_of(line) is None, line


def test_nvbandwidths_waived_peer_test_names_gpus_without_peer_access_and_its_run_lines_stay_quiet():
    """nvbandwidth v0.2's 'Waiving <test>.' (real: NVIDIA/nvbandwidth#13, tests/cases gpu-gaps82a-nvbandwidth13-*: two
    GeForce RTX 2080 Ti without peer-to-peer over PCIe) names GPUs without peer access; its banner, device list and
    'Running <test>.' lines (real: NVIDIA/nvbandwidth#15) are no failure."""
    text = ("$ ./nvbandwidth -t device_to_device_memcpy_write_ce\n"
            "nvbandwidth Version: v0.2\n"
            "Device 0: NVIDIA GeForce RTX 2080 Ti\n"
            "Device 1: NVIDIA GeForce RTX 2080 Ti\n"
            "\n"
            "Waiving device_to_device_memcpy_write_ce.\n")
    top = _failing(log_inputs("nvbandwidth.txt", text))[0]
    assert (top.id, top.category) == (tool_message.ID, "p2p_unsupported_gpu"), top
    quiet = (
        "Running host_to_device_memcpy_ce.",
        "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
        "SUM host_to_device_memcpy_ce 205.04",
        "NOTE: This tool reports current measured bandwidth on your system.",
        "Device 0: NVIDIA GeForce RTX 4090",
    )
    for line in quiet:
        assert toolmsg.row_of(line) is None and lexicon.shape_of(line) is None, line


def test_a_slurm_time_limit_is_the_limits_not_a_nodes():
    text = ("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
            "slurmstepd: error: *** STEP 4242.0 ON node1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***\n"
            "srun: error: node1: tasks 0-3: Terminated\n")
    top = _failing(log_inputs("job.out", text))[0]
    assert (top.id, top.category) == (tool_message.ID, "other:slurm-time-limit")
    assert "DUE TO TIME LIMIT" in top.summary


# Real lines of a working slurmd's GPU detection (NVIDIA/deepops#1214, a node whose MIG instances slurmd found through
# NVML; the reporter's debug log, 2022-08-23) and of a working node's driver load (tests/cases/node-k8sdp480-...).
SLURMD_GRES_FOUND = (
    "[2022-08-23T15:24:51.390]     GRES[gpu] Type:(null) Count:1 Cores(256):0-63  Links:0,0,0,0,0,-1,0 "
    "Flags:HAS_FILE,ENV_NVML File:/dev/nvidia1,/dev/nvidia-caps/nvidia-cap111,/dev/nvidia-caps/nvidia-cap112 "
    "UniqueId:MIG-GPU-ede6b90f-50d8-42f2-57a1-8a531adc3192/12/0\n"
    "[    2.846803] nvidia: module verification failed: signature and/or required key missing - tainting kernel\n")


def test_slurms_gpu_resource_failures_name_the_nodes_configuration_or_its_missing_device_files():
    """slurmctld's INVAL registration and slurmd's fatal start-up errors (real lines of tests/cases) are the node's GPU
    resources, each its category; the lines of a working node's GPU detection are read by no row."""
    cases = {
        "node-magiccastle361-slurmctld-gres-count-lower-mig-inval-drain": "other:slurm-gres-config",
        "node-magiccastle27-slurmd-fatal-gres-conf-duplicate-records-autodetect": "other:slurm-gres-config",
        "node-fgcicuda3-slurmd-cant-stat-gres-file-dev-nvidia0-before-device-nodes": "other:gpu-device-nodes-missing",
    }
    for case_id, category in cases.items():
        text = "\n".join(_lines(_case(case_id))) + "\n"
        top = _failing(log_inputs("slurm.log", text))[0]
        assert (top.id, top.category, top.severity) == (tool_message.ID, category, "fail"), case_id
    assert [line for line in SLURMD_GRES_FOUND.splitlines() if toolmsg.row_of(line)] == []
    assert _failing(log_inputs("slurmd.log", SLURMD_GRES_FOUND)) == []
    # a count the node reports above the configured one is ignored by slurmctld (debug), not a failure
    assert toolmsg.row_of("slurmctld: debug:  _node_config_validate: gres/gpu: Ignoring excess count on node n1 "
                          "(8 > 4)") is None


def test_node_daemons_fatal_errors_name_their_cause_and_their_info_lines_stay_quiet():
    """dcgm-exporter's fatal 'Error watching fields: ...' on GPUs without profiling, and kubelet's refusal of a pod for
    devices it does not have free (real lines of tests/cases), name their categories; the exporter's info line that
    skips the profiling metrics on such a GPU (a working exporter, tests/cases/gpu-dcgmexporter395-...) is read by no
    row and makes no diagnosis."""
    cases = {
        "gpu-gpumontools119-dcgm-exporter-fatal-profiling-not-supported-quadro-p5000":
            "other:dcgm-profiling-unsupported-gpu",
        "gpu-gpumontools141-dcgm-exporter-fatal-dcgm-module-not-loaded-profiling-default":
            "other:dcgm-profiling-unsupported-gpu",
        "node-volcano1782-pod-unexpectedadmissionerror-gpu-unhealthy-allocatable-3-of-4":
            "other:device-unavailable-at-admission",
    }
    for case_id, category in cases.items():
        text = "\n".join(_lines(_case(case_id))) + "\n"
        top = _failing(log_inputs("pod.log", text))[0]
        assert (top.id, top.category, top.severity) == (tool_message.ID, category, "fail"), case_id
    healthy = "\n".join(_lines(_case("gpu-dcgmexporter395-not-collecting-dcp-metrics-m60-profiling-unsupported-healthy")))
    assert [line for line in healthy.splitlines() if toolmsg.row_of(line)] == []
    assert _failing(log_inputs("dcgm-exporter.log", healthy + "\n")) == []
    # the profiling library's unrecoverable error has more than one cause (a driver bug, two exporters at once): it
    # names none, and stays an unexplained failure through the fatal level of its line
    line = [x for x in _lines(_case("gpu-dcgmexporter148-fatal-third-party-profiling-module-unrecoverable-gsp-driver-bug"))
            if "level=fatal" in x][0]
    assert toolmsg.row_of(line) is None and lexicon.shape_of(line).id == "go-log-fatal"


def test_a_slurm_node_failure_names_the_failed_node_not_the_one_that_printed_it():
    # The real tail of a job's log (tests/cases/node-m4-runlog-tr141-srun-node-failure-step-cancelled): slurmstepd's
    # line names the host that printed it (jean-zay-iam17), srun's the node that failed (jean-zay-iam37).
    case = Path(__file__).resolve().parents[1] / "cases" / "node-m4-runlog-tr141-srun-node-failure-step-cancelled" / "posted-main-log-tail.txt"
    top = _failing(log_inputs("job.out", case.read_text()))[0]
    assert (top.id, top.category) == (tool_message.ID, "other:node-failure")
    assert "jean-zay-iam37" in top.summary


def test_a_step_cancelled_at_its_time_limit_is_no_node_failure():
    text = "slurmstepd: error: *** STEP 4242.0 ON node1 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***\n"
    assert "other:node-failure" not in {d.category for d in _failing(log_inputs("job.out", text))}


def test_dcgms_diagnostic_refused_on_mig_gpus_names_mig_and_a_passing_diagnostic_reads_no_row():
    """dcgmi diag's refusal of a GPU in MIG mode (a real transcript of tests/cases) names other:mig-enabled; the
    'Error: Unable to complete diagnostic for group' beside it is the same refusal, and a diagnostic whose tests all
    pass (tests/cases/gpu-dcgm55-...) reads no row of the table."""
    case = _case("gpu-nst-dcgm94-dcgmi-diag-mig-configuration-incompatible-nvidia-smi-l")
    top = _failing(log_inputs("dcgmi.txt", "\n".join(_lines(case)) + "\n"))[0]
    assert (top.id, top.category, top.severity) == (tool_message.ID, "other:mig-enabled", "fail")
    healthy = _lines(_case("gpu-dcgm55-dcgmi-diag-r3-deployment-tests-all-pass-healthy"))
    assert healthy and [line for line in healthy if toolmsg.row_of(line)] == []


def test_slurm_prolog_failures_name_the_prolog_and_an_option_left_alone_is_no_missing_program():
    """Slurm's prolog failures as srun, slurmstepd and sinfo -R print them (tests/cases
    node-gaps64g-ubuntuslurm4-..., node-gaps64g-nebius265-...) are the prolog's category; bash's 'command not found'
    of a program is a missing command, that of an option a broken line continuation left alone is not (tests/cases
    gpu-gaps60b-olora-...: 'scripts_llama/order_1.sh: line 45: --disable_tqdm: command not found')."""
    for text in ("srun: error: Task launch for 23.0 failed on node hpc: Job prolog failed",
                 "srun: error: Application launch failed: Job prolog failed",
                 "slurmstepd: error: Prolog hung on node worker-X",
                 "salloc: Prolog failure on node k003-006",
                 "Prolog error         slurm     2018-05-17T01:05:47 hpc"):
        assert toolmsg.row_of(text)["category"] == "other:slurm-prolog-failed", text
    assert toolmsg.row_of("sudo: sh: command not found")["id"] == "shell-command-not-found"
    assert toolmsg.row_of("scripts_llama/order_1.sh: line 45: --disable_tqdm: command not found") is None
    assert lexicon.shape_of("scripts_llama/order_1.sh: line 45: --disable_tqdm: command not found") is not None
    assert toolmsg.row_of("salloc: Job allocation 5 has been revoked.") is None
    assert toolmsg.row_of("[2019-03-26T16:56:05.014] _run_prolog: prolog with lock for job 6 ran for 1 seconds") is None


def test_the_rdma_shared_device_plugins_empty_resource_names_the_rdma_device_and_a_nic_it_dropped_alone_nothing():
    """The RDMA shared device plugin's log (Mellanox/k8s-rdma-shared-dev-plugin issue 44): a resource served with no
    device names rdma_device_not_in_container; 'missing RDMA device spec' for a NIC, printed for every network device
    without RDMA before the selectors apply (tests/cases net-gaps68e-...), counts only beside it."""
    dropped = ('2023/09/02 06:23:37 error creating new device: "missing RDMA device spec for device 0000:ec:00.0, '
               'RDMA device \\"issm\\" not found"\n')
    empty = "2023/09/02 06:23:37 Warning: no Rdma Devices were found for resource hpc_shared_devices_h\n"
    assert tool_message.ID not in {d.id for d in _failing(log_inputs("plugin.log", dropped))}
    got = _failing(log_inputs("plugin.log", dropped + empty))
    assert (got[0].id, got[0].category) == (tool_message.ID, "rdma_device_not_in_container"), \
        [(d.id, d.category) for d in got]


def test_the_device_plugins_start_up_lines_stay_quiet_beside_its_failures():
    """The NVIDIA device plugin's start-up and registration lines are printed by every working plugin (real:
    bottlerocket-os/bottlerocket#4250, a journal of nvidia-device-plugin; NVIDIA/k8s-device-plugin#1552); its failed
    platform detection names the runtime without GPU support (real: NVIDIA/k8s-device-plugin#1220)."""
    quiet = (
        "Oct 17 12:05:33 ip-xx-xx-x-xx.ec2.internal nvidia-device-plugin[1667]: I1017 12:05:33.299855    1667 "
        "server.go:216] Starting GRPC server for 'nvidia.com/gpu'",
        "Oct 17 12:05:33 ip-xx-xx-x-xx.ec2.internal nvidia-device-plugin[1667]: I1017 12:05:33.312453    1667 "
        "server.go:154] Registered device plugin for 'nvidia.com/gpu' with Kubelet",
        "I1204 07:31:31.764189       1 main.go:238] Starting FS watcher for /var/lib/kubelet/device-plugins",
    )
    for line in quiet:
        assert toolmsg.row_of(line) is None and lexicon.shape_of(line) is None, line
    failed = ("E0506 17:45:45.442750       1 main.go:173] error starting plugins: error getting plugins: unable to "
              "create plugins: failed to construct resource managers: invalid device discovery strategy")
    assert toolmsg.row_of(failed)["id"] == "k8s-device-plugin-incompatible-strategy"


# Real lines of Slurm's own failures, each as posted in a public thread (the address beside it), and routine lines of
# working steps beside them.
SLURM_REAL = {
    "https://github.com/ai4d-iasc/trixie/issues/45": (
        "[2020-12-14T09:44:56.002] [63532.0] error: *** STEP 63532.0 STEPD TERMINATED ON cn106 AT 2020-12-14T09:44:56 "
        "DUE TO JOB NOT ENDING WITH SIGNALS ***", "other:slurm-unkillable-step"),
    "https://github.com/Azure/cyclecloud-slurm/issues/412": (
        "error: Node configuration differs from hardware: CPUs=4:8(hw) Boards=1:1(hw) SocketsPerBoard=2:1(hw) "
        "CoresPerSocket=1:4(hw) ThreadsPerCore=2:2(hw)", "other:slurm-node-config-differs"),
    "https://github.com/koesterlab/setup-slurm-action/issues/4": (
        "[2023-11-09T22:49:00.525] error: Node configuration differs from hardware: CPUs=2:4(hw) Boards=1:1(hw) "
        "SocketsPerBoard=1:1(hw) CoresPerSocket=2:2(hw) ThreadsPerCore=1:2(hw)", "other:slurm-node-config-differs"),
    "https://github.com/pyiron/executorlib/pull/761": (
        "srun: error: Invalid MPI type 'pmix', --mpi=list for acceptable types", "other:slurm-mpi-plugin-unavailable"),
    "https://github.com/geoschem/geos-chem/issues/822": (
        'srun: error: "--mpi=pmix" -- long invalid MPI type, --mpi=list for acceptable types.',
        "other:slurm-mpi-plugin-unavailable"),
    "https://github.com/geoschem/geos-chem/issues/822#plugin": (
        "srun: error: Couldn't find the specified plugin name for mpi/pmix looking at all files",
        "other:slurm-mpi-plugin-unavailable"),
    "https://github.com/SergioMEV/slurm-for-dummies/issues/15": (
        "Aug 18 20:57:02 computen1 slurmd[8713]: slurmd: error: MPI: Cannot create context for mpi/pmix",
        "other:slurm-mpi-plugin-unavailable"),
    "https://github.com/SergioMEV/slurm-for-dummies/issues/15#pmix": (
        "Aug 18 20:57:02 computen1 slurmd[8713]: slurmd: error:  mpi/pmix_v4: init: (null) [0]: mpi_pmix.c:193: "
        "pmi/pmix: can not load PMIx library", "other:slurm-mpi-plugin-unavailable"),
}

# Routine lines of working steps (llnl/smith#688, fractal-analytics-platform/fractal-server#2835,
# giovtorres/docker-centos7-slurm#45): srun waiting for its step or its allocation, and the step it created.
SLURM_ROUTINE = (
    "53: srun: Job 9479148 step creation temporarily disabled, retrying (Requested nodes are busy)",
    "29: srun: Job 9479148 step creation still disabled, retrying (Requested nodes are busy)",
    "srun: Step created for StepId=23547409.1",
    "srun: job 1 queued and waiting for resources",
)


def test_slurms_real_failures_name_their_cause_and_its_routine_lines_stay_quiet():
    """Each real line, pasted alone or behind a rank's or a node's prefix, names the cause it establishes: an
    unkillable step, a node whose hardware differs from slurm.conf, srun's MPI plugin that could not be loaded; srun's
    lines of a step that waits or was created are read by no row and make no diagnosis."""
    for url, (line, category) in SLURM_REAL.items():
        for prefix in ("", "[rank3]: ", "node7: "):
            top = _failing(log_inputs("job.out", prefix + line + "\n"))[0]
            assert (top.id, top.category, top.severity) == (tool_message.ID, category, "fail"), (url, prefix)
    for line in SLURM_ROUTINE:
        assert toolmsg.row_of(line) is None and lexicon.shape_of(line) is None, line
    assert _failing(log_inputs("job.out", "\n".join(SLURM_ROUTINE) + "\n")) == []


def test_nvshmems_refused_gpu_memory_registration_names_the_missing_peer_memory_module():
    """NVSHMEM's IB transport refusing to register its symmetric heap (real: Azure/azhpc-images#316, tests/cases
    node-gaps82b-azhpcimages316-*: an AlmaLinux 8.7 HPC image without nv_peer_mem or nvidia-peermem) names the missing
    peer-memory module, the error lines it unwound through after it; NVSHMEM's warning of a transport it could not
    start beside a run that worked (real: tests/cases gpu-gaps64d-zenn-nvshmem-ring-*) and a host buffer pool's
    registration in another file are no line of the row."""
    text = ("src/comm/transports/common/transport_ib_common.cpp:58: NULL value mem registration failed\n"
            "src/comm/transports/ibrc/ibrc.cpp:486: non-zero status: 2 Unable to register memory handle.src/mem/mem.cpp:349: "
            "non-zero status: 7 transport get memhandle failed\n"
            "src/mem/mem.cpp:604: non-zero status: 7 register heap handle failed\n"
            "src/mem/mem.cpp:622: non-zero status: 7 add physical memory failed\n")
    for prefix in ("", "[1,0]<stderr>:"):
        got = _failing(log_inputs("job.out", "".join(prefix + line + "\n" for line in text.splitlines())))
        assert (got[0].id, got[0].category) == (tool_message.ID, "peermem_missing"), [(d.id, d.category) for d in got]
    for line in ("WARN: init failed for remote transport: ibrc",
                 "src/modules/transport/ibrc/ibrc.cpp:448: NULL value mem registration failed "):
        assert toolmsg.row_of(line) is None, line


def test_open_mpi_asked_for_cuda_without_it_names_the_build_and_its_notices_stay_quiet():
    """Open MPI's '[no cuda support]' help text (real: conda-forge/openmpi-feedstock#83 and #203, tests/cases
    net-gaps81d-openmpifeedstock83-* and -203-*) names a library built without CUDA support, each of its two lines
    behind a rank's prefix; the notice conda-forge's package prints at install (real: alibaba/lightweight-neural-
    architecture-search#24) and ompi_info's build flag read true are no failure."""
    text = ("--------------------------------------------------------------------------\n"
            "The user requested CUDA support with the --mca mpi_cuda_support 1 flag\n"
            "but the library was not compiled with any support.\n"
            "--------------------------------------------------------------------------\n")
    for prefix in ("", "[1,0]<stderr>:"):
        got = _failing(log_inputs("job.out", "".join(prefix + line + "\n" for line in text.splitlines())))
        assert (got[0].id, got[0].category) == (tool_message.ID, "other:mpi-built-without-cuda-support"), \
            [(d.id, d.category) for d in got]
    assert toolmsg.row_of("but the library was not compiled with any support.")["id"] == "ompi-cuda-support-not-compiled"
    quiet = (
        "For Linux 64, Open MPI is built with CUDA awareness but this support is disabled by default.",
        "To enable it, please set the environment variable OMPI_MCA_opal_cuda_support=true before",
        "mpiexec --mca opal_cuda_support 1 ...",
        "mca:mpi:base:param:mpi_built_with_cuda_support:value:true",
    )
    for line in quiet:
        assert toolmsg.row_of(line) is None and lexicon.shape_of(line) is None, line


def test_sglangs_ci_clean_up_names_a_gpu_held_by_an_orphaned_process_and_its_retries_and_pass_stay_quiet():
    # sgl-project/sglang#24928: the job's killall step on a B200 runner, its GPU 3 held by an earlier job's scheduler
    failed = ("ERROR: memory >=10%: GPU 3 (54%)\n"
              "Orphaned CUDA contexts after 100s \u2014 container needs restart.\n"
              "FAIL \u2014 Aborting CI\n")
    got = [d for d in diagnose(log_inputs("job.log", failed)) if d.severity == "fail"]
    assert got and got[0].category == "other:gpu-memory-held-by-orphaned-process", got
    # killall.py's retry line while it waits, and the box of a runner whose GPUs came clean (python/sglang/cli/
    # killall.py at 016f96e5: '[killall] GPUs still dirty at {elapsed}s [...], retrying in {retry_interval}s ...',
    # 'PASS \u2014 GPUs clean')
    quiet = ("[killall] GPUs still dirty at 10s [GPU 3 (54%)], retrying in 10s (20/100s)...\n"
             "\u2502 Check at 20s: GPUs clean \u2502\n"
             "\u2502 PASS \u2014 GPUs clean \u2502\n")
    for line in quiet.splitlines():
        assert toolmsg.row_of(line) is None and lexicon.shape_of(line) is None, line


def test_a_gpu_nodes_driver_installation_failures_name_their_cause_and_its_routine_lines_stay_quiet():
    """Real lines, each as posted: modprobe that finds no NVIDIA module for the running kernel (Witko/nvidia-xrun#135,
    compiler-explorer/infra#1413), DKMS without the kernel's headers (emilyst/hid-nx-dkms#20,
    M-Bab/linux-kernel-amdgpu-binaries#58) and NVIDIA's installer stopped by nouveau (microsoft/pai#2962) name their
    categories; another module modprobe does not find is no NVIDIA module's; the lines DKMS and the installer print
    on a working node (Mellanox/nv_peer_memory#8 and #113, Fred78290/nct6687d#94, pytorch/pytorch#88352) are read
    by no row."""
    named = {
        "modprobe: FATAL: Module nvidia not found in directory /lib/modules/5.2.13-200.fc30.x86_64":
            "other:nvidia-module-not-installed-for-kernel",
        "modprobe: FATAL: Module nvidia_drm not found in directory /lib/modules/5.2.13-200.fc30.x86_64":
            "other:nvidia-module-not-installed-for-kernel",
        "Startup `modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.8.0-1015-aws`":
            "other:nvidia-module-not-installed-for-kernel",
        "Error! Your kernel headers for kernel 4.16.3+ cannot be found.": "other:kernel-module-build-failed",
        "Error! Your kernel headers for kernel 6.6.15-amd64 cannot be found at /lib/modules/6.6.15-amd64/build or "
        "/lib/modules/6.6.15-amd64/source.": "other:kernel-module-build-failed",
        "ERROR: The Nouveau kernel driver is currently in use by your system": "other:nouveau-holds-gpu",
    }
    for line, category in named.items():
        for prefix in ("", "node7: ", "Dec 07 10:00:01 gpu01 kernel: "):
            row = toolmsg.row_of(prefix + line)
            assert row is not None and row["category"] == category, (prefix, line)
        top = _failing(log_inputs("install.log", line + "\n"))[0]
        assert (top.id, top.category, top.severity) == (tool_message.ID, category, "fail"), line
    # written for this test: modprobe's same words for a module that is not the GPU driver's
    assert toolmsg.row_of("modprobe: FATAL: Module loop not found in directory /lib/modules/6.8.0-45-generic") is None
    for line in ("DKMS: install completed.", "Secure Boot not enabled on this system.",
                 "Signing module /var/lib/dkms/nct6687d/1/build/nct6687.ko",
                 "   - Installing to /lib/modules/6.8.4-2-pve/updates/dkms/",
                 "WARNING: The nvidia-drm module will not be installed. As a result, DRM-KMS will not function with "
                 "this installation of the NVIDIA driver."):
        assert toolmsg.row_of(line) is None and _failing(log_inputs("install.log", line + "\n")) == [], line


def test_ldds_library_not_found_names_a_missing_shared_library_and_its_resolved_lines_stay_quiet():
    """ldd's '<library> => not found' (glibc elf/rtld.c) is a library the loader does not find: the program cannot
    start. The lines are Red Hat Bugzilla 434805's, an MPI program after an openmpi-libs upgrade, as posted (spaces
    for ldd's tab), and the same program's libraries resolved before it ('Expected results'), which no row reads."""
    for line in ("       libmpi.so.0 => not found", "       libopen-rte.so.0 => not found",
                 "       libopen-pal.so.0 => not found"):
        for prefix in ("", "node7: "):
            row = toolmsg.row_of(prefix + line)
            assert row is not None and row["id"] == "ldd-shared-library-not-found", (prefix, line)
        top = _failing(log_inputs("ldd.txt", "ldd test.out\n" + line + "\n"))[0]
        assert (top.id, top.category, top.severity) == (tool_message.ID, "other:shared-library-missing", "fail")
    for line in ("ldd test.out",
                 "       libmpi.so.0 => /usr/lib64/openmpi/1.2.3-gcc/libmpi.so.0 (0x0000002a95580000)",
                 "libopen-rte.so.0 => /usr/lib64/openmpi/1.2.3-gcc/libopen-rte.so.0 (0x0000002a95713000)"):
        assert toolmsg.row_of(line) is None and _failing(log_inputs("ldd.txt", line + "\n")) == [], line


def test_dpkgs_package_left_unconfigured_names_a_dependency_conflict_and_its_routine_lines_stay_quiet():
    """dpkg's 'dependency problems prevent configuration of <package>:' (src/main/configure.c) and its closing
    'dependency problems - leaving unconfigured': the package is left unconfigured. The lines are Debian bug 898055's
    (ibverbs-providers for amd64 and i386), with the transcript's routine lines, which no row reads."""
    for line in ("dpkg: dependency problems prevent configuration of ibverbs-providers:i386:",
                 " dependency problems - leaving unconfigured"):
        for prefix in ("", "node7: "):
            row = toolmsg.row_of(prefix + line)
            assert row is not None and row["id"] == "dpkg-dependency-problems-prevent-configuration", (prefix, line)
        top = _failing(log_inputs("apt.txt", line + "\n"))[0]
        assert (top.id, top.category, top.severity) == (tool_message.ID, "other:package-dependency-conflict", "fail")
    # written for this test: dpkg configuring anyway under --force-depends, which is no failure
    for line in ("Unpacking ibverbs-providers:i386 (17.1-1) ...", "Processing triggers for libc-bin (2.27-3) ...",
                 " ibverbs-providers:amd64 (17.1-1) breaks libmlx5-1 and is installed.",
                 "dpkg: ibverbs-providers:i386: dependency problems, but configuring anyway as you requested:"):
        assert toolmsg.row_of(line) is None and _failing(log_inputs("apt.txt", line + "\n")) == [], line


def test_training_launchers_refusals_name_their_cause_and_their_routine_lines_stay_quiet():
    """Real lines, each as posted: accelerate launch finding its port taken (vision-x-nyu/thinking-in-space#22), Ray's
    autoscaler with a request no node can hold (real-stanford/scalingup#6, rllm-org/rllm#35) and the Trainer's bf16 on
    a GPU without it (tatsu-lab/stanford_alpaca#133, zai-org/GLM-Edge#20) name their categories; the newer Trainer's
    words on a machine with no usable GPU, and the lines these launchers print in a working run (DeepSpeed's start-up,
    accelerate launch's defaults, Ray's start-up), are read by no row."""
    named = {
        "Tried to launch distributed communication on port `29500`, but another process is utilizing it. Please "
        "specify a different port (such as using the `--main_process_port` flag or specifying a different "
        "`main_process_port` in your config file) and rerun your script. To automatically use the next open port (on "
        "a single node), you can set this to `0`.": "rendezvous_unreachable",
        "(autoscaler +32s) Error: No available node types can fulfill resource request {'CPU': 1.0, 'GPU': 1.0}. Add "
        "suitable node types to this cluster to resolve this issue.": "other:ray-resource-request-infeasible",
        "(autoscaler +34s) Error: No available node types can fulfill resource request defaultdict(<class 'float'>, "
        "{'CPU': 8.0, 'GPU': 8.0}). Add suitable node types to this cluster to resolve this issue.":
            "other:ray-resource-request-infeasible",
        "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0":
            "other:bf16-needs-ampere-gpu",
        "ValueError: Your setup doesn't support bf16/gpu. You need Ampere+ GPU with cuda>=11.0":
            "other:bf16-needs-ampere-gpu",
    }
    for line, category in named.items():
        for prefix in ("", "[rank3]: ", "node7: "):
            row = toolmsg.row_of(prefix + line)
            assert row is not None and row["category"] == category, (prefix, line)
        top = _failing(log_inputs("job.out", line + "\n"))[0]
        assert (top.id, top.category, top.severity) == (tool_message.ID, category, "fail"), line
    # the newer Trainer's words where torch sees no CUDA device (huggingface/transformers training_args.py since
    # 'You need to assign use_cpu'): no GPU at all, not a GPU without bf16
    assert toolmsg.row_of("ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want "
                          "to train the model on CPU.") is None
    for line in ("[2020-12-24 16:25:13,160] [WARNING] [runner.py:117:fetch_hostfile] Unable to find hostfile, will "
                 "proceed with training with local resources only.",
                 "[2022-04-28 04:19:02,153] [INFO] [launch.py:116:main] dist_world_size=8",
                 "The following values were not passed to `accelerate launch` and had defaults used instead:",
                 "2025-03-06 14:19:18,166\tINFO worker.py:1841 -- Started a local Ray instance."):
        assert toolmsg.row_of(line) is None and _failing(log_inputs("job.out", line + "\n")) == [], line


def test_lmods_failed_loads_name_the_module_not_loaded_and_its_routine_reloads_stay_quiet():
    """Lmod's answer to a load that loaded nothing (real: ai4d-iasc/trixie#70, a Spack module without the tree's own
    module; TACC/Lmod#828, NCCL and OpenMPI under a compiler level not loaded) names the module not loaded, pasted alone
    or behind a rank's or a node's prefix; the reloads Lmod prints for a load that worked (real: CSCfi/pytorch-ddp-
    examples#1) are read by no row and make no diagnosis."""
    for row_id in ("lmod-module-unknown", "lmod-module-exists-cannot-be-loaded"):
        for prefix in ("", "[rank3]: ", "node7: "):
            top = _failing(log_inputs("job.err", prefix + PRINTED[row_id] + "\n"))[0]
            assert (top.id, top.category) == (tool_message.ID, "other:environment-module-not-loaded"), (row_id, prefix)
    routine = ("Due to MODULEPATH changes, the following have been reloaded:",
               "  1) openblas/0.3.18-omp     2) openmpi/4.1.2",
               "The following have been reloaded with a version change:",
               "  1) gcc/11.2.0 => gcc/9.4.0")
    for line in routine:
        assert toolmsg.row_of(line) is None and lexicon.shape_of(line) is None, line
    assert _failing(log_inputs("job.out", "\n".join(routine) + "\n")) == []
