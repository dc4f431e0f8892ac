"""A log as it is stored (nccldiag/nccl/encoded.py): compressed by logrotate or by hand, or saved in UTF-16 by
Windows PowerShell, read as the text it holds, on real logs and cases.

Each real NCCL log and each real case text, gzip-, bzip2- and xz-compressed, and written as PowerShell 5.1's ``>``
writes it (UTF-16LE with a byte order mark, CRLF line ends), gives ``nccldiag log`` the same report as the text
itself; a compressed file cut short and a Zstandard file are an error naming the file (exit 2), never text.
"""
from __future__ import annotations

import bz2
import functools
import gzip
import io
import json
import lzma

import pytest
from click.testing import CliRunner

from nccldiag.cli.log import log as log_command
from nccldiag.nccl import encoded
from tests import real, realcases
from tests.unit.test_unwrap import TEXTS, _read

STORED = {
    "gz": gzip.compress,
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "ps1.txt": lambda data: b"\xff\xfe" + data.decode("utf-8").replace("\n", "\r\n").encode("utf-16-le"),
}


@functools.lru_cache(maxsize=None)
def _report(path) -> dict:
    r = CliRunner().invoke(log_command, [str(path), "--json", "-"])
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.stdout)
    return {"exit": doc["exit_code"], "diagnoses": [(d["category"], d["severity"]) for d in doc["diagnoses"]],
            "findings": [(f["check"], f["status"]) for f in doc["findings"]]}


# the real NCCL logs, and the case texts collected here (a job's output, a dmesg, a node output pasted)
LOGS = (sorted((real.ROOT / "nccl-logs").glob("*.log")) if real.AVAILABLE else []) + [
    p for p in TEXTS if realcases.IN_REPO in p.parents][:12]


@pytest.mark.parametrize("kind", sorted(STORED))
def test_a_stored_real_log_gives_the_report_of_its_text(kind, tmp_path):
    assert len(LOGS) >= 10
    for i, p in enumerate(LOGS):
        data = p.read_bytes()
        stored = tmp_path / f"{i}-{p.name}.{kind}"
        stored.write_bytes(STORED[kind](data))
        assert _report(stored) == _report(p), (p.name, kind)


@pytest.mark.parametrize("kind", sorted(STORED))
def test_every_real_text_is_read_back_whole(kind):
    """Every real capture and case text, stored, reads back as its bytes (CRLF apart for UTF-16, which the
    readers take as LF), read in pieces as the readers read."""
    for p in TEXTS:
        data = p.read_bytes()
        if kind == "ps1.txt":
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue
        stream = encoded.opened(io.BytesIO(STORED[kind](data)))
        got = b"".join(iter(lambda: stream.read(65536), b""))
        want = data.decode("utf-8").replace("\n", "\r\n").encode("utf-8") if kind == "ps1.txt" else data
        assert got == want.lstrip(b"\xef\xbb\xbf") if kind == "ps1.txt" else got == want, (p.name, kind)


def test_plain_text_is_handed_on_as_it_is():
    for p in TEXTS:
        data = p.read_bytes()
        stream = encoded.opened(io.BytesIO(data))
        assert b"".join(iter(lambda: stream.read(7), b"")) == data, p.name


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz"])
def test_a_compressed_log_cut_short_is_an_error_naming_it(kind, tmp_path):
    data = b"".join(p.read_bytes() for p in LOGS)
    packed = STORED[kind](data)
    cut = tmp_path / f"job.log.{kind}"
    cut.write_bytes(packed[: len(packed) // 2])
    r = CliRunner().invoke(log_command, [str(cut)])
    assert r.exit_code == 2
    assert str(cut) in r.output and "cannot be read whole" in r.output
    assert "Traceback" not in r.output


def test_a_zstandard_log_is_named_with_what_to_do(tmp_path):
    z = tmp_path / "job.log.zst"
    z.write_bytes(encoded.ZSTD + b"\x00" * 32)
    r = CliRunner().invoke(log_command, [str(z)])
    assert r.exit_code == 2 and str(z) in r.output and "zstd -d" in r.output
