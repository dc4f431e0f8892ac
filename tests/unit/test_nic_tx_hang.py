"""A NIC whose transmit unit hangs, read from the lines as they are pasted: e1000e's own hang report and reset (no
error word in either), and the kernel's 6.8+ transmit watchdog with its 'driver bdf interface: ' prefix cut off.
The text is the real case's (tests/cases/node-gaps64d-zenblog-pve-e1000e-i219v-detected-hardware-unit-hang-tso-offload,
time stamps anonymised by its author)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from nccldiag.knowledge import lexicon
from nccldiag.nccl import grammar

REPO = Path(__file__).resolve().parents[2]
CASE = REPO / "tests" / "cases" / "node-gaps64d-zenblog-pve-e1000e-i219v-detected-hardware-unit-hang-tso-offload"
TEXT = (CASE / "posted-output.txt").read_text(encoding="utf-8")
HANG, RESET, WATCHDOG = (next(line for line in TEXT.splitlines() if words in line) for words in
                         ("Detected Hardware Unit Hang", "Reset adapter unexpectedly", "NETDEV WATCHDOG"))


def _log(tmp_path, text):
    (tmp_path / "dmesg.txt").write_text(text, encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "nccldiag", "log", "dmesg.txt", "--json", "-"], capture_output=True,
                       text=True, cwd=str(tmp_path), timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"})
    return r, json.loads(r.stdout)


def test_the_e1000e_hang_and_reset_are_error_lines_and_shapes_of_the_failure_lexicon():
    for line in (HANG, RESET):
        assert grammar._ERROR_TEXT.search(line), line
        assert lexicon.shape_of(line).id == "nic-tx-unit-hang", line
    assert not grammar._ERROR_TEXT.search("[    2.114] e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex")


def test_the_hang_names_the_nic_that_hung_and_its_fix(tmp_path):
    r, doc = _log(tmp_path, TEXT)
    top = [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")][0]
    assert (top["id"], top["category"], top["severity"]) == ("netdev-tx-timeout", "other:nic-tx-timeout", "warn")
    assert "(interface eno1, queue 0)" in top["summary"] and "tso off" in top["fix"]
    assert not [d for d in doc["diagnoses"] if d["category"] == "unexplained"]


def test_the_watchdog_without_its_prefix_is_still_the_nic_and_says_the_name_is_cut(tmp_path):
    r, doc = _log(tmp_path, WATCHDOG + "\n")
    top = [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")][0]
    assert top["id"] == "netdev-tx-timeout" and "(interface not named in the line, queue 0)" in top["summary"]
    # written for this test: the same line with the prefix netdev_crit prints (driver, bus id, interface)
    r, doc = _log(tmp_path, "[ 812.004131] e1000e 0000:00:1f.6 eno2: NETDEV WATCHDOG: CPU: 5: transmit queue 0 "
                            "timed out 10430 ms\n")
    top = [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")][0]
    assert top["id"] == "netdev-tx-timeout" and "(interface eno2, queue 0)" in top["summary"]


def test_bnxt_en_and_i40e_name_their_own_transmit_hang_and_the_interface(tmp_path):
    # real lines: the netdev thread 'NETDEV WATCHDOG: s1p1 (bnxt_en): transmit queue 2 timed out' (2020,
    # https://lore.kernel.org/netdev/CAH6h+heNaKFT-xYdbOfYUa0Vp=Ybohb6A0TQ=N1EJDvFE6wbpw@mail.gmail.com) and
    # appneta/tcpreplay#183 (an XL710 under i40e)
    for line, dev in (("[17879.279213] bnxt_en 0000:01:09.0 s1p1: TX timeout detected, starting reset task!", "s1p1"),
                      ("Jun  3 09:03:26 x710sbprobe kernel: i40e 0000:08:00.1: eth9: tx_timeout recovery level 1",
                       "eth9")):
        assert lexicon.shape_of(line).id == "nic-tx-unit-hang", line
        r, doc = _log(tmp_path, line + "\n")
        top = [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")][0]
        assert (top["id"], top["category"]) == ("netdev-tx-timeout", "other:nic-tx-timeout"), line
        assert f"(interface {dev}, queue in the watchdog line before it)" in top["summary"], top["summary"]
        assert "firmware" in top["fix"]
        assert not [d for d in doc["diagnoses"] if d["category"] == "unexplained"]
