"""Hyperscan databases kept between runs (nccldiag/hscache.py): loaded where compiled before, compiled again where
the kept file is missing, damaged, someone else's or in a directory others may write in, and never a failure."""
import os

import pytest

from nccldiag import hscache

hyperscan = pytest.importorskip("hyperscan")

EXPRS = [b"NCCL WARN", b"size\\s+(?:count|N)", b"Xid"]
IDS = [0, 1, 2]
FLAGS = [0, 0, 0]
TEXT = b"a NCCL WARN here\nsize   count\nno word\nXid 79\n"  # written for this test


def ends(db) -> list:
    out = []
    db.scan(TEXT, match_event_handler=lambda i, _f, to, _fl, _c: out.append((i, to)))
    return out


def compiled() -> list:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=EXPRS, ids=IDS, elements=len(EXPRS), flags=FLAGS)
    return ends(db)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", str(tmp_path / "c"))
    return tmp_path / "c" / "hyperscan"


def kept(cache) -> list:
    return sorted(p for p in cache.iterdir()) if cache.exists() else []


def test_compiled_once_then_loaded(cache, monkeypatch):
    first = hscache.database(hyperscan, EXPRS, IDS, FLAGS)
    assert ends(first) == compiled()
    files = kept(cache)
    assert len(files) == 1 and files[0].suffix == ".db"
    assert files[0].stat().st_mode & 0o077 == 0 and cache.stat().st_mode & 0o077 == 0

    def no_compile(*a, **k):
        raise AssertionError("compiled again")

    monkeypatch.setattr(hyperscan, "Database", no_compile)
    again = hscache.database(hyperscan, EXPRS, IDS, FLAGS)
    monkeypatch.undo()
    assert ends(again) == compiled()


def test_other_expressions_other_file(cache):
    hscache.database(hyperscan, EXPRS, IDS, FLAGS)
    hscache.database(hyperscan, EXPRS[:2], IDS[:2], FLAGS[:2])
    hscache.database(hyperscan, EXPRS, IDS, [0, 0, hyperscan.HS_FLAG_CASELESS])
    assert len(kept(cache)) == 3


def test_damaged_file_compiled_again_and_replaced(cache):
    hscache.database(hyperscan, EXPRS, IDS, FLAGS)
    (path,) = kept(cache)
    path.write_bytes(path.read_bytes()[:100])
    db = hscache.database(hyperscan, EXPRS, IDS, FLAGS)
    assert ends(db) == compiled()
    assert path.stat().st_size > 100  # written whole again
    path.write_bytes(b"")
    assert ends(hscache.database(hyperscan, EXPRS, IDS, FLAGS)) == compiled()


def test_directory_open_to_others_is_not_read(cache, monkeypatch):
    hscache.database(hyperscan, EXPRS, IDS, FLAGS)
    os.chmod(cache, 0o777)
    loaded = []
    real = hyperscan.loadb
    monkeypatch.setattr(hyperscan, "loadb", lambda *a: loaded.append(1) or real(*a))
    assert ends(hscache.database(hyperscan, EXPRS, IDS, FLAGS)) == compiled()
    assert loaded == []
    os.chmod(cache, 0o700)
    (path,) = kept(cache)
    os.chmod(path, 0o666)
    assert ends(hscache.database(hyperscan, EXPRS, IDS, FLAGS)) == compiled()
    assert loaded == []
    os.chmod(path, 0o600)
    hscache.database(hyperscan, EXPRS, IDS, FLAGS)
    assert loaded == [1]


def test_link_is_not_followed(cache, tmp_path):
    hscache.database(hyperscan, EXPRS, IDS, FLAGS)
    (path,) = kept(cache)
    target = tmp_path / "elsewhere.db"
    target.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(target)
    assert ends(hscache.database(hyperscan, EXPRS, IDS, FLAGS)) == compiled()
    assert path.is_symlink() is False  # replaced by a file of its own


def test_unwritable_place_still_compiles(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")  # written for this test
    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", str(blocker))
    assert ends(hscache.database(hyperscan, EXPRS, IDS, FLAGS)) == compiled()
    assert blocker.read_text() == "not a directory"


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert hscache.directory() is None
    assert ends(hscache.database(hyperscan, EXPRS, IDS, FLAGS)) == compiled()
    assert list(tmp_path.iterdir()) == []


def test_default_places(monkeypatch, tmp_path):
    monkeypatch.delenv("NCCLDIAG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert hscache.directory() == str(tmp_path / "x" / "nccldiag" / "hyperscan")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert hscache.directory() == str(tmp_path / "h" / ".cache" / "nccldiag" / "hyperscan")


def test_compile_error_raises(cache):
    with pytest.raises(hyperscan.error):
        hscache.database(hyperscan, [b"(unclosed"], [0], [0])
    assert kept(cache) == []
