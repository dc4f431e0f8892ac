"""HCA-GPU affinity area: nearest NIC per GPU in nvidia-smi topo -m, and its NUMA node against the GPU's."""
import pytest

from nccldiag.areas import affinity
from tests import real

from .areahelp import findings, judge, run_sources

KIND = "nvidia-smi-topo-m"
DGXA100 = "gengwg-dgx-a100-8gpu-12nic-nv12-pxb-numa.txt"
EXPECTED = {
    "aikitoria12-2x-rtx5070-phb-prompt-glued-to-header.txt": "skip",
    DGXA100: "ok",
    "gengwg-dgx1-topo-mp-pcie-only-pix-phb-sys.txt": "ok",
    "microway-dgx1-v100-nv1-nv2-4nic-old-legend.txt": "ok",
    "mleng-8x-a100-nv12-spaces.txt": "skip",
    "mleng-8x-h100-nv18-spaces.txt": "skip",
    "nccl667-4gpu-pcie-pxb-pix-sys-no-legend.txt": "skip",
}
# written for this test: NUMA nodes of the DGX A100's GPU-side NICs, as its topo -m NUMA Affinity column places them
NUMA = "mlx5_0 3\nmlx5_1 3\nmlx5_2 1\nmlx5_3 1\nmlx5_4 2\nmlx5_5 2\nmlx5_6 7\nmlx5_7 7\nmlx5_8 5\nmlx5_9 5\nmlx5_10 4\nmlx5_11 4\n"


def topo(name=DGXA100):
    return real.node_text(KIND, name)


@pytest.mark.parametrize("name", real.names(real.NODE / KIND))
def test_every_matrix_is_judged_as_expected(name):
    assert judge(affinity, {"topo_m": topo(name)})["affinity.nic_distance"] == [EXPECTED[name]]


def test_nearest_nics_of_the_dgx_a100():
    real.require()
    near = affinity.nearest(affinity.parse({"topo_m": topo()}).topo)
    assert near["GPU0"] == ("PXB", ["mlx5_0", "mlx5_1"]) and near["GPU7"] == ("PXB", ["mlx5_8", "mlx5_9"])


def test_a_gpu_without_a_close_nic_on_a_gpudirect_system_warns():
    real.require()
    # written for this test: the DGX A100 matrix with GPU6 and GPU7 cut off from mlx5_8/9
    lines = topo().splitlines(True)
    for i, l in enumerate(lines):
        if l.startswith(("GPU6\t", "GPU7\t")):
            lines[i] = l.replace("PXB\tPXB\tSYS\tSYS\t80-95", "SYS\tSYS\tSYS\tSYS\t80-95")
    f = findings(affinity, {"topo_m": "".join(lines)})["affinity.nic_distance"]
    assert f.status.value == "warn" and f.actual == {"GPU6": "SYS", "GPU7": "SYS"}


def test_numa_of_the_nearest_nic():
    real.require()
    assert judge(affinity, {"topo_m": topo(), "nic_numa": NUMA})["affinity.numa"] == ["ok"]
    f = findings(affinity, {"topo_m": topo(), "nic_numa": NUMA.replace("mlx5_0 3", "mlx5_0 1")})["affinity.numa"]
    assert f.status.value == "warn" and f.actual == {"GPU0": "mlx5_0 on NUMA 1, GPU on 3", "GPU1": "mlx5_0 on NUMA 1, GPU on 3"}
    f = findings(affinity, {"topo_m": topo(), "nic_numa": NUMA.replace("mlx5_2 1", "mlx5_2 -1")})["affinity.numa"]
    assert f.status.value == "warn" and f.actual == ["mlx5_2"]
    assert judge(affinity, {"topo_m": topo()})["affinity.numa"] == ["skip"]


def test_numa_source(tmp_path):
    root = tmp_path / "root"
    for dev, n in (("mlx5_0", "0"), ("mlx5_1", "")):  # written for this test: an empty numa_node reads as unknown
        p = root / "sys" / "class" / "infiniband" / dev / "device" / "numa_node"
        p.parent.mkdir(parents=True)
        p.write_text(n + "\n")
    secs = run_sources((affinity.NUMA_SOURCE,), root)
    assert affinity.parse_numa(secs["nic_numa"]) == {"mlx5_0": 0, "mlx5_1": None}
