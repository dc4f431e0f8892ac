"""A report document as a JSON reader gets it back (``atomic.plain``): the same as writing it with the compact
encoder and reading the text back, on values of every kind and on the log report of every real NCCL log; and
made plain and cleaned in one walk (``finish.plain_cleaned``), the same as the two walks one after the other."""
from __future__ import annotations

import enum
import json
import math
from pathlib import Path

import pytest

from nccldiag.atomic import plain
from nccldiag.model.findings import clean_text
from nccldiag.report.finish import plain_cleaned
from nccldiag.report import log_report
from nccldiag.sessions import log as session
from tests import real


def round_trip(value):
    return json.loads(json.dumps(value, default=str))


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


class Ratio(float):
    pass


class Table(dict):
    pass


class Row(list):
    pass


VALUES = [
    {"s": "text", "i": 7, "f": 1.5, "neg0": -0.0, "big": 10 ** 30, "b": True, "n": None},
    {"nested": [{"a": (1, 2, [3, (4,)])}, [], {}, ()]},
    {"enum": Level.HIGH, "sub": Name("x"), "ratio": Ratio(0.25), "table": Table(k=1), "row": Row([1, "a"])},
    {1: "int key", "1": "str key after it"},
    {"k": {2.5: "float key", True: "t", None: "null", 3: [Level.HIGH]}},
    {"path": Path("/a/b"), "set": {1}, "error": ValueError("bad")},
    {"nan": math.nan, "inf": -math.inf, "surrogate": "\udc80", "uni": "é\u202e"},
    [Level.HIGH, {Level.HIGH: 1}],
]

# Written for this test: text the cleaning changes (a colour code, a control character, a bidi override, a token
# and a password), as keys and values, in dicts, lists and tuples, and in parts that are not plain.
TEXTS = ["\x1b[31mred\x1b[0m", "bell\x07", "abc\u202edef", "token=hf_" + "a" * 34, "https://u:pw@host/x", "plain"]
CLEANED = [
    {t: t for t in TEXTS},
    {"list": TEXTS, "tuple": tuple(TEXTS), "nested": [{"k": (t, [t])} for t in TEXTS]},
    {"sub": Name(TEXTS[0]), "row": Row(TEXTS), "table": Table({TEXTS[1]: TEXTS[2]}), "path": Path("/a/\x1b[1mb")},
    {1: TEXTS[0], "1": TEXTS[3], "k": {2: TEXTS[4]}},
    {"\x1b[1mkey\x1b[0m": 1, "key": 2},  # two keys that clean to one: the later value, at the first key's place
    TEXTS[0],
    TEXTS,
]


@pytest.mark.parametrize("value", VALUES)
def test_plain_is_the_json_round_trip(value):
    got, want = plain(value), round_trip(value)
    assert json.dumps(got) == json.dumps(want)
    assert _types(got) == _types(want)


def _types(value):
    """The types of every value and key, in order (a list where a tuple was, a str where a subclass was)."""
    if isinstance(value, dict):
        return [(type(k), _types(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value)


@pytest.mark.parametrize("name", real.names(real.NCCL_LOGS, "*.log"))
def test_plain_log_report_of_every_real_nccl_log(name):
    read = session.run([str(real.nccl_log(name))])
    doc = log_report.to_json(read.facts, read.findings, read.diagnoses, True, read.pastes)
    got, want = plain(doc), round_trip(doc)
    assert json.dumps(got) == json.dumps(want)
    assert _types(got) == _types(want)


def test_the_texts_are_ones_the_cleaning_changes():
    assert [t for t in TEXTS if clean_text(t) == t] == ["plain"]


@pytest.mark.parametrize("value", VALUES + CLEANED)
def test_plain_cleaned_is_plain_then_cleaned(value):
    got, want = plain_cleaned(value), clean_text(plain(value))
    assert json.dumps(got) == json.dumps(want)
    assert _types(got) == _types(want)


@pytest.mark.parametrize("name", real.names(real.NCCL_LOGS, "*.log"))
def test_plain_cleaned_log_report_of_every_real_nccl_log(name):
    read = session.run([str(real.nccl_log(name))])
    doc = log_report.to_json(read.facts, read.findings, read.diagnoses, True, read.pastes)
    got, want = plain_cleaned(doc), clean_text(plain(doc))
    assert json.dumps(got) == json.dumps(want)
    assert _types(got) == _types(want)
