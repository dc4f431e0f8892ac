"""Every real node capture through every node-health area, in every one of its sections: no error, no exception.

The net under the next format variation: whatever text a source returns, the
area parses it and judges it without raising, and says ``error`` only when it
could not check (never here: every section is present).
"""
import inspect
import re
from pathlib import Path

import pytest

from nccldiag.areas import affinity, firmware, gpuhealth, ibcounters, nvlink, pcie_errors, roce, xid
from nccldiag.areas.base import NodeFacts
from nccldiag.model.findings import Status
from tests import real

AREAS = (xid, gpuhealth, nvlink, pcie_errors, ibcounters, roce, firmware, affinity)


def captures():
    if not real.AVAILABLE:
        return real.names(real.NODE)
    return sorted(str(p.relative_to(real.NODE)) for p in real.NODE.rglob("*.txt"))


@pytest.mark.parametrize("capture", captures())
def test_capture_in_every_section_of_every_health_area(capture):
    text = real.node_text(capture)
    for area in AREAS:
        raw = {s.name: text for s in area.SOURCES}
        found = area.judge(area.parse(raw), NodeFacts("n1"))
        assert found, area.NAME
        assert all(f.status != Status.ERROR for f in found), (area.NAME, [f.message for f in found])
        assert all(f.check.startswith(area.NAME + ".") and f.message for f in found)


def test_every_check_id_of_the_health_areas_is_documented():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "checks.md").read_text(encoding="utf-8")
    for area in AREAS:
        ids = set(re.findall(r'"(%s\.[a-z_]+)"' % area.NAME, inspect.getsource(area)))
        assert ids, area.NAME
        missing = [i for i in sorted(ids) if f"`{i}`" not in docs]
        assert missing == [], missing
        for key in area.summarize(None) or {}:
            assert f"`{area.NAME}.{key}`" in docs
