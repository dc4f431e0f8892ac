"""The NCCL log reader's modules (docs/architecture.md, the nccl/ row): each does one job, they import one way
(facts <- grammar <- parser <- replay), and none of nccl/'s files or functions grows past a size one can read."""
import ast
from pathlib import Path

NCCL = Path(__file__).resolve().parents[2] / "nccldiag" / "nccl"
# Each module, and the reader modules it may import (top-level and function-level imports alike).
ORDER = {"facts": set(), "grammar": {"facts"}, "parser": {"facts", "grammar"}, "replay": {"facts", "grammar", "parser"}}


def _imports(name: str) -> set:
    out = set()
    for n in ast.walk(ast.parse((NCCL / f"{name}.py").read_text())):
        if isinstance(n, ast.ImportFrom) and n.module:
            mods = [n.module] + [f"{n.module}.{a.name}" for a in n.names]
        elif isinstance(n, ast.Import):
            mods = [a.name for a in n.names]
        else:
            continue
        out |= {m.rsplit(".", 1)[1] for m in mods if m.startswith("nccldiag.nccl.") and m.rsplit(".", 1)[1] in ORDER}
    return out


def test_the_reader_modules_import_one_way():
    for name, allowed in ORDER.items():
        assert _imports(name) <= allowed, (name, _imports(name) - allowed)


def test_no_file_nor_function_of_nccl_is_too_long_to_read():
    for path in sorted(NCCL.glob("*.py")):
        text = path.read_text()
        assert text.count("\n") <= 1200, path.name
        for n in ast.walk(ast.parse(text)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert n.end_lineno - n.lineno + 1 <= 100, (path.name, n.name)
