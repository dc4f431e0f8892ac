"""The categories a diagnosis names: what kind of cause it is (one word per cause, as failure reports use them).

Every diagnosis carries one. ``unexplained`` is the verdict on a run that
failed for a reason no cause of the catalog recognised: it cites the first
failing evidence and the command that would tell more.
"""
from __future__ import annotations

import re
from typing import Dict

CATEGORIES: Dict[str, str] = {
    "shm_too_small": "/dev/shm too small or full (a container's default is 64 MB)",
    "fabric_manager": "NVIDIA Fabric Manager not running, failed, restarted without a GPU reset, or not matching "
                      "the driver",
    "nvls_multicast": "NVLink SHARP / multicast set-up failing for another reason (IMEX channel, CUDA multicast "
                      "support, an NCCL defect)",
    "gpu_lost_xid": "a GPU lost or broken: Xid 79 and the like, fallen off the bus, a GPU that needs a reset",
    "gpu_ecc_rowremap": "GPU memory errors: uncorrectable ECC, row remapping pending or failed",
    "pcie_link_aer": "PCIe AER errors, a link trained below its width or speed, replays",
    "peermem_missing": "GPUDirect RDMA unavailable: the peer-memory module is not loaded",
    "peermem_build_mismatch": "the peer-memory module built against another RDMA stack or kernel",
    "gdr_unused": "GPUDirect RDMA not used for another reason (GPU-NIC distance, NCCL settings, DMA-BUF)",
    "acs_iommu_p2p": "PCIe ACS redirection or IOMMU translation breaking or slowing GPU peer traffic",
    "p2p_unsupported_gpu": "GPUs whose driver refuses peer-to-peer (consumer cards): P2P must not be used",
    "ib_port_down": "an InfiniBand/RoCE port down, polling, disabled, flapping, or at a degraded rate",
    "rdma_device_not_in_container": "the RDMA devices or the rights to use them not given to the container or pod",
    "ib_qp_timeout_routing": "RDMA connections timing out: NICs that cannot reach each other (rail-only fabric, "
                             "routing, cabling, cross-NIC)",
    "roce_gid_config": "a RoCE GID table, index, version or address that NCCL cannot use",
    "ib_completion_error": "IB work completions with an error status (local protection, remote access, ...)",
    "rdma_nic_unsupported": "an RDMA NIC that this NCCL or plugin does not support properly",
    "net_plugin": "a network plugin (aws-ofi-nccl/EFA, IBext, ...) failing to load or initialise, or differing "
                  "across nodes",
    "socket_ifname_wrong": "the bootstrap or socket interface wrong, missing, or unreachable",
    "hostname_resolution": "host names resolving to loopback or not at all",
    "firewall_ports": "ports blocked between nodes",
    "version_mismatch": "NCCL, plugin or library versions differing across nodes",
    "nccl_too_old_for_gpu": "an NCCL (or a build of it) without support for the GPU architecture",
    "duplicate_gpu_rank": "two ranks on one GPU",
    "cuda_driver_mismatch": "CUDA runtime, driver or library versions that do not fit together",
    "gpu_out_of_memory": "NCCL or the job running out of GPU memory",
    "rank_hang_timeout": "a rank hung or slow, caught by a watchdog or a timeout: a collective some ranks never "
                         "joined, or a timeout shorter than the work",
    "mtu_mismatch": "MTU differing along the path",
    "memlock_limit": "the locked-memory limit too low for RDMA",
    "nccl_env_misconfig": "an NCCL environment variable set wrong, or set differently on some nodes",
    "rendezvous_unreachable": "the rendezvous (MASTER_ADDR and port, the c10d store) wrong or unreachable",
    "duplicate_hostname": "different hosts with the same host name, taken by NCCL for one host",
    "remote_peer_failure": "this rank is a victim: a peer rank died or its node's network failed",
    "hca_firmware": "HCA firmware too old, mismatched or failing",
    "nccl_bug": "a defect of NCCL itself, fixed in a later version",
    "unexplained": "a failure no cause of the catalog recognised: its evidence, and what would tell more",
}


OTHER = re.compile(r"^other:[a-z0-9][a-z0-9-]*$")  # a cause outside the list, named by its slug


def check(category: str) -> str:
    """``category`` if it is known (or ``other:<slug>``), else ValueError (a rule's typo must not reach a report)."""
    if category not in CATEGORIES and not OTHER.match(category):
        raise ValueError(f"unknown diagnosis category {category!r}")
    return category
