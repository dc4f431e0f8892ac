"""Bounded fan-out: run one task per host on a pool of threads.

At most ``fanout`` hosts are in flight at once (clush and pdsh use the same
sliding window), so a large cluster never has hundreds of handshakes pending
on one admin host. Results are handed to ``on_result`` as they arrive, so a
caller can write them out before the slowest host answers.
"""
from __future__ import annotations

import concurrent.futures as cf
from typing import Callable, Dict, List, Optional, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def fan_out(
    items: Sequence[T],
    task: Callable[[T], R],
    fanout: int = 64,
    on_result: Optional[Callable[[T, R], None]] = None,
) -> List[R]:
    """``[task(item) for item in items]`` run ``fanout`` at a time, in item order.

    ``task`` must not raise for per-host failures (it returns them as values);
    an exception escaping ``task`` is a bug and is re-raised.
    """
    if not items:
        return []
    results: Dict[int, R] = {}
    workers = max(1, min(fanout, len(items)))
    with cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nccldiag") as pool:
        futures = {pool.submit(task, item): i for i, item in enumerate(items)}
        for fut in cf.as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            if on_result is not None:
                on_result(items[i], results[i])
    return [results[i] for i in range(len(items))]
