"""Raw outputs: splitting the script's output into sections, and bundles.

A bundle is a directory with one sub-directory per node and one file per
source (``<source>.txt``), plus ``_node.json`` with how the collection went.
``nccldiag check --bundle DIR`` reads it back and judges it as if live.
"""
from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional

from nccldiag.model.raw import RawNode

_END_RE = re.compile(r"^@@nccldiag:end (\S+) rc=(-?\d+)@@$")
_BEGIN_RE = re.compile(r"^@@nccldiag:begin (\S+)@@$")

NODE_META = "_node.json"


def split_sections(text: str) -> tuple:
    """``(sections, rcs, truncated)`` from the collection script's stdout.

    A section whose end marker never came (the script was cut off) is kept
    with the text it had and flagged as truncated.
    """
    sections: Dict[str, str] = {}
    rcs: Dict[str, int] = {}
    current: Optional[str] = None
    buf: List[str] = []
    for line in text.splitlines():
        m = _BEGIN_RE.match(line)
        if m:
            if current is not None:
                sections[current] = "\n".join(buf)
            current, buf = m.group(1), []
            continue
        m = _END_RE.match(line)
        if m and current == m.group(1):
            # the script prints a newline before the end marker
            if buf and buf[-1] == "":
                buf.pop()
            sections[current] = "\n".join(buf) + ("\n" if buf else "")
            rcs[current] = int(m.group(2))
            current, buf = None, []
            continue
        if current is not None:
            buf.append(line)
    truncated = current is not None
    if truncated:
        sections[current] = "\n".join(buf)
    return sections, rcs, truncated


_SAFE = re.compile(r"[^A-Za-z0-9._@-]")


def _dirname(host: str) -> str:
    return _SAFE.sub("_", host) or "_"


def write_node(bundle_dir: str, node: RawNode) -> str:
    """Write one node's raw outputs under ``bundle_dir``; returns its directory."""
    d = os.path.join(bundle_dir, _dirname(node.host))
    os.makedirs(d, exist_ok=True)
    for name, text in node.sections.items():
        with open(os.path.join(d, name + ".txt"), "w", encoding="utf-8") as f:
            f.write(text)
    meta = {
        "host": node.host,
        "rcs": node.rcs,
        "error": node.error,
        "truncated": node.truncated,
        "elapsed": round(node.elapsed, 3),
        "extra": node.extra,
    }
    tmp = os.path.join(d, NODE_META + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(d, NODE_META))
    return d


def read_node(node_dir: str) -> RawNode:
    meta: dict = {}
    meta_path = os.path.join(node_dir, NODE_META)
    if os.path.exists(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    host = meta.get("host") or os.path.basename(os.path.normpath(node_dir))
    sections: Dict[str, str] = {}
    for entry in sorted(os.listdir(node_dir)):
        if entry.endswith(".txt"):
            with open(os.path.join(node_dir, entry), encoding="utf-8", errors="replace") as f:
                sections[entry[:-4]] = f.read()
    return RawNode(
        host=host,
        sections=sections,
        rcs={k: int(v) for k, v in (meta.get("rcs") or {}).items()},
        error=meta.get("error"),
        truncated=bool(meta.get("truncated")),
        elapsed=float(meta.get("elapsed") or 0.0),
        extra=meta.get("extra") or {},
    )


def read_bundle(bundle_dir: str) -> List[RawNode]:
    """All nodes of a bundle, in the order recorded in ``_bundle.json`` if present."""
    if not os.path.isdir(bundle_dir):
        raise FileNotFoundError(f"{bundle_dir}: not a directory")
    order: List[str] = []
    index = os.path.join(bundle_dir, "_bundle.json")
    if os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            order = [_dirname(h) for h in json.load(f).get("hosts", [])]
    dirs = [e for e in os.listdir(bundle_dir) if os.path.isdir(os.path.join(bundle_dir, e))]
    dirs.sort(key=lambda e: (order.index(e) if e in order else len(order), e))
    if not dirs and any(e.endswith(".txt") for e in os.listdir(bundle_dir)):
        return [read_node(bundle_dir)]  # a single node directory
    return [read_node(os.path.join(bundle_dir, e)) for e in dirs]


def write_bundle_index(bundle_dir: str, hosts: List[str], meta: Optional[dict] = None) -> None:
    os.makedirs(bundle_dir, exist_ok=True)
    data = {"format": 1, "hosts": hosts}
    data.update(meta or {})
    with open(os.path.join(bundle_dir, "_bundle.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)


def read_bundle_index(bundle_dir: str) -> dict:
    """The bundle's ``_bundle.json`` (hosts, areas collected), or {}."""
    index = os.path.join(bundle_dir, "_bundle.json")
    if not os.path.exists(index):
        return {}
    with open(index, encoding="utf-8") as f:
        return json.load(f)
