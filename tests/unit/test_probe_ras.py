"""The NCCL RAS query a hung NCCL setting gets on its nodes, before its ranks are killed.

No NCCL runs on this machine, so the RAS service is a stand-in written for these tests: a TCP server that
speaks the client protocol of NCCL's RAS thread (src/ras/client_support.cc: ``TIMEOUT <s>`` answers
``OK``, ``VERBOSE STATUS`` sends the report and closes the connection) and sends a report written for the
tests (``test_nccl_ras.MISMATCH``). The query program, the runner's hook and the log reading are the real
ones.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import uuid

from nccldiag.model.findings import Status
from nccldiag.nccl import parser as nccllog
from nccldiag.nccl import ras_checks
from nccldiag.probe import launch, runner
from nccldiag.transport.nodes import LocalNode
from nccldiag.probe.plan import Setting
from tests.unit.test_nccl_ras import MISMATCH


class StandInRas:
    """A RAS client socket written for these tests: ``answer`` sends ``report``; ``silent`` never answers."""

    def __init__(self, report: str = MISMATCH, mode: str = "answer"):
        self.report, self.mode = report, mode
        self.commands = []
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.addr = f"127.0.0.1:{self.srv.getsockname()[1]}"
        self.stop = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stop.is_set():
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self.client, args=(c,), daemon=True).start()

    def client(self, c):
        buf = b""
        with c:
            c.settimeout(30)
            while True:
                try:
                    data = c.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    cmd = line.decode().strip()
                    self.commands.append(cmd)
                    if self.mode == "silent":
                        continue
                    if cmd.upper().startswith("TIMEOUT "):
                        c.sendall(b"OK\n")
                    elif cmd.upper() in ("STATUS", "VERBOSE STATUS"):
                        c.sendall(self.report.encode())
                        return

    def close(self):
        self.stop.set()
        self.srv.close()


def query(addr, wait=5):
    t0 = time.monotonic()
    r = subprocess.run(["sh", "-c", runner.ras_command(sys.executable, addr, wait)], capture_output=True,
                       text=True, timeout=60)
    return r, time.monotonic() - t0


def test_the_query_sends_the_documented_commands_and_prints_the_report():
    srv = StandInRas()
    try:
        r, _ = query(srv.addr)
    finally:
        srv.close()
    assert r.returncode == 0, r.stderr
    assert srv.commands == ["TIMEOUT 5", "VERBOSE STATUS"]
    assert r.stdout == MISMATCH  # the "OK" of the TIMEOUT command is not part of the report


def test_the_query_without_a_service_says_so_at_once():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    r, elapsed = query(f"127.0.0.1:{port}")
    assert r.returncode == 0 and r.stdout.startswith(runner.RAS_NO_ANSWER + " no RAS service at 127.0.0.1:")
    assert elapsed < 10


def test_the_query_of_a_service_that_never_answers_is_bounded():
    srv = StandInRas(mode="silent")
    try:
        r, elapsed = query(srv.addr, wait=1)
    finally:
        srv.close()
    # the bound is the wait plus 5 s; the margin is for a loaded machine, not a sleep
    assert elapsed < 6 + 10, elapsed
    assert r.stdout.strip() == f"{runner.RAS_NO_ANSWER} no complete answer from {srv.addr} within 6 s"


def test_a_hung_setting_is_asked_before_its_ranks_are_killed_and_the_answer_is_read_with_its_logs():
    srv = StandInRas()
    run_id = f"nccldiag-rastest-{uuid.uuid4().hex[:8]}"
    nodes = [LocalNode("n0"), LocalNode("n1")]
    # each node's "rank" hangs; the hook lists the run's live processes, then queries RAS
    commands = {n.name: f"exec env {launch.RUN_MARK}={run_id} sleep 120" for n in nodes}
    hook = launch.survivors_command(run_id) + "; " + runner.ras_command(sys.executable, srv.addr)
    try:
        t0 = time.monotonic()
        out = runner.run_setting(nodes, commands, Setting("nccl-default"), timeout=2, grace=1, run_id=run_id,
                                 fanout=4, on_timeout=hook)
        elapsed = time.monotonic() - t0
    finally:
        srv.close()
    assert out.timed_out
    assert elapsed < 60, elapsed  # the deadline, the query's bound and the kill; not the 120 s sleep
    # asked while the ranks still ran, then killed
    for n in nodes:
        assert "sleep 120" in out.ras[n.name] and "Job summary" in out.ras[n.name]
    assert out.survivors == {}
    # the first node's answer is read with the setting's logs, once
    assert [k for k in out.logs if k.endswith("ncclras.txt")] == ["n0/ncclras.txt"]
    facts = nccllog.parse_logs(out.logs)
    (rep,) = facts.ras
    assert rep.source == "n0/ncclras.txt" and rep.nccl_version == "2.26.2"
    (f,) = ras_checks.judge(facts.ras)
    assert f.check == "nccl.ras_mismatch" and f.status == Status.WARN


def test_no_query_when_no_node_answers_and_none_for_gloo():
    from nccldiag.probe.session import ras_query

    assert ras_query("gloo", "python3", {}) is None
    assert ras_query("nccl", "python3", {"NCCL_RAS_ENABLE": "0"}) is None
    assert "localhost:28028" in ras_query("nccl", "python3", {})
    assert "127.0.0.1:29999" in ras_query("nccl", "python3", {"NCCL_RAS_ADDR": "127.0.0.1:29999"})
    out = runner.SettingRun(setting=Setting("x"))
    runner.ask_hung([LocalNode("n0")], f"echo '{runner.RAS_NO_ANSWER} no RAS service at localhost:28028'", out, 4)
    assert out.ras["n0"].startswith(runner.RAS_NO_ANSWER) and out.logs == {}


def test_the_nodes_are_asked_a_few_at_a_time_until_one_answers():
    from tests.unit.test_probe_fanout import CountingNode, nodes

    # nodes n0..n9 run the command for real; n0..n4 print no answer, n5 onwards a report (written for this test)
    ns = nodes(10)
    cmd = f'echo "{runner.RAS_NO_ANSWER} no RAS service"'
    out = runner.SettingRun(setting=Setting("x"))

    class Answering(CountingNode):
        def run(self, command, timeout, stdin=None):
            late = int(self.name[1:]) >= 5
            return super().run("printf 'Job summary\\n'" if late else command, timeout, stdin)

    ns = [Answering(n.name) for n in ns]
    runner.ask_hung(ns, cmd, out, fanout=64)
    # batches of 4: n0-n3 (none), n4-n7 (n5 answers): n8 and n9 never asked
    assert sorted(out.ras) == [f"n{i}" for i in range(8)]
    assert list(out.logs) == ["n5/ncclras.txt"] and CountingNode.peak <= runner.RAS_BATCH
    # nobody answers: at most RAS_BATCHES batches are asked
    out = runner.SettingRun(setting=Setting("x"))
    runner.ask_hung([CountingNode(f"m{i}") for i in range(40)], cmd, out, fanout=64)
    assert len(out.ras) == runner.RAS_BATCH * runner.RAS_BATCHES and out.logs == {}
