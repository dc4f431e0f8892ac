"""The package's regular expressions compiled once per machine (nccldiag/rx.py): an expression made from a kept
program is the one ``re.compile`` makes, every pattern the package compiles is kept, and a file that is missing,
damaged, someone else's or open to others, or a program the engine refuses, is compiled again, never a failure."""
import importlib
import marshal
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import nccldiag
from nccldiag import rx

REPO = Path(__file__).resolve().parents[2]

# patterns written for this test: named and numbered groups, flags inline and given, bytes, look-behind,
# alternations with a common prefix (the compiler's own optimisations), a repeat of a group
PATTERNS = [
    (r"(?P<host>[\w.-]+):(?P<pid>\d+):(\d+) \[(?P<dev>\d+)\] NCCL (WARN|INFO)", 0),
    (r"(?i)xid\s*\(?(?:pci:)?([0-9a-f:.]+)\)?:\s*(\d+)", 0),
    (r"^\s*(?:error|fail(?:ed|ure)?|fatal)\b", re.I | re.M),
    (rb"NCCL (?:WARN|INFO)\b", 0),
    (r"(?<![\w.])(?:mlx5_\d+|ib\d+)(?=:)", 0),
    (r"(?:ab|ac|ad)+x{2,5}?", re.S),
]
TEXTS = ["node7:1234:1240 [3] NCCL WARN NET/IB : Got completion", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1",
         "ok\n  Failed to open\nERROR x", "  mlx5_0: port down", "abacadxxx", "nothing here"]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """rx with no program read yet, its cache in ``tmp_path``; rx's state as it was afterwards."""
    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", str(tmp_path / "c"))
    for name, value in (("_kept", None), ("_new", {}), ("_used", set()), ("_path", None), ("_checked", False)):
        monkeypatch.setattr(rx, name, value)
    return tmp_path / "c" / "regex"


def same(a: "re.Pattern", b: "re.Pattern", texts) -> None:
    assert (a.pattern, a.flags, a.groups, dict(a.groupindex)) == (b.pattern, b.flags, b.groups, dict(b.groupindex))
    for t in texts:
        t = t.encode() if isinstance(a.pattern, bytes) else t
        assert [m.span() for m in a.finditer(t)] == [m.span() for m in b.finditer(t)]
        assert [m.groups() for m in a.finditer(t)] == [m.groups() for m in b.finditer(t)]
        assert a.sub("#" if isinstance(t, str) else b"#", t) == b.sub("#" if isinstance(t, str) else b"#", t)


def _from_file(cache: Path, monkeypatch) -> list:
    """The patterns compiled again with ``re.compile`` made to fail: each must come from the kept file."""
    for name, value in (("_kept", None), ("_new", {}), ("_used", set())):
        monkeypatch.setattr(rx, name, value)

    def no_compile(*a, **k):
        raise AssertionError("compiled again")

    compile_ = re.compile
    monkeypatch.setattr(rx.re, "compile", no_compile)
    try:
        return [rx.compile(p, f) for p, f in PATTERNS]
    finally:
        monkeypatch.setattr(rx.re, "compile", compile_)


def test_compiled_once_then_made_from_the_kept_program(fresh, monkeypatch):
    first = [rx.compile(p, f) for p, f in PATTERNS]
    for got, (p, f) in zip(first, PATTERNS):
        same(got, re.compile(p, f), TEXTS)
    rx._save()
    files = list(fresh.iterdir())
    assert len(files) == 1 and files[0].suffix == ".marshal"
    assert files[0].stat().st_mode & 0o077 == 0 and fresh.stat().st_mode & 0o077 == 0
    again = _from_file(fresh, monkeypatch)
    for got, (p, f) in zip(again, PATTERNS):
        same(got, re.compile(p, f), TEXTS)


def test_a_second_process_reads_what_the_first_kept(tmp_path):
    env = dict(os.environ, NCCLDIAG_CACHE_DIR=str(tmp_path / "c"), PYTHONPATH=str(REPO))
    code = ("import re, sys\nfrom nccldiag import rx\n"
            "if sys.argv[1] == 'read':\n"
            "    re.compile = None  # a program not kept would fail here\n"
            "print(rx.compile(r'a(?P<x>b)+c', re.I).search('xABBC').group('x'))\n")
    for step in ("write", "read"):
        out = subprocess.run([sys.executable, "-c", code, step], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "B"


@pytest.mark.parametrize("damage", ["garbage", "a list", "wrong entry", "refused program", "open to others"])
def test_a_bad_file_or_entry_is_compiled_again(fresh, monkeypatch, damage):
    [rx.compile(p, f) for p, f in PATTERNS]
    rx._save()
    path = next(fresh.iterdir())
    kept = marshal.loads(path.read_bytes())
    if damage == "garbage":
        path.write_bytes(b"\x00\xffnot marshal")
    elif damage == "a list":
        path.write_bytes(marshal.dumps([1, 2, 3]))
    elif damage == "wrong entry":
        path.write_bytes(marshal.dumps({k: ("x",) for k in kept}))
    elif damage == "refused program":  # the engine checks what it is given: a program cut short is refused
        path.write_bytes(marshal.dumps({k: (v[0], v[1][: len(v[1]) // 2]) + tuple(v[2:]) for k, v in kept.items()}))
    else:
        os.chmod(path, 0o666)
    for name, value in (("_kept", None), ("_new", {}), ("_used", set())):
        monkeypatch.setattr(rx, name, value)
    for p, f in PATTERNS:
        same(rx.compile(p, f), re.compile(p, f), TEXTS)


def test_a_program_that_makes_another_expression_is_not_kept(fresh, monkeypatch):
    """Where the program made here does not give what re.compile gives (another Python's compiler), the
    expression is re's and nothing is kept."""
    real = rx._entry
    monkeypatch.setattr(rx, "_entry", lambda p, f: (lambda e: (e[0] | re.IGNORECASE,) + e[1:])(real(p, f)))
    p, f = PATTERNS[0]
    same(rx.compile(p, f), re.compile(p, f), TEXTS)
    assert not rx._new and not rx._checked


def test_nothing_kept_where_the_cache_is_off(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", "off")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name, value in (("_kept", None), ("_new", {}), ("_used", set()), ("_path", None)):
        monkeypatch.setattr(rx, name, value)
    for p, f in PATTERNS:
        same(rx.compile(p, f), re.compile(p, f), TEXTS)
    assert not rx._new and rx._path is None
    assert list(tmp_path.iterdir()) == []


def test_a_full_file_keeps_this_process_patterns_only(fresh, monkeypatch):
    monkeypatch.setattr(rx, "MAX_KEPT", 3)
    [rx.compile(p, f) for p, f in PATTERNS[:2]]
    rx._save()
    for name, value in (("_kept", None), ("_new", {}), ("_used", set())):
        monkeypatch.setattr(rx, name, value)
    [rx.compile(p, f) for p, f in PATTERNS[2:4]]
    rx._save()  # 4 patterns would be kept: only this process's 2 are
    assert set(marshal.loads(next(fresh.iterdir()).read_bytes())) == {(p, int(f)) for p, f in PATTERNS[2:4]}


def _package_patterns() -> list:
    """Every compiled expression that a module of the package holds at its top (node programs aside)."""
    found = {}
    for m in pkgutil.walk_packages(nccldiag.__path__, "nccldiag."):
        if m.name.startswith("nccldiag.node") or m.name == "nccldiag.__main__":
            continue
        mod = importlib.import_module(m.name)
        for value in vars(mod).values():
            if isinstance(value, re.Pattern):
                found[(value.pattern, value.flags)] = value
    return list(found.values())


def test_every_pattern_of_the_package_made_from_its_program_is_re_compiles(fresh, monkeypatch):
    patterns = _package_patterns()
    assert len(patterns) > 300
    texts = TEXTS + ["[  12.345] NVRM: GPU at PCI:0000:3b:00.0: GPU-1234", "torch.distributed.DistBackendError: x"]
    for p in patterns:
        flags = p.flags & ~(re.UNICODE if isinstance(p.pattern, str) else 0)
        got = rx.compile(p.pattern, flags)
        entry = rx._new.get((p.pattern, flags)) or rx._kept.get((p.pattern, flags))
        assert entry is not None, p.pattern  # kept
        made = rx._sre.compile(p.pattern, *entry)
        same(made, re.compile(p.pattern, flags), texts)
        same(got, made, texts[:2])
