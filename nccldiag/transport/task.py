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
Ctrl-C (or ``cancel`` being set) starts no further host; the work in
flight sees the same ``cancel`` event and is expected to stop early.
"""
from __future__ import annotations

import concurrent.futures as cf
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
) -> List[R]:
    """``[work(item) for item in items]``, ``fanout`` at a time, in item order.

    ``work`` must not raise for per-host failures (it returns them as
    values); an exception escaping ``work`` is a bug and is re-raised. When
    ``cancel`` is set, items not yet started are left out and the call
    returns what finished (a KeyboardInterrupt sets it and is re-raised).
    """
    if not items:
        return []
    cancel = cancel if cancel is not None else threading.Event()
    results: Dict[int, R] = {}
    pool = cf.ThreadPoolExecutor(max_workers=max(1, min(fanout, len(items))), thread_name_prefix="nccldiag")

    def guarded(item: T):
        return None if cancel.is_set() else (work(item),)

    futures = {pool.submit(guarded, item): i for i, item in enumerate(items)}
    try:
        for fut in cf.as_completed(futures):
            i = futures[fut]
            out = fut.result()
            if out is None:
                continue
            results[i] = out[0]
            if on_result is not None:
                on_result(items[i], results[i])
    except BaseException:
        cancel.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [results[i] for i in range(len(items)) if i in results]
