"""The active P2P copy test (on CPU "virtual" devices here) and its judgement against the topology."""
import json
import subprocess
import sys

import pytest

from nccldiag.node import p2pcopy
from nccldiag.areas import gpu, topology
from nccldiag.areas.base import NodeFacts
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections
from nccldiag.model.findings import Status
from tests import real

pytest.importorskip("torch")



def by_check(findings):
    return {f.check: f for f in findings}


def test_two_virtual_devices_copy_and_verify():
    r = p2pcopy.run(size_mib=1, warmup=1, iters=2, virtual=2)
    assert r["error"] is None and r["backend"] == "cpu" and r["bytes"] == 1024 * 1024
    assert [(p["src"], p["dst"]) for p in r["pairs"]] == [(0, 1), (1, 0)]
    for p in r["pairs"]:
        assert p["verified"] is True and p["mismatches"] == 0 and p["error"] is None
        assert p["gbps"] > 0 and p["can_access_peer"] is None
    json.dumps(r)  # JSON-ready


def test_corrupted_copy_is_detected():
    def zero_tail(src, dst, received):
        if (src, dst) == (1, 0):
            received[-5:] = 0

    r = p2pcopy.run(size_mib=0.25, warmup=0, iters=1, virtual=2, corrupt=zero_tail)
    good, bad = r["pairs"]
    assert good["verified"] and not bad["verified"]
    assert bad["mismatches"] == 5 and "5 of 65536 int32 elements wrong after copy GPU1->GPU0" in bad["error"]
    f = by_check(topology.judge_p2p_copy(r))
    assert f["topology.p2p_copy"].status is Status.FAIL
    assert f["topology.p2p_copy"].actual == {"GPU1->GPU0": bad["error"]}
    assert "iommu=pt" in f["topology.p2p_copy"].fix


def test_patterns_differ_per_source_so_a_swapped_buffer_fails():
    def wrong_source(src, dst, received):
        received.copy_(p2pcopy._pattern(__import__("torch"), received.numel(), dst, received.device))

    r = p2pcopy.run(size_mib=0.01, warmup=0, iters=1, virtual=2, corrupt=wrong_source)
    assert not any(p["verified"] for p in r["pairs"])


def test_no_cuda_reports_error_and_judges_skip():
    r = p2pcopy.run(size_mib=0.01)
    if r["backend"] == "cuda" and r["error"] is None:
        pytest.skip("this machine has CUDA devices")
    assert r["pairs"] == [] and "no CUDA device" in r["error"]
    assert topology.judge_p2p_copy(r)[0].status is Status.SKIP


def test_runs_as_a_script_with_json():
    out = subprocess.run([sys.executable, p2pcopy.__file__, "--json", "--virtual", "2", "--size-mib", "0.5", "--iters", "2"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["format"] == "nccldiag.p2pcopy/1" and all(p["verified"] for p in r["pairs"])


def test_collection_source_ships_the_module_and_parses(tmp_path):
    """The --p2p-test source runs p2pcopy from a heredoc; here (no CUDA) it must say so, not crash."""
    # a root whose /proc/driver/nvidia lists two GPUs, so the guard lets the copy test run
    for i in (0, 1):
        (tmp_path / "proc" / "driver" / "nvidia" / "gpus" / f"0000:0{i}:00.0").mkdir(parents=True)
    script = build_script(topology.p2p_test_sources())
    out = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "NCCLDIAG_PYTHON": sys.executable,
                              "NCCLDIAG_ROOT": str(tmp_path)}).stdout
    secs, rcs, truncated = split_sections(out)
    assert not truncated
    facts = topology.parse(secs)
    assert facts.p2p_copy is not None and facts.p2p_copy["format"] == p2pcopy.FORMAT
    if facts.p2p_copy["backend"] == "cuda" and not facts.p2p_copy["error"]:
        pytest.skip("this machine has CUDA devices")
    assert rcs["p2p_copy"] == 2 and "no CUDA device" in facts.p2p_copy["error"]


def test_collection_source_skips_without_two_gpus(tmp_path):
    """With fewer than two GPUs listed by the driver, torch is not even started."""
    script = build_script(topology.p2p_test_sources())
    out = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "NCCLDIAG_PYTHON": "/nonexistent/python",
                              "NCCLDIAG_ROOT": str(tmp_path)}).stdout
    secs, rcs, _ = split_sections(out)
    assert rcs["p2p_copy"] == 0
    facts = topology.parse(secs)
    found = topology.judge_p2p_copy(facts.p2p_copy)
    assert [f.status.value for f in found] == ["skip"]


# ------------------------------------------------------------ judgement against the topology (constructed results)


def result(pairs, devices=()):
    """A p2pcopy result with the given pairs (constructed, not measured)."""
    return {"format": p2pcopy.FORMAT, "backend": "cuda", "bytes": 1 << 25, "iters": 5, "error": None,
            "devices": [{"index": i, "name": "gpu", "h2d_gbps": h, "d2h_gbps": d} for i, h, d in devices],
            "pairs": [{"src": a, "dst": b, "gbps": g, "can_access_peer": peer, "verified": True, "mismatches": 0, "error": None}
                      for a, b, g, peer in pairs]}


@pytest.fixture
def NV18():
    return topology.parse_topo_m(real.node_text("nvidia-smi-topo-m", "mleng-8x-h100-nv18-spaces.txt"))


@pytest.fixture
def PCIE():
    return topology.parse_topo_m(real.node_text("nvidia-smi-topo-m", "nccl667-4gpu-pcie-pxb-pix-sys-no-legend.txt"))


HOST = [(0, 25.0, 26.0), (1, 25.0, 26.0), (2, 25.0, 26.0), (3, 25.0, 26.0)]


def test_nvlink_pairs_far_faster_than_pcie_pass(NV18):
    r = result([(0, 1, 370.0, True), (1, 0, 365.0, True)], [(0, 52.0, 53.0), (1, 52.0, 53.0)])
    f = by_check(topology.judge_p2p_copy(r, NV18, {}, 26.562))
    assert f["topology.p2p_copy"].status is Status.OK
    assert f["topology.p2p_bandwidth"].status is Status.OK
    assert f["topology.p2p_copy"].evidence[0] == "GPU0->GPU1 (NV18): 370.0 GB/s, peer access True, data ok"


def test_nvlink_pair_at_pcie_speed_warns(NV18):
    r = result([(0, 1, 40.0, True), (1, 0, 370.0, True)], [(0, 52.0, 53.0), (1, 52.0, 53.0)])
    f = by_check(topology.judge_p2p_copy(r, NV18, {}, 26.562))
    w = f["topology.p2p_bandwidth"]
    assert w.status is Status.WARN
    assert w.actual == ["GPU0->GPU1 (NV18): 40.0 GB/s, expected >= 191 GB/s over NVLink"]


def test_nvlink_pair_without_peer_access_warns(NV18):
    r = result([(0, 1, 20.0, False)], [(0, 52.0, 53.0), (1, 52.0, 53.0)])
    w = by_check(topology.judge_p2p_copy(r, NV18))["topology.p2p_bandwidth"]
    assert w.status is Status.WARN and "torch reports no peer access" in w.message


def test_p2p_capable_pcie_pair_at_host_staged_speed_warns(PCIE):
    r = result([(0, 1, 24.0, True), (2, 3, 11.0, True), (0, 2, 9.0, False)], HOST)
    w = by_check(topology.judge_p2p_copy(r, PCIE, {(0, 1): True, (2, 3): True, (0, 2): False}))["topology.p2p_bandwidth"]
    assert w.status is Status.WARN
    # GPU0->GPU1 at 24 GB/s is a direct copy; GPU0->GPU2 has no P2P, so its slowness is expected
    assert w.actual == ["GPU2->GPU3 (PIX): 11.0 GB/s, no faster than staging through host memory (host link 25.0 GB/s)"]


def test_copy_judge_errors_and_missing_output():
    assert topology.judge_p2p_copy(None)[0].status is Status.ERROR
    assert topology.judge_p2p_copy(None, parse_error="the P2P copy test printed broken JSON (cut off?)")[0].message.startswith("the P2P")
    r = {"error": "torch not importable: No module named 'torch'", "pairs": []}
    assert topology.judge_p2p_copy(r)[0].status is Status.ERROR
    assert topology.judge_p2p_copy(result([]))[0].status is Status.SKIP


def test_area_judge_runs_copy_judgement_when_asked(NV18):
    facts = topology.parse({
        "topo_m": real.node_text("nvidia-smi-topo-m", "mleng-8x-h100-nv18-spaces.txt"),
        "topo_p2p_r": real.node_text("nvidia-smi-topo-p2p", "mleng-8x-h100-p2p-r-all-ok.txt"),
        "p2p_copy": json.dumps(result([(0, 1, 380.0, True), (1, 0, 20.0, True)], [(0, 52.0, 53.0), (1, 52.0, 53.0)])),
    })
    g = gpu.GpuFacts(gpus=[gpu.Gpu(i, "NVIDIA H100 80GB HBM3") for i in range(8)],
                     nvlink=[gpu.NvLinkGpu(0, links={0: 26.562})])
    f = by_check(topology.judge(facts, NodeFacts("n1", {"gpu": g}, {"p2p_test": True})))
    assert f["topology.p2p_copy"].status is Status.OK
    assert f["topology.p2p_bandwidth"].status is Status.WARN and "GPU1->GPU0 (NV18): 20.0 GB/s" in f["topology.p2p_bandwidth"].message
    # asked for, but the section never came back
    facts.p2p_copy = None
    f = by_check(topology.judge(facts, NodeFacts("n1", {"gpu": g}, {"p2p_test": True})))
    assert f["topology.p2p_copy"].status is Status.ERROR
