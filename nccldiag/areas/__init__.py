"""Check areas, one module each, in report order.

See :mod:`nccldiag.areas.base` for what a module provides.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Iterable, List, Optional

AREA_MODULES = (
    "system",
    "iommu",
    "pcie",
    "pcie_errors",
    "infiniband",
    "ibcounters",
    "roce",
    "gdr",
    "gpu",
    "gpuhealth",
    "nvlink",
    "xid",
    "topology",
    "affinity",
    "firmware",
    "limits",
    "python",
)


def all_areas() -> List[ModuleType]:
    return [importlib.import_module(f"nccldiag.areas.{m}") for m in AREA_MODULES]


def area_names() -> List[str]:
    return [a.NAME for a in all_areas()]


def select(only: Optional[Iterable[str]] = None, skip: Optional[Iterable[str]] = None) -> List[ModuleType]:
    """Areas chosen by ``--only``/``--skip``; unknown names raise ValueError."""
    areas = all_areas()
    names = [a.NAME for a in areas]
    only = [n.strip() for n in (only or []) if n.strip()]
    skip = [n.strip() for n in (skip or []) if n.strip()]
    unknown = [n for n in list(only) + list(skip) if n not in names]
    if unknown:
        raise ValueError(f"unknown area {', '.join(unknown)} (known: {', '.join(names)})")
    chosen = [a for a in areas if (not only or a.NAME in only) and a.NAME not in skip]
    # system facts are what every report is keyed by: always collected
    if areas[0] not in chosen:
        chosen.insert(0, areas[0])
    return chosen
