"""The orchestrator: bounded, ordered, streaming, and cancellable without waiting for work in flight."""
import threading
import time

import pytest

from nccldiag.transport.task import fan_out


def test_ordered_bounded_and_streamed():
    live, peak, seen = [0], [0], []
    lock = threading.Lock()

    def work(x):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.02 * (x % 3))
        with lock:
            live[0] -= 1
        return x * x

    out = fan_out(list(range(20)), work, fanout=4, on_result=lambda item, r: seen.append(item))
    assert out == [x * x for x in range(20)] and peak[0] == 4 and sorted(seen) == list(range(20))


def test_a_bug_in_work_is_raised():
    with pytest.raises(ZeroDivisionError):
        fan_out([1, 0, 2], lambda x: 1 / x, fanout=2)


def test_cancel_starts_nothing_more_and_returns_without_waiting():
    cancel = threading.Event()
    both_in_flight = threading.Barrier(2, timeout=10)
    started = []

    def work(x):
        started.append(x)
        both_in_flight.wait()
        if x == 0:
            cancel.set()
            return "first"
        time.sleep(30)  # still in flight when the call returns
        return "late"

    t0 = time.monotonic()
    out = fan_out(list(range(10)), work, fanout=2, cancel=cancel)
    assert time.monotonic() - t0 < 5
    assert out == ["first"] and sorted(started) == [0, 1]
