"""The events of the diagnosis (diagnosis/events.py): findings, Xid and kernel lines and CUDA errors read through the
knowledge tables into the category of their cause, on real outputs read in place (../shared/fixtures/node) or kept
in this repository with their source (tests/cases/*/case.json), and quiet on healthy ones."""
from __future__ import annotations

from pathlib import Path

import pytest

from nccldiag import knowledge
from nccldiag.diagnosis import Inputs, categories, diagnose
from nccldiag.diagnosis import events as E
from nccldiag.nccl import parser as nccllog
from tests import real

CASES = Path(__file__).resolve().parents[1] / "cases"
REAL = pytest.mark.skipif(not real.AVAILABLE, reason=real.REASON)


def inputs(name: str, text: str) -> Inputs:
    return Inputs(logs=nccllog.parse_logs([(name, text)]))


def case_inputs(case: str, name: str) -> Inputs:
    return inputs(name, (CASES / case / name).read_text(encoding="utf-8"))


def failing(diags):
    return [d for d in diags if d.severity in ("fail", "warn")]


def test_every_cuda_row_names_a_known_category_once():
    rows = knowledge.rows(E.CUDA_TABLE)
    assert len({r["name"] for r in rows}) == len(rows)
    by_text = {}
    for r in rows:  # one text for two enumerators only where the runtime gives it to both, and of one category
        by_text.setdefault(r["text"].lower(), []).append(r)
    assert [[r["name"] for r in rs] for rs in by_text.values() if len(rs) > 1] == \
        [["cudaErrorInvalidKernelImage", "cudaErrorInvalidSource"]]
    assert len({r["category"] for r in by_text["device kernel image is invalid"]}) == 1
    for r in rows:
        assert categories.known(r["category"]) or r["category"].startswith("other:"), r["where"]
        assert r["confidence"] in ("high", "medium"), r["where"]
        assert E.cuda_row(f"RuntimeError: CUDA error: {r['text']}")["name"] == by_text[r["text"].lower()][0]["name"]
        if r["name"] == "cudaSuccess":  # no error: its enumerators (cudaSuccess, CUDA_SUCCESS) name no row
            assert E.cuda_row("status cudaSuccess (CUDA_SUCCESS)") is None
            continue
        assert E.cuda_row(f"error {r['name']} at x.cu:12")["name"] == r["name"], r["where"]
        if r.get("driver"):  # the driver API's enumerator, with its text or with a shortened quote of it
            assert r["driver"].startswith("CUDA_ERROR_"), r["where"]
            assert E.cuda_row(f"INTERNAL: {r['driver']}: {r['text']}")["name"] == r["name"], r["where"]
            assert E.cuda_row(f"logged `{r['driver']}: {r['text'][:12]}`")["name"] == r["name"], r["where"]
    drivers = [r["driver"] for r in rows if r.get("driver")]
    assert len(set(drivers)) == len(drivers)
    assert E.cuda_row("CUDA error: no such text in the table") is None
    assert E.cuda_row("CUDA_ERROR_NOT_IN_THE_TABLE: something") is None


def test_a_driver_api_cuda_error_is_read_by_its_enumerator():
    # real: https://github.com/MFlowCode/MFC/pull/1748 (an OpenACC runtime's cuCtxCreate on a GPU with an
    # uncorrectable ECC error, the node the PR excludes)
    inp = inputs("ci.log", "Accelerator Fatal Error: call to cuCtxCreate returned error 214 "
                           "(CUDA_ERROR_ECC_UNCORRECTABLE): uncorrectable ECC error encountered\n")
    ev = [e for e in E.events(inp) if e.check.startswith("cuda.")]
    assert [e.category for e in ev] == ["gpu_ecc_rowremap"]


@pytest.mark.parametrize("case,name,check", [
    ("gpu-marin8506-hero-log-cuda-error-nvlink-uncorrectable-gb200-rack-gang-restart", "posted-status-comment.txt",
     "cuda.cudaErrorNvlinkUncorrectable"),
    ("gpu-marin8934-cuda-error-contained-peer-nvlink-gb200-domain-fate-sharing", "posted-issue-section.txt",
     "cuda.cudaErrorContained"),
])
def test_a_logbook_s_prose_quoting_a_driver_api_nvlink_error_is_an_nvlink_error(case, name, check):
    # real: Marin's run log (tests/cases/.../case.json has the source), the error quoted inline in the author's prose
    inp = case_inputs(case, name)
    assert [e.check for e in E.of(inp, "nvlink_error")] == [check]
    assert failing(diagnose(inp))[0].category == "nvlink_error"


def test_an_xid_quoted_without_the_driver_s_prefix_is_that_xid_and_the_code_alone_is_not():
    # real: Marin's run log (tests/cases/.../case.json has the source)
    inp = case_inputs("gpu-marin9086-xid149-netir-link-down-link14-gb200-node-evicted", "posted-issue-paragraph.txt")
    ev = E.of(inp, "nvlink_error")
    assert [e.code for e in ev] == [149] and ev[0].severity == "fail"
    # the same paragraph's codes named in prose ('reporting Xid 149', 'the downstream Xid 145') are no event
    prose = "`s9jvxs64` GPU 0 was the only GPU reporting Xid 149, the other 63 reported the downstream Xid 145.\n"
    assert E.events(inputs("notes.txt", prose)) == []


def test_healthy_in_repo_cases_make_no_cuda_or_quoted_xid_event():
    import json

    seen = 0
    for meta in sorted(CASES.glob("*/case.json")):
        m = json.loads(meta.read_text(encoding="utf-8"))
        if not m["healthy"] or m["input"] != "log":
            continue
        inp = Inputs(logs=nccllog.parse_logs([(f, (meta.parent / f).read_text(encoding="utf-8", errors="replace"))
                                              for f in m["files"]]))
        assert [e for e in E.events(inp) if e.check.startswith(("cuda.", "xid."))] == [], m["id"]
        seen += 1
    assert seen >= 40


@REAL
@pytest.mark.parametrize("name, expected", [
    ("gpud-dell-xe9680-h100-dmesg-T-xid119-gsp-timeout.txt", {("gpu_lost_xid", "fail")}),
    ("gpud-dmesg-iso-xid48-dbe-xid63-remap-xid94-peermem.txt", {("gpu_ecc_rowremap", "fail"),
                                                                ("gpu_ecc_rowremap", "warn")}),
    ("gpud-dmesg-decode-iso-xid13-sm-exceptions-xid43.txt", {("other:gpu-application-fault", "warn")}),
    ("gpud-h100-boot-dmesg-decode-nvrm-nvswitch-no-xid-healthy.txt", set()),
])
def test_a_kernel_log_pasted_as_a_log_reads_as_on_the_node(name, expected):
    inp = inputs(name, real.node_text("kernel-xid", name))
    assert {(e.category, e.severity) for e in E.events(inp)} == expected
    if not expected:
        assert failing(diagnose(inp)) == []


@REAL
def test_healthy_node_captures_pasted_as_logs_make_no_event():
    healthy = [p for p in sorted(real.NODE.rglob("*")) if p.is_file() and "healthy" in p.name]
    assert healthy
    for p in healthy:
        inp = inputs(p.name, p.read_text(encoding="utf-8", errors="replace"))
        assert E.events(inp) == [], p


def test_a_host_prefixed_nvlink_xid_is_an_nvlink_error_and_the_reset_it_asks_a_symptom():
    # real: https://github.com/vllm-project/vllm/issues/40652 (Talos' 'host: kern: warning: [time]: ' prefix)
    inp = case_inputs("node-vllm40652-talos-host-prefixed-xid74-nvlink-fatal-gsp-timeout", "posted-kernel-log.txt")
    nvlink = E.of(inp, "nvlink_error")
    assert nvlink and nvlink[0].code == 74 and nvlink[0].host == "192.168.11.119"
    # the Xid 45 lines follow Xid 74 on the same GPU: they are the NVLink error's, not a cause of their own
    assert {e.code for e in nvlink} >= {74, 45}
    diags = failing(diagnose(inp))
    assert diags[0].id == "nvlink-error" and diags[0].category == "nvlink_error"
    lost = [d for d in diags if d.id == "gpu-lost"]
    assert all(d.tier >= 1 for d in lost)


def test_a_rank_s_fatal_cuda_error_behind_a_launcher_prefix_names_the_rank():
    # real: the BLOOM-176B training logbook (tests/cases/.../case.json has the source)
    inp = case_inputs("gpu-bloom176b-logbook-default3-watchdog-cuda-unknown-error", "posted-default3-crash.log")
    ev = E.of(inp, "gpu_lost_xid")
    assert ev and ev[0].check.startswith("cuda.") and "local rank 3" in ev[0].what
    assert failing(diagnose(inp))[0].category == "gpu_lost_xid"


@pytest.mark.parametrize("prefix,who", [
    ("[default3]:", "local rank 3"), ("[rank3]:", "rank 3"), ("[rank3]: ", "rank 3"), ("3: ", "rank 3"),
    ("[1,3]<stderr>:", "rank 3"), ("node7: ", ""), ("node7: [rank3]: ", "rank 3"), ("[rank3]: node7: ", "rank 3"),
])
def test_every_launcher_prefix_keeps_the_rank_on_the_event(prefix, who):
    # real lines (the BLOOM-176B logbook's '[default3]:' crash), their prefix rewritten for this test in each form
    # that torchrun, Open MPI, srun --label and pdsh print (the log reader takes some of them off the line); a
    # host's prefix names the event's host, which the diagnosis names once, beside the rank the message names
    text = (CASES / "gpu-bloom176b-logbook-default3-watchdog-cuda-unknown-error" / "posted-default3-crash.log"
            ).read_text(encoding="utf-8")
    inp = inputs("job.log", "".join(prefix + line[len("[default3]:"):] + "\n" if line.startswith("[default3]:")
                                    else line + "\n" for line in text.splitlines()))
    ev = E.of(inp, "gpu_lost_xid")
    assert ev and ev[0].check.startswith("cuda.") and ev[0].what.endswith(f" on {who}" if who else ")"), \
        [e.what for e in ev]
    if "node7" in prefix:
        assert ev[0].host == "node7" and "node7" not in ev[0].what
        assert failing(diagnose(inp))[0].summary.count("node7") == 1


@REAL
@pytest.mark.parametrize("case,name,rank", [
    ("gpu-torchtitan1224-ep-duplicate-gpu-set-device-after-mesh", "posted-torchrun-error.log", "rank 2"),
    ("gpu-pytorch150852-nccl2262-nvls-invalid-argument-driver-122", "posted-error.log", "rank 0"),
])
def test_lines_read_behind_torchrun_s_rank_prefix_keep_their_rank(case, name, rank):
    # real torchrun output ('[rank2]: ' with a space, ../shared/fixtures/cases): every line the reader keeps of it,
    # the prefix taken off or not, still names the rank that printed it
    import re

    from nccldiag.diagnosis import clues as C

    inp = inputs(name, (real.ROOT / "cases" / case / name).read_text(encoding="utf-8"))
    kept = [c for c in C.find(inp, re.compile(r"\S"), ("app", "error", "last-error"))]
    assert kept and {E.launcher_of(c) for c in kept} == {rank}
    assert any(not c.cite.startswith("[rank") for c in kept)  # the reader took the prefix off these


def test_one_peer_refusing_is_that_peer_not_a_firewall():
    # real: the BLOOM ops notes (tests/cases/.../case.json has the source)
    inp = case_inputs("net-bloom-jz-ops-notes-connect-refused-broken-node-network", "posted-broken-network.log")
    diags = failing(diagnose(inp))
    assert diags[0].id == "peer-refused" and "10.148.3.247" in diags[0].summary
    assert not any(d.id == "firewall" and d.tier == 0 for d in diags)


def test_refusals_from_two_peers_are_not_one_broken_peer():
    # CONSTRUCTED: the real line above, with a second peer address
    line = ("r11i6n2:486514:486651 [1] include/socket.h:403 NCCL WARN Connect to {}<56821> failed : "
            "Connection refused\n")
    inp = inputs("job.log", line.format("10.148.3.247") + line.format("10.148.3.248"))
    assert not any(d.id == "peer-refused" for d in diagnose(inp))



@REAL
def test_a_cuda_failure_in_the_nvls_set_up_is_left_to_the_causes_of_that_set_up():
    """NCCL's NVLS transport WARNs a CUDA failure when NVLink SHARP cannot be set up (Fabric Manager, an NCCL
    defect): that CUDA error is no GPU event of its own. The real log's failure (401) is read as it is, and with
    its code and text changed to CUDA's 999 'unknown error' (CONSTRUCTED for this test: a code the CUDA table
    reads as a lost GPU anywhere else)."""
    name = "nvls-multicast-cuda-failure-401-timestamped-warn.log"
    text = real.nccl_log(name).read_text(encoding="utf-8", errors="replace")
    assert "Cuda failure 401 'the operation cannot be performed in the present state'" in text
    unknown = text.replace("Cuda failure 401 'the operation cannot be performed in the present state'",
                           "Cuda failure 999 'unknown error'")
    for t in (text, unknown):
        inp = inputs(name, t)
        assert [e for e in E.events(inp) if e.check.startswith("cuda.")] == []
        assert {d.category for d in failing(diagnose(inp))} & {"fabric_manager", "nvls_multicast"}
    elsewhere = inputs("app.log", "[rank3]: RuntimeError: CUDA error: unknown error\n")  # CONSTRUCTED
    assert [e.category for e in E.events(elsewhere)] == ["gpu_lost_xid"]


@REAL
def test_a_fabric_manager_with_no_nvswitch_to_manage_is_that_cause_not_a_broken_fabric():
    """The journal of a Fabric Manager start on two RTX 4090s (a real capture, read in place): its query of the
    NVSwitch devices answered NV_WARN_NOTHING_TO_DO and the service failed; the cause is the missing NVSwitch, and
    it explains the failed service."""
    name = "cubestudio29-2x-rtx4090-fm-pre-nvl5-nothing-to-do-exit1-journal.txt"
    text = real.node_text("fabric-manager", name)
    assert "NV_WARN_NOTHING_TO_DO" in text
    found = failing(diagnose(inputs(name, text)))
    assert [d.category for d in found][:1] == ["other:fabric-manager-without-nvswitch"]
    assert "fabric_manager" not in {d.category for d in found}


XID45_HUNG = ("gpu-gpud117-dmesg-xid45-nvidia-smi-hung-task-d-state", "posted-dmesg.txt")


def test_xid_45_then_a_task_hung_in_the_kernel_is_a_gpu_needing_a_reset_and_explains_the_hang():
    # real: leptonai/gpud#117 (six Xid 45 of one GPU, then a task in state D)
    inp = case_inputs(*XID45_HUNG)
    lost = E.of(inp, "gpu_lost_xid")
    assert lost and all(e.severity == "fail" for e in lost) and 45 in {e.code for e in lost}
    assert any("blocked for more than" in e.clue.text for e in lost)
    assert E.of(inp, "io_hang") == [] and E.of(inp, "other:gpu-application-fault") == []
    diags = failing(diagnose(inp))
    assert diags[0].category == "gpu_lost_xid" and "then a task hung in the kernel" in diags[0].summary
    assert "io_hang" not in [d.category for d in diags]


def test_xid_45_alone_stays_the_job_s_and_a_hung_task_before_it_stays_i_o():
    # the same real lines, cut (written for this test): the Xid 45 lines alone; the hung task moved before them
    lines = (CASES / XID45_HUNG[0] / XID45_HUNG[1]).read_text(encoding="utf-8").splitlines(keepends=True)
    xids, hung = lines[:6], lines[6:]
    assert all(": 45," in l for l in xids) and "blocked for more than" in hung[0]
    alone = inputs("dmesg.txt", "".join(xids))
    assert {e.category for e in E.events(alone)} == {"other:gpu-application-fault"}
    before = inputs("dmesg.txt", "".join(hung + xids))
    assert {e.category for e in E.events(before)} == {"other:gpu-application-fault", "io_hang"}


def test_an_nfs_hang_with_no_gpu_torn_down_stays_a_rank_stuck_in_i_o():
    # real: aws/aws-parallelcluster#1150 (tests/cases)
    inp = case_inputs("node-awspc1150-messages-grep-nfs-not-responding-hung-task", "posted-messages-hung-task.txt")
    assert E.of(inp, "io_hang") and not E.of(inp, "gpu_lost_xid")


def test_hung_tasks_after_xid_45_on_a_node_whose_file_server_stopped_stay_i_o():
    # the real gpud#117 lines with an NFS line in the kernel's words put before them (written for this test)
    nfs = "[Sat Oct 12 18:30:01 2024] nfs: server nfs01 not responding, still trying\n"
    text = nfs + (CASES / XID45_HUNG[0] / XID45_HUNG[1]).read_text(encoding="utf-8")
    inp = inputs("dmesg.txt", text)
    assert E.of(inp, "io_hang") and not E.of(inp, "gpu_lost_xid")


def test_nvidia_smi_hung_in_the_kernel_beside_gpu_errors_is_the_gpu_not_i_o():
    # the real gpud#117 lines with the hung task renamed nvidia-smi and the Xid 45 lines made Xid 13 (written for
    # this test: an application's fault, then NVIDIA's own tool stuck in the driver)
    text = (CASES / XID45_HUNG[0] / XID45_HUNG[1]).read_text(encoding="utf-8")
    assert text.count("cache_mgr_event") == 2 and text.count("): 45, ") == 6
    text = text.replace("cache_mgr_event", "nvidia-smi").replace("): 45, ", "): 13, ")
    inp = inputs("dmesg.txt", text)
    lost = E.of(inp, "gpu_lost_xid")
    assert lost and all("nvidia-smi" in e.clue.text for e in lost) and not E.of(inp, "io_hang")
    assert failing(diagnose(inp))[0].category == "gpu_lost_xid"
    # another task hung beside the same Xid 13 stays the node's I/O
    other = inputs("dmesg.txt", text.replace("nvidia-smi", "python3"))
    assert E.of(other, "io_hang") and not E.of(other, "gpu_lost_xid")


def test_nvidia_smi_hung_after_xid_45_is_one_gpu_needing_a_reset():
    # the real gpud#117 lines with the hung task renamed nvidia-smi (written for this test)
    text = (CASES / XID45_HUNG[0] / XID45_HUNG[1]).read_text(encoding="utf-8").replace("cache_mgr_event", "nvidia-smi")
    inp = inputs("dmesg.txt", text)
    assert {e.category for e in E.events(inp)} == {"gpu_lost_xid"}


@pytest.mark.parametrize("line", [
    # pytorch/pytorch's c10d (knowledge/torch.toml) and CUDA's error string (knowledge/cuda.toml), behind a pdsh or
    # srun --label host prefix, and behind both a host's and a rank's
    "node7: RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.",
    "node7: [rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
])
def test_an_events_summary_names_the_host_of_a_prefixed_line_once(line):
    d = failing(diagnose(inputs("job.log", line + "\n")))[0]
    assert d.summary.count("node7") == 1, d.summary
    if "[rank3]" in line:
        assert "rank 3" in d.summary
