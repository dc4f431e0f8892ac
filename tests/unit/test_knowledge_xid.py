"""The Xid table (nccldiag/knowledge/xid.toml) held against its source, NVIDIA's Xid catalog, both ways.

The source is the extract kept in tests/sources/nvidia-xid-catalog.tsv (its address and retrieval date in its
header): every code of the catalog is a row of the table, every row is a code of the catalog, and the
catalog's own columns (mnemonic, description, both resolution buckets) agree word for word. nccldiag's own
columns (class, category, action) are held to their vocabularies, and docs/xid.md lists the table as it is.
"""
import re
from pathlib import Path

from nccldiag import knowledge
from nccldiag.areas import xid
from nccldiag.diagnosis.categories import CATEGORIES, OTHER

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "sources" / "nvidia-xid-catalog.tsv"
COLUMNS = ("mnemonic", "description", "immediate", "investigatory")
# categories being added to diagnosis/categories.py beside this table (docs: ../shared/fixtures/cases/README.md)


def source_rows():
    """The extract's rows: code -> the catalog's columns (a line break in a cell is written \\n)."""
    out = {}
    for line in SOURCE.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        cells = line.split("\t")
        assert len(cells) == 5, line
        out[int(cells[0])] = dict(zip(COLUMNS, (c.replace("\\n", "\n") for c in cells[1:])))
    return out


def table():
    return {r["code"]: r for r in knowledge.rows("xid.toml")}


def test_the_source_extract_names_its_address_and_date():
    head = SOURCE.read_text(encoding="utf-8").split("\n\n")[0]
    assert "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html" in head
    assert re.search(r"Retrieved \d{4}-\d\d-\d\d", head)
    top = knowledge.header("xid.toml")
    assert top["source_extract"] == "tests/sources/nvidia-xid-catalog.tsv"
    assert "analyzing-xid-catalog.html" in top["source"] and re.fullmatch(r"\d{4}-\d\d-\d\d", top["checked"])


def test_every_code_of_the_catalog_is_a_row_and_every_row_is_in_the_catalog():
    src, rows = source_rows(), table()
    assert len(src) >= 172 and set(range(1, 173)) <= set(src)  # the 2025 edition: 1 to 172, none missing
    assert sorted(set(src) - set(rows)) == [], "codes of the catalog missing from xid.toml"
    assert sorted(set(rows) - set(src)) == [], "rows of xid.toml that are not in the catalog"
    assert len(knowledge.rows("xid.toml")) == len(rows), "a code listed twice"


def test_the_catalog_columns_agree_word_for_word():
    src, rows = source_rows(), table()
    wrong = [(code, col, rows[code][col], src[code][col]) for code in src for col in COLUMNS
             if rows[code][col] != src[code][col]]
    assert wrong == []


def test_the_families_the_catalog_names_are_all_there():
    rows = table()
    # GSP (119-122), C2C (121), NVLink 5 (136-157 and its decode family 144-150)
    assert {119, 120, 121, 122} <= set(rows) and set(range(136, 158)) <= set(rows)
    assert rows[119]["mnemonic"] == "GSP_RPC_TIMEOUT" and rows[121]["mnemonic"] == "C2C_ERROR"
    assert all(rows[c]["category"] == "nvlink_error" for c in range(144, 151))


def test_nccldiag_columns_use_their_vocabularies():
    buckets = {b["name"] for b in knowledge.rows("xid.toml", "bucket")}
    for code, r in table().items():
        assert r["class"] in xid.CLASSES, code
        cat = r["category"]
        assert cat in CATEGORIES or OTHER.match(cat), (code, cat)
        # an action in words: the row's own, or its immediate bucket's
        assert r.get("action") or r["immediate"] in buckets, code
        if r["description"] == "Unused" and code != 61:
            assert r["class"] == "unused" and not r.get("meaning"), code
        assert r["where"].startswith("xid.toml:")


def test_departures_from_the_catalog_say_why():
    # where nccldiag's class is not the one the immediate bucket implies, the row says why
    implied = {"RESTART_APP": {"job"}, "RESET_GPU": {"reset"}, "RESTART_BM": {"reboot"}, "RESTART_VM": {"reboot"},
               "CHECK_MECHANICALS": {"hardware"}, "UPDATE_SWFW": {"driver"}}
    for code, r in table().items():
        want = implied.get(r["immediate"])
        if want and r["class"] not in want and r["category"] != "gpu_ecc_rowremap":
            assert r.get("note"), code
    assert table()[94]["class"] == "reset" and "pending row remap" in table()[94]["note"]


def test_the_area_reads_the_table():
    rows = table()
    assert set(xid.CODES) == set(rows)
    assert xid.CODES[79] == ("reboot", rows[79]["meaning"], rows[79]["action"])
    assert xid.CODES[46][2] == "reset the GPU"  # RESET_GPU, in words from the bucket table
    assert "unused on A100 to GB200" in xid.label(12)
    assert xid.ROWS[149]["category"] == "nvlink_error" and xid.ROWS[149]["where"].startswith("xid.toml:")


def test_docs_list_every_row_of_the_table_as_it_is():
    docs = (ROOT / "docs" / "xid.md").read_text(encoding="utf-8")
    listed = {int(m.group(1)): m.group(0) for m in re.finditer(r"^\| (\d+) \|.*$", docs, re.M)}
    assert set(listed) == set(table())
    for code, line in listed.items():
        kind, meaning, action = xid.CODES[code]
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == meaning and cells[2] == xid.CLASSES[kind] and cells[5] == action, code
        assert cells[4] == f"`{table()[code]['category']}`", code
