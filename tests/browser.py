"""Debian's headless chromium, driven as a user's browser would open a report file.

Every run gets its own profile directory (runs in parallel do not share one)
and no network: a proxy that refuses and a resolver that finds nothing, so a
report that needed anything from the network would show it missing.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import List, Optional

import pytest

TIMEOUT = 180  # seconds: chromium starts slowly on a loaded 2-core machine


def binary() -> Optional[str]:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require() -> str:
    path = binary()
    if path is None:
        pytest.skip("chromium is not installed (scripts/setup-tests installs it)")
    return path


def _run(args: List[str], page: Path) -> subprocess.CompletedProcess:
    exe = require()
    with tempfile.TemporaryDirectory(prefix="nccldiag-chromium-") as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9",
               "--host-resolver-rules=MAP * ~NOTFOUND", *args, page.resolve().as_uri()]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def dump_dom(page: Path) -> str:
    """The page's DOM after loading, as chromium serialises it."""
    r = _run(["--dump-dom"], page)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 1600) -> Path:
    r = _run([f"--screenshot={png}", f"--window-size={width},{height}", "--hide-scrollbars"], page)
    assert r.returncode == 0 and png.exists(), r.stderr[-2000:]
    return png


def ink(png: Path) -> tuple:
    """(distinct colours, share of pixels that are not white) of a screenshot."""
    from PIL import Image

    img = Image.open(png).convert("RGB")
    small = img.resize((img.width // 4, img.height // 4))
    counts = small.getcolors(maxcolors=small.width * small.height)
    white = sum(n for n, c in counts if c == (255, 255, 255))
    return len(counts), 1.0 - white / (small.width * small.height)
