"""Report formats and run directories on the virtual cluster: a real 2-node probe, and a check stopped by Ctrl-C.

The probe's report files are read back with the libraries their consumers use
(jsonschema, junitparser, prometheus_client) and the HTML in a headless
chromium; ``nccldiag report RUN_DIR`` must write the same bytes again.
"""
import json
import os
import signal
import subprocess
import sys

import jsonschema
from junitparser import Failure, JUnitXml
from prometheus_client.parser import text_string_to_metric_families

from nccldiag.report import schema as schemas
from tests import browser
from tests.signals import ctrl_c_reaches
from tests.integration.helpers import load_json, nccldiag, records, timed, wait_for
from tests.integration.vcluster import vcluster_fixture

cluster = vcluster_fixture(n=2, prefix="ncdh", names="hnode", subnet="10.213.70", scope="module")
FORMATS = {"json": "json", "junit": "xml", "prom": "prom", "html": "html"}
MB = 1 << 20


def files(d, stem):
    return [a for f, ext in FORMATS.items() for a in (f"--{f}", str(d / f"{stem}.{ext}"))]


def test_two_node_probe_reports_validate_and_rerender_identically(cluster, tmp_path):
    run = tmp_path / "run"
    r, _ = timed(["probe", "-w", "hnode01,hnode02", "--ssh-config", str(cluster.ssh_config), "--nproc-per-node", "2",
                  "--timeout", "120", "--run-dir", str(run), *files(tmp_path, "live")], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    # the terminal shows the transport matrix: gloo's column is the interface its ranks bound
    assert "transport matrix" in r.stdout
    doc = load_json(tmp_path / "live.json")
    jsonschema.validate(doc, schemas.load("nccldiag.probe/1"), cls=jsonschema.Draft202012Validator)
    ifaces = {v["interface"] for v in doc["settings"][0]["ranks"].values()}
    assert ifaces and all(i in r.stdout for i in ifaces)
    # the run directory kept everything as it came, and report.json is the document
    assert {p.name for p in run.iterdir()} >= {"run.json", "records.jsonl", "settings.jsonl", "report.json"}
    assert sum(1 for x in records(run / "records.jsonl") if x["type"] == "end") == 4
    assert (run / "report.json").read_bytes() == (tmp_path / "live.json").read_bytes()

    xml = JUnitXml.fromfile(str(tmp_path / "live.xml"))
    cases = [c for s in xml for c in s]
    colls = set(doc["settings"][0]["collectives"])
    assert {c.name for c in cases if c.classname == "probe.default"} >= colls
    assert not any(isinstance(x, Failure) for c in cases for x in c.result)

    bw = {}
    for fam in text_string_to_metric_families((tmp_path / "live.prom").read_text()):
        for s in fam.samples:
            if s.name == "nccldiag_probe_busbw_gigabytes_per_second":
                bw[s.labels["collective"]] = s.value
    assert bw["all_reduce"] > 0

    page = tmp_path / "live.html"
    assert page.stat().st_size < 2 * MB, page.stat().st_size
    dom = browser.dump_dom(page)
    for anchor in ('id="transport-matrix"', 'id="plot-default"', "<svg", 'id="diagnoses"', "hnode01", "hnode02"):
        assert anchor in dom, anchor
    colours, inked = browser.ink(browser.screenshot(page, tmp_path / "probe.png"))
    assert colours > 20 and inked > 0.05

    again = nccldiag(["report", str(run), *files(tmp_path, "again")], timeout=120)
    assert again.returncode == 0, again.stderr
    for ext in FORMATS.values():
        assert (tmp_path / f"live.{ext}").read_bytes() == (tmp_path / f"again.{ext}").read_bytes(), ext


def test_check_interrupted_keeps_the_nodes_collected(cluster, tmp_path):
    """Ctrl-C while one node does not answer: the node already collected stays in the run directory."""
    run = tmp_path / "run"
    cluster.fault("hnode02", "blackhole")
    try:
        env = {**os.environ, "NO_COLOR": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "nccldiag", "check", "-w", "hnode01,hnode02", "--ssh-config",
             str(cluster.ssh_config), "--only", "system", "--mesh", "none", "--connect-timeout", "120",
             "--run-dir", str(run)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            stdin=subprocess.DEVNULL, preexec_fn=ctrl_c_reaches)
        try:
            wait_for(lambda: (run / "nodes.jsonl").exists() and "hnode01" in (run / "nodes.jsonl").read_text(),
                     90, "hnode01 collected")
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    finally:
        cluster.fault("hnode02", "unblackhole")
    assert proc.returncode == 130, err
    assert not (run / "report.json").exists()
    r = nccldiag(["report", str(run), "--json", "-"], timeout=120)
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, schemas.load("nccldiag.check/1"), cls=jsonschema.Draft202012Validator)
    assert doc["interrupted"] is True and r.returncode == 3
    # hnode02, never collected, is named and not checked
    assert [(n["host"], n["status"]) for n in doc["nodes"]] == [("hnode01", "ok"), ("hnode02", "error")]
    assert "1 node(s) had been collected; never collected: hnode02" in doc["notes"][-1]
