"""Integration tests run on the virtual cluster of scripts/vcluster.

``vcluster`` is one 4-node cluster (prefix ``ncd``: node01..node04) for the
whole session, taken down at the end. Tests that change the cluster (faults,
restarts) should make their own with :func:`vcluster_fixture` and another
prefix, names and subnet, so that they never disturb it.
"""
import fcntl
import os
import time
from pathlib import Path

import pytest

from tests.integration.vcluster import vcluster_fixture

vcluster = vcluster_fixture(n=4, prefix="ncd", scope="session")

# One test session at a time builds virtual clusters on this machine: two sessions would bring up the same
# node names. Held from the first integration test to the end of the session.
SESSION_LOCK = "/run/lock/nccldiag-integration.lock"
SESSION_WAIT = 3600.0


@pytest.fixture(scope="session", autouse=True)
def _one_session_at_a_time(request):
    if not any(_HERE in Path(str(i.fspath)).resolve().parents for i in request.session.items) or os.geteuid() != 0:
        yield
        return
    os.makedirs(os.path.dirname(SESSION_LOCK), exist_ok=True)
    with open(SESSION_LOCK, "w") as fh:
        deadline = time.monotonic() + SESSION_WAIT
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.exit(f"another test session has held {SESSION_LOCK} for {SESSION_WAIT:.0f} s", 3)
                time.sleep(1.0)
        yield

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Mark every test of this directory ``integration`` (``-m 'not integration'`` leaves them out)."""
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)
