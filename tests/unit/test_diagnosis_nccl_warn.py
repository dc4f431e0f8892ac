"""An NCCL WARN that names a cause no cause of the catalog explains (diagnosis/rules/nccl_warn.py): its category, as
knowledge/nccl.toml reads it, instead of 'unexplained'; the catalog's causes keep what they explain; a WARN NCCL
prints while it carries on counts only beside a failure; real logs read in place keep their verdicts.

The logs written here are labelled so: each WARN is a format string of NCCL's source (the row's text) with its
conversions filled, around the lines NCCL prints before and after it.
"""
from __future__ import annotations

import pytest

from nccldiag.diagnosis import Inputs, categories, diagnose
from nccldiag.diagnosis.rules import nccl_warn
from nccldiag.nccl import parser as nccllog
from tests import real

REAL = pytest.mark.skipif(not real.AVAILABLE, reason=real.REASON)

# written for this test: NCCL's start, a WARN, the call chain NCCL prints after it, and the framework's error
HEAD = "node1:100:200 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
FAILED = ("node1:100:200 [0] NCCL INFO init.cc:1500 -> 2\n"
          "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error, NCCL version 2.21.5\n")
WORKED = "node1:100:200 [0] NCCL INFO comm 0x5583 rank 0 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n"


def diagnoses(text: str):
    return diagnose(Inputs(logs=nccllog.parse_logs([("job.log", text)])))


def alarms(diags):
    return [d for d in diags if d.severity in ("fail", "warn")]


def test_a_warn_no_cause_knows_is_named_by_its_category_not_unexplained():
    warn = "node1:100:200 [0] misc/cudawrap.cc:285 NCCL WARN CUDA Driver version found is 11040. Minimum requirement is 12000\n"
    diags = diagnoses(HEAD + warn + FAILED)
    first = alarms(diags)[0]
    assert (first.id, first.category, first.severity, first.confidence) == (
        nccl_warn.ID, "cuda_driver_mismatch", "warn", "medium")
    assert first.nodes == ["node1"] and "CUDA Driver version found is 11040" in first.summary
    assert any(e.ref == "job.log:2" for e in first.evidence)  # the line, cited
    assert any(e.ref and e.ref.startswith("nccl.toml:") and "src/misc/cudawrap.cc" in e.text for e in first.evidence)
    assert "unexplained" not in {d.category for d in alarms(diags)}
    assert all(categories.known(d.category) for d in diags)


def test_a_warn_of_a_cause_with_no_case_of_its_own_is_named():
    warn = "node1:100:200 [0] include/checks.h:242 NCCL WARN Thread creation failed: Resource temporarily unavailable\n"
    got = [(d.id, d.category) for d in alarms(diagnoses(HEAD + warn + FAILED))]
    assert got[0] == (nccl_warn.ID, "other:thread-limit")


def test_a_warn_the_catalog_explains_is_left_to_its_cause():
    """'Call to ibv_reg_mr failed with error Cannot allocate memory' is the memlock cause's own evidence: it keeps
    it, and the table's row of the same category adds nothing."""
    warn = "node1:100:200 [0] misc/ibvwrap.cc:100 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n"
    diags = alarms(diagnoses(HEAD + warn + FAILED))
    assert diags[0].category == "memlock_limit" and diags[0].id != nccl_warn.ID
    assert nccl_warn.ID not in {d.id for d in diags}


def test_a_warn_nccl_carries_on_after_is_quiet_in_a_run_that_worked():
    warn = "node1:100:200 [0] transport/net_ib.cc:153 NCCL WARN NET/IB : mlx5_0:1 GID table changed\n"
    assert nccl_warn.ID not in {d.id for d in diagnoses(HEAD + warn + WORKED)}
    named = alarms(diagnoses(HEAD + warn + FAILED))
    assert (named[0].id, named[0].category) == (nccl_warn.ID, "roce_gid_config")


def test_a_warn_that_names_no_cause_by_itself_makes_no_diagnosis_of_its_own():
    warn = "node1:100:200 [0] proxy.cc:1905 NCCL WARN [Proxy Service 0] Failed to execute operation Connect from rank 0, retcode 2\n"
    assert nccl_warn.ID not in {d.id for d in diagnoses(HEAD + warn + FAILED)}


@REAL
@pytest.mark.parametrize("name", sorted(p.name for p in real.NCCL_LOGS.glob("*.log")) if real.AVAILABLE else [])
def test_a_real_log_whose_warns_a_cause_explains_gets_no_second_verdict(name):
    """The real logs: every WARN the table names a cause for is explained by a cause of the catalog of that
    category, or is the only diagnosis of its category."""
    diags = alarms(diagnose(Inputs(logs=nccllog.parse_logs([(name, (real.NCCL_LOGS / name).read_text(
        encoding="utf-8", errors="replace"))]))))
    ours = [d for d in diags if d.id == nccl_warn.ID]
    others = {d.category for d in diags if d.id != nccl_warn.ID}
    assert not {d.category for d in ours} & others, name
