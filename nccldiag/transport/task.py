"""The one orchestrator: run one piece of work per host, ``fanout`` at a time.

Everything that touches many nodes goes through :func:`fan_out`: collection,
probe connect, staging, reaping, log fetching and clean-up. At most
``fanout`` hosts are in flight at once (the sliding window of clush and
pdsh), so a large cluster never has hundreds of handshakes pending on one
admin host. Each host's deadline is carried by its own work (every remote
call has a timeout that starts when that host's call starts), so a host
that waits for a free slot never loses time to the hosts before it.

Results come back in input order; ``on_result`` sees each one as it
arrives, so a caller can write it out before the slowest host answers.
With ``keep``, what is kept of each result once ``on_result`` has seen it is
``keep(result)``, and at most ``fanout`` finished results wait for the
caller at a time (a worker with one more waits before starting its next
host): a caller that consumes each result as it arrives (judges it, writes it
out) then holds a bounded number of whole results however many hosts there
are, even when it is slower than the hosts.
Ctrl-C (or ``cancel`` being set) starts no further host and returns at once:
the workers are daemon threads, so work still in flight (each piece bounded
by its own timeouts) never holds the process at exit.
"""
from __future__ import annotations

import queue
import threading
from typing import Callable, Dict, List, Optional, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def fan_out(
    items: Sequence[T],
    work: Callable[[T], R],
    fanout: int = 64,
    on_result: Optional[Callable[[T, R], None]] = None,
    cancel: Optional[threading.Event] = None,
    keep: Optional[Callable[[R], R]] = None,
) -> List[R]:
    """``[work(item) for item in items]``, ``fanout`` at a time, in item order.

    ``work`` must not raise for per-host failures (it returns them as values);
    an exception escaping ``work`` is a bug and is re-raised. When ``cancel``
    is set, items not yet started are left out and the call returns what
    finished; a KeyboardInterrupt sets it and is re-raised. ``keep``: what to keep of each result once
    ``on_result`` saw it (returned in its place), with at most ``fanout`` results waiting for the caller.
    """
    if not items:
        return []
    cancel = cancel if cancel is not None else threading.Event()
    todo: "queue.SimpleQueue[int]" = queue.SimpleQueue()
    for i in range(len(items)):
        todo.put(i)
    width = max(1, min(fanout, len(items)))
    # each result goes over in a box of its own ([index, ok, value]) that the caller empties as it takes it:
    # a worker still holding the box holds nothing of the result. With keep, finished results wait in a
    # bounded queue: a worker whose result finds it full waits (and starts no other host) until the caller
    # has taken one, or the run is cancelled
    done: "queue.Queue[list]" = queue.Queue(maxsize=width if keep is not None else 0)

    def hand_over(box: list) -> None:
        while True:
            try:
                done.put(box, timeout=0.2)
                return
            except queue.Full:
                if cancel.is_set():
                    return

    def worker() -> None:
        while not cancel.is_set():
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            try:
                box = [i, True, work(items[i])]
            except BaseException as exc:  # handed to the caller's thread
                box = [i, False, exc]
            hand_over(box)
            del box

    threads = [threading.Thread(target=worker, name=f"nccldiag-{k}", daemon=True)
               for k in range(width)]
    for t in threads:
        t.start()
    results: Dict[int, R] = {}
    try:
        while len(results) < len(items):
            try:
                box = done.get(timeout=0.2)
            except queue.Empty:
                if cancel.is_set():
                    break  # cancelled: what is in flight is not waited for
                if not any(t.is_alive() for t in threads):
                    # every worker ended: what one handed over just before it ended is still queued
                    try:
                        box = done.get_nowait()
                    except queue.Empty:
                        break
                else:
                    continue
            i, ok, value = box
            box.clear()
            if not ok:
                raise value  # type: ignore[misc]
            results[i] = value  # type: ignore[assignment]
            del value
            if on_result is not None:
                on_result(items[i], results[i])
            if keep is not None:
                results[i] = keep(results[i])
    except BaseException:
        cancel.set()
        raise
    return [results[i] for i in range(len(items)) if i in results]
