"""Outputs several areas read alike (the kernel log, ``nvidia-smi -q``) are parsed once per node, and the
verdict is the one each area reaches parsing them on its own."""
from __future__ import annotations

from nccldiag.areas import all_areas, kernlog, smiq
from nccldiag.areas.base import Sections, parsed
from nccldiag.check import engine
from nccldiag.model.raw import RawNode
from tests.unit import bundles


def _node() -> RawNode:
    sections = dict(bundles.healthy_h100("gpu001"))
    # real captures: a full nvidia-smi -q with PCIe replays, an H100 boot kernel log
    sections["nvidia_smi_full"] = bundles.fixture(
        "pcie-aer/gpud-8x-h100-535.183.01-replays-since-reset-58-120-full-q.txt")
    sections["kernel_log"] = bundles.fixture(
        "kernel-xid/gpud-h100-boot-dmesg-decode-nvrm-nvswitch-no-xid-healthy.txt")
    return RawNode(host="gpu001", sections=sections, rcs={k: 0 for k in sections}, elapsed=0.1)


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(text):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_a_node_s_kernel_log_and_smi_report_are_parsed_once(monkeypatch):
    log_calls = _counting(monkeypatch, kernlog, "parse")
    q_calls = _counting(monkeypatch, smiq, "parse_q")
    engine.analyze_node(_node(), all_areas())
    assert len(log_calls) == 1, "four areas read the kernel log"
    assert len(q_calls) == 1, "four areas read nvidia-smi -q"


def test_each_area_reaches_the_same_facts_and_findings_as_parsing_alone(monkeypatch):
    raw = _node()
    shared = Sections(raw.sections)
    for area in all_areas():
        if engine.kind(area) != "node":
            continue
        assert repr(area.parse(shared)) == repr(area.parse(dict(raw.sections))), area.NAME
    judged = [f.to_dict() for f in engine.analyze_node(raw, all_areas()).findings]
    monkeypatch.setattr(engine, "Sections", dict)  # every area parses on its own
    alone = [f.to_dict() for f in engine.analyze_node(raw, all_areas()).findings]
    assert judged == alone
    # what the captures hold: the power brake slowdown of one GPU in the full report
    assert [(f["status"], f["check"]) for f in judged if f["status"] != "ok" and f["status"] != "skip"] == \
        [("fail", "gpuhealth.clocks")]


def test_parsed_without_a_node_s_sections_parses_each_time():
    calls = []
    raw = {"x": "text"}
    assert parsed(raw, "x", lambda t: calls.append(t) or len(t)) == 4
    assert parsed(raw, "x", lambda t: calls.append(t) or len(t)) == 4
    assert calls == ["text", "text"]
    shared = Sections(raw)
    fn = lambda t: calls.append(t) or len(t)  # noqa: E731
    assert parsed(shared, "x", fn) == parsed(shared, "x", fn) == 4
    assert len(calls) == 3
