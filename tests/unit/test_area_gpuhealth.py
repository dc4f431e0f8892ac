"""GPU health area: ECC, row remapping, retired pages, reset status and clock events from nvidia-smi -q."""
import pytest

from nccldiag.areas import gpuhealth, smiq
from tests import real

from .areahelp import findings, judge

BRAKE = ("gpu-throttle", "gpud-8x-h100-535.161.08-hw-power-brake-slowdown-active-full-q.txt")
POWERCAP = ("gpu-throttle", "gpud-8x-rtx4090-535-sw-power-cap-active-gpu1-excerpt.txt")
OLDKEY = ("gpu-throttle", "azhpc-8x-a100-40gb-460-clocks-throttle-reasons-old-key-selected.txt")
A10 = ("nvidia-smi-ecc-rowremap", "gpud-a10-535-remap-pending-ue4-full-q.txt")
A100 = ("nvidia-smi-ecc-rowremap", "mleng-a100-80gb-510-remap-pending-dram-ce177-elided.txt")
A100_SECTION = ("nvidia-smi-ecc-rowremap", "a100-sxm4-80gb-555-gpu9e-ecc-dram-ce353-remap-ce1-pending-section.txt")
RETIRED = ("nvidia-smi-ecc-rowremap", "azurehpc-8gpu-535-d-page-retirement-healthy.txt")
REPLAYS = ("pcie-aer", "gpud-8x-h100-535.183.01-replays-since-reset-58-120-full-q.txt")
TITAN = ("nvidia-smi-q", "gpud-titan-v-560-full.txt")
RTX4090 = ("nvidia-smi-q", "gpud-8x-rtx4090-535-gpu0-excerpt.txt")
AZ_A100 = ("nvidia-smi-q", "azhpc-a100-sxm4-40gb-460-passthrough-gpu0-excerpt.txt")
TRUNCATED = ("nvidia-smi-q", "gpud-8x-h100-535-truncated-invalid.txt")

EXPECTED = {
    BRAKE: {"gpuhealth.ecc": ["ok"], "gpuhealth.row_remap": ["ok"], "gpuhealth.reset": ["ok"], "gpuhealth.clocks": ["fail"]},
    POWERCAP: {"gpuhealth.ecc": ["skip"], "gpuhealth.row_remap": ["ok"], "gpuhealth.reset": ["ok"], "gpuhealth.clocks": ["ok"]},
    OLDKEY: {"gpuhealth.ecc": ["skip"], "gpuhealth.row_remap": ["skip"], "gpuhealth.clocks": ["ok"]},
    A10: {"gpuhealth.ecc": ["ok"], "gpuhealth.row_remap": ["fail"], "gpuhealth.reset": ["ok"], "gpuhealth.clocks": ["ok"]},
    A100: {"gpuhealth.ecc": ["ok"], "gpuhealth.row_remap": ["fail"], "gpuhealth.clocks": ["skip"]},
    A100_SECTION: {"gpuhealth.ecc": ["ok"], "gpuhealth.row_remap": ["fail"], "gpuhealth.clocks": ["skip"]},
    RETIRED: {"gpuhealth.ecc": ["skip"], "gpuhealth.row_remap": ["ok"], "gpuhealth.clocks": ["skip"]},
    # GPU 75:00.0 of this capture reports HW Power Brake and SW Thermal Slowdown active: a real failing case
    REPLAYS: {"gpuhealth.ecc": ["ok"], "gpuhealth.row_remap": ["ok"], "gpuhealth.reset": ["ok"], "gpuhealth.clocks": ["fail"]},
    TITAN: {"gpuhealth.ecc": ["skip"], "gpuhealth.row_remap": ["skip"], "gpuhealth.reset": ["ok"], "gpuhealth.clocks": ["ok"]},
    RTX4090: {"gpuhealth.ecc": ["skip"], "gpuhealth.row_remap": ["ok"], "gpuhealth.reset": ["ok"], "gpuhealth.clocks": ["ok"]},
    AZ_A100: {"gpuhealth.ecc": ["ok"], "gpuhealth.row_remap": ["ok"], "gpuhealth.clocks": ["ok"]},
    TRUNCATED: {"gpuhealth.ecc": ["skip"], "gpuhealth.row_remap": ["skip"], "gpuhealth.reset": ["ok"], "gpuhealth.clocks": ["ok"]},
}


def text(capture):
    return real.node_text(*capture)


@pytest.mark.parametrize("capture", list(EXPECTED), ids=lambda c: c[1])
def test_every_capture_is_judged_as_expected(capture):
    real.require()
    assert judge(gpuhealth, {"nvidia_smi_full": text(capture)}) == EXPECTED[capture]


def test_parser_reads_the_tree_per_gpu():
    real.require()
    q = smiq.parse_q(text(BRAKE))
    assert q.driver == "535.161.08" and q.header["Attached GPUs"] == "8" and len(q.gpus) == 8
    g = q.gpus[0]
    assert g.bus_id == "0000:19:00.0"
    assert g.get("Clocks Event Reasons/HW Power Brake Slowdown") == "Active"
    assert g.get("ECC Errors/Volatile/DRAM Uncorrectable") == "0"
    assert g.get("Remapped Rows/Pending") == "No"
    assert g.get("Fabric/State") == "Completed"
    assert smiq.parse_q(text(A100)).gpus[0].bus_id == "0000:10:1c.0"  # upper-case hex in the GPU line
    assert smiq.parse_q(text(A100_SECTION)).gpus[0].bus_id is None  # the excerpt starts inside the block


def test_power_brake_names_every_gpu_and_the_clocks():
    real.require()
    f = findings(gpuhealth, {"nvidia_smi_full": text(BRAKE)})["gpuhealth.clocks"]
    assert f.message == "8 of 8 GPUs slowed down by HW Power Brake Slowdown, HW Slowdown"
    assert "GPU 0000:19:00.0: P0, SM 86/1980 MHz, active: HW Slowdown, HW Power Brake Slowdown" in f.evidence
    assert "PSU" in f.fix


def test_sw_power_cap_under_load_and_old_throttle_key_are_healthy():
    real.require()
    f = findings(gpuhealth, {"nvidia_smi_full": text(POWERCAP)})["gpuhealth.clocks"]
    assert f.status.value == "ok" and any("SW Power Cap" in e for e in f.evidence)
    assert findings(gpuhealth, {"nvidia_smi_full": text(OLDKEY)})["gpuhealth.clocks"].message == \
        "no hardware or thermal slowdown on 8 GPUs"


def test_pending_remap_asks_for_a_reset():
    real.require()
    f = findings(gpuhealth, {"nvidia_smi_full": text(A10)})["gpuhealth.row_remap"]
    assert f.actual == ["GPU 0000:07:00.0"] and "Uncorrectable Error 4" in f.evidence[0] and "nvidia-smi -r" in f.fix


def _edit(capture, old, new, count=1):
    t = text(capture)
    assert old in t
    return t.replace(old, new, count)


def test_volatile_uncorrectable_fails_and_lifetime_only_warns():
    real.require()
    # written for this test: the healthy H100 report with one volatile DRAM uncorrectable error (first match)
    vol = _edit(BRAKE, "DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 2")
    f = findings(gpuhealth, {"nvidia_smi_full": vol})["gpuhealth.ecc"]
    assert f.status.value == "fail" and f.actual == ["GPU 0000:19:00.0"]
    # written for this test: an aggregate (lifetime) DRAM uncorrectable count only, below 512
    t = text(BRAKE)
    i = t.index("        Aggregate\n")
    agg = t[:i] + t[i:].replace("DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 3", 1)
    assert judge(gpuhealth, {"nvidia_smi_full": agg})["gpuhealth.ecc"] == ["warn"]
    agg600 = t[:i] + t[i:].replace("DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 600", 1)
    assert judge(gpuhealth, {"nvidia_smi_full": agg600})["gpuhealth.ecc"] == ["fail"]
    sram = _edit(BRAKE, "SRAM Threshold Exceeded       : No", "SRAM Threshold Exceeded       : Yes")
    assert judge(gpuhealth, {"nvidia_smi_full": sram})["gpuhealth.ecc"] == ["fail"]


def test_remapping_failure_and_reset_required_fail():
    real.require()
    # written for this test: the healthy report's remapping failure and reset flags turned on
    t = _edit(BRAKE, "Remapping Failure Occurred        : No", "Remapping Failure Occurred        : Yes")
    f = findings(gpuhealth, {"nvidia_smi_full": t})["gpuhealth.row_remap"]
    assert f.status.value == "fail" and "RMA" in f.fix
    t = _edit(BRAKE, "Reset Required                    : No", "Reset Required                    : Yes")
    assert judge(gpuhealth, {"nvidia_smi_full": t})["gpuhealth.reset"] == ["fail"]


def test_no_report_is_a_skip():
    assert judge(gpuhealth, {}) == {"gpuhealth.ecc": ["skip"]}
    assert judge(gpuhealth, {"nvidia_smi_full": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"}) \
        == {"gpuhealth.ecc": ["skip"]}


def test_sw_thermal_slowdown_warns():
    real.require()
    # written for this test: the RTX 4090 report under load, with the driver's thermal slowdown on
    t = _edit(POWERCAP, "SW Thermal Slowdown               : Not Active", "SW Thermal Slowdown               : Active")
    f = findings(gpuhealth, {"nvidia_smi_full": t})["gpuhealth.clocks"]
    assert f.status.value == "warn" and "SW Thermal Slowdown" in f.message and "cooling" in f.fix


def test_an_unreadable_ecc_mode_warns_and_not_applicable_stays_a_skip():
    real.require()
    # the Titan V report says N/A (ECC not supported): a skip that says so
    f = findings(gpuhealth, {"nvidia_smi_full": text(TITAN)})["gpuhealth.ecc"]
    assert f.status.value == "skip" and "not supported" in f.message
    # written for this test: the same report with the ECC mode the driver could not read, as the issue saw it
    t = _edit(TITAN, "ECC Mode\n        Current                           : N/A\n        Pending                           : N/A",
              "ECC Mode\n        Current                           : Unknown Error\n        Pending                           : Unknown Error")
    f = findings(gpuhealth, {"nvidia_smi_full": t})["gpuhealth.ecc"]
    assert f.status.value == "warn" and "cannot read the ECC state" in f.message
    assert f.evidence[0].endswith(": ECC Mode Current Unknown Error, Pending Unknown Error")
    # beside uncorrectable errors the fail stays, with the unreadable mode as evidence
    vol = _edit(BRAKE, "DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 2")
    vol = vol.replace("ECC Mode\n        Current                           : Enabled",
                      "ECC Mode\n        Current                           : Unknown Error", 1)
    f = findings(gpuhealth, {"nvidia_smi_full": vol})["gpuhealth.ecc"]
    assert f.status.value == "fail" and any("Unknown Error" in e for e in f.evidence)


def test_an_excerpt_without_ecc_says_not_in_the_report_and_old_key_spellings_are_read():
    real.require()
    f = findings(gpuhealth, {"nvidia_smi_full": text(OLDKEY)})["gpuhealth.ecc"]
    assert f.status.value == "skip" and "not in the report" in f.message
    # the 460 report spells the section "Ecc Mode"
    q = smiq.parse_q(text(AZ_A100))
    h = gpuhealth.health_of(q.gpus[0])
    assert (h.ecc_current, h.ecc_pending, h.ecc_mode) == ("Enabled", "Enabled", "Enabled")


def test_old_layout_page_retirement_pending_asks_for_a_reset():
    real.require()
    # written for this test, in the layout of drivers before 460: "Retired Pages" with "Pending" (not "Pending Page
    # Blacklist")
    t = text(RETIRED).replace("Pending Page Blacklist            : No", "Pending                           : No")
    assert judge(gpuhealth, {"nvidia_smi_full": t})["gpuhealth.row_remap"] == ["ok"]
    t = t.replace("Pending                           : No", "Pending                           : Yes", 1)
    f = findings(gpuhealth, {"nvidia_smi_full": t})["gpuhealth.row_remap"]
    assert f.status.value == "fail" and "Pending Yes" in f.evidence[0]


def test_no_report_skips_say_why():
    assert "not collected (nvidia-smi -q" in findings(gpuhealth, {})["gpuhealth.ecc"].message
    assert "not present" in findings(gpuhealth, {"nvidia_smi_full": ""})["gpuhealth.ecc"].message
    f = findings(gpuhealth, {"nvidia_smi_full": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"})
    assert "could not read nvidia-smi -q" in f["gpuhealth.ecc"].message and "NVIDIA-SMI has failed" in f["gpuhealth.ecc"].message
