"""Bundles assembled from the captured fixtures, for end-to-end tests of ``check --bundle``.

A bundle node is ``{source name: text}``; most texts are real outputs read in
place from ``../shared/fixtures/node`` (see ``tests/real.py``), each placed as the ``<source>.txt`` of the
area that reads that command's output. A few sources have no captured output
in the fixtures (the system area's small commands, the ulimit snippet's own
lines, a ``--query-gpu`` CSV of an 8x H100 node): those are built here and
marked ``CONSTRUCTED``, not captured.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional

from click.testing import CliRunner

from nccldiag.cli import main
from nccldiag import bundle
from nccldiag.model.raw import RawNode
from tests import real

Node = Dict[str, str]


def fixture(rel: str) -> str:
    """The text of a real capture, relative to ``../shared/fixtures/node`` (skips the test where absent)."""
    return real.node_text(rel)


def fixtures(*rels: str) -> str:
    """Several fixture files one after the other (parts of one capture)."""
    return "".join(fixture(r).rstrip("\n") + "\n" for r in rels)


# ---- constructed outputs (no fixture captured these commands) ------------------------------------


def system_sources(host: str, addr: str) -> Node:
    """CONSTRUCTED: the system area's small commands (hostname, uname, ip, getent) for one node."""
    return {
        "hostname": f"{host}\n{host}.cluster.example\n",
        "uname": "Linux 5.15.0-105-generic x86_64\n",
        "os_release": 'NAME="Ubuntu"\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n',
        "cpuinfo": "model name\t: Intel(R) Xeon(R) Platinum 8480+\nprocessors: 224\n",
        "meminfo": "MemTotal:       2113500000 kB\nMemAvailable:   2000000000 kB\nHugePages_Total:       0\n",
        "ip_addr": f"1: lo    inet 127.0.0.1/8 scope host lo\n2: eth0    inet {addr}/24 brd 10.0.0.255 scope global eth0\n",
        "ip_link": (
            "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT\n"
            "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT\n"
        ),
        "resolve_self": f"{addr}\n",
    }


def h100_query_csv(driver: str = "535.183.01", gpus: int = 8) -> str:
    """CONSTRUCTED: ``nvidia-smi --query-gpu`` CSV of an 8x H100 SXM node (no fixture captured one).

    The bus ids are those of a Dell 8x H100 HGX board (GPU0 at 19:00.0 as in
    the lspci fixture); the driver matches the H100 ``nvidia-smi -q`` fixture.
    """
    bus = ("19", "3B", "4C", "5D", "9B", "BB", "CB", "DB")
    head = ("index, name, uuid, pci.bus_id, driver_version, memory.total [MiB], pcie.link.gen.current, "
            "pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, persistence_mode")
    rows = [
        f"{i}, NVIDIA H100 80GB HBM3, GPU-{i:08d}-0000-0000-0000-000000000000, 00000000:{bus[i]}:00.0, {driver}, "
        "81559 MiB, 5, 5, 16, 16, Enabled"
        for i in range(gpus)
    ]
    return "\n".join([head] + rows) + "\nnccldiag: rc=0\n"


def rtx5090_query_csv() -> str:
    """CONSTRUCTED: ``--query-gpu`` CSV of a 2x RTX 5090 workstation (matches the 2-GPU P2P fixture)."""
    head = ("index, name, uuid, pci.bus_id, driver_version, memory.total [MiB], pcie.link.gen.current, "
            "pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, persistence_mode")
    rows = [
        f"{i}, NVIDIA GeForce RTX 5090, GPU-5090000{i}-0000-0000-0000-000000000000, 00000000:0{i + 1}:00.0, 575.57.08, "
        "32607 MiB, 1, 5, 16, 16, Enabled"
        for i in range(2)
    ]
    return "\n".join([head] + rows) + "\nnccldiag: rc=0\n"


# CONSTRUCTED: the limits area's own ulimit snippet, as a node configured for RDMA prints it.
ULIMIT_UNLIMITED = (
    "memlock soft unlimited\nmemlock hard unlimited\nnofile soft 1048576\nnofile hard 1048576\n"
    "DefaultLimitMEMLOCK=infinity\n"
)


# ---- nodes -------------------------------------------------------------------------------------


def healthy_h100(host: str = "gpu001", addr: str = "10.0.0.11") -> Node:
    """A healthy 8x H100 SXM node with 8 NDR InfiniBand rails.

    Captured: lspci of the GPU0 path of a Dell H100 HGX (ACS off), ibstat and
    /sys/class/infiniband of an H100 node with 8 NDR ports and a bond, the
    H100 NV18 topology and all-OK P2P matrix, NVLink status, lsmod with
    nv_peer_mem, a KVM guest's IOMMU lines (no IOMMU: off), limits.conf with
    memlock unlimited, the performance governor.
    """
    node = system_sources(host, addr)
    node.update({
        "proc_cmdline": fixture("proc-cmdline/hotsos-openstack-vm-no-iommu-flags.txt"),
        "iommu_dmesg": fixture("dmesg-iommu/hotsos-kvm-guest-only-default-domain-line.txt"),
        "lspci": fixture("lspci/gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt"),
        "ib_sysfs": fixture("sysfs-infiniband/gpud-h100-ndr400-8ib-plus-bond-ethernet.txt"),
        "ibstat": fixture("ibstat/gpud-h100-ib-ndr-all-active-space-indented.txt"),
        "proc_modules": fixture("lsmod-modules/azhpc-lsmod-centos-nv_peer_mem-mlx5.txt"),
        "gpu_query": h100_query_csv(),
        "nvidia_smi_q": fixture("nvidia-smi-q/gpud-8x-h100-535-truncated-invalid.txt"),
        "nvlink_status": fixture("nvidia-smi-nvlink/mleng-h100-nvlink-status-elided.txt"),
        "topo_m": fixture("nvidia-smi-topo-m/mleng-8x-h100-nv18-spaces.txt"),
        "topo_p2p_r": fixture("nvidia-smi-topo-p2p/mleng-8x-h100-p2p-r-all-ok.txt"),
        "ulimit": ULIMIT_UNLIMITED,
        "limits_conf": fixture("limits-ulimit/azhpc-limits-conf-memlock-unlimited.txt"),
        "cpufreq": fixture("cpufreq-governor/hotsos245-policy-scaling-governor-performance-elided.txt"),
    })
    return node


def consumer_5090(host: str = "ws01", addr: str = "192.168.1.20") -> Node:
    """A 2x RTX 5090 workstation: no RDMA, P2P refused by the driver (GNS)."""
    node = system_sources(host, addr)
    node.update({
        "gpu_query": rtx5090_query_csv(),
        "topo_m": fixture("nvidia-smi-topo-m/aikitoria12-2x-rtx5070-phb-prompt-glued-to-header.txt"),
        "topo_p2p_r": fixture("nvidia-smi-topo-p2p/club3090-1229-2x-rtx5090-p2p-rw-gns-tabs.txt"),
        "cpufreq": fixture("cpufreq-governor/hotsos245-policy-scaling-governor-performance-elided.txt"),
    })
    return node


# ---- writing and checking -----------------------------------------------------------------------


def write_bundle(root: Path, nodes: Mapping[str, Node], areas: Optional[Iterable[str]] = None,
                 extra: Optional[Mapping[str, dict]] = None, errors: Optional[Mapping[str, dict]] = None) -> Path:
    """Write ``nodes`` as a bundle under ``root`` with the project's own bundle writer."""
    hosts = list(nodes)
    meta = {"transport": "ssh"}
    if areas is not None:
        meta["areas"] = list(areas)
    bundle.write_bundle_index(str(root), hosts, meta)
    for host, srcs in nodes.items():
        node = RawNode(
            host=host,
            sections=dict(srcs),
            rcs={name: 0 for name in srcs},
            error=(errors or {}).get(host),
            elapsed=0.5,
            extra=dict((extra or {}).get(host, {})),
        )
        bundle.write_node(str(root), node)
    return root


def check_json(bundle: Path, *args: str):
    """``nccldiag check --bundle DIR --json -``: (exit code, report dict)."""
    res = CliRunner().invoke(main, ["check", "--bundle", str(bundle), "--json", "-", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, json.loads(res.stdout)


def check_table(bundle: Path, *args: str):
    """``nccldiag check --bundle DIR --color never``: (exit code, the text printed)."""
    res = CliRunner().invoke(main, ["check", "--bundle", str(bundle), "--color", "never", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, res.stdout


def findings(report: dict, host: Optional[str] = None) -> List[dict]:
    return [f for n in report["nodes"] if host is None or n["host"] == host for f in n["findings"]]


def by_check(report: dict, check: str, host: Optional[str] = None) -> List[dict]:
    return [f for f in findings(report, host) if f["check"] == check]


def status_of(report: dict, check: str, host: Optional[str] = None) -> List[str]:
    """The statuses of one check id, in order (one per finding)."""
    return [f["status"] for f in by_check(report, check, host)]
