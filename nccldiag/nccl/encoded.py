"""A log as it is stored, read as the text it holds (a stream that applies it): compressed, or written in UTF-16.

The evidence of a failed job is often in a file that is not plain UTF-8 text:

- a rotated log, compressed by logrotate's ``compress`` (gzip by default: ``kern.log.2.gz``, ``syslog.3.gz``,
  ``messages-20240501.gz``), by bzip2 or xz where ``compresscmd`` says so, or a job's output an admin compressed to
  keep it. Read as bytes, such a file is noise, and ``nccldiag log /var/log/kern.log*`` would say nothing of the
  week the node failed in;
- a text saved on Windows: Windows PowerShell 5.1 writes ``>`` and ``Out-File`` in UTF-16LE with a byte order mark
  (its ``Unicode`` encoding), and Notepad's "Unicode" is the same. Read as UTF-8, every other byte is a NUL and no
  word is found.

:func:`opened` looks at a stream's first bytes (its magic number or its byte order mark; gzip RFC 1952, bzip2's
``BZh``, xz's ``FD 37 7A 58 5A 00``, UTF-16 and UTF-32 BOMs, and UTF-16 without a BOM where nearly every other byte
of its start is a NUL) and gives a stream of the text it holds, as UTF-8, read as it goes (a compressed file is
never held whole). A Zstandard file (``28 B5 2F FD``) is named: the standard library of this Python cannot read it.
A compressed file that is cut short or damaged is an error that names it (the readers name the file), never text.
"""
from __future__ import annotations

import bz2
import codecs
import gzip
import lzma
from typing import IO, Callable, Optional

HEAD = 4096  # the bytes that decide, at the start of a stream

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)
_BOMS = (  # longest first: UTF-32LE's BOM starts with UTF-16LE's
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
ZSTD = b"(\xb5/\xfd"


class Unreadable(OSError):
    """A stored log that cannot be read as text (a compressed file cut short or damaged, a Zstandard file)."""


class Head:
    """``stream`` with ``head`` (its bytes already read) put back in front."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        self.head, self.stream = head, stream

    def read(self, size: int = -1) -> bytes:
        if self.head:
            if size < 0:
                data, self.head = self.head + self.stream.read(), b""
                return data
            data, self.head = self.head[:size], self.head[size:]
            return data
        return self.stream.read(size)

    def readline(self, size: int = -1) -> bytes:
        if self.head:
            i = self.head.find(b"\n")
            if i >= 0 and (size < 0 or i < size):
                data, self.head = self.head[:i + 1], self.head[i + 1:]
                return data
            if size >= 0 and len(self.head) >= size:
                data, self.head = self.head[:size], self.head[size:]
                return data
            data, self.head = self.head, b""
            return data + self.stream.readline(-1 if size < 0 else size - len(data))
        return self.stream.readline(size)


def _utf16_without_bom(head: bytes) -> Optional[str]:
    """``utf-16-le``/``utf-16-be`` where ``head`` reads as ASCII text in UTF-16 (every other byte a NUL, the others
    not), else None."""
    n = len(head) // 2 * 2
    if n < 16:
        return None
    even, odd = head[0:n:2], head[1:n:2]
    for zeros, chars, name in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if zeros.count(0) >= 0.95 * len(zeros) and chars.count(0) <= 0.05 * len(chars):
            return name
    return None


class _Decompressed:
    """The text of a compressed stream, its errors raised as :class:`Unreadable`."""

    def __init__(self, kind: str, stream: IO[bytes]) -> None:
        self.kind = kind
        opener = {"gzip": gzip.GzipFile, "bzip2": bz2.BZ2File, "xz": lzma.LZMAFile}[kind]
        self.inner = opener(fileobj=stream, mode="rb") if kind == "gzip" else opener(stream, mode="rb")

    def _call(self, how, size: int) -> bytes:
        try:
            return how(size)
        except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
            raise Unreadable(f"{self.kind}-compressed, cannot be read whole: {exc}") from None

    def read(self, size: int = -1) -> bytes:
        return self._call(self.inner.read, size)

    def readline(self, size: int = -1) -> bytes:
        return self._call(self.inner.readline, size)


class Buffered:
    """A stream whose bytes ``_fill(size)`` makes ready in ``out`` (``ended`` once nothing more will come):
    ``read`` and ``readline`` as a file's."""

    out = b""
    ended = False

    def _fill(self, size: int) -> None:
        raise NotImplementedError

    def read(self, size: int = -1) -> bytes:
        self._fill(size)
        if size < 0:
            data, self.out = self.out, b""
        else:
            data, self.out = self.out[:size], self.out[size:]
        return data

    def readline(self, size: int = -1) -> bytes:
        while b"\n" not in self.out and not self.ended and (size < 0 or len(self.out) < size):
            self._fill(len(self.out) + 1)
        i = self.out.find(b"\n")
        cut = len(self.out) if i < 0 else i + 1
        if 0 <= size < cut:
            cut = size
        data, self.out = self.out[:cut], self.out[cut:]
        return data


class _Recoded(Buffered):
    """The text of a stream in ``encoding``, as UTF-8."""

    def __init__(self, encoding: str, stream: IO[bytes]) -> None:
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder(encoding)(errors="replace")

    def _fill(self, size: int) -> None:
        while not self.ended and (size < 0 or len(self.out) < size):
            data = self.stream.read(65536 if size < 0 else max(size, 4096))
            self.ended = not data
            text = self.decoder.decode(data, final=self.ended)
            self.out += text.lstrip("\ufeff").encode("utf-8") if text else b""


def opened(stream: IO[bytes]) -> IO[bytes]:
    """The text ``stream`` holds, as UTF-8 bytes (see the module's docstring); ``stream`` itself, with its first
    bytes put back, where it is plain text."""
    head = read_up_to(stream, HEAD)
    if not head:
        return stream
    whole = Head(head, stream)
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return _Decompressed(kind, whole)  # type: ignore[return-value]
    if head.startswith(ZSTD):
        raise Unreadable("Zstandard-compressed: decompress it first (zstd -d FILE, or zstdcat FILE | nccldiag log -)")
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return _Recoded(encoding, whole)  # type: ignore[return-value]
    encoding = _utf16_without_bom(head)
    if encoding:
        return _Recoded(encoding, whole)  # type: ignore[return-value]
    return whole  # type: ignore[return-value]


class Opened:
    """:func:`opened` of ``stream``, decided at the first read: a file that cannot be read as text is an error of
    a read, which the readers name the file in."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.raw: Optional[IO[bytes]] = stream
        self._stream: Optional[IO[bytes]] = None

    @property
    def stream(self) -> IO[bytes]:
        if self.raw is not None:
            self._stream, self.raw = opened(self.raw), None
        assert self._stream is not None
        return self._stream

    def read(self, size: int = -1) -> bytes:
        return self.stream.read(size)

    def readline(self, size: int = -1) -> bytes:
        return self.stream.readline(size)


def read_up_to(stream: IO[bytes], size: int) -> bytes:
    """``size`` bytes of ``stream``, fewer only at its end (a pipe gives what it has: read on)."""
    head = b""
    while len(head) < size:
        data = stream.read(size - len(head))
        if not data:
            break
        head += data
    return head


SAMPLE = 256 * 1024  # the start of a text that says whether a Mapped stream maps it


class Mapped:
    """A binary stream read through ``fn`` (bytes to bytes), ``read`` and ``readline`` as a file's: of what is
    read, the first ``whole(buf)`` bytes go through ``fn`` and the rest waits for the next read (a character or a
    line cut by a read's size). ``b""`` only at the end: a piece that maps to nothing is read past.

    The first :data:`SAMPLE` bytes decide: where ``fn`` changes nothing of them, the text is handed on as it comes
    and ``fn`` never runs again (a text is typeset, or stored as records, from its start; a large log that is
    neither costs one pass over its first 256 KiB)."""

    def __init__(self, stream: IO[bytes], fn: Callable[[bytes], bytes], whole: Callable[[bytes], int]) -> None:
        self.stream, self.fn, self.whole = stream, fn, whole
        self.carry = b""
        self.decided = False
        self.on = False

    def _decide(self) -> None:
        self.decided = True
        head = read_up_to(self.stream, SAMPLE)
        self.on = self.fn(head) != head
        self.stream = Head(head, self.stream)

    def read(self, size: int = -1) -> bytes:
        if not self.decided:
            self._decide()
        if not self.on:
            return self.stream.read(size)
        while True:
            data = self.stream.read(size)
            if not data:
                out, self.carry = self.carry, b""
                return self.fn(out) if out else b""
            buf = self.carry + data if self.carry else data
            cut = len(buf) if size < 0 else self.whole(buf)
            self.carry = buf[cut:]
            out = self.fn(buf[:cut]) if cut else b""
            if out:
                return out

    def readline(self, size: int = -1) -> bytes:
        if not self.decided:
            self._decide()
        if not self.on:
            return self.stream.readline(size)
        while True:
            line = self.stream.readline(size)
            buf = self.carry + line if self.carry else line
            if not line:
                self.carry = b""
                return self.fn(buf) if buf else b""
            cut = len(buf) if line.endswith(b"\n") else self.whole(buf)
            self.carry = buf[cut:]
            out = self.fn(buf[:cut]) if cut else b""
            if out:
                return out
