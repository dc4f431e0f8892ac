"""``nccldiag spec init``: a commented TOML spec from the facts of known-good nodes (pure).

Where the reference nodes (or the GPUs or ports of one node) disagree, the
key is written commented out with each value and where it was seen, and a
note says so: the admin chooses, nccldiag does not.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from nccldiag import __version__
from nccldiag.spec import fields as F
from nccldiag.spec import tomlfile
from nccldiag.spec.model import SCHEMA


@dataclass
class Derived:
    text: str
    disagreements: List[str] = field(default_factory=list)  # one line each, for stderr
    keys: int = 0  # keys written (not commented out)


def _shown(f: F.Field, v: Any) -> Any:
    """The value as written in the file."""
    if f.kind == "size":
        return F.show_size(v)
    if f.kind == "float":
        return float(v)
    return v


def _gather(f: F.Field, nodes: Sequence[Tuple[str, Mapping[str, Any]]], model: Optional[str] = None):
    """``({value: [where]}, [hosts not read])`` of one key over the reference nodes."""
    seen: Dict[Any, List[str]] = {}
    unread: List[str] = []
    for host, facts in nodes:
        reading = F.read(f, facts, model)
        if reading is None:
            unread.append(host)
            continue
        by_value: Dict[Any, List[str]] = {}
        for item, v in reading.items():
            by_value.setdefault(v, []).append(item)
        for v, items in by_value.items():
            where = host if len(by_value) == 1 or not items[0] else f"{host} {', '.join(_short(items))}"
            seen.setdefault(v, []).append(where)
    return seen, unread


def _short(items: List[str], most: int = 4) -> List[str]:
    return items[:most] + ([f"and {len(items) - most} more"] if len(items) > most else [])


def _key_lines(f: F.Field, nodes, model: Optional[str], notes: List[str]) -> Tuple[List[str], int]:
    seen, unread = _gather(f, nodes, model)
    name = f.path[-1]
    where = f.where(model)
    if not seen:
        why = "not read on " + ", ".join(_short(unread)) if unread else "nothing to read it from"
        return [f"# {name} = ?  # {tomlfile.comment(f'{f.doc}: {why}')}"], 0
    if len(seen) == 1:
        (v, _hosts), = seen.items()
        tail = f"; not read on {', '.join(_short(unread))}" if unread else ""
        return [f"{tomlfile.key(name)} = {tomlfile.value(_shown(f, v))}  # {tomlfile.comment(f.doc + tail)}"], 1
    out = [f"# {f.doc}: the reference nodes disagree, choose one:"]
    parts = []
    for v, hosts in seen.items():
        shown = tomlfile.value(_shown(f, v))
        out.append(f"# {tomlfile.key(name)} = {shown}  # {tomlfile.comment('; '.join(_short(hosts)))}")
        parts.append(f"{shown} on {'; '.join(_short(hosts))}")
    # node strings (port names, models) in a comment and in the note: one line each, nothing a terminal obeys
    notes.append(tomlfile.comment(f"{where}: the reference nodes disagree ({' / '.join(parts)}); "
                                  "written commented out: choose one"))
    return out, 0


def derive(nodes: Sequence[Tuple[str, Mapping[str, Any]]], sources: str = "",
           line_rates: Sequence[str] = ()) -> Derived:
    """The spec of ``nodes`` (``[(host, {area: facts})]``, every one a known-good node); ``line_rates`` are the
    expected busbw figures the probe would derive from the first node (see :func:`line_rates`), named beside the
    commented ``[bandwidth]`` table."""
    notes: List[str] = []
    written = 0
    hosts = [h for h, _ in nodes]
    shown_hosts = ", ".join(_short(hosts, 8))
    lines = [
        "# " + tomlfile.comment(f"nccldiag site spec: what every node should be, derived by `nccldiag spec init` "
                                f"from {len(hosts)} reference node{'s' if len(hosts) != 1 else ''} ({shown_hosts})"),
        "# " + tomlfile.comment(f"{sources + ', ' if sources else ''}nccldiag {__version__}, "
                                f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."),
        "# `nccldiag check --spec FILE` compares every node with each key below; a deviation is a finding",
        "# on that node, even when every node deviates alike. Delete or comment out a key to stop checking it.",
        "# Strings may hold * and ? (driver = \"570.*\"). docs/spec.md describes every key.",
        "",
        f"schema = {tomlfile.value(SCHEMA)}",
    ]
    for section in F.SECTIONS:
        if section == "nic":
            continue
        lines += ["", f"# {F.SECTION_TITLES[section]}", f"[{section}]"]
        for f in F.FIELDS:
            if f.path[0] == section:
                got, n = _key_lines(f, nodes, None, notes)
                lines += got
                written += n
        if section == "topology":
            written += _nics(nodes, lines, notes)
    lines += _bandwidth_hint(nodes, line_rates)
    lines += [
        "",
        "# Policy: the status of a check id, whatever nccldiag would say: fail, warn, info (shown, never",
        "# counted against the node) or ignore (shown with -v only). A * matches any text (\"firmware.spec_*\").",
        "[severity]",
        "# \"firmware.spec_hca_fw\" = \"warn\"",
        "",
    ]
    return Derived("\n".join(lines), notes, written)


def line_rates(nodes, expect) -> List[str]:
    """The busbw the probe would derive from the first reference node, across nodes and on one node, as text:
    ``expect`` is the probe's expectation (``diagnosis.expected.expect``), passed in by the command."""
    derived: List[str] = []
    if nodes:
        host, facts = nodes[0]
        both = {host: facts, host + " (again)": facts}
        for scope, hosts in (("across nodes", both), ("on one node", {host: facts})):
            try:
                got = expect(hosts, list(hosts))
            except (AttributeError, TypeError, ValueError):
                got = None  # odd facts: no figure to name
            if got is not None:
                derived.append(f"{scope} {got.gbps:.1f} GB/s ({got.bottleneck.name})")
    return derived


def _bandwidth_hint(nodes, derived: Sequence[str]) -> List[str]:
    """A commented ``[bandwidth]`` table: the figure is the site's to measure, never derived here; the line
    rates the probe would derive from the first reference node are named for comparison."""
    told = "; ".join(derived) if derived else "none: the outputs do not give the link rates"
    return [
        "",
        "# Expected busbw of `nccldiag probe` (GB/s, nccl-tests' unit), as measured on known-good nodes",
        "# with one rank per GPU; without it the probe holds busbw to the line rate of the slowest segment,",
        f"# derived from the nodes (on {nodes[0][0] if nodes else 'the reference node'}: {told}).",
        "# [bandwidth]",
        "# inter_node_gbps = ?",
        "# intra_node_gbps = ?",
    ]


def _nics(nodes, lines: List[str], notes: List[str]) -> int:
    models: List[str] = []
    for _h, facts in nodes:
        for m in F.nic_models(facts):
            if m not in models:
                models.append(m)
    lines += ["", f"# {F.SECTION_TITLES['nic']}"]
    if not models:
        lines.append("# (no RDMA port on the reference nodes: no [nic.MODEL] table)")
        return 0
    written = 0
    for m in models:
        lines += ["", f"[nic.{tomlfile.key(m)}]"]
        for f in F.FIELDS:
            if f.path[0] == "nic":
                got, n = _key_lines(f, nodes, m, notes)
                lines += got
                written += n
    return written
