"""The CUDA error table (nccldiag/knowledge/cuda.toml) held against its source, the CUDA runtime's enumeration of
cudaError_t, both ways.

The source is the extract kept in tests/sources/cuda-13.0-cudaError.tsv (where it was read, in its header): every
enumerator of the runtime's enum is a row of the table, every row is an enumerator of the enum, and its value, its
CUresult enumerator and its text (what cudaGetErrorString returns) agree word for word. A line that quotes an error
is read by the row of that error, not by one whose text is a prefix of it ('unspecified launch failure' of
'unspecified launch failure in prior launch').
"""
import re
from pathlib import Path

from nccldiag import knowledge
from nccldiag.diagnosis import events as E

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "sources" / "cuda-13.0-cudaError.tsv"


def source_rows():
    """The extract's rows: enumerator -> (code, CUresult enumerator or '', text)."""
    out = {}
    for line in SOURCE.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        cells = line.split("\t")
        assert len(cells) == 4, line
        out[cells[1]] = (int(cells[0]), cells[2], cells[3])
    return out


def table():
    return {r["name"]: r for r in knowledge.rows(E.CUDA_TABLE)}


def test_the_source_extract_names_where_it_was_read():
    head = SOURCE.read_text(encoding="utf-8").split("\n\n")[0]
    assert "driver_types.h" in head and "cudaGetErrorString" in head and re.search(r"Retrieved \d{4}-\d\d-\d\d", head)
    top = knowledge.header(E.CUDA_TABLE)
    assert top["source_extract"] == "tests/sources/cuda-13.0-cudaError.tsv"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", top["checked"])


def test_every_enumerator_is_a_row_and_every_row_is_an_enumerator():
    src, rows = source_rows(), table()
    assert len(src) >= 130 and {"cudaSuccess", "cudaErrorUnknown", "cudaErrorContained"} <= set(src)
    assert sorted(set(src) - set(rows)) == [], "enumerators missing from cuda.toml"
    assert sorted(set(rows) - set(src)) == [], "rows of cuda.toml that are not enumerators of cudaError_t"
    assert len(knowledge.rows(E.CUDA_TABLE)) == len(rows), "an enumerator listed twice"


def test_code_driver_enumerator_and_text_agree_word_for_word():
    src, rows = source_rows(), table()
    wrong = [(name, (r["code"], r.get("driver", ""), r["text"]), src[name]) for name, r in rows.items()
             if (r["code"], r.get("driver", ""), r["text"]) != src[name]]
    assert wrong == []


def test_the_rows_are_in_the_order_of_their_codes():
    codes = [r["code"] for r in knowledge.rows(E.CUDA_TABLE)]
    assert codes == sorted(codes)


def test_a_quoted_error_is_read_by_its_own_row_not_by_a_prefix_of_its_text():
    for text, name in (("unspecified launch failure in prior launch", "cudaErrorPriorLaunchFailure"),
                       ("unspecified launch failure", "cudaErrorLaunchFailure"),
                       ("operation not permitted when stream is capturing", "cudaErrorStreamCaptureUnsupported"),
                       ("operation not permitted", "cudaErrorNotPermitted"),
                       ("operation not supported on global/shared address space", "cudaErrorInvalidAddressSpace"),
                       ("__global__ function call is not configured", "cudaErrorMissingConfiguration")):
        assert E.cuda_row(f"RuntimeError: CUDA error: {text}")["name"] == name, text
    # one text, two enumerators (a kernel image and a kernel source): the first, both of one category
    rows = table()
    assert E.cuda_row("CUDA error: device kernel image is invalid")["name"] == "cudaErrorInvalidKernelImage"
    assert rows["cudaErrorInvalidKernelImage"]["category"] == rows["cudaErrorInvalidSource"]["category"]


def test_what_reports_no_failure_names_no_cause():
    rows = table()
    for name in ("cudaSuccess", "cudaErrorNotReady", "cudaErrorPeerAccessAlreadyEnabled"):
        assert rows[name]["category"] == "other:informational", name


def _case_dirs(seen):
    """The case folders a row's ``seen`` names (tests/cases, ../shared/fixtures/cases); addresses are skipped."""
    for ref in (s.strip() for s in seen.split(",")):
        if not ref or ref.startswith("http"):
            continue
        for root in (ROOT / "tests" / "cases", ROOT.parent / "shared" / "fixtures" / "cases"):
            if (root / ref).is_dir():
                yield ref, root / ref
                break
        else:
            if (ROOT.parent / "shared" / "fixtures").is_dir() or (ROOT / "tests" / "cases" / ref).exists():
                raise AssertionError(f"seen names no case: {ref}")


def test_a_row_that_names_a_real_case_reads_a_line_of_it():
    checked = 0
    for r in knowledge.rows(E.CUDA_TABLE):
        for ref, folder in _case_dirs(r.get("seen", "")):
            lines = [line for f in sorted(folder.iterdir()) if f.is_file() and f.name != "case.json"
                     for line in f.read_text(encoding="utf-8", errors="replace").splitlines()]
            # a line, or a line with the one before it (nccl-tests puts the quoted text on a line of its own)
            texts = lines + [a + " " + b for a, b in zip(lines, lines[1:])]
            assert any((E.cuda_row(t) or {}).get("name") == r["name"] for t in texts), (r["name"], ref)
            checked += 1
    assert checked >= (10 if (ROOT.parent / "shared" / "fixtures").is_dir() else 5)  # in tests/cases: 7
