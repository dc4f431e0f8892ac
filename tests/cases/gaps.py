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
    "gpu-bloom176b-logbook-default3-watchdog-cuda-unknown-error": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: a rank's fatal 'terminate called after throwing an instance of "
        "c10::CUDAError' / 'CUDA error: unknown error' raised in ProcessGroupNCCL's watchdog "
        "(workCleanupLoop) behind '[default3]:' prefixes, with no NCCL line in the file, is not read as a failure"),
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
        "false all-clear",
        "'Verdict: nothing broken', exit 0: a dcgmi diag table row 'Error | GPU 3 has uncorrectable memory "
        "errors and row remappings are pending' (wrapped over two table rows) is not read"),
    "gpu-mlengineering-dcgmi-diag-r2-gpu-memory-fail-faulty-node": Gap(
        "false all-clear",
        "'Verdict: nothing broken', exit 0: a dcgmi diag -r 2 table with 'GPU Memory | Fail - GPU: 0' and a "
        "thermal-violation warning is not read"),
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
        "false all-clear",
        "'Verdict: nothing broken', exit 0: the BIOS POST message '276 Option Card Configuration Error. An "
        "option card is requesting more memory mapped I/O than is available.' is not read"),
    "node-funloop-blog-arch-nvrm-api-mismatch-versions-elided": Gap(
        "missed",
        "'FAIL Unexplained failure': the pasted kernel lines are read ('the NVIDIA kernel module and the "
        "user-space driver differ in version'), but no cause of the catalog takes a pasted kernel finding for "
        "the driver mismatch (cuda_driver_mismatch)"),
    "node-wanpihou-blog-driver-library-mismatch-dkms-transcript": Gap(
        "missed",
        "'FAIL Unexplained failure': 'nvidia-smi is installed but fails, and no GPU is listed', read from the "
        "transcript quoted behind '# '; no cause of the catalog takes the pasted nvidia-smi failure and the "
        "kernel's API mismatch for the driver mismatch (cuda_driver_mismatch)"),
    "net-llmd191-grep-prefixed-nccl-ib-async-port-error-flap-tp-crash": Gap(
        "missed",
        "fail unexplained unexplained: NCCL printed 3 WARN line(s) without an error result: NET/IB : mlx5_32:"
        "1 Got async error event: port error"),
    "node-awspc1150-messages-grep-nfs-not-responding-hung-task": Gap(
        "missed",
        "'WARN Unexplained failure': the grep-prefixed kernel lines are read (hung tasks, an unresponsive NFS "
        "server), but no cause of the catalog takes the pasted kernel finding for an I/O hang (io_hang); the "
        "kernel lines' finding is a warning, so the verdict warns and the CLI exits 0", True),
    "node-gpud482-ibstat-port-down-polling-anonymised-guids": Gap(
        "missed",
        "'FAIL Unexplained failure': the pasted ibstat is read ('mlx5_10 port 1 (InfiniBand): State Down, "
        "Physical state Polling'), but the ib_port_down rule names a pasted port only beside a log of a run "
        "that failed, and the paste is alone"),
    "node-gpuoperator492-vm-bar1-0m-nvidia-probe-failed-2-gpus": Gap(
        "wrong cause",
        "fail gpu_lost_xid gpu-lost: a GPU is lost or needs a reset: [83260.106438] NVRM: The NVIDIA probe ro"
        "utine failed for 2 device(s)."),
    "node-kata13471-nvrc-panic-timeout-fm-starting-nvlink-inband-h200": Gap(
        "false all-clear",
        "no fail/warn diagnosis; 'Verdict: nothing broken'"),
    "node-ogkm510-6x4090-bar15-no-space-rebar-5-of-6": Gap(
        "false all-clear",
        "no fail/warn diagnosis; 'Verdict: nothing broken'"),
    "node-talosext511-fabricmanager-node-config-file-invalid-h200": Gap(
        "false all-clear",
        "no fail/warn diagnosis; 'Verdict: nothing broken'"),
    "node-vllm40652-talos-host-prefixed-xid74-nvlink-fatal-gsp-timeout": Gap(
        "wrong cause",
        "fail gpu_lost_xid gpu-lost: a GPU is lost or needs a reset: 192.168.11.119: kern: warning: [2026-04-"
        "22T21:26:20.695845708Z]: NVRM: Xid (PCI:0000:48:00): 154, GPU recovery action changed from 0x0 (None"
        ") to 0x1 (GPU Reset ..."),
}
