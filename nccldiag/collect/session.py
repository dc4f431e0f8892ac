"""One collection from start to end: live (local or SSH) or from a saved bundle.

Nodes are saved to the bundle as they arrive, so an interrupted run keeps
every node already collected. Progress goes to the ``on_node`` callback; this
module prints nothing.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from nccldiag import bundle
from nccldiag.collect import runner
from nccldiag.model.raw import RawNode
from nccldiag.model.errors import UsageError


def collect(
    inv,
    areas_sel: Sequence,
    opts: runner.CollectOptions,
    save_dir: Optional[str] = None,
    on_start: Optional[Callable[[int], None]] = None,
    on_node: Optional[Callable[[RawNode], None]] = None,
    not_saved: Optional[Dict[str, str]] = None,
    release: bool = False,
) -> Tuple[List[RawNode], List[str]]:
    """Raw nodes in inventory order and notes about the inventory (``inv`` None: this machine).

    A node that cannot be saved (a full disk) is named in ``not_saved`` and in
    the notes; collection goes on and every node is still returned. With
    ``release`` the nodes collected from hosts are let go of their outputs once
    saved and handed to ``on_node`` (:func:`~nccldiag.model.raw.released`
    ones are returned); this machine's node is returned whole.
    """
    script = runner.script_for(areas_sel, opts.extra_sources, opts.mark)
    area_names = [a.NAME for a in areas_sel]
    not_saved = not_saved if not_saved is not None else {}
    notes: List[str] = []
    if save_dir:
        check_save(save_dir)

    def save(node: RawNode) -> None:
        try:
            bundle.write_node(save_dir, node)
        except OSError as exc:
            not_saved[node.host] = exc.strerror or str(exc)
            notes.append(f"{node.host}: not saved to {save_dir}: {not_saved[node.host]}")

    def index(hosts: List[str], transport: str) -> None:
        index_bundle(save_dir, hosts, transport, area_names)

    if inv is None:
        node = runner.collect_local(script, opts)
        if save_dir:
            index([node.host], "local")
            save(node)
        return [node], notes
    notes.extend(inventory_notes(inv))
    hosts = inv.hosts
    if save_dir:
        index([h.name for h in hosts], opts.transport)
    if on_start is not None:
        on_start(len(hosts))

    def arrived(node: RawNode) -> None:
        if save_dir:
            save(node)
        if on_node is not None:
            on_node(node)

    if opts.transport == "srun":
        return runner.collect_srun(hosts, script, opts, arrived, release=release), notes
    return runner.collect_hosts(hosts, script, opts, arrived, release=release), notes


def check_save(save_dir: str) -> None:
    """Refuse, before any work, a --save/-o directory that cannot take a bundle."""
    try:
        bundle.check_bundle_dir(save_dir, "--save/-o")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def index_bundle(save_dir: str, hosts: List[str], transport: str, area_names: List[str]) -> None:
    """The bundle's index, naming the hosts it is to hold, written before the first node arrives."""
    try:
        bundle.write_bundle_index(save_dir, hosts, {"transport": transport, "areas": area_names})
    except OSError as exc:
        raise UsageError(f"--save/-o {save_dir}: cannot write the bundle: {exc.strerror or exc}") from None


MOST_DUPLICATE_NOTES = 10  # hosts named one a line; the rest counted in one more line


def inventory_notes(inv) -> List[str]:
    """One note per host given more than once (how many more times, and where first), at most
    :data:`MOST_DUPLICATE_NOTES` of them and a line counting the rest: 5,000 copies of a host are one line."""
    by_name: Dict[str, List[Tuple[str, str]]] = {}
    for name, where, first in inv.duplicates:
        by_name.setdefault(name, []).append((where, first))
    notes = []
    for name, seen in list(by_name.items())[:MOST_DUPLICATE_NOTES]:
        (where, first), more = seen[0], len(seen) - 1
        again = f", and {more} more time{'s' if more > 1 else ''} after (last at {seen[-1][0]})" if more else ""
        notes.append(f"{where}: duplicate host {name} (first at {first}){again}, checked once")
    rest = len(by_name) - MOST_DUPLICATE_NOTES
    if rest > 0:
        notes.append(f"and {rest} more duplicate host{'s' if rest > 1 else ''} ({len(inv.duplicates)} duplicate "
                     "entries in all), each checked once")
    return notes


def from_bundle(path: str, areas_sel: Sequence, only_given: bool) -> Tuple[List[RawNode], List]:
    """The nodes of a saved bundle, and the areas to judge (those it collected, unless --only named some)."""
    try:
        raws = bundle.read_bundle(path)
        collected = bundle.read_bundle_index(path).get("areas")
    except (OSError, ValueError) as exc:
        raise UsageError(f"--bundle {path}: {exc}") from None
    if not raws:
        raise UsageError(f"--bundle {path}: no node directories in it")
    if collected is not None and (not isinstance(collected, list) or not all(isinstance(a, str) for a in collected)):
        raise UsageError(f"--bundle {path}: _bundle.json: 'areas' should be a list of area names")
    if collected and not only_given:
        from nccldiag.areas import ALWAYS, kind

        areas_sel = [a for a in areas_sel if a.NAME in collected or a.NAME in ALWAYS or kind(a) != "node"]
    return raws, list(areas_sel)
