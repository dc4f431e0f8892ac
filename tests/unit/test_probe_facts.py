"""The NCCL probe's node facts: the check's own sources and parsers, run through a probe node.

The node is this machine (the probe's LocalNode), its /sys a fixture tree made
from a real /sys/class/infiniband capture (``tests/trees.py``), and
``nvidia-smi`` a stand-in that prints a real ``nvidia-smi nvlink --status``
capture; the ``--query-gpu`` CSV is the constructed 8x H100 one of
:mod:`tests.unit.bundles`.
"""
import os
import stat

import pytest

from nccldiag.diagnosis import expected
from nccldiag.probe import facts
from nccldiag.transport.nodes import LocalNode
from tests import real
from tests.trees import write_tree

from . import bundles as B


def _stand_in(bindir, nvlink: str, query: str):
    bindir.mkdir()
    (bindir / "nvlink.txt").write_text(nvlink)
    (bindir / "query.txt").write_text(query)
    tool = bindir / "nvidia-smi"
    tool.write_text(f'#!/bin/sh\ncase "$*" in *nvlink*) cat {bindir}/nvlink.txt;; *query-gpu*) cat {bindir}/query.txt;; esac\n')
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)


def test_probe_facts_from_a_node_give_the_expected_bandwidth(tmp_path, monkeypatch):
    root = tmp_path / "root"
    write_tree(real.node_text("sysfs-infiniband", "gpud-h100-ndr400-8ib-plus-bond-ethernet.txt"), str(root))
    _stand_in(tmp_path / "bin", real.node_text("nvidia-smi-nvlink", "mleng-h100-nvlink-status-elided.txt"),
              B.h100_query_csv())
    monkeypatch.setenv("NCCLDIAG_ROOT", str(root))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    got = facts.collect([LocalNode("n1")], timeout=60)
    f = got["n1"]
    assert sum(1 for p in f["ib"].ports if p.active and p.rate == 400.0) == 8
    assert len(f["gpu"].gpus) == 8 and f["gpu"].nvlink[0].links == {0: 26.562, 17: 26.562}
    exp = expected.expect({"n1": f, "n2": f}, ["n1", "n2"])
    assert exp.gbps == pytest.approx(400.0) and exp.bottleneck.name == "IB/RoCE"


def test_a_node_that_cannot_answer_has_no_facts():
    class Down:
        name = "n9"

        def run(self, command, timeout, stdin=None):
            from nccldiag.transport.base import TransportError

            raise TransportError("unreachable", "n9: connection timed out")

    assert facts.collect([Down()], timeout=5) == {}


def test_probe_report_carries_the_facts_into_its_bandwidth_lines(tmp_path):
    from nccldiag.diagnosis import Inputs, summary
    from nccldiag.areas import gpu
    from nccldiag.probe import analysis, results
    from nccldiag.probe.plan import Setting
    from nccldiag.probe.runner import SettingRun

    f = {"gpu": gpu.parse({"gpu_query": B.h100_query_csv(),
                           "nvlink_status": real.node_text("nvidia-smi-nvlink", "mleng-h100-nvlink-status-elided.txt")})}
    # arranged for this test: the worker's real gloo records stand for one node's NCCL run
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "probe-records", "gloo-4rank-default.jsonl")
    with open(path, encoding="utf-8") as fh:
        recs = results.read_records(fh)
    rep = analysis.analyze(runs=[SettingRun(setting=Setting("default"), records=recs, logs={})],
                           settings=[Setting("default")], backend="nccl", require_ib=False, launcher="local",
                           hosts=["vm"], unreachable={}, problems={}, loopback={}, ifnames={}, nproc_per_node=4,
                           node_facts={"vm": f})
    bw = summary(Inputs(probe=rep), []).bandwidth["default"]
    assert bw["expected"]["bottleneck"]["segment"] == "NVLink" and bw["expected"]["gbps"] == pytest.approx(478.1, abs=0.1)
    assert not bw["comparable"]  # the capture's sweep stops at 1 MiB
