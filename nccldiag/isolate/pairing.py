"""Who runs with whom in each isolation round (pure).

- :func:`circle_rounds`: disjoint pairs by the circle (round-robin) method.
  Round ``r`` of the schedule pairs every node with a partner it has not met
  in rounds before, so three rounds give each node three distinct partners
  (two for the node that sits out one round when ``N`` is odd).
- :func:`confirmation_pairs`: each suspect against a node already proven
  good, a different one per suspect, one that was not its partner before.
- :func:`halves`: the split of a group for bisection.

Node order is shuffled under a recorded seed first, as the cluster health
scanners do, so that pairs do not follow the hostfile's (often rack-aligned)
order.
"""
from __future__ import annotations

import random
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

Pair = Tuple[str, str]


def shuffled(nodes: Sequence[str], seed: Optional[int]) -> List[str]:
    """``nodes`` in the order the pairing uses: shuffled under ``seed``, or as given when ``seed`` is None."""
    out = list(nodes)
    if seed is not None:
        random.Random(seed).shuffle(out)
    return out


def circle_rounds(nodes: Sequence[str], rounds: int = 3) -> List[List[Pair]]:
    """Up to ``rounds`` rounds of disjoint pairs by the circle method.

    The first node stays fixed and the others rotate one place per round;
    for an odd count a bye slot is added, and the node drawn against it sits
    the round out. ``N`` nodes allow at most ``N-1`` rounds (``N`` when odd)
    before a pair repeats, so fewer are returned for small ``N`` (one for
    ``N = 2``, three for ``N = 3``).
    """
    names = list(nodes)
    if len(set(names)) != len(names):
        raise ValueError("circle_rounds: node names repeat")
    if len(names) < 2:
        return []
    slots: List[Optional[str]] = list(names) + ([None] if len(names) % 2 else [])
    n = len(slots)
    out: List[List[Pair]] = []
    for _ in range(min(rounds, n - 1)):
        pairs = []
        for i in range(n // 2):
            a, b = slots[i], slots[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        out.append(pairs)
        slots = [slots[0], slots[-1]] + slots[1:-1]
    return out


def partners(schedule: Iterable[Iterable[Pair]]) -> Dict[str, Set[str]]:
    """Node -> the partners it meets in ``schedule``."""
    out: Dict[str, Set[str]] = {}
    for rnd in schedule:
        for a, b in rnd:
            out.setdefault(a, set()).add(b)
            out.setdefault(b, set()).add(a)
    return out


def confirmation_pairs(
    suspects: Sequence[str], good: Sequence[str], met: Optional[Dict[str, Set[str]]] = None
) -> Tuple[List[List[Pair]], List[str]]:
    """Pair each suspect with a proven-good node it has not met; ``(rounds, left without a partner)``.

    Within a round every node is in at most one pair. A suspect gets a good
    partner it did not meet before where one is free; when there are more
    suspects than good nodes the rest go to a second round. Suspects for
    whom no good node exists at all are returned apart.
    """
    met = met or {}
    good = [g for g in good if g not in set(suspects)]
    if not good:
        return [], list(suspects)
    todo = list(suspects)
    rounds: List[List[Pair]] = []
    while todo:
        free = list(good)
        pairs: List[Pair] = []
        rest: List[str] = []
        for s in todo:
            seen = met.get(s, set())
            fresh = [g for g in free if g not in seen]
            pick = fresh[0] if fresh else (free[0] if free else None)
            if pick is None:
                rest.append(s)
                continue
            free.remove(pick)
            pairs.append((s, pick))
        rounds.append(pairs)
        todo = rest
    return rounds, []


def halves(group: Sequence[str]) -> Tuple[List[str], List[str]]:
    """The two halves bisection runs next (the first the larger one for odd sizes)."""
    mid = (len(group) + 1) // 2
    return list(group[:mid]), list(group[mid:])
