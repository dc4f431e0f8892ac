"""One worker of a sharded collection: :func:`main`, in a process started by :mod:`nccldiag.shards.pool`
(never by hand).

Reads its :class:`~nccldiag.shards.pool.Job` on standard input, collects from its hosts over SSH (its share of
``--fanout``, the same bounds as one process), writes each node's outputs where the run keeps them, judges the
node in a check, and sends back one frame per node as it is done: the node without its outputs, what the
check keeps of it, and where it could not be written. The end of its standard input (the parent stopped it,
or is gone) ends it at once.
"""
from __future__ import annotations

import os
import signal
import sys
import threading


def _orphaned(stdin) -> None:
    try:
        while stdin.read(65536):
            pass
    except OSError:
        pass
    os._exit(0)


def main() -> int:
    """Runs the job; the process ends through ``os._exit`` (no interpreter shutdown beside the thread that
    waits on its input, and a failure's traceback on stderr for the parent to quote)."""
    try:
        code = _run()
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stderr.flush()
    os._exit(code)


def _run() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it (the terminal's Ctrl-C is the parent's)
    from nccldiag.collect import runner
    from nccldiag.shards.pool import receive

    stdin = os.fdopen(0, "rb", buffering=0)  # unbuffered: the thread that waits on it holds no lock
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, never into the frames
    job = receive(stdin)
    if job is None:
        return 2
    threading.Thread(target=_orphaned, args=(stdin,), daemon=True).start()
    areas = None
    if job.areas is not None:
        from nccldiag.areas import all_areas

        by_name = {a.NAME: a for a in all_areas()}
        areas = [by_name[n] for n in job.areas]
    index = {h.name: i for h, i in zip(job.hosts, job.index)}

    def on_node(node) -> None:
        not_saved = {}
        for b in job.bundles:
            try:
                b.node(node)
            except OSError as exc:
                not_saved[b.path] = exc.strerror or str(exc)
        out.write(node_frame(node, index[node.host], areas, job, not_saved))
        out.flush()

    runner.collect_hosts(job.hosts, job.script, job.opts, on_node, release=True, plan=job.plan)
    out.close()
    return 0


def node_frame(node, i: int, areas, job, not_saved) -> bytes:
    """The frame of one node: it, judged in a check, made compact. A node whose records cannot be judged or
    pickled is sent as a node of its own error (:func:`nccldiag.shards.pool.unsent`, with the cause): one node's
    output never ends its worker, nor costs the other hosts of it."""
    from nccldiag.model.raw import released
    from nccldiag.shards import judged as judging
    from nccldiag.shards.pool import frame_of, unsent

    try:
        judged = judging.judge(node, areas, job.options, job.spec) if areas is not None else None
        return frame_of((i, released(node), judged, not_saved))
    except Exception as exc:
        bad = unsent(node.host, f"{type(exc).__name__}: {str(exc)[:200]}")
        judged = judging.judge(bad, areas, job.options, job.spec) if areas is not None else None
        return frame_of((i, released(bad), judged, not_saved))


if __name__ == "__main__":
    main()
