"""``nccldiag log FILE...`` through click's CliRunner: table, JSON, exit codes, usage errors."""
import json
from pathlib import Path

import click
from click.testing import CliRunner

from nccldiag.cli.log import log as log_command
from nccldiag.report import schema
from tests import real

GOOD = "net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log"
SOCKET = "socket-fallback-ibext-p2p-ipc-16rank-connection-closed.log"
P2P_SHM = "p2p-direct-pointer-and-shm-8gpu-single-process.log"
WATCHDOG = "watchdog-timeout-interleaved-with-p2p-ipc-and-ibext-gdrdma.log"


def run(*args, input=None):
    return CliRunner().invoke(log_command, [str(a) for a in args], input=input)


def test_is_a_click_command_named_log():
    assert isinstance(log_command, click.Command) and log_command.name == "log"


def test_table_for_a_healthy_log_exits_0():
    r = run(real.nccl_log(GOOD), "--color", "never")
    assert r.exit_code == 0, r.output
    out = r.output
    assert "transports by rank pair" in out
    assert "node-a -> node-b" in out and "NET/IB+GDRDMA" in out and "P2P/CUMEM" in out
    assert "nccl.gdrdma" in out and "no failure" in out
    assert "node-b:4015540" in out  # the process table


def test_failure_in_logs_exits_1_with_fix():
    r = run(real.nccl_log(WATCHDOG), "--color", "never")
    assert r.exit_code == 1
    assert "FAIL" in r.output and "Watchdog timeout in ALLREDUCE" in r.output
    assert "fix:" in r.output and "1 failure(s)" in r.output


def test_require_ib_turns_socket_fallback_into_failure():
    # The same fixture shows proxy/connection failures, so compare the network finding itself.
    plain = json.loads(run(real.nccl_log(SOCKET), "--json", "-").stdout)
    strict = json.loads(run(real.nccl_log(SOCKET), "--json", "-", "--require-ib").stdout)
    net = lambda d: next(f for f in d["findings"] if f["check"] == "nccl.network")  # noqa: E731
    assert net(plain)["status"] == "warn" and net(strict)["status"] == "fail"


def test_json_to_stdout_only():
    r = run(real.nccl_log(P2P_SHM), "--json", "-")
    assert r.exit_code == 0
    data = json.loads(r.stdout)  # nothing but JSON on stdout
    assert data["schema"] == "nccldiag.log/1"
    assert data["files"] == [str(real.nccl_log(P2P_SHM))]
    assert data["exit_code"] == 0
    assert data["summary"]["transports"] == ["P2P", "SHM"]
    pairs = {p["key"]: p for p in data["summary"]["pairs"]}
    assert pairs["7->6"]["vias"] == ["P2P/direct pointer"]
    assert "channels" not in data["facts"] and data["facts"]["channel_lines"] == 30
    assert [f["check"] for f in data["findings"]] == ["nccl.transports"]


def test_json_with_channels_and_warn_results(tmp_path):
    out = tmp_path / "r.json"
    r = run(real.nccl_log("duplicate-gpu-detected-mpirun-tag-output.log"), "--json", out, "--channels", "--color", "never")
    assert r.exit_code == 1
    assert "nccl.duplicate_gpu" in r.output  # the table is still printed
    data = json.loads(out.read_text())
    assert data["exit_code"] == 1
    w = data["facts"]["warns"][0]
    assert w["result_name"] == "ncclInvalidUsage" and w["file"] == "init.cc" and w["line"] == 497
    assert w["at"]["host"] == "node-a" and [s["code"] for s in w["chain"]] == [5, 5, 5]
    assert data["facts"]["channels"] == []


def test_several_files_are_one_job():
    r = run(real.nccl_log(GOOD), real.nccl_log(P2P_SHM), "--json", "-")
    data = json.loads(r.stdout)
    assert data["files"] == [str(real.nccl_log(GOOD)), str(real.nccl_log(P2P_SHM))]
    assert data["summary"]["hosts"] == ["node-a", "node-b"]


def test_stdin():
    r = run("-", "--json", "-", input=real.nccl_log(WATCHDOG).read_text())
    assert r.exit_code == 1
    assert json.loads(r.stdout)["files"] == ["<stdin>"]


def test_expect_env():
    r = run(real.nccl_log("socket-2node-shm-extend-failure-and-connect-abort-nccltests.log"), "--json", "-",
            "--expect", "NCCL_DMABUF_ENABLE=1")
    env = next(f for f in json.loads(r.stdout)["findings"] if f["check"] == "nccl.env")
    assert env["status"] == "fail" and env["expected"] == {"NCCL_DMABUF_ENABLE": "1"}


def test_missing_file_exits_2_naming_it(tmp_path):
    missing = tmp_path / "nccl.node1.123.log"
    r = run(real.nccl_log(GOOD), missing)
    assert r.exit_code == 2
    assert str(missing) in r.stderr and "No such file" in r.stderr
    assert "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)


def test_empty_directory_exits_2(tmp_path):
    r = run(tmp_path)
    assert r.exit_code == 2 and str(tmp_path) in r.stderr and "directory" in r.stderr


def _per_rank(tmp_path):
    # The real logs as a job's per-rank files (copied into pytest's temporary directory, not the repository).
    d = tmp_path / "ranks"
    d.mkdir()
    originals = sorted(real.nccl_log().glob("*.log"))
    for p in originals:
        (d / p.name).write_bytes(p.read_bytes())
    (d / ".hidden").write_text("not a log\n")
    return d, originals


def test_a_directory_of_per_rank_files_is_read_in_parallel_as_one_job(tmp_path):
    d, originals = _per_rank(tmp_path)
    one = run(*originals, "--json", "-", "--workers", "1")
    expected = json.loads(one.stdout.replace(str(real.nccl_log()) + "/", ""))
    expected.pop("generated_at", None)
    for args in ([d], [str(d / "*.log")], [d, "--workers", "2"]):
        r = run(*args, "--json", "-")
        assert r.exit_code == one.exit_code
        data = json.loads(r.stdout.replace(str(d) + "/", ""))
        data.pop("generated_at", None)
        assert data == expected


def test_a_pattern_matching_nothing_exits_2(tmp_path):
    r = run(str(tmp_path / "nccl.*.log"))
    assert r.exit_code == 2 and "no file matches" in r.stderr


def test_unreadable_json_path_exits_2(tmp_path):
    r = run(real.nccl_log(GOOD), "--json", tmp_path / "no" / "such" / "dir" / "r.json")
    assert r.exit_code == 2 and "does not exist" in r.stderr  # refused before any file is read


def test_bad_expect_and_no_files_exit_2():
    assert run(real.nccl_log(GOOD), "--expect", "NCCL_IB_DISABLE").exit_code == 2
    r = run()
    assert r.exit_code == 2 and "FILE" in r.output


def test_log_without_nccl_lines_says_so(tmp_path):
    p = tmp_path / "empty.log"
    p.write_text("hello\nworld\n")
    r = run(p, "--color", "never")
    assert r.exit_code == 0 and "NCCL_DEBUG=INFO" in r.output


def test_a_node_output_pasted_alone_is_not_asked_for_nccl_debug():
    """A real 'nvidia-smi topo -p2p r' given alone is a node's output, not a job run without NCCL_DEBUG: the summary
    says its outputs were judged, and neither the table nor the JSON run asks for NCCL_DEBUG=INFO."""
    node = real.node("nvidia-smi-topo-p2p", "mleng-2x-l4-p2p-r-cns.txt")
    r = run(node, "--color", "never")
    assert r.exit_code == 0 and "NCCL_DEBUG" not in r.output, r.output
    assert "no NCCL lines: the text holds node outputs, judged above" in r.output
    r = run(node, "--json", "-")
    assert r.exit_code == 0 and "NCCL_DEBUG" not in r.output


def test_nccl_tests_device_list_gives_ranks_and_hosts():
    # Real: an nccl-tests output posted in two parts, its '# Using devices' list in the first, no NCCL lines.
    from tests import realcases

    case = realcases.CASES / "gpu-nccltests119-3x8-a100-hdr-allreduce-healthy-maintainer-ok"
    if not case.is_dir():
        import pytest

        pytest.skip(real.REASON)
    r = run(*sorted(case.glob("*.log")), "--color", "never")
    assert r.exit_code == 0, r.output
    assert "4 rank(s) on 1 host(s) (nccl-tests' device list)" in " ".join(r.output.split())
    assert "0 process(es)" not in r.output


def test_an_ibstat_given_beside_the_log_is_read_and_a_polling_port_is_never_silent():
    ibstat = real.node("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    failed = json.loads(run(real.nccl_log(WATCHDOG), ibstat, "--json", "-").stdout)
    alarms = [d for d in failed["diagnoses"] if d["severity"] in ("fail", "warn")]
    assert alarms[0]["category"] == "ib_port_down" and "mlx5_11" in json.dumps(alarms[0]["evidence"])
    # beside a run that worked the port is no cause of the run's, but a failure of the node shown: named all the same
    r = run(real.nccl_log(GOOD), ibstat, "--json", "-")
    assert r.exit_code == 1
    alarms = [d for d in json.loads(r.stdout)["diagnoses"] if d["severity"] in ("fail", "warn")]
    assert alarms and alarms[0]["category"] == "unexplained" and "mlx5_11" in alarms[0]["summary"]


def test_outputs_pasted_in_files_read_in_parallel_are_those_read_in_one_process():
    ibstat = real.node("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    docs = []
    for workers in ("1", "2"):
        r = run(real.nccl_log(WATCHDOG), real.nccl_log(GOOD), ibstat, "--json", "-", "--workers", workers)
        doc = json.loads(r.stdout)
        doc.pop("generated_at", None)
        docs.append((r.exit_code, doc))
    assert docs[0] == docs[1]
    assert docs[0][1]["diagnoses"][0]["category"] == "ib_port_down"


def _log_cli(*args):
    import os
    import subprocess
    import sys

    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "NO_COLOR": "1", "COLUMNS": "250"}
    return subprocess.run([sys.executable, "-m", "nccldiag", "log", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env)


def test_a_directory_someone_else_prepared_leads_to_no_file_outside_it_and_never_blocks(tmp_path):
    """A log directory holding a real log, a link inside it, and (written for this test) a FIFO, a link to a file
    outside holding an NCCL failure, a link to /proc/kmsg (whose read waits for the kernel's next message) and a
    link to /dev/zero: the log and the link inside are read, every other entry is named and none read."""
    import os
    from pathlib import Path

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.log").write_bytes(real.nccl_log(GOOD).read_bytes())
    (logs / "b.log").symlink_to("a.log")
    outside = tmp_path / "outside.log"
    outside.write_text(Path(real.nccl_log(WATCHDOG)).read_text())
    (logs / "c.log").symlink_to(outside)
    (logs / "d.log").symlink_to("/proc/kmsg")
    (logs / "e.log").symlink_to("/dev/zero")
    os.mkfifo(logs / "f.log")
    r = _log_cli(logs, "--json", tmp_path / "r.json", "--color", "never")
    assert r.returncode == 0, r.stdout + r.stderr  # the outside log's watchdog failure was not read
    doc = json.loads((tmp_path / "r.json").read_text())
    schema.check(doc)
    assert doc["files"] == [str(logs / "a.log"), str(logs / "b.log")]
    (skip,) = [f for f in doc["findings"] if f["check"] == "nccl.file_skipped"]
    assert skip["status"] == "warn" and "4 entries" in skip["message"]
    said = "\n".join(skip["evidence"])
    for name, why in (("c.log", f"a symbolic link out of {logs} (to {outside})"), ("d.log", "(to /proc/kmsg)"),
                      ("e.log", "(to /dev/zero)"), ("f.log", "not a regular file (a FIFO)")):
        assert f"{logs / name}: " in said and why in said, said
    assert "nccl.file_skipped" in r.stdout and "Watchdog" not in r.stdout


def test_a_directory_of_nothing_but_links_out_says_what_it_left(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "x.log").symlink_to("/etc/hostname")
    r = _log_cli(logs)
    assert r.returncode == 2 and "holds no regular file" in r.stderr and "x.log: a symbolic link out of" in r.stderr


def test_a_named_pipe_given_by_itself_is_read_once_its_writer_writes(tmp_path):
    """A named pipe whose writer is waiting for a reader: the path is judged without opening it. Opened and
    closed to look at it, the writer would be let go into a pipe with no reader (its text lost to SIGPIPE) and the
    read after it would wait for a writer that is gone, until the test's bound."""
    import os
    import threading
    from pathlib import Path

    fifo = tmp_path / "job.log"
    os.mkfifo(fifo)
    text = Path(real.nccl_log(WATCHDOG)).read_bytes()
    wrote = []

    def writer():
        try:
            with open(fifo, "wb") as fh:  # waits for the reader
                fh.write(text)
            wrote.append(True)
        except BrokenPipeError:
            wrote.append(False)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        r = _log_cli(fifo, "--color", "never")
    finally:
        if t.is_alive():  # release a writer still waiting, whatever the outcome
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            t.join(30)
            os.close(fd)
    t.join(30)
    assert wrote == [True]
    assert r.returncode == 1 and "Watchdog timeout in ALLREDUCE" in r.stdout, r.stdout + r.stderr


def test_the_collector_is_as_it_was_after_the_command(tmp_path):
    # the command makes Python's cyclic collector run less often while it reads; a program that runs it (a test
    # runner, a notebook) gets its collector back as it was, whether the command succeeded, failed or was misused
    import gc

    before = gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()
    for path, code in ((real.nccl_log(GOOD), 0), (tmp_path / "missing.log", 2)):
        res = run(path, "--json", tmp_path / "out.json")
        assert res.exit_code == code, res.output
        assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before


def test_a_node_output_no_check_judges_is_nothing_to_judge_not_an_all_clear():
    """A real 'nvidia-smi dmon' table given alone is read and shown, and no area judges it: the verdict says nothing
    was judged (never 'nothing broken'), and the summary names the output no check reads."""
    case = "gpu-gaps78a-alengr-blog-sglang-tp2-2x-dgx-spark-cuda-graph-capture-hang-dmon-sm96-mem0"
    path = Path(__file__).resolve().parents[1] / "cases" / case / "posted-nvidia-smi-dmon.txt"
    r = run(path, "--color", "never")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("Verdict: nothing to judge"), r.output[:300]
    assert "nothing broken" not in r.output
    assert "node outputs no check judges (nvidia-smi dmon)" in r.output


def test_nvbandwidths_waived_peer_test_fails_where_it_lists_two_gpus_and_says_nothing_where_it_lists_one(tmp_path):
    """nvbandwidth waives its GPU-to-GPU tests where no two GPUs have peer access, and on a node with one GPU
    (nvbandwidth.cpp, Testcase::filterHasAccessiblePeerPairs): the real run of NVIDIA/nvbandwidth#13 (two RTX 2080 Ti,
    'Device 0: ...', 'Device 1: ...') fails on GPUs without peer access; the same run with its device list cut to its
    first line (a node with one GPU) names no cause and has no failure line left."""
    case = "gpu-gaps82a-nvbandwidth13-2x-rtx2080ti-d2d-write-ce-waived-p2p-mapping-unsupported"
    text = (Path(__file__).resolve().parents[1] / "cases" / case / "nvbandwidth.txt").read_text()
    two = tmp_path / "nvbandwidth.txt"
    two.write_text(text)
    r = run(two, "--json", "-")
    assert r.exit_code == 1, r.output
    fails = [d for d in json.loads(r.stdout)["diagnoses"] if d["severity"] == "fail"]
    assert fails and fails[0]["category"] == "p2p_unsupported_gpu", fails
    second = next(line for line in text.splitlines(keepends=True) if line.startswith("Device 1: "))
    one = tmp_path / "nvbandwidth-one-gpu.txt"
    one.write_text(text.replace(second, ""))
    r = run(one, "--json", "-")
    assert r.exit_code == 0, r.output
    assert not [d for d in json.loads(r.stdout)["diagnoses"] if d["severity"] in ("fail", "warn")], r.output
