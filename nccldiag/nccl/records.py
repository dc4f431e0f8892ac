"""A line a container runtime, a structured logger or a log shipper wrote as a JSON record, read as the message it
carries (pure, and a stream that applies it).

A job's output stored by a container runtime or a log collector, and a Go tool's own log, come one JSON object a
line: Docker's ``json-file`` driver writes ``{"log":"LINE\\n","stream":"stderr","time":"..."}`` (the log line,
its newline included, in ``log``); journald's ``journalctl -o json`` gives the line in ``MESSAGE``; Fluent Bit,
Vector, Elastic and CloudWatch exports in ``message``; Google Cloud Logging in ``textPayload``; Go's structured
loggers zap (``{"level":"error","ts":...,"caller":...,"msg":"...","error":"..."}``, as gpud, the device plugin and
the GPU operator log) and logrus (``{"level":"error","msg":"...","time":"..."}``) in ``msg``. Read as it stands, the
line is a JSON string: a node output whose rows are cut into records is no table, a traceback's lines are escaped
(``\\n``, ``\\"``) and an error-level record's level is a quoted field.

:func:`unpack` gives each such line as the message it carries: the first of ``log``, ``MESSAGE``, ``message``,
``msg``, ``textPayload`` that is a JSON string, unescaped, its last newline taken off, the record's ``error``
field after it (``msg: error``), and, where the record's ``level`` (or ``severity``) is an error's, the level
first as a logging library writes it (``ERROR ``, ``FATAL `` for zap's and logrus' ``fatal``, ``panic`` and
``dpanic``, ``CRITICAL ``). A message of several lines stands as its lines, so the lines after it are cited as
many lines further on. Any other line, a record with no such field, and a line longer than :data:`MAX_RECORD` is
handed on as it is; a text whose first 256 KiB hold no record is handed on as it comes
(:class:`nccldiag.nccl.encoded.Mapped`).
"""
from __future__ import annotations

import json
from typing import IO, Optional

from nccldiag import rx
from nccldiag.nccl.encoded import Mapped

MAX_RECORD = 256 * 1024  # a longer line is read as it stands
MAX_CARRY = 1 << 20  # a line not ended after this many bytes is handed on as it comes

_FIELDS = (b"log", b"MESSAGE", b"message", b"msg", b"textPayload")
_STRING = rb'"((?:[^"\\\n]|\\.){0,262144})"'
_FIELD = rx.compile(rb'"(log|MESSAGE|message|msg|textPayload|error|level|severity)"[ \t]{0,8}:[ \t]{0,8}' + _STRING)
_OPEN = rx.compile(rb'\{[ \t]{0,8}"')  # a record's first key: its line is tested whole
_RECORD = rx.compile(rb'[ \t]{0,8}\{[ \t]{0,8}"[^\n]{0,262144}\}[ \t]{0,8}\r?')
_LEVELS = {b"error": "ERROR", b"err": "ERROR", b"fatal": "FATAL", b"panic": "FATAL", b"dpanic": "FATAL",
           b"critical": "CRITICAL", b"crit": "CRITICAL", b"alert": "CRITICAL", b"emerg": "CRITICAL",
           b"emergency": "CRITICAL"}


def _string(raw: bytes) -> Optional[str]:
    try:
        got = json.loads(b'"' + raw + b'"')
    except ValueError:
        return None
    return got if isinstance(got, str) else None


def _message(record: bytes) -> Optional[bytes]:
    """The message ``record`` (one JSON object's line) carries, as the line to read; None where it carries none."""
    fields = {}
    for m in _FIELD.finditer(record):
        fields.setdefault(m.group(1), m.group(2))
    raw = next((fields[k] for k in _FIELDS if k in fields), None)
    if raw is None:
        return None
    text = _string(raw)
    if text is None:
        return None
    if text.endswith("\n"):
        text = text[:-1]
    text = text.rstrip("\r")
    err = _string(fields[b"error"]) if b"error" in fields else None
    if err:
        text = f"{text}: {err}"
    level = fields.get(b"level", fields.get(b"severity"))
    label = _LEVELS.get(level.lower()) if level else None
    if label:
        text = f"{label} {text}"
    return text.encode("utf-8", "replace")  # a lone surrogate escaped in the record ('\\ud800') is no character


def unpack(data: bytes) -> bytes:
    """``data`` (whole lines) with each JSON record's line given as the message it carries (see the module's
    docstring)."""
    if b'{"' not in data and b'{ "' not in data:
        return data
    out = []
    done = 0  # data[:done] is handed on
    for m in _OPEN.finditer(data):
        at = m.start()
        if at < done:
            continue
        start = data.rfind(b"\n", 0, at) + 1
        if data[start:at].strip(b" \t"):
            continue  # a brace inside a line: no record
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        line = data[start:end]
        got = _message(line) if end - start <= MAX_RECORD and _RECORD.fullmatch(line) else None
        if got is not None:
            out += [data[done:start], got]
            done = end
    if not out:
        return data
    out.append(data[done:])
    return b"".join(out)


def _lines_end(buf: bytes) -> int:
    """How many bytes of ``buf`` are whole lines (all of it where one line runs past :data:`MAX_CARRY`)."""
    end = buf.rfind(b"\n") + 1
    return end if end or len(buf) < MAX_CARRY else len(buf)


class Unpacking(Mapped):
    """A binary stream read through :func:`unpack`, a line at a time (a line cut by a read waits for its end)."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(stream, unpack, _lines_end)
