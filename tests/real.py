"""Real outputs captured on real machines, read in place.

The captures live in ``../shared/fixtures`` beside the checkout (``node/<kind>/``
and ``nccl-logs/``, each with its SOURCES.md); ``NCCLDIAG_FIXTURES`` points
elsewhere. They are never copied into this repository. Where the root is
absent, every test that reads a capture is skipped with :data:`REASON`; under
CI (``CI=true``) ``tests/unit/test_real_fixtures.py`` fails instead.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List

import pytest

ROOT = Path(os.environ.get("NCCLDIAG_FIXTURES") or Path(__file__).resolve().parents[2] / "shared" / "fixtures")
NODE = ROOT / "node"
NCCL_LOGS = ROOT / "nccl-logs"
AVAILABLE = NODE.is_dir() and NCCL_LOGS.is_dir()
REASON = f"real-output fixtures not found at {ROOT}; set NCCLDIAG_FIXTURES"
ABSENT = "real-fixtures-absent"


def require() -> None:
    """Skip the calling test when the captures are not there."""
    if not AVAILABLE:
        pytest.skip(REASON)


def node(*parts: str) -> Path:
    """A node capture, e.g. ``node("ibstat", "x.txt")``; skips the test where the root is absent."""
    require()
    return NODE.joinpath(*parts)


def node_text(*parts: str) -> str:
    return node(*parts).read_text(encoding="utf-8")


def nccl_log(name: str = "") -> Path:
    """An NCCL log capture (or the directory, without a name)."""
    require()
    return NCCL_LOGS / name if name else NCCL_LOGS


def names(directory: Path, pattern: str = "*.txt") -> List:
    """File names for ``pytest.mark.parametrize``: one skipped placeholder where the root is absent."""
    if not AVAILABLE:
        return [pytest.param(ABSENT, marks=pytest.mark.skip(reason=REASON))]
    return sorted(p.name for p in directory.glob(pattern) if p.name != "SOURCES.md")
