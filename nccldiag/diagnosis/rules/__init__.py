"""The diagnosis rules, one module each, in the order reports list them at equal severity.

A rule module has ``ID``, ``TITLE`` and ``diagnose(inputs) -> [Diagnosis]``
(pure; :class:`~nccldiag.diagnosis.inputs.Inputs` in). ``docs/diagnoses.md``
describes each; a test fails until every ``ID`` is documented there.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import List

RULE_MODULES = (
    # GPUs and the node under them
    "gpu_lost",
    "gpu_memory_errors",
    "fabric_manager",
    "nvls_multicast",
    "nccl_too_old",
    "cuda_driver",
    "gpu_oom",
    "duplicate_gpu",
    "pcie_link",
    "p2p_broken",
    "acs_iommu",
    "p2p_unsupported",
    "no_p2p",
    "shm",
    "memlock",
    "killed_signal",
    # RDMA
    "peermem_build",
    "peermem_missing",
    "rdma_hidden",
    "ib_port",
    "gid_index_forced",
    "roce_gid",
    "rdma_nic_unsupported",
    "mtu_mismatch",
    "ib_completion",
    "ib_timeout",
    "hca_firmware",
    "net_plugin",
    "ib_sockets",
    "gdr",
    # sockets, names, the rendezvous, settings
    "slurm_step",
    "socket_ifname_env",
    "socket_interface",
    "interface",
    "hostname",
    "rendezvous",
    "firewall",
    "collective_mismatch",
    "duplicate_hostname",
    "versions",
    "ring_mismatch",
    "nccl_defect",
    "nccltests_no_mpi",
    "nccl_env",
    # symptoms and victims: the causes above explain them when they fit
    "remote_peer",
    "hang",
    "bandwidth",
)


def all_rules() -> List[ModuleType]:
    return [importlib.import_module(f"nccldiag.diagnosis.rules.{m}") for m in RULE_MODULES]
