"""NCCL's IB transport listing ports of two link layers (``ib-hca-mixed-link-layers``): an Ethernet port with RoCE
taken beside InfiniBand HCAs, on the real text of the practitioner's book (``tests/cases``, its source in
``tests/cases/SOURCES.md``) and the Azure case whose NET/IB line mixes the two, and silent on real working runs whose
NET/IB lines are of one link layer: eight IB HCAs (the book's correct set-up), one RoCE bond (a shared working run)
and a two-node GPUDirect RDMA run over IB (a shared NCCL log, read in place).
"""
from __future__ import annotations

from pathlib import Path

from tests import real, realcases

CASES = Path(__file__).resolve().parents[1] / "cases"
ID = "ib-hca-mixed-link-layers"


diagnoses = realcases.alarms_of
case = realcases.alarms_of_case


def test_a_roce_bond_beside_eight_ib_hcas_is_named_with_the_port():
    ds = case(CASES / "net-mlengineering-nccl-net-ib-mlx5-bond-roce-included-low-bandwidth")
    assert [d.id for d in ds] == [ID], [(d.id, d.summary) for d in ds]
    (d,) = ds
    assert (d.category, d.severity, d.confidence) == ("nccl_env_misconfig", "warn", "medium")
    assert "mlx5_bond_0" in d.summary and "NCCL_IB_HCA" in d.fix
    assert any("[8]mlx5_bond_0:1/RoCE" in e.text for e in d.evidence), [e.text for e in d.evidence]


def test_the_mixed_line_comes_after_the_failure_it_sits_beside():
    ds = case(CASES / "net-mlengineering-azure-ib-error12-nodes-not-in-availability-set")
    ids = [d.id for d in ds]
    assert ID in ids and ids[0] != ID, ids
    (d,) = [d for d in ds if d.id == ID]
    assert "rdmaP1111p0s2" in d.summary and d.nodes == ["node-2"]


def test_net_ib_lines_of_one_link_layer_stay_silent():
    ib = CASES / "net-mlengineering-nccl-net-ib-8-mlx5-ibstat-healthy"
    assert ID not in [d.id for d in case(ib)]
    runs = [real.nccl_log("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log")]
    for p in runs:
        assert ID not in [d.id for d in diagnoses([p])], p
    roce = realcases.CASES / "gpu-tinygrad45-2x-rtx4090-p2p-disabled-shm-allreduce-healthy"
    real.require()
    assert "/RoCE" in (roce / "posted-part1-head.log").read_text(encoding="utf-8")
    assert ID not in [d.id for d in case(roce)]
