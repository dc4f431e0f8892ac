"""The ``dcgm`` area: ``dcgmi diag`` tables read into tests, judged per test, each finding with its category.

Real tables only: ``tests/dcgmi/`` (each with its address in ``tests/dcgmi/SOURCES.md``) and the two in-repo
cases posted from the ML Engineering book. Text written for a test is said to be so where it is defined.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from nccldiag.areas import dcgm
from nccldiag.areas.base import NodeFacts
from nccldiag.diagnosis import categories
from nccldiag.model.findings import Status

HERE = Path(__file__).resolve().parents[1]
REAL = HERE / "dcgmi"
CASES = HERE / "cases"
R2 = CASES / "gpu-mlengineering-dcgmi-diag-r2-gpu-memory-fail-faulty-node" / "posted-dcgmi-r2.txt"
DEPLOYMENT = (CASES / "gpu-mlengineering-dcgmi-deployment-error-uncorrectable-remap-pending"
              / "posted-dcgmi-deployment.txt")


def judged(text):
    return dcgm.judge(dcgm.parse_diag(text), NodeFacts("n1"))


def test_healthy_table_with_skipped_tests_is_ok_and_quiet():
    found = judged((REAL / "healthy-r3-skips-slurm-on-aws.txt").read_text())
    assert [f.status for f in found] == [Status.OK]
    assert "Inforom" in found[0].actual["passed"] and "PCIe" not in found[0].actual["passed"]


def test_r2_gpu_memory_fail_is_a_gpu_fault_on_gpu_0_with_its_wrapped_warning():
    facts = dcgm.parse_diag(R2.read_text())
    test = facts.tests[0]
    assert test.name == "GPU Memory"
    assert test.results == [("pass", "GPUs: 1, 2, 3, 4, 5, 6, 7"), ("fail", "GPU: 0")]
    # the warning was cut at 45 characters inside words ('second' / 's started', 'GP' / 'U 0'): made whole
    assert "totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0 Verify" in test.messages[0][1]
    [f] = dcgm.judge(facts, NodeFacts("n1"))
    assert f.status == Status.FAIL and f.actual["category"] == "gpu_lost_xid" and "failed on GPU 0:" in f.message
    # the row that says it failed is quoted as printed (the failure lexicon's line is then cited)
    assert f.evidence[0] == "|                           | Fail - GPU: 0                                  |"


def test_deployment_error_of_uncorrectable_errors_and_pending_remaps_is_gpu_ecc_rowremap():
    [f] = judged(DEPLOYMENT.read_text())
    assert f.status == Status.FAIL
    assert f.actual["category"] == "gpu_ecc_rowremap"
    assert "uncorrectable memory errors and row remappings are pending" in f.message


def test_gpu_memory_fail_of_a_busy_gpu_keeps_both_results_and_the_warning_joined_across_rows():
    [f] = judged((REAL / "go-dcgm-52-gpu-memory-fail-cuda-busy.txt").read_text())
    assert f.status == Status.FAIL and f.actual["results"] == ["pass - GPU: 1", "fail - GPU: 0"]
    assert "cuCtxCreate Check DCGM and system logs" in f.message  # a row that ended short ended a word
    assert "Restart DCGM" in f.message and "Unable to create CUDA context" in f.message
    assert f.actual["section"] == "Hardware"


# Written for this test (not real output): rows in DCGM's layout, one test of each family, to pin the
# category each failed test is given.
_ROWS = """+-----  Integration  -------+------------------------------------------------+
| PCIe                      | Fail - GPU: 2                                  |
| NVLink                    | Fail - GPU: 1                                  |
+-----  Stress  ------------+------------------------------------------------+
| Targeted Stress           | Fail - GPU: 4                                  |
| Targeted Power            | Warn - GPU: 5                                  |
| Memory Bandwidth          | Fail - GPU: 6                                  |
|                           | Error: GPU 6 had memory errors and row         |
|                           |  remappings are pending                        |
+-----  Deployment  --------+------------------------------------------------+
| Persistence Mode          | Fail                                           |
"""


@pytest.mark.parametrize("test,status,category", [
    ("PCIe", Status.FAIL, "pcie_link_aer"),
    ("NVLink", Status.FAIL, "nvlink_error"),
    ("Targeted Stress", Status.FAIL, "gpu_lost_xid"),
    ("Targeted Power", Status.WARN, "other:gpu-power-thermal"),
    ("Memory Bandwidth", Status.FAIL, "gpu_ecc_rowremap"),
    ("Persistence Mode", Status.FAIL, "other:dcgm-deployment"),
])
def test_each_failed_test_names_its_category(test, status, category):
    found = {f.actual["test"]: f for f in judged(_ROWS)}
    assert found[test].status == status and found[test].actual["category"] == category
    assert categories.known(category)


def test_no_table_skips_quoting_what_dcgmi_said_and_nothing_collected_skips():
    # Written for this test: dcgmi's words where no host engine answers (the diagnostic never ran).
    [f] = judged("Error: unable to establish a connection to the specified host: localhost\n")
    assert f.status == Status.SKIP and "unable to establish a connection" in f.message
    assert judged(None)[0].status == Status.SKIP and judged("")[0].status == Status.SKIP


# ---- dcgmi nvlink -s ------------------------------------------------------------------------------------------

ALL_DOWN = CASES / "gpu-dcgm198-dcgmi-nvlink-link-status-all-down-diag-passes" / "posted-dcgmi.txt"
ALL_UP = CASES / "gpu-llmaction-docs-dcgmi-nvlink-s-8x-h800-8-links-up-healthy" / "posted-dcgmi-nvlink.txt"


def links_judged(text):
    facts = dcgm.DcgmFacts(links=dcgm.parse_links(text))
    return [f for f in dcgm.judge(facts, NodeFacts("n1")) if f.check == dcgm.LINK_CHECK]


def test_link_states_are_read_per_gpu():
    links = dcgm.parse_links(ALL_DOWN.read_text())
    assert [(e.entity, e.id, e.states) for e in links] == [("GPU", "0", "D" * 18), ("GPU", "1", "D" * 18)]
    up = dcgm.parse_links(ALL_UP.read_text())
    assert len(up) == 8 and all(e.states == "U" * 8 + "_" * 10 for e in up)


def test_every_link_down_and_none_up_warns_of_nvlink_without_failing_the_node():
    """Both GPUs of the DCGM#198 node have every link Down; cards with no bridge fitted would show the same."""
    [f] = links_judged(ALL_DOWN.read_text())
    assert f.status == Status.WARN and f.actual["category"] == "nvlink_error"
    assert "GPU 0: links 0-17 of 18" in f.message and "gpuId 0:" in f.evidence
    assert categories.known(f.actual["category"])


def test_links_up_with_the_rest_not_supported_is_ok():
    [f] = links_judged(ALL_UP.read_text())
    assert f.status == Status.OK and f.actual["up"] == 64


def test_a_link_down_beside_links_up_fails_and_disabled_warns():
    # text written for this test, in dcgmi's layout (the states on the entity's line, as some pastes have them)
    mixed = "GPUs:\n    gpuId 0: U U U U\n    gpuId 1: U D U U\nKey: Up=U, Down=D, Disabled=X, Not Supported=_\n"
    [f] = links_judged(mixed)
    assert f.status == Status.FAIL and f.actual["down"] == {"GPU 1": [1]} and "GPU 1: link 1 of 4" in f.message
    [g] = links_judged(mixed.replace("U D U U", "U X U U"))
    assert g.status == Status.WARN and g.actual["disabled"] == {"GPU 1": [1]}
    assert links_judged("") == [] and links_judged("nothing here\n")[0].status == Status.SKIP
