"""topology area: topo -m / topo -p2p / nccl-tests parsers, P2P and copy-test judgements."""

import pytest

from nccldiag.benchmarks import nccltests
from nccldiag.areas import gpu, topology
from nccldiag.areas.base import NodeFacts
from nccldiag.model.findings import Status
from tests import real



def fixture(sub, name):
    return real.node_text(sub, name)


def by_check(findings):
    return {f.check: f for f in findings}


def node_with(names=(), options=None, nvlink=None):
    """NodeFacts whose gpu area lists GPUs with these names (constructed)."""
    g = gpu.GpuFacts(gpus=[gpu.Gpu(i, n) for i, n in enumerate(names)], nvlink=nvlink or [])
    return NodeFacts("n1", {"gpu": g}, options or {})


# ------------------------------------------------------------ every fixture parses


@pytest.mark.parametrize("name", real.names(real.NODE / "nvidia-smi-topo-m"))
def test_every_topo_m_fixture_parses(name):
    m = topology.parse_topo_m(fixture("nvidia-smi-topo-m", name))
    assert m is not None and len(m.gpus) >= 2
    for g in m.gpus:  # the diagonal is self
        assert m.cells[g][g] == "X"
    topology.judge(topology.parse({"topo_m": fixture("nvidia-smi-topo-m", name)}), node_with())


@pytest.mark.parametrize("name", real.names(real.NODE / "nvidia-smi-topo-p2p"))
def test_every_topo_p2p_fixture_parses(name):
    m = topology.parse_topo_p2p(fixture("nvidia-smi-topo-p2p", name))
    assert m is not None and all(m.verdict(g, g) == "X" for g in m.gpus)


@pytest.mark.parametrize("name", real.names(real.NODE / "nccl-tests"))
def test_every_nccl_tests_fixture_parses(name):
    run = nccltests.parse_nccl_tests(fixture("nccl-tests", name))
    assert run is not None and run.rows and run.out_of_bounds == 0 and not run.wrong_rows


# ------------------------------------------------------------ topo -m


def test_topo_m_dgx_a100_old_mlx5_columns():
    m = topology.parse_topo_m(fixture("nvidia-smi-topo-m", "gengwg-dgx-a100-8gpu-12nic-nv12-pxb-numa.txt"))
    assert m.gpus == [f"GPU{i}" for i in range(8)]
    assert m.nics == [f"mlx5_{i}" for i in range(12)]
    assert m.link("GPU0", "GPU7") == "NV12" and m.nvlinks("GPU3", "GPU5") == 12
    assert m.link("GPU0", "mlx5_0") == "PXB" and m.link("GPU0", "mlx5_2") == "SYS"
    assert m.link("mlx5_4", "mlx5_5") == "PIX"
    assert m.cpu_affinity["GPU0"] == "48-63,176-191" and m.numa_affinity["GPU0"] == "3"
    assert m.numa_affinity["GPU7"] == "5"
    assert "mlx5_0" not in m.cpu_affinity  # NIC rows carry no affinity cells
    f = by_check(topology.judge(topology.parse({"topo_m": fixture("nvidia-smi-topo-m", "gengwg-dgx-a100-8gpu-12nic-nv12-pxb-numa.txt")}), node_with()))
    assert f["topology.matrix"].message == "8 GPUs, 12 NICs; GPU pairs: NV12 x28"
    assert f["topology.matrix"].actual["nearest_nic"]["GPU2"] == ["mlx5_2", "PXB"]


def test_topo_m_dgx1_pcie_only_and_hybrid_cube_mesh():
    pcie = topology.parse_topo_m(fixture("nvidia-smi-topo-m", "gengwg-dgx1-topo-mp-pcie-only-pix-phb-sys.txt"))
    assert (pcie.link("GPU0", "GPU1"), pcie.link("GPU0", "GPU2"), pcie.link("GPU0", "GPU4")) == ("PIX", "PHB", "SYS")
    assert pcie.nvlinks("GPU0", "GPU1") == 0
    v100 = topology.parse_topo_m(fixture("nvidia-smi-topo-m", "microway-dgx1-v100-nv1-nv2-4nic-old-legend.txt"))
    assert v100.nics == ["mlx5_0", "mlx5_2", "mlx5_1", "mlx5_3"]  # printed order kept
    assert (v100.nvlinks("GPU0", "GPU1"), v100.nvlinks("GPU0", "GPU3"), v100.link("GPU0", "GPU5")) == (1, 2, "SYS")
    assert v100.link("GPU6", "mlx5_3") == "PIX" and v100.numa_affinity == {}
    assert v100.cells["mlx5_3"]["mlx5_3"] == "X"  # trailing tab on NIC rows


def test_topo_m_prompt_glued_spaces_and_gpu_numa_id():
    m = topology.parse_topo_m(fixture("nvidia-smi-topo-m", "aikitoria12-2x-rtx5070-phb-prompt-glued-to-header.txt"))
    assert m.devices == ["GPU0", "GPU1"] and m.link("GPU0", "GPU1") == "PHB"
    assert m.cpu_affinity == {"GPU0": "0-23", "GPU1": "0-23"}
    assert m.numa_affinity == {"GPU0": "0", "GPU1": "0"} and m.gpu_numa_id == {"GPU0": "N/A", "GPU1": "N/A"}
    h100 = topology.parse_topo_m(fixture("nvidia-smi-topo-m", "mleng-8x-h100-nv18-spaces.txt"))
    assert h100.nvlinks("GPU6", "GPU7") == 18 and h100.cpu_affinity["GPU7"] == "52-103"
    pcie4 = topology.parse_topo_m(fixture("nvidia-smi-topo-m", "nccl667-4gpu-pcie-pxb-pix-sys-no-legend.txt"))
    assert (pcie4.link("GPU0", "GPU1"), pcie4.link("GPU2", "GPU3"), pcie4.link("GPU1", "GPU2")) == ("PXB", "PIX", "SYS")


def test_topo_m_new_nic_legend():
    # constructed, not captured: the newer layout with NIC0.. columns and a "NIC Legend"
    text = (
        "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV18\tPIX\tSYS\t0-55\t0\t\tN/A\n"
        "GPU1\tNV18\t X \tSYS\tPIX\t56-111\t1\t\tN/A\n"
        "NIC0\tPIX\tSYS\t X \tSYS\t\t\t\t\n"
        "NIC1\tSYS\tPIX\tSYS\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n"
    )
    m = topology.parse_topo_m(text)
    assert m.nics == ["NIC0", "NIC1"] and m.nic_name("NIC1") == "mlx5_1"
    assert m.link("GPU1", "NIC1") == "PIX" and m.gpu_numa_id["GPU1"] == "N/A"
    summary = topology._summary(m)
    assert summary.actual["nearest_nic"] == {"GPU0": ["mlx5_0", "PIX"], "GPU1": ["mlx5_1", "PIX"]}


def test_topo_m_tabs_to_single_spaces_still_parse():
    text = fixture("nvidia-smi-topo-m", "gengwg-dgx-a100-8gpu-12nic-nv12-pxb-numa.txt")
    squashed = "\n".join(" ".join(l.split()) for l in text.splitlines())
    a, b = topology.parse_topo_m(text), topology.parse_topo_m(squashed)
    assert a.cells == b.cells and a.cpu_affinity == b.cpu_affinity and a.numa_affinity == b.numa_affinity


@pytest.mark.parametrize("text", [None, "", "\n", "Legend:\n X = Self", "\tGPU0\tGPU1\n", "GPU0 GPU1\nGPU0 X", "\tGPU0\tGPU1\nGPU0\t X \tNV"])
def test_topo_parsers_tolerate_junk_and_truncation(text):
    m = topology.parse_topo_m(text)
    topology.parse_topo_p2p(text)
    nccltests.parse_nccl_tests(text)
    topology.parse_p2p_copy(text)
    topology.judge(topology.parse({"topo_m": text, "topo_p2p_r": text, "topo_p2p_w": text, "p2p_copy": text}), node_with())
    if m is not None:
        assert set(m.cells) <= set(m.devices)


def test_topo_m_truncated_row_reads_pair_from_other_side():
    text = fixture("nvidia-smi-topo-m", "nccl667-4gpu-pcie-pxb-pix-sys-no-legend.txt")
    cut = text[: text.index("GPU3\tSYS") + len("GPU3\tSYS")]  # GPU3's row cut after its first cell
    m = topology.parse_topo_m(cut)
    assert m.link("GPU3", "GPU2") == "PIX"


# ------------------------------------------------------------ topo -p2p


def test_p2p_verdicts_fixtures():
    ok8 = topology.parse_topo_p2p(fixture("nvidia-smi-topo-p2p", "mleng-8x-h100-p2p-r-all-ok.txt"))
    assert len(ok8.gpus) == 8 and {ok8.verdict(a, b) for a in ok8.gpus for b in ok8.gpus if a != b} == {"OK"}
    l4 = topology.parse_topo_p2p(fixture("nvidia-smi-topo-p2p", "mleng-2x-l4-p2p-r-cns.txt"))
    assert l4.verdict("GPU0", "GPU1") == "CNS" and l4.verdict("GPU1", "GPU0") == "CNS"
    g5090 = topology.parse_topo_p2p(fixture("nvidia-smi-topo-p2p", "club3090-1229-2x-rtx5090-p2p-rw-gns-tabs.txt"))
    assert g5090.gpus == ["GPU0", "GPU1"] and g5090.verdict("GPU0", "GPU1") == "GNS"


def test_judge_all_ok_nvlink_node():
    facts = topology.parse({
        "topo_m": fixture("nvidia-smi-topo-m", "mleng-8x-h100-nv18-spaces.txt"),
        "topo_p2p_r": fixture("nvidia-smi-topo-p2p", "mleng-8x-h100-p2p-r-all-ok.txt"),
    })
    f = by_check(topology.judge(facts, node_with(["NVIDIA H100 80GB HBM3"] * 8)))
    assert f["topology.p2p"].status is Status.OK
    assert f["topology.p2p"].message == "P2P OK between all 28 GPU pairs (nvidia-smi topo -p2p)"
    assert "topology.p2p_copy" not in f
    assert topology.summarize(facts) == {"gpu_links": "NV18x28"}


def test_judge_consumer_gns_is_information_with_nccl_fallback():
    facts = topology.parse({
        "topo_m": fixture("nvidia-smi-topo-m", "aikitoria12-2x-rtx5070-phb-prompt-glued-to-header.txt"),
        "topo_p2p_r": fixture("nvidia-smi-topo-p2p", "club3090-1229-2x-rtx5090-p2p-rw-gns-tabs.txt"),
    })
    (p2p,) = [f for f in topology.judge(facts, node_with(["NVIDIA GeForce RTX 5090"] * 2)) if f.check.startswith("topology.p2p")]
    # how GeForce cards ship: said as information (ok), with what NCCL does, never a warning on a healthy node
    assert p2p.status is Status.OK and p2p.check == "topology.p2p"
    assert "GPU0-GPU1 (read GNS, PHB)" in p2p.message and "as these GPUs ship (NCCL uses its SHM transport" in p2p.message
    assert "NVIDIA GeForce RTX 5090: NVIDIA does not enable P2P on consumer cards" in p2p.fix
    assert "SHM" in p2p.fix and "NCCL_P2P_DISABLE=1" in p2p.fix


def test_judge_l4_cns_warns():
    facts = topology.parse({"topo_p2p_r": fixture("nvidia-smi-topo-p2p", "mleng-2x-l4-p2p-r-cns.txt")})
    f = by_check(topology.judge(facts, node_with(["NVIDIA L4"] * 2)))
    assert f["topology.p2p"].status is Status.WARN
    assert "chipset or GPU cannot do P2P" in f["topology.p2p"].fix


def test_judge_nvlink_pair_without_p2p_fails():
    # constructed, not captured: the all-OK H100 matrix with one pair turned to NS
    text = fixture("nvidia-smi-topo-p2p", "mleng-8x-h100-p2p-r-all-ok.txt")
    lines = text.splitlines()
    lines[3] = lines[3].replace("OK      X       OK", "OK      X       NS", 1)  # GPU2 row: GPU2->GPU3
    facts = topology.parse({"topo_m": fixture("nvidia-smi-topo-m", "mleng-8x-h100-nv18-spaces.txt"),
                            "topo_p2p_r": "\n".join(lines)})
    assert facts.p2p_read.verdict("GPU2", "GPU3") == "NS"
    f = by_check(topology.judge(facts, node_with(["NVIDIA H100 80GB HBM3"] * 8)))
    assert f["topology.p2p_nvlink"].status is Status.FAIL
    assert "GPU2-GPU3 (read NS, NV18)" in f["topology.p2p_nvlink"].message
    assert "topology.p2p" not in f


def test_judge_pcie_tns_on_datacenter_points_at_iommu_acs():
    # constructed, not captured: a PCIe pair with TNS
    text = "\tGPU0\tGPU1\n GPU0\tX\tTNS\n GPU1\tTNS\tX\n"
    facts = topology.parse({"topo_m": fixture("nvidia-smi-topo-m", "nccl667-4gpu-pcie-pxb-pix-sys-no-legend.txt"), "topo_p2p_r": text})
    f = by_check(topology.judge(facts, node_with(["NVIDIA A100-PCIE-40GB"] * 2)))
    assert f["topology.p2p"].status is Status.WARN and "IOMMU" in f["topology.p2p"].fix
    assert "GPU0-GPU1 (read TNS, PXB)" in f["topology.p2p"].message


def test_single_gpu_and_no_gpu_skip():
    single = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-23\t0\n"  # constructed, not captured
    f = by_check(topology.judge(topology.parse({"topo_m": single}), node_with(["NVIDIA A10"])))
    assert f["topology.p2p"].status is Status.SKIP and f["topology.p2p"].message == "single GPU: no GPU pairs"
    assert topology.judge(topology.parse({}), node_with())[0].message == "GPU topology not collected (nvidia-smi topo -m)"
    assert topology.judge(None, node_with())[0].status is Status.SKIP


def test_nvml_p2p_used_when_nvidia_smi_has_none():
    # constructed, not captured: the gpu area's NVML snapshot with P2P status codes (2 = GPU not supported)
    node = node_with(["NVIDIA GeForce RTX 4090"] * 2)
    node.facts["gpu"].nvml = {"p2p": {"read": {"0,1": 2, "1,0": 2}, "write": {"0,1": 2, "1,0": 2}}}
    f = by_check(topology.judge(topology.parse({}), node))
    assert f["topology.p2p"].status is Status.OK and "(NVML)" not in f["topology.p2p"].message
    assert any(e.startswith("NVML:") for e in f["topology.p2p"].evidence)
    assert f["topology.p2p"].actual == {"GPU0-GPU1": ["read GNS", "write GNS"]}


def test_no_p2p_source_skips():
    f = by_check(topology.judge(topology.parse({"topo_m": fixture("nvidia-smi-topo-m", "mleng-8x-a100-nv12-spaces.txt")}), node_with()))
    assert f["topology.p2p"].status is Status.SKIP


# ------------------------------------------------------------ nccl-tests


def test_nccl_tests_columns_old_and_new():
    old = nccltests.parse_nccl_tests(fixture("nccl-tests", "deepops-2x-dgx-a100-k8s-hdr-allreduce-table-only.txt"))
    assert old.avg_busbw == pytest.approx(53.7098) and old.peak_busbw == pytest.approx(188.70)
    assert old.rows[0].wrong == "2e-07/1e-07"  # the old "error" column: a relative error, not a count
    new = nccltests.parse_nccl_tests(fixture("nccl-tests", "oci-2x8-a100-40gb-allreduce-10G-single-size.txt"))
    assert len(new.rows) == 1 and new.rows[0].size == 10737418240 and new.ranks == 16
    assert (new.rows[0].busbw_oop, new.rows[0].busbw_ip) == (222.88, 218.96)
    gcp = nccltests.parse_nccl_tests(fixture("nccl-tests", "gcp-a3mega-2x8-h100-allreduce-header-mangled.txt"))
    assert gcp.peak_busbw == pytest.approx(338.82) and gcp.ranks == 16 and gcp.avg_busbw == pytest.approx(70.742)
    low = nccltests.parse_nccl_tests(fixture("nccl-tests", "deepops-2node-sriov-roce-allreduce-low-busbw-table-only.txt"))
    assert low.peak_busbw == pytest.approx(22.92)


def test_nccl_tests_wrong_count_detected():
    # constructed, not captured: a current-format row with #wrong 3 in place
    row = "   134217728      33554432     float     sum      -1   1234.5  108.72  190.26      0   1230.1  109.11  190.95      3\n"
    run = nccltests.parse_nccl_tests(row + "# Out of bounds values : 1 FAILED\n")
    assert run.out_of_bounds == 1 and len(run.wrong_rows) == 1
