"""A live check lets go of each node's raw outputs once the node is judged and written out.

What stays of a node is :class:`~nccldiag.model.raw.ReleasedNode` (how it was reached) and its judged
report; the outputs themselves are unreachable, which the tests show with weak references to the node
objects the transport made, not with memory figures.
"""
from __future__ import annotations

import gc
import json
import threading
import weakref

import pytest
from click.testing import CliRunner

from nccldiag import diagnosis
from nccldiag.check import engine
from nccldiag.model.raw import RawNode, ReleasedNode, released
from nccldiag.transport import base
from nccldiag.transport.task import fan_out
from tests.unit import bundles


class _Result:
    """A result object a weak reference can follow (written for these tests)."""

    def __init__(self, i):
        self.i = i
        self.text = "x" * 1000


def test_fan_out_keeps_only_what_keep_returns():
    refs = []

    def on_result(item, r):
        gc.collect()
        assert all(ref() is None for ref in refs), "a result seen earlier is still held"
        refs.append(weakref.ref(r))

    kept = fan_out(list(range(30)), _Result, fanout=4, on_result=on_result, keep=lambda r: r.i)
    assert kept == list(range(30))
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_fan_out_with_keep_lets_at_most_fanout_results_wait_for_a_slow_caller():
    """While the caller is busy with one result, each worker finishes one more host and one more waits in
    the queue: 2 * fanout + 1 hosts done, and no worker starts another until the caller takes one."""
    width = 2
    started = []
    cond = threading.Condition()

    def work(i):
        with cond:
            started.append(i)
            cond.notify_all()
        return i

    first = []

    def on_result(item, r):
        if first:
            return
        first.append(r)
        with cond:  # the caller busy with its first result: the workers fill what they may and stop
            assert cond.wait_for(lambda: len(started) >= 2 * width + 1, timeout=60)
        assert len(started) == 2 * width + 1, started

    assert fan_out(list(range(20)), work, fanout=width, on_result=on_result, keep=lambda r: r) == list(range(20))


def test_fan_out_with_keep_cancelled_returns_while_workers_wait_to_hand_over():
    cancel = threading.Event()

    def on_result(item, r):
        cancel.set()

    out = fan_out(list(range(20)), lambda i: i, fanout=2, on_result=on_result, cancel=cancel, keep=lambda r: r)
    assert len(out) < 20


def _node(host: str, srcs: dict, error=None, extra=None) -> RawNode:
    return RawNode(host=host, sections=dict(srcs), rcs={n: 0 for n in srcs}, error=error, elapsed=0.5,
                   extra=dict(extra or {}))


def _live_nodes():
    """What the transport returns for each host: the bundles' real-capture nodes (see tests/unit/bundles.py),
    one unreachable host, one host whose first try timed out, and a key trusted on first use."""
    return {
        "gpu001": [_node("gpu001", bundles.healthy_h100("gpu001", "10.0.0.11"),
                         extra={"transport": "ssh", "notes": ["trusted gpu001's ed25519 key (trust on first use)"]})],
        "gpu002": [_node("gpu002", bundles.healthy_h100("gpu002", "10.0.0.12"), extra={"transport": "ssh"})],
        "ws01": [_node("ws01", bundles.consumer_5090("ws01", "192.168.1.20"), extra={"transport": "ssh"})],
        "gone": [RawNode(host="gone", error=base.TransportError(base.REFUSED, "connection refused", "gone").to_dict(),
                         extra={"transport": "ssh"})],
        "slow": [RawNode(host="slow", error=base.TransportError(
                     base.COMMAND_TIMEOUT, "no answer: the login sent nothing and did not start the script within "
                     "2 s", "slow").to_dict(), extra={"transport": "ssh"}),
                 _node("slow", bundles.healthy_h100("slow", "10.0.0.13"), extra={"transport": "ssh"})],
    }


def _fake_transport(monkeypatch, made):
    """``runner.collect_host`` answering from :func:`_live_nodes`; every node it makes is in ``made``."""
    from nccldiag.collect import runner

    answers = _live_nodes()
    lock = threading.Lock()

    def collect_host(h, script, opts, targets=()):
        with lock:
            node = answers[h.name].pop(0)
            made.append(weakref.ref(node))
        return node

    monkeypatch.setattr(runner, "collect_host", collect_host)
    import nccldiag.transport.ssh as ssh

    monkeypatch.setattr(ssh, "resolve_names", lambda names, timeout, **kw: {n: [] for n in names})


def test_collect_hosts_with_release_holds_no_node_once_it_was_seen(monkeypatch):
    from nccldiag.collect import runner
    from nccldiag.inventory import Host
    from nccldiag.transport.ssh import SSHOptions

    made = []
    _fake_transport(monkeypatch, made)
    seen = []

    def on_node(node):
        gc.collect()
        # every node handed over before this one is gone, whatever was in it
        assert all(ref() is None for ref in seen), [ref() for ref in seen]
        seen.append(weakref.ref(node))

    hosts = [Host(h) for h in ("gpu001", "gone", "slow", "gpu002", "ws01")]
    out = runner.collect_hosts(hosts, "", runner.CollectOptions(ssh=SSHOptions(), fanout=2, mesh="none"),
                               on_node=on_node, release=True)
    gc.collect()
    assert len(made) == 6 and all(ref() is None for ref in made)  # the slow host's two tries included
    assert [n.host for n in out] == ["gpu001", "gone", "slow", "gpu002", "ws01"]
    assert all(isinstance(n, ReleasedNode) and n.sections == {} for n in out)
    assert out[1].error["kind"] == base.REFUSED
    assert out[2].error is None and out[2].extra["tries"] == [
        "no answer: the login sent nothing and did not start the script within 2 s"]
    assert out[0].extra["notes"] == ["trusted gpu001's ed25519 key (trust on first use)"]


def test_a_released_node_is_never_judged():
    raw = _node("gpu001", bundles.healthy_h100())
    with pytest.raises(ValueError, match="released"):
        engine.analyze_node(released(raw), [])
    assert released(raw).rcs == raw.rcs and raw.sections  # the node itself keeps its outputs


def test_check_judges_each_node_as_it_arrives_and_reports_as_if_all_were_held(monkeypatch, tmp_path):
    """The live check holds no node's outputs once the node is judged, and its report is the one the same
    nodes judged together (all held) give."""
    from nccldiag import areas as registry
    from nccldiag.cli import main
    from nccldiag.report import check_report
    from nccldiag.report.jsonout import dumps

    made = []
    _fake_transport(monkeypatch, made)
    judged = []
    real_analyze_node = engine.analyze_node

    def analyze_node(raw, areas, options=None, spec=None):
        gc.collect()
        assert all(ref() is None for ref in judged), "a node judged earlier still holds its outputs"
        judged.append(weakref.ref(raw))
        return real_analyze_node(raw, areas, options, spec)

    monkeypatch.setattr(engine, "analyze_node", analyze_node)
    res = CliRunner().invoke(main, ["check", "-w", "gpu001,gone,slow,gpu002,ws01", "--mesh", "none", "--fanout", "2",
                                    "--run-dir", str(tmp_path / "run"), "--save", str(tmp_path / "b"),
                                    "--json", "-"])
    assert res.exit_code in (0, 1, 3), res.output
    live = json.loads(res.stdout)
    gc.collect()
    assert len(made) == 6 and all(ref() is None for ref in made)

    # the same nodes, held whole and judged together
    monkeypatch.setattr(engine, "analyze_node", real_analyze_node)
    whole = _live_nodes()
    raws = [whole[h][-1] for h in ("gpu001", "gone", "slow", "gpu002", "ws01")]
    raws[2].extra["tries"] = ["no answer: the login sent nothing and did not start the script within 2 s"]
    report = engine.analyze(raws, registry.select(None, None), {"p2p_test": False})
    diagnosis.attach(report, check=report)
    held = json.loads(dumps(check_report.to_json(report)))
    assert live["nodes"] == held["nodes"]
    assert any("trust on first use" in n for n in live["notes"])
    # the run directory's report.json, written piece by piece, is the text --json - printed
    assert (tmp_path / "run" / "report.json").read_text() == res.stdout
    # what was written as the nodes arrived is every node's whole output
    from nccldiag import bundle

    saved = {n.host: n for n in bundle.read_bundle(str(tmp_path / "b"))}
    assert saved["gpu002"].sections == whole["gpu002"][0].sections
    kept = {n.host: n for n in bundle.read_bundle(str(tmp_path / "run" / "raw"))}
    assert kept["ws01"].sections == whole["ws01"][0].sections


def test_the_report_text_is_an_indented_outline_of_compact_members():
    """Written for this test: a document with what a report may hold (nested lists and dicts, empty ones,
    non-ASCII text, a NaN, a set made a string by default=str). The outline is indented down to a node's
    areas; each area is one compact line."""
    from nccldiag.report.jsonout import dumps, plain

    doc = {"nodes": [{"host": "gpu001", "facts": {"ib": {"ports": [], "rate": 400.0, "x": {}}}, "m": "\u00e9\u2028"}],
           "nan": float("nan"), "set": {3}, "tuple": (1, 2), "none": None, 7: "seven"}
    assert dumps(doc) == (
        '{\n  "nodes": [\n    {\n      "host": "gpu001",\n      "facts": {\n'
        '        "ib": {"ports": [], "rate": 400.0, "x": {}}\n      },\n      "m": "\\u00e9\\u2028"\n    }\n  ],\n'
        '  "nan": NaN,\n  "set": "{3}",\n  "tuple": [1, 2],\n  "none": null,\n  "7": "seven"\n}\n')
    assert json.dumps(plain(doc)) == json.dumps(json.loads(dumps(doc)))


def test_the_outline_reads_back_as_the_document_at_every_depth():
    """Written for this test: nested arrays and objects past the outline's depth, in arrays and out of them."""
    from nccldiag.report.jsonout import dumps, plain

    leaf = {"a": [1, {"b": [None, True, 1.5, "x\n\"y"]}], "e": [], "f": {}}
    doc = {"l0": [leaf, [leaf, [leaf, [leaf]]]], "d0": {"d1": {"d2": {"d3": {"d4": leaf}}}}, "s": "t"}
    text = dumps(doc)
    assert json.loads(text) == plain(doc)
    assert all(len(line) - len(line.lstrip(" ")) <= 8 for line in text.splitlines())


def test_srun_collect_with_release_holds_no_node_once_it_was_seen(monkeypatch):
    """The srun engine lets go of each node's outputs as the SSH one does. The step's output is the real
    collection script's, run here with sh, as srun labels it per task (the step itself is faked)."""
    import re
    import subprocess

    from nccldiag.areas.base import Source
    from nccldiag.collect import runner
    from nccldiag.collect import srun

    script = runner.script_for([], [Source("said", "echo fine", 5)], "ab12cd34")
    out = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60).stdout

    def run_streaming(argv, timeout, on_line, cancel=None, env=None, stdin_text=None, host=""):
        step = re.search(r"' ([0-9a-f]{16}) \"", argv[-1]).group(1)
        for k, node in enumerate(["n1", "n2", "n3"]):
            on_line(f"{k}: @@nccldiag:{step}:node {node}@@")
            for line in out.splitlines():
                on_line(f"{k}: {line}")
            on_line(f"{k}: @@nccldiag:{step}:done@@")
        return base.ExecResult(host="srun", rc=0)

    monkeypatch.setattr(srun, "run_streaming", run_streaming)
    monkeypatch.setattr(srun.commands, "srun_step", lambda *a, **kw: ["srun"])
    seen = []

    def on_node(node):
        gc.collect()
        assert all(ref() is None for ref in seen), [ref() for ref in seen]
        assert node.sections["said"] == "fine\n", node
        seen.append(weakref.ref(node))

    hosts = ["n1", "n2", "n3"]
    nodes = srun.collect(hosts, {h: h for h in hosts}, {}, script, {}, "ab12cd34", command_timeout=30,
                         whole_run=60, on_node=on_node, order={h: i for i, h in enumerate(hosts)}, release=True)
    gc.collect()
    assert len(seen) == 3 and all(ref() is None for ref in seen)
    assert [n.host for n in nodes] == hosts
    assert all(isinstance(n, ReleasedNode) and n.sections == {} and n.rcs == {"said": 0} for n in nodes), nodes
    assert nodes[0].extra["slurm_node"] == "n1"


def test_spec_init_from_live_nodes_judges_them_whole(monkeypatch):
    """``spec init -w`` judges its few reference nodes after the collection: their outputs are kept for it
    (a released node would be an internal error, exit 4)."""
    from nccldiag.cli import main

    _fake_transport(monkeypatch, [])
    res = CliRunner().invoke(main, ["spec", "init", "-w", "gpu001"])
    assert res.exit_code == 0, res.output
    assert "[gpu]" in res.stdout and "released" not in res.output


def test_check_keeps_of_each_judged_node_its_findings_summary_and_the_facts_diagnoses_read(monkeypatch, tmp_path):
    """Once a node is judged, the facts of the areas no diagnosis reads are let go (their part of the report
    is read back as it is written), and the report's nodes are made one at a time as the report is written:
    no node's part is held once the next one is made."""
    from nccldiag.cli import main
    from nccldiag.diagnosis.inputs import NODE_AREAS

    _fake_transport(monkeypatch, [])
    dropped = []  # facts of areas no diagnosis reads, by node
    real_analyze_node = engine.analyze_node

    def analyze_node(raw, areas, options=None, spec=None):
        gc.collect()
        assert all(ref() is None for ref in dropped), "facts of a node judged earlier are still held"
        nr = real_analyze_node(raw, areas, options, spec)
        dropped.extend(weakref.ref(v) for k, v in nr.facts.items() if k not in NODE_AREAS and v is not None
                       and not isinstance(v, (str, int, float, bool)))
        return nr

    kept = {}
    real_analyze = engine.analyze

    def analyze(raws, areas, options=None, judged=None, spec=None):
        kept.update(judged or {})
        return real_analyze(raws, areas, options, judged=judged, spec=spec)

    entries = []  # each node's part of the report, as made for writing
    from nccldiag.report import check_report

    real_plain = check_report.plain

    class Entry(dict):  # a dict a weak reference can follow
        pass

    def plain(data):
        out = real_plain(data)
        if "host" not in out:
            return out
        gc.collect()
        assert all(ref() is None for ref in entries), "a node's part of the report is held after the next is made"
        entry = Entry(out)
        entries.append(weakref.ref(entry))
        return entry

    monkeypatch.setattr(engine, "analyze_node", analyze_node)
    monkeypatch.setattr(engine, "analyze", analyze)
    monkeypatch.setattr(check_report, "plain", plain)
    res = CliRunner().invoke(main, ["check", "-w", "gpu001,gone,gpu002,ws01", "--mesh", "none", "--fanout", "2",
                                    "--run-dir", str(tmp_path / "run"), "--json", str(tmp_path / "r.json")])
    assert res.exit_code in (0, 1, 3), res.output
    assert dropped and len(entries) == 4  # made once, for report.json; --json is a copy of its text
    assert (tmp_path / "r.json").read_text() == (tmp_path / "run" / "report.json").read_text()
    gc.collect()
    assert all(ref() is None for ref in dropped)
    assert set(kept) == {"gpu001", "gone", "gpu002", "ws01"}
    for host, nr in kept.items():
        assert set(nr.facts) <= set(NODE_AREAS), (host, sorted(nr.facts))
        assert nr.summary is not None and (nr.summary or host == "gone")
    # the facts let go are in the report all the same, read back for it
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["nodes"][0]["facts"]["pcie"] and doc["nodes"][0]["facts"]["gpu"]
    assert (tmp_path / "run" / "report.json").read_text() == (tmp_path / "r.json").read_text()


def test_the_rules_read_the_facts_of_no_node_area_a_check_lets_go():
    """A check keeps, of each node's facts, only the areas in NODE_AREAS for the diagnoses: every area a rule
    asks ``inp.facts`` (or the expected bandwidth reads) for is one of them."""
    import pathlib
    import re

    from nccldiag.diagnosis.inputs import NODE_AREAS

    root = pathlib.Path(engine.__file__).resolve().parents[1] / "diagnosis"
    asked = set()
    for path in root.rglob("*.py"):
        text = path.read_text()
        asked.update(re.findall(r"\.facts\([^,()]+,\s*\"(\w+)\"\)", text))
        if path.name == "expected.py":
            asked.update(re.findall(r"facts\.get\(\"(\w+)\"\)", text))
    assert {"ib", "system", "topology", "gpu"} <= asked  # the search finds what it looks for
    assert asked <= set(NODE_AREAS), sorted(asked - set(NODE_AREAS))


@pytest.mark.parametrize("nodes", [[], [{"host": "a", "facts": {}}],
                                   [{"host": "a", "f": [1, {"m": "x\ny\u2028\u00e9"}], "e": {}, "l": []},
                                    {"host": "b", "nan": float("nan"), "set": {3}}]])
def test_a_report_written_node_by_node_is_the_text_of_the_whole_document(nodes):
    """Written for this test: documents with what a report's nodes may hold."""
    from nccldiag.atomic import pieces
    from nccldiag.atomic import streamed

    doc = {"schema": "x", "nodes": nodes, "after": {"diagnoses": []}}
    assert "".join(streamed(dict(doc, nodes=[]), iter(nodes))) == "".join(pieces(doc))


def test_a_report_streamed_node_by_node_is_the_text_of_the_whole_document():
    """Written for this test: a report head and nodes with findings, facts, empty values and plain arrays."""
    from nccldiag.atomic import dumps, streamed

    head = {"schema": "nccldiag.check/1", "areas": ["ssh", "ib"], "summary": {"nodes": 2, "by_status": {"ok": 1}},
            "notes": [], "nodes": [], "diagnoses": [{"id": "x", "nodes": ["gpu001"], "evidence": []}]}
    nodes = [{"host": f"gpu00{i}", "areas": {"ssh": "ok", "ib": None},
              "findings": [{"check": "ssh.collect", "evidence": ["a", "b"], "actual": {"n": i}}],
              "facts": {"ib": {"ports": [{"name": "mlx5_0", "rate": 400}], "none": {}}, "ssh": None}}
             for i in (1, 2)]
    assert "".join(streamed(head, iter(nodes))) == dumps(dict(head, nodes=nodes))
    assert "".join(streamed(head, iter([]))) == dumps(head)
