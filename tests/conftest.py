"""Test-suite wide: one line naming the tests skipped for want of the real-output fixtures."""
from tests import real


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if real.REASON in str(r.longrepr)]
    if skipped:
        names = ", ".join(r.nodeid.split("::", 1)[-1] for r in skipped)
        terminalreporter.write_line(f"{real.REASON}: {len(skipped)} tests skipped: {names}")
