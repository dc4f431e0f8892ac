"""Bundles: the raw outputs of nodes on disk, written node by node and read back.

A bundle is a directory with one sub-directory per node and one file per
source (``<source>.txt``), plus ``_node.json`` with how the collection went,
and ``_bundle.json`` naming its hosts in order. ``nccldiag check --bundle DIR``
reads it back and judges it as if live; a check's run directory keeps its
nodes' outputs as one (``raw/``, written through :meth:`nccldiag.rundir.Run.bundle`).
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.atomic import (NotRegular, TooLarge, Unsafe, check_output_dir, create_new, json_loads, own_dir,
                             read_regular, write_text)
from nccldiag.model.raw import RawNode

SECTION_NAME = rx.compile(r"^[A-Za-z0-9_]{1,64}$")  # every source name; nothing else becomes a file name
NODE_META = "_node.json"
INDEX = "_bundle.json"


@dataclass(frozen=True)
class Bundle:
    """A bundle being written, by whoever holds it (picklable: a shard worker writes its own nodes in it):
    :meth:`start` names its hosts, :meth:`node` writes each node as it arrives."""

    path: str

    def start(self, hosts: List[str], meta: Optional[dict] = None) -> None:
        write_bundle_index(self.path, hosts, meta)

    def node(self, raw: RawNode) -> str:
        return write_node(self.path, raw)


_SAFE = rx.compile(r"[^A-Za-z0-9._@-]")


def _dirname(host: str) -> str:
    return _SAFE.sub("_", host) or "_"


def write_node(bundle_dir: str, node: RawNode) -> str:
    """Write one node's raw outputs under ``bundle_dir``; returns its directory.

    The node is written whole into a new hidden directory (``_node.json``
    last), which then replaces the node's directory: a reader sees the old
    node or the new one, never half of either, and a write that fails (a full
    disk) leaves only a hidden directory that no reader looks at, removed here.
    """
    import shutil
    import tempfile

    final = os.path.join(bundle_dir, _dirname(node.host))
    own_dir(bundle_dir, 0o755)
    d = tempfile.mkdtemp(prefix=f".{_dirname(node.host)}.", dir=bundle_dir)
    try:
        _write_node_files(d, node)
        if os.path.isdir(final) and not os.path.islink(final):
            old = tempfile.mkdtemp(prefix=f".{_dirname(node.host)}.old.", dir=bundle_dir)
            os.replace(final, os.path.join(old, "n"))
            os.replace(d, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(d, final)
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        raise
    return final


def _write_new(path: str, text: str) -> None:
    """A new file in a directory only this process writes to, still hidden (:func:`write_node`): the node's
    directory as a whole is what replaces atomically, so its files need no atomic replacement of their own."""
    with os.fdopen(create_new(path, mode=0o600), "w", encoding="utf-8") as f:
        f.write(text)


def _write_node_files(d: str, node: RawNode) -> None:
    os.chmod(d, 0o755)
    for name, text in node.sections.items():
        if not SECTION_NAME.match(name):
            continue
        _write_new(os.path.join(d, name + ".txt"), text)
    meta = {
        "host": node.host,
        "rcs": node.rcs,
        "error": node.error,
        "truncated": node.truncated,
        "elapsed": round(node.elapsed, 3),
        "extra": node.extra,
    }
    _write_new(os.path.join(d, NODE_META), json.dumps(meta, indent=1, sort_keys=True, default=str))


MAX_SECTION_BYTES = 64 * 1024 * 1024


def _read_regular(path: str, limit: int) -> Optional[str]:
    """The text of ``path`` if it is a regular file (never through a link, a FIFO or a device), capped."""
    try:
        return read_regular(path, limit)
    except TooLarge:
        raise
    except (OSError, NotRegular):
        return None


def _typed(meta: dict, key: str, kind, default, where: str):
    value = meta.get(key, default)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ValueError(f"{where}: '{key}' should be {getattr(kind, '__name__', kind)}, not {type(value).__name__}")
    return value


def _check_host(host: str, where: str) -> None:
    """A host name a bundle gives (``_node.json``, or its directory's name) passes the inventory's rule, as one
    given on the command line does: nothing else is ever printed or used as a host."""
    from nccldiag.inventory import check_name
    from nccldiag.model.errors import InventoryError

    try:
        check_name(host, where)
    except InventoryError as exc:
        raise ValueError(str(exc)) from None


def _refuse_irregular(path: str) -> None:
    """Raise ValueError if ``path`` exists and is anything but a regular file (a link, a FIFO, a device): a
    bundle nccldiag writes holds regular files only, and one that holds anything else is no bundle to judge."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        what = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a directory" if stat.S_ISDIR(st.st_mode) else "a device or socket")
        raise ValueError(f"{path}: {what}, where a bundle holds a regular file: refused, nothing of it read")


def read_node(node_dir: str) -> RawNode:
    """One node of a bundle. Only regular files are read (anything else is refused); ``_node.json`` is checked
    field by field."""
    meta: dict = {}
    meta_path = os.path.join(node_dir, NODE_META)
    _refuse_irregular(meta_path)
    text = _read_regular(meta_path, 1024 * 1024)
    if text is not None:
        try:
            meta = json_loads(text)
        except ValueError as exc:
            raise ValueError(f"{meta_path}: not valid JSON ({exc})") from None
        if not isinstance(meta, dict):
            raise ValueError(f"{meta_path}: expected a JSON object")
    host = _typed(meta, "host", str, "", meta_path) or os.path.basename(os.path.normpath(node_dir))
    _check_host(host, meta_path)
    rcs = _typed(meta, "rcs", dict, {}, meta_path)
    error = _typed(meta, "error", dict, None, meta_path)
    if error is not None and not all(isinstance(error.get(k, ""), str) for k in ("kind", "message", "fix")):
        raise ValueError(f"{meta_path}: 'error' should hold strings")
    try:
        rcs = {str(k): int(v) for k, v in rcs.items() if SECTION_NAME.match(str(k))}
    except (TypeError, ValueError):
        raise ValueError(f"{meta_path}: 'rcs' should map source names to exit statuses") from None
    elapsed = _typed(meta, "elapsed", (int, float), 0.0, meta_path)
    sections: Dict[str, str] = {}
    for entry in sorted(os.listdir(node_dir)):
        if entry.endswith(".txt") and SECTION_NAME.match(entry[:-4]):
            _refuse_irregular(os.path.join(node_dir, entry))
            content = _read_regular(os.path.join(node_dir, entry), MAX_SECTION_BYTES)
            if content is not None:
                sections[entry[:-4]] = content
    return RawNode(
        host=host,
        sections=sections,
        rcs=rcs,
        error=error,
        truncated=bool(_typed(meta, "truncated", bool, False, meta_path)),
        elapsed=float(elapsed),
        extra=_typed(meta, "extra", dict, {}, meta_path),
    )


NOT_COLLECTED = "not-collected"  # a host the bundle lists, with no outputs in it
NOT_COLLECTED_FIX = ("The collection that wrote the bundle ended before this host (interrupted, or the host was "
                     "never reached): collect it again (nccldiag collect, or check --save).")


def not_collected(host: str, where: str = INDEX) -> RawNode:
    """A host a bundle (or a run's ``run.json``, ``where``) lists but holds no outputs of: not checked."""
    _check_host(host, where)
    return RawNode(host=host, error={"kind": NOT_COLLECTED, "fix": NOT_COLLECTED_FIX,
                                     "message": "listed in the bundle's _bundle.json, but the bundle holds no "
                                                "outputs of it: not checked"})


def read_bundle(bundle_dir: str) -> List[RawNode]:
    """All nodes of a bundle, in the order recorded in ``_bundle.json`` if present; a host it lists but holds
    no directory of is not collected (:data:`NOT_COLLECTED`), never left out."""
    if not os.path.isdir(bundle_dir):
        raise FileNotFoundError(f"{bundle_dir}: not a directory")
    order: Optional[List[str]] = None
    index = os.path.join(bundle_dir, INDEX)
    listed: Dict[str, str] = {}  # directory name -> host, as _bundle.json lists them
    if os.path.exists(index):
        hosts = read_bundle_index(bundle_dir).get("hosts", [])
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise ValueError(f"{index}: 'hosts' should be a list of host names")
        for h in hosts:
            _check_host(h, index)
            if _dirname(h) in listed:
                raise ValueError(f"{index}: host {h!r} is listed twice (as {listed[_dirname(h)]!r} before): "
                                 "a bundle nccldiag writes lists each host once")
            listed[_dirname(h)] = h
        order = list(listed)
    # hidden directories are nodes being written (or a write that failed)
    dirs = [e for e in os.listdir(bundle_dir) if not e.startswith(".")
            and os.path.isdir(os.path.join(bundle_dir, e)) and not os.path.islink(os.path.join(bundle_dir, e))]
    if order is not None and order:
        # a bundle written by nccldiag holds the nodes of its last collection only; the hosts it lists that it
        # does not hold were not collected
        nodes = [read_node(os.path.join(bundle_dir, e)) if e in dirs else not_collected(listed[e], index)
                 for e in order]
    else:
        dirs.sort()
        if not dirs and any(e.endswith(".txt") for e in os.listdir(bundle_dir)):
            return [read_node(bundle_dir)]  # a single node directory
        nodes = [read_node(os.path.join(bundle_dir, e)) for e in dirs]
    seen: Dict[str, str] = {}
    for n, e in zip(nodes, order if order else dirs):
        if n.host in seen:  # two directories whose _node.json name the same host: which is it?
            raise ValueError(f"{os.path.join(bundle_dir, e)}: host {n.host!r} again (also {seen[n.host]}): a "
                             "bundle holds each host once")
        seen[n.host] = os.path.join(bundle_dir, e)
    return nodes


def check_bundle_dir(bundle_dir: str, option: str) -> None:
    """Refuse an output directory that holds something other than a bundle, or that another user could
    change or replace (before any work)."""
    try:
        check_output_dir(bundle_dir)
    except Unsafe as exc:
        raise ValueError(f"{option} {bundle_dir}: {exc.strerror}") from None
    if not os.path.exists(bundle_dir):
        parent = os.path.dirname(os.path.abspath(bundle_dir))
        if not os.path.isdir(parent):
            raise ValueError(f"{option} {bundle_dir}: its parent directory does not exist")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ValueError(f"{option} {bundle_dir}: cannot create it (no write permission in {parent})")
        return
    if os.path.islink(bundle_dir) or not os.path.isdir(bundle_dir):
        raise ValueError(f"{option} {bundle_dir}: exists and is not a directory")
    if not os.access(bundle_dir, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {bundle_dir}: not writable")
    entries = [e for e in os.listdir(bundle_dir) if not e.startswith(".")]
    if entries and not os.path.isfile(os.path.join(bundle_dir, INDEX)):
        raise ValueError(f"{option} {bundle_dir}: not empty and not a bundle (no _bundle.json); "
                         "give a new or empty directory")


def write_bundle_index(bundle_dir: str, hosts: List[str], meta: Optional[dict] = None) -> None:
    own_dir(bundle_dir, 0o755)
    data = {"format": 1, "hosts": hosts}
    data.update(meta or {})
    write_text(os.path.join(bundle_dir, INDEX), json.dumps(data, indent=1))


def read_bundle_index(bundle_dir: str) -> dict:
    """The bundle's ``_bundle.json`` (hosts, areas collected), or {}."""
    index = os.path.join(bundle_dir, INDEX)
    text = _read_regular(index, 16 * 1024 * 1024)
    if text is None:
        return {}
    try:
        data = json_loads(text)
    except ValueError as exc:
        raise ValueError(f"{index}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{index}: expected a JSON object")
    return data
