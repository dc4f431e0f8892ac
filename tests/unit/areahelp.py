"""Helpers shared by the tests of the node-health areas: judge raw sections, run an area's sources."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from nccldiag.areas.base import NodeFacts
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections


def judge(area, raw: Mapping[str, Optional[str]], **facts) -> Dict[str, List]:
    """``{check: [status, ...]}`` and the findings, for ``raw`` sections and other areas' ``facts``."""
    found = area.judge(area.parse(dict(raw)), NodeFacts("n1", dict(facts)))
    out: Dict[str, List] = {}
    for f in found:
        out.setdefault(f.check, []).append(f.status.value)
    return out


def findings(area, raw: Mapping[str, Optional[str]], **facts):
    return {f.check: f for f in area.judge(area.parse(dict(raw)), NodeFacts("n1", dict(facts)))}


def stand_in(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    p = bin_dir / name
    p.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    p.chmod(0o755)


def run_sources(sources, root: Path, bin_dir: Optional[Path] = None) -> Dict[str, str]:
    """Run the collection script of ``sources`` against the fixture root ``root``; the sections it printed."""
    path = (f"{bin_dir}:" if bin_dir else "") + "/usr/bin:/bin"
    env = dict(os.environ, NCCLDIAG_ROOT=str(root), PATH=path, LC_ALL="C")
    out = subprocess.run(["sh", "-s"], input=build_script(sources), capture_output=True, text=True, env=env,
                         timeout=60).stdout
    secs, _, truncated = split_sections(out)
    assert not truncated
    return secs
