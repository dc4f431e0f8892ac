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

SECTION_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")  # every source name; nothing else becomes a file name
MARK = re.compile(r"^[0-9a-f]{8,64}$")

NODE_META = "_node.json"


def new_mark() -> str:
    """A fresh value for ``NCCLDIAG_MARK``: the markers of one run, which no node output can guess."""
    import secrets

    return secrets.token_hex(8)


def split_sections(text: str, mark: str = "") -> tuple:
    """``(sections, rcs, truncated)`` from the collection script's stdout.

    Only markers with this run's ``mark`` count, only source names made of
    letters, digits and ``_`` are taken, and a source seen twice keeps its
    first text. A section whose end marker never came (the script was cut
    off) is kept with the text it had and flagged as truncated.
    """
    tag = f"@@nccldiag:{mark}:" if mark else "@@nccldiag:"
    begin_re = re.compile("^" + re.escape(tag) + r"begin ([A-Za-z0-9_]{1,64})@@$")
    end_re = re.compile("^" + re.escape(tag) + r"end ([A-Za-z0-9_]{1,64}) rc=(-?\d{1,4})@@$")
    sections: Dict[str, str] = {}
    rcs: Dict[str, int] = {}
    current: Optional[str] = None
    buf: List[str] = []
    for line in text.splitlines():
        m = begin_re.match(line) if line.startswith(tag) else None
        if m:
            if current is not None:
                sections.setdefault(current, "\n".join(buf))
            current, buf = m.group(1), []
            continue
        m = end_re.match(line) if line.startswith(tag) else None
        if m and current == m.group(1):
            # the script prints a newline before the end marker
            if buf and buf[-1] == "":
                buf.pop()
            if current not in sections:
                sections[current] = "\n".join(buf) + ("\n" if buf else "")
                rcs[current] = int(m.group(2))
            current, buf = None, []
            continue
        if current is not None:
            buf.append(line)
    truncated = current is not None
    if truncated:
        sections.setdefault(current, "\n".join(buf))
    return sections, rcs, truncated


_SAFE = re.compile(r"[^A-Za-z0-9._@-]")


def _dirname(host: str) -> str:
    return _SAFE.sub("_", host) or "_"


def write_node(bundle_dir: str, node: RawNode) -> str:
    """Write one node's raw outputs under ``bundle_dir``; returns its directory."""
    d = os.path.join(bundle_dir, _dirname(node.host))
    os.makedirs(d, exist_ok=True)
    for name, text in node.sections.items():
        if not SECTION_NAME.match(name):
            continue
        _write_atomic(os.path.join(d, name + ".txt"), text)
    meta = {
        "host": node.host,
        "rcs": node.rcs,
        "error": node.error,
        "truncated": node.truncated,
        "elapsed": round(node.elapsed, 3),
        "extra": node.extra,
    }
    _write_atomic(os.path.join(d, NODE_META), json.dumps(meta, indent=1, sort_keys=True, default=str))
    return d


def _write_atomic(path: str, text: str) -> None:
    """Write ``path`` through a new temporary file beside it: never half a file, never through a planted link."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_node(node_dir: str) -> RawNode:
    meta: dict = {}
    meta_path = os.path.join(node_dir, NODE_META)
    if os.path.exists(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    host = meta.get("host") or os.path.basename(os.path.normpath(node_dir))
    sections: Dict[str, str] = {}
    for entry in sorted(os.listdir(node_dir)):
        if entry.endswith(".txt") and SECTION_NAME.match(entry[:-4]) and os.path.isfile(os.path.join(node_dir, entry)):
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
