"""GPUDirect RDMA: can the NICs read and write GPU memory directly?

NCCL moves inter-node data straight between GPU memory and the RDMA NIC only
when a peer-memory client is registered with the RDMA stack: the
``nvidia_peermem`` module (``nv_peer_mem`` before driver 470), or DMA-BUF with
NVIDIA's open kernel module on a kernel of 5.12 or later. Without either, NCCL
silently stages every message through host memory: channels show
``via NET/IB/0`` without ``/GDRDMA`` and inter-node bandwidth drops.

NCCL's own test (``net_ib/gdr.cc``) is whether
``/sys/kernel/mm/memory_peers/nv_mem/version``, ``.../nv_mem_nc/version`` or
``/sys/module/nvidia_peermem/version`` exists; the loaded-module list
(``/proc/modules``, or ``lsmod`` output) says the same from another angle.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from nccldiag import rx
from nccldiag.areas.base import NodeFacts, Source, section
from nccldiag.areas.pcie import node_gpus, node_rdma
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "gdr"
TITLE = "GPUDirect RDMA"

PEER_PATHS = (
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
    "/sys/module/nv_peer_mem/version",
)
PEER_MODULES = ("nvidia_peermem", "nv_peer_mem")
RDMA_MODULES = ("mlx5_ib", "mlx4_ib", "ib_core")

SOURCES = (
    Source("proc_modules", 'cat "$R/proc/modules"', description="loaded kernel modules (/proc/modules)"),
    Source(
        "peermem_sysfs",
        "echo 'checked: peer-memory paths'; "
        f"for p in {' '.join(PEER_PATHS)}; do "
        '[ -r "$R$p" ] && echo "$p: $(cat "$R$p" 2>/dev/null)"; done; '
        'for p in /sys/module/nvidia_peermem /sys/module/nv_peer_mem; do [ -d "$R$p" ] && echo "$p: present"; done; '
        '[ -r "$R/proc/driver/nvidia/version" ] && sed -n "1s/^/driver: /p" "$R/proc/driver/nvidia/version"; true',
        description="NCCL's peer-memory test paths and the NVIDIA kernel module flavour",
    ),
    Source(
        "gdr_dmesg",
        "{ dmesg 2>/dev/null || journalctl -k -b --no-pager 2>/dev/null; } "
        "| grep -iE 'peermem|nv_peer_mem|peer_mem' | tail -n 50",
        timeout=15,
        description="kernel log lines of the peer-memory modules",
    ),
)

_ERROR = rx.compile(r"error|fail|invalid|unknown symbol|disagrees about version", re.I)


@dataclass
class GdrFacts:
    modules: List[str] = field(default_factory=list)  # names of loaded modules; empty when unknown
    modules_known: bool = False
    peer_paths: Dict[str, str] = field(default_factory=dict)  # NCCL test path -> content ("present" for dirs)
    paths_checked: bool = False
    driver_line: Optional[str] = None  # first line of /proc/driver/nvidia/version
    kernel_log: List[str] = field(default_factory=list)
    error_lines: List[str] = field(default_factory=list)
    # which of /proc/modules and the peer-memory sysfs paths came back with text (a source can be absent from a
    # hand-built bundle, or present and unreadable)
    collected: List[str] = field(default_factory=list)
    present: List[str] = field(default_factory=list)  # of the two, those in the raw output at all (maybe empty)
    modinfo: List[str] = field(default_factory=list)  # modules that `modinfo` output shows installed (not loaded)
    module_errors: List[str] = field(default_factory=list)  # error lines in proc_modules (Permission denied, ...)

    @property
    def peer_module(self) -> Optional[str]:
        for m in PEER_MODULES:
            if m in self.modules or any(m in p for p in self.peer_paths):
                return m
        if any("memory_peers" in p for p in self.peer_paths):
            return "nv_mem peer client"
        return None

    @property
    def peermem_loaded(self) -> Optional[bool]:
        """True/False when known; None when neither the modules nor the sysfs paths could be read."""
        if self.peer_module:
            return True
        return False if (self.modules_known or self.paths_checked) else None

    @property
    def open_kernel_module(self) -> Optional[bool]:
        if not self.driver_line:
            return None
        return "open kernel module" in self.driver_line.lower()


def parse_modules(text: Optional[str]) -> Tuple[List[str], bool]:
    """Module names from /proc/modules or ``lsmod`` text (header skipped)."""
    names: List[str] = []
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0] == "Module" or not parts[1].isdigit():
            continue
        names.append(parts[0])
    header = any(l.split()[:1] == ["Module"] for l in (text or "").splitlines())
    return names, bool(names) or header


def parse_peer_paths(text: Optional[str]) -> Tuple[Dict[str, str], bool, Optional[str]]:
    paths: Dict[str, str] = {}
    checked = False
    driver = None
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("checked:"):
            checked = True
        elif line.startswith("driver:"):
            driver = line.split(":", 1)[1].strip() or None
        elif line.startswith("/") and ":" in line:
            path, _, value = line.partition(":")
            paths[path.strip()] = value.strip()
    return paths, checked, driver


def parse(raw) -> GdrFacts:
    f = GdrFacts()
    f.collected = [n for n in ("proc_modules", "peermem_sysfs") if section(raw, n) is not None]
    f.module_errors = [l.strip() for l in (section(raw, "proc_modules") or "").splitlines()
                       if re.search(r"Permission denied|No such file|not found|[Cc]annot|can't|ERROR", l)][:2]
    f.present = [n for n in ("proc_modules", "peermem_sysfs") if raw.get(n) is not None]
    f.modinfo = [m.group(1) for m in re.finditer(r"(?m)^\s*name:\s*(\S+)", section(raw, "proc_modules") or "")
                 if re.search(r"(?m)^\s*filename:", section(raw, "proc_modules") or "")]
    f.modules, f.modules_known = parse_modules(section(raw, "proc_modules"))
    f.peer_paths, f.paths_checked, f.driver_line = parse_peer_paths(section(raw, "peermem_sysfs"))
    log = [l.strip() for l in (section(raw, "gdr_dmesg") or "").splitlines() if l.strip()]
    f.kernel_log = log
    f.error_lines = [l for l in log if _ERROR.search(l)]
    return f


def _kernel_at_least(node: NodeFacts, major: int, minor: int) -> Optional[bool]:
    kernel = getattr(node.get("system"), "kernel", None) if node is not None else None
    m = re.match(r"(\d+)\.(\d+)", kernel or "")
    if not m:
        return None
    return (int(m.group(1)), int(m.group(2))) >= (major, minor)


def _unknown_why(facts: GdrFacts) -> str:
    """Why neither source told whether a peer-memory module is loaded, each source in its own words."""
    if "proc_modules" in facts.collected and facts.module_errors:
        mods = f"could not read the module list ({facts.module_errors[0]})"
    elif "proc_modules" in facts.collected:
        mods = ("the module list is `modinfo` output (" + ", ".join(facts.modinfo) + " installed; it does not say "
                "loaded)" if facts.modinfo else "the module list (proc_modules) is neither /proc/modules nor lsmod output")
    elif "proc_modules" in facts.present:
        mods = "/proc/modules came back empty (unreadable)"
    else:
        mods = "the module list (proc_modules: cat /proc/modules, or lsmod) was not collected"
    if "peermem_sysfs" in facts.collected:
        paths = "the peer-memory sysfs paths could not be checked"
    elif "peermem_sysfs" in facts.present:
        paths = "the peer-memory sysfs check came back empty"
    else:
        paths = "the peer-memory sysfs paths (peermem_sysfs) were not collected"
    return f"{mods}; {paths}"


def judge(facts: Optional[GdrFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "gdr.peermem", "no module information collected")]
    gpus, gpu_words = node_gpus(node)
    rdma, rdma_words = node_rdma(node)
    findings: List[Finding] = []
    loaded = facts.peermem_loaded
    evidence = [f"{p}: {v}" for p, v in facts.peer_paths.items()]
    evidence += [f"loaded: {m}" for m in facts.modules if m in PEER_MODULES + RDMA_MODULES + ("nvidia",)]
    if facts.driver_line:
        evidence.append(facts.driver_line)
    if not gpus:
        findings.append(skip(NAME, "gdr.peermem", f"{gpu_words}: GPUDirect RDMA does not apply", evidence=evidence))
    elif not rdma:
        findings.append(skip(NAME, "gdr.peermem", f"{rdma_words}: GPUDirect RDMA does not apply", evidence=evidence))
    elif loaded:
        version = next((v for p, v in facts.peer_paths.items() if p.endswith("/version") and v), None)
        findings.append(ok(NAME, "gdr.peermem", f"{facts.peer_module} loaded" + (f" (version {version})" if version else ""),
                           actual=facts.peer_module, evidence=evidence))
    elif loaded is None:
        findings.append(warn(NAME, "gdr.peermem", f"could not tell whether a GPU peer-memory module is loaded "
                             f"({_unknown_why(facts)})", evidence=evidence,
                             fix="Check by hand: lsmod | grep -e nvidia_peermem -e nv_peer_mem"))
    else:
        fix = ("Load it: 'modprobe nvidia-peermem' (ships with the NVIDIA driver since 470; needs MLNX_OFED or an "
               "inbox RDMA stack with peer-memory support), and make it persistent: "
               "echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf. Alternative: DMA-BUF, which needs "
               "NVIDIA's open kernel module and Linux 5.12 or later, and no extra module.")
        msg = (f"no GPU peer-memory module (nvidia_peermem / nv_peer_mem) on a node with {gpu_words} and {rdma_words}: "
               "NCCL will stage inter-node traffic through host memory (no GDRDMA)")
        dmabuf = facts.open_kernel_module and _kernel_at_least(node, 5, 12)
        if dmabuf:
            findings.append(warn(NAME, "gdr.peermem", msg + "; DMA-BUF may provide GPUDirect RDMA instead "
                                 "(open kernel module, kernel 5.12+): confirm '/GDRDMA' in NCCL_DEBUG=INFO channel lines",
                                 actual=None, expected="nvidia_peermem loaded, or DMA-BUF", evidence=evidence, fix=fix))
        else:
            findings.append(fail(NAME, "gdr.peermem", msg, actual=None, expected="nvidia_peermem loaded",
                                 evidence=evidence, fix=fix))
    if facts.error_lines:
        findings.append(warn(
            NAME, "gdr.peermem_errors",
            f"{len(facts.error_lines)} peer-memory error lines in the kernel log",
            actual=len(facts.error_lines), expected=0, evidence=facts.error_lines[-8:],
            fix="An 'Unknown symbol' or version error means nvidia-peermem was built against another RDMA stack: "
                "reinstall the NVIDIA driver after MLNX_OFED/DOCA. Runtime errors (invalid context) come with "
                "GPUDirect transfers failing: update the driver, and check 'NCCL_DEBUG=INFO' for GDR fallbacks.",
        ))
    return findings


def summarize(facts: Optional[GdrFacts]) -> Dict[str, Optional[str]]:
    if facts is None:
        return {}
    loaded = facts.peermem_loaded
    return {"peermem": None if loaded is None else (facts.peer_module or "none")}
