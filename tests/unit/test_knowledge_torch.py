"""PyTorch distributed's failure messages (nccldiag/knowledge/torch.toml) and their reader (diagnosis/torchmsg.py).

Every row is held to its own text as the source writes it, placeholders filled, behind the launchers' prefixes and
through the log reader; every pattern is linear by construction (the rules of knowledge/lexicon.toml); a row that
claims ``seen`` reads a line of that real case or capture (read in place); a victim's message never makes an event
and never outranks a cause beside it; healthy real inputs (the healthy cases of tests/cases and
../shared/fixtures/cases, the healthy logs of ../shared/fixtures/nccl-logs) make no event of the table.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from nccldiag import knowledge
from nccldiag.knowledge import lexicon
from nccldiag.diagnosis import Inputs, categories, diagnose, rules
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis import torchmsg
from nccldiag.nccl import parser as nccllog
from nccldiag.nccl.unwrap import unwrap
from tests import real, realcases
from tests.unit.test_lexicon import HEALTHY_LOGS, _repeats

if sys.version_info >= (3, 11):
    from re import _parser as sre_parse
else:  # pragma: no cover
    import sre_parse

REPO = Path(__file__).resolve().parents[2]
ROWS = knowledge.rows(torchmsg.TABLE)
IDS = [r["id"] for r in ROWS]
KEYS = ("id", "text", "file", "version", "pattern", "words", "category", "victim", "severity", "confidence", "why",
        "fix")
PREFIXES = ("", "[rank3]:", "[rank3]: ", "[default0]:", "0: ", "[1,3]<stderr>:", "node7: ")

# The values a placeholder ({}) of a row's text takes where a plain number does not fit the message as printed.
FILL = {
    "store-connect-timeout": ["600000ms", "10.1.2.3", "29500"],
    "store-connect-retry": ["[node1]:29500", "(errno: 110 - Connection timed out)"],
    "store-connect-port-zero": ["localhost", "0"],
    "store-bind-failed": ["[::]:29500", "(errno: 98 - Address already in use)"],
    "gloo-closed-by-peer": ["[10.0.0.2]:58054"],
    "gloo-pair-connect": ["[10.0.0.2]:1927", "Connection refused"],
    "gloo-read-error": ["[10.0.0.2]:58054", "Connection reset by peer"],
    "gloo-connect-full-mesh": ["[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error"],
    "gloo-iface-not-found": ["../third_party/gloo/gloo/transport/tcp/device.cc:83", "eth0"],
    "elastic-signal": ["9", "SIGKILL", "1234"],
    "store-host-not-found": ["Name or service not known"],
    "mp-process-exited": ["1", "SIGKILL", "0", "1"],
    "dataloader-workers-exited": ["12345, 12346"],
    "nccl-unique-id-store-get": ["3", "0", "0", "Socket Timeout"],
    "store-one-client-joined": ["3601", "1", "16"],
    "store-barrier-more-workers-than-world": ["2", "store_based_barrier_key:1", "2", "3", "0:30:00"] * 2,
}


def filled(row) -> str:
    """The row's text with its placeholders filled as a program prints them (written for this test)."""
    values = iter(FILL.get(row["id"], []))
    return re.sub(r"\{\}", lambda m: next(values, "7"), row["text"])


def log_inputs(name: str, text: str) -> Inputs:
    return Inputs(logs=nccllog.parse_logs([(name, text)]))


def _tier1_categories():
    return {r["category"] for r in rules.rows() if int(r.get("tier", 0)) >= 1}


# ---------------------------------------------------------------- the table


def test_every_row_is_complete_and_names_what_exists():
    assert len(set(IDS)) == len(IDS)
    named = {r["category"] for r in rules.rows()}
    for r in ROWS:
        assert all(k in r for k in KEYS), (r["id"], [k for k in KEYS if k not in r])
        assert r["severity"] in ("fail", "warn") and r["confidence"] in ("high", "medium"), r["id"]
        assert isinstance(r["victim"], bool) and r["words"], r["id"]
        versions = r["version"] if isinstance(r["version"], list) else [r["version"]]
        assert versions and all(re.fullmatch(r"[0-9a-f]{40}(?: \([\w/.]+\))?|excerpt|v\d+\.\d+\.\d+ \([0-9a-f]{40}\)", v)
                                for v in versions), r["id"]
        assert r["file"].split(" ")[0].count("/") >= 1, r["id"]
        c = r["category"]
        assert c == torchmsg.NONE or categories.known(c) or c.startswith("other:"), r["id"]
        # a category the catalog names is read by a cause with events (or by node-event, when none names it)
        if torchmsg.names_cause(r) and c in named:
            assert any(x["category"] == c and x.get("events") for x in rules.rows()), r["id"]


def test_a_victim_points_at_no_cause_of_its_own():
    """A victim's row names no category, or the category of a victim's cause (tier 1: remote-peer, hang), and makes
    no event."""
    for r in ROWS:
        if r["victim"]:
            assert r["category"] in _tier1_categories() | {torchmsg.NONE}, r["id"]
            assert not torchmsg.names_cause(r), r["id"]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_every_pattern_is_linear_by_construction(row):
    unbounded, nested = _repeats(sre_parse.parse(row["pattern"]))
    assert not nested and unbounded <= 1, row["id"]


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_every_row_reads_its_own_text_behind_any_prefix(row):
    text = filled(row)
    assert any(w in text for w in row["words"]), row["id"]
    for prefix in PREFIXES:
        assert torchmsg.row_of(prefix + text)["id"] == row["id"], (row["id"], prefix)
    for part in text.split(" / "):  # a row of two texts (c10d's wrapper / NCCL's detail) reads each
        assert torchmsg.row_of(part)["id"] == row["id"], (row["id"], part)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_log_reader_keeps_every_rows_line_for_the_table(row):
    parts = filled(row).split(" / ")  # a row of two texts: two lines
    inp = log_inputs("rank3.log", "step 10 loss 2.31\n" + "".join(f"[default3]:{p}\n" for p in parts) + "step 11\n")
    kept = [c for c in C.find(inp, re.compile(r"\S"), torchmsg.KINDS) if torchmsg.row_of(c.text) is not None]
    # every line of the row is kept (the reader may keep an NCCL error's message apart from its line as well)
    assert {c.at.lineno for c in kept} == set(range(2, 2 + len(parts))), row["id"]
    assert {torchmsg.row_of(c.text)["id"] for c in kept} == {row["id"]}, row["id"]
    ev = [e for e in E.events(inp) if e.check.startswith("torch.")]
    if torchmsg.names_cause(row):
        assert ev and {(e.category, e.check) for e in ev} == {(row["category"], "torch." + row["id"])}
        assert ev[0].what.endswith(" on local rank 3") and ev[0].where.startswith("torch.toml:")
    else:
        assert ev == []


def test_a_count_a_row_reads_above_another_is_read_only_where_it_is():
    """The store-based barrier's line: more workers checked in than the world size is a row's; fewer (ranks still
    starting, a wait that ends) is no row's while waiting, and the timeout's own row where it timed out."""
    wait = "Waiting in store based barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
    assert torchmsg.row_of(wait + "(world_size=2, worker_count=3, timeout=0:30:00)")["id"] == (
        "store-barrier-more-workers-than-world")
    assert torchmsg.row_of(wait + "(world_size=16, num_workers_joined=9, timeout=0:30:00)") is None
    timed_out = ("Timed out initializing process group in store based barrier on rank: 7, for key: "
                 "store_based_barrier_key:1 (world_size=2048, worker_count=1792, timeout=0:30:00)")
    assert torchmsg.row_of(timed_out)["id"] == "store-based-barrier"


def test_a_line_of_no_family_is_read_by_no_row():
    for text in ("step 10 loss 2.31", "RuntimeError: CUDA error: out of memory", "NCCL INFO Bootstrap : Using eth0",
                 "Connection closed by remote peer node2<45074>", "The client socket has connected to [::1]:29500"):
        assert torchmsg.row_of(text) is None, text


# ---------------------------------------------------------------- real lines


def _case_dir(seen: str) -> Path:
    for root in (realcases.IN_REPO, realcases.CASES):
        if (root / seen).is_dir():
            return root / seen
    return (REPO / seen).resolve()


def _seen_lines(seen: str):
    where = _case_dir(seen)
    if not real.AVAILABLE and ("shared" in str(where) or not where.exists()):
        pytest.skip(real.REASON)  # a case of ../shared/fixtures/cases, which a plain clone has not
    if where.is_file():
        return unwrap(where.read_text(encoding="utf-8", errors="replace")).splitlines()
    meta = json.loads((where / "case.json").read_text())
    # as the log reader reads them: a text a page broke at its blanks is joined again (nccldiag/nccl/unwrap.py)
    return [line for f in meta["files"]
            for line in unwrap((where / f).read_text(encoding="utf-8", errors="replace")).splitlines()]


SEEN = [r for r in ROWS if r.get("seen")]


def test_rows_are_seen_in_real_outputs():
    assert len(SEEN) >= 3


@pytest.mark.parametrize("row", SEEN, ids=[r["id"] for r in SEEN])
def test_every_row_that_claims_seen_reads_a_line_there(row):
    lines = [line for line in _seen_lines(row["seen"]) if (torchmsg.row_of(line) or {}).get("id") == row["id"]]
    assert lines, (row["id"], row["seen"])


def _real_lines():
    """Every line of the real cases (tests/cases, ../shared/fixtures/cases) and of ../shared/fixtures/nccl-logs."""
    out = []
    for root in (realcases.IN_REPO, realcases.CASES):
        for case in (realcases.cases(root) if root.is_dir() else []):
            if not case.bundle:
                out += _seen_lines(str(case.path))
    if real.AVAILABLE:
        for path in sorted(real.NCCL_LOGS.glob("*.log")):
            out += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return out


def test_the_rows_on_every_real_line_at_hand():
    """Each real line a row reads holds a word of that row (the log reader keeps it), and the rows read there are at
    least those that claim a real line."""
    read = {}
    for line in _real_lines():
        row = torchmsg.row_of(line)
        if row is not None:
            assert any(w in line for w in row["words"]), (row["id"], line)
            read.setdefault(row["id"], line)
    assert {r["id"] for r in SEEN} <= set(read), sorted(set(r["id"] for r in SEEN) - set(read))


def _healthy_cases():
    out = []
    for root in (realcases.IN_REPO, realcases.CASES):
        if root.is_dir():
            out += [c for c in realcases.cases(root) if c.healthy and not c.bundle]
    return out


HEALTHY = _healthy_cases()


@pytest.mark.parametrize("case", HEALTHY, ids=[c.id for c in HEALTHY])
def test_a_healthy_case_makes_no_event_of_the_table(case):
    inp = Inputs(logs=nccllog.parse_logs([(f, (case.path / f).read_text(encoding="utf-8", errors="replace"))
                                           for f in case.meta["files"]]))
    assert torchmsg.found(inp) == []


@pytest.mark.parametrize("name", HEALTHY_LOGS)
def test_a_healthy_nccl_log_makes_no_event_of_the_table(name):
    real.require()
    inp = log_inputs(name, real.nccl_log(name).read_text(encoding="utf-8", errors="replace"))
    assert torchmsg.found(inp) == []


def test_the_healthy_inputs_are_there_to_be_read():
    assert len([c for c in HEALTHY if c.path.is_relative_to(realcases.IN_REPO)]) >= 3


# ---------------------------------------------------------------- a log in which only torch speaks
# The logs below are written for these tests, line by line in the shape PyTorch prints each message (the texts of
# knowledge/torch.toml, placeholders filled): no real capture of them is at hand.


def _failing(inp):
    return [d for d in diagnose(inp) if d.severity in ("fail", "warn")]


def test_a_store_that_could_not_listen_is_the_rendezvous():
    text = ("[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already"
            " in use).\n"
            "[E socket.cpp:472] [c10d] The server socket has failed to listen on any local network address.\n"
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address."
            " port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use\n")
    top = _failing(log_inputs("torchrun.log", text))[0]
    assert (top.id, top.category) == ("rendezvous", "rendezvous_unreachable")


def test_a_store_read_that_found_the_connection_closed_is_the_stores_host_gone_not_the_rendezvous():
    """Utils.hpp's recvBytes raises 'Failed to recv, got 0 bytes' (lower case before pytorch/pytorch#153586) once the
    store was reached and its host closed the connection: a victim's line, not an address nobody reaches. c10d's
    warning of the same read ('[W...] TCPStore.cpp] ... recvValue failed', the PR's own test plan) is what healthy runs
    print at their end, and stays quiet alone."""
    for text in ("[rank3]: torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely "
                 "closed. Did the remote server shutdown or crash?\n",
                 "torch.distributed.DistNetworkError: failed to recv, got 0 bytes\n"):
        top = _failing(log_inputs("train.log", text))[0]
        assert (top.id, top.category) == ("remote-peer", "remote_peer_failure"), text
    warning = ("[W514 18:33:36.536327028 TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=3, "
               "addr=[localhost]:34658, remote=[localhost]:1234): Failed to recv, got 0 bytes. Connection was likely "
               "closed. Did the remote server shutdown or crash?\n")
    assert _failing(log_inputs("train.log", warning)) == []


def test_a_store_write_that_found_the_pipe_broken_is_the_stores_host_gone_not_the_rendezvous():
    """TCPStore.cpp's client warns 'sendBytes failed on SocketImpl(...): Broken pipe' when it writes to a store that
    was reached and whose host has gone since (kvcache-ai/Mooncake#936, MiniMax-AI/MiniMax-M1#14, beside
    ProcessGroupNCCL's 'should dump' poll): a victim's line, as recvValue's, not an address nobody reaches."""
    for text in ("[rank1]:[W203 17:41:16.244826354 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=111, "
                 "addr=[localhost]:20978, remote=[localhost]:29500): Broken pipe\n",
                 "[rank7]:[W624 12:52:08.296327263 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=97, "
                 "addr=[openmatrix-minimax-m1-80k-prod-hzh20-custom-serving-58c98cpwxbz]:50828, remote=[openmatrix-"
                 "minimax-m1-80k-prod-hzh20-custom-serving-58c98cpwxbz]:45903): Broken pipe\n"):
        got = [(d.id, d.category) for d in _failing(log_inputs("train.log", text))]
        assert got == [("remote-peer", "remote_peer_failure")], (got, text)


def test_a_store_connection_retried_is_not_the_rendezvous_and_its_timeout_is():
    """TCPStore.cpp retries a client whose connection the store's host reset before validating it ('TCP client
    failed to connect/validate to host {}:{} - retrying (try={}, timeout={}ms, delay={}ms): {}', TheTom/vllm-swift#9)
    and fails only with its '- timed out' form (tests/cases/net-gaps68d-sirzzang-blog-eks-sg-rules-removed-tcpstore-
    client-socket-timed-out-29500)."""
    retry = ("[W426 16:56:01.831041000 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate to host "
             "100.64.0.1:59782 - retrying (try=6, timeout=1800000ms, delay=5241ms): Connection reset by peer\n")
    assert _failing(log_inputs("train.log", retry)) == []
    timed_out = ("[E419 13:27:42.317323202 TCPStore.cpp:390] [c10d] TCP client failed to connect/validate to host "
                 "nccl-master:29500 - timed out (try=0, timeout=120000ms): The client socket has timed out after "
                 "120000ms while trying to connect to (nccl-master, 29500).\n")
    top = _failing(log_inputs("train.log", timed_out))[0]
    assert (top.id, top.category) == ("rendezvous", "rendezvous_unreachable")


def test_a_store_client_retrying_port_zero_is_the_rendezvous_and_a_real_port_stays_quiet():
    """socket.cpp's SocketConnectOp::run logs 'No socket on ({}, {}) is listening yet, will retry.' while it retries
    (pytorch/pytorch 8cf1b8e3). At port 0 no store can ever listen: NVIDIA-NeMo/Run#292's workers, given the endpoint
    localhost:0, retried until their timeout. With a real port it is a store not up yet, which working runs print."""
    real_line = ("[default7]:[I715 22:47:11.296780083 socket.cpp:872] [c10d] No socket on (localhost, 0) is listening "
                 "yet, will retry.\n")
    top = _failing(log_inputs("train.log", real_line))[0]
    assert (top.id, top.category) == ("rendezvous", "rendezvous_unreachable")
    for quiet in ("[default7]:[I715 22:47:11.296780083 socket.cpp:872] [c10d] No socket on (localhost, 29500) is "
                  "listening yet, will retry.\n",
                  "[I715 22:47:11.296780083 socket.cpp:872] [c10d] No socket on (node-0, 20) is listening yet, will "
                  "retry.\n"):
        assert _failing(log_inputs("train.log", quiet)) == [], quiet


def test_torchruns_death_signal_alone_is_the_launcher_signalled():
    """PrimeIntellect-ai/prime-rl#1360 and MCG-NJU/RTD-Action#31: the agent's warning alone, as torch 2.x's logger and
    torch 1.x's print it (Ctrl-C is signal 2); the workers it then stops ('Sending process <pid> closing signal
    SIGTERM') are a launcher's failure line, which the cause explains."""
    for text in ("W1130 12:13:49.388000 124326 torch/distributed/elastic/agent/server/api.py:723] Received 15 death "
                 "signal, shutting down workers\n"
                 "W1130 12:13:49.389000 124326 torch/distributed/elastic/multiprocessing/api.py:900] Sending process "
                 "124533 closing signal SIGTERM\n",
                 "WARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, shutting down workers\n"):
        got = _failing(log_inputs("train.log", text))
        assert [(d.category, d.severity) for d in got] == [("other:launcher-signalled", "fail")], text


def test_the_elastic_agents_routine_lines_stay_quiet():
    """What torchrun prints in every run, working or not (pytorch/pytorch#107021, ymcui/Chinese-LLaMA-Alpaca-2#274,
    kubeflow/trainer#1504, pytorch/pytorch#132950 and #147064), makes no diagnosis and no line of the lexicon."""
    lines = [
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being "
        "overloaded, please further tune the variable for optimal performance in your application as needed. ",
        "master_addr is only used for static rdzv_backend and when rdzv_endpoint is not specified.",
        "WARNING:torch.distributed.launcher.api:config has no run_id, generated a random run_id: "
        "174580650467654300307713793029077439978",
        "[INFO] 2021-12-08 12:28:26,099 c10d_rendezvous_backend: Process 8 hosts the TCP store for the C10d rendezvous"
        " backend.",
        "[INFO] 2021-12-08 12:28:26,101 api: [default] Rendezvous'ing worker group",
        "I0807 20:59:57.533000 139762139563840 torch/distributed/launcher/api.py:189] Starting elastic_operator with "
        "launch configs:",
        "I0213 12:07:20.086000 870572 torch/distributed/elastic/agent/server/api.py:699] [default] Stopping worker "
        "group",
    ]
    for line in lines:
        assert lexicon.shape_of(line) is None, line
    assert _failing(log_inputs("train.log", "\n".join(lines) + "\n")) == []


def test_ranks_the_monitored_barrier_names_are_the_stragglers_and_one_that_exited_is_a_peer_gone():
    """PyTorch's distributed documentation (docs/source/distributed.rst, monitored_barrier): rank 0's error when rank 1
    did not reach the barrier; here rank 1 had exited, so the 'Original exception' says the connection was closed."""
    alone = "RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms\n"
    top = _failing(log_inputs("rank0.log", alone))[0]
    assert (top.id, top.category) == ("monitored-barrier", "rank_hang_timeout")
    exited = alone + (" Original exception:\n[gloo/transport/tcp/pair.cc:598] Connection closed by peer "
                      "[2401:db00:eef0:1100:3560:0:1c05:25d]:8594\n")
    assert [d.id for d in _failing(log_inputs("rank0.log", exited))][:2] == ["remote-peer", "monitored-barrier"]


def test_torchruns_agent_stopped_by_a_signal_is_the_launcher_signalled():
    """GanjinZero/RRHF#35: torchrun's agent got SIGHUP (its terminal closed) several steps into a run; the answers of
    zai-org/ChatGLM2-6B#238 (the same message): start it under nohup and disown it."""
    text = ("WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers\n"
            "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2920926 closing signal SIGHUP\n"
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 2920830 got signal: 1\n")
    top = _failing(log_inputs("train.log", text))[0]
    assert (top.category, top.severity) == ("other:launcher-signalled", "fail")


def test_a_store_nobody_reached_is_the_rendezvous_with_the_tables_evidence():
    text = "[rank5]: torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 3/4 clients joined.\n"
    inp = log_inputs("head.log", text)
    assert [e.check for e in E.events(inp)] == ["torch.store-clients-missing"]
    top = _failing(inp)[0]
    assert top.category == "rendezvous_unreachable"


def test_gloo_ranks_that_could_not_connect_name_the_interface():
    text = ("[rank1]: RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144]"
            " timed out connecting: SO_ERROR: Connection refused, remote=[10.9.0.4]:2485\n")
    top = _failing(log_inputs("train.log", text))[0]
    assert (top.id, top.category) == ("gloo-full-mesh", "socket_ifname_wrong")


def test_gloos_own_connect_error_is_the_gloo_cause_and_loopback_stays_the_name():
    """gloo's Pair::handleConnecting error as ProcessGroupGloo's set-up raises it (the line of pytorch/pytorch#108732,
    as posted), and as gloo::IoException with a peer at Debian's 127.0.1.1 (tests/cases, pytorch/pytorch#15592)."""
    text = ("RuntimeError: [/opt/conda/conda-bld/pytorch_1682343967769/work/third_party/gloo/gloo/transport/tcp/"
            "pair.cc:799] connect [172.31.71.170]:13195: Connection refused\n")
    inp = log_inputs("train.log", text)
    assert [e.check for e in E.events(inp)] == ["torch.gloo-pair-connect"]
    top = _failing(inp)[0]
    assert (top.id, top.category) == ("gloo-full-mesh", "socket_ifname_wrong")
    text = ("terminate called after throwing an instance of 'gloo::IoException'\n"
            "  what():  [/opt/conda/conda-bld/pytorch_1544084119927/work/third_party/gloo/gloo/transport/tcp/pair.cc:724]"
            " connect [127.0.1.1]:3210: Connection refused\n")
    assert _failing(log_inputs("node1.log", text))[0].category == "hostname_resolution"


def test_gloo_socket_ifname_naming_no_interface_of_the_node_is_its_own_cause():
    """gloo's lookupAddrForIface enforce, as a Ray worker of vLLM printed it (vllm-project/vllm#12997) and for NCCL's
    exclusion list given to GLOO_SOCKET_IFNAME (aws-samples/aws-do-eks#51); beside a failed full mesh it is the cause."""
    text = ("(RayWorkerWrapper pid=317, ip=10.68.27.14) ERROR 02-11 22:51:15 worker_base.py:574] RuntimeError: [enforce"
            " fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. Unable to find address for:"
            " eth0 [repeated 6x across cluster]\n")
    inp = log_inputs("worker.log", text)
    assert [e.check for e in E.events(inp)] == ["torch.gloo-iface-not-found"]
    top = _failing(inp)[0]
    assert (top.id, top.category) == ("gloo-socket-ifname", "socket_ifname_wrong")
    text = ("RuntimeError: [enforce fail at .../gloo/transport/tcp/device.cc:84]\n"
            "  ifa != nullptr. Unable to find address for: ^lo\n"
            "[rank8]: RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144]"
            " no error\n")
    ids = [d.id for d in _failing(log_inputs("pod.log", text))]
    assert ids[0] == "gloo-socket-ifname" and "gloo-full-mesh" not in ids
    # gloo's hostname lookup words its failure alike behind another condition: not an interface name
    text = "RuntimeError: [enforce fail at ../gloo/transport/tcp/device.cc:146] rp != nullptr. Unable to find address for: node7\n"
    assert "gloo-socket-ifname" not in [d.id for d in _failing(log_inputs("train.log", text))]


def test_gloo_behind_a_name_resolving_to_loopback_is_the_name():
    text = ("[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname to a (local) address. Using the loopback"
            " address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME.\n"
            "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error\n")
    ids = [d.id for d in _failing(log_inputs("train.log", text))]
    assert "hostname-resolution" in ids and "gloo-full-mesh" not in ids


def test_a_victims_message_never_outranks_the_cause_beside_it():
    text = ("[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer"
            " [10.0.0.2]:58054\n"
            "[rank1]: RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.\n"
            "[rank2]: torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n")
    got = _failing(log_inputs("train.log", text))
    assert got[0].category == "other:cuda-unavailable", [(d.id, d.category) for d in got]
    assert all(d.category != "remote_peer_failure" or d.tier >= 1 for d in got)
    assert [e.check for e in E.events(log_inputs("train.log", text))] == ["torch.cuda-driver-init-failed"]


def test_a_program_that_mixed_devices_is_the_programs_not_the_fabrics():
    text = ("[rank0]: RuntimeError: Expected all tensors to be on the same device, but found at least two devices,"
            " cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)\n")
    top = _failing(log_inputs("train.log", text))[0]
    assert top.category == "other:program-error"


def test_a_store_the_build_cannot_create_is_not_the_rendezvous():
    # the exception as hiyouga/LlamaFactory#8566 quotes it (a Windows wheel of PyTorch without libuv)
    text = ("torch.distributed.DistStoreError: use_libuv was requested but PyTorch was built without libuv support,"
            " run with USE_LIBUV=0 to disable it.\n")
    got = _failing(log_inputs("train.log", text))
    assert all(d.category != "rendezvous_unreachable" for d in got), [(d.id, d.category) for d in got]
    assert lexicon.shape_of(text.strip()) is not None  # a failure line still: never "nothing broken"
    assert got[0].category == "other:torch-built-without-libuv", [(d.id, d.category) for d in got]


def test_a_store_asked_for_libuv_that_the_build_lacks_is_named_in_either_wording():
    # pytorch/pytorch#139990 (the PyTorch 2.5 Windows wheel: 'was build', raised as RuntimeError) and the later
    # wording behind a rank's prefix; the store created without libuv, or a line about libuv that is no refusal,
    # stays quiet
    old = ('  File "C:\\hostedtoolcache\\windows\\Python\\3.12.7\\x64\\Lib\\site-packages\\torch\\distributed\\'
           'rendezvous.py", line 189, in _create_c10d_store\n    return TCPStore(\n'
           "RuntimeError: use_libuv was requested but PyTorch was build without libuv support\n")
    assert _failing(log_inputs("train.log", old))[0].category == "other:torch-built-without-libuv"
    new = ("[rank1]: torch.distributed.DistStoreError: use_libuv was requested but PyTorch was built without libuv"
           " support, run with USE_LIBUV=0 to disable it.\n")
    assert torchmsg.row_of(new.split(": ", 1)[1].strip())["id"] == "store-built-without-libuv"
    assert _failing(log_inputs("rank1.log", new))[0].category == "other:torch-built-without-libuv"
    for quiet in ("USE_LIBUV=0 torchrun --nproc-per-node 2 train.py",
                  "[I socket.cpp:787] [c10d] The client socket has connected to [localhost]:29500 on [localhost]:50112."):
        assert torchmsg.row_of(quiet) is None, quiet


# ---------------------------------------------------------------- the training program's own misuse of collectives
# Real lines, as posted in the threads named (prefixes, wrapping and a page's cut kept): each is the program's error,
# named as such, never the node's; the lines a working run prints beside them stay quiet.

PROGRAM_ERRORS = [
    # pytorch/pytorch#78022 (the wrapper's wording before 'but Rank N is running collective' was added)
    ("c10d-collectives-mismatch", "other:program-error",
     "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running inconsistent collective:"
     " CollectiveFingerPrint(OpType=BROADCAST, TensorShape=[34112], TensorDtypes=Float, TensorDeviceTypes="
     "TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), requires_grad=false (default),"
     " pinned_memory=false (default), memory_format=(nullopt))"),
    # modelscope/ms-swift#9443
    ("c10d-collectives-mismatch", "other:program-error",
     "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective:"
     " CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[195812480], TensorDtypes=BFloat16,"
     " TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default),"
     " requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))), but Rank 0 is"
     " running collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[51123456],"
     " TensorDtypes=BFloat16, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided"
     " (default), requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))."
     "Collectives differ in the following aspects:   Tensor Tensor shapes: 195812480vs 51123456"),
    # va1shn9v/PromptIR#30
    ("ddp-unfinished-reduction", "other:program-error",
     "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error"
     " indicates that your module has parameters that were not used in producing loss. You can enable unused"
     " parameter detection by (1) passing the keyword argument `find_unused_parameters=True` to"
     " `torch.nn.parallel.DistributedDataParallel`; (2) making sure all `forward` function outputs participate in"
     " calculating loss. If you already have done the above two steps, then the distributed data parallel module"
     " wasn't able to locate the output tensors in the return value of your module's `forward` function. Please"
     " include the loss function and the structure of the return value of `forward` of your module when reporting"
     " this issue (e.g. list,dict, iterable)."),
    # open-mmlab/mmagic#419 (the page wrapped the line)
    ("ddp-unfinished-reduction", "other:program-error",
     "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error"
     " indicates that your module has parameters that were not used i"),
    # buxiangzhiren/DDCap#35
    ("ddp-params-without-grad", "other:program-error", "Parameter indices which did not receive grad for rank 0: 1"),
    # pytorch/examples#1030
    ("nccl-tensors-must-be-cuda", "other:program-error", "RuntimeError: Tensors must be CUDA and dense"),
    # THUDM/SwissArmyTransformer#173
    ("c10d-no-backend-for-device", "other:program-error",
     "RuntimeError: No backend type associated with device type cpu"),
    # open-mmlab/mmsegmentation#809, zeliu98/CloserLook3D#12 (torch 1.x)
    ("c10d-default-group-not-initialized", "other:program-error",
     "RuntimeError: Default process group has not been initialized, please make sure to call init_process_group."),
    ("c10d-default-group-not-initialized", "other:program-error",
     "AssertionError: Default process group is not initialized"),
    # huggingface/transformers#27542
    ("fsdp-flat-param-uniform-requires-grad", "other:program-error",
     "ValueError: `FlatParameter` requires uniform `requires_grad`"),
    # deepspeedai/DeepSpeed#6793
    ("deepspeed-no-sync-zero-partitioned", "other:program-error",
     "[rank0]: AssertionError: no_sync context manager is incompatible with gradient partitioning logic of ZeRO"
     " stage 3"),
    # NVIDIA-BioNeMo/bionemo-recipes#784
    ("megatron-layers-not-divisible-by-pipeline", "other:parallel-layout-mismatch",
     "15: [rank15]: AssertionError: num_layers should be divisible by pipeline_model_parallel_size"),
    # open-compass/VLMEvalKit#561 (vLLM's check)
    ("world-size-not-fitting-parallel-layout", "other:parallel-layout-mismatch",
     "RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (1) x pipeline_model_parallel_size"
     " (1). "),
]


@pytest.mark.parametrize("row_id,category,line", PROGRAM_ERRORS, ids=[f"{r}-{i}" for i, (r, _, _) in
                                                                       enumerate(PROGRAM_ERRORS)])
def test_a_programs_misuse_of_the_collectives_is_the_programs_not_the_nodes(row_id, category, line):
    assert torchmsg.row_of(line)["id"] == row_id
    for prefix in ("", "[rank3]: ", "node7: "):
        top = _failing(log_inputs("train.log", prefix + line + "\n"))[0]
        assert top.category == category, (prefix, top.id, top.category)


def test_the_lines_of_a_working_ddp_or_fp16_run_beside_them_stay_quiet():
    # cszn/KAIR#103 (reducer.cpp's warning, find_unused_parameters needlessly on), pytorch/pytorch#52957 (DDP's
    # INFO under TORCH_DISTRIBUTED_DEBUG), deepspeedai/DeepSpeed#931 and NVIDIA/apex#318 (fp16 overflows skipped)
    for line in ("[W reducer.cpp:1303] Warning: find_unused_parameters=True was specified in DDP constructor, but did"
                 " not find any unused parameters in the forward pass. ",
                 "I0226 19:12:47.109243 2818475 logger.cpp:140] [Rank 1]: DDP Initialized with:",
                 "[2023-04-28 06:51:30,648] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0"
                 " Skipping step. Attempted loss scale: 65536, reducing to 32768",
                 "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to 8.165126103939127e-202"):
        assert torchmsg.row_of(line) is None, line
        assert _failing(log_inputs("train.log", line + "\n")) == [], line
