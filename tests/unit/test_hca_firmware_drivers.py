"""The HCA firmware diagnosis reads firmware complaints of RDMA and network adapters only.

Every driver with firmware complains of it in the kernel log with the same words; a real boot log of an HPE node
(tests/cases/node-m4-runlog-tr141-dmesg-hung-task-python-gpfs-mmfs-write, its smartpqi storage controller: 'Firmware
Triage not supported by controller') must not be read as an HCA's firmware, while the real mlx4 complaint of
../shared/fixtures/cases/node-trinity219-mlx4-hca-old-firmware-ib-device-missing still is.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from nccldiag.diagnosis.rules import hca_firmware
from tests import realcases

CASES = Path(__file__).resolve().parents[1] / "cases"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "cases"
STORAGE = "[Wed Mar  1 17:39:26 2023] smartpqi 0000:64:00.0: Firmware Triage not supported by controller"
MLX4 = "[  939.318810] mlx4_en 0000:0d:00.0: LSO not supported, please upgrade to later FW version to enable LSO"


def test_a_storage_controllers_firmware_words_are_not_an_hcas():
    assert hca_firmware.FW.search(STORAGE) and not hca_firmware._an_adapters(STORAGE)
    assert hca_firmware.FW.search(MLX4) and hca_firmware._an_adapters(MLX4)
    assert hca_firmware._an_adapters("firmware version 12.1 is not supported")  # no driver named: kept


def test_the_real_boot_log_with_a_smartpqi_controller_names_no_hca_firmware():
    folder = CASES / "node-m4-runlog-tr141-dmesg-hung-task-python-gpfs-mmfs-write"
    log = (folder / "dmesg.txt").read_text()
    assert STORAGE in log
    alarms = realcases.alarms_of_case(folder)
    assert "hca_firmware" not in {d.category for d in alarms}
    assert alarms[0].category == "io_hang"


def test_the_real_mlx4_firmware_complaint_is_still_read():
    folder = SHARED / "node-trinity219-mlx4-hca-old-firmware-ib-device-missing"
    if not folder.is_dir():
        pytest.skip("../shared/fixtures is not at hand")
    assert "hca_firmware" in {d.category for d in realcases.alarms_of_case(folder)}
