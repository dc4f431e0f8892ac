"""A text of megabyte lines goes through every reader in bounded time: ``nccldiag log`` on a file (an NCCL log, a
perftest output), a paste on standard input, ``check --bundle`` with every source of a node holding them, a probe's
run directory read back by ``nccldiag report`` (its NCCL logs, a launcher's stderr and command line), and ``scontrol
show node`` output read by the Slurm client: a node's or a rank's line is untrusted output.

The lines (CONSTRUCTED, written for this test) are the shapes that once made a reader quadratic, each 1 MiB
long: nccl-tests' ``Test `` and a run of digits, a kernel ``AER:`` line of ``0/0``, an NCCL WARN of ``Connect
to`` repeated, of ``NCCL_`` names, of ``ibv_`` calls, of glued NCCL prefixes and a bullet of ``a:``; and a
kernel ``AER:`` line of 128 KiB (the line that kept a 6-node ``check`` busy for 14 minutes).

The perftest output starts with the header of a real ``ib_write_bw`` run (read in place from the fixtures), then
holds megabyte lines of ``BW average[``, of a key and a run of blanks; the probe's launcher ran a command of
``--master-addr=`` repeated; ``scontrol`` (a script written for this test) prints a node of ``a``, of a reason of
``[x@`` stamps, and of a state and a run of blanks, each 1 MiB long.

The bound is on the CPU time of the command (its process and the processes it waited for, measured by the
kernel): :data:`BOUND` seconds, where the readers now take about 2 s for ``log`` and ``report`` and 1 s for
``check --bundle`` on a quiet machine. CPU time is not free of the machine's load: with both hyperthreads of a
core busy (the unit tests over two workers) the same work counted up to 2.5 times as many CPU seconds. Before every expression was made linear, ``nccldiag log`` on this text had
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


def _perftest_text() -> str:
    from tests import real

    head = real.node_text("perftest", "deepops-cx5-roce-ib_write_bw-cpu-freq-warning.txt").splitlines()
    return "\n".join(head[:20] + ["BW average[" * (MIB // 11), "    Device         :" + " " * MIB + "x",
                                   "Test " + "0" * MIB] + head[20:]) + "\n"


def test_nccldiag_log_reads_a_perftest_output_of_megabyte_lines_in_bounded_time(tmp_path):
    path = tmp_path / "ib_write_bw.txt"
    path.write_text(_perftest_text())
    code, out, spent = run(["log", str(path), "--json", "-"])
    assert spent < BOUND, spent
    assert json.loads(out)


def test_nccldiag_report_reads_a_probe_run_of_megabyte_lines_in_bounded_time(tmp_path):
    """A probe whose launcher on n1 exited before any rank reported (its stderr and its command line of megabyte
    lines), with n1's NCCL log of megabyte lines kept in the run directory: the report is rebuilt from it, and says
    the launch failed."""
    from nccldiag import rundir
    from nccldiag.probe import records
    from nccldiag.probe.plan import Setting
    from nccldiag.probe.runner import NodeRun, SettingRun

    d = tmp_path / "run"
    setting = Setting("default")
    keep = records.Writer(rundir.Run("probe", str(d), run_id="nccldiag-test"))
    keep.start(records.ProbeMeta(backend="nccl", launcher="torchrun", hosts=["n1", "n2"], nproc_per_node=1,
                                 timeout=120, settings=[setting]))
    sr = SettingRun(setting=setting, elapsed=1.0,
                    nodes={"n1": NodeRun("n1", rc=1, stderr_tail=text()), "n2": NodeRun("n2", rc=1)},
                    commands={"n1": "torchrun " + "--master-addr=" * (MIB // 14), "n2": "torchrun"},
                    logs={"n1/nccl.log": text()})
    keep.ended(sr)
    keep.close()
    code, out, spent = run(["report", str(d), "--json", "-"])
    assert spent < BOUND, spent
    said = json.dumps(json.loads(out))
    assert code == 1 and "the launcher on n1 exited 1 before any rank reported" in said, said[:2000]


def test_the_slurm_client_reads_scontrol_lines_of_a_megabyte_in_bounded_time(tmp_path):
    """``scontrol show node`` (a script written for this test, first on PATH) prints three nodes of megabyte lines;
    the client reads each, in bounded time."""
    shown = tmp_path / "nodes.txt"
    shown.write_text("NodeName=" + "a" * MIB + "\n"
                     "NodeName=n2 State=DRAIN Reason=" + " [x@" * (MIB // 4) + "\n"
                     "NodeName=n3 State=IDLE" + " " * MIB + "x\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(f"#!/bin/sh\nexec cat {shown}\n")
    scontrol.chmod(0o755)
    code = ("from nccldiag.slurm import client\n"
            "print(' '.join(f'{n.name[:8]}:{n.state[:5]}' for n in client.show_nodes()))\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=f"{bin_dir}:{os.environ.get('PATH', '')}")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, timeout=3600, cwd=str(REPO),
                         text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"scontrol show node: {spent:.1f} s of CPU")
    assert res.returncode == 0, res.stderr[-2000:]
    assert spent < BOUND, spent
    assert res.stdout.split() == ["aaaaaaaa:", "n2:DRAIN", "n3:IDLE"], res.stdout
