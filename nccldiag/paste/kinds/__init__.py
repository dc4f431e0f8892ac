"""The kinds of node output a paste may hold, one module each (see :mod:`nccldiag.paste.kinds.base`), in the
order they are tried on a line: where two kinds could read the same lines, the one named first reads them."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import List

KINDS = (
    "ibstat",
    "ibstatus",
    "ibv_devinfo",
    "ibdev2netdev",
    "show_gids",
    "rdma_link",
    "netdev_link",
    "smi_table",
    "smi_error",
    "smi_q",
    "topo",
    "nvlink",
    "query_csv",
    "query_noheader",
    "smi_dmon",
    "kernel",
    "systemctl",
    "fabricmanager",
    "lspci",
    "lspci_tree",
    "iomem",
    "modinfo",
    "lsmod",
    "sysmodule",
    "ulimit",
    "ulimit_l",
    "proc_limits",
    "limits_conf",
    "df",
    "dkms",
    "dcgmi",
    "dcgmi_nvlink",
    "sysfs",
    "mlnx_qos",
    "sysctl",
    "cmdline",
    "cpufreq",
    "hca_tools",
    "ethtool",
    "perfquery",
    "iblinkinfo",
    "bugreport",
    "job_monitor",
    "pyspy",
    "ps",
    "python_env",
    "launch",
)


def all_kinds() -> List[ModuleType]:
    return [importlib.import_module(f"nccldiag.paste.kinds.{m}") for m in KINDS]
