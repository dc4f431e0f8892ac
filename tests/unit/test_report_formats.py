"""Report formats (--json, --junit, --prom, --html) and run directories, end to end through the CLI.

Inputs are real: check bundles assembled from captured node outputs (see
:mod:`tests.unit.bundles`), NCCL logs captured on real machines (``tests/real.py``),
and probe records written by nccldiag's own worker (``tests/fixtures/probe-records``,
see its SOURCES.md). Each format is read back with the library its consumers use:
jsonschema, junitparser, prometheus_client's parser, and a headless chromium.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Dict, List

import jsonschema
import pytest
from click.testing import CliRunner
from junitparser import Error, Failure, JUnitXml, Skipped
from prometheus_client.parser import text_string_to_metric_families

from nccldiag.cli import main
from nccldiag.report import schema as schemas
from tests import browser, real

from . import bundles as B

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "probe-records"
FORMATS = ("json", "junit", "prom", "html")


def cli(*args) -> "CliRunner.Result":
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res


def validate(doc: Dict) -> None:
    jsonschema.validate(doc, schemas.load(doc["schema"]), cls=jsonschema.Draft202012Validator)


def outputs(d: Path, stem: str) -> List[str]:
    return [a for f in FORMATS for a in (f"--{f}", str(d / f"{stem}.{ {'junit': 'xml'}.get(f, f) }"))]


def read(d: Path, stem: str) -> Dict[str, bytes]:
    return {f: (d / f"{stem}.{ {'junit': 'xml'}.get(f, f) }").read_bytes() for f in FORMATS}


def ib_down_node() -> Dict[str, str]:
    node = B.healthy_h100("gpu002", "10.0.0.12")
    del node["ib_sysfs"]
    node["ibstat"] = B.fixture("ibstat/netop249-sriov-vf-cx6-state-down-physical-linkup-lid65535-spaces.txt")
    return node


def cluster_bundle(tmp_path: Path) -> Path:
    """Two H100 nodes, the second with an IB port down, and a consumer box (all real captures)."""
    return B.write_bundle(tmp_path / "bundle", {"gpu001": B.healthy_h100(), "gpu002": ib_down_node(),
                                                 "ws01": B.consumer_5090()})


def probe_run_dir(tmp_path: Path, records: str, name: str = "run") -> Path:
    """A probe run directory holding records the worker wrote, kept through the probe's own writer as a run that
    stopped before its first setting ended (its run.json's world written for this test)."""
    from nccldiag import rundir
    from nccldiag.probe import records as kept
    from nccldiag.probe.plan import Setting

    d = tmp_path / name
    recs = [json.loads(l) for l in (RECORDS / records).read_text().splitlines() if l.startswith("{")]
    # the world the run launched, on its one host: every rank's start record says it
    world = max(r.get("world_size") or 0 for r in recs if r.get("type") == "start")
    keep = kept.Writer(rundir.Run("probe", str(d), run_id="nccldiag-test"))
    keep.start(kept.ProbeMeta(backend="gloo", launcher="torchrun", hosts=["vm"], nproc_per_node=world, timeout=120,
                              settings=[Setting("default")]))
    for rec in recs:
        keep.record(rec)
    keep.close()
    return d


# ---- JSON: every document validates against its published schema ---------------------------------


@pytest.mark.parametrize("nodes", ["healthy", "cluster"])
def test_check_json_of_real_bundles_validates(tmp_path, nodes):
    bundle = (B.write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()}) if nodes == "healthy"
              else cluster_bundle(tmp_path))
    code, doc = B.check_json(bundle)
    assert code == (0 if nodes == "healthy" else 1)
    validate(doc)
    if nodes == "healthy":
        assert doc["diagnoses"] == [] and doc["diagnosis_summary"]["healthy_nodes"] == ["gpu001"]
    else:  # ws01's driver differs from the H100 nodes': the diagnosis says so, and validates
        assert any("ws01" in d["nodes"] for d in doc["diagnoses"])
    broken = dict(doc, nodes=[dict(doc["nodes"][0], status="broken")])
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)


@pytest.mark.parametrize("name", real.names(real.NCCL_LOGS, "*.log"))
def test_log_json_of_every_real_nccl_log_validates(name):
    res = cli("log", real.nccl_log(name), "--json", "-")
    doc = json.loads(res.stdout)
    assert doc["schema"] == "nccldiag.log/1"
    validate(doc)


@pytest.mark.parametrize("records", ["gloo-4rank-default.jsonl", "gloo-2rank-corrupt-rank1.jsonl",
                                     "gloo-3rank-stall-rank2-all_gather.jsonl"])
def test_probe_json_from_kept_records_validates(tmp_path, records):
    res = cli("report", probe_run_dir(tmp_path, records), "--json", "-")
    doc = json.loads(res.stdout)
    validate(doc)
    assert doc["interrupted"] is True  # no report.json: rebuilt from what the run kept
    assert res.exit_code == (3 if records == "gloo-4rank-default.jsonl" else 1)


def test_log_writes_every_format_from_its_document(tmp_path):
    """nccldiag log offers the same report files as check and probe, all from the document --json writes."""
    log = real.nccl_log("socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log")
    res = cli("log", log, "--require-ib", *outputs(tmp_path, "log"), "--color", "never")
    assert res.exit_code == 1 and "Verdict:" in res.stdout
    doc = json.loads((tmp_path / "log.json").read_text())
    validate(doc)
    failed = sorted({f["check"] for f in doc["findings"] if f["status"] == "fail"})
    assert failed
    cases = {case.name: case for _, case in _cases(JUnitXml.fromfile(str(tmp_path / "log.xml")))}
    assert all(any(isinstance(r, Failure) for r in cases[c].result) for c in failed)
    fams = {f.name: f for f in text_string_to_metric_families((tmp_path / "log.prom").read_text())}
    statuses = {s.labels["check"]: s.value for s in fams["nccldiag_log_check_status"].samples}
    assert all(statuses[c] == 2 for c in failed)
    assert "nccldiag log" in (tmp_path / "log.html").read_text()


# ---- JUnit ----------------------------------------------------------------------------------------


def _cases(xml: JUnitXml):
    return [(suite.name, case) for suite in xml for case in suite]


def test_junit_check_one_case_per_node_and_check(tmp_path):
    bundle = cluster_bundle(tmp_path)
    code, doc = B.check_json(bundle)
    res = cli("check", "--bundle", bundle, "--junit", tmp_path / "c.xml", "--color", "never")
    assert res.exit_code == 1
    xml = JUnitXml.fromfile(str(tmp_path / "c.xml"))
    cases = _cases(xml)
    want = {(n["host"], f["check"]) for n in doc["nodes"] for f in n["findings"]}
    assert len(cases) == len(want)
    assert {(c.classname.split(".", 1)[1], c.name) for _, c in cases} == want
    failed = {(c.classname, c.name): c for _, c in cases if any(isinstance(r, Failure) for r in c.result)}
    assert set(failed) == {(f"check.{n['host']}", f["check"]) for n in doc["nodes"] for f in n["findings"]
                           if f["status"] == "fail"}
    port = failed[("check.gpu002", "ib.port_state")]
    msg = port.result[0].message
    assert "State Down" in msg and 'actual: Down/LinkUp' in msg and "expected: Active/LinkUp" in msg
    assert "subnet manager" in port.result[0].text
    # a healthy node passes every case; its skipped checks are skipped, never failed
    healthy = [c for _, c in cases if c.classname == "check.gpu001"]
    assert healthy and all(not c.result or isinstance(c.result[0], Skipped) for c in healthy)
    xml.update_statistics()
    assert xml.failures == len(failed) and xml.errors == 0


def test_junit_probe_one_case_per_setting_and_collective(tmp_path):
    run = probe_run_dir(tmp_path, "gloo-2rank-corrupt-rank1.jsonl")
    res = cli("report", run, "--junit", tmp_path / "p.xml", "--color", "never")
    assert res.exit_code == 1
    xml = JUnitXml.fromfile(str(tmp_path / "p.xml"))
    cases = {c.name: c for _, c in _cases(xml) if c.classname == "probe.default"}
    assert {"all_reduce", "reduce", "all_gather", "sendrecv"} <= set(cases)
    assert not cases["reduce"].result
    for name in ("all_reduce", "all_gather", "sendrecv"):
        (r,) = cases[name].result
        assert isinstance(r, Failure) and "wrong result on rank 1" in r.message
        assert '"wrong": 0' in r.message and "actual:" in r.message  # actual vs expected
    stall = probe_run_dir(tmp_path, "gloo-3rank-stall-rank2-all_gather.jsonl", "stall")
    cli("report", stall, "--junit", tmp_path / "s.xml")
    cases = {c.name: c for _, c in _cases(JUnitXml.fromfile(str(tmp_path / "s.xml")))}
    assert isinstance(cases["all_gather"].result[0], Failure)
    assert "never completed" in cases["all_gather"].result[0].message
    assert not any(isinstance(r, (Failure, Error)) for r in cases["all_reduce"].result)


# ---- Prometheus -----------------------------------------------------------------------------------


def _samples(text: str) -> Dict[tuple, float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        assert fam.type == "gauge"
        for s in fam.samples:
            out[(s.name,) + tuple(sorted(s.labels.items()))] = s.value
    return out


def test_prom_check_gauge_per_node_and_check(tmp_path):
    bundle = cluster_bundle(tmp_path)
    _, doc = B.check_json(bundle)
    cli("check", "--bundle", bundle, "--prom", tmp_path / "c.prom")
    s = _samples((tmp_path / "c.prom").read_text())
    key = lambda node, check: ("nccldiag_check_status", ("check", check), ("node", node))  # noqa: E731
    assert s[key("gpu002", "ib.port_state")] == 2
    assert s[key("gpu001", "ib.port_state")] == 0
    assert s[key("ws01", "topology.p2p")] == 0  # consumer cards: P2P not offered, as they ship (information)
    assert s[("nccldiag_node_status", ("node", "gpu002"))] == 2
    assert s[("nccldiag_exit_code", ("command", "check"))] == 1
    n = sum(1 for k in s if k[0] == "nccldiag_check_status")
    assert n == len({(nd["host"], f["check"]) for nd in doc["nodes"] for f in nd["findings"]})
    # the healthy node has no check at fail or worse
    assert max(v for k, v in s.items() if k[0] == "nccldiag_check_status" and ("node", "gpu001") in k) < 2


def test_prom_probe_busbw_and_status_per_setting(tmp_path):
    cli("report", probe_run_dir(tmp_path, "gloo-4rank-default.jsonl"), "--prom", tmp_path / "p.prom",
        "--json", tmp_path / "p.json")
    s = _samples((tmp_path / "p.prom").read_text())
    doc = json.loads((tmp_path / "p.json").read_text())
    sweep = doc["settings"][0]["collectives"]["all_reduce"]["sweep"]
    bw = s[("nccldiag_probe_busbw_gigabytes_per_second", ("collective", "all_reduce"), ("setting", "default"))]
    assert bw == pytest.approx(max(p["busbw"] for p in sweep)) and bw > 0
    assert s[("nccldiag_probe_collective_status", ("collective", "all_reduce"), ("setting", "default"))] == 0
    assert s[("nccldiag_probe_setting_ok", ("setting", "default"))] == 1
    cli("report", probe_run_dir(tmp_path, "gloo-2rank-corrupt-rank1.jsonl", "bad"), "--prom", tmp_path / "b.prom")
    s = _samples((tmp_path / "b.prom").read_text())
    assert s[("nccldiag_probe_setting_ok", ("setting", "default"))] == 0
    assert s[("nccldiag_probe_collective_status", ("collective", "sendrecv"), ("setting", "default"))] == 2
    assert s[("nccldiag_probe_collective_status", ("collective", "reduce"), ("setting", "default"))] == 0


# ---- HTML in a real browser -----------------------------------------------------------------------


def _self_contained(text: str) -> None:
    low = text.lower()
    for needle in ("<link", "<script src", "<img", "@import", "url(http", 'src="http', "src='http", 'href="http'):
        assert needle not in low, needle


def test_html_check_renders_grid_topology_and_findings(tmp_path):
    bundle = cluster_bundle(tmp_path)
    page = tmp_path / "check.html"
    res = cli("check", "--bundle", bundle, "--html", page, "--color", "never")
    assert res.exit_code == 1
    _self_contained(page.read_text())
    dom = browser.dump_dom(page)
    for anchor in ('id="summary"', 'id="diagnoses"', 'id="grid"', 'id="topology"', 'id="findings"'):
        assert anchor in dom, anchor
    for text in ("gpu001", "gpu002", "ws01", "ib.port_state", "NV18", "PHB", "subnet manager"):
        assert text in dom, text
    png = browser.screenshot(page, tmp_path / "check.png")
    colours, inked = browser.ink(png)
    assert colours > 20 and inked > 0.05, (colours, inked)


def test_html_probe_renders_matrix_plot_and_failures(tmp_path):
    page = tmp_path / "probe.html"
    cli("report", probe_run_dir(tmp_path, "gloo-4rank-default.jsonl"), "--html", page)
    _self_contained(page.read_text())
    dom = browser.dump_dom(page)
    for anchor in ('id="transport-matrix"', 'id="busbw"', 'id="plot-default"', "<svg", 'id="findings"'):
        assert anchor in dom, anchor
    assert ">works<" in dom and "all_reduce" in dom
    png = browser.screenshot(page, tmp_path / "probe.png")
    colours, inked = browser.ink(png)
    assert colours > 20 and inked > 0.05, (colours, inked)
    bad = tmp_path / "bad.html"
    cli("report", probe_run_dir(tmp_path, "gloo-2rank-corrupt-rank1.jsonl", "bad"), "--html", bad)
    dom = browser.dump_dom(bad)
    assert "wrong result on rank 1" in dom and '<td class="wrong">wrong</td>' in dom
    assert "No collective moved data" in dom  # --check-only records: verified, nothing timed


# ---- diagnoses: in the document and every format ------------------------------------------------


def test_diagnoses_render_in_every_format(tmp_path):
    """The diagnoses of a real bundle (the engine's own), in the document and every format."""
    from nccldiag.report import diagnoses_report, html, junit, prom, summary
    from nccldiag.report.console import console

    code, doc = B.check_json(cluster_bundle(tmp_path))
    validate(doc)
    (versions,) = [d for d in doc["diagnoses"] if d["id"] == "versions-differ" and "ws01" in d["nodes"]]
    shown = diagnoses_report.view(versions)
    assert shown["title"] == versions["title"] and shown["confidence"].startswith(versions["confidence"]["level"])
    assert shown["evidence"] and all(isinstance(line, str) for line in shown["evidence"])
    page = html.render(doc)
    i = next(i for i, d in enumerate(doc["diagnoses"]) if d is versions)
    article = page[page.index(f'id="diagnosis-{i}"'):]
    article = article[:article.index("</article>")]
    assert versions["title"] in article.replace("&#x27;", "'") and "fix:" in article
    assert f'nccldiag_diagnoses{{command="check"}} {float(len(doc["diagnoses"]))}' in prom.render(doc)
    junit.render(doc)
    con = console(color="never", width=200)
    with con.capture() as cap:
        summary.render(doc, con)
    assert versions["title"] in cap.get()


# ---- run directories: re-rendered byte for byte, and kept when a run stops early ------------------


def test_report_rerenders_a_check_run_byte_for_byte(tmp_path):
    bundle = cluster_bundle(tmp_path)
    run = tmp_path / "run"
    live = cli("check", "--bundle", bundle, "--run-dir", run, *outputs(tmp_path, "live"), "--color", "never")
    assert live.exit_code == 1
    assert {p.name for p in run.iterdir()} >= {"run.json", "nodes.jsonl", "report.json"}
    lines = [json.loads(l) for l in (run / "nodes.jsonl").read_text().splitlines()]
    assert [l["host"] for l in lines] == ["gpu001", "gpu002", "ws01"]
    again = cli("report", run, *outputs(tmp_path, "again"), "--color", "never")
    assert again.exit_code == 1
    assert read(tmp_path, "live") == read(tmp_path, "again")
    assert (run / "report.json").read_bytes() == (tmp_path / "live.json").read_bytes()
    assert "ib.port_state" in again.stdout and "gpu002" in again.stdout


def test_check_run_dir_defaults_under_xdg_state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    res = cli("check", "--bundle", B.write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()}), "--color", "never")
    assert res.exit_code == 0
    (run,) = (tmp_path / "state" / "nccldiag" / "check").iterdir()
    assert json.loads((run / "report.json").read_text())["exit_code"] == 0
    assert f"run directory: {run}" in res.stderr


def test_a_check_run_names_its_hosts_before_the_first_node_arrives(tmp_path):
    """run.json and raw/_bundle.json name every host the run was to check, in inventory order (names that do not
    resolve stand in for nodes: each one arrives at once, unreachable)."""
    run = tmp_path / "run"
    res = cli("check", "-w", "nosuch-b.invalid,nosuch-a.invalid", "--only", "system", "--mesh", "none",
              "--run-dir", run, "--color", "never")
    assert res.exit_code == 3, res.output
    hosts = ["nosuch-b.invalid", "nosuch-a.invalid"]
    assert json.loads((run / "run.json").read_text())["hosts"] == hosts
    assert json.loads((run / "raw" / "_bundle.json").read_text())["hosts"] == hosts
    bundle = B.write_bundle(tmp_path / "b", {"gpu002": B.healthy_h100(), "gpu001": B.healthy_h100()})
    cli("check", "--bundle", bundle, "--run-dir", tmp_path / "from-bundle")
    assert json.loads((tmp_path / "from-bundle" / "run.json").read_text())["hosts"] == ["gpu002", "gpu001"]


def test_interrupted_check_run_is_rebuilt_from_what_it_kept(tmp_path):
    """A run that stopped after two of three nodes: report.json never written (a crash stands in for it)."""
    run = tmp_path / "run"
    cli("check", "--bundle", cluster_bundle(tmp_path), "--run-dir", run)
    # what a live run keeps as nodes arrive: raw/ (written for this test from the same real captures)
    B.write_bundle(run / "raw", {"gpu001": B.healthy_h100(), "gpu002": ib_down_node()})
    meta = json.loads((run / "run.json").read_text())
    meta["bundle"] = None
    (run / "run.json").write_text(json.dumps(meta))
    (run / "report.json").unlink()
    res = cli("report", run, "--json", "-")
    doc = json.loads(res.stdout)
    validate(doc)
    assert doc["interrupted"] is True and res.exit_code == 1
    # the third host run.json names never reached the run directory: named, not checked
    assert [n["host"] for n in doc["nodes"]] == ["gpu001", "gpu002", "ws01"]
    assert doc["nodes"][2]["status"] == "error" and doc["nodes"][2]["findings"][0]["check"] == "ssh.not-collected"
    assert "2 node(s) had been collected; never collected: ws01" in doc["notes"][-1]
    # only healthy nodes kept: never a clean exit, the run did not finish
    shutil.rmtree(run / "raw")
    B.write_bundle(run / "raw", {"gpu001": B.healthy_h100()})
    res = cli("report", run, "--json", "-")
    assert res.exit_code == 3 and json.loads(res.stdout)["nodes"][0]["status"] == "ok"


# ---- paths checked before any work ----------------------------------------------------------------


@pytest.mark.parametrize("args, words", [
    (["--html", "{t}/no/such/dir/r.html"], "--html"),
    (["--junit", "-"], "only --json writes to stdout"),
    (["--prom", "{t}/same", "--junit", "{t}/same"], "the same file"),
    (["--junit", "{t}"], "is a directory"),
])
def test_bad_output_paths_are_usage_errors_before_any_work(tmp_path, monkeypatch, args, words):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    bundle = B.write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    res = cli("check", "--bundle", bundle, *[a.format(t=tmp_path) for a in args])
    assert res.exit_code == 2 and words in res.stderr, res.stderr
    assert "Traceback" not in res.output
    assert not (tmp_path / "state").exists()  # nothing ran, no run directory


def test_report_of_a_non_run_directory_is_a_usage_error(tmp_path):
    res = cli("report", tmp_path)
    assert res.exit_code == 2 and "not a run directory" in res.stderr
    (tmp_path / "run.json").write_text("{not json")
    res = cli("report", tmp_path)
    assert res.exit_code == 2 and "run.json" in res.stderr


def test_run_dir_of_an_earlier_run_is_refused(tmp_path):
    bundle = B.write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    assert cli("check", "--bundle", bundle, "--run-dir", tmp_path / "run").exit_code == 0
    res = cli("check", "--bundle", bundle, "--run-dir", tmp_path / "run")
    assert res.exit_code == 2 and "holds an earlier run" in res.stderr


NOBODY = 65534


def planted_run_dir(tmp_path: Path) -> Dict[str, Path]:
    """What another user leaves where root will be told to keep a run (CONSTRUCTED): a directory of theirs,
    mode 777, whose nodes.jsonl links to a victim file and whose raw/ links to a directory of theirs."""
    victim, elsewhere, trap = tmp_path / "victim", tmp_path / "elsewhere", tmp_path / "trap"
    victim.write_text("root's file\n")
    elsewhere.mkdir()
    trap.mkdir()
    (trap / "nodes.jsonl").symlink_to(victim)
    (trap / "raw").symlink_to(elsewhere)
    os.chmod(trap, 0o777)
    os.lchown(trap, NOBODY, NOBODY)
    link = tmp_path / "link"
    link.symlink_to(elsewhere)  # a run directory given as a link: followed, it writes wherever it points
    return {"victim": victim, "elsewhere": elsewhere, "trap": trap, "link": link}


@pytest.mark.parametrize("command", [
    ["check", "--bundle", "{bundle}", "--run-dir"],
    ["probe", "-w", "node-never-contacted", "-o"],
    ["isolate", "-w", "node-never-contacted-[1-2]", "-o"],
])
def test_a_run_dir_another_user_controls_is_refused_before_any_work(tmp_path, command):
    bundle = B.write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    p = planted_run_dir(tmp_path)
    args = [a.format(bundle=bundle) for a in command]
    for target, words in ((p["trap"], "belongs to uid 65534"), (p["link"], "is a symbolic link")):
        res = cli(*args, target)
        assert res.exit_code == 2 and words in res.stderr and str(target) in res.stderr, res.output
        assert "Traceback" not in res.output
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    os.chmod(mine, 0o777)  # this user's, but open to everyone's writes
    res = cli(*args, mine)
    assert res.exit_code == 2 and "other users may write in it (mode 0777)" in res.stderr, res.output
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # not sticky: anyone may rename a run directory made in it and put a link there
    res = cli(*args, shared / "run")
    assert res.exit_code == 2 and f"{shared} is open to other users' writes" in res.stderr, res.output
    assert not (shared / "run").exists()
    assert p["victim"].read_text() == "root's file\n" and list(p["elsewhere"].iterdir()) == []
    assert sorted(x.name for x in p["trap"].iterdir()) == ["nodes.jsonl", "raw"] and list(mine.iterdir()) == []


def test_a_run_dir_made_by_someone_else_after_the_check_of_it_is_not_written(tmp_path):
    """The path was free when it was checked, and another user made it before the run began (CONSTRUCTED):
    nothing is written in it or through it, and the check still reports, with a warning naming the directory."""
    from nccldiag import rundir
    from nccldiag.atomic import Unsafe

    p = planted_run_dir(tmp_path)
    with pytest.raises(Unsafe, match="belongs to uid 65534"):
        rundir.create(str(p["trap"]), {"command": "check"})
    res = cli("check", "--bundle", B.write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()}), "--color", "never",
              "--run-dir", tmp_path / "free")
    assert res.exit_code == 0 and (tmp_path / "free" / "nodes.jsonl").exists()
    os.rename(tmp_path / "free", tmp_path / "used")
    real = rundir.prepare
    try:  # stands in for the moment between the check of the path and the run
        rundir.prepare = lambda path, option="--run-dir": (real(path, option), os.rename(p["trap"], path))[0]
        res = cli("check", "--bundle", tmp_path / "b", "--color", "never", "--run-dir", tmp_path / "free")
    finally:
        rundir.prepare = real
    assert res.exit_code == 0 and "gpu001" in res.stdout, res.output
    assert f"run directory {tmp_path / 'free'}: cannot write: belongs to uid 65534" in res.stderr
    assert p["victim"].read_text() == "root's file\n" and list(p["elsewhere"].iterdir()) == []
    assert sorted(x.name for x in (tmp_path / "free").iterdir()) == ["nodes.jsonl", "raw"]


def test_every_file_of_a_run_dir_is_new_and_never_followed(tmp_path):
    """Each name a run keeps, planted as a link in the run's own directory: the writer refuses it, never follows it."""
    from nccldiag import rundir
    from nccldiag import bundle
    from nccldiag.model.raw import RawNode

    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    run = tmp_path / "run"
    rundir.create(str(run), {"command": "check", "hosts": ["n1"]})
    assert stat_mode(run) == 0o700
    (run / "nodes.jsonl").symlink_to(victim)
    with pytest.raises(OSError):
        rundir.Lines(str(run / "nodes.jsonl"))
    (run / "raw").symlink_to(tmp_path)
    with pytest.raises(OSError, match="symbolic link"):
        bundle.write_node(str(run / "raw"), RawNode(host="n1", sections={"hostname": "n1\n"}))
    with pytest.raises(OSError, match="symbolic link"):
        bundle.write_bundle_index(str(run / "raw"), ["n1"])
    (run / "report.json").symlink_to(victim)
    rundir.save_report(str(run), {"schema": "nccldiag.check/1"})  # replaces the link, never writes through it
    assert victim.read_text() == "root's file\n" and not (run / "report.json").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "victim"]


def stat_mode(path: Path) -> int:
    import stat

    return stat.S_IMODE(os.lstat(path).st_mode)


# ---- the transport matrix -------------------------------------------------------------------------


def test_transport_matrix_from_real_nccl_logs(tmp_path):
    """Two settings of an NCCL run directory (written for this test from real parts): the worker's records of a
    hung and of a clean run, each beside a real NCCL log that shows the transports of such a run."""
    from nccldiag.report import matrix, probe_report
    from nccldiag.report.console import console

    run = tmp_path / "run"
    run.mkdir()
    recs = []
    for setting, name in (("default", "gloo-3rank-stall-rank2-all_gather.jsonl"),
                          ("p2p-off", "gloo-4rank-default.jsonl"), ("shm-off", "gloo-4rank-default.jsonl")):
        for line in (RECORDS / name).read_text().splitlines():
            rec = json.loads(line)
            rec["setting"] = setting
            recs.append(json.dumps(rec))
    (run / "records.jsonl").write_text("\n".join(recs) + "\n")
    for setting, log in (("default", "socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log"),
                         ("p2p-off", "socket-2node-shm-extend-failure-and-connect-abort-nccltests.log"),
                         ("shm-off", "net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log")):
        (run / "nccl-logs" / setting).mkdir(parents=True)
        shutil.copy(real.nccl_log(log), run / "nccl-logs" / setting / log)
    meta = {"command": "probe", "schema": "nccldiag.probe/1", "run_id": "nccldiag-test", "backend": "nccl",
            "launcher": "torchrun", "hosts": ["vm"], "nproc_per_node": 4, "timeout": 120, "require_ib": False,
            "settings": [{"name": "default", "env": {}}, {"name": "p2p-off", "env": {"NCCL_P2P_DISABLE": "1"}},
                         {"name": "shm-off", "env": {"NCCL_SHM_DISABLE": "1"}}],
            "started": "2026-11-23T10:00:00Z"}
    (run / "run.json").write_text(json.dumps(meta))
    doc = json.loads(cli("report", run, "--json", "-").stdout)
    validate(doc)
    m = matrix.build(doc)
    assert m.columns[:5] == ["P2P", "SHM", "NET/IB", "NET/Socket", "NVLS"]
    default, p2p_off, shm_off = m.rows
    assert default.status == "hang"
    assert (default.cells["P2P"], default.cells["NET/Socket"]) == ("hang", "hang")
    assert default.cells["SHM"] == default.cells["NET/IB"] == default.cells["NVLS"] == "not used"
    # every collective verified, but its log shows NCCL failing to set up SHM: an error on that path
    assert p2p_off.status == "error" and p2p_off.cells["SHM"] == "error" and p2p_off.cells["P2P"] == "not used"
    assert shm_off.status == "ok" and (shm_off.cells["P2P"], shm_off.cells["NET/IB"]) == ("works", "works")
    assert shm_off.cells["SHM"] == "not used"
    assert shm_off.busbw and shm_off.collective == "all_reduce"
    con = console(color="never", width=200)
    with con.capture() as cap:
        con.print(probe_report.transport_table(doc))
    lines = cap.get().splitlines()
    assert lines[0].split() == ["setting", "P2P", "SHM", "NET/IB", "NET/Socket", "NVLS", "busbw", "GB/s"]
    assert lines[1].split()[:6] == ["default", "hang", "not", "used", "not", "used"]
    # expected busbw, when a setting carries it, gives the percentage
    doc["settings"][2]["expected_busbw_gbps"] = shm_off.busbw * 2
    assert matrix.build(doc).rows[2].percent == pytest.approx(50.0)
    from nccldiag.report import html

    page = html.render(doc)
    plot = page[page.index('id="plot-shm-off"'):]
    assert f"expected {shm_off.busbw * 2:.1f}" in plot[:plot.index("</figure>")]
    assert "50% of" in page
    assert "expected " not in page[page.index('id="plot-default"'):page.index('id="plot-p2p-off"')]


def test_text_from_nodes_cannot_script_the_html_or_break_the_xml(tmp_path):
    """A document whose node-supplied strings are hostile (written for this test)."""
    from nccldiag.report import html, junit, prom

    evil = '<script>alert(1)</script>"\x01\x1b[31m'
    finding = {"area": "ib", "check": "ib.port_state", "status": "fail", "message": evil, "actual": evil,
               "expected": "Active", "evidence": [evil], "fix": evil, "host": evil}
    doc = {"schema": "nccldiag.check/1", "nccldiag_version": "0", "generated_at": "2026-11-23T10:00:00Z",
           "exit_code": 1, "areas": ["ib"], "summary": {"nodes": 1, "by_status": {"fail": 1}}, "notes": [],
           "nodes": [{"host": evil, "status": "fail", "reachable": True, "elapsed_s": 0.1, "areas": {"ib": "fail"},
                      "findings": [finding]}],
           "diagnoses": [{"title": evil, "nodes": [evil], "evidence": [evil], "confidence": evil, "fix": evil,
                          "workaround": evil}]}
    page = html.render(doc)
    assert "<script" not in page.lower() and "&lt;script&gt;" in page
    path = tmp_path / "r.xml"
    path.write_text(junit.render(doc))
    (case,) = [c for s in JUnitXml.fromfile(str(path)) for c in s]
    assert "<script>alert(1)</script>" in case.result[0].message and "\x01" not in case.result[0].message
    fams = list(text_string_to_metric_families(prom.render(doc)))
    assert any(s.labels.get("node") == evil for f in fams for s in f.samples)


def test_probe_terminal_summary_first_and_verbose(tmp_path):
    from nccldiag.probe import analysis, runner
    from nccldiag.probe.plan import Setting
    from nccldiag.probe.results import read_text
    from nccldiag.report import probe_report
    from nccldiag.report.console import console

    setting = Setting("default")
    run = runner.SettingRun(setting=setting, records=read_text((RECORDS / "gloo-2rank-corrupt-rank1.jsonl").read_text()))
    report = analysis.conclude(analysis.analyze(
        runs=[run], settings=[setting], backend="gloo", require_ib=False, launcher="torchrun", hosts=["vm"],
        unreachable={}, problems={}, loopback={}, ifnames={}, nproc_per_node=2))
    doc = probe_report.document(report)
    con = console(color="never", width=200)
    with con.capture() as cap:
        probe_report.render(doc, con)
    text = cap.get()
    lines = text.splitlines()
    assert lines[0].startswith("Verdict: FAIL") and lines[1].startswith("nccldiag probe: gloo via torchrun")
    assert lines[3].startswith("1 setting(s): 0 worked, 1 failed (default)")
    assert text.index("transport matrix") < text.index("Diagnoses") < text.index("setting default") < \
        text.index(" FAIL ", text.index("setting default"))
    matrix_row = next(l for l in lines if l.startswith("default ") and "wrong" in l)
    assert matrix_row.split()[:2] == ["default", "wrong"]
    assert "OK     probe.reduce" not in text
    with con.capture() as cap:
        probe_report.render(doc, con, verbose=True)
    assert "OK     probe.reduce" in cap.get()


def test_unwritable_state_dir_keeps_no_run_but_checks(tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.write_text("a file where the state directory would be")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    bundle = B.write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    res = cli("check", "--bundle", bundle, "--junit", tmp_path / "c.xml", "--color", "never")
    assert res.exit_code == 0 and "cannot write" in res.stderr and "Traceback" not in res.output
    assert JUnitXml.fromfile(str(tmp_path / "c.xml"))
    # a run directory asked for is checked before any work
    res = cli("check", "--bundle", bundle, "--run-dir", state / "run")
    assert res.exit_code == 2 and "--run-dir" in res.stderr


def test_report_reads_a_run_directory_without_trusting_it(tmp_path):
    """A FIFO or a link where a kept file should be is named, never waited on or followed (written for this test)."""
    run = probe_run_dir(tmp_path, "gloo-4rank-default.jsonl")
    os.mkfifo(run / "report.json")
    res = cli("report", run)
    assert res.exit_code == 2 and "report.json: not a regular file" in res.stderr
    (run / "report.json").unlink()
    (run / "report.json").symlink_to(tmp_path / "elsewhere.json")
    res = cli("report", run)
    assert res.exit_code == 2 and "report.json" in res.stderr and "Traceback" not in res.output
    (run / "report.json").unlink()
    (run / "nccl-logs" / "default").mkdir(parents=True)
    os.mkfifo(run / "nccl-logs" / "default" / "nccl.vm.1.log")
    res = cli("report", run)
    assert res.exit_code == 2 and "nccl.vm.1.log: not a regular file" in res.stderr


def test_a_reader_that_closes_stdout_loses_no_file(tmp_path):
    """``nccldiag check ... --html r.html | head -1``: the table ends early, the files and the exit code do not."""
    import subprocess
    import sys

    bundle = cluster_bundle(tmp_path)
    for cmd in (["check", "--bundle", str(bundle), "--run-dir", str(tmp_path / "run")],
                ["report", str(tmp_path / "run")]):
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the first line: every write to stdout fails
        proc = subprocess.Popen([sys.executable, "-m", "nccldiag", *cmd, "--html", str(tmp_path / f"{cmd[0]}.html"),
                                 "--color", "never"], stdout=w, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
        os.close(w)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, err  # the run's own exit code: gpu002 has an IB port down
        assert "Traceback" not in err
        assert (tmp_path / f"{cmd[0]}.html").stat().st_size > 0
    assert (tmp_path / "run" / "report.json").exists()


def test_a_records_file_is_read_back_through_the_gate_never_held_whole(tmp_path):
    """A probe run directory (run.json written for the test) holding the worker's real records of a 2-rank gloo
    run, then 60 MB of forged records (ranks outside the world, collectives not planned, noise: CONSTRUCTED). Read
    back, the records stream through the gate as they are read: the report is the one of the real records alone,
    and the process holds what it keeps, not the file (it held 1 GB for 100 MB). Memory is the child's own peak."""
    import subprocess
    import sys

    real_records = (Path(__file__).resolve().parents[1] / "fixtures" / "probe-records" /
                    "gloo-2rank-corrupt-rank1.jsonl").read_text()
    meta = {"command": "probe", "schema": "nccldiag.probe/1", "run_id": "nccldiag-test", "backend": "gloo",
            "launcher": "torchrun", "hosts": ["vm"], "nproc_per_node": 2, "timeout": 120, "require_ib": False,
            "settings": [{"name": "default", "env": {}, "why": "", "custom": False, "requires_ib": False}],
            "loopback": {}, "ifnames": {}, "started": "2026-11-23T10:00:00Z"}
    forged = "".join(json.dumps(r) + "\n" for r in (
        {"type": "progress", "rank": 7, "host": "vm", "collective": "all_reduce", "phase": "sweep", "done": 1},
        {"type": "result", "rank": 0, "host": "vm", "collective": "bogus", "status": "wrong", "wrong": 3},
        {"type": "result", "rank": 1, "host": "vm", "collective": "all_reduce", "wrong": "abc", "pad": "x" * 400}))
    probe_code = ("import json, resource, sys\nfrom nccldiag.cli import main\ntry:\n    main()\nfinally:\n"
                  "    sys.stderr.write('maxrss_kib=%d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    out = {}
    for name, flood in (("plain", 0), ("flooded", 60 << 20)):
        run = tmp_path / name
        run.mkdir()
        (run / "run.json").write_text(json.dumps(meta))
        with open(run / "records.jsonl", "w") as f:
            f.write(real_records)
            for _ in range(flood // len(forged)):
                f.write(forged)
        r = subprocess.run([sys.executable, "-c", probe_code, "report", str(run), "--json", "-"], capture_output=True,
                           text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
        assert r.returncode == 1, r.stderr[-2000:]
        doc = json.loads(r.stdout)
        out[name] = ([(f["check"], f["status"], f["host"]) for s in doc["settings"] for f in s["findings"]],
                     int(r.stderr.rsplit("maxrss_kib=", 1)[1]))
    assert out["flooded"][0] == out["plain"][0] and ("probe.all_reduce", "fail", "vm") in out["plain"][0]
    assert out["flooded"][1] < out["plain"][1] + 64 * 1024, out  # 64 MiB over the plain run at most


def test_one_plain_host_name_folds_to_what_clustershell_makes_of_it():
    # Host names written for this test, and 5,000 made at random of the characters of a plain name: one name is
    # returned as it is, without importing ClusterShell, only where ClusterShell gives the same.
    import random
    import string

    from ClusterShell.NodeSet import NodeSet

    from nccldiag.report.findings import fold

    rng = random.Random(3)
    alphabet = string.ascii_letters + string.digits + "_.-"
    names = ["node-a", "gpu001", "001", "0", "a.b.c", "-", ".", "a-01", "n0-0", "1.2.3.4", "h.0", "0-1"]
    names += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(5000)]
    for name in names:
        folded = str(NodeSet.fromlist([name]))
        assert fold([name]) == (folded if len(folded) < len(name) else name), name
    assert fold(["gpu001", "gpu002", "gpu003"]) == "gpu[001-003]"
    assert fold(["gpu[001-002]"]) == "gpu[001-002]"
