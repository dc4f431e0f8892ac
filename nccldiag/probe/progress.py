"""Whether a run not done at its deadline was hung, stalled or still moving (pure).

The worker writes a ``progress`` record with the calls done so far (and their busbw) while a collective runs;
a result record shows a call completed too. From when such signs arrived and when the run was stopped,
:func:`unfinished_kind` tells a run that never moved data (``hang``) from one that moved and then stopped well
before its end (``stalled``) and one still moving when the deadline cut it (``slow``). ``nccldiag isolate``
classes its small jobs with it, ``nccldiag probe`` its settings.
"""
from __future__ import annotations

from typing import Mapping, Sequence

HANG = "hang"
STALLED = "stalled"
SLOW = "slow"
# Not done at the deadline before any rank had entered the collective, with no rank failing before it: its ranks were
# still starting (importing torch, joining the rendezvous). Not a hang of the network path, and no pass either.
NOT_STARTED = "not-started"

# A job not done at its deadline whose last sign of progress came this long before its end (and well after
# the gaps between the earlier ones) had stopped moving: at least STALL_MIN seconds, STALL_SHARE of the
# job's timeout, and STALL_GAPS times the longest gap it showed while moving.
STALL_MIN = 20.0
STALL_SHARE = 0.2
STALL_GAPS = 3.0


def shows_progress(rec: Mapping[str, object]) -> bool:
    """Whether a rank's record shows data moved: a collective call that completed (a check or sweep result,
    or a progress record with calls done)."""
    if not rec.get("collective"):
        return False
    if rec.get("type") == "result":
        return rec.get("status") in ("ok", "wrong")
    done = rec.get("done")
    return rec.get("type") == "progress" and isinstance(done, int) and not isinstance(done, bool) and done > 0


def entered_collective(rec: Mapping[str, object]) -> bool:
    """Whether a rank's record says it had entered a collective: the worker writes a ``progress`` record naming
    the collective just before its first call (and every record of a collective after it). A rank still
    importing its libraries, joining the rendezvous or initialising its process group has written none."""
    return bool(rec.get("collective")) and rec.get("type") in ("progress", "result")


def shows_failure(rec: Mapping[str, object]) -> bool:
    """Whether a rank's record says something failed: an error record, or a result whose status is error."""
    kind = rec.get("type")
    return kind == "error" or (kind == "result" and rec.get("status") == "error")


def never_entered(records: Sequence[Mapping[str, object]]) -> bool:
    """Whether no rank's record says it had entered a collective (:func:`entered_collective`)."""
    return not any(entered_collective(r) for r in records)


# A run whose ranks had all entered the collective less than this share of its timeout before the deadline stopped
# it, no data having moved, was cut before its first call could end: a loaded machine stretched the start (importing
# torch, joining the rendezvous) into the deadline. Not a hang: a hang is a call that made no progress for longer.
ENTERED_LATE_SHARE = 0.2


def entered_late(entered: Mapping[int, float], world: "int | None", end: float, timeout: float) -> "float | None":
    """How long before ``end`` (the stop, seconds after the launch) the last of the ranks entered the collective,
    when that is less than :data:`ENTERED_LATE_SHARE` of ``timeout`` (pure); None when it is longer, or when the
    arrivals are not known. ``entered``: each rank's first record saying it had entered a collective (its arrival,
    seconds after the launch); ``world``: the ranks launched. A run in which a rank never entered is not judged
    here: its peers waited in the collective for it (a rank stuck between its init and its first call, a GPU's
    allocation that hung), which the hang classes tell."""
    if not entered or (world is not None and len(entered) < world):
        return None
    left = max(0.0, end - max(entered.values()))
    return left if left < ENTERED_LATE_SHARE * timeout else None


# How far a rank that never entered the collective got, from its last record of the start, furthest first.
_STAGES = (("ready", "initialised, not yet in the collective"),
           ("init", "initialising the process group (joining its peers)"),
           ("start", "started, before process-group initialisation"))


def starting_stage(records: Sequence[Mapping[str, object]], world: "int | None" = None) -> str:
    """Where the ranks of a run that never entered a collective were (pure): each rank's furthest record of the
    start (``start``, the ``init`` and ``ready`` progress records), and the ranks of ``world`` that wrote none (the
    launcher still starting Python and importing torch). E.g. ``ranks 0, 1 initialising the process group (joining
    its peers); rank 2 not heard from (starting Python, importing torch)``."""
    reached: dict = {}
    for rec in records:
        rank = rec.get("rank")
        if not isinstance(rank, int) or isinstance(rank, bool):
            continue
        key = rec.get("phase") if rec.get("type") == "progress" else rec.get("type")
        for i, (stage, _) in enumerate(_STAGES):
            if key == stage:
                reached[rank] = min(reached.get(rank, len(_STAGES)), i)
    groups = [(words, sorted(r for r, i in reached.items() if i == n)) for n, (_, words) in enumerate(_STAGES)]
    silent = sorted(set(range(world)) - set(reached)) if world else []
    groups.append(("not heard from (starting Python, importing torch)", silent))
    parts = [f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))} {words}" for words, rs in groups if rs]
    return "; ".join(parts) or "no rank heard from (starting Python, importing torch)"


def failed_before(failures: Sequence[float], stopped: "float | None") -> bool:
    """Whether any rank reported a failure before the deadline stopped the run (``stopped``: seconds after the
    launch, None where no deadline stopped it). A failure reported at or after the stop is the stop's doing: a
    rank that lost its peer when the peer's processes were killed."""
    if stopped is None:
        return bool(failures)
    return any(t < stopped for t in failures)


def unfinished_kind(progress: Sequence[float], end: float, timeout: float) -> str:
    """A job not done at its deadline (pure): ``hang`` when no data moved, ``slow`` when it still moved near
    the end, ``stalled`` when it moved and then stopped well before the end.

    ``progress``: when each sign of progress arrived, in seconds after the launch; ``end``: when the job was
    stopped. The machine's load stretches the start (before any progress) and the gaps alike, so the class
    rests on whether data moved, and on the last gap against the others, never on the deadline alone.
    """
    if not progress:
        return HANG
    seen = sorted(progress)
    gaps = [b - a for a, b in zip(seen, seen[1:])]
    quiet = end - seen[-1]
    if quiet > max(STALL_MIN, STALL_SHARE * timeout, STALL_GAPS * max(gaps, default=0.0)):
        return STALLED
    return SLOW


def calls_done(records: Sequence[Mapping[str, object]]) -> int:
    """The collective calls the ranks completed, as their records count them (pure): per rank, for each
    collective, phase and size, the largest ``done`` of its progress records, or one call for a completed
    check result (a sweep result counts its ``warmup`` + ``iters`` when it gives them); the most of any rank."""
    per: dict = {}
    for rec in records:
        if not shows_progress(rec) or not isinstance(rec.get("rank"), int):
            continue
        key = (rec.get("collective"), rec.get("phase"), rec.get("size"))
        if rec.get("type") == "progress":
            n = int(rec["done"])  # type: ignore[call-overload]
        else:
            n = 1
            if rec.get("phase") == "sweep":
                n = sum(int(v) for v in (rec.get("warmup"), rec.get("iters"))
                        if isinstance(v, int) and not isinstance(v, bool)) or 1
        mine = per.setdefault(rec["rank"], {})
        mine[key] = max(mine.get(key, 0), n)
    return max((sum(d.values()) for d in per.values()), default=0)
