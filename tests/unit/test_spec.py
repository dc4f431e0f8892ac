"""Site specs end to end: ``nccldiag spec init`` from a bundle, ``nccldiag check --spec`` on bundles.

The reference node is ``bundles.healthy_h100``: real outputs read in place
from ../shared/fixtures/node (see tests/unit/bundles.py for the few
constructed sources). The deviating nodes are copies of it in which a few
texts are changed; every change is written for these tests, in the format of
the capture it edits, and labelled where it is made. The IOMMU deviation is a
real capture (an AMD-Vi kernel log with translation on).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Dict, List

import pytest
from click.testing import CliRunner

from nccldiag.cli import main
from nccldiag.spec import fields as F
from nccldiag.spec import model, tomlfile
from tests import real

from . import bundles as B
from .bundles import by_check, check_json, check_table, fixture, write_bundle

OLD_FW = "28.39.1002"  # written for these tests: an older ConnectX-7 firmware than the capture's 28.41.1000


def init(*args: str):
    """``nccldiag spec init ARGS``: (exit code, stdout, stderr)."""
    res = CliRunner().invoke(main, ["spec", "init", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    return res.exit_code, res.stdout, res.stderr


def spec_from(tmp_path: Path, nodes: Dict[str, dict], name: str = "site.toml") -> Path:
    ref = write_bundle(tmp_path / "ref", nodes)
    code, text, err = init("--bundle", str(ref))
    assert code == 0, err
    path = tmp_path / name
    path.write_text(text)
    return path


def line(path: Path, pattern: str) -> int:
    """The 1-based line of the first line of ``path`` that matches ``pattern`` (a regex)."""
    for n, text in enumerate(path.read_text().splitlines(), 1):
        if re.match(pattern, text):
            return n
    raise AssertionError(f"{pattern!r} not in {path}")


def toml_data(text: str) -> dict:
    """What TOML reads from ``text`` (tomllib, or tomli below Python 3.11)."""
    return tomlfile.loads(text, "t.toml")[0]


def spec_findings(report: dict, host: str) -> List[dict]:
    return [f for f in B.findings(report, host) if ".spec_" in f["check"]]


def older_firmware(node: dict) -> dict:
    """The node with every ConnectX-7 at OLD_FW (text edit written for the test, in sysfs' and ibstat's format)."""
    node = dict(node)
    node["ib_sysfs"] = node["ib_sysfs"].replace("28.41.1000", OLD_FW)
    node["ibstat"] = node["ibstat"].replace("Firmware version: 28.41.1000", f"Firmware version: {OLD_FW}")
    return node


def deviating(node: dict) -> dict:
    """The reference node with one GPU fewer, older HCA firmware, one slower link and IOMMU translated."""
    node = older_firmware(node)
    # written for the test: the CSV of 7 GPUs, and nvidia-smi -q's count line changed to match
    node["gpu_query"] = B.h100_query_csv(gpus=7)
    node["nvidia_smi_q"] = re.sub(r"(Attached GPUs\s+:) 8", r"\1 7", node["nvidia_smi_q"])
    # written for the test: mlx5_4 trained at HDR 200 instead of NDR 400 (sysfs' rate file, ibstat's Rate line)
    node["ib_sysfs"] = node["ib_sysfs"].replace(
        "==> /sys/class/infiniband/mlx5_4/ports/1/rate <==\n400 Gb/sec (4X NDR)",
        "==> /sys/class/infiniband/mlx5_4/ports/1/rate <==\n200 Gb/sec (4X HDR)")
    node["ibstat"] = re.sub(r"(CA 'mlx5_4'.*?Rate:) 400", r"\1 200", node["ibstat"], flags=re.S)
    # real: a kernel log with AMD-Vi translation on
    node["iommu_dmesg"] = fixture("dmesg-iommu/amd-vi-unknown-option-on-blockquoted.txt")
    return node


# ---- spec init ---------------------------------------------------------------------------------------------


def test_init_writes_a_commented_spec_of_the_reference_node(tmp_path):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    text = path.read_text()
    s = model.load(str(path))
    got = {e.key: e.value for e in s.expects}
    assert got["gpu.count"] == 8 and got["gpu.model"] == "NVIDIA H100 80GB HBM3" and got["gpu.memory_mib"] == 81559
    assert got["gpu.pcie_gen"] == 5 and got["gpu.pcie_width"] == 16
    assert got["topology.gpu_links"] == "NV18x28"
    assert "topology.nearest_nic" not in got  # the topology capture lists no NIC
    assert got["nic.MT4129.ports"] == 8 and got["nic.MT4129.rate_gbps"] == 400.0
    assert got["nic.MT4129.firmware"] == "28.41.1000" and got["nic.MT4129.psid"] == "MT_0000000838"
    assert got["nic.MT4129.link_layer"] == "InfiniBand" and got["nic.MT41692.link_layer"] == "Ethernet"
    assert got["software.driver"] == "535.183.01" and got["software.kernel"] == "5.15.0-105-generic"
    assert got["settings.iommu_mode"] == "off" and got["settings.memlock"] == F.UNLIMITED
    assert got["settings.cpu_governor"] == "performance" and got["settings.peermem"] == "nv_peer_mem"
    # the capture's NVLink output is elided: no count is made up from it, and the file says why
    assert "nvlink.links_per_gpu" not in got
    assert re.search(r"^# links_per_gpu = \?.*not read on gpu001", text, re.M)
    assert text.count("[nic.") == 2 and "# " in text.splitlines()[0]


def test_init_from_a_kept_run_directory_is_the_same_spec(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    code, _ = check_json(bundle, "--run-dir", str(tmp_path / "run"))
    assert code == 0
    _, from_bundle, _ = init("--bundle", str(bundle))
    code, from_run, err = init("--bundle", str(tmp_path / "run"), "-o", str(tmp_path / "s.toml"))
    assert code == 0 and from_run == "" and "written to" in err
    strip = lambda t: [l for l in t.splitlines() if not l.startswith("# from ")]  # noqa: E731
    assert strip((tmp_path / "s.toml").read_text()) == strip(from_bundle)


def test_init_writes_disagreements_commented_out_and_says_so(tmp_path):
    other = B.healthy_h100("gpu002", "10.0.0.12")
    other["gpu_query"] = B.h100_query_csv(driver="550.54.15")  # written for the test: another driver
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100(), "gpu002": other})
    _, _, err = init("--bundle", str(tmp_path / "ref"))
    assert "software.driver: the reference nodes disagree" in err and "535.183.01" in err and "550.54.15" in err
    text = path.read_text()
    assert re.search(r'^# driver = "535.183.01"  # gpu001$', text, re.M)
    assert re.search(r'^# driver = "550.54.15"  # gpu002$', text, re.M)
    assert "software.driver" not in {e.key for e in model.load(str(path)).expects}
    # the keys they agree on are written
    assert "gpu.count" in {e.key for e in model.load(str(path)).expects}


def test_init_warns_when_a_reference_node_fails_its_checks(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"gpu001": deviating(B.healthy_h100())})
    code, text, err = init("--bundle", str(bundle))
    assert code == 0 and "gpu001 fails or could not run" in err and "before taking it as the reference" in err
    assert "count = 7" in text
    # the node's own ports disagree (one at 200 Gb/s): written commented out, each with its ports
    assert "nic.MT4129.rate_gbps: the reference nodes disagree" in err
    assert re.search(r"^# rate_gbps = 200.0  # gpu001 mlx5_4 port 1$", text, re.M)


# ---- check --spec ------------------------------------------------------------------------------------------


def test_healthy_node_checked_against_its_own_spec_has_no_spec_finding(tmp_path):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100(), "gpu002": B.healthy_h100("gpu002", "10.0.0.12")})
    code, rep = check_json(bundle, "--spec", str(path))
    assert code == 0
    for host in ("gpu001", "gpu002"):
        found = spec_findings(rep, host)
        assert len(found) == len(model.load(str(path)).expects)
        assert {f["status"] for f in found} == {"ok"}, [f["message"] for f in found if f["status"] != "ok"]
        assert {f["status"] for f in B.findings(rep, host)} <= {"ok", "skip"}


def test_deviating_node_names_each_deviation_with_expected_actual_and_spec_line(tmp_path):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100(), "gpu009": deviating(B.healthy_h100())})
    code, rep = check_json(bundle, "--spec", str(path))
    assert code == 1
    assert {f["status"] for f in spec_findings(rep, "gpu001")} == {"ok"}
    bad = {f["check"]: f for f in spec_findings(rep, "gpu009") if f["status"] != "ok"}
    ref = lambda pattern: f"{path}:{line(path, pattern)}"  # noqa: E731

    count = bad["gpu.spec_count"]
    assert (count["area"], count["status"], count["expected"], count["actual"]) == ("gpu", "fail", "8", "7")
    assert count["evidence"][0] == f"{ref(r'count = ')}: gpu.count = 8"

    fw = by_check(rep, "firmware.spec_hca_fw", "gpu009")
    fw = [f for f in fw if f["status"] == "fail"]
    assert len(fw) == 1 and fw[0]["area"] == "firmware" and fw[0]["expected"] == "28.41.1000"
    assert set(fw[0]["actual"].values()) == {OLD_FW} and len(fw[0]["actual"]) == 8
    assert fw[0]["evidence"][0].startswith(ref(r'firmware = "28.41.1000"') + ":")
    assert f"{OLD_FW} on mlx5_0 port 1" in fw[0]["message"]

    rate = [f for f in by_check(rep, "ib.spec_rate", "gpu009") if f["status"] == "fail"]
    assert len(rate) == 1 and rate[0]["area"] == "ib"
    assert rate[0]["actual"] == {"mlx5_4 port 1": "200"} and rate[0]["expected"] == "400"
    assert "(7 of 8 as expected)" in rate[0]["message"]
    assert rate[0]["evidence"][0].startswith(ref(r"rate_gbps = 400") + ":")

    io = bad["iommu.spec_mode"]
    assert (io["area"], io["actual"], io["expected"]) == ("iommu", "translated", "off")
    assert io["evidence"][0] == f"{ref(r'iommu_mode = ')}: settings.iommu_mode = off"
    # nothing else deviates: the PSID, the driver, the other model's ports are as the spec says
    assert set(bad) == {"gpu.spec_count", "firmware.spec_hca_fw", "ib.spec_rate", "iommu.spec_mode"}


def test_a_batch_that_deviates_alike_fails_on_every_node(tmp_path):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    hosts = [f"gpu{i:03d}" for i in range(11, 15)]
    bundle = write_bundle(tmp_path / "b", {h: older_firmware(B.healthy_h100(h, f"10.0.1.{i}"))
                                           for i, h in enumerate(hosts, 1)})
    code, rep = check_json(bundle)  # without the spec: consistent, so nothing sees it
    assert code == 0 and not [f for f in B.findings(rep) if f["status"] in ("warn", "fail")]
    code, rep = check_json(bundle, "--spec", str(path))
    assert code == 1
    for h in hosts:
        assert "fail" in [f["status"] for f in by_check(rep, "firmware.spec_hca_fw", h)], h
        assert next(n for n in rep["nodes"] if n["host"] == h)["status"] == "fail"
    assert by_check(rep, "consistency.all")  # consistency ran beside it


def test_spec_from_the_environment_and_the_table_shows_the_spec_line(tmp_path, monkeypatch):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    bundle = write_bundle(tmp_path / "b", {"gpu009": older_firmware(B.healthy_h100("gpu009"))})
    monkeypatch.setenv("NCCLDIAG_SPEC", str(path))
    code, text = check_table(bundle)
    assert code == 1
    assert f"spec {path}:{line(path, r'firmware = ')}" in text.replace("\n", " ").replace("  ", " ") or \
        f"{path.name}:{line(path, r'firmware = ')}" in text


def test_key_absent_from_a_node_is_a_warning_never_a_pass(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text('[nvlink]\nlinks_per_gpu = 18\n')  # written for the test
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    code, rep = check_json(bundle, "--spec", str(path))
    f = by_check(rep, "nvlink.spec_links")[0]
    assert f["status"] == "warn" and f["actual"] == "unknown" and f"{path}:2" in f["message"]


def test_a_model_the_spec_does_not_list_fails(tmp_path):
    path = tmp_path / "site.toml"
    path.write_text('[nic.MT4129]\nports = 8\n')  # written for the test: the bond's MT41692 left out
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    _, rep = check_json(bundle, "--spec", str(path))
    st = {f["status"]: f for f in by_check(rep, "ib.spec_ports")}
    assert set(st) == {"ok", "fail"} and "MT41692" in st["fail"]["message"] and f"{path}:1" in st["fail"]["message"]


# ---- policy --------------------------------------------------------------------------------------------------


def _policy(tmp_path: Path, severity: str) -> Path:
    base = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    path = tmp_path / "policy.toml"
    path.write_text(base.read_text().replace("[severity]\n", "[severity]\n" + severity + "\n"))
    return path


@pytest.mark.parametrize("level,status,code,note", [
    ("warn", "warn", 0, "warn, downgraded from fail by"),
    ("info", "ok", 0, "info, downgraded from fail by"),
    ("ignore", "skip", 0, "ignored (fail) by"),
])
def test_severity_changes_a_failure_and_says_which_line_did(tmp_path, level, status, code, note):
    path = _policy(tmp_path, f'"firmware.spec_hca_fw" = "{level}"')
    bundle = write_bundle(tmp_path / "b", {"gpu009": older_firmware(B.healthy_h100("gpu009"))})
    got, rep = check_json(bundle, "--spec", str(path))
    assert got == code
    f = [f for f in by_check(rep, "firmware.spec_hca_fw") if "28.39" in f["message"]][0]
    rule = f"{path}:{line(path, r'.firmware.spec_hca_fw. = ')}"
    assert f["status"] == status and f["message"].startswith(f"{note} {rule}: ")
    assert f["evidence"][-1] == f'{rule}: [severity] firmware.spec_hca_fw = {level}'


def test_severity_fail_upgrades_a_warning_and_patterns_match(tmp_path):
    # software.os deviates as a warning by default; the policy makes it fail. A pattern covers firmware.
    path = _policy(tmp_path, 'system.spec_os = "fail"\n"firmware.spec_*" = "warn"')
    node = older_firmware(B.healthy_h100("gpu009"))
    node["os_release"] = node["os_release"].replace("22.04.4", "22.04.5")  # written for the test
    bundle = write_bundle(tmp_path / "b", {"gpu009": node})
    code, rep = check_json(bundle, "--spec", str(path))
    assert code == 1
    os_ = [f for f in by_check(rep, "system.spec_os") if f["status"] != "ok"][0]
    assert os_["status"] == "fail" and os_["message"].startswith(
        f"fail, upgraded from warn by {path}:{line(path, r'system.spec_os = ')}")
    fw = [f for f in by_check(rep, "firmware.spec_hca_fw") if "28.39" in f["message"]][0]
    assert fw["status"] == "warn" and f"{path}:{line(path, r'.firmware.spec_.. = ')}" in fw["message"]


def test_severity_applies_to_the_areas_own_checks_and_to_consistency(tmp_path):
    # the translated IOMMU (a real capture) makes the iommu area's own check warn or fail; ignore it
    path = _policy(tmp_path, 'iommu.mode = "ignore"\nconsistency.iommu.mode = "ignore"')
    node = B.healthy_h100("gpu009")
    node["iommu_dmesg"] = fixture("dmesg-iommu/amd-vi-unknown-option-on-blockquoted.txt")
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100(), "gpu002": B.healthy_h100("gpu002"),
                                           "gpu009": node})
    _, before = check_json(bundle)
    assert {f["status"] for f in by_check(before, "iommu.mode", "gpu009")} & {"warn", "fail"}
    assert {f["status"] for f in by_check(before, "consistency.iommu.mode", "gpu009")} == {"warn"}
    _, rep = check_json(bundle, "--spec", str(path))
    assert {f["status"] for f in by_check(rep, "iommu.mode", "gpu009")} == {"skip"}
    assert {f["status"] for f in by_check(rep, "consistency.iommu.mode", "gpu009")} == {"skip"}
    # the spec's own key still says it: the policy named iommu.mode, not iommu.spec_mode
    assert "fail" in {f["status"] for f in by_check(rep, "iommu.spec_mode", "gpu009")}


def test_severity_never_turns_an_error_into_a_verdict(tmp_path):
    from nccldiag.model.findings import Finding, Status
    from nccldiag.spec import policy

    s = model.loads('[severity]\n"gpu.parse" = "ignore"\n', "p.toml")
    f = Finding("gpu", "gpu.parse", Status.ERROR, "could not parse")
    policy.apply(s, [f])
    assert f.status == Status.ERROR and f.message == "could not parse"


# ---- errors in the file -----------------------------------------------------------------------------------

BAD = [  # each written for the test
    ('[gpu]\ncount = "eight"\n', 2, "gpu.count should be a whole number"),
    ('[gpu]\ncount = 8\ncolour = "green"\n', 3, "unknown key 'gpu.colour'"),
    ('[gpus]\ncount = 8\n', 1, "unknown table or key 'gpus' (did you mean 'gpu'?)"),
    ('[gpu]\ncount = -1\n', 2, "impossible"),
    ('[gpu]\npcie_width = 64\n', 2, "impossible"),
    ('[settings]\niommu_mode = "strict"\n', 2, "one of off, passthrough, translated"),
    ('[settings]\nmemlock = "lots"\n', 2, "should be a size"),
    ('[severity]\n"firmware.spec_hca_fv" = "warn"\n', 2, "did you mean 'firmware.spec_hca_fw'"),
    ('[severity]\n"nosuch.thing" = "warn"\n', 2, "unknown check id 'nosuch.thing'"),
    ('\n[severity]\n"gpu.spec_count" = "drain"\n', 3, "one of fail, warn, info, ignore"),
    ('[gpu]\ncount = 8\ncount = 9\n', 3, "not valid TOML"),
    ('schema = "nccldiag.spec/9"\n', 1, "this nccldiag reads 'nccldiag.spec/1'"),
    ('[nic]\nports = 8\n', 2, "should be a table ([nic.ports])"),
    ('[nic.MT4129]\nrate = 400\n', 2, "unknown key 'nic.MT4129.rate'"),
]


@pytest.mark.parametrize("text,at,words", BAD)
def test_a_mistake_in_the_spec_names_its_line_and_exits_2(tmp_path, text, at, words):
    path = tmp_path / "site.toml"
    path.write_text(text)
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    res = CliRunner().invoke(main, ["check", "--bundle", str(bundle), "--spec", str(path)])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"nccldiag: error: {path}:{at}: "), res.stderr
    assert words in res.stderr and "Traceback" not in res.stderr + res.stdout


def test_a_spec_that_cannot_be_read_is_a_usage_error(tmp_path):
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    res = CliRunner().invoke(main, ["check", "--bundle", str(bundle), "--spec",
                                                    str(tmp_path / "none.toml")])
    assert res.exit_code == 2 and "cannot read" in res.stderr


def test_key_lines_follow_tables_dotted_and_quoted_keys():
    text = ('# written for the test\n[gpu]\ncount = 8\n\n[nic."MT4129"]\nports = 8\n[severity]\n'
            'gpu.spec_count = "warn"\n"firmware.spec_hca_fw" = "info"\nx = """\ny = 1\n"""\n'
            'z = [\n  1,\n]\nw = 2\n')
    lines = tomlfile.key_lines(text)
    assert lines[("gpu", "count")] == 3 and lines[("nic", "MT4129", "ports")] == 6
    assert lines[("severity", "gpu", "spec_count")] == 8 and lines[("severity", "firmware.spec_hca_fw")] == 9
    assert ("severity", "y") not in lines and lines[("severity", "w")] == 16


def test_written_values_read_back_as_they_were():
    for v in ("a \"quoted\" \\ value\n", "NVIDIA H100 80GB HBM3", 8, 400.0, 26.562, True):
        assert toml_data(f"k = {tomlfile.value(v)}")["k"] == v
    assert toml_data(f"{tomlfile.key('a.b c')} = 1") == {"a.b c": 1}


# ---- schema and docs ------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _schema():
    from importlib import resources

    return json.loads(resources.files("nccldiag.spec").joinpath("schema.json").read_text(encoding="utf-8"))


def test_schema_names_every_key_the_code_reads():
    sch = _schema()
    props = sch["properties"]
    for f in F.FIELDS:
        if f.path[0] == "nic":
            assert f.path[2] in props["nic"]["additionalProperties"]["properties"], f.name
        else:
            assert f.path[1] in props[f.path[0]]["properties"], f.name
    assert set(props) == set(model.TOP)


def test_docs_example_and_a_derived_spec_validate_against_the_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    docs = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    example = re.search(r"```toml\n(.*?)```", docs, re.S).group(1)
    sch = _schema()
    jsonschema.validate(toml_data(example), sch)
    model.loads(example, "docs/spec.md")  # and nccldiag reads it
    derived = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    jsonschema.validate(toml_data(derived.read_text()), sch)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"gpu": {"count": "8"}}, sch)


def test_docs_list_every_key_and_check_id():
    from nccldiag.spec import thresholds

    docs = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    for f in F.FIELDS:
        assert f"`{f.path[-1]}`" in docs and f"`{f.check}`" in docs, f.name
    for k in list(thresholds.KEYS) + list(model.BANDWIDTH_KEYS) + ["[bandwidth.setting]"]:
        assert f"`{k}`" in docs, k
    sch = _schema()["properties"]
    assert set(sch["thresholds"]["properties"]) == set(thresholds.KEYS)
    assert set(sch["bandwidth"]["properties"]) == set(model.BANDWIDTH_KEYS) | {"setting"}


# ---- [drain] ---------------------------------------------------------------------------------------------------


def test_drain_only_and_never_decide_which_failures_drain_a_node():
    from nccldiag.check.engine import CheckReport, NodeReport
    from nccldiag.model.findings import fail, ok
    from nccldiag.slurm import verdicts
    from nccldiag.slurm.feedback import node_verdicts
    from nccldiag.slurm.nodes import SlurmNode

    rep = CheckReport(nodes=[
        NodeReport("a", [fail("system", "system.spec_os", "x"), fail("gpu", "gpu.spec_count", "y")]),
        NodeReport("b", [fail("system", "system.spec_os", "x")]),
        NodeReport("c", [ok("system", "system.basic", "x")]),
    ], areas=["system"])
    # without a spec every failure drains
    assert [(v.host, v.status) for v in node_verdicts(rep)] == [("a", "fail"), ("b", "fail"), ("c", "pass")]
    never = model.loads('[drain]\nnever = ["system.spec_*"]\n', "d.toml")  # written for the test
    got = [(v.host, v.status, list(v.failed)) for v in node_verdicts(rep, never)]
    assert got == [("a", "fail", ["gpu.spec_count"]), ("b", "held", ["system.spec_os"]), ("c", "pass", [])]
    only = model.loads('[drain]\nonly = ["gpu.*"]\n', "d.toml")
    assert [v.status for v in node_verdicts(rep, only)] == ["fail", "held", "pass"]
    # a held node is neither drained nor resumed, and the reason says why
    vs = node_verdicts(rep, never)
    names = {"a": "a", "b": "b", "c": "c"}
    assert [a.node for a in verdicts.to_drain(vs, names)] == ["a"]
    drained = {"b": SlurmNode(name="b", state="IDLE+DRAIN", reason="nccldiag: system.spec_os")}
    (keep,) = verdicts.to_resume(vs, names, drained)
    assert keep.action == "keep" and "[drain] does not drain for" in keep.why


@pytest.mark.parametrize("text,words", [
    ('[drain]\nalways = ["gpu.*"]\n', "unknown key 'drain.always'"),
    ('[drain]\nnever = "gpu.*"\n', "drain.never should be an array of check ids"),
    ('[drain]\nnever = ["gpu.spec_cont"]\n', "did you mean 'gpu.spec_count'"),
])
def test_drain_mistakes_name_the_line(text, words):
    with pytest.raises(model.UsageError) as exc:
        model.loads(text, "d.toml")
    assert str(exc.value).startswith("d.toml:2: ") and words in str(exc.value)


# ---- [thresholds] ----------------------------------------------------------------------------------------------


def _with_thresholds(text: str):
    """NodeFacts carrying a spec's thresholds as the check engine passes them to the areas."""
    from nccldiag.areas.base import NodeFacts

    s = model.loads(text, "t.toml")
    return NodeFacts("n1", options={"thresholds": dict(s.thresholds)})


def _judge(area, raw, node=None):
    from nccldiag.areas.base import NodeFacts

    return {f.check: f for f in area.judge(area.parse(raw), node or NodeFacts("n1"))}


def test_threshold_link_flaps_end_to_end(tmp_path):
    from nccldiag.spec import thresholds

    base = fixture("link-flaps/gpud1209-journal-mlx5_5-port1-link-init-then-active.txt")
    # written for this test, in the real mlx5 line format of that capture: the port going down and back twice
    down = "Feb 14 06:00:00 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN\n"
    up = "Feb 14 06:00:01 000-000-00000-1-gpu-1 kernel: mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link ACTIVE\n"
    node = dict(B.healthy_h100(), kernel_log=base + (down + up) * 2)
    bundle = write_bundle(tmp_path / "b", {"gpu001": node})
    _, rep = check_json(bundle)
    assert [f["status"] for f in by_check(rep, "ibcounters.link_flaps")] == ["warn"]
    path = tmp_path / "t.toml"
    path.write_text("[thresholds]\nlink_flaps = 2\n")
    code, rep = check_json(bundle, "--spec", str(path))
    (f,) = by_check(rep, "ibcounters.link_flaps")
    assert code == 1 and f["status"] == "fail" and f["expected"] == f"fewer than 2 (threshold of {path}:2)"
    assert thresholds.KEYS["link_flaps"].default == 5


def test_threshold_aer_correctable_and_replays():
    from nccldiag.areas import pcie_errors

    aer = fixture("pcie-aer/node_exporter-ttar-aer-dev-counters-nvme-all-zero.txt")
    many = aer.replace("TOTAL_ERR_COR 0", "TOTAL_ERR_COR 101", 1)  # written for this test
    assert _judge(pcie_errors, {"aer_sysfs": many})["pcie_errors.aer"].status.value == "warn"
    f = _judge(pcie_errors, {"aer_sysfs": many}, _with_thresholds("[thresholds]\naer_correctable = 1000\n"))
    assert f["pcie_errors.aer"].status.value == "ok"
    f = _judge(pcie_errors, {"aer_sysfs": aer.replace("TOTAL_ERR_COR 0", "TOTAL_ERR_COR 11", 1)},
               _with_thresholds("[thresholds]\naer_correctable = 10\n"))["pcie_errors.aer"]
    assert f.status.value == "warn" and f.expected == "0 uncorrectable, at most 10 correctable (threshold of t.toml:2)"
    # real: 652 replays on 8 H100s; an uptime of a day (written for this test) is well under 8 a minute
    raw = {"nvidia_smi_full": fixture("pcie-aer/gpud-8x-h100-535.183.01-replays-since-reset-58-120-full-q.txt"),
           "aer_sysfs": "uptime: 86400\n"}
    assert _judge(pcie_errors, raw)["pcie_errors.replays"].status.value == "ok"
    f = _judge(pcie_errors, raw, _with_thresholds("[thresholds]\npcie_replays_per_minute = 0.05\n"))
    assert f["pcie_errors.replays"].status.value == "warn" and "(threshold of t.toml:2)" in f["pcie_errors.replays"].expected


def test_threshold_ecc_dram_uncorrectable():
    from nccldiag.areas import gpuhealth

    t = fixture("gpu-throttle/gpud-8x-h100-535.161.08-hw-power-brake-slowdown-active-full-q.txt")
    i = t.index("        Aggregate\n")
    # written for this test: 600 lifetime DRAM uncorrectable errors on the first GPU of the real report
    agg600 = t[:i] + t[i:].replace("DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 600", 1)
    assert _judge(gpuhealth, {"nvidia_smi_full": agg600})["gpuhealth.ecc"].status.value == "fail"
    f = _judge(gpuhealth, {"nvidia_smi_full": agg600}, _with_thresholds("[thresholds]\necc_dram_uncorrectable = 1000\n"))
    assert f["gpuhealth.ecc"].status.value == "warn"
    f = _judge(gpuhealth, {"nvidia_smi_full": agg600}, _with_thresholds("[thresholds]\necc_dram_uncorrectable = 100\n"))
    assert f["gpuhealth.ecc"].status.value == "fail" and "(threshold of t.toml:2)" in f["gpuhealth.ecc"].expected


def test_threshold_defaults_are_the_areas_own():
    from nccldiag.areas import gpuhealth, ibcounters, pcie_errors
    from nccldiag.spec import thresholds

    from nccldiag.diagnosis import expected
    from nccldiag.isolate.run import IsolateOptions
    from nccldiag.spec import runs

    own = {"ecc_dram_uncorrectable": gpuhealth.AGGREGATE_DRAM_UE_LIMIT, "ecc_volatile_correctable":
           gpuhealth.VOLATILE_CE_LIMIT, "link_flaps": ibcounters.FLAP_FAIL, "aer_correctable":
           pcie_errors.CORRECTABLE_LIMIT, "pcie_replays_per_minute": pcie_errors.REPLAYS_PER_MIN,
           "busbw_share": expected.FLOOR, "isolate_fraction": IsolateOptions().fraction}
    assert {k: t.default for k, t in thresholds.KEYS.items()} == own
    assert runs.DEFAULT_FRACTION == IsolateOptions().fraction


@pytest.mark.parametrize("text,words", [
    ("[thresholds]\nlink_flap = 3\n", "unknown key 'thresholds.link_flap' (did you mean 'link_flaps'?)"),
    ("[thresholds]\nlink_flaps = 0\n", "impossible"),
    ("[thresholds]\nlink_flaps = 2.5\n", "should be a whole number"),
    ('[thresholds]\npcie_replays_per_minute = "8"\n', "should be a number"),
    ("[thresholds]\nbusbw_share = 1.5\n", "busbw_share = 1.5 is impossible (a value from 0.01 to 1)"),
    ("[thresholds]\nisolate_fraction = 0\n", "impossible"),
])
def test_threshold_mistakes_name_the_line(text, words):
    with pytest.raises(model.UsageError) as exc:
        model.loads(text, "t.toml")
    assert str(exc.value).startswith("t.toml:2: ") and words in str(exc.value)


def test_spec_show_lists_each_key_with_its_line_and_check(tmp_path):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    res = CliRunner().invoke(main, ["spec", "show", str(path)])
    assert res.exit_code == 0
    assert f"{path}:{line(path, r'count = ')}: gpu.count -> gpu.spec_count" in res.stdout
    assert "keys, 0 severity rules" in res.stderr
    with path.open("a") as fh:  # written for the test (init ends with the [severity] table)
        fh.write('\n[bandwidth]\ninter_node_gbps = 370\n\n[thresholds]\nbusbw_share = 0.8\n')
    res = CliRunner().invoke(main, ["spec", "show", str(path)])
    assert res.exit_code == 0, res.output
    assert f"{path}:{line(path, r'inter_node_gbps')}: [bandwidth] inter_node_gbps = 370 GB/s" in res.stdout
    assert f"{path}:{line(path, r'busbw_share')}: [thresholds] busbw_share = 0.8" in res.stdout
    assert "1 bandwidth figures, 1 thresholds" in res.stderr


def test_only_judges_the_keys_of_the_chosen_areas(tmp_path):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    bundle = write_bundle(tmp_path / "b", {"gpu009": older_firmware(B.healthy_h100("gpu009"))})
    code, rep = check_json(bundle, "--spec", str(path), "--only", "gpu")
    assert code == 0 and {f["check"].split(".")[0] for f in spec_findings(rep, "gpu009")} == {"gpu", "system"}  # system: always
    code, rep = check_json(bundle, "--spec", str(path), "--only", "ib,firmware")
    assert code == 1 and "fail" in [f["status"] for f in by_check(rep, "firmware.spec_hca_fw")]


def test_an_interrupted_run_rebuilt_is_judged_against_its_spec_again(tmp_path):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    bundle = write_bundle(tmp_path / "b", {"gpu009": older_firmware(B.healthy_h100("gpu009"))})
    run = tmp_path / "run"
    code, _ = check_json(bundle, "--spec", str(path), "--run-dir", str(run))
    assert code == 1 and json.loads((run / "run.json").read_text())["spec"] == str(path.resolve())
    (run / "report.json").unlink()  # as a run stopped before its report
    res = CliRunner().invoke(main, ["report", str(run), "--json", "-"])
    rep = json.loads(res.stdout)
    assert "fail" in [f["status"] for f in by_check(rep, "firmware.spec_hca_fw", "gpu009")]


# ---- probe and isolate -----------------------------------------------------------------------------------------


def probe_facts(node: dict) -> dict:
    """The facts ``nccldiag probe`` reads from a node: its own sources only (nccldiag.probe.facts.SOURCES)."""
    from nccldiag.probe import facts as PF

    own = {name for _area, names in PF.SOURCES.values() for name in names}
    return PF.from_sections({name: node.get(name) for name in own})


def all_facts(node: dict) -> dict:
    """The gpu, ib and nvlink facts ``nccldiag check`` reads from every source of those areas."""
    from nccldiag.areas import gpu, infiniband, nvlink

    return {a.NAME: a.parse({s.name: node.get(s.name) for s in a.SOURCES}) for a in (gpu, infiniband, nvlink)}


def test_the_probe_reads_its_spec_keys_as_the_check_does():
    from nccldiag.spec import runs

    node = B.healthy_h100()
    full, part = all_facts(node), probe_facts(node)
    for f in F.FIELDS:
        if f.name not in runs.PROBE_KEYS:
            continue
        for m in (F.nic_models(full) if f.path[0] == "nic" else [None]):
            got = F.read(f, part, m)
            assert got == F.read(f, full, m), f.where(m)
            # the H100 capture's NVLink listing is cut ('[...]'): neither reads it; the A100's below is whole
            assert got or f.path[0] == "nvlink", f.where(m)
    a100 = {"nvlink_status": fixture("nvidia-smi-nvlink/gpud-a100-sxm4-8gpu-12links-25GBs.txt")}
    for name in ("nvlink.links_per_gpu", "nvlink.speed_gbs"):
        got = F.read(F.BY_NAME[name], probe_facts(a100))
        assert got and got == F.read(F.BY_NAME[name], all_facts(a100)), name
    assert set(F.read(F.BY_NAME["nvlink.links_per_gpu"], probe_facts(a100)).values()) == {12}


def test_probe_judges_its_keys_on_every_node_and_names_the_others(tmp_path):
    from nccldiag.spec import runs

    spec = model.load(str(spec_from(tmp_path, {"gpu001": B.healthy_h100()})))
    facts = {"gpu001": probe_facts(B.healthy_h100()), "gpu009": probe_facts(older_firmware(B.healthy_h100("gpu009")))}
    found = runs.probe_findings(spec, facts, ["gpu001", "gpu009", "gpu010"], "nccl")
    on = lambda h: {f.check: f for f in found if f.host == h}  # noqa: E731
    # the reference node itself: no false finding on any key the probe judges
    assert on("gpu001") and all(f.status.value == "ok" for f in on("gpu001").values())
    assert {f.check for f in on("gpu001").values()} >= {"gpu.spec_count", "ib.spec_rate", "firmware.spec_hca_fw"}
    (bad,) = [f for f in found if f.host == "gpu009" and f.status.value != "ok"]  # the ConnectX-7 table's key
    assert bad.check == "firmware.spec_hca_fw" and bad.status.value == "fail"
    assert OLD_FW in bad.message and "28.41.1000" in bad.message
    assert bad.evidence[0].startswith(f"{spec.path}:")
    # a node whose facts never came back: not checked, never ok
    assert {f.status.value for f in on("gpu010").values()} == {"skip"}
    (rest,) = [f for f in found if f.check == "probe.spec_not_checked"]
    assert rest.status.value == "skip" and "topology.gpu_links" in rest.message and "gpu.count" not in rest.message
    (gloo,) = runs.probe_findings(spec, {}, ["gpu001"], "gloo")
    assert gloo.check == "probe.spec_not_checked" and "gpu.count" in gloo.message


def _fake_probe_report(hosts, facts):
    from nccldiag.model.findings import fail
    from nccldiag.probe.analysis import ProbeReport

    rep = ProbeReport(backend="nccl", launcher="torchrun", hosts=list(hosts), nproc_per_node=8, node_facts=facts)
    rep.findings.append(fail("probe", "probe.rank_died", "rank 3 (gpu001) died", host="gpu001"))
    return rep


def test_probe_spec_findings_and_severity_reach_the_report(tmp_path, monkeypatch):
    from nccldiag.probe import session

    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    with path.open("a") as fh:  # written for the test: the site's policy
        fh.write('"probe.rank_died" = "warn"\n')  # init ends with the [severity] table
    facts = {"gpu001": probe_facts(B.healthy_h100()), "gpu009": probe_facts(older_firmware(B.healthy_h100("gpu009")))}
    from nccldiag.probe import analysis

    # the run stands in for session.run, which ends as every probe does: the spec's findings, then the diagnoses
    monkeypatch.setattr(session, "run", lambda hosts, opts, progress=None, warm=(): analysis.conclude(
        _fake_probe_report(["gpu001", "gpu009"], facts), opts.spec))
    res = CliRunner().invoke(main, ["probe", "-w", "gpu001,gpu009", "--spec", str(path), "--json", "-"])
    assert res.exit_code == 1, res.output  # the older firmware fails; the dead rank is a warning now
    rep = json.loads(res.stdout[res.stdout.index("{"):])
    found = rep["findings"]
    died = [f for f in found if f["check"] == "probe.rank_died"][0]
    assert died["status"] == "warn" and died["message"].startswith(f"warn, downgraded from fail by {path}:")
    assert [f["host"] for f in found if f["check"] == "firmware.spec_hca_fw" and f["status"] == "fail"] == ["gpu009"]
    monkeypatch.setenv("NCCLDIAG_SPEC", str(path))  # the same spec from the environment
    res = CliRunner().invoke(main, ["probe", "-w", "gpu001,gpu009", "--json", "-"])
    assert res.exit_code == 1 and '"firmware.spec_hca_fw"' in res.stdout


def test_a_bad_spec_stops_probe_and_isolate_before_any_node(tmp_path, monkeypatch):
    from nccldiag.isolate import run as isolate_run
    from nccldiag.probe import session

    bad = tmp_path / "bad.toml"
    bad.write_text("[gpu]\ncount = \"eight\"\n")  # written for the test
    monkeypatch.setattr(session, "run", lambda *a, **k: pytest.fail("a node was contacted"))
    monkeypatch.setattr(isolate_run, "run", lambda *a, **k: pytest.fail("a node was contacted"))
    for cmd in (["probe", "-w", "n1,n2"], ["isolate", "-w", "n1,n2"]):
        res = CliRunner().invoke(main, cmd + ["--spec", str(bad)])
        assert res.exit_code == 2 and f"{bad}:2: gpu.count should be a whole number" in res.output, res.output


def test_isolate_applies_the_spec_severity_and_says_it_judges_no_node_keys(tmp_path, monkeypatch):
    from nccldiag.model.findings import fail
    from nccldiag.isolate import run as isolate_run

    path = tmp_path / "site.toml"
    path.write_text('[gpu]\ncount = 8\n\n[severity]\n"isolate.node" = "info"\n')  # written for the test
    seen = {}

    def fake(hosts, opts, progress=None):
        seen["opts"] = opts
        rep = isolate_run.IsolateReport(hosts=[h.name for h in hosts], backend="nccl")
        rep.rounds.append(isolate_run.Round(0, "alone"))
        rep.findings.append(fail("isolate", "isolate.node", "n2: slow node", host="n2"))
        return rep

    monkeypatch.setattr(isolate_run, "run", fake)
    res = CliRunner().invoke(main, ["isolate", "-w", "n1,n2", "--spec", str(path), "--json", "-"])
    assert res.exit_code == 0, res.output  # the slow node is information by the site's policy
    rep = json.loads(res.stdout[res.stdout.index("{"):])
    node = [f for f in rep["findings"] if f["check"] == "isolate.node"][0]
    assert node["status"] == "ok" and node["message"].startswith(f"info, downgraded from fail by {path}:5")
    (rest,) = [f for f in rep["findings"] if f["check"] == "isolate.spec_not_checked"]
    assert rest["status"] == "skip" and "gpu.count" in rest["message"]
    res = CliRunner().invoke(main, ["isolate", "-w", "n1,n2", "--json", "-"])
    assert res.exit_code == 1  # without the spec the same finding fails


# ---- [bandwidth] and the busbw thresholds ----------------------------------------------------------------------


def _probe_setting(name: str, env: dict, busbw: float, hosts=("a", "b")):
    """One probe setting's result as the bandwidth rule reads it: its best all_reduce point at 8 GiB.

    The figure is the published one of nccl-tests#290 (2 x 8 H100, 8 NDR rails, NCCL_ALGO=RING: 368 GB/s);
    the objects around it are written for this test.
    """
    from types import SimpleNamespace as NS

    from nccldiag.probe.plan import Setting

    point = NS(size=8 << 30, busbw=busbw)
    ranks = {i: NS(host=hosts[i % len(hosts)]) for i in range(2 * len(hosts))}
    outcome = NS(collectives={"all_reduce": NS(collective="all_reduce", status="ok", sweep=[point])}, ranks=ranks)
    return NS(setting=Setting(name, env), outcome=outcome, log_facts=None)


def _h100_facts():
    from nccldiag.areas import gpu as gpu_area
    from nccldiag.areas import infiniband as ib_area

    return {"ib": ib_area.parse({"ib_sysfs": fixture("sysfs-infiniband/gpud-h100-ndr400-8ib-plus-bond-ethernet.txt")}),
            "gpu": gpu_area.parse({"gpu_query": B.h100_query_csv(),
                                   "nvlink_status": fixture("nvidia-smi-nvlink/mleng-h100-nvlink-status-elided.txt")})}


def _bandwidth(spec_text, settings, hosts=("a", "b")):
    from types import SimpleNamespace as NS

    from nccldiag.diagnosis import diagnose
    from nccldiag.diagnosis.inputs import Inputs
    from nccldiag.diagnosis.rules import bandwidth

    spec = model.loads(spec_text, "t.toml") if spec_text is not None else None
    probe = NS(backend="nccl", settings=settings, hosts=list(hosts), spec=spec, node_facts={}, iface_speeds={},
               ifnames={}, route_ifnames={})
    inp = Inputs(probe=probe, node_facts={h: _h100_facts() for h in hosts})
    return bandwidth.comparisons(inp), [d for d in bandwidth.diagnose(inp)]


def test_init_leaves_the_bandwidth_to_the_site_and_names_the_derived_line_rates(tmp_path):
    text = spec_from(tmp_path, {"gpu001": B.healthy_h100()}).read_text()
    # 8 NDR ports x 400 Gb/s across nodes; 18 NVLinks x 26.562 GB/s on one node (the real captures)
    assert "(on gpu001: across nodes 400.0 GB/s (IB/RoCE); on one node 478.1 GB/s (NVLink))" in text
    assert "# [bandwidth]\n# inter_node_gbps = ?\n# intra_node_gbps = ?\n" in text
    assert not model.loads(text, "s.toml").bandwidth  # written commented out: the admin measures it


def test_bandwidth_from_the_spec_and_busbw_share_change_the_judgement():
    ring = _probe_setting("ring", {"NCCL_ALGO": "Ring"}, 368.0)
    default = _probe_setting("default", {}, 368.0)
    # no spec: derived from the nodes, 8 x 400 Gb/s = 400 GB/s, 92%: healthy
    cmps, diags = _bandwidth(None, [default, ring])
    assert cmps["ring"].expectation.gbps == pytest.approx(400.0) and not cmps["ring"].below and not diags
    # written for the test: a site that expects 480 GB/s across nodes
    text = "[bandwidth]\ninter_node_gbps = 480\n"
    cmps, diags = _bandwidth(text, [default, ring])
    c = cmps["ring"]
    assert c.expectation.gbps == 480.0 and c.expectation.bottleneck.basis == "bandwidth.inter_node_gbps of t.toml:2"
    assert "derived from the nodes: 400.0 GB/s" in c.expectation.notes[0]
    assert c.comparable and round(c.percent) == 77 and not c.below and not diags  # 77% is above nccldiag's 70%
    # two nodes: the default row (tree may exceed the line rate) is shown, never judged, with the reason
    assert not cmps["default"].comparable and "NCCL_ALGO=Ring" in cmps["default"].why_not
    # the site's own share: 80%
    cmps, diags = _bandwidth(text + "\n[thresholds]\nbusbw_share = 0.8\n", [default, ring])
    assert cmps["ring"].below and cmps["ring"].to_dict()["floor"] == 0.8
    (d,) = diags
    assert "480.0 GB/s the site spec expects (bandwidth.inter_node_gbps of t.toml:2)" in d.summary
    assert "below 80% of the site spec's figure" in d.confidence_why
    assert any("thresholds.busbw_share, t.toml:5" in e.text for e in d.evidence)
    # a setting's own figure wins over the scope's
    cmps, _ = _bandwidth(text + "\n[bandwidth.setting]\nring = 380\n", [default, ring])
    assert cmps["ring"].expectation.gbps == 380.0
    assert "bandwidth.setting.ring of t.toml:5" in cmps["ring"].expectation.bottleneck.basis
    assert cmps["default"].expectation.gbps == 480.0
    # one node: intra_node_gbps (and not the inter-node figure)
    one = _probe_setting("default", {}, 368.0, hosts=("a",))
    cmps, diags = _bandwidth("[bandwidth]\ninter_node_gbps = 100\nintra_node_gbps = 478\n", [one], hosts=("a",))
    assert cmps["default"].expectation.gbps == 478.0 and cmps["default"].expectation.scope == "intra-node"
    assert not cmps["default"].below  # 77%


def test_the_bandwidth_line_names_the_spec_line_and_the_share():
    from nccldiag.diagnosis import Summary
    from nccldiag.report.diagnoses_report import bandwidth_line

    cmps, _ = _bandwidth("[bandwidth]\ninter_node_gbps = 480\n\n[thresholds]\nbusbw_share = 0.8\n",
                         [_probe_setting("ring", {"NCCL_ALGO": "Ring"}, 368.0)])
    s = Summary()
    s.bandwidth = {k: v.to_dict() for k, v in cmps.items()}
    line = bandwidth_line(s.to_dict()["bandwidth"], "ring").plain
    assert "368.00 / 480.0 GB/s = 77% of expected" in line
    assert "expected by bandwidth.inter_node_gbps of t.toml:2, low below 80%" in line


@pytest.mark.parametrize("text,at,words", [
    ("[bandwidth]\ninter_node = 400\n", 2, "unknown key 'bandwidth.inter_node' (did you mean 'inter_node_gbps'?)"),
    ("[bandwidth]\nintra_node_gbps = -1\n", 2, "is impossible (a busbw above 0 GB/s)"),
    ('[bandwidth]\ninter_node_gbps = "400"\n', 2, "should be a number of GB/s"),
    ("[bandwidth]\nsetting = 3\n", 2, "should be a table ([bandwidth.setting])"),
    ("[bandwidth.setting]\nring = 0\n", 2, "bandwidth.setting.ring = 0 is impossible"),
])
def test_bandwidth_mistakes_name_the_line(text, at, words):
    with pytest.raises(model.UsageError) as exc:
        model.loads(text, "b.toml")
    assert str(exc.value).startswith(f"b.toml:{at}: ") and words in str(exc.value)


def test_isolate_fraction_from_the_spec_unless_given_and_what_it_changes(tmp_path, monkeypatch):
    from nccldiag.isolate import judge as isolate, run as isolate_run

    # what the margin changes: a pair at 0.6 x the median of its round passes at 0.5 and is slow at 0.8
    busbw = [10.0, 10.0, 10.0, 6.0]  # written for the test
    assert isolate.threshold(busbw, 0.5)[0] == 5.0 and isolate.threshold(busbw, 0.8)[0] == 8.0
    path = tmp_path / "site.toml"
    path.write_text("[thresholds]\nisolate_fraction = 0.8\n")  # written for the test
    seen = []

    def fake(hosts, opts, progress=None):
        seen.append(opts.fraction)
        rep = isolate_run.IsolateReport(hosts=[h.name for h in hosts], backend="nccl")
        rep.rounds.append(isolate_run.Round(0, "alone"))
        return rep

    monkeypatch.setattr(isolate_run, "run", fake)
    res = CliRunner().invoke(main, ["isolate", "-w", "n1,n2", "--spec", str(path), "--json", "-"])
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout[res.stdout.index("{"):])
    (note,) = [f for f in rep["findings"] if f["check"] == "isolate.spec_threshold"]
    assert f"0.8 x the median" in note["message"] and f"{path}:2" in note["message"]
    CliRunner().invoke(main, ["isolate", "-w", "n1,n2", "--spec", str(path), "--fraction", "0.3", "--json", "-"])
    CliRunner().invoke(main, ["isolate", "-w", "n1,n2", "--json", "-"])
    assert seen == [0.8, 0.3, 0.5]


# ---- layouts: GPU-NIC pairs, NUMA, the NICs' PCIe links ----------------------------------------------------------

DGX_A100_TOPO = "nvidia-smi-topo-m/gengwg-dgx-a100-8gpu-12nic-nv12-pxb-numa.txt"


def _edit_row(text: str, row: str, edit) -> str:
    """``text`` with the line of ``row`` changed by ``edit`` (tab-separated cells)."""
    out = []
    for ln in text.splitlines(keepends=True):
        cells = ln.rstrip("\n").split("\t")
        out.append("\t".join(edit(cells)) + "\n" if cells and cells[0] == row else ln)
    return "".join(out)


@pytest.mark.parametrize("capture", sorted(p.name for p in (real.NODE / "nvidia-smi-topo-m").glob("*.txt"))
                         if real.AVAILABLE else [])
def test_every_topo_capture_checked_against_its_own_spec_has_no_deviation(tmp_path, capture):
    node = {"topo_m": fixture(f"nvidia-smi-topo-m/{capture}")}
    path = spec_from(tmp_path, {"n1": node})
    code, rep = check_json(write_bundle(tmp_path / "b", {"n1": node}), "--spec", str(path))
    bad = [f["message"] for f in spec_findings(rep, "n1") if f["status"] in ("warn", "fail")]
    assert bad == []


def test_gpu_nic_pairs_and_numa_layout_of_a_real_dgx_a100():
    node = {"topo_m": fixture(DGX_A100_TOPO)}
    from nccldiag.areas import affinity

    facts = {"affinity": affinity.parse(node)}
    pairs = F.pairs(F.read(F.BY_NAME["topology.gpu_nic"], facts)[""])
    # the capture: every GPU is PXB to two NICs, SYS to the ten others (mlx5_4/5/10/11 are SYS to every GPU)
    assert len(pairs) == 16 and set(pairs.values()) == {"PXB"} and pairs["GPU3/mlx5_2"] == "PXB"
    assert F.read(F.BY_NAME["topology.numa"], facts)[""] == "GPU0=3 GPU1=3 GPU2=1 GPU3=1 GPU4=7 GPU5=7 GPU6=5 GPU7=5"


def test_a_gpu_nic_pair_moved_and_a_gpu_on_another_numa_node_are_named(tmp_path):
    good = {"topo_m": fixture(DGX_A100_TOPO)}
    path = spec_from(tmp_path, {"n1": good})
    # text edit written for this test, in topo -m's format: GPU3 sees mlx5_2 across the SMP interconnect (as a
    # NIC in another slot would), and GPU4's NUMA Affinity is 5 instead of 7
    moved = _edit_row(good["topo_m"], "GPU3", lambda c: c[:11] + ["SYS"] + c[12:])
    moved = _edit_row(moved, "GPU4", lambda c: c[:-1] + ["5"])
    code, rep = check_json(write_bundle(tmp_path / "b", {"n1": good, "n2": {"topo_m": moved}}), "--spec", str(path))
    assert code == 1 and [f for f in spec_findings(rep, "n1") if f["status"] != "ok"] == []
    bad = {f["check"]: f for f in spec_findings(rep, "n2") if f["status"] != "ok"}
    assert set(bad) == {"affinity.spec_gpu_nic", "affinity.spec_numa"}
    pair = bad["affinity.spec_gpu_nic"]
    assert pair["status"] == "fail" and pair["area"] == "affinity"
    assert "GPU3/mlx5_2 SYS, expected PXB (1 of 16 differ)" in pair["message"]
    assert pair["evidence"][0].startswith(f"{path}:{line(path, r'gpu_nic = ')}: topology.gpu_nic = ")
    assert "GPU4 5, expected 7 (1 of 8 differ)" in bad["affinity.spec_numa"]["message"]


def test_a_nic_pcie_link_below_the_spec_is_named(tmp_path):
    path = spec_from(tmp_path, {"gpu001": B.healthy_h100()})
    assert 'nic_pcie = "0000:1a:00.0=Gen5x16 0000:1b:00.0=Gen4x16"' in path.read_text()
    node = B.healthy_h100("gpu009")
    # text edit written for this test, in lspci -vvv's format: the ConnectX-7 trained at Gen4 x8
    head, nic, rest = node["lspci"].partition("1a:00.0 Ethernet controller")
    node["lspci"] = head + nic + rest.replace("LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)",
                                              "LnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)", 1)
    assert node["lspci"] != B.healthy_h100()["lspci"]
    code, rep = check_json(write_bundle(tmp_path / "b", {"gpu009": node}), "--spec", str(path))
    (f,) = [f for f in by_check(rep, "pcie.spec_nic_pcie", "gpu009")]
    assert f["status"] == "fail" and "0000:1a:00.0 Gen4x8, expected Gen5x16 (1 of 2 differ)" in f["message"]


def test_probe_names_a_gpu_with_an_nvlink_down(tmp_path):
    from nccldiag.spec import runs

    good = {"nvlink_status": fixture("nvidia-smi-nvlink/gpud-a100-sxm4-8gpu-12links-25GBs.txt")}
    spec = model.load(str(spec_from(tmp_path, {"n1": good})))
    assert {e.key for e in spec.expects} >= {"nvlink.links_per_gpu", "nvlink.speed_gbs"}
    # text edit written for this test, in nvlink --status' format (as azhpc's V100 capture prints a link that
    # is down): GPU 3's link 11 inactive
    head, gpu3, rest = good["nvlink_status"].partition("GPU 3:")
    down = {"nvlink_status": head + gpu3 + rest.replace("Link 11: 25 GB/s", "Link 11: <inactive>", 1)}
    found = runs.probe_findings(spec, {"n1": probe_facts(good), "n2": probe_facts(down)}, ["n1", "n2"], "nccl")
    assert [f.message for f in found if f.host == "n1" and f.status.value != "ok"] == []
    (links,) = [f for f in found if f.host == "n2" and f.check == "nvlink.spec_links"]
    assert links.status.value == "fail" and links.actual == {"GPU3": "11"} and "(7 of 8 as expected)" in links.message


def test_a_probe_run_rebuilt_reads_its_spec_again(tmp_path):
    """A probe run directory whose run.json names a spec (both written for this test) holding the worker's
    real records of a 2-rank gloo run where rank 1 returned corrupt data."""
    records = Path(__file__).resolve().parents[1] / "fixtures" / "probe-records" / "gloo-2rank-corrupt-rank1.jsonl"
    spec = tmp_path / "site.toml"
    spec.write_text('[gpu]\ncount = 8\n\n[severity]\n"probe.*" = "warn"\n')
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text(records.read_text())
    meta = {"command": "probe", "schema": "nccldiag.probe/1", "run_id": "nccldiag-test", "backend": "gloo",
            "launcher": "torchrun", "hosts": ["vm"], "nproc_per_node": 2, "timeout": 120, "require_ib": False,
            "settings": [{"name": "default", "env": {}, "why": "", "custom": False, "requires_ib": False}],
            "loopback": {}, "ifnames": {}, "started": "2026-11-23T10:00:00Z"}
    (run / "run.json").write_text(json.dumps(meta))
    res = CliRunner().invoke(main, ["report", str(run), "--json", "-"])
    failed = [f for s in json.loads(res.stdout)["settings"] for f in s["findings"] if f["status"] == "fail"]
    assert failed  # without the spec the corrupt rank fails
    (run / "run.json").write_text(json.dumps(dict(meta, spec=str(spec))))
    res = CliRunner().invoke(main, ["report", str(run), "--json", "-"])
    doc = json.loads(res.stdout)
    found = doc["findings"] + [f for s in doc["settings"] for f in s["findings"]]
    moved = [f for f in found if f["message"].startswith(f"warn, downgraded from fail by {spec}:5")]
    assert {f["check"] for f in moved} == {f["check"] for f in failed}
    assert not [f for f in found if f["status"] == "fail"]
    assert [f["status"] for f in found if f["check"] == "probe.spec_not_checked"] == ["skip"]


# what a terminal obeys or shows as nothing, and a line break (CONSTRUCTED): in a CA name and a CA type
HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x1b[41m\u202e\x9b31m\x7f\nrate_gbps = 1"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\x7f")


def test_init_on_hostile_node_strings_writes_a_spec_that_loads_and_prints_nothing_raw(tmp_path):
    """Two reference nodes whose ibstat names a CA and its type with terminal escapes, a bidi override, a DEL
    and a line break, and whose port rates differ: the spec (stdout) and its notes (stderr) carry no raw
    character, the file loads back with the type as the node said it, and ``spec show`` lists it cleanly."""
    nodes = {}
    for host, addr, rate in (("gpu001", "10.0.0.11", "400"), ("gpu002", "10.0.0.12", "200")):
        n = B.healthy_h100(host, addr)
        n["ibstat"] = (n["ibstat"].replace("CA type: MT4129", "CA type: MT4129" + HOSTILE.replace("\n", " "))
                       .replace("CA 'mlx5_0'", "CA 'mlx5_0" + HOSTILE.replace("\n", "") + "'")
                       .replace("Rate: 400", f"Rate: {rate}", 1))
        nodes[host] = n
    ref = write_bundle(tmp_path / "ref", nodes)
    code, text, err = init("--bundle", str(ref))
    assert code == 0, err
    assert not [c for c in RAW if c in text + err], [c for c in RAW if c in text + err]
    assert "the reference nodes disagree" in err and "\\u202e" in err
    path = tmp_path / "site.toml"
    path.write_text(text)
    s = model.load(str(path))  # loads: no control character left in a key, a value or a comment
    keys = {e.key for e in s.expects}
    assert any(k.startswith("nic.MT4129\x1b]0;PWNED") for k in keys), keys  # the type as the node said it
    assert not any(k.endswith("rate_gbps") and e.value == 1 for e in s.expects for k in [e.key])
    res = CliRunner().invoke(main, ["spec", "show", str(path)])
    assert res.exit_code == 0 and "nic.MT4129" in res.stdout, res.output
    assert not [c for c in RAW if c in res.stdout + res.stderr]


@pytest.mark.parametrize("n", [0, 1, 1023, 4096, 1 << 30, 64 << 30, 25276387328, 25276387328 + 512, (1 << 40) - 1])
def test_a_size_written_by_spec_init_reads_back_to_the_same_bytes(n):
    text = F.show_size(n)
    assert F.parse_size(text) == n, text


# ---- reading the file: what it is, whose it is, its shape --------------------------------------------------

REPO = str(Path(__file__).resolve().parents[2])
NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files to another user (nobody)")


def bounded_cli(args, tmp_path, env=None, timeout=60):
    """``nccldiag ARGS`` in a process of its own, bounded in time and to 1 GiB of memory: a spec read without
    bounds hangs on a FIFO, or grows past the limit (MemoryError, exit 4) instead of ending in a usage error."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([sys.executable, "-m", "nccldiag", *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit, cwd=tmp_path, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {}), "NO_COLOR": "1", "PYTHONPATH": REPO})


def test_a_spec_that_is_no_regular_file_or_too_large_is_refused_unread(tmp_path):
    """``/dev/zero`` (it grew until memory ran out), a FIFO nobody writes (it hung), a directory and a 2 MiB file
    of comments (written for the test), through ``spec show``, ``--spec``, ``$NCCLDIAG_SPEC`` and ``--causes``."""
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    big = tmp_path / "big.toml"
    big.write_text("# a comment line written for the test\n" * 60000)
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    for path, words in (("/dev/zero", "not a regular file (a device)"), (fifo, "not a regular file (a FIFO)"),
                        (tmp_path, "not a regular file (a directory)"), (big, "larger than 1 MiB")):
        for args, env in ((["spec", "show", str(path)], None),
                          (["check", "--bundle", str(bundle), "--spec", str(path)], None),
                          (["check", "--bundle", str(bundle)], {"NCCLDIAG_SPEC": str(path)}),
                          (["check", "--bundle", str(bundle), "--causes", str(path)], None)):
            r = bounded_cli(args, tmp_path, env)
            assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)
            assert f"{path}: {words}" in r.stderr or path == tmp_path and "is a directory" in r.stderr, r.stderr


def test_a_key_of_many_parts_or_values_nested_deep_are_refused_before_toml_reads_them(tmp_path):
    """100 KB of one dotted key took tomllib 3 GB; 500 nested arrays or 100,000 nested inline tables ended in a
    RecursionError (exit 4). Each file written for the test; a spec's real keys have at most 4 parts."""
    cases = {
        "dotted.toml": ("a" + ".a" * 50000 + " = 1\n", 1, "a key of 50001 parts"),
        "header.toml": ("# deep\n[" + "a." * 10000 + "a]\n", 2, "a key of 10001 parts"),
        "arrays.toml": ("[gpu]\nmodel = " + "[" * 500 + "]" * 500 + "\n", 2, "nested more than 8 deep"),
        "tables.toml": ("x = " + "{a = " * 100000 + "1" + "}" * 100000 + "\n", 1, "nested more than 8 deep"),
        "severity.toml": ('[severity]\n"x" = ' + "[" * 500 + "]" * 500 + "\n", 2, "nested more than 8 deep"),
    }
    for name, (text, at, words) in cases.items():
        (tmp_path / name).write_text(text)
        r = bounded_cli(["spec", "show", name], tmp_path)
        assert r.returncode == 2 and f"{name}:{at}: " in r.stderr and words in r.stderr, (name, r.stderr[-400:])
    # dots inside strings and comments, floats and dates are no key parts; quoted parts count as parts
    ok = ('# a.b.c.d.e.f.g.h.i.j.k\n[severity]\n"gpu.a.b.c.d.e.f.g.h" = "warn"\n[thresholds]\nbusbw_share = 0.5\n'
          "[gpu]\nmodel = 'x.y.z.w.v.u.t.s.r.q'\n")
    with pytest.raises(Exception, match="unknown check id"):  # read whole: only the check id is refused
        model.loads(ok, "ok.toml")
    with pytest.raises(Exception, match=r"q.toml:1: a key of 9 parts"):
        model.loads('a."b".c.d.e.f.g.h.i = 1\n', "q.toml")


@pytest.mark.parametrize("text,at", [  # each written for the test
    ("[bandwidth]\ninter_node_gbps = nan\n", 2),
    ("[bandwidth]\nintra_node_gbps = inf\n", 2),
    ("[bandwidth.setting]\nring = -inf\n", 2),
    ("[thresholds]\nbusbw_share = nan\n", 2),
    ("[nvlink]\n\nspeed_gbs = +nan\n", 3),
])
def test_nan_and_inf_are_no_spec_numbers(tmp_path, text, at):
    """A limit of nan compares false with everything, so it switched its check off without a word."""
    path = tmp_path / "site.toml"
    path.write_text(text)
    res = CliRunner().invoke(main, ["spec", "show", str(path)])
    assert res.exit_code == 2 and f"{path}:{at}: " in res.stderr and "is no number" in res.stderr, res.output


@root_only
def test_a_spec_another_user_controls_is_refused(tmp_path):
    """A spec says which failures count and which nodes drain: one another user could have written (theirs, in a
    directory open to everyone, writable by everyone, or reached through their link) is refused, never used."""
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    text = '[severity]\n"system.*" = "ignore"\n'
    world = tmp_path / "world"
    world.mkdir()
    os.chmod(world, 0o777)
    theirs = world / "site.toml"
    theirs.write_text(text)
    os.chown(theirs, NOBODY, NOBODY)
    mine_in_world = world / "mine.toml"
    mine_in_world.write_text(text)
    home = tmp_path / "home"
    home.mkdir()
    writable = home / "writable.toml"
    writable.write_text(text)
    os.chmod(writable, 0o666)
    mine = home / "site.toml"
    mine.write_text(text)
    link = home / "link.toml"
    os.symlink(mine, link)
    os.lchown(link, NOBODY, NOBODY)
    for path, words in ((theirs, "belongs to uid 65534"), (mine_in_world, f"{world} is open to other users' writes"),
                        (writable, "any user may write in it (mode 0666)"),
                        (link, f"{link} is a link of uid 65534")):
        for option in ("--spec", "--causes"):
            res = CliRunner().invoke(main, ["check", "--bundle", str(bundle), option, str(path)])
            assert res.exit_code == 2 and words in res.stderr and "refused" in res.stderr, (path, res.output)
    # this user's own file, through this user's link, in a directory an admin group shares: read
    group = tmp_path / "group"
    group.mkdir()
    os.chmod(group, 0o775)
    shared = group / "site.toml"
    shared.write_text(text)
    own_link = home / "own-link.toml"
    os.symlink(shared, own_link)
    for path in (mine, shared, own_link):
        res = CliRunner().invoke(main, ["spec", "show", str(path)])
        assert res.exit_code == 0, (path, res.output)


def test_report_reads_a_spec_or_bundle_its_run_json_names_as_it_reads_any(tmp_path):
    """``nccldiag report`` on a run directory someone else made: the spec path in its run.json is read as
    ``--spec`` is (a device, a FIFO, a file of dotted keys: a usage error naming run.json, at once), and the
    bundle path is never reached through another user's link."""
    bundle = write_bundle(tmp_path / "b", {"gpu001": B.healthy_h100()})
    run = tmp_path / "run"
    code, _ = check_json(bundle, "--run-dir", str(run))
    assert code == 0
    (run / "report.json").unlink()  # as a run stopped before its report: report rebuilds it
    meta = json.loads((run / "run.json").read_text())
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    dotted = tmp_path / "dotted.toml"
    dotted.write_text("a" + ".a" * 20000 + " = 1\n")
    for spec, words in (("/dev/zero", "not a regular file (a device)"), (fifo, "not a regular file (a FIFO)"),
                        (dotted, "a key of 20001 parts")):
        (run / "run.json").write_text(json.dumps(dict(meta, spec=str(spec))))
        r = bounded_cli(["report", str(run)], tmp_path)
        assert r.returncode == 2 and f"{run}/run.json names the site spec {spec}" in r.stderr, r.stderr[-500:]
        assert words in r.stderr and "Traceback" not in r.stderr
    if os.geteuid() == 0:
        link = tmp_path / "theirs"
        os.symlink(bundle, link)
        os.lchown(link, NOBODY, NOBODY)
        (run / "run.json").write_text(json.dumps(dict(meta, bundle=str(link))))
        r = bounded_cli(["report", str(run)], tmp_path)
        assert r.returncode == 2 and f"{link} is a link of uid 65534" in r.stderr, r.stderr[-500:]
    (run / "run.json").write_text(json.dumps(dict(meta, bundle=str(bundle))))
    r = bounded_cli(["report", str(run)], tmp_path)
    assert r.returncode == 3 and "gpu001" in r.stdout, r.stderr  # rebuilt: exit 3, a run that did not end
