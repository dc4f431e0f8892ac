"""A text wrapped at a fixed width, its lines joined again as they were written (pure, and a stream that applies it).

A terminal's copy (tmux, screen, a serial or BMC console), a mail or a narrow forum box breaks every line longer
than its width ``W`` into pieces of exactly ``W`` characters and a last, shorter one. Read piece by piece, a line's
words are split over two lines (``NCCL WARN NET/IB : Got comp`` / ``letion from peer ...``): no message is read
whole, and the start of a record is left without its end.

:func:`width` says from the start of a text whether it was wrapped, and at which width: its longest lines all have
the same length ``W`` (a spike there, above the lengths just below it: a text written with no width has no such
spike), none is longer, the lines after them do not start the way a line of the text starts (a continuation
starts in the middle of a word or of a list of numbers; a table's rows, lines cut at a width without being wrapped
(``ps`` in a terminal), or lines that merely all fit, start like lines), and each run of pieces ends in a shorter
one (a table whose rows are all of the width goes on and on). :func:`joined` then joins each line of
exactly ``W`` characters with the one after it, where that one does not start like a line.

A text broken at its blanks instead (a mail's ``format=flowed``, RFC 3676 4.2: "a soft line break is a SP CRLF
sequence"; ``fold -s``, which leaves the blank at the end of the piece; an editor's hard wrap) has pieces of
varying length, each ended by one blank: :func:`flowed` says whether a text was so broken (at least
:data:`MIN_WRAPS` such breaks), :func:`soft_break` where, and :func:`flowed_joined` joins them. A mail's quote marks
(``> ``) are taken off the piece after the first, as the RFC's section 4.5 takes them off before joining.

The lines are numbered as they stand in the file: a joined line stands at the number of its first piece, and each
piece after the first is left as an empty line, so that every reader of the text cites the lines the user sees.
:class:`Unwrapping` does this to a binary stream as it is read (the first :data:`SAMPLE` bytes decide), and hands
on the stream unchanged where the text was not wrapped.
"""
from __future__ import annotations

import io
from typing import IO, List, Optional, Sequence, Set

from nccldiag import rx
from nccldiag.nccl.encoded import Buffered, Head, Opened
from nccldiag.nccl.paragraphs import Splitting
from nccldiag.nccl.records import Unpacking
from nccldiag.nccl.typeset import Folding

SAMPLE = 256 * 1024  # the start of a text that says whether it was wrapped
MIN_WIDTH = 40  # narrower than any terminal or mail wraps a log
MAX_WIDTH = 1024
MIN_WRAPS = 2  # wrapped lines (runs of pieces ending shorter than the width), at least
TERMINAL = 80  # a terminal's width unless set otherwise: one line wrapped at it is enough to tell
MAX_PIECES = 1024  # pieces joined into one line at most (a line of 80 KiB at 80 columns); the rest goes on apart
LONG = 1 << 20  # a line not ended after this many bytes is handed on as it is

# A line's start as a new line writes it: a time (ISO, syslog, a kernel's '[ 12.345]' or '[Wed May  1 ...]'), an
# NCCL record's 'host:pid:tid [', a launcher's '[rank3]:', '[default0]:', '[1,3]<stderr>:', '3: ', a shell prompt, a
# tool's padded field ('fw_ver:          22.38.1900', 'State:   Active', flush left), a table's border or a quote mark.
_STARTS = rx.compile(
    r"[ \t]{0,12}(?:"
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d|"
    r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|"
    r"\[[ \t]{0,12}(?:\d{1,10}\.\d{1,9}|[A-Z][a-z]{2} [A-Z][a-z]{2} )|"
    r"[\w.-]{1,253}:\d{1,10}:\d{1,10} \[|"
    r"\[(?:rank|default)\d{1,6}\]:|\[\d{1,6},\d{1,6}\]<std|\d{1,6}: |"
    r"[\w.@-]{0,64}[$#%>] |"
    r"[A-Za-z_][\w.-]{0,40}:[ \t]{2,40}\S|"
    r"[|+>]|Traceback |File \")")


_ENDS = ("  ", "}", ")", "]", ".", "|", "+")  # how a line that ends where its text does often ends (a table's row)


def _kind(ch: str) -> str:
    return "0" if ch.isdigit() else "a" if ch.islower() else "A" if ch.isalpha() else ch


def start_class(line: str) -> str:
    """How ``line`` starts: the kinds of blank it is indented with, then its first two words' first 12 characters
    each by kind (digits ``0``, lower-case letters ``a``, other letters ``A``, the rest as they are), a run of one
    kind once."""
    body = line.lstrip(" \t")
    out = ["".join(dict.fromkeys(line[:len(line) - len(body)]))]  # the indent by its kinds of blank
    for word in body.split(None, 2)[:2]:
        out.append(" ")
        for ch in word[:12]:
            k = _kind(ch)
            if out[-1] != k:
                out.append(k)
    return "".join(out)


def _text(line: bytes) -> str:
    return line.decode("utf-8", errors="replace").rstrip("\r")


def _blank(line: str) -> bool:
    return not line.strip()


def starts_like_a_line(line: str, starts: Set[str]) -> bool:
    """Whether ``line`` starts as a new line of the text does, not as the continuation of the line before it:
    blank, a time, a record's or a launcher's prefix, a prompt, a table's border, or a start of the text's own
    (``starts``, :func:`line_starts`: how the lines sure to start a line start, and their labels)."""
    if _blank(line) or _STARTS.match(line) or start_class(line) in starts:
        return True
    label = _label(line)
    return bool(label) and label in starts


def _label(line: str) -> str:
    """The first word of ``line`` where it is a label (``gpu7:``, ``[node3]``, ``(pid=12)``), else ``""``."""
    word = line.split(None, 1)[0] if line.strip() else ""
    return "=" + word if word[-1:] in (":", "]", ")") else ""


_WORD = rx.compile(r"[a-z]\w*")


def _word(line: str) -> str:
    """The word in lower case ``line`` starts with, as :func:`line_starts` keeps it (``^kern``), else ``""``."""
    m = _WORD.match(line)
    return "^" + m.group() if m else ""


def _learn(starts: Set[str], line: str) -> None:
    """Add to ``starts`` how ``line``, sure to start a line, starts: its class, its label, its first word."""
    starts.add(start_class(line))
    starts.add(_label(line))
    starts.add(_word(line))
    starts.discard("")


def line_starts(lines: Sequence[str], w: int) -> Set[str]:
    """The :func:`start_class` of the lines of ``lines`` sure to start a line (the first, and those after a line
    shorter than ``w`` or blank), their first words where they are labels (a host's, a process's), and the words
    in lower case they start with (``^kern``)."""
    out: Set[str] = set()
    before = None
    for line in lines:
        if before is None or len(before) != w or _blank(before):
            _learn(out, line)
        before = line
    return out


def width(lines: Sequence[str]) -> Optional[int]:
    """The width the text of ``lines`` (whole lines, without their ends) was wrapped at, or ``None``."""
    if len(lines) < 2:
        return None
    lengths = [len(t) for t in lines]
    w = max(lengths)
    if not MIN_WIDTH <= w <= MAX_WIDTH:
        return None
    starts = line_starts(lines, w)
    wraps: List[int] = []  # lines of the width that go on in the next line
    news = ended = unended = 0  # lines of the width a new line follows; runs of pieces that end shorter, or not
    i, n = 0, len(lines)
    while i < n - 1:
        if lengths[i] != w or _blank(lines[i]) or _blank(lines[i + 1]) or lines[i].endswith(_ENDS):
            i += 1  # a line padded with blanks (a table's, a form's), or that ends as a text does, tells nothing
            continue
        if starts_like_a_line(lines[i + 1], starts) or _indented_alike(lines[i], lines[i + 1]):
            news += 1
            i += 1
            continue
        j = i + 1  # the pieces of one line: a wrapped line ends in a piece shorter than the width
        while lengths[j] == w and j + 1 < n and not _blank(lines[j + 1]) and \
                not starts_like_a_line(lines[j + 1], starts) and not _indented_alike(lines[j], lines[j + 1]):
            j += 1
        wraps += range(i, j)
        if lengths[j] < w or j + 1 < n and _blank(lines[j + 1]) and 0 < lengths[j + 1] < w:
            ended += 1  # (its last piece may be the blanks a line was padded with)
        else:
            unended += 1
        i = j + 1
    if not ended or ended < MIN_WRAPS and w != TERMINAL or unended * 2 > ended:
        return None  # rows of one width that go on and on are a table's, not a wrapped line's pieces
    if len(wraps) > 1 and len({lines[i] for i in wraps}) < 2:  # one line repeated: a border, a rule
        return None
    if news * 4 > len(wraps):  # most lines of the width go on with a line of their own
        return None
    at = lengths.count(w)
    below = max(lengths.count(w - k) for k in (1, 2, 3))
    if at < (1 if w == TERMINAL and not news and not unended else 2) * below:  # no spike at the width: lines
        return None  # that merely fit (at a terminal's width, with every piece going on, a plateau is enough)
    return w


def joined(lines: Sequence[str], w: int, starts: Optional[Set[str]] = None) -> List[str]:
    """``lines`` with each line of exactly ``w`` characters joined with the line after it where that one
    continues it (it does not start as a line of the text starts: ``starts``, grown as the lines are read); each
    piece after the first left as an empty line (the numbers stay)."""
    starts = line_starts(lines, w) if starts is None else starts
    out: List[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        _learn(starts, line)
        pieces = 1
        while len(lines[i + pieces - 1]) == w and i + pieces < n and pieces < MAX_PIECES and \
                _goes_on(lines[i + pieces - 1], lines[i + pieces], starts):
            line += lines[i + pieces]
            pieces += 1
        out.append(line)
        out += [""] * (pieces - 1)
        i += pieces
    return out


def _cut_word(piece: str, line: str, starts: Set[str]) -> bool:
    """Whether the wrap plainly cut a word or a rule between ``piece`` (a line of the width) and ``line``: the
    piece ends in a letter, a digit or one space and the line goes on in lower case (``... for op`` / ``timal
    performance``),
    with neither a line's own start (a time, a prefix, a prompt) nor a label of the text; or the piece is a rule
    (one character repeated) and the line is the rest of it."""
    cut = piece[-1:].isalnum() or piece[-1:] == " " and not piece[-2:-1].isspace()
    if cut and line[:1].islower() and not _STARTS.match(line):
        return _label(line) not in starts and _word(line) not in starts
    body = piece.strip()
    return len(body) >= MIN_WIDTH // 2 and len(set(body)) == 1 and body[0] in "-=_*~#" and \
        set(line.rstrip()) == {body[0]} and not line[:1].isspace()


def _goes_on(piece: str, line: str, starts: Set[str]) -> bool:
    """Whether ``line`` continues ``piece`` (a line of the width, in a text wrapped at it): it does not start as a
    line of the text starts, the wrap cut a word or a rule (:func:`_cut_word`), or it cut a run of spaces (a
    table's row: its next column starts as a row)."""
    if _blank(piece) or _blank(line):
        return False
    if piece[-1:] == " " and line[:1] == " ":
        return True
    if _indented_alike(piece, line):
        return False
    return _cut_word(piece, line, starts) or not starts_like_a_line(line, starts)


def _indented_alike(piece: str, line: str) -> bool:
    """Whether ``line`` is indented by the same blanks (two or more) as ``piece``, which does not end in a blank: the
    next field of an indented block (``ifconfig``'s ``inet6`` lines under their interface), not the rest of ``piece``
    (a wrap that cut a line right before a run of blanks as long as its own indent is no wrap of a log)."""
    if piece[-1:] in (" ", "\t"):
        return False
    indent = len(line) - len(line.lstrip(" \t"))
    return indent >= 2 and line[:indent] == piece[:indent] and piece[indent:indent + 1] not in (" ", "\t", "")


FLOW_ONE = 60  # a text broken at its blanks once: its piece at least this long (a mail breaks at 72 to 78)
FLOW_SLACK = 1.25  # a text broken at its blanks: its lines keep to its longest piece, within a word
FLOW_OVER = 50  # lines of such a text that may pass it (an address, a path no blank breaks), one in this many
_QUOTE = rx.compile(r"(?:> ?)*")  # a mail's or a markdown's quote marks
# a table's row, its cells padded to their columns (two gaps of three blanks or more: sacct's and squeue's rows end in
# the blank after their last cell), and a table's rule of dashes under its header: neither is a piece of a longer line
_PADDED = rx.compile(r"\S {3,40}\S[^\n]{0,400}? {3,40}\S")
_RULE = rx.compile(r"[ \t]{0,8}[-=]{3,80}(?: {1,3}[-=]{3,80}){1,40} ?$")
# a shell prompt: a command's line ends in a blank as often as not, and its output is no part of it
_PROMPT = rx.compile(r"[ \t]*(?:\([\w.-]{1,64}\)[ \t])?(?:[\w.@-]{1,64}(?::[^\s$#%]{0,256})?)?[$#%][ \t]")


def soft_break(line: str, after: str, starts: Set[str]) -> bool:
    """Whether ``line`` was broken at a blank and ``after`` goes on with it: ``line`` (of at least
    :data:`MIN_WIDTH` characters, not a shell prompt's) ends in one blank after its text, ``after`` has the same quote
    marks (a mail's) or none (``fold``'s), then starts flush with a character that is not a blank and does not start
    as a line of the text starts (``starts``), and holds more than one character (a table's lone border, a comment's
    ``#``). A table's row whose cells are padded to their columns, and a rule of dashes under a table's header, are
    lines of their own."""
    if len(line) < MIN_WIDTH or line[-1:] != " " or line[-2:-1].isspace():
        return False
    quote = _QUOTE.match(line).group()  # type: ignore[union-attr]
    marks = _QUOTE.match(after).end()  # type: ignore[union-attr]
    if marks and after[:marks] != quote:
        return False
    body, rest = line[len(quote):], after[marks:]
    if _PROMPT.match(body) or len(rest.rstrip()) < 2 or rest[:1].isspace():
        return False
    if _PADDED.search(body) or _RULE.match(body) or _RULE.match(rest):
        return False
    return not starts_like_a_line(rest, starts)


def _flow_starts(lines: Sequence[str]) -> Set[str]:
    """:func:`line_starts` of a text broken at its blanks: the first line's start, and those of the lines after a
    blank one or after one that ended well short of the width the pieces reach (four fifths of the longest line
    ending in a blank): a line that reaches it without a blank at its end may be a piece broken where no blank was."""
    pieces = [len(t) for t in lines if t[-1:] == " " and not t[-2:-1].isspace()]
    reach = 0.8 * max(pieces, default=0)
    out: Set[str] = set()
    before = None
    for line in lines:
        if before is None or _blank(before) or (before[-1:] != " " and len(before) < reach):
            _learn(out, line[_QUOTE.match(line).end():])  # type: ignore[union-attr]
        before = line
    return out


def flowed(lines: Sequence[str]) -> bool:
    """Whether the text of ``lines`` was broken at its blanks (:func:`soft_break`) at least :data:`MIN_WRAPS`
    times, at a width its other lines keep to (once, where the piece is at least :data:`FLOW_ONE` characters and
    no line is longer): at most one line in :data:`FLOW_OVER` is longer than
    :data:`FLOW_SLACK` times the longest piece. A program's own line ended in a blank before a line of its own
    (TensorFlow's ``with properties: `` before ``pciBusID:``, a warning's ``See `` before its address) stands among
    lines far longer than it."""
    starts = _flow_starts(lines)
    pieces = [len(lines[i]) for i in range(len(lines) - 1) if soft_break(lines[i], lines[i + 1], starts)]
    if len(pieces) == 1:  # one break: where its piece is the text's longest line, at a mail's or a terminal's width
        return pieces[0] >= FLOW_ONE and max(map(len, lines)) <= pieces[0]
    if len(pieces) < MIN_WRAPS:
        return False
    bound = FLOW_SLACK * max(pieces)
    return sum(len(t) > bound for t in lines) <= len(lines) // FLOW_OVER


def flowed_joined(lines: Sequence[str], starts: Set[str], w: Optional[int] = None) -> List[str]:
    """``lines`` with each piece broken at a blank (:func:`soft_break`) joined with the one after it, the quote
    marks of that one taken off; with ``w``, each line of exactly ``w`` characters too where the line after it
    continues it (``fold -s`` breaks a run with no blank at the width); each piece after the first left as an empty
    line (the numbers stay)."""
    out: List[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        _learn(starts, line[_QUOTE.match(line).end():])  # type: ignore[union-attr]
        pieces = 1
        while i + pieces < n and pieces < MAX_PIECES:
            piece, nxt = lines[i + pieces - 1], lines[i + pieces]
            if soft_break(piece, nxt, starts):
                line += nxt[_QUOTE.match(nxt).end():]  # type: ignore[union-attr]
            elif w is not None and len(piece) == w and _goes_on(piece, nxt, starts):
                line += nxt
            else:
                break
            pieces += 1
        out.append(line)
        out += [""] * (pieces - 1)
        i += pieces
    return out


def unwrap(text: str) -> str:
    """``text`` with its wrapped lines joined (:func:`joined`) and its typesetting undone, or as it is where it
    was neither: what :class:`Unwrapping` reads of it."""
    data = text.encode("utf-8", "surrogateescape")
    got = Unwrapping(io.BytesIO(data)).read()
    return text if got == data else got.decode("utf-8", "surrogateescape")


class Unwrapping(Splitting):
    """The stream every reader of a file or of standard input reads it through: the text the file stores
    (:class:`nccldiag.nccl.encoded.Opened`: decompressed, recoded from UTF-16), its JSON records' messages
    (:class:`nccldiag.nccl.records.Unpacking`), its wrapped lines joined
    (:class:`Joining`), its typesetting undone (:class:`nccldiag.nccl.typeset.Folding`; after the join, which
    counts the characters as the wrap did), and its lines run together into paragraphs cut back into their
    records (:class:`nccldiag.nccl.paragraphs.Splitting`; after the folding, which makes a no-break space the
    space the cut looks for)."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(Folding(Joining(Unpacking(Opened(stream)))))


class Joining(Buffered):
    """A binary stream read with its wrapped lines joined (:func:`joined`, or :func:`flowed_joined` where the text
    was broken at its blanks): ``read`` and ``readline`` as a file's. Where the first :data:`SAMPLE` bytes show no
    wrap, the bytes are handed on as they come."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.out = b""  # bytes ready to hand on
        self.width: Optional[int] = None
        self.decided = False
        self.pending: List[str] = []  # the lines of a wrapped text read but not joined yet (the last may go on)
        self.carry = b""  # a line not ended yet
        self.ended = False
        self.starts: Set[str] = set()  # how the text's lines start (:func:`line_starts`), grown as it is read
        self.flowed = False  # broken at its blanks (:func:`flowed`), and at the width where one is found too

    @property
    def _as_is(self) -> bool:
        """Whether the text was neither wrapped nor broken at its blanks: its bytes are handed on as they come."""
        return self.width is None and not self.flowed

    def _decide(self) -> None:
        self.decided = True
        head = self.stream.read(SAMPLE)
        end = head.rfind(b"\n")
        whole = [_text(x) for x in head[:end].split(b"\n")] if end >= 0 else []
        self.width = width(whole)
        self.flowed = flowed(whole)
        if self._as_is:
            self.stream = Head(head, self.stream)  # handed on as it comes
            self.ended = not head
            return
        self.starts = _flow_starts(whole) if self.flowed else line_starts(whole, self.width or 0)
        self.pending, self.carry = whole, head[end + 1:]
        self._flush(final=False)

    def _flush(self, final: bool) -> None:
        """Join the pending lines but, unless ``final``, the lines of the width they end with (the line after them,
        not read yet, may continue them)."""
        lines, w = self.pending, self.width
        k = len(lines)
        while not final and k > 0 and len(lines) - k < MAX_PIECES and \
                (len(lines[k - 1]) == w or self.flowed and lines[k - 1][-1:] == " "):
            k -= 1
        ready, self.pending = lines[:k], lines[k:]
        if ready:
            out = flowed_joined(ready, self.starts, w) if self.flowed else joined(ready, w or 0, self.starts)
            self.out += ("\n".join(out) + "\n").encode("utf-8")

    def _fill(self, size: int) -> None:
        if not self.decided:
            self._decide()
        if self._as_is:
            return
        while not self.ended and (size < 0 or len(self.out) < size):
            data = self.stream.read(SAMPLE)
            if not data:
                self.ended = True
                if self.carry:
                    self.pending.append(_text(self.carry))
                    self.carry = b""
                self._flush(final=True)
                break
            buf = self.carry + data
            body, nl, self.carry = buf.rpartition(b"\n")
            if not nl:
                self.carry = buf
                if len(buf) > LONG:  # one overlong line: handed on as it comes, joined with nothing
                    self._flush(final=True)
                    self.out += buf
                    self.carry = b""
                continue
            self.pending += [_text(x) for x in body.split(b"\n")]
            self._flush(final=False)

    def read(self, size: int = -1) -> bytes:
        self._fill(size)
        return self.stream.read(size) if self._as_is else super().read(size)

    def readline(self, size: int = -1) -> bytes:
        if not self.decided:
            self._decide()
        return self.stream.readline(size) if self._as_is else super().readline(size)
