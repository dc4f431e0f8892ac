"""``nvidia-smi -q``: the whole report (``==============NVSMI LOG==============``), one GPU's record
(``GPU 00000000:07:00.0``) or an excerpt of one (``ECC Errors``, ``Fabric``, ``Remapped Rows``: a section and
its ``Key : value`` lines, as ``nvidia-smi -q | grep`` or a poster leave it), read as the report the GPU health,
NVLink, PCIe-error and firmware areas read."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, elided, one

NAME = "nvidia-smi -q"
WORDS = ("NVSMI LOG", "Driver Version  ", "Attached GPUs", "Product Name  ", "ECC Errors", "Remapped Rows",
         "Retired Pages", "CliqueId", "ClusterUUID", "Clocks Event Reasons", "Clocks Throttle Reasons",
         "Uncorrectable  ", "Replays Since Reset", "Row Remapper", "Inforom Version", "VBIOS Version",
         "Pending Page Blacklist", "GPU Link Info", "Fabric")
SOURCES = ("nvidia_smi_full",)
GAPS = 1
MIN = 2

_LOG = rx.compile(r"[ \t]{0,40}={3,40}[ \t]{0,4}NVSMI LOG[ \t]{0,4}={3,40}[ \t]{0,40}$")
_GPU = rx.compile(r"GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f][ \t]{0,40}$")
# 'Key    : value' (nvidia-smi pads the key with blanks before the colon; R580's pads it to column 55:
# 'Driver Version                                         : 580.159.04')
_KV = rx.compile(r"[ \t]{0,40}[A-Za-z0-9][\w .()/+,#%-]{0,80}[ \t]:(?:[ \t]|$)")
_TITLE = rx.compile(r"[ \t]{1,40}[A-Z][\w .()/+-]{0,60}$")  # a section title: '    ECC Errors'
_SECTIONS = rx.compile(r"[ \t]{0,40}(?:ECC Errors|ECC Mode|Fabric|Remapped Rows|Retired Pages|Clocks Event Reasons|"
                       r"Clocks Throttle Reasons|Inforom Version|GPU Link Info|Row Remapper Histogram)[ \t]{0,40}$")
_KEYS = rx.compile(r"[ \t]{0,40}(?:Driver Version|Attached GPUs|Product Name|CliqueId|ClusterUUID|"
                   r"(?:SRAM|DRAM|Single Bit|Double Bit)[ \w-]{0,30}(?:Correctable|Uncorrectable|ECC Errors)|"
                   r"Correctable Error|Uncorrectable Error|Pending|Remapping Failure Occurred|Replays Since Reset|"
                   r"VBIOS Version|GSP Firmware Version|Pending Page Blacklist)[ \w()-]{0,60}[ \t]:")


def anchor(text: str) -> bool:
    return bool(_LOG.match(text) or _GPU.match(text) or _SECTIONS.match(text) or _KEYS.match(text))


def member(text: str) -> bool:
    return bool(_KV.match(text) or _LOG.match(text) or _GPU.match(text) or _TITLE.match(text) or elided(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    if not any(_KV.match(line) for line in lines):
        return {}
    return one("nvidia_smi_full", lines)
