"""A line written as a JSON record, read as the message it carries (nccldiag/nccl/records.py), on real texts.

Every real text of the cases and fixtures, stored one JSON record a line as Docker's json-file driver and
``journalctl -o json`` store it (tests/mutations.py), reads back as its lines; the real zap records of gpud read as
their messages; what is no record of a known shape is handed on as it is; the stream gives what the function
gives, in pieces of any size. That each case is still named right once stored so is
tests/unit/test_case_mutations.py's.
"""
from __future__ import annotations

import io

import pytest

from nccldiag.nccl import records, unwrap
from tests import mutations, realcases
from tests.unit.test_unwrap import TEXTS, _read

GPUD = realcases.IN_REPO / "node-gpud906-fabric-manager-check-a10-skipped-a100-active-healthy" / "posted-gpud-output.txt"


@pytest.mark.parametrize("name", ["docker-json", "journal-json"])
def test_real_texts_stored_as_records_read_back_as_their_lines(name):
    tried = 0
    for p in TEXTS:
        text = _read(p)
        lines = text.splitlines()
        if not lines or any("\n" in ln or "\r" in ln for ln in lines):
            continue
        tried += 1
        stored = mutations.TRANSFORMS[name](text).encode("utf-8", "surrogateescape")
        got = records.unpack(stored).decode("utf-8", "surrogateescape")
        assert got == "\n".join(lines) + "\n", (p.name, name)
    assert tried > 300


def test_the_real_zap_records_of_gpud_read_as_their_messages():
    text = GPUD.read_text(encoding="utf-8")
    got = records.unpack(text.encode()).decode().splitlines()
    want = ["checking nvidia fabric manager" if ln.startswith('{"level":"info"') else ln for ln in text.splitlines()]
    assert got == want and text.count('{"level":"info"') == 2


def test_an_error_records_level_and_error_are_read_with_its_message():
    """zap's ``error`` field and an error's level, as a logging library writes them (record written for this
    test in zap's JSON encoder's field names)."""
    line = b'{"level":"error","ts":1.7e9,"caller":"x.go:1","msg":"failed to start plugin","error":"nvml: not found"}\n'
    assert records.unpack(line) == b"ERROR failed to start plugin: nvml: not found\n"
    assert records.unpack(line.replace(b'"error","ts"', b'"fatal","ts"')).startswith(b"FATAL ")
    assert records.unpack(line.replace(b'"error","ts"', b'"info","ts"')) == b"failed to start plugin: nvml: not found\n"


@pytest.mark.parametrize("line", [
    b'{"a": 1, "b": "no message field"}\n',
    b'{"msg": 12}\n',
    b'{"msg": "unterminated}\n',
    b'{"msg": "bad escape \\x"}\n',
    b'{"log": "a record with more after it"} trailing\n',
    b'{"log": "bad \xff byte"}\n',
    b"[" * 800 + b"]" * 800 + b"\n",
    b'{"a":' * 2000 + b'"x"' + b"}" * 2000 + b"\n",
])
def test_what_is_no_record_of_a_known_shape_is_handed_on_as_it_is(line):
    assert records.unpack(line) == line


def test_a_lone_surrogate_is_no_character():
    assert records.unpack(b'{"log": "a\\ud800b"}\n') == b"a?b\n"


def test_a_record_over_the_bound_is_read_as_it_stands():
    line = b'{"msg":"' + b"x" * (records.MAX_RECORD + 1) + b'"}\n'
    assert records.unpack(line) == line


@pytest.mark.parametrize("size", [1, 5, 64, 4096])
def test_the_stream_reads_what_the_function_gives_in_any_pieces(size):
    texts = [mutations.TRANSFORMS[n](_read(p)) for p in TEXTS[:25] for n in ("docker-json", "journal-json")]
    texts.append(GPUD.read_text(encoding="utf-8"))
    for text in texts:
        data = text.encode("utf-8", "surrogateescape")
        stream = records.Unpacking(io.BytesIO(data))
        assert b"".join(iter(lambda: stream.read(size), b"")) == records.unpack(data)


def test_every_reader_reads_the_messages():
    text = '{"log":"NCCL WARN NET/IB : Got async event : port error\\n","stream":"stderr","time":"t"}\n'
    assert unwrap.unwrap(text) == "NCCL WARN NET/IB : Got async event : port error\n"
