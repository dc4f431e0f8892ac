"""NVLink area: fabric state, fabric manager service and log, link count and speed, link error counters."""
import pytest

from nccldiag.areas import gpu as gpu_area
from nccldiag.areas import nvlink
from tests import real

from .areahelp import findings, judge

FABRIC_OK = ("fabric-manager", "gpud-8x-h100-535-q-fabric-sections-completed-success-selected.txt")
FM_START = ("fabric-manager", "gpud-hgx-h100-fm-535-startup-4-nvswitch-8-gpu-registered.txt")
FM_12028 = ("fabric-manager", "gpud-hgx-h100-fm-535-nvswitch-nonfatal-12028-errors.txt")
FM_NOTHING = ("fabric-manager", "cubestudio29-2x-rtx4090-fm-pre-nvl5-nothing-to-do-exit1-journal.txt")
FM_STOPPED = ("fabric-manager", "nvtrust128-8x-h20-ppcie-fm-journalctl-xeu-started-then-stopped.txt")
TITAN = ("nvidia-smi-q", "gpud-titan-v-560-full.txt")

STATUS = {
    ("nvidia-smi-nvlink", "gpud-a100-sxm4-8gpu-12links-25GBs.txt"): "ok",
    ("nvidia-smi-nvlink", "gpud-a10-empty-no-nvlink.txt"): "skip",
    ("nvidia-smi-nvlink", "azhpc-v100-8gpu-inactive-links.txt"): "ok",  # inactive links: gpu.nvlink's finding
    ("nvidia-smi-nvlink", "mleng-h100-nvlink-status-elided.txt"): "ok",
    ("nvidia-smi-nvlink", "microway-dgx1-v100-nvlink-status-snipped.txt"): "ok",
    ("nvidia-smi-nvlink-status", "azurehpc-a100-80gb-gpu7-12-links-25GBs.txt"): "ok",
    ("nvidia-smi-nvlink-status", "azurehpc-a100-80gb-gpu6-nvml-all-links-inactive.txt"): "fail",
    ("nvidia-smi-nvlink-status", "k8stestinfra371-gb200-nvlink-s-18x53.125-elided.txt"): "ok",
}


def text(capture):
    return real.node_text(*capture)


@pytest.mark.parametrize("capture", list(STATUS), ids=lambda c: c[1])
def test_link_count_and_speed_on_every_capture(capture):
    real.require()
    # the gpu area's nvlink_status section, with a driver header so "empty" means GPUs without NVLink
    raw = {"nvlink_status": text(capture), "nvidia_smi_full": "Driver Version : 535.104.05\n"}
    # as in a run: the gpu area parses the same output (its inventory comes from it when nothing else lists the GPUs)
    assert judge(nvlink, raw, gpu=gpu_area.parse(raw))["nvlink.links"] == [STATUS[capture]]


def test_inactive_links_are_left_to_the_gpu_area_and_missing_links_fail():
    real.require()
    t = text(("nvidia-smi-nvlink", "azhpc-v100-8gpu-inactive-links.txt"))
    f = findings(nvlink, {"nvlink_status": t}, gpu=gpu_area.parse({"nvlink_status": t}))["nvlink.links"]
    assert f.message.endswith("; inactive links are gpu.nvlink's finding")
    # and gpu.nvlink reports them, with its inventory taken from the NVLink status alone (a hand-built bundle)
    g = findings(gpu_area, {"nvlink_status": t})
    assert g["gpu.inventory"].message.startswith("7x Tesla V100-SXM2-32GB") and "from nvidia-smi nvlink --status" in g["gpu.inventory"].message
    assert g["gpu.nvlink"].status.value == "fail"
    # without the gpu area (--only nvlink), nvlink.links reports them itself
    f = findings(nvlink, {"nvlink_status": t})["nvlink.links"]
    assert f.status.value == "fail" and f.message.startswith("NVLink links inactive, missing or slow on GPU 3, GPU 4")
    # written for this test: GPU 0 of the real output lists 4 of its model's 6 links
    lines = t.splitlines(True)
    cut = "".join(l for i, l in enumerate(lines) if not (i in (5, 6) and "Link" in l))
    f = findings(nvlink, {"nvlink_status": cut}, gpu=gpu_area.parse({"nvlink_status": cut}))["nvlink.links"]
    assert f.actual == {"category": "nvlink_error", "gpus": ["GPU 0"]} and f.evidence[0] == "GPU 0 (Tesla V100-SXM2-32GB): 4 links at 25.781 GB/s, expected 6"


def test_capabilities_output_has_no_link_state_and_is_never_ok():
    # written for this test, in the layout of 'nvidia-smi nvlink --capabilities' (-c): GPU lines, then per link
    # "Link N, <capability>: true" lines, no speed and no <inactive>
    caps = ("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-4e391288-897c-ba5d-6944-dfbea55ebcfa)\n"
            "         Link 0, P2P is supported: true\n"
            "         Link 0, Access to system memory supported: true\n"
            "         Link 1, P2P is supported: true\n")
    f = findings(nvlink, {"nvlink_status": caps, "nvidia_smi_full": "Driver Version : 535.104.05\n"})["nvlink.links"]
    assert f.status.value == "skip" and f.message.startswith("no link state in the output")
    assert "gpu.nvlink" not in findings(gpu_area, {"nvlink_status": caps})


def test_elided_output_is_not_counted_as_missing_links():
    real.require()
    links = nvlink.parse_status(text(("nvidia-smi-nvlink-status", "k8stestinfra371-gb200-nvlink-s-18x53.125-elided.txt")))
    assert [(g.index, g.active, g.elided) for g in links] == [(0, 18, False), (1, 2, True)]
    assert nvlink.expected_links("NVIDIA GB200") == (18, 53.125)
    assert nvlink.expected_links("NVIDIA H100 NVL") is None and nvlink.expected_links("NVIDIA H100 PCIe") is None


def test_a_slow_link_fails():
    real.require()
    # written for this test: one of the A100's links at a lower speed than its model's 25 GB/s
    t = text(("nvidia-smi-nvlink", "gpud-a100-sxm4-8gpu-12links-25GBs.txt")).replace("Link 3: 25 GB/s", "Link 3: 12.5 GB/s", 1)
    f = findings(nvlink, {"nvlink_status": t})["nvlink.links"]
    assert f.status.value == "fail" and "links [3] below 25 GB/s" in f.evidence[0]


def test_fabric_state_completed_success_and_not_applicable():
    real.require()
    f = findings(nvlink, {"nvidia_smi_full": text(FABRIC_OK)})["nvlink.fabric"]
    assert f.status.value == "ok" and "all 8 GPUs" in f.message
    assert judge(nvlink, {"nvidia_smi_full": text(TITAN)})["nvlink.fabric"] == ["skip"]  # State N/A: no NVSwitch


def test_fabric_in_progress_fails():
    real.require()
    # written for this test: one GPU of the real selection still registering
    t = text(FABRIC_OK).replace("State                             : Completed", "State                             : In Progress", 1)
    t = t.replace("Status                            : Success", "Status                            : N/A", 1)
    found = findings(nvlink, {"nvidia_smi_full": t})
    f = found["nvlink.fabric"]
    assert f.status.value == "fail" and f.actual == {"0000:19:00.0": "In Progress/None"}
    # no fabric manager output in this bundle: not collected, never "no fabric manager service was found"
    fm = found["nvlink.fabricmanager"]
    assert fm.status.value == "skip" and fm.message.startswith("fabric manager state not collected")
    # collected and empty (no manager, no systemd unit): the manager is missing where the fabric needs it
    assert judge(nvlink, {"nvidia_smi_full": t, "fabricmanager": ""})["nvlink.fabricmanager"] == ["fail"]


def _health(summary, bandwidth, unhealthy):
    return ("        Status                            : Success\n"
            "        CliqueId                          : 4026\n"
            "        ClusterUUID                       : 9c6f5af3-53bf-49b5-a436-b66766c413c3\n"
            "        Health\n"
            f"            Summary                       : {summary}\n"
            f"            Bandwidth                     : {bandwidth}\n"
            "            Route Recovery in progress    : False\n"
            f"            Route Unhealthy               : {unhealthy}\n"
            "            Access Timeout Recovery       : False\n"
            "            Incorrect Configuration       : None\n")


def _with_health(summary="Healthy", bandwidth="Full", unhealthy="False"):
    # written for this test: the real selection with the Health subsection recent drivers print under Fabric, in
    # the layout of a full nvidia-smi -q (Summary, Bandwidth, Route Recovery in progress, Route Unhealthy, Access
    # Timeout Recovery, Incorrect Configuration), every GPU healthy but the first
    status = "        Status                            : Success\n"
    t = text(FABRIC_OK).replace(status, _health("Healthy", "Full", "False"))
    return t.replace(_health("Healthy", "Full", "False"), _health(summary, bandwidth, unhealthy), 1)


def test_fabric_health_summary_and_bandwidth():
    real.require()
    f = findings(nvlink, {"nvidia_smi_full": _with_health()})["nvlink.fabric"]
    assert f.status.value == "ok" and "fabric health Healthy on 8" in f.message
    f = findings(nvlink, {"nvidia_smi_full": _with_health("Unhealthy", unhealthy="True")})["nvlink.fabric"]
    assert f.status.value == "fail" and "unhealthy NVLink fabric" in f.message
    assert f.actual == {"0000:19:00.0": {"Summary": "Unhealthy", "Route Unhealthy": "True"}}
    f = findings(nvlink, {"nvidia_smi_full": _with_health("Limited Capacity", "Degraded")})["nvlink.fabric"]
    assert f.status.value == "warn" and f.actual == {"0000:19:00.0": {"Summary": "Limited Capacity", "Bandwidth": "Degraded"}}
    # N/A and Not Supported (drivers that do not report health) are no fault
    na = _with_health().replace(": Healthy", ": N/A").replace(": Full", ": Not Supported")
    assert findings(nvlink, {"nvidia_smi_full": na})["nvlink.fabric"].status.value == "ok"


# the manager's output alone: no GPU inventory beside it, so nobody can tell whether the node needs it
UNTOLD = "whether this node needs it cannot be told: no GPU inventory"
FM_EXPECTED = {
    FM_START: ("ok", f"the fabric manager is running (version 535.161.08) ({UNTOLD}, nvidia-smi -q, was collected beside it)"),
    FM_12028: ("warn", "18 errors in the fabric manager log"),
    FM_NOTHING: ("warn", "the fabric manager service failed: it found no NVSwitch to manage (NV_WARN_NOTHING_TO_DO)"),
    FM_STOPPED: ("skip", f"the fabric manager service is stopped, and {UNTOLD} (nvidia-smi -q) was collected beside it"),
}


@pytest.mark.parametrize("capture", list(FM_EXPECTED), ids=lambda c: c[1])
def test_fabric_manager_log_and_journal(capture):
    real.require()
    f = findings(nvlink, {"fabricmanager": text(capture)})["nvlink.fabricmanager"]
    assert (f.status.value, f.message) == FM_EXPECTED[capture]


def test_fabric_manager_stopped_on_an_nvswitch_system_fails():
    real.require()
    f = findings(nvlink, {"fabricmanager": text(FM_STOPPED), "nvidia_smi_full": text(FABRIC_OK)})["nvlink.fabricmanager"]
    assert f.status.value == "fail"
    # systemd's own state wins over the log (written for this test: systemctl show of a running unit)
    props = "LoadState=loaded\nActiveState=active\nSubState=running\nResult=success\n"
    f = findings(nvlink, {"fabricmanager": props + text(FM_START)})["nvlink.fabricmanager"]
    assert f.status.value == "ok" and f.evidence[0].startswith("LoadState=loaded ActiveState=active")


def test_fabric_manager_status_without_a_gpu_inventory_says_what_it_cannot_tell():
    real.require()
    # stopped, with the GPUs known to be PCIe cards without NVSwitch (nvidia-smi -q without fabric): a warning
    q = text(("nvidia-smi-q", "gpud-8x-rtx4090-535-gpu0-excerpt.txt"))
    f = findings(nvlink, {"fabricmanager": text(FM_STOPPED), "nvidia_smi_full": q})["nvlink.fabricmanager"]
    assert f.status.value == "warn"
    # nvidia-smi -q text where the manager's output should be: no state in it, so no verdict (was ok "running")
    f = findings(nvlink, {"fabricmanager": text(FABRIC_OK)})["nvlink.fabricmanager"]
    assert f.status.value == "skip" and "cannot be told from its output" in f.message
    # systemctl status of the real healthy cases (bottlerocket p4d A100 and B200): running, need untold
    for case in ("node-bottlerocket3873-p4d-a100-fabricmanager-running-healthy",
                 "node-brkernelkit142-b200-fabricmanager-running-after-nvlsm-healthy"):
        status = (real.ROOT / "cases" / case / "node-a" / "fabricmanager.txt").read_text()
        f = findings(nvlink, {"fabricmanager": status})["nvlink.fabricmanager"]
        assert f.status.value == "ok" and UNTOLD in f.message
        # written for this test: the same unit in a restart loop is no running manager
        looping = status.replace("Active: active (running)", "Active: activating (auto-restart) (Result: exit-code)")
        assert findings(nvlink, {"fabricmanager": looping})["nvlink.fabricmanager"].status.value == "skip"
    # the fabric state itself says what was not collected
    assert "not collected (nvidia-smi -q)" in findings(nvlink, {"fabricmanager": status})["nvlink.fabric"].message


# Fabric Manager's start-up check of the driver's version, in the words of its releases (the guide's
# 'fabric manager NVIDIA GPU driver interface version X don't match with driver version Y', and 'doesn't match ...
# with the matching' of the later releases; a curly apostrophe where a post went through a word processor)
FM_VERSION_LINES = {
    # NVIDIA/gpu-operator#544
    "nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02 don't match with driver "
    "version 530.41.03. Please update with matching NVIDIA driver package.": "530.30.02",
    # akash-network/website#632 (systemctl status of the unit, as its provider guide quotes it)
    "Nov 05 13:55:26 node1 nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface version 550.127.05 "
    "doesn't match with driver version 550.120. Please update with the matching NVIDIA driver package.": "550.127.05",
    # NVIDIA/nvtrust#55
    "\"fabric manager NVIDIA GPU driver interface version 550.90.07 don\u2019t match with driver version 550.107.02. "
    "Please update with matching NVIDIA driver package\"": "550.90.07",
}


@pytest.mark.parametrize("line", list(FM_VERSION_LINES), ids=lambda l: FM_VERSION_LINES[l])
def test_a_fabric_manager_of_another_driver_version_is_a_failed_manager_in_each_wording(line):
    fm = nvlink.parse_fm(line)
    assert fm.state_from_log == "failed" and fm.errors == [line.strip()]
    f = findings(nvlink, {"fabricmanager": line})["nvlink.fabricmanager"]
    assert f.status.value == "fail"
    # its successful start (NVIDIA/nvtrust#128) stays a running manager
    started = ("Jan 05 14:45:28 TENCENT64 nv-fabricmanager[1120]: Successfully configured all the available NVSwitches "
               "to route GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are successfully "
               "registered with the NVLink fabric.")
    assert nvlink.parse_fm(started).state_from_log == "running" and not nvlink.parse_fm(started).errors


def test_error_counters():
    real.require()
    t = text(("nvidia-smi-nvlink", "mleng-h100-nvlink-e-error-counters-elided.txt"))
    assert judge(nvlink, {"nvlink_errors": t})["nvlink.errors"] == ["ok"]
    # written for this test: the real layout with one CRC error counted
    bad = t.replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 7")
    f = findings(nvlink, {"nvlink_errors": bad})["nvlink.errors"]
    assert f.status.value == "warn" and f.actual == {"category": "nvlink_error", "counters": {"GPU 0": {"CRC Errors": 7}}}
