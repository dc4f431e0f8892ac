"""A text as a web page, a word processor, a chat or a markdown editor hands it over, read as the program wrote it
(pure, and a stream that applies it).

Between a terminal and the admin's paste a text is often typeset: a web page or a mail client writes spaces as
no-break spaces (U+00A0, HTML's ``&nbsp;`` rendered), a blog's smart typography turns quotes into curly ones, ``--``
into a dash and ``...`` into an ellipsis, a page's soft hyphenation hides soft hyphens and zero-width spaces in long
words, an editor set for Chinese or Japanese writes full-width colons, brackets and letters, and Reddit's markdown
editor escapes each ``_``, ``*`` and ``[`` of a pasted line (``NCCL\\_IB\\_HCA``). No program of a node writes
any of these, and every reader of a line (the NCCL log reader, the failure lexicon, the paste reader) matches the
ASCII words the program wrote: a line typeset so is not read at all, and a whole log pasted from a web page
with no-break spaces comes out as "nothing to judge".

:func:`fold` gives such bytes back as the program wrote them:

- every space separator of Unicode (no-break, figure, thin, ideographic spaces) becomes a space, and the
  characters that show nothing (zero-width spaces and joiners, the word joiner, a byte order mark inside the text,
  the soft hyphen) are taken out;
- curly single and double quotes and primes become ``'`` and ``"``, hyphens and the minus sign ``-``, the en and
  em dashes ``--`` (what smart typography made them of), the ellipsis ``...``;
- the full-width forms of ASCII (U+FF01 to U+FF5E) become the ASCII characters they are wide forms of;
- a markdown backslash before one of ``_ * [ ] ( ) # < > ~ ^ ` |`` is taken out (``\\_`` is ``_``); a backslash
  before anything else, a doubled one included, stays.

No character folded is a line break, so every line keeps its number. The first 256 KiB of a text decide
(:class:`nccldiag.nccl.encoded.Mapped`): a text in which they hold none of these is handed on as it comes, so a
large log pays one pass over its start.
"""
from __future__ import annotations

from typing import IO, Dict

from nccldiag import rx
from nccldiag.nccl.encoded import Mapped

_SPACES = "\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u202f\u205f\u3000"
_INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
_MAP: Dict[str, str] = {c: " " for c in _SPACES}
_MAP.update({c: "" for c in _INVISIBLE})
_MAP.update({c: "'" for c in "\u2018\u2019\u201a\u201b\u2032"})
_MAP.update({c: '"' for c in "\u201c\u201d\u201e\u201f\u2033"})
_MAP.update({c: "-" for c in "\u2010\u2011\u2212"})
_MAP.update({c: "--" for c in "\u2012\u2013\u2014\u2015"})
_MAP["\u2026"] = "..."
_MAP.update({chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)})

_BYTES: Dict[bytes, bytes] = {k.encode("utf-8"): v.encode("ascii") for k, v in _MAP.items()}
# every character folded, in UTF-8, by its bytes (a few more of the same blocks match and stay as they are)
_TYPESET = rx.compile(rb"\xc2[\xa0\xad]|\xe1\x9a\x80|\xe2(?:[\x80\x81][\x80-\xbf]|\x88\x92)|\xe3\x80\x80|"
                      rb"\xef(?:\xbb\xbf|\xbc[\x81-\xbf]|\xbd[\x80-\x9e])")
_ESCAPED = rx.compile(rb"\\([_*\[\]()#<>~^`|])")


def fold(data: bytes) -> bytes:
    """``data`` (UTF-8, whole characters) with its typesetting undone (see the module's docstring)."""
    if not data.isascii():
        data = _TYPESET.sub(lambda m: _BYTES.get(m.group(), m.group()), data)
    if b"\\" in data:
        data = _ESCAPED.sub(rb"\1", data)
    return data


def fold_text(text: str) -> str:
    """:func:`fold` of a text."""
    data = text.encode("utf-8", "surrogateescape")
    got = fold(data)
    return text if got is data else got.decode("utf-8", "surrogateescape")


def _whole(data: bytes) -> int:
    """How many bytes at the start of ``data`` end with a whole character and no markdown backslash that the next
    bytes may complete: the rest waits for them."""
    end = len(data)
    if end and data[-1] == 0x5C:  # a backslash: its character is in the next block
        return end - 1
    for back in range(1, min(4, end) + 1):
        b = data[end - back]
        if b < 0x80:
            return end
        if b >= 0xC0:  # the lead byte of the last character: whole if all of its bytes are here
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return end if back >= need else end - back
    return end


class Folding(Mapped):
    """A binary stream read through :func:`fold`: ``read`` and ``readline`` as a file's (a character or a markdown
    escape cut by a read's size waits for the next read)."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(stream, fold, _whole)
