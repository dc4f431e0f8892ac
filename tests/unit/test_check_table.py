"""The terminal table of a check: one column per judged area where it fits, the areas by status where it does not."""
import io

from rich.console import Console

from nccldiag import diagnosis
from nccldiag.areas import all_areas
from nccldiag.check import engine
from nccldiag.model.raw import RawNode
from nccldiag.report import check_report
from tests import real

from . import bundles as B


def report():
    node = dict(B.healthy_h100(),
                kernel_log=real.node_text("kernel-xid", "gpud-dell-xe9680-h100-dmesg-T-xid119-gsp-timeout.txt"),
                nvidia_smi_full=real.node_text("gpu-throttle", "gpud-8x-h100-535.161.08-hw-power-brake-slowdown-active-full-q.txt"))
    report = engine.analyze([RawNode(host="gpu001", sections=node)], all_areas())
    diagnosis.attach(report, check=report)
    return check_report.document(report)


def rendered(width):
    buf = io.StringIO()
    check_report.render(report(), Console(file=buf, width=width, no_color=True, highlight=False, soft_wrap=False))
    return buf.getvalue()


def test_wide_terminal_gets_one_column_per_judged_area():
    real.require()
    text = rendered(200)
    # the diagnoses come first; the table's header is its first line with heavy bars
    header = [h.strip() for h in next(l for l in text.splitlines() if "┃" in l).split("┃")]
    for area in ("ssh", "gpuhealth", "xid", "nvlink", "firmware", "limits"):
        assert area in header, area
    assert "roce" not in header and "skipped on every node: " in text and "roce" in text.split("skipped on every node: ")[1]


def test_narrow_terminal_groups_the_areas_by_status_and_fits():
    real.require()
    text = rendered(80)
    table = text.split("skipped on every node")[0]
    table = table[table.index("┏"):]  # after the diagnoses
    assert all(len(line) <= 80 for line in table.splitlines()), table
    row = next(l for l in table.splitlines() if "gpu001" in l)
    assert "│ fail   │ fail: gpuhealth, xid  ok: 14" in row
