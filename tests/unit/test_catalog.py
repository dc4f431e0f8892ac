"""The cause catalog as data: its categories, its rows and who explains whom, held against the cases' vocabulary,
the docs and the report schemas, both ways."""
import json
import re
from pathlib import Path

import pytest

from nccldiag.diagnosis import categories
from tests import realcases

REPO = Path(__file__).resolve().parents[2]
CASES_README = realcases.CASES / "README.md"


def _table(text: str, heading: str) -> dict:
    """``{first cell: second cell}`` of the markdown table after ``heading`` (cells without backticks)."""
    rows = {}
    body = text.split(heading, 1)[1]
    started = False
    for line in body.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
            if cells[0] in ("category", "") or set(cells[0]) <= set("-: "):
                continue
            rows[cells[0]] = cells[1]
        elif started:
            break
    return rows


@pytest.mark.skipif(not CASES_README.is_file(), reason=f"{CASES_README} not found; set NCCLDIAG_FIXTURES")
def test_the_categories_are_those_of_the_cases_readme_both_ways():
    readme = _table(CASES_README.read_text(encoding="utf-8"), "Categories:")
    theirs = {c for c in readme if c not in ("healthy", "other:<slug>")}
    ours = set(categories.CATEGORIES) - {"unexplained"}  # the verdict on no known cause: no case has it
    assert theirs - ours == set(), "categories of the cases that categories.py lacks"
    assert ours - theirs == set(), "categories of categories.py that the cases' README lacks"
    assert "other:<slug>" in readme and categories.known("other:host-oom") and not categories.known("other:Bad")


def test_the_docs_and_the_report_schemas_name_every_category():
    doc = _table((REPO / "docs" / "diagnoses.md").read_text(encoding="utf-8"), "### Categories")
    assert doc == categories.CATEGORIES
    for name in ("check-1.json", "log-1.json", "probe-1.json"):
        schema = json.loads((REPO / "nccldiag" / "report" / "schemas" / name).read_text(encoding="utf-8"))
        enum = schema["$defs"]["diagnosis"]["properties"]["category"]["anyOf"][0]["enum"]
        assert enum == list(categories.CATEGORIES), name
    from nccldiag.spec import causes

    cause = json.loads((REPO / "nccldiag" / "spec" / "schema.json").read_text(encoding="utf-8"))["properties"]["cause"]
    assert cause["items"]["properties"]["category"]["anyOf"][0]["enum"] == list(categories.CATEGORIES)
    assert set(cause["items"]["properties"]) == set(causes.KEYS)
    assert cause["items"]["anyOf"] == [{"required": list(causes.REQUIRED)}, {"required": ["id", "category", "rule"]}]


def test_the_kinds_a_site_names_are_those_the_clues_have():
    from nccldiag.diagnosis import clues, signature
    from nccldiag.spec import causes

    assert causes.KINDS == signature.SITE_KINDS + signature.ROW_ONLY == clues.KINDS + ("line", "last")
    assert set(causes.KEYS) <= set(signature.KEYS + signature.ROW_KEYS + ("rule",))


def test_an_unknown_category_is_refused():
    with pytest.raises(ValueError, match="unknown diagnosis category 'nvlink'"):
        categories.check("nvlink")
    for c in ("nvlink_error", "pcie_bar_mmio", "io_hang", "unexplained"):
        assert categories.check(c) == c
    assert re.fullmatch(categories.OTHER, "other:slurm-step-refused")


# ---- the catalog's table: every cause, its rule or its signature, and who explains whom --------------------------

RULES_DIR = REPO / "nccldiag" / "diagnosis" / "rules"


def test_every_rule_module_has_its_row_and_every_row_its_cause():
    from nccldiag.diagnosis import rules

    table = rules.rows()
    ids = [r["id"] for r in table]
    assert len(set(ids)) == len(ids)
    # unexplained: the fallback; nccl_warn, tool_message: NCCL's WARNs and the launchers' messages none of the
    # catalog's causes explains, after them
    modules = {p.stem for p in RULES_DIR.glob("*.py")} - {"__init__", "unexplained", "nccl_warn", "tool_message"}
    assert {r["rule"] for r in table if "rule" in r} == modules
    for r in table:
        assert categories.known(r["category"]), r["where"]
        assert r.get("tier", 0) in (0, 1), r["where"]
        assert set(r.get("explained_by", [])) <= set(ids) - {r["id"]}, r["where"]
        if "rule" in r:
            assert rules.module(r["rule"]).ID == r["id"], r["where"]
            assert not hasattr(rules.module(r["rule"]), "CATEGORY"), "a rule's category is its row's"
        else:
            from nccldiag.diagnosis import signature

            assert (r.get("pattern") or r.get("events")) and r.get("title") and r.get("fix") and r.get("confirm"), \
                r["where"]
            assert set(r) <= set(signature.KEYS + signature.ROW_KEYS), (r["where"], set(r) - set(signature.KEYS))


def test_no_rule_module_imports_another():
    import ast

    names = {p.stem for p in RULES_DIR.glob("*.py")} - {"__init__"}
    for p in RULES_DIR.glob("*.py"):
        if p.stem == "__init__":
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                mod = node.module
                assert not (mod.startswith("nccldiag.diagnosis.rules") and
                            (mod.rsplit(".", 1)[-1] in names or any(a.name in names for a in node.names))), \
                    f"{p.name} imports {mod}: shared readers go to diagnosis/signs.py, precedence to causes.toml"


def test_the_diagnosis_package_stays_readable():
    import ast

    for p in (REPO / "nccldiag" / "diagnosis").rglob("*.py"):
        text = p.read_text(encoding="utf-8")
        assert text.count("\n") <= 1200, p
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno < 100, f"{p}:{node.lineno} {node.name}"


def _verdict(text: str):
    from nccldiag.diagnosis import Inputs, diagnose
    from nccldiag.nccl import checks as nccl_checks
    from nccldiag.nccl import parser as nccllog

    facts = nccllog.parse(text, "job.log")
    return diagnose(Inputs(logs=facts, log_findings=nccl_checks.judge(facts)))


# written for this test: NCCL's WARNs (transport/net_ib.cc) of a retry-exceeded completion and of port errors
_TIMEOUT = "nodea:108:593 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 32633, vendor err 129\n"
_PORT_ERR = "nodea:815:864 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error\n"


def test_who_explains_whom_is_applied_once_after_every_cause():
    from nccldiag.diagnosis import rules

    row = next(r for r in rules.rows() if r["id"] == "ib-timeout")
    assert row["explained_by"] == ["ib-port-down", "hca-firmware", "roce-gid"]
    assert [d.id for d in _verdict(_TIMEOUT) if d.severity == "fail"] == ["ib-timeout"]
    # the flapping port explains the timeouts: only the port is named
    assert [d.id for d in _verdict(_PORT_ERR + _PORT_ERR + _TIMEOUT)] == ["ib-port-down"]


# ---- signatures: causes that are rows ----------------------------------------------------------------------------


def test_a_signature_row_names_its_cause_and_leaves_a_neighbouring_line_alone():
    # written for this test, in torch.distributed's words: the store unreachable, and a store that answered
    bad = ("[rank1]: torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to "
           "connect to (10.0.0.1, 29500).\n")
    (d,) = [d for d in _verdict(bad) if d.severity == "fail"]
    assert (d.id, d.category, d.confidence) == ("rendezvous", "rendezvous_unreachable", "high")
    assert d.summary.startswith("the ranks could not reach the rendezvous store: ") and "timed out after 900s" in d.summary
    assert d.confirm.startswith("from each node: nc -zv $MASTER_ADDR")
    assert "rendezvous" not in [x.id for x in _verdict("[rank1]: TCPStore connected to 10.0.0.1:29500\n")]


def test_the_evaluator_reads_lines_beside_others_unless_excluded_and_fills_its_templates():
    from nccldiag.diagnosis import Inputs
    from nccldiag.diagnosis.signature import Signature
    from nccldiag.nccl import parser as nccllog

    row = {"id": "t", "category": "other:t", "where": "t.toml:1", "kinds": ["error", "app", "warn"],
           "pattern": ["disk (?P<disk>sd\\w+) stuck", {"pattern": "waiting", "beside": "hung task"}],
           "unless": "harmless", "summary": "{title}: {disk} stuck{on}", "defaults": {"disk": "a disk"},
           "why": "seen at {where}", "fix": "f", "figures": {"disk": "disk"}}
    sig = Signature(row)

    def judge(text):
        return sig.diagnose(Inputs(logs=nccllog.parse(text, "job.log")))

    # written for this test
    (d,) = judge("h:1:2 [0] x.cc:1 NCCL WARN disk sdb stuck: error\n")
    assert (d.summary, d.confidence_why, d.figures) == ("t: sdb stuck on h: disk sdb stuck: error", "seen at t.toml:1",
                                                       {"disk": "sdb"})
    assert judge("h:1:2 [0] x.cc:1 NCCL WARN disk sdb stuck: harmless error\n") == []
    assert judge("h:1:2 [0] x.cc:1 NCCL WARN waiting for I/O, error\n") == []  # not beside a hung task
    (d,) = judge("h:1:2 [0] x.cc:1 NCCL WARN waiting for I/O, error\nERROR: hung task detected\n")
    assert d.summary.startswith("t: a disk stuck") and d.figures == {"disk": ""}


# ---- causes a site adds ------------------------------------------------------------------------------------------

SITE = '''schema = "nccldiag.spec/1"

[[cause]]
id = "site.gpfs_waiters"
category = "io_hang"
pattern = 'mmfs.*waiting (for|on) .* seconds'
fix = "Drain the node and page the storage team"
'''
# written for this test: a job's output with NCCL's init lines and a GPFS daemon's waiter line in syslog form
JOB = ("node7:4321:4321 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
       "node7:4321:4400 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x1 - Init COMPLETE\n"
       "step 100 loss 2.31\n")
WAITER = "Nov 28 12:00:01 node7 mmfs[2211]: [W] thread 7 waiting for NSD I/O completion for 612 seconds\n"


def _log(tmp_path, text, *extra):
    import os
    import subprocess
    import sys

    (tmp_path / "site.toml").write_text(SITE)
    (tmp_path / "job.log").write_text(text)
    r = subprocess.run([sys.executable, "-m", "nccldiag", "log", "--spec", "site.toml", "job.log", *extra,
                        "--json", "-"], capture_output=True, text=True, cwd=str(tmp_path), timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    return r, json.loads(r.stdout) if r.stdout.startswith("{") else None


def test_a_site_cause_in_the_spec_names_its_line_in_the_log_end_to_end(tmp_path):
    r, doc = _log(tmp_path, JOB + WAITER + "step 101 loss 2.30\n")
    assert r.returncode == 1, r.stderr
    (d,) = [d for d in doc["diagnoses"] if d["id"] == "site.gpfs_waiters"]
    assert (d["category"], d["severity"], d["defined_at"]) == ("io_hang", "fail", "site.toml:3")
    assert d["fix"] == "Drain the node and page the storage team" and d["nodes"] == ["node7"]
    assert d["evidence"][0]["ref"] == "job.log:4" and "waiting for NSD I/O" in d["evidence"][0]["text"]
    assert "site.toml:3" in d["confidence"]["why"]
    r, doc = _log(tmp_path, JOB + "step 101 loss 2.30\n")
    assert r.returncode == 0 and doc["diagnoses"] == [], r.stdout[-800:]


def test_a_site_line_is_found_in_every_file_and_on_standard_input(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from nccldiag.cli.log import log as log_command

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NCCLDIAG_SPEC", raising=False)
    (tmp_path / "site.toml").write_text(SITE)
    (tmp_path / "a.log").write_text(JOB)
    (tmp_path / "b.log").write_text(JOB + "x" * 70000 + "\n" + WAITER)  # after a line longer than the reader keeps
    for args, given, ref in ((["a.log", "b.log", "--workers", "2"], None, "b.log:5"),
                             (["a.log", "-"], JOB + WAITER, "<stdin>:4")):
        r = CliRunner().invoke(log_command, ["--spec", "site.toml"] + args + ["--json", "-"], input=given)
        (d,) = [d for d in json.loads(r.output)["diagnoses"] if d["id"] == "site.gpfs_waiters"]
        assert d["evidence"][0]["ref"] == ref, args


@pytest.mark.parametrize("row,line,message", [
    ('id = "site.x"\ncategory = "io_hang"\npattern = "mmfs("\nfix = "f"\n', 5, "is not a regular expression"),
    ('id = "site.x"\ncategory = "io_hang"\npattern = "(a+)+b"\nfix = "f"\n', 5, "repeats a group that repeats"),
    ('id = "site.x"\ncategory = "io_hang"\npattern = "' + "a" * 1001 + '"\nfix = "f"\n', 5, "at most 1000"),
    ('id = "site.x"\ncategory = "io_hangs"\npattern = "mmfs"\nfix = "f"\n', 4, "unknown category 'io_hangs' (did you mean 'io_hang'?)"),
    ('id = "site.x"\ncategory = "io_hang"\nfix = "f"\n', 2, "a [[cause]] row needs 'pattern'"),
    ('id = "gpu-lost"\ncategory = "io_hang"\npattern = "mmfs"\nfix = "f"\n', 3, "id 'gpu-lost' is nccldiag's own (causes.toml:"),
    ('id = "site.x"\ncategory = "io_hang"\npattern = "mmfs"\nfix = "f"\nkinds = ["lines"]\n', 7, "unknown kind 'lines'"),
    ('id = "site.x"\ncategory = "io_hang"\npattern = "mmfs"\nfix = "f"\nexplained_by = ["gpu_lost"]\n', 7,
     "'gpu_lost', which is no cause of nccldiag's catalog nor of this file (did you mean 'gpu-lost'?)"),
])
def test_a_bad_site_cause_is_an_error_naming_its_line(tmp_path, monkeypatch, row, line, message):
    from click.testing import CliRunner

    from nccldiag.cli.log import log as log_command

    monkeypatch.chdir(tmp_path)
    (tmp_path / "site.toml").write_text('schema = "nccldiag.spec/1"\n[[cause]]\n' + row)
    (tmp_path / "job.log").write_text(JOB)
    r = CliRunner().invoke(log_command, ["--spec", "site.toml", "job.log"])
    assert r.exit_code == 2 and f"nccldiag: error: site.toml:{line}: " in r.output and message in r.output, r.output
    (tmp_path / "causes.toml").write_text('\n[[cause]]\n' + row)
    r = CliRunner().invoke(log_command, ["--causes", "causes.toml", "job.log"])
    assert r.exit_code == 2 and f"causes.toml:{line}: " in r.output, r.output


def test_a_causes_file_holds_causes_only_and_adds_to_the_spec(tmp_path):
    from nccldiag.model.errors import UsageError
    from nccldiag.spec import model

    (tmp_path / "site.toml").write_text(SITE)
    (tmp_path / "more.toml").write_text(SITE.replace("site.gpfs_waiters", "site.lustre").replace("schema = ", "# "))
    spec = model.load_given(str(tmp_path / "site.toml"), str(tmp_path / "more.toml"))
    assert [(r["id"], r["where"].rsplit("/", 1)[1]) for r in spec.causes] == [("site.gpfs_waiters", "site.toml:3"),
                                                                             ("site.lustre", "more.toml:3")]
    only = model.load_given(None, str(tmp_path / "more.toml"))
    assert [r["id"] for r in only.causes] == ["site.lustre"] and not only.expects
    with pytest.raises(UsageError, match=r"site\.toml:1: a causes file holds \[\[cause\]\] rows only, not 'schema'"):
        model.load_given(None, str(tmp_path / "site.toml"))
    (tmp_path / "dup.toml").write_text(SITE.replace("schema = ", "# "))
    with pytest.raises(UsageError, match=r"dup\.toml:3: id 'site\.gpfs_waiters' is given twice \(first at .*site\.toml:3\)"):
        model.load_given(str(tmp_path / "site.toml"), str(tmp_path / "dup.toml"))


def test_a_site_cause_reads_check_findings_and_a_cause_it_names_explains_it():
    from nccldiag.check.engine import CheckReport, NodeReport
    from nccldiag.diagnosis import Inputs, diagnose
    from nccldiag.model.findings import fail
    from nccldiag.spec import model

    row = ('[[cause]]\nid = "site.riser"\ncategory = "pcie_link_aer"\npattern = "riser [A-H]\\\\d"\n'
           'fix = "Reseat the riser"\nseverity = "warn"\n')
    # written for this test: a check finding whose evidence names the riser of the slot
    rep = CheckReport([NodeReport("n1", [fail("pcie_errors", "pcie_errors.aer", "uncorrectable AER errors",
                                              host="n1", evidence=["slot 3 on riser B2"])])], ["pcie_errors"])
    spec = model.loads(row, "site.toml")
    diags = diagnose(Inputs(check=rep, spec=spec))
    (d,) = [d for d in diags if d.id == "site.riser"]
    assert (d.severity, d.nodes, d.defined_at, d.category) == ("warn", ["n1"], "site.toml:1", "pcie_link_aer")
    assert d.to_dict()["defined_at"] == "site.toml:1" and "defined_at" not in _verdict(_TIMEOUT)[0].to_dict()
    assert [x.id for x in diags] == ["pcie-link", "site.riser"]  # the catalog's first, the site's after
    spec = model.loads(row + 'explained_by = ["pcie-link"]\n', "site.toml")
    assert [x.id for x in diagnose(Inputs(check=rep, spec=spec))] == ["pcie-link"]


def test_the_spec_docs_name_every_key_of_a_site_cause():
    from nccldiag.spec import causes

    docs = (REPO / "docs" / "spec.md").read_text(encoding="utf-8")
    section = docs.split("## Causes a site adds: `[[cause]]`", 1)[1].split("\n## ", 1)[0]
    for k in causes.KEYS + causes.KINDS:
        assert f"`{k}`" in section, k


# ---- registries that take a dotted module path -------------------------------------------------------------------


def test_a_site_rule_module_is_named_by_its_dotted_path():
    from nccldiag.diagnosis import Inputs, diagnose, rules
    from nccldiag.model.errors import UsageError
    from nccldiag.nccl import parser as nccllog
    from nccldiag.spec import model
    from tests import site_plugins

    assert rules.module("tests.site_plugins") is site_plugins and rules.module("shm").ID == "shm-too-small"
    spec = model.loads('[[cause]]\nid = "site.plugin"\ncategory = "other:site-plugin"\nrule = "tests.site_plugins"\n',
                       "site.toml")
    # written for this test
    facts = nccllog.parse("h:1:2 [0] x.cc:1 NCCL WARN SITE-PLUGIN-MARK seen, error\n", "job.log")
    (d,) = [d for d in diagnose(Inputs(logs=facts, spec=spec)) if d.id == "site.plugin"]
    assert (d.category, d.defined_at, d.title) == ("other:site-plugin", "site.toml:1", "The site's own rule")
    for row, message in (('rule = "tests.no_such_module"', "cause.rule: cannot import tests.no_such_module"),
                         ('rule = "site_plugins"', "should be the dotted path of a module"),
                         ('rule = "tests.site_plugins"\nfix = "x"', "takes id, category, rule, explained_by only")):
        with pytest.raises(UsageError, match=re.escape(message)):
            model.loads(f'[[cause]]\nid = "site.plugin"\ncategory = "io_hang"\n{row}\n', "site.toml")


def test_a_site_launcher_is_named_by_its_dotted_path():
    import click

    from nccldiag.cli.options import LauncherChoice
    from nccldiag.probe import launchers
    from tests import site_plugins

    assert launchers.get("tests.site_plugins") is site_plugins.LAUNCHER
    with pytest.raises(KeyError):
        launchers.get("flux")
    choice = LauncherChoice(launchers.probe_choices())
    assert choice.convert("tests.site_plugins", None, None) == "tests.site_plugins"
    assert choice.convert("srun", None, None) == "srun"
    with pytest.raises(click.BadParameter, match="tests.no_such_module: no launcher there"):
        choice.convert("tests.no_such_module", None, None)
    with pytest.raises(click.BadParameter):
        choice.convert("flux", None, None)


def test_a_site_report_format_is_named_by_its_dotted_path(tmp_path, monkeypatch):
    from nccldiag.report import outputs

    site = outputs.Format("site", "tests.site_plugins", "Write the site's format.")
    monkeypatch.setattr(outputs, "FORMATS", outputs.FORMATS + (site,))
    out = tmp_path / "report.site"
    outputs.Outputs({"site": str(out)}).write({"schema": "nccldiag.log/1", "diagnoses": []})
    assert out.read_text() == "site format of a nccldiag.log/1 report with 0 diagnoses\n"


def test_the_docs_cause_table_names_each_cause_with_its_rows_category():
    from nccldiag.diagnosis import rules

    doc = (REPO / "docs" / "diagnoses.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `([a-z0-9-]+)` \| `([a-z_:0-9-]+)` \|", doc, re.M))
    for r in rules.rows():
        assert f"`{r['id']}`" in doc, r["id"]
        assert table.get(r["id"], r["category"]) == r["category"], r["id"]


def test_the_docs_list_of_signature_causes_is_the_catalogs():
    from nccldiag.diagnosis import rules

    doc = " ".join((REPO / "docs" / "diagnoses.md").read_text(encoding="utf-8").split())
    found = re.search(r"The causes that are signatures \((\d+)\): (.*?)\. What", doc)
    assert found, "docs/diagnoses.md lists the causes that are signatures"
    listed = re.findall(r"`([a-z0-9-]+)`", found.group(2))
    signatures = sorted(r["id"] for r in rules.rows() if not r.get("rule"))
    assert listed == signatures
    assert int(found.group(1)) == len(signatures)
