"""``[thresholds]``: the site's own limits for the checks that have one (pure).

Each key replaces one limit an area judges with; the area reads it with
:func:`value` from the node's options, where the check engine puts the
spec's thresholds, and the finding's expected value names the spec line.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple


@dataclass(frozen=True)
class Threshold:
    key: str
    kind: str  # "int" or "float"
    lo: float
    check: str  # the check whose limit it is
    default: Any
    doc: str
    hi: Optional[float] = None  # the largest value that makes sense


KEYS = {t.key: t for t in (
    Threshold("ecc_dram_uncorrectable", "int", 0, "gpuhealth.ecc", 512,
              "aggregate DRAM uncorrectable ECC errors of a GPU above which it fails (Azure NHC's figure)"),
    Threshold("ecc_volatile_correctable", "int", 0, "gpuhealth.ecc", 50_000_000,
              "volatile correctable ECC errors of a GPU above which it warns"),
    Threshold("link_flaps", "int", 1, "ibcounters.link_flaps", 5,
              "times a link went down since boot from which it fails (fewer warn)"),
    Threshold("aer_correctable", "int", 0, "pcie_errors.aer", 100,
              "correctable AER errors of a GPU or NIC function above which it warns"),
    Threshold("pcie_replays_per_minute", "float", 0, "pcie_errors.replays", 8.0,
              "PCIe replays a minute since boot above which a GPU warns (DCGM's figure)"),
    Threshold("busbw_share", "float", 0.01, "bandwidth-low", 0.70,
              "share of the expected busbw below which a probe setting is slow (the bandwidth-low diagnosis)",
              hi=1.0),
    Threshold("isolate_fraction", "float", 0.01, "isolate.node", 0.5,
              "share of the median busbw of the healthy pairs below which an isolate pair is slow "
              "(isolate's --fraction, which wins where given)", hi=1.0),
)}



def value(node: Any, key: str, default: Any) -> Tuple[Any, str]:
    """``(limit, note)``: the spec's limit and `` (threshold of site.toml:40)``, else ``default`` and ``""``."""
    options = getattr(node, "options", None) or {}
    got = (options.get("thresholds") or {}).get(key)
    if got is None:
        return default, ""
    limit, ref = got
    return limit, f" (threshold of {ref})"
