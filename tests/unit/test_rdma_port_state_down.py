"""Lines read as pasted from a cluster's own checks: a sweep that lists the HCAs it found with the verbs port state
PORT_DOWN beside the device's name (no other error word on the line), and PyTorch's watchdog line for a failed
collective pasted without the timeout before it. The texts are the real cases'
(tests/cases/net-gaps65d-together-worklog-b200-find-stragglers-mlx5-0-port-down-two-nodes,
tests/cases/net-gaps65d-crusoe-support-flightrecorder-disabled-stack-trace-not-found-collective-timeout)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from nccldiag.knowledge import lexicon
from nccldiag.nccl import grammar

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "cases"
SWEEP = (CASES / "net-gaps65d-together-worklog-b200-find-stragglers-mlx5-0-port-down-two-nodes"
         / "posted-output.txt").read_text(encoding="utf-8")
WATCHDOG = (CASES / "net-gaps65d-crusoe-support-flightrecorder-disabled-stack-trace-not-found-collective-timeout"
            / "posted-output.txt").read_text(encoding="utf-8")


def _log(tmp_path, text):
    (tmp_path / "paste.txt").write_text(text, encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "nccldiag", "log", "paste.txt", "--json", "-"], capture_output=True,
                       text=True, cwd=str(tmp_path), timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    return r, json.loads(r.stdout)


def _top(doc):
    return [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")][0]


def test_a_device_beside_port_down_is_an_error_line_and_a_port_down_shape():
    for line in SWEEP.splitlines()[1:]:
        assert grammar._ERROR_TEXT.search(line), line
        assert lexicon.shape_of(line).id == "ib-port-down", line
    # Open vSwitch's port flag names no RDMA device: no port of the fabric
    assert lexicon.shape_of(" config:     PORT_DOWN") is None
    assert not grammar._ERROR_TEXT.search("  ★ use3a-ss-b200-gpu-148  mlx5_0  PORT_ACTIVE")


def test_the_sweep_names_the_port_down_and_its_device(tmp_path):
    r, doc = _log(tmp_path, SWEEP)
    top = _top(doc)
    assert (top["id"], top["category"], top["severity"]) == ("rdma-port-state-down", "ib_port_down", "warn")
    assert "mlx5_0" in top["summary"]
    assert not [d for d in doc["diagnoses"] if d["category"] == "unexplained"]


def test_the_watchdog_line_alone_is_a_failure_never_nothing_broken(tmp_path):
    assert lexicon.shape_of(WATCHDOG.strip()).id == "nccl-watchdog-collective-failed"
    r, doc = _log(tmp_path, WATCHDOG)
    assert r.returncode == 1
    assert _top(doc)["severity"] == "fail"
