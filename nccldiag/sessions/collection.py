"""The nodes' raw outputs collected live, from start to end: over SSH spread over worker processes
(:mod:`nccldiag.shards`) or in this process (:mod:`nccldiag.collect.session`: SSH, srun, this machine), each node
saved as it arrives (the ``--save``/``-o`` bundle) and handed on. ``check``, ``collect`` and ``spec init`` collect
so; nothing is printed here (``on_start``/``on_node`` are the caller's progress)."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from nccldiag.collect import runner, session
from nccldiag.model.raw import RawNode

Progress = Optional[Callable[[RawNode], None]]


def collect(inv, opts: runner.CollectOptions, areas_sel: Sequence, save_dir: Optional[str] = None,
            workers: Optional[int] = None, not_saved: Optional[Dict[str, str]] = None, release: bool = True,
            keeper=None, on_start: Optional[Callable[[int], None]] = None,
            on_node: Progress = None) -> Tuple[List[RawNode], List[str]]:
    """``(nodes in inventory order, notes on the inventory)`` of ``inv`` (None: this machine), collected as
    ``opts`` say (transport, fanout, the node-to-node test), each saved to ``save_dir`` as it arrives.

    With ``release`` each node collected from a host is let go of its outputs once saved and handed on: the
    nodes returned are :func:`~nccldiag.model.raw.released` ones, what a report needs of how each was reached
    (its error, its transport's notes), so memory does not grow with what each node sends. Without it (a few
    reference nodes, judged after the collection) the nodes keep their outputs.

    Over SSH with ``release``, the hosts are spread over ``workers`` processes (None: one per 64 hosts, at most
    one per core; :func:`workers_for`); with a ``keeper`` (a check's :class:`nccldiag.sessions.check.Keeper`)
    each node is judged and written in its worker and the keeper takes what the run keeps of it (in this
    process: the keeper judges and writes each node as it arrives)."""
    n = workers_for(workers, inv, opts.transport, release)
    if n > 1:
        return _sharded(inv, areas_sel, opts, save_dir, on_start, on_node, not_saved, keeper, n)
    arrived = keeper.node if keeper is not None else None

    def each(node: RawNode) -> None:
        if on_node is not None:
            on_node(node)
        if arrived is not None:
            arrived(node)

    raws, notes = session.collect(inv, areas_sel, opts, save_dir, on_start, each, not_saved, release=release)
    if inv is None and arrived is not None:
        for node in raws:  # this machine: collected in one go
            arrived(node)
    return raws, notes


def workers_for(given: Optional[int], inv, transport: str, release: bool) -> int:
    """How many worker processes share the SSH collection (1: this process alone)."""
    if inv is None or transport != "ssh" or not release or given == 1:
        return 1
    if given is not None:
        return max(1, min(given, len(inv.hosts)))
    from nccldiag.shards.pool import default_workers

    return default_workers(len(inv.hosts))


def _sharded(inv, areas_sel, opts, save_dir, on_start, on_node, not_saved, keeper, workers):
    """The collection over ``workers`` processes (:mod:`nccldiag.shards`): each node written (the run
    directory's raw outputs, the --save bundle) and, with a ``keeper``, judged in its worker."""
    from nccldiag.bundle import Bundle
    from nccldiag.shards import pool

    not_saved = not_saved if not_saved is not None else {}
    script = runner.script_for(areas_sel, opts.extra_sources, opts.mark)
    notes = session.inventory_notes(inv)
    hosts = inv.hosts
    if save_dir:
        session.check_save(save_dir)
        session.index_bundle(save_dir, [h.name for h in hosts], "ssh", [a.NAME for a in areas_sel])
    if on_start is not None:
        on_start(len(hosts))
    kept = keeper is not None and not keeper.failed
    bundles = ([keeper.raw] if kept and keeper.bundle is None else []) + ([Bundle(save_dir)] if save_dir else [])

    def got(node, judged, unsaved) -> None:
        for path, why in unsaved.items():
            if path == save_dir:
                not_saved[node.host] = why
                notes.append(f"{node.host}: not saved to {save_dir}: {why}")
            elif keeper is not None and not keeper.failed:
                keeper.failed = why
        if on_node is not None:
            on_node(node)
        if keeper is not None:
            keeper.take(judged)

    nodes = pool.collect(hosts, script, opts, workers, areas=areas_sel if keeper is not None else None,
                         options=keeper.options if keeper is not None else None,
                         spec=keeper.spec if keeper is not None else None, bundles=bundles, on_node=got)
    return nodes, notes


def trust_notes(raws: Sequence[RawNode], most: int = 8) -> List[str]:
    """The host keys trusted on first use (--accept-new-host-keys, StrictHostKeyChecking accept-new), one note
    each, shown whatever the verbosity: a key nobody verified is the admin's to check."""
    found = [f"{r.host}: {n}" for r in raws for n in (r.extra.get("notes") or [])
             if isinstance(n, str) and ("trust on first use" in n or n.startswith("trusted "))]
    if len(found) > most:
        found = found[:most] + [f"... and {len(found) - most} more host keys trusted on first use (-v or the "
                                "JSON report names each)"]
    return found
