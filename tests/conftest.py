"""Test-suite wide: run directories kept out of the home directory, and one line naming the tests
skipped for want of the real-output fixtures."""
import os
import shutil
import tempfile

from tests import real

_STATE = tempfile.mkdtemp(prefix="nccldiag-test-state-")


def pytest_configure(config):
    # every check and probe run keeps a run directory under $XDG_STATE_HOME: the tests' go here
    os.environ["XDG_STATE_HOME"] = _STATE


def pytest_unconfigure(config):
    shutil.rmtree(_STATE, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if real.REASON in str(r.longrepr)]
    if skipped:
        names = ", ".join(r.nodeid.split("::", 1)[-1] for r in skipped)
        terminalreporter.write_line(f"{real.REASON}: {len(skipped)} tests skipped: {names}")
