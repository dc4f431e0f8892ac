"""The boot lines of a working server that say something could not be done and are harmless read as no failure.

The real kernel log of a node whose eight A100s and HCAs then ran a job for days (tests/cases/node-m4-runlog-tr141-
dmesg-hung-task-python-gpfs-mmfs-write, up to the hang): 330 lines of BARs the kernel could not place (I/O port
windows, expansion ROMs, SR-IOV VF BARs, 2 MiB hot-plug windows of empty slots) and the missing PS/2 controller's
'probe of i8042 failed'. The real BAR failures of the cases stay failure lines. The same log's notes of sshd
crashing (the kernel's 'segfault at' of a program) are warnings of a program that crashed on the node.
"""
from __future__ import annotations

from pathlib import Path

from nccldiag.knowledge import lexicon

CASES = Path(__file__).resolve().parents[1] / "cases"
M4 = CASES / "node-m4-runlog-tr141-dmesg-hung-task-python-gpfs-mmfs-write" / "dmesg.txt"


def _boot() -> str:
    lines = M4.read_text().splitlines()
    end = next(i for i, l in enumerate(lines) if "blocked for more than" in l)
    return "\n".join(lines[:end]) + "\n"


def test_the_boot_of_a_working_server_holds_no_failure_line():
    boot = _boot()
    assert boot.count("no space for") > 100 and "probe of i8042 failed with error -5" in boot
    # the only lines read: the kernel's notes of sshd crashing on the node (a program that crashed, not the job's),
    # which the lexicon's kernel-segfault row reads as a warning, never a failure
    found = lexicon.lines_in(boot, "dmesg.txt")
    assert [(l.shape, l.severity) for l in found] == [("kernel-segfault", "warn")]
    assert all(": segfault at " in t and t.split("] ", 1)[1].startswith("sshd[") for t in found[0].texts())


def test_bar_failures_that_matter_stay_failure_lines():
    # real lines: the bridge windows of 32 GiB that could not hold a GPU's resizable BAR
    # (tests/cases/node-ogkm510-6x4090-bar15-no-space-rebar-5-of-6)
    text = (CASES / "node-ogkm510-6x4090-bar15-no-space-rebar-5-of-6" / "posted-kernel-log.txt").read_text()
    found = [l for l in lexicon.lines_in(text, "posted-kernel-log.txt") if l.shape == "pcie-no-space"]
    assert found and "BAR 15" in found[0].text


# Real lines of the kernel's ACPI interpreter about errors in a board's firmware tables, posted beside systems that
# ran: http://petermoulding.com/node/105 ("an error you may be able to ignore"), and a desktop's boot whose freeze
# came later from elsewhere (https://github.com/niri-wm/niri/issues/1879).
ACPI_TABLE_ERRORS = """\
ACPI Error: AE_NOT_FOUND, While resolving a named reference package element - ^SPI1.SPFD.CVFD (20230331/dspkginit-438)
ACPI Error: AE_NOT_FOUND, While resolving a named reference package element - ^XHCI.RHUB.HS04.VI2C (20230331/dspkginit-438)
Mar 24 07:39:27 zz kernel: ACPI BIOS Error (bug): Could not resolve symbol [\\_SB.PCI0.XHC.RHUB.SS04], AE_NOT_FOUND (20250807/dswload2-162)
Mar 24 07:39:27 zz kernel: ACPI Error: AE_NOT_FOUND, During name lookup/catalog (20250807/psobject-220)
"""


def test_the_acpi_interpreters_firmware_table_errors_are_no_failure_line():
    assert [(l.shape, l.text[:80]) for l in lexicon.lines_in(ACPI_TABLE_ERRORS, "dmesg.txt")] == []
    # an error line of another kind beside them is still one
    text = ACPI_TABLE_ERRORS + "Mar 24 07:40:01 zz kernel: nvme nvme0: I/O 12 QID 3 timeout, aborting\nERROR: the job failed\n"
    assert [l.shape for l in lexicon.lines_in(text, "dmesg.txt")] != []


# REAL: the boot of canonical/lxd#9533 (https://github.com/canonical/lxd/issues/9533, its first post's dmesg), a
# working Broadwell server whose memory runs without ECC: the sbridge EDAC driver declines the machine
LXD9533_EDAC = """\
[    3.784921] EDAC sbridge: CPU SrcID #0, Ha #0, Channel #0 has DIMMs, but ECC is disabled
[    3.784923] EDAC sbridge: Couldn't find mci handler
[    3.784923] EDAC sbridge: Failed to register device with error -19.
[    3.785098] kvm: disabled by bios
"""
# REAL: MichaIng/DietPi#4817 (https://github.com/MichaIng/DietPi/issues/4817), a machine with random crashes whose
# pnd2 EDAC driver failed with EINVAL on DIMMs it does not support
DIETPI4817_EDAC = "[Sat Oct 16 18:15:32 2021] EDAC pnd2: Failed to register device with error -22.\n"


def test_an_edac_driver_declining_a_machine_without_ecc_is_no_failure_line():
    assert [(l.shape, l.text[:100]) for l in lexicon.lines_in(LXD9533_EDAC, "dmesg.txt")] == []


def test_an_edac_driver_failing_with_another_error_stays_a_failure_line():
    assert [l.shape for l in lexicon.lines_in(DIETPI4817_EDAC, "dmesg.txt")] == ["failed-to"]
