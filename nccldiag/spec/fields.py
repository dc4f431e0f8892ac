"""The keys of a site spec: where each value is read from, and the check that compares it.

Every key is read from the facts the check areas already parse (no source of
its own): the same reading serves ``nccldiag spec init`` (the value a
reference node has) and ``nccldiag check --spec`` (the value every node has).

A reading is ``{item: value}``: one item ``""`` for a node-wide value (the
kernel), one per GPU or per port for values every GPU or port should share
(``{"GPU0": 16, "GPU1": 16}``). ``None`` means the value could not be read
on this node (its output was absent, cut or unreadable); ``{}`` means there
is nothing to read it from (no GPU, no port of that model).

NIC keys live in one table per HCA model (``[nic.MT4129]``): ``*`` in a
path stands for the model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from nccldiag import rx

Reading = Optional[Dict[str, Any]]
Facts = Mapping[str, Any]  # area name -> that area's facts (None where not parsed)

UNLIMITED = float("inf")


@dataclass(frozen=True)
class Field:
    path: Tuple[str, ...]  # ("gpu", "count"), ("nic", "*", "rate_gbps")
    kind: str  # "int", "float", "str", "size"
    area: str  # the area a finding goes to
    needs: str  # the area whose facts it reads
    check: str  # the finding's check id
    doc: str
    read: Callable[..., Reading]
    # "eq", "at_least" (sizes and counts where more is fine), or "pairs" (a layout: item=value words)
    compare: str = "eq"
    status: str = "fail"  # what a deviation is, before the site's [severity]
    lo: Optional[float] = None  # the smallest value that makes sense (an impossible one is an error in the file)
    hi: Optional[float] = None
    choices: Tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return ".".join(self.path)

    def where(self, model: Optional[str] = None) -> str:
        """The key as a reader finds it in the file: ``gpu.count``, ``nic.MT4129.rate_gbps``."""
        return ".".join(model if p == "*" else p for p in self.path)


# ---- readers ----------------------------------------------------------------------------------------------


def _get(facts: Facts, area: str) -> Any:
    return facts.get(area)


def _node(value: Any) -> Reading:
    return None if value in (None, "") else {"": value}


def _gpu_count(facts: Facts) -> Reading:
    g = _get(facts, "gpu")
    if g is None:
        return None
    count = max(len(g.gpus), g.attached or 0) or len(g.pci_gpus)
    if not count and g.smi_found is None and not g.pci_gpus:
        return None  # nvidia-smi's output never came back: the count is not known
    return {"": count}


def _gpu_model(facts: Facts) -> Reading:
    g = _get(facts, "gpu")
    if g is None:
        return None
    return {f"GPU{x.index}": x.name for x in g.gpus if x.name} or ({} if g.smi_found is not None else None)


def _per_gpu(attr: str) -> Callable[[Facts], Reading]:
    def read(facts: Facts) -> Reading:
        g = _get(facts, "gpu")
        if g is None:
            return None
        values = {f"GPU{x.index}": getattr(x, attr) for x in g.gpus}
        if values and any(v is None for v in values.values()):
            return None  # the source did not report it for every GPU
        return values if values or g.smi_found is not None else None
    return read


def _gpu_attr(attr: str) -> Callable[[Facts], Reading]:
    def read(facts: Facts) -> Reading:
        g = _get(facts, "gpu")
        return None if g is None else _node(getattr(g, attr))
    return read


def _nvlink_links(facts: Facts) -> Reading:
    nv = _get(facts, "nvlink")
    if nv is None or nv.links is None or any(l.elided for l in nv.links):
        return None  # not collected, or the output was cut inside a GPU's block
    return {f"GPU{l.index}": l.active for l in nv.links}


def _nvlink_speed(facts: Facts) -> Reading:
    nv = _get(facts, "nvlink")
    if nv is None or nv.links is None or any(l.elided for l in nv.links):
        return None
    out: Dict[str, Any] = {}
    for l in nv.links:
        for n, s in sorted(l.links.items()):
            if s is not None:
                out[f"GPU{l.index} link {n}"] = s
    return out


def _ports(facts: Facts, model: str) -> Optional[list]:
    ib = _get(facts, "ib")
    if ib is None:
        return None
    return [p for p in ib.ports if (p.hca_type or "unknown") == model]


def nic_models(facts: Facts) -> List[str]:
    """The HCA models of a node's RDMA ports (``MT4129``), in the order first seen."""
    ib = _get(facts, "ib")
    out: List[str] = []
    for p in (ib.ports if ib is not None else []):
        m = p.hca_type or "unknown"
        if m not in out:
            out.append(m)
    return out


def _nic_count(facts: Facts, model: str) -> Reading:
    ports = _ports(facts, model)
    return None if ports is None else {"": len(ports)}


def _per_port(attr: str, active_only: bool = False) -> Callable[..., Reading]:
    def read(facts: Facts, model: str) -> Reading:
        ports = _ports(facts, model)
        if ports is None:
            return None
        if active_only:  # a port that is down shows its lowest rate: ib.port_state reports it
            ports = [p for p in ports if p.state == "Active"]
        values = {p.name: getattr(p, attr) for p in ports}
        if values and any(v is None for v in values.values()):
            return None
        return values
    return read


def _firmware(attr: str) -> Callable[[Facts], Reading]:
    def read(facts: Facts) -> Reading:
        f = _get(facts, "firmware")
        return None if f is None else _node(getattr(f, attr))
    return read


def _vbios(facts: Facts) -> Reading:
    f = _get(facts, "firmware")
    if f is None or not f.smi_read:
        return None
    return dict(f.vbios) or None


def _fabric_manager(facts: Facts) -> Reading:
    f = _get(facts, "firmware")
    nv = _get(facts, "nvlink")
    version = (f.fm_version if f is not None else None) or (nv.fm.version if nv is not None and nv.fm else None)
    return _node(version)


def _python(attr: str) -> Callable[[Facts], Reading]:
    def read(facts: Facts) -> Reading:
        p = _get(facts, "python")
        if p is None or not p.done:
            return None
        return _node(getattr(p, attr))
    return read


def _system(attr: str) -> Callable[[Facts], Reading]:
    def read(facts: Facts) -> Reading:
        s = _get(facts, "system")
        return None if s is None else _node(getattr(s, attr))
    return read


def _iommu_mode(facts: Facts) -> Reading:
    i = _get(facts, "iommu")
    return None if i is None or i.mode == "unknown" else {"": i.mode}


def _acs_redirect(facts: Facts) -> Reading:
    p = _get(facts, "pcie")
    if p is None or not p.devices or p.tree or any(d.caps_denied for d in p.bridges):
        return None  # no stanzas, or capabilities unreadable (lspci not run as root)
    return {"": sum(1 for d in p.bridges if d.acs_redirect)}


def _limit(attr: str) -> Callable[[Facts], Reading]:
    def read(facts: Facts) -> Reading:
        l = _get(facts, "limits")
        if l is None:
            return None
        v = getattr(l, attr)
        return None if v is None else {"": UNLIMITED if v == "unlimited" else v}
    return read


def _governor(facts: Facts) -> Reading:
    l = _get(facts, "limits")
    if l is None or l.cpufreq_collected != "read" or not l.governors:
        return None
    return {"": ",".join(sorted(l.governors))}


def _summary(area: str, key: str) -> Callable[[Facts], Reading]:
    """A value an area already gives the consistency check (its ``summarize``)."""
    def read(facts: Facts) -> Reading:
        f = _get(facts, area)
        if f is None:
            return None
        import importlib

        return _node((importlib.import_module(f"nccldiag.areas.{area}").summarize(f) or {}).get(key))
    return read


# ---- node-wide layouts: "item=value" words, compared item by item (compare="pairs") ---------------------------

FAR = "SYS"  # nvidia-smi topo -m's farthest class: the GPU-NIC pairs a layout does not list
_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}  # PCIe GT/s -> generation


def pairs(text: Any) -> Dict[str, str]:
    """``{item: value}`` of a layout string (``"GPU0=0 GPU1=0"``); words without ``=`` say nothing."""
    out: Dict[str, str] = {}
    for word in str(text or "").split():
        item, eq, value = word.partition("=")
        if eq and item:
            out[item] = value
    return out


def _topo(facts: Facts):
    a = _get(facts, "affinity")
    return None if a is None else a.topo


def _gpu_nic(facts: Facts) -> Reading:
    topo = _topo(facts)
    if topo is None or not topo.gpus:
        return None
    if not topo.nics:
        return {}  # topo -m lists no NIC: nothing to read the pairs from
    words = []
    for g in topo.gpus:
        for n in topo.nics:
            kind = topo.link(g, n)
            if not kind:
                return None  # a cell cut from the output
            if kind != FAR:
                words.append(f"{g}/{topo.nic_names.get(n, n)}={kind}")
    return {"": " ".join(words) or f"all {FAR}"}


def _numa(facts: Facts) -> Reading:
    topo = _topo(facts)
    a = _get(facts, "affinity")
    if topo is None or not topo.gpus:
        return None
    if any(not topo.numa_affinity.get(g) for g in topo.gpus):
        return None  # topo -m without its NUMA Affinity column (older drivers)
    words = [f"{g}={topo.numa_affinity[g]}" for g in topo.gpus]
    words += [f"{dev}={'-' if n is None else n}" for dev, n in sorted((a.nic_numa or {}).items())]
    return {"": " ".join(words)}


def _nic_pcie(facts: Facts) -> Reading:
    p = _get(facts, "pcie")
    if p is None or not p.devices or p.tree:
        return None  # no stanzas with link lines
    words = []
    for d in p.nics:
        gen = _GEN.get(d.sta.speed_gts or 0.0)
        if gen is None or not d.sta.width:
            return None
        words.append(f"{d.bdf}=Gen{gen}x{d.sta.width}")
    return {"": " ".join(words)} if words else {}


def _peermem(facts: Facts) -> Reading:
    g = _get(facts, "gdr")
    if g is None or g.peermem_loaded is None:
        return None
    return {"": g.peer_module or "none"}


# ---- the keys ----------------------------------------------------------------------------------------------

FIELDS: Tuple[Field, ...] = (
    Field(("gpu", "model"), "str", "gpu", "gpu", "gpu.spec_model", "GPU model as nvidia-smi names it, every GPU",
          _gpu_model),
    Field(("gpu", "count"), "int", "gpu", "gpu", "gpu.spec_count",
          "GPUs on the node (those nvidia-smi lists, or that are on the PCIe bus)", _gpu_count, lo=0, hi=1024),
    Field(("gpu", "memory_mib"), "int", "gpu", "gpu", "gpu.spec_memory",
          "memory of every GPU, MiB (nvidia-smi's total)", _per_gpu("memory_mib"), lo=1),
    Field(("gpu", "pcie_gen"), "int", "gpu", "gpu", "gpu.spec_pcie_gen",
          "PCIe generation of every GPU's link: nvidia-smi's maximum for this GPU in its slot (the current one "
          "drops at idle)", _per_gpu("gen_max"), lo=1, hi=7),
    Field(("gpu", "pcie_width"), "int", "gpu", "gpu", "gpu.spec_pcie_width", "PCIe link width of every GPU, lanes",
          _per_gpu("width"), lo=1, hi=32),
    Field(("nvlink", "links_per_gpu"), "int", "nvlink", "nvlink", "nvlink.spec_links",
          "active NVLinks of every GPU (nvidia-smi nvlink -s)", _nvlink_links, lo=0, hi=64),
    Field(("nvlink", "speed_gbs"), "float", "nvlink", "nvlink", "nvlink.spec_speed",
          "speed of every active NVLink, GB/s", _nvlink_speed, lo=0),
    Field(("topology", "gpu_links"), "str", "topology", "topology", "topology.spec_gpu_links",
          "GPU-GPU link kinds and how many pairs have each (nvidia-smi topo -m), e.g. NV18x28",
          _summary("topology", "gpu_links")),
    Field(("topology", "nearest_nic"), "str", "affinity", "affinity", "affinity.spec_nearest_nic",
          "how close each GPU's nearest RDMA NIC is (nvidia-smi topo -m: PIX, PXB, PHB, NODE, SYS)",
          _summary("affinity", "nearest_nic")),
    Field(("topology", "gpu_nic"), "str", "affinity", "affinity", "affinity.spec_gpu_nic",
          "GPU-NIC topology class of every pair closer than SYS (nvidia-smi topo -m), as GPU/NIC=CLASS words; "
          "a pair not listed is SYS", _gpu_nic, compare="pairs"),
    Field(("topology", "numa"), "str", "affinity", "affinity", "affinity.spec_numa",
          "NUMA node of every GPU (nvidia-smi topo -m's NUMA Affinity) and RDMA device (sysfs), as DEVICE=NODE words",
          _numa, compare="pairs"),
    Field(("topology", "nic_pcie"), "str", "pcie", "pcie", "pcie.spec_nic_pcie",
          "PCIe link of every NIC function (lspci -vvv LnkSta), as BDF=GenNxW words", _nic_pcie, compare="pairs"),
    Field(("nic", "*", "ports"), "int", "ib", "ib", "ib.spec_ports", "RDMA ports of this HCA model", _nic_count,
          lo=0, hi=1024),
    Field(("nic", "*", "link_layer"), "str", "ib", "ib", "ib.spec_link_layer", "InfiniBand or Ethernet, every port",
          _per_port("link_layer"), choices=("InfiniBand", "Ethernet")),
    Field(("nic", "*", "rate_gbps"), "float", "ib", "ib", "ib.spec_rate", "rate of every active port, Gb/s",
          _per_port("rate", active_only=True), lo=0),
    Field(("nic", "*", "mtu"), "int", "ib", "ib", "ib.spec_mtu", "active MTU of every port (ibv_devinfo)",
          _per_port("mtu"), lo=256, hi=65536),
    Field(("nic", "*", "firmware"), "str", "firmware", "ib", "firmware.spec_hca_fw", "firmware of every port's HCA",
          _per_port("fw_ver")),
    Field(("nic", "*", "psid"), "str", "firmware", "ib", "firmware.spec_psid",
          "PSID (board id) of every port's HCA: the vendor's firmware image", _per_port("board_id")),
    Field(("software", "driver"), "str", "gpu", "gpu", "gpu.spec_driver", "NVIDIA driver version",
          _gpu_attr("driver_version")),
    Field(("software", "cuda"), "str", "gpu", "gpu", "gpu.spec_cuda", "CUDA version the driver supports (nvidia-smi)",
          _gpu_attr("cuda_version")),
    Field(("software", "vbios"), "str", "firmware", "firmware", "firmware.spec_vbios", "VBIOS of every GPU", _vbios),
    Field(("software", "fabric_manager"), "str", "firmware", "firmware", "firmware.spec_fabricmanager",
          "NVIDIA Fabric Manager version", _fabric_manager),
    Field(("software", "ofed"), "str", "firmware", "firmware", "firmware.spec_ofed", "MLNX_OFED / DOCA-OFED version",
          _firmware("ofed")),
    Field(("software", "rdma_core"), "str", "firmware", "firmware", "firmware.spec_rdma_core", "rdma-core version",
          _firmware("rdma_core")),
    Field(("software", "kernel"), "str", "system", "system", "system.spec_kernel", "kernel release (uname -r)",
          _system("kernel")),
    Field(("software", "os"), "str", "system", "system", "system.spec_os", "OS (os-release PRETTY_NAME)",
          _system("os_name"), status="warn"),
    Field(("software", "python"), "str", "python", "python", "python.spec_python", "Python version on the nodes",
          _python("python")),
    Field(("software", "torch"), "str", "python", "python", "python.spec_torch", "torch version", _python("torch")),
    Field(("software", "nccl"), "str", "python", "python", "python.spec_nccl", "NCCL version torch loads",
          _python("nccl")),
    Field(("settings", "iommu_mode"), "str", "iommu", "iommu", "iommu.spec_mode",
          "IOMMU mode: off, passthrough or translated", _iommu_mode, choices=("off", "passthrough", "translated")),
    Field(("settings", "acs_redirect_bridges"), "int", "pcie", "pcie", "pcie.spec_acs_redirect",
          "PCIe bridges with ACS redirection on (lspci -vvv as root)", _acs_redirect, lo=0),
    Field(("settings", "cpu_governor"), "str", "limits", "limits", "limits.spec_governor",
          "CPU frequency governor of every CPU", _governor),
    Field(("settings", "persistence_mode"), "str", "gpu", "gpu", "gpu.spec_persistence",
          "nvidia-smi persistence mode of every GPU", _per_gpu("persistence"), choices=("Enabled", "Disabled")),
    Field(("settings", "memlock"), "size", "limits", "limits", "limits.spec_memlock",
          "locked-memory limit of a non-interactive shell, at least", _limit("memlock_soft"), compare="at_least"),
    Field(("settings", "nofile"), "int", "limits", "limits", "limits.spec_nofile",
          "open-files limit of a non-interactive shell, at least", _limit("nofile_soft"), compare="at_least", lo=1),
    Field(("settings", "dev_shm"), "size", "limits", "limits", "limits.spec_shm", "size of /dev/shm, at least",
          _limit("shm_bytes"), compare="at_least"),
    Field(("settings", "peermem"), "str", "gdr", "gdr", "gdr.spec_peermem",
          "GPUDirect RDMA peer-memory module loaded (nvidia_peermem, nv_peer_mem) or none", _peermem),
)

BY_NAME = {f.name: f for f in FIELDS}
SECTIONS = ("gpu", "nvlink", "topology", "nic", "software", "settings")
SECTION_TITLES = {
    "gpu": "GPUs",
    "nvlink": "NVLink",
    "topology": "Topology: GPU-GPU links, GPU-NIC affinity, NUMA layout, the NICs' PCIe links",
    "nic": "RDMA NICs, one table per HCA model (ibstat's CA type, e.g. MT4129 for ConnectX-7)",
    "software": "Software",
    "settings": "Settings",
}


def field_for(path: Tuple[str, ...]) -> Optional[Field]:
    """The field of a key path from a file (``("nic", "MT4129", "mtu")``), or None."""
    if len(path) == 3 and path[0] == "nic":
        return BY_NAME.get(f"nic.*.{path[2]}")
    return BY_NAME.get(".".join(path))


def read(field: Field, facts: Facts, model: Optional[str] = None) -> Reading:
    """The field's reading on one node (see the module's docstring); never raises on odd facts."""
    try:
        return field.read(facts, model) if "*" in field.path else field.read(facts)
    except (AttributeError, TypeError, ValueError):
        return None


# ---- sizes ---------------------------------------------------------------------------------------------------

_SIZE = rx.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b|bytes)?\s*$", re.I)
_UNITS = {"": 1, "b": 1, "bytes": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


def parse_size(value: Any) -> Optional[float]:
    """Bytes from ``"unlimited"``, ``"64 GiB"``, ``"512M"``, ``"65536 KiB"`` or an integer of bytes; None if not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if not isinstance(value, str):
        return None
    if value.strip().lower() in ("unlimited", "infinity"):
        return UNLIMITED
    m = _SIZE.match(value)
    if not m:
        return None
    unit = (m.group(2) or "").lower()
    unit = unit if unit in ("b", "bytes") else unit[:1]
    return float(m.group(1)) * _UNITS[unit]


def show_size(value: Any) -> str:
    if value == UNLIMITED:
        return "unlimited"
    from nccldiag.model.sizes import exact_size_text

    return exact_size_text(int(value))
