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


#: The outcomes that also break a hard invariant: a failed run given no fail/warn diagnosis (and
#: exit 0), or a healthy run given one.
INVARIANT_BROKEN = ("false all-clear", "false alarm")

KNOWN_GAPS: Dict[str, Gap] = {
    "gpu-bloom176b-logbook-default3-watchdog-cuda-unknown-error": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, a C++ program (a rank, PyTorch's "
        "NCCL watchdog thread) ended on an exception nobody caught: [default3]:terminate called after "
        "throwing an instance of ; not read as its cause: a rank's fatal 'terminate called after throwing an "
        "instance of c10::CUDAError' / 'CUDA error: unknown error' raised in ProcessGroupNCCL's watchdog "
        "(workCleanupLoop) behind '[default3]:' prefixes, with no NCCL line in the file, is not read as a "
        "failure"),
    "gpu-bloom176b-logbook-eval-hang-no-timeout-dataloader-deadlock": Gap(
        "false all-clear",
        "'Verdict: nothing to judge: the input holds no NCCL line, error or result', exit 0: a job log whose "
        "iteration lines stop and whose monitor then prints only 'PULSE: ... is running for 1-09:27:40' for "
        "hours (a run that did not finish) is not read as a hang"),
    "gpu-cloudatlas-vm-passthrough-nvrm-bar0-invalid-pcihole64-realloc": Gap(
        "wrong cause",
        "'FAIL GPU lost or needing a reset' (gpu_lost_xid) from 'NVRM: The NVIDIA probe routine failed'; the "
        "line that names the cause, 'NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:' "
        "with its continuation 'BAR0 is 0M @ 0x0', is not read as an unassigned BAR (pcie_bar_mmio)"),
    "gpu-mlengineering-dcgmi-deployment-error-uncorrectable-remap-pending": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, a GPU counts uncorrectable memory"
        " errors, or has row remappings pending (nvidia-smi -q, dcgmi): | Error | GPU 3 has uncorrectable ; "
        "not read as its cause: a dcgmi diag table row 'Error | GPU 3 has uncorrectable memory errors and row"
        " remappings are pending' (wrapped over two table rows) is not read"),
    "gpu-mlengineering-dcgmi-diag-r2-gpu-memory-fail-faulty-node": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, a row of a DCGM diagnostic table "
        "(dcgmi diag) that failed: | | Fail - GPU: 0 |; not read as its cause: a dcgmi diag -r 2 table with "
        "'GPU Memory | Fail - GPU: 0' and a thermal-violation warning is not read"),
    "gpu-mlengineering-nvidia-smi-grep-sram-uncorrectable-broken-gpu": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, a GPU counts uncorrectable memory"
        " errors, or has row remappings pending (nvidia-smi -q, dcgmi): SRAM Uncorrectable : 1; not read as "
        "its cause: a '$ nvidia-smi -q | grep -i correctable | grep -v 0' transcript ('SRAM Uncorrectable : "
        "1' / ': 5') and the 'ECC Errors' record pasted to nccldiag log are not read (the nvidia-smi -q "
        "parser serves bundles only)"),
    "net-bloom-jz-ops-notes-connect-refused-broken-node-network": Gap(
        "wrong cause",
        "'FAIL Connections between nodes blocked on r11i6n2' (firewall_ports) from 'Connect to "
        "10.148.3.247<56821> failed : Connection refused'; that one peer refusing while the rest answer is a "
        "broken peer node (remote_peer_failure), which the nslookup line names, is not weighed"),
    "net-gitcode-blog-vllm-3x4090-socket-connect-abort-spare-server-ifname": Gap(
        "missed",
        "'FAIL Unexplained failure on jnlh102072': 'socketStartConnect: Connect to 10.37.12.78<46417> failed : "
        "Software caused connection abort' toward an address in another subnet than the node's is not "
        "read as a wrong or inconsistent bootstrap interface"),
    "net-mlengineering-azure-ib-error12-nodes-not-in-availability-set": Gap(
        "wrong cause",
        "'FAIL RoCE GID table or selection unusable on node-2' (roce_gid_config) for completion error 12 "
        "(retry exceeded) on a node whose NET/IB line lists an IB port first: two VMs whose IB fabrics are "
        "not connected (ib_qp_timeout_routing) are taken for a RoCE GID problem"),
    "node-cloudatlas-dl360-tesla-p10-bios-option-card-mmio-large-bar": Gap(
        "missed",
        "'WARN Unexplained failure', exit 1: a line of the failure lexicon, a program says an error happened "
        "('error:', 'ERROR', 'FATAL'): 276 Option Card Configuration Error. An option card is requesting more"
        " memory; not read as its cause: the BIOS POST message '276 Option Card Configuration Error. An "
        "option card is requesting more memory mapped I/O than is available.' is not read"),
    "node-funloop-blog-arch-nvrm-api-mismatch-versions-elided": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, the NVIDIA kernel driver reports "
        "a failure (API mismatch, a GPU it cannot initialise, a BAR it cannot use, a GPU that stopped "
        "answering): NVRM: API mi; not read as its cause: the kernel's 'NVRM: API mismatch: the client has "
        "the version XXX.XX, but' / 'NVRM: this kernel module has the version YYY.YY.' (versions elided by "
        "the author) is not read"),
    "node-wanpihou-blog-driver-library-mismatch-dkms-transcript": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, the NVIDIA kernel driver reports "
        "a failure (API mismatch, a GPU it cannot initialise, a BAR it cannot use, a GPU that stopped "
        "answering): # NVRM: API ; not read as its cause: a shell transcript in which each command's output "
        "is quoted behind '# ' ('# Failed to initialize NVML: Driver/library version mismatch', '# NVRM: API "
        "mismatch: client version 570.133.07, kernel module version 570.124.06') is not read"),
    "net-llmd191-grep-prefixed-nccl-ib-async-port-error-flap-tp-crash": Gap(
        "missed",
        "fail unexplained unexplained: NCCL printed 3 WARN line(s) without an error result: NET/IB : mlx5_32:"
        "1 Got async error event: port error"),
    "node-awspc1150-messages-grep-nfs-not-responding-hung-task": Gap(
        "missed",
        "'WARN Unexplained failure', exit 1: a line of the failure lexicon, the kernel's hung-task detector: "
        "a task stuck in the kernel (D state) for minutes: messages:Jun 17 20:18:08 ip-172-31-27-211 kernel: "
        "INFO: task strat1"),
    "node-azhpcimages506-nvidia-smi-q-fabric-insufficient-resources-clique0": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, a GPU's NVLink fabric "
        "registration did not succeed ('Fabric / Status' of nvidia-smi -q): Status : Insufficient Resources"),
    "node-gpud482-ibstat-port-down-polling-anonymised-guids": Gap(
        "missed",
        "'WARN Unexplained failure', exit 1: a line of the failure lexicon, an InfiniBand or RoCE port is "
        "down (ibstat, ibstatus): State: Down"),
    "node-gpuoperator492-vm-bar1-0m-nvidia-probe-failed-2-gpus": Gap(
        "wrong cause",
        "fail gpu_lost_xid gpu-lost: a GPU is lost or needs a reset: [83260.106438] NVRM: The NVIDIA probe ro"
        "utine failed for 2 device(s)."),
    "node-kata13471-nvrc-panic-timeout-fm-starting-nvlink-inband-h200": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, a kernel, a Go or a Rust program "
        "panicked, or the kernel hit a bug: [ 212.870394] NVRC panic: panicked at src/kmsg.rs:95:13:"),
    "node-ogkm510-6x4090-bar15-no-space-rebar-5-of-6": Gap(
        "missed",
        "'FAIL Unexplained failure', exit 1: a line of the failure lexicon, PCI memory space (a BAR, MMIO) "
        "could not be assigned to a device: [ 1.165962] pcieport 0000:00:1d.4: BAR 15: no space for [mem size"
        " 0xc00000000 64b"),
    "node-talosext511-fabricmanager-node-config-file-invalid-h200": Gap(
        "missed",
        "'WARN Unexplained failure', exit 1: a line of the failure lexicon, a program says an error happened "
        "('error:', 'ERROR', 'FATAL'): <node ip>: fabric manager config file item: FABRIC_NODE_CONFIG_FILE "
        "has an invalid valu"),
    "node-vllm40652-talos-host-prefixed-xid74-nvlink-fatal-gsp-timeout": Gap(
        "wrong cause",
        "fail gpu_lost_xid gpu-lost: a GPU is lost or needs a reset: 192.168.11.119: kern: warning: [2026-04-"
        "22T21:26:20.695845708Z]: NVRM: Xid (PCI:0000:48:00): 154, GPU recovery action changed from 0x0 (None"
        ") to 0x1 (GPU Reset ..."),
}
