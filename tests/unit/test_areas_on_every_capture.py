"""Every real node capture through every area, in every one of its sections: no error, no exception.

The net under the next format variation: whatever text a source returns, the
area parses it and judges it without raising, and says ``error`` only when it
could not check (never here: every section is present).
"""
import inspect
import re
from pathlib import Path

import pytest

from nccldiag.areas import affinity, all_areas, firmware, kernel, kernlog, kind, gpuhealth, ibcounters, nvlink, pcie_errors, roce, xid
from nccldiag.areas.base import NodeFacts
from nccldiag.model.findings import Status
from tests import real

AREAS = (xid, kernel, gpuhealth, nvlink, pcie_errors, ibcounters, roce, firmware, affinity)


def captures():
    if not real.AVAILABLE:
        return real.names(real.NODE)
    return sorted(str(p.relative_to(real.NODE)) for p in real.NODE.rglob("*.txt"))


@pytest.mark.parametrize("capture", captures())
def test_capture_in_every_section_of_every_area(capture):
    text = real.node_text(capture)
    for area in [a for a in all_areas() if kind(a) == "node"]:
        raw = {s.name: text for s in area.SOURCES}
        found = area.judge(area.parse(raw), NodeFacts("n1"))
        assert found, area.NAME
        assert all(f.status != Status.ERROR for f in found), (area.NAME, [f.message for f in found])
        assert all(f.check.startswith(area.NAME + ".") and f.message for f in found)


def test_every_check_id_of_the_health_areas_is_documented():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text(encoding="utf-8")
    for area in AREAS:
        ids = set(re.findall(r'"(%s\.[a-z_]+)"' % area.NAME, inspect.getsource(area)))
        ids = {i for i in ids if not i.endswith(".toml")}  # a knowledge table's file name, not a check id
        ids |= {m.check for m in kernlog.MESSAGES if m.area == area.NAME}  # the kernel-message table's checks
        assert ids, area.NAME
        missing = [i for i in sorted(ids) if f"`{i}`" not in docs]
        assert missing == [], missing
        for key in area.summarize(None) or {}:
            assert f"`{area.NAME}.{key}`" in docs


def test_health_areas_are_selectable_with_only_and_skip(tmp_path):
    from . import bundles as B

    node = dict(B.healthy_h100(), kernel_log=real.node_text("kernel-xid", "gpud-dell-xe9680-h100-dmesg-T-xid119-gsp-timeout.txt"))
    bundle = B.write_bundle(tmp_path / "b", {"gpu001": node})
    code, rep = B.check_json(bundle, "--only", "xid")
    assert code == 1 and rep["areas"] == ["ssh", "system", "xid"]
    xids = {f["check"]: f["status"] for f in B.findings(rep) if f["area"] == "xid"}
    assert xids == dict({"xid.critical": "fail"}, **{c: "ok" for c in kernlog.checks_of("xid")})
    code, rep = B.check_json(bundle, "--skip", "xid,gpuhealth,nvlink")
    assert code == 0 and not {"xid", "gpuhealth", "nvlink"} & set(rep["areas"])
    assert "firmware" in rep["areas"] and "affinity" in rep["areas"]


HOSTILE = (
    "", "\n\n", "\x00\x01\x02", "\t" * 50, "[" * 1000, "=" * 80, ":" * 80, "GPU 0000:zz:00.0\n    Fabric\n",
    "Link 99999999999999999999: 1e400 GB/s\n", "uptime: nan\ndevice: \n/x/aer_dev_fatal:TOTAL_ERR_FATAL -1\n",
    "/sys/class/infiniband/a/ports/1/counters/x:99999999999999999999999\n", "=== \nmtu: x\nenabled 1 1 1\n",
    "NVRM: Xid (PCI:0000:01:00): , \nPCIe Bus Error: severity=\nmlx5_core x y: Port: z Link DOWN\n",
)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_in_every_section(text):
    for area in [a for a in all_areas() if kind(a) == "node"]:
        raw = {s.name: text for s in area.SOURCES}
        found = area.judge(area.parse(raw), NodeFacts("n1"))
        assert all(f.status != Status.ERROR for f in found), area.NAME


@pytest.mark.parametrize("capture", captures())
def test_captures_cut_short(capture):
    """A capture cut mid-line at a few points (a timed-out command) parses and judges without error."""
    text = real.node_text(capture)
    for cut in sorted({len(text) // 3, len(text) // 2, (2 * len(text)) // 3 + 1}):
        for area in [a for a in all_areas() if kind(a) == "node"]:
            raw = {s.name: text[:cut] for s in area.SOURCES}
            found = area.judge(area.parse(raw), NodeFacts("n1"))
            assert all(f.status != Status.ERROR for f in found), (area.NAME, cut)
