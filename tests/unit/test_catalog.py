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
