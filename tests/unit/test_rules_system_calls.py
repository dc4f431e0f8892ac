"""The causes of failed system calls and of builds too old for the GPU, each on the real case that shows it and on
real evidence where it must stay silent: /dev/shm not writable (``shm-permission``), RDMA calls failing with
memlock unlimited (``rdma-resources-exhausted``), NCCL's system error with no WARN (``nccl-system-error``), an NCCL
or framework build that predates the GPU (``nccl-arch-unsupported``, from ``knowledge/gpu_arch.toml``).

The failing cases are the in-repo real cases of ``tests/cases`` (their sources in ``tests/cases/SOURCES.md``); the
healthy side is the shared fixtures' NCCL logs and working runs, read in place. Text written for a test says so.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nccldiag import knowledge
from nccldiag.diagnosis.rules import nccl_arch
from nccldiag.paste import ends
from tests import real, realcases

CASES = Path(__file__).resolve().parents[1] / "cases"
NEW = ("shm-permission", "rdma-resources-exhausted", "nccl-system-error", "nccl-arch-unsupported")


diagnoses = realcases.alarms_of


def case(name: str):
    return realcases.alarms_of_case(CASES / name)


# ---- /dev/shm not writable ---------------------------------------------------------------------------------------

def test_shm_open_permission_denied_is_not_a_small_dev_shm():
    ds = case("net-nccl328-shm-open-permission-denied-dev-shm-mode")
    assert ds[0].id == "shm-permission" and ds[0].category == "other:shm-permission", [(d.id, d.summary) for d in ds]
    assert ds[0].confidence == "high" and "permission denied" in ds[0].summary
    # the segment's failure NCCL prints after the refused call is cited, so nothing names a small /dev/shm
    assert not [d for d in ds if d.category == "shm_too_small"], [(d.id, d.summary) for d in ds]


def test_a_small_dev_shm_stays_shm_too_small():
    ds = diagnoses([real.nccl_log("socket-2node-shm-extend-failure-and-connect-abort-nccltests.log")])
    assert "shm-too-small" in [d.id for d in ds] and "shm-permission" not in [d.id for d in ds]
    ds = case("net-gitcode-blog-nccl-shm-segment-invalid-argument-64mb")
    assert ds[0].id == "shm-too-small", [(d.id, d.summary) for d in ds]


def test_nccl_rows_read_the_errno_of_a_refused_segment():
    rows = {r["id"]: r for r in knowledge.rows("nccl.toml")}
    import re
    for rid in ("shm-create-denied", "shm-segment-denied", "shm-open-denied-old"):
        pat = re.compile(rows[rid]["pattern"])
        assert all(pat.search(s) for s in rows[rid]["sample"]), rid
        # a segment refused for want of room is not read as refused for permissions
        assert not pat.search("Error while creating shared memory segment /dev/shm/nccl-x (size 9637888), error: "
                              "No space left on device (28)"), rid


# ---- RDMA resources exhausted, memlock unlimited ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["net-nccl638-alltoall-gdr-ibv-create-qp-failed-memlock-unlimited",
                                  "net-nccl1191-alltoall-700-nodes-ibv-create-cq-enomem-ulimit-unlimited"])
def test_ibv_failure_with_memlock_unlimited_is_not_the_memlock_limit(name):
    ds = case(name)
    assert ds[0].id == "rdma-resources-exhausted", [(d.id, d.summary) for d in ds]
    assert ds[0].confidence == "medium" and "memlock_limit" not in [d.category for d in ds]
    assert any("unlimited" in e.text for e in ds[0].evidence)


def test_ibv_failure_without_the_limit_shown_is_memlock_at_medium_with_the_other_fix():
    ds = case("net-hhhyunwoo-blog-ibv-reg-mr-failed-memlock-limit")
    assert ds[0].id == "memlock-too-low" and ds[0].confidence == "medium", [(d.id, d.summary) for d in ds]
    assert any(a.startswith("other:rdma-resources-exhausted") for a in ds[0].alternatives)


def test_memlock_unlimited_lines():
    # the lines of the real cases above, and a setting read as what it is
    assert ends.memlock_unlimited("max locked memory       (kbytes, -l) unlimited")
    assert ends.memlock_unlimited("bash -c 'ulimit -l unlimited && ulimit -n 1048576 && ./alltoall_perf -b 1'")
    assert not ends.memlock_unlimited("max locked memory       (kbytes, -l) 64")
    assert not ends.memlock_unlimited("max locked memory       (kbytes, -l) 8192 (unlimited in limits.conf?)"[:44])


# ---- NCCL's system error with no WARN -------------------------------------------------------------------------

def test_bare_system_error_names_the_system_call_category_not_nothing():
    ds = case("net-dekr18-quoted-bare-ncclsystemerror-docker-without-ipc-host")
    assert ds[0].id == "nccl-system-error" and ds[0].confidence == "low", [(d.id, d.summary) for d in ds]
    assert ds[0].severity == "fail" and "NCCL_DEBUG=INFO" in ds[0].fix
    assert any(a.startswith("shm_too_small") for a in ds[0].alternatives)


def test_a_specific_cause_outranks_the_bare_system_error():
    # one node of nccl-tests: /dev/shm is named first (the shm rule's one-node reading), the generic cause is not
    ds = case("net-nccl473-nccltests-unhandled-system-error-docker-ipc-host")
    assert ds[0].id == "shm-too-small" and "nccl-system-error" not in [d.id for d in ds]
    # a WARN names the call: the WARN's cause speaks, not this one
    ds = case("net-nccl328-shm-open-permission-denied-dev-shm-mode")
    assert "nccl-system-error" not in [d.id for d in ds]


# ---- NCCL or the framework's build too old for the GPU -----------------------------------------------------------

def test_gpu_arch_table_rows():
    rows = nccl_arch.archs()
    assert len({r["sm"] for r in rows}) == len(rows)
    for r in rows:
        # the cubin it loads is of its own capability or an older one of the same major
        assert r["names"] and r["source"] and r["kernels"] <= r["sm"] and r["kernels"] // 10 == r["sm"] // 10, r
        assert len(r["nccl"].split(".")) == 3 and len(r["cuda"].split(".")) == 2
    assert nccl_arch.arch_of_name("NVIDIA H100 80GB HBM3")[1]["sm"] == 90
    assert nccl_arch.arch_of_name("NVIDIA GeForce RTX 5090")[1]["sm"] == 120
    assert nccl_arch.arch_of_name("NVIDIA A10G") is None  # not a name of the table: nothing guessed
    assert nccl_arch.arch_of_name("Tesla V100-SXM2-32GB") is None


def test_framework_build_without_the_gpu_names_both():
    ds = case("gpu-hyenadna76-h100-torch113-cu117-sm90-no-kernel-image")
    d = ds[0]
    assert d.id == "nccl-arch-unsupported" and d.category == "nccl_too_old_for_gpu" and d.confidence == "high"
    assert "sm_90" in d.summary and "sm_86" in d.summary and "H100" in d.summary
    assert "nccl-too-old-for-gpu" not in [x.id for x in ds]


def test_nccl_version_older_than_the_gpu_names_both_versions():
    real.require()
    folder = real.ROOT / "cases" / "gpu-pytorch152077-rtx5090-nccl2143-named-symbol-not-found"
    meta = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    ds = diagnoses([folder / f for f in meta["files"]])
    assert ds[0].id == "nccl-arch-unsupported" and "2.14.3" in ds[0].summary, [(d.id, d.summary) for d in ds]


def test_supported_pair_that_failed_blames_the_build_not_the_release(tmp_path):
    # written for this test from the H100 case of NVIDIA/nccl#1372 (NCCL built for sm_80 only): the error line as
    # that log has it, with a version line and a device line naming a release and a GPU that go together
    p = tmp_path / "constructed.log"
    p.write_text("# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20\n"
                 "#\n# Using devices\n"
                 "#  Rank  0 Group  0 Pid   1234 on     gpu001 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
                 "NCCL version 2.21.5+cuda12.4\n"
                 "gpu001:1234:1300 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'\n",
                 encoding="utf-8")
    ds = diagnoses([p])
    assert ds[0].id == "nccl-arch-unsupported" and ds[0].confidence == "medium", [(d.id, d.summary) for d in ds]
    assert "2.21.5 supports" in ds[0].summary and "NVCC_GENCODE" in ds[0].summary


@pytest.mark.parametrize("name", real.names(real.ROOT / "cases", "*-healthy*") if real.AVAILABLE
                         else real.names(Path("/nonexistent")))
def test_healthy_runs_get_none_of_these(name):
    folder = real.ROOT / "cases" / name
    meta = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    if meta.get("input") != "log":
        pytest.skip("a bundle case: its checks, not a log, are judged")
    ds = diagnoses([folder / f for f in meta["files"]])
    assert not [d for d in ds if d.id in NEW], [(d.id, d.summary) for d in ds]


@pytest.mark.parametrize("name", real.names(real.NCCL_LOGS, "*.log"))
def test_shared_nccl_logs_get_none_of_the_new_causes_unless_they_fit(name):
    ds = diagnoses([real.nccl_log(name)])
    assert not [d for d in ds if d.id in ("shm-permission", "nccl-arch-unsupported", "rdma-resources-exhausted")], \
        [(d.id, d.summary) for d in ds]


# ---- the peer-memory module not loaded, from a shell transcript --------------------------------------------------

def test_empty_lsmod_grep_with_the_module_installed_is_peermem_not_loaded():
    ds = case("node-nvpeermem46-lsmod-empty-modinfo-nv-peer-mem-after-reboot")
    assert ds[0].id == "peermem-missing" and ds[0].severity == "fail" and ds[0].confidence == "high", \
        [(d.id, d.summary) for d in ds]
    assert "installed" in ds[0].confidence_why


def test_lsmod_grep_reading():
    from nccldiag.paste import reader
    # written for this test: the grep printing the module's line is not an absent module
    text = b"# lsmod | grep nvidia_peermem\nnvidia_peermem         16384  0\n# \n"
    assert reader.read(text).peermem_absent == []
    text = b"$ lsmod | grep nvidia_peermem\n$ nvidia-smi\n"
    assert [x.lineno for x in reader.read(text).peermem_absent] == [1]
    assert reader.read(b"$ lsmod | grep nvidia_peermem\n").peermem_absent == []  # nothing after: not known


@pytest.mark.parametrize("parts,quiet", [
    (("lsmod-modules", "azhpc-lsmod-centos-nv_peer_mem-mlx5.txt"), "peermem-missing"),  # the module loaded
    (("limits-ulimit", "azhpc-limits-conf-memlock-unlimited.txt"), "rdma-resources-exhausted"),  # no RDMA failure
])
def test_healthy_node_outputs_pasted_alone_name_nothing(parts, quiet):
    ds = diagnoses([real.node(*parts)])
    assert quiet not in [d.id for d in ds], [(d.id, d.summary) for d in ds]
