"""Every byte count nccldiag writes for people is written by one function (model/sizes.py)."""
import ast
from pathlib import Path

from nccldiag.model.sizes import size_text

PKG = Path(__file__).resolve().parents[2] / "nccldiag"


def test_a_size_is_written_in_the_largest_unit_it_reaches():
    assert [size_text(n) for n in (0, 512, 1024, 1536, 64 << 10, 1 << 20, 3 << 29, 1 << 30)] == [
        "0 B", "512 B", "1 KiB", "1.5 KiB", "64 KiB", "1 MiB", "1.5 GiB", "1 GiB"]
    assert [size_text(v, short=True) for v in (256.0, 1048576.0, 1.5 * (1 << 30))] == ["256", "1M", "1.5G"]
    assert [size_text(v) for v in (None, -1, True, "1K")] == ["-"] * 4


def test_no_other_module_writes_a_size_unit_of_its_own():
    """A table of ("GiB", 1 << 30)-like units outside model/sizes.py is a second size formatter."""
    found = []
    for path in sorted(PKG.rglob("*.py")):
        if path == PKG / "model" / "sizes.py":
            continue
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.Tuple) and len(n.elts) == 2 and isinstance(n.elts[0], ast.Constant) \
                    and n.elts[0].value in ("GiB", "MiB", "KiB", "G", "M", "K"):
                found.append(f"{path.relative_to(PKG)}:{n.lineno}")
    assert found == []
