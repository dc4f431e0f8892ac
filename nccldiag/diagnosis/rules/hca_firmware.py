"""HCA firmware too old, mismatched across nodes, or failing: the driver asks for newer firmware ('please upgrade
to later FW version', 'firmware version ... is not supported'), the IB device never comes up (no ports under
/sys/class/infiniband), or the firmware check finds versions differing from the rest.

Evidence: the ``firmware`` check's HCA finding; the events of category ``hca_firmware`` (the
``ibcounters.hca_errors`` finding: mlx5 health compromised, firmware command timeouts, a probe that failed; those
kernel lines in any output read through ``knowledge/kmsg.toml``); the driver's firmware complaints in the kernel
log; the IB stack finding no device files beside such lines; the HCA's device-fatal event in NCCL's log ('Got async
event : local catastrophic error', IBV_EVENT_DEVICE_FATAL).
References: clustervision/trinity#219; ibv_get_async_event(3) (IBV_EVENT_DEVICE_FATAL); NVIDIA/nccl#230; NVIDIA MLNX_OFED/DOCA release notes (firmware compatibility).
"""
from __future__ import annotations

import re
import sys
from typing import List

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import events as E
from nccldiag.diagnosis import ibverbs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis

ID = "hca-firmware"
TITLE = "HCA firmware too old or failing"
FIX = ("Update the HCA firmware to the version the driver (MLNX_OFED/DOCA, inbox mlx5) supports, the same on every "
       "node: 'mlxfwmanager --online -u' or the vendor's package (OEM cards need the OEM's image, matched by PSID); "
       "reboot or 'mlxfwreset' to load it.")
CONFIRM = "ibv_devinfo | grep fw_ver; mlxfwmanager --query"

FW = rx.compile(r"(?:upgrade|update) (?:to )?(?:a )?(?:later|newer|the latest|recent) (?:FW|firmware)|"
                r"(?:FW|firmware) (?:version )?\S{0,80} ?(?:is )?(?:too old|not supported|unsupported|older than)|"
                r"(?:FW|firmware) (?:command|cmd) (?:failed|timeout)|mlx\d_core[^\n]{0,300}?(?:firmware|FW)[^\n]{0,300}?(?:fail|error)", re.I)
# The kernel names the driver and the PCI device a message is about ('mlx5_core 0000:17:00.0: ...'). The firmware
# words above are said by every driver with firmware (storage controllers: 'smartpqi 0000:64:00.0: Firmware Triage
# not supported by controller', Wi-Fi, GPUs' own firmware): a line naming a driver counts only where that driver is
# an RDMA or network adapter's.
DRIVER = rx.compile(r"(?:^|[\]:]\s|\s)([A-Za-z][\w-]{1,31}) [0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]: ")
ADAPTER_DRIVER = rx.compile(r"mlx\d|ib_|hfi1|qib|irdma|i40iw|bnxt|efa|ionic|erdma|qed|ocrdma|rxe|siw|pvrdma|cxgb|"
                            r"mana|hns|ice|i40e|ixgbe|igb|e1000|tg3|nfp|sfc|enic|be2net", re.I)
NO_DEVICE = rx.compile(r"sys files not found|/sys/class/infiniband\S{0,256}: No such file|No IB devices found|"
                       r"Failed to get IB devices list")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    fatal = ibverbs.device_fatal(inp)
    if fatal:
        return [C.make(sys.modules[__name__], "the HCA went into a fatal state" + C.on(C.hosts(fatal)), fatal,
                       confidence="medium",
                       why=("the HCA reported a device-fatal event (NCCL's 'local catastrophic error'): a firmware "
                            "or hardware fault of the adapter, not of its link"),
                       fix=("Reset the adapter (reboot, or 'mlxfwreset -d <dev> reset'), read the driver's health "
                            "messages in the kernel log (mlx5_core ... health), update its firmware to the version "
                            "the driver supports, and replace the card if it recurs; until then keep NCCL off it: "
                            "NCCL_IB_HCA=^<hca>."),
                       alternatives=["ib_port_down: a link fault takes the port down, not the whole device"])]
    node = C.findings(inp, "firmware.hca")
    ev = E.of(inp, "hca_firmware")
    told = E.clues_of(ev)
    fw = [c for c in C.find(inp, FW, ("kernel", "error", "finding")) if _an_adapters(c.text)]
    fw = told + [c for c in fw if (c.finding is None or c.finding.check.startswith("firmware.hca"))
                 and not any(c is t for t in told)] + \
        [C.Clue("finding", f.message, host=f.host, finding=f) for f in node
         if not any(c.finding is f for c in fw)]
    if not fw:
        return []
    gone = C.find(inp, NO_DEVICE, ("error", "kernel", "finding"))
    return [C.make(sys.modules[__name__], "the HCA firmware is too old or failing" +
                   (" and the IB device did not come up" if gone else "") + C.on(C.hosts(fw + gone)), fw + gone,
                   confidence="high" if gone or node else "medium",
                   why="the driver or the firmware check says the HCA firmware does not fit",
                   severity="fail" if gone or any(f.status.value == "fail" for f in node) or E.worst(ev) == "fail" and ev
                   else "warn")]


def _an_adapters(text: str) -> bool:
    """Whether a firmware line is about an RDMA or network adapter: it names no driver, or an adapter's."""
    m = DRIVER.search(text)
    return m is None or ADAPTER_DRIVER.match(m.group(1)) is not None
