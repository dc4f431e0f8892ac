"""Run directories round-trip: the live report document equals the one rebuilt from what the run kept.

For each command the run directory is written through :class:`nccldiag.rundir.Run` (probe: through
:class:`nccldiag.probe.records.Writer`, as ``probe/session.py`` writes it), then read back by
``nccldiag report``'s :func:`nccldiag.report.rebuild.load` with ``report.json`` removed, as after a crash.
Inputs are real captures: check bundles of real node outputs (:mod:`tests.unit.bundles`), probe records the
worker wrote (``tests/fixtures/probe-records``), NCCL logs and node outputs captured on real machines.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Dict

import jsonschema
import pytest
from click.testing import CliRunner

from nccldiag import rundir
from nccldiag.cli import main
from nccldiag.isolate import judge as isolate
from nccldiag.isolate import run as isolate_run
from nccldiag.isolate.judge import IsolateReport, Job, Round
from nccldiag.probe import analysis, records, results
from nccldiag.probe.plan import Setting
from nccldiag.probe.runner import NodeRun, SettingRun
from nccldiag.report import isolate_report, probe_report, rebuild
from nccldiag.report import schema as schemas
from nccldiag.report.finish import finish
from nccldiag.report.outputs import Outputs
from tests import real

from . import bundles as B

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "probe-records"
# what only a run that reached its end has, or that a rebuilt report adds to say it did not
ONLY_LIVE = ("elapsed_s", "generated_at", "interrupted", "note", "notes", "exit_code")


def comparable(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in ONLY_LIVE}


def cli(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res


def test_check_document_rebuilt_from_its_run_directory_equals_the_live_one(tmp_path):
    down = B.healthy_h100("gpu002", "10.0.0.12")  # its IB port down (a real capture)
    del down["ib_sysfs"]
    down["ibstat"] = B.fixture("ibstat/netop249-sriov-vf-cx6-state-down-physical-linkup-lid65535-spaces.txt")
    bundle = B.write_bundle(tmp_path / "bundle", {"gpu001": B.healthy_h100(), "gpu002": down,
                                                  "ws01": B.consumer_5090()})
    run = tmp_path / "run"
    assert cli("check", "--bundle", bundle, "--run-dir", run, "--color", "never").exit_code == 1
    live = json.loads((run / "report.json").read_text())
    (run / "report.json").unlink()
    again = rebuild.load(str(run))
    assert again["interrupted"] is True and again["exit_code"] == live["exit_code"] == 1
    assert comparable(again) == comparable(live)
    assert again["notes"][:-1] == live["notes"]


def test_check_run_json_is_encoded_and_decoded_beside_the_run_that_writes_it(tmp_path):
    """``run.json`` of a check is :class:`CheckMeta`'s, as written by the live run; a field of the wrong type is
    an error naming the file, never a report of other areas (CONSTRUCTED: the areas made a string)."""
    from nccldiag.sessions.check import CheckMeta

    bundle = B.write_bundle(tmp_path / "bundle", {"gpu001": B.healthy_h100()})
    run = tmp_path / "run"
    assert cli("check", "--bundle", bundle, "--run-dir", run, "--only", "gpu,ib").exit_code == 0
    kept = json.loads((run / "run.json").read_text())
    meta = CheckMeta.from_json(kept)
    assert meta.hosts == ["gpu001"] and "gpu" in meta.areas and "ib" in meta.areas and "nvlink" not in meta.areas and meta.bundle == str(bundle)
    assert {k: kept[k] for k in meta.to_json()} == meta.to_json()
    assert list(kept)[:3] == ["command", "run_id", "started"] and meta.started == kept["started"]
    (run / "report.json").unlink()
    (run / "run.json").write_text(json.dumps(dict(kept, areas="gpu")))
    res = cli("report", run)
    assert res.exit_code == 2 and "run.json: 'areas' should be a list of names" in res.output


def test_only_the_run_directory_module_names_what_a_run_directory_holds():
    """run.json, report.json and raw/ are written through rundir.Run alone: no other module names them."""
    import ast

    pkg = Path(rundir.__file__).parent
    names = {rundir.META, rundir.REPORT, rundir.RAW}
    found = [f"{p.relative_to(pkg)}:{n.lineno} {n.value}" for p in sorted(pkg.rglob("*.py")) if p.name != "rundir.py"
             for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.Constant) and n.value in names]
    assert found == []


def _probe_inputs():
    """A two-setting NCCL probe on one node, standing in for a live run: the records are those nccldiag's worker
    wrote in a 4-rank gloo run (tests/fixtures/probe-records), the NCCL log and the node's InfiniBand and GPU
    outputs were captured on real machines; the setting names, node outcome and interface speed are written for
    this test."""
    recs = [json.loads(l) for l in (RECORDS / "gloo-4rank-default.jsonl").read_text().splitlines()
            if l.startswith("{")]
    node = B.healthy_h100("vm", "10.0.0.11")
    sections = {n: node.get(n) for n in ("ib_sysfs", "ibstat", "gpu_query", "nvlink_status")}
    log = real.nccl_log("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log").read_text(errors="replace")
    settings = [Setting("default", {}, "what NCCL picks"), Setting("no-ib", {"NCCL_IB_DISABLE": "1"}, "sockets")]
    runs = []
    for i, s in enumerate(settings):
        sr = SettingRun(setting=s, records=[dict(r, setting=s.name) for r in recs], elapsed=12.5 + i,
                        run_id=f"nccldiag-test-{i}", commands={"vm": "torchrun ..."},
                        nodes={"vm": NodeRun("vm", 0, None, "", 12.0)}, counters={"vm": {"port_rcv_errors": 2}},
                        rejected={"vm": {"records": 1}} if i else {}, progress=[(4.0, "all_reduce")], stopped_s=None,
                        logs={"vm/nccl.vm.1234.log": log}, launched=results.Launched(("vm",), 4))
        runs.append(sr)
    meta = records.ProbeMeta(backend="nccl", launcher="torchrun", hosts=["vm"], nproc_per_node=4, timeout=600.0,
                             settings=settings, loopback={}, ifnames={"vm": "eth0"}, iface_speeds={"vm": 100000},
                             route_ifnames={"vm": "eth0"})
    return meta, runs, {"vm": sections}


def _analyze(meta: records.ProbeMeta, runs, node_facts, out_dir: str):
    return analysis.conclude(analysis.analyze(
        runs=runs, settings=meta.settings, backend=meta.backend, require_ib=meta.require_ib, launcher=meta.launcher,
        hosts=meta.hosts, unreachable={}, problems={}, loopback=meta.loopback, ifnames=meta.ifnames,
        nproc_per_node=meta.nproc_per_node, out_dir=out_dir, timeout=meta.timeout, run_id="nccldiag-test",
        iface_speeds=meta.iface_speeds, route_ifnames=meta.route_ifnames, node_facts=node_facts))


def test_probe_run_directory_keeps_what_the_analysis_read(tmp_path):
    from nccldiag.probe import facts

    meta, runs, sections = _probe_inputs()
    run = rundir.Run("probe", str(tmp_path / "run"), run_id="nccldiag-test")
    keep = records.Writer(run)
    keep.start(meta)
    for sr in runs:
        for rec in sr.records:
            keep.record(rec)
        keep.ended(sr)
    for host, secs in sections.items():
        keep.facts(host, secs)
    keep.close()
    node_facts = {h: facts.from_sections(s) for h, s in sections.items()}

    kept = records.read(run.path, rundir.read_meta(run.path))
    assert kept.meta.iface_speeds == {"vm": 100000} and kept.meta.route_ifnames == {"vm": "eth0"}
    assert [sr.logs.keys() for sr in kept.runs] == [{"vm/nccl.vm.1234.log"}] * 2  # cited as the live run cites
    assert kept.runs[1].rejected == {"vm": {"records": 1}} and kept.runs[0].launched == runs[0].launched
    for back, sr in zip(kept.runs, runs):
        assert back == sr
    live = probe_report.document(_analyze(meta, runs, node_facts, run.path))
    again = rebuild.load(run.path)
    assert comparable(again) == comparable(live)
    # the node facts came back: the expected-bandwidth comparison is the live run's
    assert live["diagnosis_summary"]["bandwidth"] and again["diagnosis_summary"] == live["diagnosis_summary"]


def _isolate_report(out_dir: str) -> IsolateReport:
    """A two-node gloo isolation whose pair round failed (the job's outcome written for this test)."""
    j0 = [Job(0, isolate.ALONE, "default", (n,), "ok", busbw=1.5, kind=isolate.OK) for n in ("a", "b")]
    j1 = Job(1, isolate.PAIRS, "default", ("a", "b"), "hang", init_failed=True, kind=isolate.NETWORK,
             evidence=["init failed: [pair.cc:152] timed out"])
    rep = IsolateReport(hosts=["a", "b"], backend="gloo", rows=[isolate.Row("default")], seed=1,
                        rounds=[Round(0, isolate.ALONE, j0), Round(1, isolate.PAIRS, [j1])], run_id="nccldiag-test",
                        out_dir=out_dir)
    rep.nodes, rep.pairs = isolate.verdicts(["a", "b"], ["default"], [j1])
    return rep


@pytest.mark.parametrize("stopped", [False, True])
def test_isolate_run_directory_renders_in_every_format(tmp_path, stopped):
    run = rundir.Run("isolate", str(tmp_path / "run"), run_id="nccldiag-test")
    rep = _isolate_report(run.path)
    run.create(rep.meta())
    keep = isolate_run._Kept(run)  # as the isolation writes it: records as they come, rounds as they end
    keep.add({"type": "start", "setting": "default"})
    keep.round(rep.rounds[0])
    run.close()
    live = isolate_report.document(rep)
    finish(live, Outputs(), None, run.path)
    if stopped:
        (Path(run.path) / "report.json").unlink()
    again = rebuild.load(run.path)
    jsonschema.validate(again, schemas.load(again["schema"]), cls=jsonschema.Draft202012Validator)
    if stopped:
        assert again["interrupted"] is True and again["exit_code"] == 3 and again["nodes"] == []
        assert again["hosts"] == ["a", "b"] and again["rows"] == live["rows"]
        # the round that ended is shown as it ran
        assert again["rounds"] == live["rounds"][:1] and again["rounds_after_round0"] == 0
    else:
        assert again == live
    out = {f: tmp_path / f"r.{f}" for f in ("json", "junit", "prom", "html")}
    res = cli("report", run.path, *[a for f, p in out.items() for a in (f"--{f}", p)], "--color", "never")
    assert res.exit_code == again["exit_code"], res.output
    assert json.loads(out["json"].read_text()) == again
    assert "<testsuite" in out["junit"].read_text() and "nccldiag isolate" in out["html"].read_text()
    assert "nccldiag_exit_code" in out["prom"].read_text()
    assert "nccldiag isolate" in res.stdout
    if not stopped:
        assert "nccldiag_isolate_node_status" in out["prom"].read_text() and "network" in res.stdout


def test_run_json_of_another_command_is_refused(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"command": "spec"}))
    res = cli("report", tmp_path)
    assert res.exit_code == 2 and "not the run.json of a check, probe or isolate run" in res.output


def test_a_run_is_named_and_placed_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run = rundir.Run("isolate")
    assert run.path == str(tmp_path / "state" / "nccldiag" / "isolate" / run.run_id)
    assert not Path(run.path).exists()
    run.create({"hosts": ["a"]})
    meta = rundir.read_meta(run.path)
    assert meta["command"] == "isolate" and meta["run_id"] == run.run_id and meta["started"]
    shutil.rmtree(run.path)


# ---- the terminal: nccldiag report RUN_DIR prints the live run's table, byte for byte ----------------------------


def test_report_prints_the_live_check_table_byte_for_byte(tmp_path):
    bundle = B.write_bundle(tmp_path / "bundle", {"gpu001": B.healthy_h100(), "ws01": B.consumer_5090()})
    run = tmp_path / "run"
    for verbose in ([], ["-v"]):
        shutil.rmtree(run, ignore_errors=True)
        live = cli("check", "--bundle", bundle, "--run-dir", run, "--color", "never", *verbose)
        again = cli("report", run, "--color", "never", *verbose)
        assert live.exit_code == again.exit_code
        assert "Verdict:" in live.stdout and "ws01" in live.stdout and "run directory" not in live.stdout
        assert again.stdout == live.stdout


def test_report_prints_the_live_probe_table_byte_for_byte(tmp_path, monkeypatch):
    """A probe whose run is stood in for by the analysis of records nccldiag's worker wrote (a 2-rank gloo run with
    a corrupted rank): the CLI renders and keeps it as after a real run."""
    from nccldiag.probe import session
    from nccldiag.probe.results import read_text

    run = tmp_path / "run"
    setting = Setting("default")
    recs = read_text((RECORDS / "gloo-2rank-corrupt-rank1.jsonl").read_text())

    def fake_run(hosts, opts, progress=None, warm=()):
        shutil.rmtree(run, ignore_errors=True)
        keep = records.Writer(rundir.Run("probe", str(run), run_id="nccldiag-test"))
        keep.start(records.ProbeMeta(backend="gloo", launcher="torchrun", hosts=["vm"], nproc_per_node=2,
                                     timeout=120.0, settings=[setting]))
        keep.close()
        sr = SettingRun(setting=setting, records=recs, elapsed=3.25, nodes={"vm": NodeRun("vm", 1, None, "", 3.0)})
        return analysis.conclude(analysis.analyze(
            runs=[sr], settings=[setting], backend="gloo", require_ib=False, launcher="torchrun", hosts=["vm"],
            unreachable={}, problems={}, loopback={}, ifnames={}, nproc_per_node=2, out_dir=str(run), elapsed=7.5,
            run_id="nccldiag-test"), opts.spec)

    monkeypatch.setattr(session, "run", fake_run)
    for verbose in ([], ["-v"]):
        live = cli("probe", "-w", "vm", "--backend", "gloo", "--color", "never", *verbose)
        assert live.exit_code == 1, live.output
        again = cli("report", run, "--color", "never", *verbose)
        assert again.exit_code == 1
        assert "wrong" in live.stdout and f"records and logs: {run}" in live.stdout
        assert again.stdout == live.stdout


def test_report_prints_the_live_isolate_table_byte_for_byte(tmp_path):
    from nccldiag.report.console import console

    run = rundir.Run("isolate", str(tmp_path / "run"), run_id="nccldiag-test")
    rep = _isolate_report(run.path)
    run.create(rep.meta())
    run.close()
    con = console(color="never")
    with con.capture() as cap:
        isolate_report.emit(rep, con, Outputs())
    again = cli("report", run.path, "--color", "never")
    assert "round 1 pairs" in cap.get() and again.stdout == cap.get()


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a directory to another user")
def test_a_parent_another_user_makes_while_the_run_directory_is_made_is_refused(tmp_path, monkeypatch):
    """``--run-dir /tmp/a/x/run`` with /tmp/a missing: another user makes /tmp/a (mode 777) between the check of
    the parents and their creation. Before, it was taken as a parent and the run wrote inside it."""
    from nccldiag import atomic

    attacker = tmp_path / "a"
    checked = atomic.check_parents
    calls = []

    def check_then_race(path):
        checked(path)
        if not calls:  # the other user wins the race once, right after the first check
            attacker.mkdir()
            os.chmod(attacker, 0o777)
            os.chown(attacker, 65534, 65534)
        calls.append(path)

    monkeypatch.setattr(atomic, "check_parents", check_then_race)
    with pytest.raises(atomic.Unsafe, match="belongs to uid 65534"):
        atomic.own_dir(str(attacker / "x" / "run"))
    assert not (attacker / "x").exists()


def _check_run(tmp_path: Path) -> Path:
    bundle = B.write_bundle(tmp_path / "bundle", {"gpu001": B.healthy_h100(), "ws01": B.consumer_5090()})
    run = tmp_path / "run"
    cli("check", "--bundle", bundle, "--run-dir", run, "--color", "never")
    return run


# values of the wrong type where a renderer reads a field (written for this test); each was an internal error
WRONG = [(("nodes", 0, "host"), ["a"]), (("nodes", 0, "findings", 0, "status"), {"a": 1}),
         (("nodes", 0, "findings", 0, "message"), 123), (("diagnoses",), "x"), (("summary", "by_status"), []),
         (("nodes", 0, "areas"), [1, "a"]), (("notes",), [None])]
SHOWN = {"notes": "notes[0]"}  # the place named is the first wrong one inside the value


@pytest.mark.parametrize("where,value", WRONG, ids=[".".join(map(str, w)) for w, _ in WRONG])
def test_a_report_json_of_the_wrong_types_is_a_usage_error_naming_the_field(tmp_path, where, value):
    run = _check_run(tmp_path)
    doc = json.loads((run / "report.json").read_text())
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    (run / "report.json").write_text(json.dumps(doc))
    for args in (["-v"], ["--json", tmp_path / "o.json", "--junit", tmp_path / "o.xml", "--prom", tmp_path / "o.prom"]):
        res = cli("report", run, "--color", "never", *args)
        assert res.exit_code == 2, res.output
        shown = SHOWN.get(".".join(map(str, where)), ".".join(map(str, where)).replace(".0", "[0]"))
        assert f"{run / 'report.json'}: {shown} should" in " ".join(res.output.split()), res.output


def test_an_isolate_threshold_of_the_wrong_type_is_a_usage_error(tmp_path):
    run = rundir.Run("isolate", str(tmp_path / "run"), run_id="nccldiag-test")
    rep = _isolate_report(run.path)
    run.create(rep.meta())
    run.close()
    doc = isolate_report.document(rep)
    doc["thresholds"] = {"default": {"threshold": "x", "distribution": {"n": 2, "median": []}}}
    (Path(run.path) / "report.json").write_text(json.dumps(doc))
    res = cli("report", run.path, "--color", "never", "--html", tmp_path / "o.html")
    assert res.exit_code == 2 and "thresholds.default" in res.output, res.output


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("name", ["report.json", "run.json"])
def test_json_nested_deeper_than_any_document_nccldiag_writes_is_refused(tmp_path, name):
    run = _check_run(tmp_path)
    if name != "report.json":
        (run / "report.json").unlink()
    (run / name).write_text('{"a": %s}' % DEEP)
    res = cli("report", run, "--color", "never")
    assert res.exit_code == 2 and f"{run / name}: cannot read it: arrays and objects nested more than 64 deep" in \
        " ".join(res.output.split()), res.output


def test_a_json_line_nested_too_deep_is_left_out_as_a_line_cut_by_a_crash(tmp_path):
    p = tmp_path / "records.jsonl"
    p.write_text('{"a": %s}\n{"type": "start"}\n{"b": %s}\n' % (DEEP, "[" * 65 + "]" * 65))
    assert list(rundir.iter_lines(str(p))) == [{"type": "start"}]


@pytest.mark.parametrize("name", ["_node.json", "_bundle.json"])
def test_a_bundle_whose_metadata_is_nested_too_deep_is_a_usage_error(tmp_path, name):
    bundle = B.write_bundle(tmp_path / "bundle", {"gpu001": B.healthy_h100()})
    (bundle / ("gpu001" if name == "_node.json" else "") / name).write_text('{"a": %s}' % DEEP)
    res = cli("check", "--bundle", bundle, "--run-dir", tmp_path / "run", "--color", "never")
    assert res.exit_code == 2 and "nested more than 64 deep" in res.output, res.output


@pytest.mark.parametrize("field,value", [("areas", 5), ("options", "x"), ("hosts", {"a": 1}), ("spec", 5)])
def test_a_run_json_of_the_wrong_types_is_a_usage_error(tmp_path, field, value):
    run = _check_run(tmp_path)
    (run / "report.json").unlink()
    meta = json.loads((run / "run.json").read_text())
    meta[field] = value
    (run / "run.json").write_text(json.dumps(meta))
    res = cli("report", run, "--color", "never")
    assert res.exit_code == 2 and f"'{field}' should" in res.output, res.output
