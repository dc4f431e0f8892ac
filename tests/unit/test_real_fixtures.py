"""The real-output fixtures are read in place, never copied, and CI never runs without them."""
import os
import subprocess
from pathlib import Path

from tests import real

REPO = Path(__file__).resolve().parents[2]


def test_ci_has_the_real_fixtures():
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        assert real.AVAILABLE, real.REASON


def test_no_capture_is_copied_into_the_repository():
    tracked = subprocess.run(["git", "ls-files", "tests"], cwd=REPO, capture_output=True, text=True, timeout=30)
    if tracked.returncode != 0:  # not a git checkout (an sdist): nothing to compare
        return
    real.require()
    captured = {p.name for p in real.ROOT.rglob("*") if p.is_file() and p.name != "SOURCES.md"}
    copies = [f for f in tracked.stdout.split() if Path(f).name in captured]
    assert copies == [], f"copies of ../shared/fixtures in the repository: {copies}"
