"""Consistency across nodes: the node that differs from the majority.

A cluster area (``KIND = "cluster"``): it collects nothing on the nodes and
judges all of them together, after every node area. Each area may offer ``summarize(facts) -> {key: value}`` (driver version,
GPU count, kernel, IB firmware...). For every key, the value most nodes have
is the expected one; a node with another value gets a finding that names the
majority value and how many nodes have it.
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, List, Mapping, Optional

from nccldiag.model.findings import Finding, ok, warn

NAME = AREA = "consistency"
TITLE = "Consistency across nodes"
KIND = "cluster"
SOURCES = ()


def judge_cluster(summaries: Mapping[str, Mapping[str, Optional[str]]]) -> Dict[str, List[Finding]]:
    """``{host: findings}`` from ``{host: {"area.key": value}}``.

    Keys a node did not report (None: the tool or the hardware is absent
    there) are not held against it here; the areas report those themselves.
    """
    hosts = list(summaries)
    out: Dict[str, List[Finding]] = {h: [] for h in hosts}
    if len(hosts) < 2:
        return out
    keys: List[str] = []
    for h in hosts:
        keys.extend(k for k in summaries[h] if k not in keys)
    odd: Dict[str, List[str]] = {h: [] for h in hosts}
    for key in keys:
        values = {h: summaries[h].get(key) for h in hosts if summaries[h].get(key) not in (None, "")}
        if len(values) < 2:
            continue
        counts = Counter(str(v) for v in values.values())
        if len(counts) == 1:
            continue
        (majority, n), *rest = counts.most_common()
        tie = rest and rest[0][1] == n
        for h, v in values.items():
            if str(v) != majority or tie:
                if tie:
                    spread = ", ".join(f"{val} on {c}" for val, c in counts.most_common())
                    msg = f"{key} = {v}; nodes disagree with no majority ({spread})"
                else:
                    msg = f"{key} = {v}, expected {majority} (the value on {n} of {len(values)} nodes)"
                out[h].append(
                    warn(
                        AREA,
                        f"consistency.{key}",
                        msg,
                        actual=v,
                        expected=None if tie else majority,
                        fix="Bring this node to the same version or hardware configuration as the others; "
                        "mixed NCCL/driver versions or link rates make collectives fail or run at the slowest node's speed.",
                    )
                )
                odd[h].append(key)
    for h in hosts:
        if not odd[h]:
            out[h].append(ok(AREA, "consistency.all", f"matches the majority on {len(keys)} compared values"))
    return out
