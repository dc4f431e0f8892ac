"""Integration tests run on the virtual cluster of scripts/vcluster.

``vcluster`` is one 4-node cluster (prefix ``ncd``: node01..node04) for the
whole session, taken down at the end. Tests that change the cluster (faults,
restarts) should make their own with :func:`vcluster_fixture` and another
prefix, names and subnet, so that they never disturb it.
"""
from pathlib import Path

import pytest

from tests.integration.vcluster import vcluster_fixture

vcluster = vcluster_fixture(n=4, prefix="ncd", scope="session")

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Mark every test of this directory ``integration`` (``-m 'not integration'`` leaves them out)."""
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)
