"""PCIe link trouble: AER errors (uncorrectable, or corrected ones at a high rate), a link trained below its
width or speed, replay counters rising. Slow or failing GPU and NIC traffic; a GPU that drops off the bus often
shows AER errors on its root port first.

Evidence: the ``pcie_errors`` and ``pcie`` link checks, AER and 'PCIe Bus Error' kernel lines in any output.
References: Linux PCIe AER documentation; NVIDIA DGX field diagnostics.
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "pcie-link"
TITLE = "PCIe link errors or a degraded link"
FIX = ("Reseat the device named (GPU, NIC or riser), check the slot and cable, update the BIOS and the device's "
       "firmware; a link below its width or speed under load ('lspci -vvv' LnkSta '(downgraded)') needs the same. "
       "Replace the part if the errors come back.")
CONFIRM = "lspci -vvv -s <bdf> | grep -E 'LnkSta|UESta|CESta'; dmesg | grep -i aer"

AER = re.compile(r"PCIe Bus Error|AER: (?:Uncorrect|Multiple Uncorrect|Corrected)|severity=(?:Uncorrected|Corrected)")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = C.findings(inp, "pcie_errors.") + C.findings(inp, "pcie.link")
    lines = C.find(inp, AER, ("kernel", "error"))
    found = [C.Clue("finding", f.message, host=f.host, finding=f) for f in node] + lines
    if not found:
        return []
    failed = any(f.status.value == "fail" for f in node) or any("ncorrect" in c.text for c in lines)
    return [C.make(sys.modules[__name__], f"PCIe errors or a degraded link{C.on(C.hosts(found))}", found,
                   confidence="high" if node else "medium",
                   why="the kernel logged PCIe AER errors or a link runs below its capability",
                   severity="fail" if failed else "warn")]
