"""One node against the site spec: a finding per key, in the area the key belongs to (pure).

A deviation names the expected and the actual value and the spec line it
comes from (``site.toml:14``). It is judged on each node alone: a batch of
nodes that all deviate alike fails on every node (``consistency`` could not
see it). A value the node's outputs do not tell is a warning, never a pass.
"""
from __future__ import annotations

import fnmatch
import math
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

from nccldiag.model.findings import Finding, Status
from nccldiag.spec import fields as F
from nccldiag.spec.model import Expect, Spec

FIX = ("Bring the node to the site spec (replace or reseat the part, update the firmware or package, change the "
       "setting), or correct the spec if this node is what the site wants now.")


def show(f: F.Field, v: Any) -> str:
    if v is None:
        return "none"
    if f.kind == "size":
        return F.show_size(v)
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def matches(f: F.Field, expected: Any, actual: Any) -> bool:
    if actual is None:
        return False
    if f.compare == "pairs":
        return F.pairs(actual) == F.pairs(expected)
    if f.compare == "at_least":
        try:
            return float(actual) >= float(expected)
        except (TypeError, ValueError):
            return False
    if f.kind == "float":
        try:
            return math.isclose(float(actual), float(expected), rel_tol=1e-3)
        except (TypeError, ValueError):
            return False
    if f.kind == "str":
        a, e = str(actual), str(expected)
        return fnmatch.fnmatchcase(a, e) if ("*" in e or "?" in e) else a == e
    return actual == expected


def judge(spec: Spec, facts: Mapping[str, Any], selected: Iterable[str],
          collected: Optional[Callable[[str], bool]] = None) -> List[Finding]:
    """Findings of one node (``facts``: ``{area: facts}``) against ``spec``.

    ``selected``: the areas of this run; a key is judged where its area and the
    area whose facts it reads are both among them. ``collected(area)``: whether any output of that area came
    back (a bundle of pasted outputs lacks most).
    """
    chosen = set(selected)
    out: List[Finding] = []
    for e in spec.expects:
        f = e.field
        if f.area in chosen and f.needs in chosen:  # the key's area, and the one whose facts it reads
            out.append(_one(spec, e, f.area, facts, collected))
    if "ib" in chosen and spec.nic_models and facts.get("ib") is not None:
        out.extend(_unlisted_models(spec, facts))
    return out


def _one(spec: Spec, e: Expect, area: str, facts: Mapping[str, Any], collected) -> Finding:
    f = e.field
    ref = spec.ref(e.line)
    expected = show(f, e.value)
    head = f"{e.key} (spec {ref})"
    evidence = [f"{ref}: {e.key} = {expected}"]
    if facts.get(f.needs) is None or (collected is not None and not collected(f.needs)):
        return Finding(area, f.check, Status.SKIP, f"{head}: not checked, the {f.needs} area's outputs were not "
                       "collected or could not be read", expected=expected, evidence=evidence)
    reading = F.read(f, facts, e.model)
    if reading is None:
        return Finding(area, f.check, Status.WARN,
                       f"{head}: expected {expected}, but the node's outputs do not tell "
                       f"({f.doc}: absent, cut short or unreadable)", actual="unknown", expected=expected,
                       evidence=evidence, fix="Collect the node's outputs again (nccldiag collect) and see why this "
                                              "one is missing.")
    if not reading:
        what = {"nic": "no port of this model", "topology": "nothing to read it from"}.get(f.path[0], "no GPU")
        if f.path[-1] == "rate_gbps":
            what = "no active port of this model"
        return Finding(area, f.check, _status(f), f"{head}: {what} on this node, expected {expected}",
                       actual="none", expected=expected, evidence=evidence, fix=FIX)
    bad = {item: v for item, v in reading.items() if not matches(f, e.value, v)}
    if not bad:
        values = sorted({show(f, v) for v in reading.values()})
        return Finding(area, f.check, Status.OK, f"{e.key} = {', '.join(values)}, as {ref} expects",
                       actual=values[0] if len(values) == 1 else values, expected=expected, evidence=evidence)
    if list(bad) == [""] and f.compare == "pairs":
        actual: Any = show(f, bad[""])
        told = _pairs_told(f, e.value, bad[""])
        evidence.append(f"node: {actual}")
    elif list(bad) == [""]:
        actual = show(f, bad[""])
        told = actual
    else:
        groups: Dict[str, List[str]] = {}
        for item, v in bad.items():
            groups.setdefault(show(f, v), []).append(item)
        told = "; ".join(f"{v} on {_items(items)}" for v, items in groups.items())
        actual = {item: show(f, v) for item, v in bad.items()}
        evidence += [f"{item}: {show(f, v)}" for item, v in list(bad.items())[:8]]
        if len(bad) > 8:
            evidence.append(f"... and {len(bad) - 8} more")
        if len(bad) < len(reading):
            told += f" ({len(reading) - len(bad)} of {len(reading)} as expected)"
    if f.compare == "pairs":
        return Finding(area, f.check, _status(f), f"{head}: {told}", actual=actual, expected=expected,
                       evidence=evidence, fix=FIX)
    verb = "at least " if f.compare == "at_least" else ""
    return Finding(area, f.check, _status(f), f"{head}: {told}, expected {verb}{expected}", actual=actual,
                   expected=expected, evidence=evidence, fix=FIX)


def _pairs_told(f: F.Field, expected: Any, actual: Any, most: int = 8) -> str:
    """The items of a layout that differ: ``GPU3/mlx5_2 SYS, expected PXB`` (an item one side leaves out is
    shown as that key's default: SYS for the GPU-NIC pairs, else 'none')."""
    want, got = F.pairs(expected), F.pairs(actual)
    absent = F.FAR if f.path[-1] == "gpu_nic" else "none"
    diff = [f"{k} {got.get(k, absent)}, expected {want.get(k, absent)}"
            for k in list(want) + [k for k in got if k not in want] if got.get(k) != want.get(k)]
    more = f"; and {len(diff) - most} more" if len(diff) > most else ""
    return "; ".join(diff[:most]) + more + f" ({len(diff)} of {len(set(want) | set(got))} differ)"


def _items(items: List[str], most: int = 6) -> str:
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def _status(f: F.Field) -> Status:
    return Status.WARN if f.status == "warn" else Status.FAIL


def _unlisted_models(spec: Spec, facts: Mapping[str, Any]) -> List[Finding]:
    out = []
    first = min(spec.nic_models.values())
    for model in F.nic_models(facts):
        if model in spec.nic_models:
            continue
        ports = [p.name for p in facts["ib"].ports if (p.hca_type or "unknown") == model]
        out.append(Finding("ib", "ib.spec_ports", Status.FAIL,
                           f"nic.{model} (spec {spec.ref(first)}): {len(ports)} port(s) of HCA model {model}, which "
                           f"the spec does not list (it lists {', '.join(spec.nic_models)})",
                           actual={model: len(ports)}, expected="no port of this model",
                           evidence=[f"{spec.ref(first)}: the spec's [nic.MODEL] tables"] + ports[:8], fix=FIX))
    return out
