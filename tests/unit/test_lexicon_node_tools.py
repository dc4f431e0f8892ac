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


def test_nvml_errors_that_stop_a_gpu_tool_are_read_and_its_routine_answers_are_not():
    # real line: ngi644/datadog_nvml#12 (pynvml's exception for NVML_ERROR_NO_PERMISSION)
    assert _row("      NVMLError_NoPermission: Insufficient Permissions") == "nvml-error"
    # real line: microsoft/WSL#14339 (nvidia-smi after 'Failed to initialize NVML: GPU access blocked by the
    # operating system')
    assert _row("Failed to properly shut down NVML: GPU access blocked by the operating system") == "nvml-error"
    # NVML_ERROR_NOT_SUPPORTED (nvml.h of NVIDIA/go-nvml at 2f9e261fe40a7a1c54783d66805e8920564763b4): a query a GPU
    # does not offer, which monitoring libraries print on working nodes
    assert _row("pynvml.NVMLError_NotSupported: Not Supported") != "nvml-error"


def test_nvidia_smis_refused_reset_in_its_older_words_is_read():
    # real lines: NVIDIA/gpu-operator#118 (nvidia-persistenced holding the GPU) and cupy/cupy#1930
    assert _row("GPU 00000000:C1:00.0 is currently in use by another process.") == "gpu-reset-refused"
    assert _row("GPU 00000000:00:18.0 is currently in use by another process.") == "gpu-reset-refused"
    assert _row("1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA "
                "application, graphics application such as an X server, or a monitoring application such as another "
                "instance of nvidia-smi). Please first kill all processes using this device and all compute "
                "applications running in the system.") == "gpu-reset-refused"
    assert _row("Warning: MIG mode is in pending disable state for GPU 00000000:C1:00.0:In use by another client"
                ) == "gpu-reset-refused"
    # real lines of the same thread: the reset that succeeded once nvidia-persistenced was stopped, and nvidia-smi's
    # closing word
    assert _row("GPU 00000000:C1:00.0 was successfully reset.") is None
    assert _row("All done.") is None


def test_dcgm_error_catalog_messages_are_read():
    # real line: NVIDIA/NVSentinel#973 (the health monitor's node condition carrying DCGM_FR_UNCONTAINED_ERROR)
    assert _row("  GpuAllWatch                                True      Mon, 09 Mar 2026 11:41:19 +0530   Mon, 09 Mar "
                "2026 11:41:19 +0530   GpuAllWatchIsNotHealthy               ErrorCode:DCGM_FR_UNCONTAINED_ERROR GPU:0 "
                "PCI:0000:16:00.0 GPU_UUID:GPU-65e4956a-8db1-af7f-47f8-b355e3b7bf07 GPU had an uncontained error (XID "
                "95) Drain the GPU and reset it or reboot the node. Recommended Action=RESTART_VM;`") == "dcgm-gpu-error"
    # the catalog's formats (dcgmlib/dcgm_errors.h of NVIDIA/DCGM at 72fa3feaa67d716a75323a8f47c34ff3ee73f824) with
    # their arguments filled: forms, not copied lines
    assert _row("Detected 2 volatile double-bit ECC error(s) in GPU 3.") == "dcgm-gpu-error"
    # DCGM_FR_ROW_REMAP_FAILURE: 'uncorrectable memory errors' is read by the earlier ecc-uncorrectable row
    assert _row("GPU 1 had uncorrectable memory errors and row remapping failed.") == "ecc-uncorrectable"
    assert _row("GPU 1 had memory errors and row remappings are pending") == "dcgm-gpu-error"
    assert _row("Detected XID 79 for GPU 5") == "dcgm-gpu-error"
    # DCGM_FR_NVLINK_DOWN is said of every link of a PCIe GPU without NVLink (NVIDIA/NVSentinel#1481): not read
    assert _row("GPU 0's NvLink link 0 is currently down") is None


def test_dcgm_thermal_clocks_event_is_a_warning_line_and_its_power_event_is_not_read():
    # real line: NVIDIA/DCGM#270 (the host engine's log)
    line = ("ERROR [1514002:1514004] [[Health]] Detected a WARNING in health system Thermal: 'Detected clocks event due "
            "to thermal violation in GPU 2. Verify that the cooling on this machine is functional, including external, "
            "thermal material interface, fans, and any other components.")
    assert _row(line) == "dcgm-clocks-event-thermal"
    assert lexicon.shape_of(line).severity == "warn"
    # DCGM_FR_CLOCKS_EVENT_POWER (dcgm_errors.h at 72fa3feaa67d716a75323a8f47c34ff3ee73f824), a GPU at its power cap
    assert _row("Detected clocks event due to power violation in GPU 0.") is None
