"""A typeset text read as the program wrote it (nccldiag/nccl/typeset.py), on real texts.

Every real text of the cases and fixtures, typeset as a web page, a blog, a markdown editor or an input method
does (tests/mutations.py), folds back to the text as it was, line for line; the stream gives what the function
gives, read in pieces of any size; a text with nothing to fold is handed on as it is. That each case is still
named right once typeset is tests/unit/test_case_mutations.py's.
"""
from __future__ import annotations

import io

import pytest

from nccldiag.nccl import typeset, unwrap
from tests import mutations
from tests.unit.test_unwrap import TEXTS, _read

TYPESET = ("nbsp", "smart-quotes", "md-escape", "zero-width", "full-width")


def _plain(text: str) -> bool:
    """A text typesetting can be undone on exactly: ASCII, and nothing in it a fold would change already."""
    return text.isascii() and typeset.fold_text(text) == text and "\u2026" not in text


@pytest.mark.parametrize("name", TYPESET)
def test_real_texts_typeset_fold_back_to_the_text(name):
    tried = 0
    for p in TEXTS:
        text = _read(p)
        if not _plain(text):
            continue
        tried += 1
        got = typeset.fold_text(mutations.TRANSFORMS[name](text))
        assert got == text, (p.name, name)
    assert tried > 100


def test_folding_keeps_every_line_at_its_number():
    for p in TEXTS:
        text = _read(p)
        assert typeset.fold_text(text).count("\n") == text.count("\n"), p.name


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, 4096])
def test_the_stream_reads_what_the_function_gives_in_any_pieces(size):
    """Real texts with characters of two to four bytes (Chinese notes, curly quotes) and typeset ones, read in
    pieces that cut characters and markdown escapes in two."""
    texts = [_read(p) for p in TEXTS if not _read(p).isascii()]
    texts += [mutations.TRANSFORMS[n](_read(p)) for p in TEXTS[:40] for n in TYPESET]
    assert len(texts) > 200
    for text in texts:
        data = text.encode("utf-8", "surrogateescape")
        want = typeset.fold(data)
        stream = typeset.Folding(io.BytesIO(data))
        got = b"".join(iter(lambda: stream.read(size), b""))
        assert got == want
        stream = typeset.Folding(io.BytesIO(data))
        assert b"".join(iter(stream.readline, b"")) == want


def test_a_text_with_nothing_to_fold_is_handed_on_as_it_is():
    for p in TEXTS:
        data = p.read_bytes()
        if data.isascii() and b"\\" not in data:
            assert typeset.fold(data) is data


def test_what_stays():
    """A doubled backslash, a backslash before a letter or a digit, and the characters of other scripts stay."""
    for keep in ("C:\\\\Users\\\\x", "\\n\\t\\1", "多机多卡", "\u2588\u2588\u258f 45%", "µs", "é"):
        assert typeset.fold_text(keep) == keep


def test_every_reader_reads_through_the_fold():
    """The stream every reader of a file or of standard input reads through undoes the typesetting."""
    text = "NCCL\u00a0WARN\u00a0Cuda failure \u2018out of memory\u2019\nNCCL\\_IB\\_HCA\uff1amlx5\n"
    assert unwrap.unwrap(text) == "NCCL WARN Cuda failure 'out of memory'\nNCCL_IB_HCA:mlx5\n"
