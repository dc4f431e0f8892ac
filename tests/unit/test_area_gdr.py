"""GPUDirect RDMA area: module lists (lsmod and /proc/modules), NCCL's sysfs test, kernel errors, judgement."""
import os
import subprocess

import pytest

from nccldiag.areas import gdr
from nccldiag.areas.base import NodeFacts
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections
from nccldiag.model.findings import Status
from tests import real

PEER = "azhpc-lsmod-centos-nv_peer_mem-mlx5.txt"
NOPEER = "azhpc-lsmod-nvidia-mlx4-no-peermem.txt"
WSL = "azhpc-lsmod-wsl-header-only.txt"
DMESG = "gpud-dmesg-nvidia-peermem-invalid-context-errors.txt"
EMPTY = "nccl988-lsmod-grep-peermem-not-loaded-empty.txt"


def text(name):
    return real.node_text("lsmod-modules", name)


class Gpu:
    def __init__(self, n):
        self.gpus = list(range(n))


class Ib:
    def __init__(self, n):
        self.ports = list(range(n))


class System:
    def __init__(self, kernel):
        self.kernel = kernel


def node(facts, gpus=None, ports=None, kernel=None):
    n = NodeFacts("h", {"gdr": facts})
    if gpus is not None:
        n.facts["gpu"] = Gpu(gpus)
    if ports is not None:
        n.facts["ib"] = Ib(ports)
    if kernel:
        n.facts["system"] = System(kernel)
    return n


def test_every_fixture_parses():
    for name in os.listdir(real.node("lsmod-modules")):
        if name.endswith(".txt"):
            for key in ("proc_modules", "gdr_dmesg", "peermem_sysfs"):
                f = gdr.parse({key: text(name)})
                gdr.judge(f, node(f))


def test_lsmod_with_nv_peer_mem():
    f = gdr.parse({"proc_modules": text(PEER)})
    assert len(f.modules) == 94 and f.modules_known
    assert {"nvidia", "nv_peer_mem", "mlx5_ib", "ib_core", "gdrdrv"} <= set(f.modules)
    assert f.peer_module == "nv_peer_mem" and f.peermem_loaded is True
    # GPUs and RDMA inferred from the modules alone
    [o] = gdr.judge(f, node(f))
    assert o.status == Status.OK and o.message == "nv_peer_mem loaded"
    assert gdr.summarize(f) == {"peermem": "nv_peer_mem"}


def test_lsmod_nvidia_mlx4_without_peermem_fails():
    f = gdr.parse({"proc_modules": text(NOPEER)})
    assert "nvidia" in f.modules and "mlx4_ib" in f.modules
    assert f.peer_module is None and f.peermem_loaded is False
    [x] = gdr.judge(f, node(f))
    assert x.status == Status.FAIL and x.check == "gdr.peermem"
    assert "modprobe nvidia-peermem" in x.fix and "DMA-BUF" in x.fix
    assert "RDMA modules loaded (mlx4_ib, ib_core)" in x.message
    [y] = gdr.judge(f, node(f, gpus=8, ports=8))
    assert "8 NVIDIA GPUs and 8 RDMA ports" in y.message


def test_open_kernel_module_on_new_kernel_only_warns():
    # constructed peermem_sysfs section (format of the snippet) with an open-kernel-module driver line
    f = gdr.parse({"proc_modules": text(NOPEER), "peermem_sysfs": "checked: peer-memory paths\n"
                   "driver: NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build\n"})
    assert f.open_kernel_module is True
    assert gdr.judge(f, node(f, kernel="5.15.0-91-generic"))[0].status == Status.WARN
    assert gdr.judge(f, node(f, kernel="5.4.0-99-generic"))[0].status == Status.FAIL


def test_wsl_header_only_means_no_modules_known():
    f = gdr.parse({"proc_modules": text(WSL)})
    assert f.modules == [] and f.modules_known and f.peermem_loaded is False
    [s] = gdr.judge(f, node(f))
    assert s.status == Status.SKIP and "no GPU information" in s.message
    [s] = gdr.judge(f, node(f, gpus=2, ports=0))
    assert s.status == Status.SKIP and "no RDMA NIC" in s.message


def test_empty_module_list_is_unknown_not_absent():
    f = gdr.parse({"proc_modules": text(EMPTY)})
    assert text(EMPTY) == "" and f.peermem_loaded is None
    [w] = gdr.judge(f, node(f, gpus=8, ports=8))
    assert w.status == Status.WARN and "could not tell" in w.message


def test_peermem_kernel_errors():
    f = gdr.parse({"gdr_dmesg": text(DMESG)})
    assert len(f.kernel_log) == 8 and len(f.error_lines) == 7
    assert "nv_get_p2p_free_callback" in f.error_lines[0]
    found = gdr.judge(f, node(f, gpus=8, ports=8))
    assert [x.check for x in found] == ["gdr.peermem", "gdr.peermem_errors"]
    assert found[1].status == Status.WARN and len(found[1].evidence) == 7


def test_nccl_sysfs_test_paths_count_as_loaded():
    # constructed: what the snippet prints when nvidia_peermem is loaded (version file under /sys/module)
    f = gdr.parse({"peermem_sysfs": "checked: peer-memory paths\n/sys/module/nvidia_peermem/version: 535.104.05\n"
                                    "/sys/module/nvidia_peermem: present\n"})
    assert f.peer_module == "nvidia_peermem"
    [o] = gdr.judge(f, node(f, gpus=8, ports=8))
    assert o.status == Status.OK and "535.104.05" in o.message
    g = gdr.parse({"peermem_sysfs": "checked: peer-memory paths\n/sys/kernel/mm/memory_peers/nv_mem/version: 1.3-0\n"})
    assert g.peermem_loaded is True and g.peer_module == "nv_mem peer client"
    h = gdr.parse({"peermem_sysfs": "checked: peer-memory paths\n"})
    assert h.paths_checked and h.peermem_loaded is False


def test_proc_modules_format():
    # constructed lines in /proc/modules format (name size refcount users state address)
    f = gdr.parse({"proc_modules": "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n"
                                   "nvidia 56823808 500 nvidia_uvm,nvidia_peermem,nvidia_modeset, Live 0x0 (POE)\n"
                                   "ib_core 434176 9 nvidia_peermem,rdma_cm, Live 0x0\n"})
    assert f.modules == ["nvidia_peermem", "nvidia", "ib_core"]
    assert gdr.judge(f, node(f))[0].status == Status.OK


@pytest.mark.parametrize("raw", [{}, {"proc_modules": None}, {"proc_modules": "Module\n"}, {"peermem_sysfs": "junk"}])
def test_tolerates_missing_and_odd_sections(raw):
    f = gdr.parse(raw)
    assert f.modules == []
    gdr.judge(f, node(f, gpus=1, ports=1))
    gdr.summarize(f)
    assert gdr.judge(None, node(None))[0].status == Status.SKIP


def test_tabs_spaces_and_truncation():
    t = text(PEER)
    assert gdr.parse({"proc_modules": t.replace(" ", "\t")}).modules == gdr.parse({"proc_modules": t}).modules
    cut = gdr.parse({"proc_modules": t[: len(t) // 2]})
    assert 0 < len(cut.modules) < 94


def test_snippets_run_against_a_fixture_tree(tmp_path):
    root, bins = tmp_path / "root", tmp_path / "bin"
    (root / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (root / "proc" / "modules").write_text(text(PEER))
    # constructed driver and sysfs files
    (root / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\nGCC version: gcc 9\n")
    (root / "sys/module/nvidia_peermem").mkdir(parents=True)
    (root / "sys/module/nvidia_peermem/version").write_text("535.54.03\n")
    bins.mkdir()
    (bins / "dmesg").write_text(f"#!/bin/sh\ncat '{real.node('lsmod-modules', DMESG)}'\n")
    (bins / "dmesg").chmod(0o755)
    env = {"NCCLDIAG_ROOT": str(root), "PATH": f"{bins}:/usr/bin:/bin"}
    out = subprocess.run(["sh", "-s"], input=build_script(gdr.SOURCES), capture_output=True, text=True,
                         env=env, timeout=60).stdout
    secs, rcs, truncated = split_sections(out)
    assert not truncated and set(secs) == {"proc_modules", "peermem_sysfs", "gdr_dmesg"}
    assert secs["peermem_sysfs"].splitlines() == [
        "checked: peer-memory paths",
        "/sys/module/nvidia_peermem/version: 535.54.03",
        "/sys/module/nvidia_peermem: present",
        "driver: NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023",
    ]
    f = gdr.parse(secs)
    assert len(f.modules) == 94 and f.open_kernel_module is False
    assert f.peer_module == "nvidia_peermem"  # the newer module wins when both show up
    assert f.peer_paths["/sys/module/nvidia_peermem/version"] == "535.54.03"
    assert len(f.error_lines) == 7
    assert [x.status for x in gdr.judge(f, node(f))] == [Status.OK, Status.WARN]


def test_unreadable_is_said_only_of_what_was_collected():
    from nccldiag.areas import gdr as g
    from nccldiag.areas.base import NodeFacts as NF

    class _Gpu:
        gpus = [1]

    class _Ib:
        ports = [1]

    node = NF("h")
    node.facts.update(gpu=_Gpu(), ib=_Ib())

    def peermem(raw):
        return next(x for x in g.judge(g.parse(raw), node) if x.check == "gdr.peermem").message

    assert "were not collected" in peermem({})
    # collected, and not a module list (written for this test: what a failed read leaves)
    assert peermem({"proc_modules": "cat: /proc/modules: Permission denied\n"}) == (
        "could not tell whether a GPU peer-memory module is loaded (could not read the module list (cat: /proc/modules: "
        "Permission denied); the peer-memory sysfs paths (peermem_sysfs) were not collected)")
    # written for this test, in the layout of `modinfo nvidia_peermem` (filename, version, ..., name): it shows the
    # module installed, not loaded; sysfs was not collected and is not called unreadable
    modinfo = ("filename:       /lib/modules/5.15.0-91-generic/updates/dkms/nvidia-peermem.ko\n"
               "version:        535.129.03\nlicense:        Dual BSD/GPL\ndescription:    NVIDIA GPU memory plug-in\n"
               "depends:        nvidia,ib_core\nname:           nvidia_peermem\nvermagic:       5.15.0-91-generic SMP\n")
    msg = peermem({"proc_modules": modinfo})
    assert msg == ("could not tell whether a GPU peer-memory module is loaded (the module list is `modinfo` output "
                   "(nvidia_peermem installed; it does not say loaded); the peer-memory sysfs paths (peermem_sysfs) were "
                   "not collected)")
    assert "unreadable" not in msg
    assert "came back empty" in peermem({"proc_modules": "", "peermem_sysfs": ""})
