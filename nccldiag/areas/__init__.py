"""Check areas, one module each, in report order.

See :mod:`nccldiag.areas.base` for what a module provides. Most areas are
node areas (``KIND = "node"``, the default): sources collected on each node,
parsed and judged per node. ``ssh`` is the transport area (judged from how
the node was reached) and ``consistency`` the cluster area (judged across all
nodes after the others).
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Iterable, List, Optional

AREA_MODULES = (
    "ssh",
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
    "dcgm",
    "nvlink",
    "xid",
    "kernel",
    "topology",
    "affinity",
    "firmware",
    "limits",
    "python",
    "consistency",
)

ALWAYS = ("ssh", "system")  # every report is keyed by them


def all_areas() -> List[ModuleType]:
    return [importlib.import_module(f"nccldiag.areas.{m}") for m in AREA_MODULES]


def area_names() -> List[str]:
    return [a.NAME for a in all_areas()]


def kind(area: ModuleType) -> str:
    return getattr(area, "KIND", "node")


def select(only: Optional[Iterable[str]] = None, skip: Optional[Iterable[str]] = None) -> List[ModuleType]:
    """Areas chosen by ``--only``/``--skip``; unknown names raise ValueError.

    ``ssh`` and ``system`` are always chosen (every report is keyed by them);
    ``consistency`` compares whatever node areas are chosen, unless skipped.
    """
    areas = all_areas()
    names = [a.NAME for a in areas]
    only = [n.strip() for n in (only or []) if n.strip()]
    skip = [n.strip() for n in (skip or []) if n.strip()]
    unknown = [n for n in list(only) + list(skip) if n not in names]
    if unknown:
        raise ValueError(f"unknown area {', '.join(unknown)} (known: {', '.join(names)})")
    return [a for a in areas
            if a.NAME in ALWAYS
            or (kind(a) == "cluster" and a.NAME not in skip)
            or ((not only or a.NAME in only) and a.NAME not in skip)]
