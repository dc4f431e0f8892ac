"""NCCL RAS reports (``ncclras``): the parser and its checks.

No RAS output was captured on a machine of this project (RAS needs GPUs running NCCL 2.24+), so every
report below is WRITTEN FOR THESE TESTS, with this project's own values, in the layout NCCL's RAS client
prints it (the format strings of NVIDIA/nccl src/ras/client_support.cc; the RAS page of the NCCL user
guide and the reports quoted in NVIDIA/nccl#1911 and #1762 show that layout in use).
"""
from __future__ import annotations

from nccldiag.model.findings import Status
from nccldiag.nccl import ras, ras_checks

# Written for this test: a healthy job, 2 nodes x 8 GPUs, one 16-rank communicator and eight 2-rank ones.
HEALTHY = """\
NCCL version 2.25.1 compiled with CUDA 12.8
CUDA runtime version 12080, driver version 12080

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          8            1         16       16

Communicators... (0.01s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2         8        16        16   RUNNING      OK
    1         8         2         1         2        16   RUNNING      OK

Errors
======

Warnings
========

"""

# Written for this test: the process managing GPU 3 of node 10.20.0.12 stopped (an excerpt that starts at
# the communicator table, as pasted excerpts do).
INCOMPLETE = """\
Communicators... (3.12s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2       7-8        16        16   RUNNING  INCOMPLETE

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 20417 on node 10.20.0.12 managing GPU 3

#0-0 (5d1c0e9a44b27f10) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 11

Warnings
========

TIMEOUT
  Encountered 1 communication timeout while gathering communicator data
"""

# Written for this test: the same process 60 s later, declared dead; the missing rank in the form NCCL 2.27
# prints it (with its GPU, process and node).
DEAD = """\
NCCL version 2.27.3 compiled with CUDA 12.9
CUDA runtime version 12090, driver version 12090

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      2          8            1         16       16

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2       7-8        16        16   RUNNING  INCOMPLETE

Errors
======

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 20417 on node 10.20.0.12 managing GPU 3

#0-0 (5d1c0e9a44b27f10) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 11 -- GPU 3 managed by process 20417 on node 10.20.0.12

Warnings
========

"""

# Written for this test: a communicator being torn down while others initialise (a transitional state).
FINALIZE_MISMATCH = """\
Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2       2-3        16        16  FINALIZE  MISMATCH
    1         3         2         1         2         6   RUNNING      OK
    2         1         2         1         2         2      INIT      OK

#0-0 (a0b1c2d3e4f50617) MISMATCH
  Communicator ranks have different status
  11 ranks have status NOCOMM
  3 ranks have status RUNNING
  Rank 0 -- GPU 0 managed by process 7001 on node 10.20.0.11
  Rank 5 -- GPU 5 managed by process 7006 on node 10.20.0.11
  Rank 8 -- GPU 0 managed by process 9101 on node 10.20.0.12
  2 ranks have status FINALIZE
  Rank 2 -- GPU 2 managed by process 7003 on node 10.20.0.11
  Rank 12 -- GPU 4 managed by process 9105 on node 10.20.0.12
"""

# Written for this test: a JSON report (NCCL 2.28.7+): a 2-rank communicator whose rank 1 does not answer.
JSON = """\
{
  "nccl_version": "2.28.9",
  "cuda_runtime_version": 12090,
  "cuda_driver_version": 12090,
  "timestamp": "2026-11-24 02:10:00",
  "communicators_count": 1,
  "communicators": [
    {
      "hash": "0x3f2e1d0c9b8a7766",
      "secondary_hash": "0x1111222233334444:0x5555666677778888",
      "size": 2,
      "ranks_count": 1,
      "missing_ranks_count": 1,
      "ranks": [
        {
          "rank": 0,
          "host": "10.20.0.21",
          "pid": 51200,
          "cuda_dev": 0,
          "nvml_dev": 0,
          "status": {"init_state": 0, "async_error": 0, "finalize_called": false, "destroy_flag": false,
                     "abort_flag": false},
          "collective_counts": {"Broadcast": 0, "Reduce": 0, "AllGather": 0, "ReduceScatter": 0, "AllReduce": 40}
        }
      ],
      "missing_ranks": [
        {
          "rank": 1,
          "host": "10.20.0.21",
          "pid": 51201,
          "cuda_dev": 1,
          "nvml_dev": 1,
          "status": {"unresponsive": true, "considered_dead": false}
        }
      ]
    }
  ],
  "ras": {"collection_time_sec": 0.004, "timeouts_count": 0}
}
"""

# Written for this test: 4 nodes x 4 GPUs, two ranks one AllReduce ahead of the others.
MISMATCH = """\
NCCL version 2.26.2 compiled with CUDA 12.6
CUDA runtime version 12060, driver version 12060

Job summary
===========

  Nodes  Processes         GPUs  Processes     GPUs
(total)   per node  per process    (total)  (total)
      4          4            1         16       16

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4         4        16        16   RUNNING  MISMATCH

Errors
======

Warnings
========

#0-0 (77aa01bc39d04e12) MISMATCH
  Communicator ranks have different AllReduce operation counts
  14 ranks have launched up to operation 1203
  2 ranks have launched up to operation 1204
  Rank 6 -- GPU 2 managed by process 44102 on node 10.20.0.32
  Rank 7 -- GPU 3 managed by process 44103 on node 10.20.0.32
"""

# Written for this test: a RAS report printed inside a training job's output (the job's own lines around
# it), nodes with 8 and 2 processes (an outlier node), one process missing, and a communicator whose rank
# line was cut.
IN_A_JOB_LOG = """\
epoch 3 step 1200 loss 2.3117
NCCL version 2.27.3 compiled with CUDA 12.9
CUDA runtime version 12090, driver version 12080

Job summary
===========

  Nodes  Processes         GPUs
          per node  per process
      1          8            1
      1          2            1

  Nodes  Processes         GPUs
(total)    (total)      (total)
      2         10           10

The outlier node:
  Node 10.20.0.42 running processes 61010,61011

Communicators... (0.00s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2       1-8        10        10   RUNNING  INCOMPLETE
    1         2         1         1         2         2   RUNNING  INCOMPLETE

Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 61011 on node 10.20.0.42 managing GPU 1

#0-0 (c4d3e2f1a0b99887) INCOMPLETE
  Missing communicator data from 1 rank
  Rank 9 -- GPU 1 managed by process 61011 on node 10.20.0.42

#1-1 (0c0c0c0c00000001) INCOMPLETE
  Missing communicator data from 2 ranks
  Rank 424242 --
"""


def one(text, source="r.txt"):
    (r,) = ras.parse(text, source)
    return r


def by_check(findings):
    out = {}
    for f in findings:
        out.setdefault(f.check, []).append(f)
    return out


def test_healthy_job_summary_and_table():
    r = one(HEALTHY)
    assert (r.nccl_version, r.cuda_runtime, r.cuda_driver) == ("2.25.1", 12080, 12080)
    assert (r.nodes, r.processes, r.gpus) == (2, 16, 16)
    assert r.collection_s == 0.01 and r.communicators == 9 and r.statuses() == ["RUNNING"]
    g0, g1 = r.groups
    assert (g1.comms, g1.nodes, g1.ranks_per_node, g1.ranks_per_comm, g1.ranks_in_group, g1.errors) == \
        (8, 2, "1", 2, 16, ["OK"])
    assert r.problems == []
    (f,) = ras_checks.judge([r])
    assert f.status == Status.OK and f.check == "nccl.ras"
    assert f.message == "RAS: every rank answered, no error: 2 nodes, 16 processes, 16 GPUs; 9 communicators RUNNING"


def test_a_stopped_process_is_named_by_node_gpu_and_rank():
    r = one(INCOMPLETE)
    assert r.collection_s == 3.12 and r.groups[0].ranks_per_node == "7-8" and r.groups[0].errors == ["INCOMPLETE"]
    job, comm, timeout = r.problems
    assert job.kind == "INCOMPLETE" and job.comm is None and job.count == 1
    assert [(p.pid, p.node, p.gpus) for p in job.processes] == [(20417, "10.20.0.12", "3")]
    assert (comm.comm, comm.comm_hash, comm.missing_ranks, comm.count) == ("#0-0", "5d1c0e9a44b27f10", [11], 1)
    assert timeout.kind == "TIMEOUT" and timeout.severity == "warning" and timeout.count == 1
    fs = by_check(ras_checks.judge([r]))
    assert [f.status for f in fs["nccl.ras_incomplete"]] == [Status.FAIL, Status.FAIL]
    job_f, comm_f = fs["nccl.ras_incomplete"]
    assert job_f.message == "RAS: no answer from 1 job process: process 20417 on node 10.20.0.12 (GPU 3)"
    assert job_f.host == "10.20.0.12"
    assert comm_f.message == "RAS: communicator #0-0 (5d1c0e9a44b27f10) is missing 1 rank: rank 11"
    assert fs["nccl.ras_timeout"][0].status == Status.WARN
    assert "nccl.ras" not in fs  # no "every rank answered" beside a failure


def test_a_dead_process_fails_with_its_node():
    r = one(DEAD)
    dead, comm = r.problems
    assert dead.kind == "DEAD" and dead.count == 1 and dead.processes[0].pid == 20417
    assert [(x.rank, x.gpu, x.pid, x.node) for x in comm.ranks] == [(11, "3", 20417, "10.20.0.12")]
    fs = by_check(ras_checks.judge([r]))
    (f,) = fs["nccl.ras_dead"]
    assert f.status == Status.FAIL and f.host == "10.20.0.12"
    assert f.message == "RAS: 1 process considered dead: process 20417 on node 10.20.0.12 (GPU 3)"
    assert "60 s" in f.fix
    assert fs["nccl.ras_incomplete"][0].message.endswith("missing 1 rank: rank 11 (GPU 3 process 20417 on node 10.20.0.12)")


def test_a_mismatch_from_a_single_query_only_warns():
    r = one(MISMATCH)
    (p,) = r.problems
    assert p.kind == "MISMATCH" and [x.rank for x in p.ranks] == [6, 7]
    assert p.lines[:3] == ["Communicator ranks have different AllReduce operation counts",
                           "14 ranks have launched up to operation 1203", "2 ranks have launched up to operation 1204"]
    (f,) = ras_checks.judge([r])
    assert f.status == Status.WARN and f.check == "nccl.ras_mismatch" and f.host == "10.20.0.32"
    assert "rank 6 (GPU 2 process 44102 on node 10.20.0.32)" in f.message
    assert "unless a repeated query shows the same counts" in f.message


def test_the_same_mismatch_in_a_repeated_query_is_a_stuck_communicator():
    reports = ras.parse(MISMATCH + "\n" + MISMATCH, "q.txt")
    assert len(reports) == 2 and reports[1].lineno == MISMATCH.count("\n") + 2
    (f,) = ras_checks.judge(reports)
    assert f.status == Status.FAIL and "is stuck" in f.message and "unchanged across repeated queries" in f.message
    # the second query's counts moved on
    moved = MISMATCH.replace("operation 1204", "operation 1205").replace("operation 1203", "operation 1204")
    (f,) = ras_checks.judge(ras.parse(MISMATCH + moved, "q.txt"))
    assert f.status == Status.WARN


def test_ras_output_inside_a_job_log_with_an_outlier_node_and_a_cut_rank_line():
    r = one(IN_A_JOB_LOG)
    assert r.nccl_version == "2.27.3" and r.lineno == 2
    assert (r.nodes, r.processes, r.gpus) == (2, 10, 10) and r.outlier_nodes == ["10.20.0.42"]
    assert [(g.status, g.errors) for g in r.groups] == [("RUNNING", ["INCOMPLETE"]), ("RUNNING", ["INCOMPLETE"])]
    job, c0, c1 = r.problems
    assert [(x.rank, x.gpu, x.pid, x.node) for x in c0.ranks] == [(9, "1", 61011, "10.20.0.42")]
    assert c1.count == 2 and c1.ranks == [] and "Rank 424242 --" in c1.lines
    fs = by_check(ras_checks.judge([r]))
    assert [f.host for f in fs["nccl.ras_incomplete"]] == ["10.20.0.42", "10.20.0.42", None]


def test_a_transitional_finalize_mismatch_warns_and_lists_the_groups():
    r = one(FINALIZE_MISMATCH, "t.txt")
    assert [g.status for g in r.groups] == ["FINALIZE", "RUNNING", "INIT"]
    (p,) = r.problems
    assert len(p.ranks) == 5 and p.lines[0] == "Communicator ranks have different status"
    (f,) = ras_checks.judge([r])
    assert f.status == Status.WARN and f.host is None  # ranks on two nodes


def test_json_report_names_the_unresponsive_rank():
    r = one(JSON)
    assert r.format == "json" and r.nccl_version == "2.28.9" and r.cuda_runtime == 12090
    assert (r.nodes, r.processes, r.gpus, r.communicators) == (1, 2, 2, 1)
    (p,) = r.problems
    assert p.kind == "INCOMPLETE" and p.comm_hash == "0x3f2e1d0c9b8a7766"
    assert [(x.rank, x.gpu, x.pid, x.node) for x in p.ranks] == [(1, "1", 51201, "10.20.0.21")]
    (f,) = ras_checks.judge([r])
    assert f.status == Status.FAIL and f.check == "nccl.ras_incomplete" and f.host == "10.20.0.21"


def test_json_dead_error_and_count_mismatch():
    # the JSON case with rank 1 declared dead, rank 0 holding an async error, and a third rank one AllReduce ahead
    import json

    doc = json.loads(JSON)
    c = doc["communicators"][0]
    c["missing_ranks"][0]["status"]["considered_dead"] = True
    c["ranks"][0]["status"]["async_error"] = 6
    extra = json.loads(json.dumps(c["ranks"][0]))
    extra.update(rank=2, pid=51202, cuda_dev=2, nvml_dev=2)
    extra["status"]["async_error"] = 0
    extra["collective_counts"]["AllReduce"] = 41
    c["ranks"].append(extra)
    r = one(json.dumps(doc, indent=2))
    assert [p.kind for p in r.problems] == ["INCOMPLETE", "DEAD", "ERROR", "MISMATCH"]
    fs = by_check(ras_checks.judge([r]))
    assert fs["nccl.ras_dead"][0].status == Status.FAIL
    assert "Asynchronous error 6 on 1 rank(s)" in fs["nccl.ras_error"][0].message
    assert "rank 2" in fs["nccl.ras_mismatch"][0].message


def test_not_a_ras_report():
    assert ras.parse("NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nhello\n") == []
    assert ras.parse('{"a": 1}') == []
    assert ras.parse("Errors were found\n") == []


def test_cut_and_mangled_reports_never_raise():
    for text in (HEALTHY, INCOMPLETE, DEAD, MISMATCH, IN_A_JOB_LOG, FINALIZE_MISMATCH, JSON):
        for cut in range(0, len(text), 37):
            ras_checks.judge(ras.parse(text[:cut]))
            ras_checks.judge(ras.parse(text[:cut].replace("  ", "\t")))


def run_log(*args):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "nccldiag", "log", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})


def test_nccldiag_log_reads_a_ras_report_and_fails_on_the_missing_rank(tmp_path):
    import json

    p = tmp_path / "job.out"
    p.write_text(IN_A_JOB_LOG)
    r = run_log(str(p), "--json", "-")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    fs = [f for f in doc["findings"] if f["check"].startswith("nccl.ras")]
    assert {f["check"] for f in fs} == {"nccl.ras_incomplete"}
    assert any("rank 9 (GPU 1 process 61011 on node 10.20.0.42)" in f["message"] for f in fs)
    assert any(e.startswith(f"{p}:2: ") for f in fs for e in f["evidence"])  # the report's first line
    r = run_log(str(p))
    assert r.returncode == 1 and "1 NCCL RAS report(s)" in r.stdout, r.stdout


def test_nccldiag_log_passes_a_healthy_ras_report(tmp_path):
    p = tmp_path / "ras.txt"
    p.write_text(HEALTHY)
    q = tmp_path / "ras.json"
    q.write_text(JSON.replace('"missing_ranks_count": 1', '"missing_ranks_count": 0')
                 .split('"missing_ranks": [')[0] + '"missing_ranks": []}], "ras": {"timeouts_count": 0}}')
    r = run_log(str(p))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every rank answered" in r.stdout
    # the JSON case without its missing rank
    r = run_log(str(q))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every rank answered" in r.stdout


def test_an_excerpt_from_the_errors_section_on_is_read_by_its_messages(tmp_path):
    import json

    errors = DEAD[DEAD.index("Errors"):]
    cut = DEAD[DEAD.index("  1 job process"):]  # the heading lost as well
    for text in (errors, cut):
        (r,) = ras.parse(text)
        assert [p.kind for p in r.problems] == ["DEAD", "INCOMPLETE"]
        assert r.problems[0].count == 1 and r.problems[0].processes[0].pid == 20417
    missing = INCOMPLETE[INCOMPLETE.index("Missing communicator data from"):]
    (r,) = ras.parse(missing)
    assert r.problems[0].kind == "INCOMPLETE" and r.problems[0].count is not None
    p = tmp_path / "ras.txt"
    p.write_text(errors)
    got = run_log(str(p), "--json", "-")
    assert got.returncode == 1, got.stdout + got.stderr
    (first,) = [d for d in json.loads(got.stdout)["diagnoses"] if d["severity"] == "fail"][:1]
    assert first["category"] == "rank_hang_timeout" and first["nodes"] == ["10.20.0.12"]
    # a report without a dead or missing process does not start at its lines, nor a healthy report fail
    assert ras.parse("Encountered 2 communication timeouts while gathering communicator data\n") == []
    assert not any(p.kind in ("DEAD", "INCOMPLETE") for r in ras.parse(HEALTHY) for p in r.problems)


def test_a_report_whose_paragraphs_ran_together_is_read_as_the_report():
    def run_together(text):
        return "\n\n".join(" ".join(ln.strip() for ln in para.splitlines()) for para in text.split("\n\n"))

    for text in (DEAD, INCOMPLETE):
        want = [(p.kind, p.comm, p.count, [x.pid for x in p.processes], p.missing_ranks,
                 [(x.rank, x.pid) for x in p.ranks]) for r in ras.parse(text) for p in r.problems]
        got = [(p.kind, p.comm, p.count, [x.pid for x in p.processes], p.missing_ranks,
                [(x.rank, x.pid) for x in p.ranks]) for r in ras.parse(run_together(text)) for p in r.problems]
        assert got == want
    (r,) = ras.parse(run_together(HEALTHY))
    assert r.problems == []
