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
    modules = {p.stem for p in RULES_DIR.glob("*.py")} - {"__init__", "unexplained"}  # unexplained: the fallback
    assert {r["rule"] for r in table if "rule" in r} == modules
    for r in table:
        assert categories.known(r["category"]), r["where"]
        assert r.get("tier", 0) in (0, 1), r["where"]
        assert set(r.get("explained_by", [])) <= set(ids) - {r["id"]}, r["where"]
        if "rule" in r:
            assert rules.module(r["rule"]).ID == r["id"], r["where"]
            assert not hasattr(rules.module(r["rule"]), "CATEGORY"), "a rule's category is its row's"
        else:
            assert r.get("pattern"), r["where"]


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
    from nccldiag.nccl import log as nccllog

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
    from nccldiag.nccl import log as nccllog

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
