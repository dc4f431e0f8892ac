"""Process listings (``ps``, ``top``) in a paste: a process in uninterruptible sleep is an ``io_hang`` event.

Real: the healthy listings of tests/fixtures/ps (SOURCES.md there) and the IDEFICS logbook's ``ps auxc`` with the
rank stuck in a write to a frozen file system (tests/cases/node-m4-runlog-tr141-ps-auxc-python-dl-gpfs-froze-rank0).
"""
from pathlib import Path
from typing import List

import pytest

from nccldiag import paste as pasted
from nccldiag.diagnosis import Inputs, diagnose, signs

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "ps"
HEALTHY = ["ps-aux-pidns.txt", "ps-el-pidns.txt", "ps-eo-pid-stat-wchan-cmd-pidns.txt", "top-b-n1-pidns.txt"]
STUCK = ROOT / "cases" / "node-m4-runlog-tr141-ps-auxc-python-dl-gpfs-froze-rank0" / "posted-node0-checks.txt"


def alarms(text: str, path: str = "paste.txt") -> List:
    return [d for d in diagnose(Inputs(pasted=pasted.scan(text, path))) if d.severity in ("fail", "warn")]


@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_listing_is_read_as_ps_and_gives_nothing(name):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    assert [b.kind for b in pasted.scan(text, name).blocks] == ["ps"]
    assert signs.ps_stuck(text) == []
    assert alarms(text) == []


def test_a_rank_in_state_d_is_a_rank_stuck_in_io_cited_at_its_line():
    text = STUCK.read_text(encoding="utf-8")
    d = alarms(text, "node0.txt")
    assert d[0].category == "io_hang" and d[0].severity == "warn" and d[0].confidence == "medium"
    assert "python (pid 280058) in state Dl" in d[0].summary
    (ev,) = [e for e in d[0].evidence if "280058" in e.text]
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("ura81os   280058"))
    assert ev.ref == f"node0.txt:{line}"
    # the seven ranks running (Rl) beside it are not named
    assert "280059" not in " ".join(e.text for e in d[0].evidence)


def test_the_logbooks_stuck_row_in_a_healthy_listing_is_named():
    # the real 'Dl' row of the logbook after the rows of a real healthy 'ps aux' of the same columns
    row = next(t for t in STUCK.read_text(encoding="utf-8").splitlines() if " Dl " in t)
    text = (FIXTURES / "ps-aux-pidns.txt").read_text(encoding="utf-8") + row + "\n"
    assert [(pid, state) for _, pid, state, _ in signs.ps_stuck(text)] == [("280058", "Dl")]
    assert alarms(text)[0].category == "io_hang"


@pytest.mark.parametrize("row,named", [
    # CONSTRUCTED rows in the columns of ps aux, each for one rule
    ("root       353  0.0  0.0      0     0 ?        D    14:50   0:00 [jbd2/dm-0-8]", False),  # kernel thread
    ("root       354  0.0  0.0      0     0 ?        D    14:50   0:00 kworker/1:1", False),  # no user memory
    ("root      4711  0.0  0.1 212500  5720 ?        D    15:25   0:00 nvidia-smi", False),  # NVIDIA's tool
    ("alice     4712 12.0  4.4 1750856 235269 ?      D    15:25   9:00 python train.py", True),
    ("alice     4713 12.0  4.4 1750856 235269 ?      S    15:25   9:00 python train.py", False),
])
def test_which_rows_in_state_d_are_named(row, named):
    head = (FIXTURES / "ps-aux-pidns.txt").read_text(encoding="utf-8").splitlines()[0]
    assert bool(signs.ps_stuck(head + "\n" + row + "\n")) is named


def test_a_one_letter_state_column_is_read_as_well():
    # CONSTRUCTED: the real 'ps -el' header with one of its rows' state set to D
    lines = (FIXTURES / "ps-el-pidns.txt").read_text(encoding="utf-8").splitlines()
    row = next(t for t in lines if t.rstrip().endswith("python3") and " S " in t)
    stuck = [(pid, state, cmd) for _, pid, state, cmd in signs.ps_stuck(lines[0] + "\n" + row.replace(" S ", " D ", 1))]
    assert stuck == [(row.split()[3], "D", "python3")]


def test_headers_that_are_not_process_listings_are_not_read():
    # nvidia-smi's process table header names a PID but no state; a long line is never a header
    smi = "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |"
    assert signs.ps_header(smi) is None
    assert signs.ps_header("PID STAT " + "x " * 300 + "COMMAND") is None


@pytest.mark.parametrize("label", ["(RayTrainWorker pid=1234, ip=10.0.0.5) ", "2024-01-01 12:00:00,123 - trainer - INFO - ",
                                   "[rank0]: "])
def test_a_listing_behind_a_label_on_every_line_is_read_behind_it(label):
    # the logbook's listing with a worker's, a logger's or a launcher's label before each line: the header with
    # the label before it is no header (the label's words are no columns), the header behind it is
    text = "".join(label + t + "\n" for t in STUCK.read_text(encoding="utf-8").splitlines())
    assert signs.ps_header(label + "USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND") is None
    d = alarms(text)
    assert d[0].category == "io_hang" and "pid 280058" in d[0].summary
