"""A text of megabyte lines goes through every reader in bounded time: ``nccldiag log`` on a file, a paste on
standard input, and ``check --bundle`` with every source of a node holding them.

The lines (CONSTRUCTED, written for this test) are the shapes that once made a reader quadratic, each 1 MiB
long: nccl-tests' ``Test `` and a run of digits, a kernel ``AER:`` line of ``0/0``, an NCCL WARN of ``Connect
to`` repeated, of ``NCCL_`` names, of ``ibv_`` calls, of glued NCCL prefixes and a bullet of ``a:``; and a
kernel ``AER:`` line of 128 KiB (the line that kept a 6-node ``check`` busy for 14 minutes).

The bound is on the CPU time of the command (its process and the processes it waited for, measured by the
kernel: the machine's load does not count): :data:`BOUND` seconds, where the readers now take about 3 s for
``log`` and 1 s for ``check --bundle``. Before every expression was made linear, ``nccldiag log`` on this text had
spent 148 s of CPU when it was stopped after 15 minutes, unfinished (a search of the ``Connect to`` line alone cost
0.23 s at 16 KiB and grew with the square of the length; the ``ibv_`` line through the memlock rule took over 2 s
of CPU at 4 KiB and grew faster still): :data:`BOUND` is a tenth of what it had spent, and about five times what
the readers need now.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from nccldiag.areas import all_areas, kind
from tests.unit import bundles

REPO = Path(__file__).resolve().parents[2]
MIB = 1 << 20
BOUND = 15.0  # CPU seconds of one command: a tenth of what the quadratic readers had spent when stopped

LINES = {
    "nccl-tests failure": "Test " + "0" * MIB,
    "kernel AER": "[    1.000000] pcieport AER: " + "0/0" * (MIB // 3),
    "connects": "h:1:2 [0] NCCL WARN " + "Connect to " * (MIB // 11),
    "NCCL names": "h:1:2 [0] NCCL WARN " + "NCCL_" * (MIB // 5),
    "ibv calls": "h:1:2 [0] NCCL WARN Call to ibv_reg_mr failed " + "ibv_" * (MIB // 4),
    "glued prefixes": "h:1:2 [0] NCCL WARN x " * (MIB // 22),
    "bullet": "- " + "a:" * (MIB // 2),
}
AER_128K = ("[ 5.1] pcieport 0000:00:03.1: AER: Multiple Uncorrected (Fatal) error received: 0000:3b:00.0 "
            + "0/0" * 43690)


def text() -> str:
    return "\n".join(list(LINES.values()) + [AER_128K]) + "\n"


def run(args, stdin=None):
    """``nccldiag ARGS``: (exit code, stdout, CPU seconds the command spent)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, "-m", "nccldiag", *args], input=stdin, capture_output=True, env=env,
                         timeout=3600, cwd=str(REPO))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert res.returncode in (0, 1), (res.returncode, res.stderr[-2000:])
    print(f"nccldiag {' '.join(args)}: {spent:.1f} s of CPU")
    return res.returncode, res.stdout, spent


def test_nccldiag_log_reads_megabyte_lines_in_bounded_time(tmp_path):
    path = tmp_path / "long.log"
    path.write_text(text())
    code, out, spent = run(["log", str(path), "--json", "-"])
    assert spent < BOUND, spent
    doc = json.loads(out)
    assert doc and code in (0, 1)


def test_a_paste_of_megabyte_lines_is_read_in_bounded_time():
    code, out, spent = run(["log", "-", "--json", "-"], stdin=text().encode())
    assert spent < BOUND, spent
    assert json.loads(out)


def test_check_bundle_reads_megabyte_lines_in_every_source_in_bounded_time(tmp_path):
    """Every source of every node area holds the 128 KiB AER line and a megabyte line; the kernel log holds them
    all. The AER event is still read (its first 4 KiB say it)."""
    sources = sorted({s.name for a in all_areas() if kind(a) == "node" for s in a.SOURCES})
    node = {name: AER_128K + "\n" + LINES["nccl-tests failure"] + "\n" for name in sources}
    node["kernel_log"] = text() + "nccldiag: kernel log lines 8\n"
    root = bundles.write_bundle(tmp_path / "b", {"n1": node})
    code, out, spent = run(["check", "--bundle", str(root), "--json", "-"])
    assert spent < BOUND, spent
    report = json.loads(out)
    (pcie,) = [f for n in report["nodes"] for f in n["findings"] if f["check"] == "pcie_errors.kernel_log"]
    assert pcie["status"] == "fail" and "0000:00:03.1" in pcie["message"], pcie
