"""A node's JSON lines read bounded: a line nested hundreds deep (or otherwise unreadable) is that node's and
that source's error, with the reason; the node's other areas, and every other node, are judged.

The deep lines are written for these tests (the shape of a hostile or broken wrapper's answer); the lines
around them are the python_env snippet's own output, run for real on this machine."""
from __future__ import annotations

import json
import sys

from nccldiag.areas import python as py
from nccldiag.areas import ssh as ssh_area
from nccldiag.areas import system, topology
from nccldiag.areas.base import JSON_DEPTH, json_line
from nccldiag.areas import gpu
from nccldiag.model.findings import Status
from nccldiag.model.raw import RawNode
from nccldiag.shards import judged
from tests.unit.test_area_python import run_snippet


def deep(n: int) -> str:
    """A JSON array nested ``n`` deep (written for these tests)."""
    return "[" * n + "]" * n


def done_line_with(torch_json: str) -> str:
    """The snippet's done line, its ``torch`` field replaced by ``torch_json`` (written for these tests)."""
    return '{"stage": "done", "python": "3.10.12", "executable": "/usr/bin/python3", "torch": ' + torch_json + '}'


def test_a_line_nested_past_the_bound_is_refused_with_the_reason_and_one_within_it_is_read():
    value, why = json_line(deep(JSON_DEPTH))
    assert why is None and value == json.loads(deep(JSON_DEPTH))
    for n in (JSON_DEPTH + 1, 800, 100_000):  # 100 000 deep: past the decoder's own stack (a RecursionError)
        value, why = json_line(deep(n))
        assert value is None and why == f"JSON nested deeper than {JSON_DEPTH} levels", (n, why)
    value, why = json_line('{"a": "' + "x" * 100 + '"}', limit=50)
    assert value is None and why.startswith("a JSON line of 109 characters")
    assert json_line("{")[1].startswith("not JSON")


def _python_env(done: str) -> str:
    secs, _ = run_snippet({"NCCLDIAG_PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    start = secs["python_env"].splitlines()[0]
    assert json.loads(start)["stage"] == "start"
    return start + "\n" + done + "\n"


def test_a_python_env_answer_800_deep_is_that_sources_error_and_the_node_is_judged():
    raw = RawNode(host="n1", sections={"python_env": _python_env(done_line_with(deep(800))),
                                       "hostname": "n1\n"}, rcs={"python_env": 0})
    j = judged.judge(raw, [ssh_area, system, py], {}, None)  # before the bound: RecursionError out of here
    f = next(f for f in j.node.findings if f.area == "python")
    assert (f.check, f.status) == ("python.output", Status.ERROR), f
    assert f"JSON nested deeper than {JSON_DEPTH} levels" in f.message
    assert not [x for x in j.node.findings if x.area == "python" and x is not f]
    assert json.loads(j.facts)["python"]["unreadable"] == f"JSON nested deeper than {JSON_DEPTH} levels"


def test_a_structure_where_a_version_belongs_is_an_error_never_torch_missing():
    raw = RawNode(host="n1", sections={"python_env": _python_env(done_line_with('{"v": [1, 2]}'))},
                  rcs={"python_env": 0})
    j = judged.judge(raw, [ssh_area, py], {}, None)
    [f] = [f for f in j.node.findings if f.area == "python"]
    assert (f.check, f.status) == ("python.output", Status.ERROR) and "'torch' is a JSON dict" in f.message


def test_the_real_snippet_output_still_reads_whole():
    secs, _ = run_snippet({"NCCLDIAG_PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    f = py.parse(secs)
    assert f.done and f.unreadable is None and f.python == ".".join(map(str, sys.version_info[:3]))
    assert not any(x.status is Status.ERROR for x in py.judge(f, None))


def test_nvml_and_p2p_copy_lines_nested_past_the_bound_are_their_sources_errors():
    snap, why = gpu.parse_nvml('{"driver": "550.54.15", "gpus": ' + deep(800) + "}\n")
    assert snap is None and why == f"NVML output could not be read: JSON nested deeper than {JSON_DEPTH} levels"
    result, why = topology.parse_p2p_copy('{"pairs": ' + deep(800) + "}\n")
    assert result is None and why.endswith(f"JSON nested deeper than {JSON_DEPTH} levels")


class Deep:
    """An area whose facts nest past the encoder's stack (written for this test: the bound's last line of
    defence, whatever an area keeps)."""

    NAME = "deepfacts"
    TITLE = "Deep"
    SOURCES = ()

    @staticmethod
    def parse(raw):
        v: list = []
        for _ in range(100_000):
            v = [v]
        return v

    @staticmethod
    def judge(facts, node):
        return []

    @staticmethod
    def summarize(facts):
        return {}


def test_an_area_whose_facts_cannot_be_written_is_that_areas_error_and_the_others_are_kept():
    raw = RawNode(host="n1", sections={"hostname": "n1\n"}, rcs={})
    j = judged.judge(raw, [ssh_area, system, Deep], {}, None)
    f = next(f for f in j.node.findings if f.area == "deepfacts")
    assert (f.check, f.status) == ("deepfacts.facts", Status.ERROR) and "RecursionError" in f.message
    facts = json.loads(j.facts)
    assert facts["deepfacts"] is None and facts["system"]


def test_check_of_a_bundle_with_one_node_800_deep_reports_every_node(tmp_path):
    """``check --bundle``: one node's python_env answer nested 800 deep (written for this test) is that node's
    python error; the other node is judged as ever, and the run ends with a report (before: exit 4, none)."""
    from tests.unit import bundles as B

    nodes = {h: B.healthy_h100(h, f"10.0.0.1{i}") for i, h in enumerate(("gpu001", "gpu002"), 1)}
    start = '{"stage": "start", "python": "3.10.12", "executable": "/usr/bin/python3"}\n'
    nodes["gpu001"]["python_env"] = start + done_line_with(deep(800)) + "\n"
    nodes["gpu002"]["python_env"] = start + done_line_with('"2.3.1+cu121"') + "\n"
    code, rep = B.check_json(B.write_bundle(tmp_path / "b", nodes), "--only", "system,python")
    assert code == 3, rep  # an error on a node: not every node checked
    by_host = {n["host"]: {f["check"]: f for f in n["findings"]} for n in rep["nodes"]}
    assert by_host["gpu001"]["python.output"]["status"] == "error"
    assert "nested deeper than 32 levels" in by_host["gpu001"]["python.output"]["message"]
    assert by_host["gpu002"]["python.interpreter"]["status"] == "ok"
    assert all(f["status"] == "ok" for c, f in by_host["gpu001"].items() if c.startswith("system."))
