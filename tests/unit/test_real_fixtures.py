"""The real-output fixtures are read in place, never copied, and CI never runs without them."""
import hashlib
import os
import subprocess
from pathlib import Path

from tests import real

REPO = Path(__file__).resolve().parents[2]
METADATA = ("_bundle.json", "_node.json")
# folders of the project's own captures in a bundle's layout, whose files bear the collection's source names
CASE_FOLDERS = ("tests/cases/", "tests/cases-heldout/", "tests/fixtures/gpu-h200/bundle/")


def test_ci_has_the_real_fixtures():
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        assert real.AVAILABLE, real.REASON


def test_no_capture_is_copied_into_the_repository():
    tracked = subprocess.run(["git", "ls-files", "tests"], cwd=REPO, capture_output=True, text=True, timeout=30)
    if tracked.returncode != 0:  # not a git checkout (an sdist): nothing to compare
        return
    real.require()
    files = [p for p in real.ROOT.rglob("*") if p.is_file() and p.name != "SOURCES.md"]
    # tests/cases and tests/cases-heldout hold cases of their own in the shared cases' layout (case.json,
    # README.md, posted-*.txt, bundle files), and tests/fixtures/gpu-h200/bundle a bundle nccldiag saved on a
    # GPU machine: there a copy is told by its content, elsewhere by its name as well. A bundle's _bundle.json and _node.json hold no captured output (and the same few keys in every
    # hand-built bundle).
    names = {p.name for p in files}
    digests = {_digest(p) for p in files if p.stat().st_size and p.name not in METADATA}
    copies = [f for f in tracked.stdout.split()
              if (Path(f).name in names and not f.startswith(CASE_FOLDERS))
              or (Path(f).name not in METADATA and (REPO / f).is_file() and (REPO / f).stat().st_size
                  and _digest(REPO / f) in digests)]
    assert copies == [], f"copies of ../shared/fixtures in the repository: {copies}"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
