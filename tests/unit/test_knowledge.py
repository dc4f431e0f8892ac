"""The knowledge tables' reader: rows with the line that defines them, errors naming file:line."""
import pytest

from nccldiag import knowledge
from nccldiag.model.errors import UsageError


def test_rows_carry_the_line_of_their_header_and_skip_headers_inside_strings():
    text = ('source = "https://example.org"\n[[row]]\nid = 1\n\n[[row]]  # second\nid = 2\n'
            'note = """\n[[row]]\n"""\n[[other]]\nid = 3\n')
    rows, top = knowledge.rows_of_text(text, "row", "t.toml")
    assert [(r["id"], r["where"]) for r in rows] == [(1, "t.toml:2"), (2, "t.toml:5")]
    assert top["source"] == "https://example.org" and top["other"] == [{"id": 3}]


def test_a_syntax_error_names_the_file_and_line():
    with pytest.raises(UsageError, match=r"^site\.toml:3: not valid TOML"):
        knowledge.rows_of_text("[[row]]\nid = 1\nid = = 2\n", "row", "site.toml")


TABLES = [("xid.toml", "row"), ("xid.toml", "bucket"), ("kmsg.toml", "check"), ("causes.toml", "cause"),
          ("lexicon.toml", "row")]


def parsed(name, key):
    """The table as the package's TOML gives it, read from the text."""
    from importlib import resources

    text = resources.files("nccldiag.knowledge").joinpath(name).read_text(encoding="utf-8")
    rows, top = knowledge.rows_of_text(text, key, name)
    return tuple(rows), tuple(sorted(top.items()))


@pytest.fixture
def kept_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", str(tmp_path / "c"))
    knowledge._table.cache_clear()
    yield tmp_path / "c" / "knowledge"
    knowledge._table.cache_clear()


def test_a_table_read_once_is_kept_then_loaded_the_same(kept_dir, monkeypatch):
    for name, key in TABLES:
        assert knowledge._table(name, key) == parsed(name, key)
    files = sorted(kept_dir.iterdir())
    assert len(files) == len(TABLES) and all(f.stat().st_mode & 0o077 == 0 for f in files)
    assert kept_dir.stat().st_mode & 0o077 == 0
    expected = {t: parsed(*t) for t in TABLES}
    knowledge._table.cache_clear()

    def no_parse(*a, **k):
        raise AssertionError("parsed again")

    monkeypatch.setattr(knowledge, "rows_of_text", no_parse)
    for t in TABLES:
        assert knowledge._table(*t) == expected[t]
        assert knowledge.rows(*t) == [dict(r) for r in expected[t][0]]


def test_a_damaged_or_foreign_kept_table_is_read_from_the_text_again(kept_dir):
    name, key = TABLES[0]
    knowledge._table(name, key)
    (kept,) = kept_dir.iterdir()
    for damage in (kept.read_bytes()[:100], b"\xff\x00 not marshal", __import__("marshal").dumps(("a", "b"))):
        kept.write_bytes(damage)
        knowledge._table.cache_clear()
        assert knowledge._table(name, key) == parsed(name, key)
        assert kept.read_bytes() != damage  # replaced by the table read again
    kept.write_bytes(__import__("marshal").dumps(((), ())))
    kept.chmod(0o666)  # open to others: not loaded
    knowledge._table.cache_clear()
    assert knowledge._table(name, key) == parsed(name, key)


def test_off_keeps_no_table(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # where the tables would go otherwise
    monkeypatch.setenv("HOME", str(tmp_path))
    knowledge._table.cache_clear()
    try:
        assert knowledge._table(*TABLES[0]) == parsed(*TABLES[0])
    finally:
        knowledge._table.cache_clear()
    assert not list(tmp_path.iterdir())


def test_a_row_expression_compiles_when_first_used_and_answers_as_re_does():
    import pickle
    import re

    from nccldiag.knowledge import lexicon

    for shape in lexicon.shapes():
        for expr in (shape.pattern, shape.unless):
            if expr is None:
                continue
            compiled = re.compile(expr.pattern)
            assert expr == compiled and (expr.pattern, expr.flags) == (compiled.pattern, compiled.flags)
            assert pickle.loads(pickle.dumps(expr)) == expr
    fresh = knowledge.Expr(r"status (?P<code>\d+)")
    assert "search" not in vars(fresh)  # not compiled until a line reaches it
    assert fresh.search("returned status 12").group("code") == "12"
    assert fresh.groupindex == {"code": 1} and fresh.sub("x", "status 1") == "x"
    assert vars(fresh)["search"].__self__ == re.compile(r"status (?P<code>\d+)")  # the compiled expression's own


@pytest.fixture
def trie_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(knowledge, "_made", {})
    yield tmp_path / "c" / "trie"


def test_the_lexicon_trie_is_kept_then_loaded_without_building_it(trie_dir, monkeypatch):
    from nccldiag.knowledge import lexicon

    words = lexicon.words()
    built = lexicon._trie(words)
    assert lexicon.trie(words) == built
    (kept,) = trie_dir.iterdir()
    assert kept.stat().st_mode & 0o077 == 0
    monkeypatch.setattr(knowledge, "_made", {})

    def no_build(*a, **k):
        raise AssertionError("built again")

    monkeypatch.setattr(lexicon, "_trie", no_build)
    assert lexicon.trie(words) == built


def test_a_damaged_kept_trie_is_built_again(trie_dir, monkeypatch):
    from nccldiag.knowledge import lexicon

    words = ("Xid", "NCCL WARN", "fallen off")
    built = lexicon.trie(words)
    (kept,) = trie_dir.iterdir()
    for damage in (b"\xff\x00 not marshal", __import__("marshal").dumps(("a", "b"))):
        kept.write_bytes(damage)
        monkeypatch.setattr(knowledge, "_made", {})
        assert lexicon.trie(words) == built
        assert kept.read_bytes() != damage


def test_off_keeps_no_trie(tmp_path, monkeypatch):
    from nccldiag.knowledge import lexicon

    monkeypatch.setenv("NCCLDIAG_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(knowledge, "_made", {})
    assert lexicon.trie(("a", "b")) == "(?:a|b)"
    assert not list(tmp_path.iterdir())
