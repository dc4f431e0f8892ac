"""Node outputs and process ends pasted beside an NCCL log (nccldiag.paste) and the verdicts they feed.

The node outputs are real captures read in place from ../shared/fixtures (ibstat, ibv_devinfo, ulimit -a),
pasted after real NCCL logs of the same fixtures, as admins paste them. The launcher blocks (torchelastic's
failure block, UCX's and Open MPI's signal lines) and the `df -h` line are written for these tests, each in the
form the tool prints; so is the E810-shaped ibstat of the non-zero-LID test (a RoCE port with 'Base lid: 1').
"""
from pathlib import Path
from typing import List

import pytest

from nccldiag import paste as pasted
from nccldiag.diagnosis import Inputs, diagnose
from nccldiag.diagnosis.model import fails_run
from nccldiag.model.findings import Status
from nccldiag.nccl import checks as nccl_checks
from nccldiag.nccl import parser as nccllog
from tests import real

HEALTHY_LOG = "net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log"
FAILED_LOG = "nvls-16-channels-then-watchdog-timeout-allgather.log"


def verdict(text: str, path: str = "job.log") -> List:
    facts = nccllog.parse(text, path)
    return diagnose(Inputs(logs=facts, log_findings=nccl_checks.judge(facts), pasted=pasted.scan(text, path)))


def alarms(text: str) -> List:
    return [d for d in verdict(text) if d.severity in ("fail", "warn")]


def log_text(name: str) -> str:
    return real.nccl_log(name).read_text(encoding="utf-8")


# ---- finding the blocks -------------------------------------------------------------------------------------


def test_an_ibstat_pasted_after_a_log_is_found_where_it_starts_and_judged_by_the_ib_checks():
    log = log_text(HEALTHY_LOG)
    ibstat = real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    text = log + "root@node7:~# ibstat\n" + ibstat
    p = pasted.scan(text, "job.log")
    assert [(b.kind, b.host) for b in p.blocks] == [("ibstat", "node7")]
    assert p.blocks[0].lineno == len(log.splitlines()) + 2
    failing = [f for f in p.findings if f.status == Status.FAIL]
    assert [f.check for f in failing] == ["ib.port_state"] and "mlx5_11" in failing[0].message
    assert all(f.host == "node7" for f in p.findings)


@pytest.mark.parametrize("name", ["gpud-a100-azure-ibstatus-all-active.txt",
                                  "gpud-h100-ib-ndr-all-active-space-indented.txt",
                                  "azhpc-ibstatus-ethernet-and-ib-hdr.txt"])
def test_a_healthy_ibstat_or_ibstatus_gives_no_failing_finding(name):
    p = pasted.scan(real.node_text("ibstat", name))
    assert [b.kind for b in p.blocks] == ["ibstatus" if "ibstatus" in name else "ibstat"]
    assert not [f for f in p.findings if f.status == Status.FAIL]


def test_an_ibv_devinfo_block_is_found_and_a_port_down_in_it_fails():
    p = pasted.scan(real.node_text("ibv_devinfo", "deepep60-cx6dx-eth-port-down-mtu1024-fragment.txt"))
    assert [b.kind for b in p.blocks] == ["ibv_devinfo"]
    assert [f.check for f in p.findings if f.status == Status.FAIL] == ["ib.port_state"]
    healthy = pasted.scan(real.node_text("ibv_devinfo", "azhpcimages44-azure-hbv2-renamed-hcas-fragment.txt"))
    assert [b.kind for b in healthy.blocks] == ["ibv_devinfo"] and not healthy.findings


def test_ulimit_a_with_a_64k_memlock_is_found_and_judged():
    ulimit = (real.ROOT / "cases" / "node-ucx8229-ulimit-a-memlock-64k-create-cq-enomem" / "node-a" / "ulimit.txt")
    real.require()
    p = pasted.scan(log_text(HEALTHY_LOG) + ulimit.read_text(encoding="utf-8"))
    assert [b.kind for b in p.blocks] == ["ulimit -a"]
    assert [f.check for f in p.findings] == ["limits.memlock"]


def test_df_h_of_dev_shm_is_read_in_its_human_units():
    # written for this test: `df -h /dev/shm` in a container with Docker's default
    small = pasted.scan("Filesystem      Size  Used Avail Use% Mounted on\nshm              64M     0   64M   0% /dev/shm\n")
    assert [f.check for f in small.findings] == ["limits.shm"] and small.findings[0].status in (Status.WARN, Status.FAIL)
    big = pasted.scan("Filesystem      Size  Used Avail Use% Mounted on\ntmpfs           252G     0  252G   0% /dev/shm\n")
    assert [b.kind for b in big.blocks] == ["df"] and not big.findings


CASES = Path(__file__).resolve().parents[1] / "cases"


def test_a_df_row_of_dev_shm_pasted_without_its_header_is_read_in_its_human_units():
    # a blog's DataLoader traceback and the row 'df -h /dev/shm/' printed, quoted without df's header line
    case = CASES / "node-lizhenyang-blog-dataloader-socket-error-111-dev-shm-64m" / "posted-traceback-and-df.txt"
    p = pasted.scan(case.read_text(encoding="utf-8"), str(case))
    assert [b.kind for b in p.blocks] == ["df"]
    assert [f.check for f in p.findings] == ["limits.shm"] and p.findings[0].status in (Status.WARN, Status.FAIL)
    # NCCL's own lines about its /dev/shm segments are no df row; a run that worked holds none either
    for name in ("net-nccldocs-failed-to-extend-dev-shm-segment/posted-nccl-warn.txt",
                 "net-torchtitan853-ci-container-dev-shm-16mb-nccl-shm-segment-failed/posted-nccl-error.txt"):
        assert not [b for b in pasted.scan((CASES / name).read_text(encoding="utf-8")).blocks if b.kind == "df"]
    assert not pasted.scan(log_text("p2p-direct-pointer-and-shm-8gpu-single-process.log"))


def test_a_healthy_log_alone_has_no_pasted_block_and_no_signal():
    for name in (HEALTHY_LOG, FAILED_LOG, "p2p-direct-pointer-and-shm-8gpu-single-process.log"):
        assert not pasted.scan(log_text(name))


# ---- verdicts ---------------------------------------------------------------------------------------------------


def test_a_port_down_pasted_beside_a_run_that_worked_is_never_silent():
    text = log_text(HEALTHY_LOG) + real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    assert alarms(log_text(HEALTHY_LOG)) == []
    d = alarms(text)
    assert d and d[0].severity == "fail" and "mlx5_11" in d[0].summary


def test_a_polling_port_pasted_beside_a_failed_run_is_named():
    base = [d.category for d in alarms(log_text(FAILED_LOG))]
    assert "ib_port_down" not in base
    d = alarms(log_text(FAILED_LOG) + real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt"))
    assert d[0].category == "ib_port_down" and d[0].confidence == "medium"
    assert any("mlx5_11" in e.text for e in d[0].evidence)


def test_a_polling_port_pasted_alone_is_named_a_port_down():
    d = alarms(real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt"))
    assert d[0].category == "ib_port_down" and d[0].severity == "fail"
    assert any("mlx5_11" in e.text for e in d[0].evidence)
    assert not any("mlx5_5" in e.text for e in d[0].evidence)  # Disabled: switched off on purpose, not named


def test_a_roce_port_disabled_on_a_node_with_no_port_active_pasted_alone_is_named_a_port_down():
    # a real paste (tests/cases): a ConnectX-3's only port, Ethernet, Down/Disabled with no cable; a RoCE port's
    # driver reads Disabled switched off or unplugged alike, and no other port of the node has a link
    case = (Path(__file__).resolve().parents[1] / "cases"
            / "net-pastebin-8zwb-ibstat-cx3-ethernet-port-down-disabled-no-cable")
    d = alarms((case / "posted-paste.txt").read_text(encoding="utf-8"))
    assert d[0].category == "ib_port_down" and d[0].severity == "warn"
    assert any("mlx4_0 port 1" in e.text for e in d[0].evidence)


@pytest.mark.parametrize("name", ["gpud-h100-ib-ndr-3-down-disabled.txt",
                                  "gpud99-cx6dx-down-disabled-truncated-by-poster.txt"])
def test_disabled_ports_pasted_alone_are_not_named_a_port_down(name):
    assert "ib_port_down" not in [d.category for d in alarms(real.node_text("ibstat", name))]


@pytest.mark.parametrize("name", ["gpud-a100-azure-ibstatus-all-active.txt", "azhpc-ibstatus-ethernet-and-ib-hdr.txt",
                                  "gpud-h100-ib-ndr-all-active-space-indented.txt"])
def test_healthy_ibstat_pasted_alone_stays_quiet(name):
    assert alarms(real.node_text("ibstat", name)) == []


def test_a_down_port_whose_adapter_has_another_port_active_is_a_spare_not_named():
    # Written for this test from the real capture: mlx5_11 given the System image GUID of mlx5_10 (Active), as
    # the two ports of one dual-port card read; the capture itself gives each its own GUID.
    text = real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    guid = "System image GUID: 0xa088c20300bb3514"
    assert text.count(guid) == 1
    spare = text.replace(guid, "System image GUID: 0xa088c20300bb98b4")
    assert "ib_port_down" not in [d.category for d in alarms(spare)]


def test_a_polling_port_pasted_after_a_run_that_did_not_fail_is_not_named():
    text = log_text(HEALTHY_LOG) + real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    assert "ib_port_down" not in [d.category for d in alarms(text)]


def test_healthy_pastes_beside_a_failed_run_change_nothing():
    base = [(d.category, d.severity) for d in alarms(log_text(FAILED_LOG))]
    text = log_text(FAILED_LOG) + real.node_text("ibstat", "gpud-h100-ib-ndr-all-active-space-indented.txt")
    assert [(d.category, d.severity) for d in alarms(text)] == base


def test_a_roce_port_with_a_non_zero_lid_beside_modify_qp_einval_is_the_nic_support():
    # written for this test, in the shape of NVIDIA/nccl#622: an irdma RoCE HCA whose port reports 'Base lid: 1'
    warn = ("machine1:196207:196244 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error "
            "Invalid argument\nmachine1:196207:196244 [0] NCCL INFO transport/net_ib.cc:415 -> 2\n")
    ibstat = ("CA 'rocep216s0f0'\n\tCA type:\n\tNumber of ports: 1\n\tFirmware version: 1.50\n\tPort 1:\n"
              "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 100\n\t\tBase lid: {lid}\n\t\tLMC: 0\n")
    d = alarms(warn + ibstat.format(lid=1))
    assert d[0].category == "rdma_nic_unsupported" and d[0].confidence == "high"
    assert "non-zero LID" in d[0].summary
    assert alarms(warn + ibstat.format(lid=0))[0].category != "rdma_nic_unsupported"


# ---- processes ended by a signal ---------------------------------------------------------------------------------

# written for these tests: torchelastic's failure block as it prints it for a rank killed by SIGKILL
ELASTIC = """============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-05-01_10:00:00
  host      : node3
  rank      : 5 (local_rank: 1)
  exitcode  : -{no} (pid: 4242)
  error_file: <N/A>
  traceback : Signal {no} ({name}) received by PID 4242
============================================================
"""
BLOCK_ONLY = "\n".join(l for l in ELASTIC.splitlines() if "FAILED" not in l and "Root Cause" not in l) + "\n"


def test_a_failure_block_with_only_signal_9_is_a_failure_never_nothing_broken():
    d = alarms(BLOCK_ONLY.format(no=9, name="SIGKILL"))
    assert d and d[0].severity == "fail" and d[0].id == "killed-by-signal"
    assert "cause unconfirmed" in d[0].summary and d[0].confidence == "low"
    assert any("Signal 9 (SIGKILL)" in e.text for e in d[0].evidence)
    assert d[0].nodes == ["node3"]  # torchelastic's 'host :' line of the block


def test_sigkill_with_the_kernels_oom_line_is_the_oom_killer():
    dmesg = "[Wed May  1 10:00:00 2024] Out of memory: Killed process 4242 (python) total-vm:812345678kB\n"
    d = alarms(ELASTIC.format(no=9, name="SIGKILL") + dmesg)
    assert d[0].id == "killed-by-signal" and d[0].confidence == "high" and "OOM killer" in d[0].summary


def test_sigbus_points_at_dev_shm():
    d = alarms(BLOCK_ONLY.format(no=7, name="SIGBUS"))
    assert d[0].category == "shm_too_small" and d[0].severity == "fail"
    ucx = "[host1:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
    assert alarms(ucx)[0].category == "shm_too_small" and alarms(ucx)[0].nodes == ["host1"]


def test_a_crash_by_segv_or_abort_is_reported_unexplained_and_other_causes_come_first():
    d = alarms(BLOCK_ONLY.format(no=11, name="SIGSEGV"))
    assert d[0].category == "unexplained" and "SIGSEGV" in d[0].summary
    shm = ("host1:1:2 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device\n")
    assert alarms(shm + BLOCK_ONLY.format(no=6, name="SIGABRT"))[0].category == "shm_too_small"


def test_signals_that_do_not_mean_a_failure_are_left_alone():
    assert pasted.signal_of("  exitcode  : 1 (pid: 12)") is None
    assert alarms(BLOCK_ONLY.format(no=15, name="SIGTERM")) == [] or \
        all(d.id != "killed-by-signal" for d in alarms(BLOCK_ONLY.format(no=15, name="SIGTERM")))
    assert pasted.signal_of("mpirun noticed that process rank 1 with PID 7 on node n2 exited on signal 9 (Killed).") == 9
    assert pasted.signal_of("[2024-01-01] [ERROR] [launch.py:321:sigkill_handler] ['python'] exits with return code = -9") == 9


# ---- nvidia-smi -q ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpud-titan-v-560-full.txt", "gpud-8x-rtx4090-535-gpu0-excerpt.txt",
                                  "azhpc-a100-sxm4-40gb-460-passthrough-gpu0-excerpt.txt"])
def test_a_healthy_nvidia_smi_q_is_found_and_gives_nothing(name):
    text = log_text(HEALTHY_LOG) + real.node_text("nvidia-smi-q", name)
    p = pasted.scan(text)
    assert [b.kind for b in p.blocks] == ["nvidia-smi -q"] and not p.findings
    assert alarms(text) == []


def test_row_remapping_pending_in_a_pasted_nvidia_smi_q_is_named_beside_a_failed_run():
    q = real.node_text("nvidia-smi-ecc-rowremap", "gpud-a10-535-remap-pending-ue4-full-q.txt")
    p = pasted.scan(q)
    assert [f.check for f in p.findings] == ["gpuhealth.row_remap"]
    d = alarms(log_text(FAILED_LOG) + q)
    assert d[0].category == "gpu_ecc_rowremap"


# ---- rdma link ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["3fs283-cx6dx-2port-trailing-space.txt", "spiderpool-roce-cx-rdma-link-indented.txt",
                                  "spiderpool-sriov-ib-vf-rdma-link-indented.txt"])
def test_a_healthy_rdma_link_is_found_and_gives_nothing(name):
    p = pasted.scan(log_text(FAILED_LOG) + real.node_text("rdma-link", name))
    assert [b.kind for b in p.blocks] == ["rdma_link"] and not p.findings


def test_a_polling_port_in_rdma_link_fails():
    # written for this test: `rdma link` of a port without a link partner
    p = pasted.scan("link mlx5_7/1 subnet_prefix fe80:0000:0000:0000 lid 3403 sm_lid 1 lmc 0 state DOWN "
                    "physical_state POLLING\n")
    assert [(f.check, f.status) for f in p.findings] == [("ib.port_state", Status.FAIL)]


def test_an_unconfirmed_sigkill_comes_after_the_cause_the_log_names():
    log = log_text("socket-2node-shm-extend-failure-and-connect-abort-nccltests.log")
    base = alarms(log)[0].category
    d = alarms(log + BLOCK_ONLY.format(no=9, name="SIGKILL"))
    assert d[0].category == base == "shm_too_small"
    assert any(x.id == "killed-by-signal" for x in d)


# ---- read only where a word of a kind is, in pieces of any size ------------------------------------------------


@pytest.mark.parametrize("sep", ["\n", "\r\n"])
def test_blocks_deep_in_a_long_log_are_found_at_their_lines_as_in_the_paste_alone(sep):
    log = log_text(FAILED_LOG) * 40
    ibstat = real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    ulimit = (real.ROOT / "cases" / "node-ucx8229-ulimit-a-memlock-64k-create-cq-enomem" / "node-a" / "ulimit.txt")
    paste = "root@gpu7:~# ibstat\n" + ibstat + "\n" + ulimit.read_text(encoding="utf-8")
    alone = pasted.scan(paste.replace("\n", sep), "paste")
    text = (log + paste + log).replace("\n", sep)
    found = pasted.scan(text, "job.log")
    offset = log.count("\n")
    assert [(b.kind, b.text, b.host, b.lineno) for b in found.blocks] == \
        [(b.kind, b.text, b.host, b.lineno + offset) for b in alone.blocks]
    assert [b.kind for b in found.blocks] == ["ibstat", "ulimit -a"] and found.blocks[0].host == "gpu7"
    assert [f.check for f in found.findings] == [f.check for f in alone.findings]
    for size in (1, 4093, 1 << 20):  # fed in pieces that split lines, as a pipe gives them
        reader = pasted.Reader("job.log")
        data = text.encode("utf-8")
        for at in range(0, len(data), size):
            reader.feed(data[at:at + size])
        fed = reader.end()
        assert [(b.kind, b.text, b.host, b.lineno) for b in fed.blocks] == \
            [(b.kind, b.text, b.host, b.lineno) for b in found.blocks], size


def _progress(n: int) -> str:
    # written for this test: a training loop's progress lines, no word of any reader in them
    return "".join(f"epoch 1 step {i} loss 2.{i % 97:02d} lr 0.0003\n" for i in range(n))


@pytest.mark.parametrize("sep", ["\n", "\r\n"])
@pytest.mark.parametrize("block,chunk", [(4096, 8192), (1 << 14, 1 << 16), (1 << 16, 5000)])
def test_the_prefilter_hands_the_words_it_found_and_the_lines_it_numbered_and_the_blocks_are_the_same(
        sep, block, chunk, monkeypatch):
    from nccldiag.nccl import parser as nparser, scan
    from nccldiag.paste import reader as preader

    if not preader._words().fast:
        pytest.skip("Hyperscan is not installed: the reader searches the text itself")
    ibstat = real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    ulimit = (real.ROOT / "cases" / "node-ucx8229-ulimit-a-memlock-64k-create-cq-enomem" / "node-a" / "ulimit.txt")
    paste = "root@gpu7:~# ibstat\n" + ibstat + "\n" + ulimit.read_text(encoding="utf-8")
    log = "".join(line + _progress(20) for line in log_text(FAILED_LOG).splitlines(keepends=True))
    text = (log * 3 + paste + log + paste.replace("gpu7", "gpu8") + _progress(500)).replace("\n", sep)
    data = text.encode("utf-8")
    monkeypatch.setattr(preader, "CHUNK", chunk)
    monkeypatch.setattr(preader, "LOOKBACK", chunk // 4)
    alone = pasted.Reader("job.log")
    alone.feed(data)
    expected = alone.end()
    searched = []
    words = preader._words()
    starts = words.starts
    monkeypatch.setattr(words, "starts", lambda buf, start: searched.append(start) or starts(buf, start))
    import io
    for tail in (b"", b"no newline at the end"):
        searched.clear()
        fed = pasted.Reader("job.log")
        scan.feed(nparser.Parser(), "job.log", io.BytesIO(data + tail), block=block, reader=fed)
        found = fed.end()
        assert found.blocks == expected.blocks and found.partial == expected.partial
        assert (found.signals, found.oom, found.memlock_unlimited) == \
            (expected.signals, expected.oom, expected.memlock_unlimited)
        assert [b.kind for b in found.blocks] == ["ibstat", "ulimit -a", "ibstat", "ulimit -a"]
        assert len(searched) <= (1 if tail else 0)  # the last chunk, where the text ends without a newline


def test_without_hyperscan_the_expression_finds_the_same_blocks_and_a_long_text_is_bounded(monkeypatch):
    from nccldiag.paste import reader

    ibstat = real.node_text("ibstat", "gpud-h100-roce400g-down-polling-disabled.txt")
    text = log_text(FAILED_LOG) * 20 + "root@gpu7:~# ibstat\n" + ibstat + log_text(FAILED_LOG)
    fast = pasted.scan(text, "job.log")
    slow_words = reader._Words.__new__(reader._Words)
    slow_words.db = None  # as where Hyperscan is not installed
    monkeypatch.setattr(reader, "_WORDS", slow_words)
    slow = pasted.scan(text, "job.log")
    assert [(b.kind, b.lineno, b.host) for b in slow.blocks] == [(b.kind, b.lineno, b.host) for b in fast.blocks]
    assert [b.kind for b in slow.blocks] == ["ibstat"] and not slow.bounded
    monkeypatch.setattr(reader, "SLOW_BOUND", len(log_text(FAILED_LOG)))
    cut = pasted.scan(text, "job.log")
    assert not cut.blocks and cut.bounded and "job.log" in cut.bounded[0]


def test_a_dcgmi_table_pasted_alone_or_beside_a_run_that_worked_names_the_failed_test():
    case = Path(__file__).resolve().parents[1] / "cases" / "gpu-mlengineering-dcgmi-diag-r2-gpu-memory-fail-faulty-node"
    table = (case / "posted-dcgmi-r2.txt").read_text(encoding="utf-8")
    assert [d.category for d in alarms(table)][:1] == ["gpu_lost_xid"]
    beside = alarms(log_text(HEALTHY_LOG) + table)  # the lines of an area's output read beside a run that worked
    assert beside and all("could not" not in d.summary for d in beside)


FLAP_CASE = Path(__file__).resolve().parents[1] / "cases" / "net-rccl1423-rdma-link-down-polling-flapping-port"


def test_rdma_link_run_again_while_the_port_flaps_warns_of_the_port_with_both_readings():
    # the three real 'rdma link' outputs of ROCm/rccl#1423 (tests/cases): DOWN/POLLING, DOWN/LINK_UP, ACTIVE/LINK_UP:
    # the port is Active at the last reading, nothing failed after it: a flap, a warning, not a port down
    text = (FLAP_CASE / "posted-rdma-link.txt").read_text(encoding="utf-8")
    d = alarms(text)
    assert d[0].category == "ib_port_down" and d[0].severity == "warn"
    assert "came back" in d[0].summary and any("mlx5_7" in e.text for e in d[0].evidence)
    assert fails_run(d[0])  # the Down readings say the link failed: a warning, but no all-clear (exit 1)
    found = pasted.scan(text).findings
    assert [(f.check, f.status) for f in found] == [("ib.port_state", Status.WARN)] * 2
    for f in found:  # each with its own reading and the Active one after it
        assert "went down and came back" in f.message
        assert any("state DOWN" in e for e in f.evidence) and any("state ACTIVE" in e for e in f.evidence)


def test_a_port_down_at_its_last_reading_stays_a_failure():
    # the same real readings in another order (rearranged for this test): Active first, Down last
    readings = (FLAP_CASE / "posted-rdma-link.txt").read_text(encoding="utf-8").strip().split("\n\n")
    text = "\n\n".join([readings[2], readings[0]]) + "\n"
    d = alarms(text)
    assert d[0].category == "ib_port_down" and d[0].severity == "fail" and "came back" not in d[0].summary
    assert [(f.check, f.status) for f in pasted.scan(text).findings] == [("ib.port_state", Status.FAIL)]
    # down, up, down again: still down at the last reading
    text = "\n\n".join([readings[0], readings[2], readings[1]]) + "\n"
    assert alarms(text)[0].severity == "fail"
    assert Status.FAIL in [f.status for f in pasted.scan(text).findings]


@pytest.mark.parametrize("name", ["3fs283-cx6dx-2port-trailing-space.txt", "spiderpool-roce-cx-rdma-link-indented.txt"])
def test_a_healthy_rdma_link_run_twice_stays_quiet(name):
    text = real.node_text("rdma-link", name)
    assert alarms(text + "\n" + text) == []


# ---- lspci's ACS lines alone ---------------------------------------------------------------------------------------


def _acs_lines(name: str, prefix: str) -> str:
    """The real capture's ACSCtl lines, their indentation taken off and a host prefix put on (as pdsh or clush
    print them): the shape of a 'lspci -vvv | grep ACSCtl' run on many nodes."""
    lines = [l.strip() for l in real.node_text("lspci", name).splitlines() if "ACSCtl:" in l]
    assert lines
    return "".join(f"{prefix}{l}\n" for l in lines)


@pytest.mark.parametrize("prefix", ["", "node3: "])
def test_acs_lines_alone_without_their_indentation_are_judged_by_the_acs_check(prefix):
    d = alarms(_acs_lines("gpud-h100-dell-pmc-sierra-switch-acs-on.txt", prefix))
    assert d and d[0].category == "acs_iommu_p2p"
    assert "ACS redirect" in d[0].summary


@pytest.mark.parametrize("prefix", ["", "node3: "])
def test_acs_lines_alone_of_a_path_with_acs_off_stay_quiet(prefix):
    text = _acs_lines("gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt", prefix)
    p = pasted.scan(text)
    assert [b.kind for b in p.blocks] == ["lspci"] and alarms(text) == []



# ---- lspci's link lines with their indentation gone ------------------------------------------------------------------

FREEBSD_X2 = (Path(__file__).resolve().parents[1] / "cases"
              / "list-gaps76e-freebsd-hackers-ql41212-25gbe-pciconf-link-x2-of-x8-lspci-downgraded-13gbps")


def _flush_left(text: str) -> str:
    return "".join(l.lstrip(" \t") + "\n" for l in text.splitlines())


def test_a_link_register_s_bits_line_flush_left_stays_in_its_lspci_block():
    # real: the freebsd-hackers report's lspci block (LnkCap, its 'ClockPM+ Surprise- ...' bits, LnkSta), trimmed
    # flush left as a chat pastes it: the bits line keeps LnkCap and LnkSta in one block, read as a narrow link
    text = _flush_left((FREEBSD_X2 / "posted-pciconf-lspci.txt").read_text(encoding="utf-8"))
    assert [b.kind for b in pasted.scan(text).blocks] == ["lspci"]
    d = alarms(text)
    assert d and d[0].category == "pcie_link_aer" and "x2/x8" in d[0].summary
    # real: a working H100 node's lspci -vvv, its link lines and their bits lines trimmed flush left: no alarm
    kept = [l for l in real.node_text("lspci", "gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt").splitlines()
            if l.strip().startswith(("LnkCap:", "LnkSta:", "ClockPM", "TrErr"))]
    assert kept
    assert alarms(_flush_left("\n".join(kept))) == []

# ---- a job's monitor ---------------------------------------------------------------------------------------------

BLOOM = Path(__file__).resolve().parents[1] / "cases" / "gpu-bloom176b-logbook-eval-hang-no-timeout-dataloader-deadlock"


def test_a_job_its_monitor_says_is_running_for_hours_with_no_line_of_its_own_is_a_hang():
    # real: the BLOOM-176B logbook's job log tail (tests/cases): iteration lines, then hourly PULSE lines only
    d = alarms((BLOOM / "posted-job-log-tail.log").read_text(encoding="utf-8"))
    assert d[0].category == "rank_hang_timeout" and d[0].severity == "fail"
    assert "tr11-176B-ml" in d[0].summary and "2 h 00 min" in d[0].summary


def test_a_monitor_s_lines_between_the_job_s_own_lines_or_alone_are_no_hang():
    # the same real lines rearranged for this test: the job printing between two monitor lines, and the monitor's
    # lines with nothing of the job before them
    lines = (BLOOM / "posted-job-log-tail.log").read_text(encoding="utf-8").splitlines(keepends=True)
    job, pulses = lines[:4], [l for l in lines[4:] if "running for" in l]
    assert len(job) == 4 and len(pulses) == 3
    moving = "".join([job[0], pulses[0], job[2], pulses[1], job[0], pulses[2]])
    assert [b.kind for b in pasted.scan(moving).blocks] == ["job monitor"] * 3
    assert alarms(moving) == []
    assert alarms("".join(pulses)) == []


def test_a_watchdog_whose_heartbeat_monitor_timed_out_is_a_hang_naming_the_rank():
    # real: hiyouga/LlamaFactory#6953 (the sample of tests/lexicon/real.toml)
    import tomllib
    samples = tomllib.loads((Path(__file__).resolve().parents[1] / "lexicon" / "real.toml").read_text("utf-8"))
    text = next(s["text"] for s in samples["sample"] if s["url"].endswith("LlamaFactory/issues/6953"))
    import io
    from nccldiag.nccl import scan
    lines: List = []
    facts = scan.parse_streams([("job.log", io.BytesIO(text.encode()))], failure_lines=lines)
    # c10's ERROR line before the heartbeat's ('... preparing to dump debug info.') is of the glog-error shape
    assert [l.shape for l in lines] == ["glog-error", "nccl-watchdog-stuck"]
    d = [x for x in diagnose(Inputs(logs=facts, log_findings=nccl_checks.judge(facts), failure_lines=lines,
                                    pasted=pasted.scan(text, "job.log"))) if x.severity in ("fail", "warn")]
    assert d[0].category == "rank_hang_timeout" and d[0].severity == "fail" and "ranks 144" in d[0].summary


# ---- the link tools: ifconfig, ip link, ethtool --------------------------------------------------------------------

FREEBSD = Path(__file__).resolve().parents[1] / "cases" / "net-nvidia-freebsd-docs-ifconfig-mce0-no-carrier-fec-sync-loss"
HEALTHY_IP_A = Path(__file__).resolve().parents[1] / "netdev" / "jiangbo-k8s-hostnetwork-ip-a-healthy.txt"


def test_a_fabric_port_switched_on_with_no_carrier_in_ifconfig_is_a_port_down():
    # real: NVIDIA's FreeBSD driver documentation (tests/cases): a 100GBase-CR4 port, 'status: no carrier'
    d = alarms((FREEBSD / "posted-ifconfig-mce0.txt").read_text(encoding="utf-8"))
    assert d[0].category == "ib_port_down" and d[0].severity == "fail"
    assert "mce0" in d[0].summary and "FEC sync loss" in d[0].summary


def test_a_healthy_ip_a_with_bridges_without_carrier_and_ports_switched_off_stays_quiet():
    # real (tests/netdev/SOURCES.md): docker0 and cni0 NO-CARRIER with addresses, kube-ipvs0 switched off
    text = HEALTHY_IP_A.read_text(encoding="utf-8")
    p = pasted.scan(text)
    assert [b.kind for b in p.blocks] == ["netdev link"] and not p.findings
    assert alarms(text) == []


def test_an_addressed_port_that_loses_its_carrier_in_ip_a_is_named_with_its_address():
    # the real healthy capture with enp0s8's flags changed to NO-CARRIER (written for this test)
    text = HEALTHY_IP_A.read_text(encoding="utf-8")
    up = "3: enp0s8: <BROADCAST,MULTICAST,UP,LOWER_UP>"
    assert text.count(up) == 1
    d = alarms(text.replace(up, "3: enp0s8: <NO-CARRIER,BROADCAST,MULTICAST,UP>"))
    assert d[0].category == "ib_port_down" and "enp0s8" in d[0].summary and "192.168.56.103" in d[0].summary
    assert "docker0" not in d[0].summary


def test_a_port_switched_off_or_shown_only_by_ethtool_is_not_named():
    # the real FreeBSD record with its UP flag taken off (written for this test): switched off on purpose
    record = (FREEBSD / "posted-ifconfig-mce0.txt").read_text(encoding="utf-8")
    assert "flags=8843<UP,BROADCAST," in record
    assert alarms(record.replace("flags=8843<UP,BROADCAST,", "flags=8842<BROADCAST,")) == []
    # written for this test, in ethtool's words: a link down whose use ethtool cannot tell
    ethtool = "Settings for eth2:\n\tSpeed: Unknown!\n\tPort: Direct Attach Copper\n\tLink detected: no\n"
    assert [b.kind for b in pasted.scan(ethtool).blocks] == ["netdev link"] and alarms(ethtool) == []
    # with the same host's ip addr showing it switched on and addressed, it is named
    ip = ("4: eth2: <BROADCAST,MULTICAST,UP> mtu 9000 qdisc mq state DOWN group default qlen 1000\n"
          "    link/ether 0c:42:a1:00:00:02 brd ff:ff:ff:ff:ff:ff\n"
          "    inet 10.10.1.12/24 brd 10.10.1.255 scope global eth2\n")
    d = alarms(ip + "\n" + ethtool)
    assert d[0].category == "ib_port_down" and "eth2" in d[0].summary and "Link detected: no" in d[0].summary


# ---- py-spy dump -------------------------------------------------------------------------------------------------

PYSPY = Path(__file__).resolve().parents[1] / "pyspy" / "bloom176b-chronicles-py-spy-eval-hang-2-nodes.txt"


def test_py_spy_stacks_of_ranks_in_collectives_warn_of_a_hang_and_name_the_rank_elsewhere():
    # real: the BLOOM-176B logbook's py-spy traces (tests/pyspy/SOURCES.md)
    text = PYSPY.read_text(encoding="utf-8")
    assert {b.kind for b in pasted.scan(text).blocks} == {"py-spy dump"}
    d = alarms(text)
    assert d[0].category == "rank_hang_timeout" and d[0].severity == "warn" and d[0].confidence == "medium"
    assert "15 ranks wait in collectives" in d[0].summary and "1 elsewhere (wait (threading.py) x1)" in d[0].summary


def test_py_spy_stacks_outside_any_collective_say_nothing_of_a_hang():
    # the same real dump's DataLoader stack alone (cut for this test)
    text = PYSPY.read_text(encoding="utf-8")
    start = text.index('Thread 688514 (idle): "MainThread"')
    alone = text[start:text.index("```", start)]
    assert alarms(alone) == []


def test_ibstat_pasted_before_and_after_a_fix_warns_and_after_and_before_fails():
    # two real ibstat captures (../shared/fixtures/node) pasted as one admin's "before" and "after", each behind the
    # prompt of its run (the pairing and the prompts are this test's): mlx5_7 Down/LinkUp, then every port Active
    down = "root@gpu7:~# ibstat\n" + real.node_text(
        "ibstat", "netop249-sriov-vf-cx6-state-down-physical-linkup-lid65535-spaces.txt")
    up = "root@gpu7:~# ibstat\n" + real.node_text("ibstat", "gpud-h100-ib-ndr-all-active-space-indented.txt")
    (f,) = pasted.scan(down + "\n" + up).findings
    assert f.check == "ib.port_state" and f.status is Status.WARN and f.message.startswith("mlx5_7 port 1")
    assert any("State: Down" in e for e in f.evidence) and any("State Active" in e for e in f.evidence)
    (f,) = pasted.scan(up + "\n" + down).findings
    assert f.status is Status.FAIL and "came back" not in f.message


def test_ibstat_run_twice_with_no_prompt_between_is_two_readings_not_one():
    # the same two real captures as above, pasted back to back with no prompt between them (the pairing is this
    # test's): a CA named a second time starts the second run, so the Down reading is never replaced by the later one
    down = real.node_text("ibstat", "netop249-sriov-vf-cx6-state-down-physical-linkup-lid65535-spaces.txt")
    up = real.node_text("ibstat", "gpud-h100-ib-ndr-all-active-space-indented.txt")
    p = pasted.scan(down + up)
    assert [b.kind for b in p.blocks] == ["ibstat", "ibstat"]
    (f,) = p.findings
    assert f.check == "ib.port_state" and f.status is Status.WARN and "came back" in f.message
    (f,) = pasted.scan(up + down).findings
    assert f.check == "ib.port_state" and f.status is Status.FAIL and "came back" not in f.message
    # one run of several CAs stays one reading
    assert [b.kind for b in pasted.scan(up).blocks] == ["ibstat"]
