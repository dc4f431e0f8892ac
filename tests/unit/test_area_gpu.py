"""gpu area: parsers on captured outputs, judgements, and the collection snippets."""
import os
import subprocess
from pathlib import Path

import pytest

from nccldiag.areas import gpu
from nccldiag.areas.base import NodeFacts
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections
from nccldiag.model.findings import Status
from tests import real

NODE = NodeFacts("n1")


def fixture(sub, name):
    return real.node_text(sub, name)


def by_check(findings):
    return {f.check: f for f in findings}


# ------------------------------------------------------------ every fixture parses


@pytest.mark.parametrize("path", real.names(real.NODE / "nvidia-smi-nvlink"))
def test_every_nvlink_fixture_parses(path):
    text = fixture("nvidia-smi-nvlink", path)
    gpus = gpu.parse_nvlink_status(text)
    facts = gpu.parse({"nvlink_status": text})
    gpu.judge(facts, NODE)  # never raises
    assert isinstance(gpus, list)


@pytest.mark.parametrize("path", real.names(real.NODE / "nvidia-smi-q"))
def test_every_smi_q_fixture_parses_as_q_and_as_csv(path):
    text = fixture("nvidia-smi-q", path)
    gpu.parse_smi_q(text)
    gpu.parse_query_csv(text)
    gpu.parse({"gpu_query": text, "nvidia_smi_q": text})


# ------------------------------------------------------------ nvlink --status


def test_nvlink_azure_v100_inactive_links():
    gpus = gpu.parse_nvlink_status(fixture("nvidia-smi-nvlink", "azhpc-v100-8gpu-inactive-links.txt"))
    # the capture ends inside GPU 6's block (no GPU 7)
    assert [g.index for g in gpus] == [0, 1, 2, 3, 4, 5, 6]
    assert gpus[0].name == "Tesla V100-SXM2-32GB"
    assert gpus[0].uuid == "GPU-b45d9bdf-1feb-0bd0-c8c5-9d833071005d"
    assert gpus[0].links == {i: 25.781 for i in range(6)}
    assert {g.index: g.inactive for g in gpus if g.inactive} == {3: [3, 5], 4: [1], 5: [0, 4], 6: [1]}
    f = by_check(gpu.judge(gpu.parse({"nvlink_status": fixture("nvidia-smi-nvlink", "azhpc-v100-8gpu-inactive-links.txt"),
                                      "gpu_query": "0, Tesla V100-SXM2-32GB\n"}), NODE))
    assert f["gpu.nvlink"].status is Status.FAIL
    assert "GPU3 link 3,5 (4 of 6 up)" in f["gpu.nvlink"].message
    assert f["gpu.nvlink"].actual == {"category": "nvlink_error", "inactive": {"GPU3": [3, 5], "GPU4": [1], "GPU5": [0, 4], "GPU6": [1]}}


def test_nvlink_a100_all_active():
    text = fixture("nvidia-smi-nvlink", "gpud-a100-sxm4-8gpu-12links-25GBs.txt")
    gpus = gpu.parse_nvlink_status(text)
    assert len(gpus) == 8 and all(len(g.links) == 12 and not g.inactive for g in gpus)
    assert gpus[7].uuid == "GPU-754035b4-4708-efcd-b261-623aea38bcad"
    f = by_check(gpu.judge(gpu.parse({"nvlink_status": text, "gpu_query": "0, NVIDIA A100-SXM4-80GB\n"}), NODE))
    assert f["gpu.nvlink"].status is Status.OK
    assert f["gpu.nvlink"].message == "all 96 NVLink links active on 8 GPUs at 25 GB/s"


def test_nvlink_empty_output_is_no_nvlink():
    assert gpu.parse_nvlink_status(fixture("nvidia-smi-nvlink", "gpud-a10-empty-no-nvlink.txt")) == []
    facts = gpu.parse({"nvlink_status": "", "gpu_query": "0, NVIDIA A10\n"})
    assert "gpu.nvlink" not in by_check(gpu.judge(facts, NODE))


def test_nvlink_old_format_and_elisions():
    old = gpu.parse_nvlink_status(fixture("nvidia-smi-nvlink", "microway-dgx1-v100-nvlink-status-snipped.txt"))
    assert [(g.index, g.uuid, len(g.links)) for g in old] == [(0, None, 6), (7, None, 6)]
    h100 = gpu.parse_nvlink_status(fixture("nvidia-smi-nvlink", "mleng-h100-nvlink-status-elided.txt"))
    assert h100[0].links == {0: 26.562, 17: 26.562}
    # nvlink -e (error counters) has no link speeds: a GPU with no links, not inactive links
    counters = gpu.parse_nvlink_status(fixture("nvidia-smi-nvlink", "mleng-h100-nvlink-e-error-counters-elided.txt"))
    assert [(g.index, g.links) for g in counters] == [(0, {})]


def test_nvlink_all_down_on_sxm_fails():
    # constructed, not captured: every link of an SXM GPU inactive
    text = "GPU 0: NVIDIA H100 80GB HBM3 SXM (UUID: GPU-x)\n\t Link 0: <inactive>\n\t Link 1: <inactive>\n"
    f = by_check(gpu.judge(gpu.parse({"nvlink_status": text, "gpu_query": "0, H100 SXM\n"}), NODE))
    assert f["gpu.nvlink"].status is Status.FAIL
    pcie = text.replace(" SXM", "")
    f = by_check(gpu.judge(gpu.parse({"nvlink_status": pcie, "gpu_query": "0, H100 PCIe\n"}), NODE))
    assert f["gpu.nvlink"].status is Status.WARN


# ------------------------------------------------------------ nvidia-smi -q


def test_smi_q_rtx4090_excerpt():
    q = gpu.parse_smi_q(fixture("nvidia-smi-q", "gpud-8x-rtx4090-535-gpu0-excerpt.txt"))
    assert (q["driver"], q["cuda"], q["attached"]) == ("535.154.05", "12.2", 8)
    (g,) = q["gpus"]
    assert (g.name, g.bus_id, g.memory_mib) == ("NVIDIA GeForce RTX 4090", "0000:01:00.0", 24564)
    assert (g.gen, g.gen_max, g.width, g.width_max) == (1, 4, 16, 16)
    assert g.uuid == "GPU-988008fc-0059-17f4-9001-0ab4143e0e63" and g.persistence == "Enabled"


def test_smi_q_truncated_invalid_does_not_raise_and_keeps_what_came():
    q = gpu.parse_smi_q(fixture("nvidia-smi-q", "gpud-8x-h100-535-truncated-invalid.txt"))
    assert q["attached"] == 8 and len(q["gpus"]) == 1
    g = q["gpus"][0]
    assert (g.name, g.bus_id, g.gen, g.width) == ("NVIDIA H100 80GB HBM3", "0000:53:00.0", 5, 16)
    assert g.memory_mib is None  # the output stops before "FB Memory Usage"
    facts = gpu.parse({"gpu_query": "Failed to initialize NVML: Unknown Error\nnccldiag: rc=255\n",
                       "nvidia_smi_q": fixture("nvidia-smi-q", "gpud-8x-h100-535-truncated-invalid.txt")})
    assert facts.inventory_from == "nvidia-smi -q" and facts.cuda_version == "12.2"
    inv = by_check(gpu.judge(facts, NODE))["gpu.inventory"]
    assert "reports 8 attached but its output held 1 GPU blocks" in inv.message
    assert gpu.summarize(facts)["count"] == "8"


def test_smi_q_titan_v_full_and_azure_passthrough():
    q = gpu.parse_smi_q(fixture("nvidia-smi-q", "gpud-titan-v-560-full.txt"))
    assert (q["driver"], q["cuda"], q["attached"]) == ("560.35.03", "12.6", 1)
    g = q["gpus"][0]
    assert (g.name, g.memory_mib, g.gen, g.gen_max, g.persistence) == ("NVIDIA TITAN V", 12288, 1, 3, "Disabled")
    az = gpu.parse_smi_q(fixture("nvidia-smi-q", "azhpc-a100-sxm4-40gb-460-passthrough-gpu0-excerpt.txt"))
    assert az["gpus"][0].bus_id == "0001:00:00.0"  # Hyper-V PCI domain 0x0001
    assert (az["gpus"][0].name, az["gpus"][0].memory_mib, az["cuda"]) == ("A100-SXM4-40GB", 40536, "11.2")


# ------------------------------------------------------------ --query-gpu CSV


def test_query_csv_with_header_a6000_3090():
    gpus, driver, err = gpu.parse_query_csv(fixture("nvidia-smi-q", "query-gpu-csv-a6000-3090-gen1-idle-downclock.txt"))
    assert err is None and driver is None
    assert [(g.index, g.name, g.gen, g.width) for g in gpus] == [
        (0, "NVIDIA RTX A6000", 1, 16),
        (1, "NVIDIA GeForce RTX 3090", 1, 16),
    ]


def test_query_csv_mock_na_cells_and_bus_domains():
    gpus, _, err = gpu.parse_query_csv(fixture("nvidia-smi-q", "azhpc-query-gpu-csv-mock.txt"))
    assert err is None
    assert [g.bus_id for g in gpus] == ["0001:00:00.0", "0002:00:00.0", "000a:00:00.0", "000d:00:00.0"]


def test_query_csv_noheader_default_columns_and_judgement():
    # constructed, not captured: the exact --query-gpu field order nccldiag asks for, without header
    text = (
        "0, NVIDIA H100 80GB HBM3, GPU-aaa, 00000000:19:00.0, 535.183.01, 81559 MiB, 5, 5, 16, 16, Enabled\n"
        "1, NVIDIA H100 80GB HBM3, GPU-bbb, 00000000:3B:00.0, 535.183.01, 81559 MiB, 5, 5, 8, 16, Disabled\n"
        "nccldiag: rc=0\n"
    )
    facts = gpu.parse({"gpu_query": text, "nvidia_smi_q": "CUDA Version                              : 12.2\n",
                       "pci_gpus": "0000:19:00.0 0x030200 0x2330 nvidia 0\n0000:3b:00.0 0x030200 0x2330 nvidia 0\n"})
    assert [g.bus_id for g in facts.gpus] == ["0000:19:00.0", "0000:3b:00.0"]
    assert facts.gpus[1].memory_mib == 81559 and facts.gpus[1].width == 8
    f = by_check(gpu.judge(facts, NODE))
    assert f["gpu.inventory"].status is Status.OK
    assert f["gpu.inventory"].message.startswith("2x NVIDIA H100 80GB HBM3, driver 535.183.01, CUDA 12.2")
    assert f["gpu.count"].status is Status.OK
    assert f["gpu.pcie_width"].status is Status.WARN and "GPU1 x8 of x16" in f["gpu.pcie_width"].message
    assert f["gpu.persistence"].status is Status.WARN
    assert gpu.summarize(facts) == {"driver": "535.183.01", "cuda": "12.2", "model": "NVIDIA H100 80GB HBM3", "count": "2"}


# ------------------------------------------------------------ driver / presence


def test_no_gpus_anywhere_is_skip():
    facts = gpu.parse({"gpu_query": "nccldiag: nvidia-smi not found\n", "pci_gpus": ""})
    (f,) = gpu.judge(facts, NODE)
    assert f.status is Status.SKIP and f.message == "not present: no NVIDIA GPU on the PCI bus, and nvidia-smi is not installed"
    (f,) = gpu.judge(gpu.parse({}), NODE)
    assert f.message == "GPU inventory not collected (nvidia-smi --query-gpu, and the sysfs PCI scan)"


def test_a_gpu_skip_never_claims_no_gpu_that_another_output_names():
    from nccldiag.areas import xid
    from nccldiag.areas.base import NodeFacts

    # written for this test, in the layout of the driver's Xid line: the kernel log names a GPU, no inventory came
    log = xid.parse({"kernel_log": "[ 5.0] NVRM: Xid (PCI:0000:02:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"})
    (f,) = gpu.judge(gpu.parse({}), NodeFacts("n1", {"xid": log}))
    assert f.status is Status.SKIP and "not collected" in f.message and "Xid lines name 0000:02:00.0" in f.message
    assert "no NVIDIA GPU" not in f.message


def test_a_gpu_nvidia_smi_cannot_reach_is_lost_not_a_driver_fault():
    real.require()
    # the real case's nvidia-smi output (a badly seated RTX 2080 Ti dropping off the bus under load)
    text = (real.ROOT / "cases" / "node-ogkm387-4x2080ti-nvidia-smi-device-handle-unknown-error-reseat" / "node-a"
            / "gpu_query.txt").read_text()
    (f,) = gpu.judge(gpu.parse({"gpu_query": text}), NODE)
    assert f.check == "gpu.lost" and f.status is Status.FAIL and f.actual == ["0000:0b:00.0"]
    assert "lost from the bus" in f.message and "seating" in f.fix
    # written for this test: the same line beside the rows of the GPUs nvidia-smi still reaches
    rows = ("index, name, pci.bus_id\n0, NVIDIA GeForce RTX 2080 Ti, 00000000:0A:00.0\n" + text)
    found = {x.check: x for x in gpu.judge(gpu.parse({"gpu_query": rows}), NODE)}
    assert found["gpu.lost"].status is Status.FAIL and found["gpu.inventory"].status is Status.OK


def test_gpus_on_bus_without_nvidia_smi_fails():
    facts = gpu.parse({"gpu_query": "nccldiag: nvidia-smi not found\n",
                       "pci_gpus": "0000:17:00.0 0x030200 0x2330 - 1\n0000:18:00.0 0x030000 0x2330 nouveau 1\n"})
    (f,) = gpu.judge(facts, NODE)
    assert f.status is Status.FAIL and f.check == "gpu.driver"
    assert "2 NVIDIA GPU(s) on the PCI bus but nvidia-smi is not installed" in f.message
    assert f.actual["drivers"] == ["none", "nouveau"]


def test_driver_not_loaded_message_fails():
    # the message nvidia-smi prints when the kernel module is not loaded (exit status 9)
    text = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
            "latest NVIDIA driver is installed and running.\n\nnccldiag: rc=9\n")
    facts = gpu.parse({"gpu_query": text, "pci_gpus": "0000:17:00.0 0x030200 0x2330 - 0\n"})
    (f,) = gpu.judge(facts, NODE)
    assert f.status is Status.FAIL and "nvidia-smi fails" in f.message
    assert any("couldn't communicate" in e for e in f.evidence)


def test_hung_nvidia_smi_is_an_error_text():
    facts = gpu.parse({"gpu_query": "", "pci_gpus": "0000:17:00.0 0x030200 0x2330 nvidia 0\n"})
    assert facts.smi_error == "nvidia-smi did not finish (it hung or was killed)"
    assert gpu.judge(facts, NODE)[0].status is Status.FAIL


def test_gpu_missing_from_driver_fails_vfio_warns():
    query = "0, NVIDIA A100-SXM4-80GB, GPU-a, 00000000:07:00.0, 550.54.15, 81920 MiB, 4, 4, 16, 16, Enabled\n"
    pci = "0000:07:00.0 0x030200 0x20b2 nvidia 0\n0000:0f:00.0 0x030200 0x20b2 nvidia 0\n"
    f = by_check(gpu.judge(gpu.parse({"gpu_query": query, "pci_gpus": pci}), NODE))
    assert f["gpu.count"].status is Status.FAIL and "missing: 0000:0f:00.0" in f["gpu.count"].message
    pci_vfio = pci.replace("0f:00.0 0x030200 0x20b2 nvidia", "0f:00.0 0x030200 0x20b2 vfio-pci")
    f = by_check(gpu.judge(gpu.parse({"gpu_query": query, "pci_gpus": pci_vfio}), NODE))
    assert f["gpu.count"].status is Status.WARN


def test_nvml_fallback_inventory_and_nvlink():
    # constructed, not captured: the JSON shape the NVML snippet prints
    nvml = ('{"driver": "550.54.15", "cuda": 12040, "gpus": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", '
            '"uuid": "GPU-a", "bus_id": "00000000:07:00.0", "memory_mib": 81920, "gen": 4, "gen_max": 4, '
            '"width": 16, "width_max": 16, "nvlink": [1, 1, 0]}], "p2p": {}}\n')
    facts = gpu.parse({"nvml": nvml})
    assert facts.inventory_from == "nvml" and facts.cuda_version == "12.4" and facts.driver_version == "550.54.15"
    assert facts.gpus[0].bus_id == "0000:07:00.0"
    assert facts.nvlink[0].inactive == [2]
    assert by_check(gpu.judge(facts, NODE))["gpu.nvlink"].status is Status.FAIL
    assert gpu.parse_nvml('{"error": "nvidia-ml-py not importable: No module named pynvml"}\n')[1].startswith("nvidia-ml-py")
    assert gpu.parse_nvml('{"gpus": [')[1].startswith("NVML output could not be read: not JSON")


# ------------------------------------------------------------ tolerance


@pytest.mark.parametrize("text", [None, "", "\n\n", "garbage : : :\n\tGPU", "GPU 0: X (UUID: \n  Link x: y"])
def test_parsers_tolerate_junk(text):
    gpu.parse_nvlink_status(text)
    gpu.parse_smi_q(text)
    gpu.parse_query_csv(text)
    gpu.parse_pci_gpus(text)
    gpu.parse_nvml(text)
    raw = {name: text for name in ("gpu_query", "nvidia_smi_q", "nvlink_status", "pci_gpus", "nvml")}
    gpu.judge(gpu.parse(raw), NODE)
    assert gpu.judge(None, NODE)[0].status is Status.SKIP


def test_nvlink_tabs_expanded_to_spaces_parse_the_same():
    text = fixture("nvidia-smi-nvlink", "microway-dgx1-v100-nvlink-status-snipped.txt")
    assert [g.links for g in gpu.parse_nvlink_status(text.expandtabs(8))] == [g.links for g in gpu.parse_nvlink_status(text)]


def test_truncated_csv_line_is_kept_partially():
    gpus, _, _ = gpu.parse_query_csv("0, NVIDIA H100 80GB HBM3, GPU-aaa, 00000000:19:00.0, 535.1")
    assert gpus[0].name == "NVIDIA H100 80GB HBM3" and gpus[0].memory_mib is None


# ------------------------------------------------------------ the snippets run


def run_sources(root, sources=gpu.SOURCES):
    out = subprocess.run(["sh", "-s"], input=build_script(sources), capture_output=True, text=True, timeout=60,
                         env={"NCCLDIAG_ROOT": str(root), "PATH": "/usr/bin:/bin", "NCCLDIAG_PYTHON": "python3"}).stdout
    return split_sections(out)[0]


def test_sysfs_walk_lists_only_nvidia_display_devices(tmp_path):
    drivers = tmp_path / "sys" / "bus" / "pci" / "drivers"
    for bdf, vendor, cls, drv in [
        ("0000:17:00.0", "0x10de", "0x030200", "nvidia"),
        ("0000:18:00.0", "0x10de", "0x030000", None),
        ("0000:19:00.0", "0x10de", "0x068000", "nvidia"),  # NVSwitch bridge class: not a GPU
        ("0000:1a:00.0", "0x15b3", "0x020700", "mlx5_core"),
    ]:
        d = tmp_path / "sys" / "bus" / "pci" / "devices" / bdf
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "class").write_text(cls + "\n")
        (d / "device").write_text("0x2330\n")
        (d / "numa_node").write_text("1\n")
        if drv:
            (drivers / drv).mkdir(parents=True, exist_ok=True)
            os.symlink(drivers / drv, d / "driver")
    secs = run_sources(tmp_path, [s for s in gpu.SOURCES if s.name == "pci_gpus"])
    pci = gpu.parse_pci_gpus(secs["pci_gpus"])
    assert [(p.bus_id, p.pci_class, p.driver, p.numa_node) for p in pci] == [
        ("0000:17:00.0", "0x030200", "nvidia", 1),
        ("0000:18:00.0", "0x030000", None, 1),
    ]


def test_all_snippets_run_without_nvidia_tools(tmp_path):
    secs = run_sources(tmp_path)
    assert set(secs) == {s.name for s in gpu.SOURCES}
    facts = gpu.parse(secs)
    assert facts.pci_gpus == [] and facts.gpus == []
    if not Path("/proc/driver/nvidia").is_dir():
        # no driver loaded: the NVML snippet does not even start an interpreter
        assert secs["nvml"].strip() == "" and facts.nvml is None and facts.nvml_error is None
    elif facts.nvml_error is not None:  # the node's Python has no nvidia-ml-py: a message, not a crash
        assert facts.nvml is None
    assert gpu.judge(facts, NODE)[0].status is Status.SKIP


FAKE_PYNVML = '''
# constructed stand-in for nvidia-ml-py: two GPUs, GPU1 with link 1 down, P2P "GPU not supported"
NVML_NVLINK_MAX_LINKS = 18
class NVMLError(Exception):
    pass
class _Pci:
    def __init__(self, bus):
        self.busId = bus
class _Mem:
    total = 25757220864
def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlSystemGetDriverVersion(): return "550.54.15"
def nvmlSystemGetCudaDriverVersion(): return 12040
def nvmlDeviceGetCount(): return 2
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetName(h): return b"NVIDIA GeForce RTX 4090"
def nvmlDeviceGetUUID(h): return "GPU-%d" % h
def nvmlDeviceGetPciInfo(h): return _Pci(b"00000000:%02X:00.0" % (h + 1))
def nvmlDeviceGetMemoryInfo(h): return _Mem()
def nvmlDeviceGetCurrPcieLinkGeneration(h): return 1
def nvmlDeviceGetMaxPcieLinkGeneration(h): return 4
def nvmlDeviceGetCurrPcieLinkWidth(h): return 16
def nvmlDeviceGetMaxPcieLinkWidth(h): return 16
def nvmlDeviceGetNvLinkState(h, link):
    if link >= 2:
        raise NVMLError("not supported")
    return 0 if (h, link) == (1, 1) else 1
def nvmlDeviceGetP2PStatus(a, b, idx): return 2
'''


def test_nvml_snippet_against_a_stand_in_module(tmp_path):
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML)
    (tmp_path / "root" / "proc" / "driver" / "nvidia").mkdir(parents=True)  # the snippet runs where a driver is loaded
    src = [s for s in gpu.SOURCES if s.name == "nvml"]
    out = subprocess.run(["sh", "-s"], input=build_script(src), capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "NCCLDIAG_PYTHON": "python3",
                              "NCCLDIAG_ROOT": str(tmp_path / "root")}).stdout
    facts = gpu.parse(split_sections(out)[0])
    assert facts.nvml_error is None, out
    assert facts.inventory_from == "nvml" and facts.cuda_version == "12.4" and facts.driver_version == "550.54.15"
    assert [(g.name, g.bus_id, g.memory_mib, g.gen, g.gen_max) for g in facts.gpus] == [
        ("NVIDIA GeForce RTX 4090", "0000:01:00.0", 24564, 1, 4),
        ("NVIDIA GeForce RTX 4090", "0000:02:00.0", 24564, 1, 4),
    ]
    assert [n.inactive for n in facts.nvlink] == [[], [1]]
    assert facts.nvml["p2p"]["read"] == {"0,1": 2, "1,0": 2}


def test_mixed_gpu_models_are_all_named():
    f = gpu.parse({"gpu_query": fixture("nvidia-smi-q", "query-gpu-csv-a6000-3090-gen1-idle-downclock.txt")})
    inv = by_check(gpu.judge(f, NodeFacts("h")))["gpu.inventory"]
    assert "1x NVIDIA GeForce RTX 3090 + 1x NVIDIA RTX A6000" in inv.message and "mixed GPU models" in inv.message
    assert inv.actual["model"] == ["NVIDIA GeForce RTX 3090", "NVIDIA RTX A6000"]
    assert gpu.summarize(f)["model"] == "NVIDIA GeForce RTX 3090 + NVIDIA RTX A6000"


def test_one_model_keeps_its_short_message():
    f = gpu.parse({"nvidia_smi_q": fixture("nvidia-smi-q", "gpud-titan-v-560-full.txt")})
    inv = by_check(gpu.judge(f, NodeFacts("h")))["gpu.inventory"]
    assert inv.message.startswith("1x NVIDIA TITAN V,") and "mixed" not in inv.message


# ------------------------------------------------------------ what NVML says instead of a snapshot

_CASES = Path(__file__).resolve().parents[1] / "cases"


def _nvml_words(path, start):
    """NVML's error string as nvidia-smi printed it in a real output (``Failed to initialize NVML: <it>``, ``...: <it>``)."""
    line = next(l for l in path.read_text(encoding="utf-8").splitlines() if start in l)
    return line.rsplit(": ", 1)[1].strip()


def _snapshot_with_failing_init(tmp_path, message):
    # written for this test: a stand-in nvidia-ml-py whose nvmlInit raises NVML's error string, run through the real
    # snippet, so that the area reads what a node with that fault prints
    (tmp_path / "pynvml.py").write_text(f"def nvmlInit():\n    raise Exception({message!r})\n")
    (tmp_path / "root" / "proc" / "driver" / "nvidia").mkdir(parents=True)
    src = [s for s in gpu.SOURCES if s.name == "nvml"]
    out = subprocess.run(["sh", "-s"], input=build_script(src), capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "NCCLDIAG_PYTHON": "python3",
                              "NCCLDIAG_ROOT": str(tmp_path / "root")}).stdout
    return split_sections(out)[0]["nvml"]


@pytest.mark.parametrize("origin,start,means", [
    # a blog transcript of nvidia-smi after a driver upgrade without reboot (tests/cases, its source in case.json)
    (_CASES / "node-wanpihou-blog-driver-library-mismatch-dkms-transcript" / "posted-transcript.txt",
     "Failed to initialize NVML", "different versions"),
    # a badly seated GPU dropping off the bus (../shared/fixtures/cases)
    (real.ROOT / "cases" / "node-ogkm387-4x2080ti-nvidia-smi-device-handle-unknown-error-reseat" / "node-a"
     / "gpu_query.txt", "Unable to determine the device handle", "lost from the bus"),
])
def test_a_failing_nvml_is_reported_never_dropped(tmp_path, origin, start, means):
    if not origin.is_file():
        pytest.skip(real.REASON)
    words = _nvml_words(origin, start)
    nvml = _snapshot_with_failing_init(tmp_path, words)
    # the NVML error alone (the driver is loaded, nothing else came back): a fail, not "no GPU"
    (f,) = gpu.judge(gpu.parse({"nvml": nvml}), NODE)
    assert f.check == "gpu.nvml" and f.status is Status.FAIL and means in f.message
    assert f.evidence == [f"nvmlInit failed: {words}"]
    # beside an inventory nvidia-smi still listed (a real query): the node is not reported healthy
    query = fixture("nvidia-smi-q", "query-gpu-csv-a6000-3090-gen1-idle-downclock.txt")
    found = by_check(gpu.judge(gpu.parse({"gpu_query": query, "nvml": nvml}), NODE))
    assert found["gpu.inventory"].status is Status.OK and found["gpu.nvml"].status is Status.FAIL


def test_nvml_unreadable_warns_and_absent_module_is_a_note(tmp_path):
    f = by_check(gpu.judge(gpu.parse({"nvml": '{"gpus": ['}), NODE))["gpu.nvml"]
    assert f.status is Status.WARN and f.evidence[0].startswith("NVML output could not be read")
    absent = '{"error": "nvidia-ml-py not importable: No module named \'pynvml\'"}\n'
    f = by_check(gpu.judge(gpu.parse({"nvml": absent}), NODE))["gpu.nvml"]
    assert f.status is Status.SKIP and "No module named" in f.message


@pytest.mark.parametrize("path", real.names(real.NODE / "nvidia-smi-q"))
def test_healthy_captures_have_no_nvml_finding(path, tmp_path):
    text = fixture("nvidia-smi-q", path)
    raw = {"gpu_query": text} if "csv" in path else {"nvidia_smi_q": text}
    assert "gpu.nvml" not in by_check(gpu.judge(gpu.parse(raw), NODE))


def test_a_gpu_whose_recovery_action_is_not_none_fails_and_the_others_stay_quiet():
    """DCGM issue 263, as posted: 'nvidia-smi --query-gpu=index,gpu_recovery_action --format=csv,noheader' (no header:
    the fields are the command's), GPU 1 'Reset' with the poster's note after it; the seven GPUs at 'None' are not
    named."""
    import json

    from nccldiag import paste
    from tests import realcases

    case = realcases.IN_REPO / "gpu-gaps73e-dcgm263-gpu1-recovery-action-reset-xid-120-dcgm-health-check-blind"
    text = "".join((case / f).read_text(encoding="utf-8") for f in json.loads((case / "case.json").read_text())["files"])
    found = [f for f in paste.scan(text).findings if f.check == "gpu.recovery_action"]
    assert len(found) == 1 and found[0].status.value == "fail", found
    assert found[0].actual["gpus"] == {"GPU1": "Reset"} and found[0].actual["category"] == "gpu_lost_xid"
    assert "GPU1 asks for a GPU reset" in found[0].message and "GPU0" not in found[0].message
