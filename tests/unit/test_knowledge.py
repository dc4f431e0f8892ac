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
