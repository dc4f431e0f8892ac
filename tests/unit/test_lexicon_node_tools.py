"""NVIDIA's node tools as admins paste them (DCGM's dcgmi diag and dcgmi health, nvidia-persistenced): their
failure lines are lexicon lines, their healthy lines are not."""

from nccldiag.knowledge import lexicon


def _row(line):
    shape = lexicon.shape_of(line)
    return shape.id if shape else None


def test_dcgmi_diag_failed_rows_are_read_and_passing_rows_are_not():
    # real lines: NVIDIA/go-dcgm#52 (https://github.com/NVIDIA/go-dcgm/issues/52, dcgmi diag -r 2 of DCGM 3)
    assert _row("|                           | Fail - GPU: 0                                  |") == "dcgm-fail"
    assert _row("| GPU Memory                | Pass - GPU: 1                                  |") is None
    # real line: IBM/autopilot#68 (https://github.com/IBM/autopilot/issues/68, DCGM 3.3.5): a passing cell padded to
    # the table's width, as DCGM 4's 'Fail' cell is
    assert _row("| Denylist                  | Pass                                           |") is None
    # DCGM 4's rows, in the form dcgmi/Diag.cpp prints them (HelperDisplayGlobalResult: the test's name and its
    # result; HelperDisplayEntityResults: fmt '{}{}: {}', 'GPU0: Fail', asserted by dcgmi/tests/DiagTests.cpp at
    # NVIDIA/DCGM 72fa3feaa67d716a75323a8f47c34ff3ee73f824), padded to the table's width: a form, not a copied line
    assert _row("| memory                    | Fail" + " " * 43 + "|") == "dcgm-fail"
    assert _row("|                           | GPU0: Fail" + " " * 37 + "|") == "dcgm-fail"
    assert _row("|                           | GPU1: Pass" + " " * 37 + "|") is None


def test_dcgmi_health_reads_a_failed_system_but_not_its_summary_nor_a_pcie_gpus_nvlink():
    # real lines: NVIDIA/DCGM dcgmi/tests/HealthTests.cpp at 72fa3feaa67d716a75323a8f47c34ff3ee73f824 (the output
    # of Health::GenerateOutputFromResponse that the test asserts)
    assert _row("|       -> Memory system    | Failure") == "dcgm-health-failure"
    assert _row("|       -> SM system        | Warning") is None
    assert _row("| Overall Health            | Failure") is None
    # real line of a healthy node: NVIDIA/NVSentinel#1481 (tests/cases/gpu-gaps73e-nvsentinel1481-a100-pcie-no-
    # nvlink-bridge-dcgmi-health-nvlink-down-false-positive-healthy): an A100 PCIe without an NVLink bridge
    assert _row("|    -> NVLINK system       | Failure                                       |") is None


def test_persistenced_finding_no_gpu_is_read():
    # NVIDIA/nvidia-persistenced nvidia-persistenced.c at 410f35493c277b5767877b65bb011f7f66a60ed1:
    # syslog(LOG_ERR, "Unable to find any NVIDIA devices")
    assert _row("nvidia-persistenced[1234]: Unable to find any NVIDIA devices") == "persistenced-no-devices"
