"""What a check keeps of a judged node (pure): its findings, the summary the cluster areas compare, the facts
the diagnoses read, and the rest of its facts as the JSON text of its part of the report."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Mapping, Optional, Sequence

from nccldiag.check import engine
from nccldiag.diagnosis.inputs import NODE_AREAS
from nccldiag.model.findings import Finding, Status, to_jsonable
from nccldiag.model.raw import RawNode


@dataclass
class Judged:
    node: engine.NodeReport  # findings, summary, and the facts of NODE_AREAS only
    facts: str  # every area's facts, as the report's JSON (compact)


class Shared:
    """One copy of each text the judged nodes repeat (a healthy fleet's findings say the same words on every
    node): :meth:`node` makes a node's findings and kept facts point at the copies already held. At most
    ``limit`` distinct texts are remembered; past it, new texts are kept as they are."""

    def __init__(self, limit: int = 200_000) -> None:
        self.texts: dict = {}
        self.limit = limit

    def node(self, nr: engine.NodeReport) -> None:
        for f in nr.findings:
            self._fields(f)
        for v in nr.facts.values():
            self._fields(v)

    def _fields(self, obj: Any) -> None:
        d = getattr(obj, "__dict__", None)
        if d is None or isinstance(obj, type):
            return
        for k, v in d.items():
            d[k] = self._value(v)

    def _value(self, v: Any) -> Any:
        kind = type(v)
        if kind is str:
            got = self.texts.get(v)
            if got is not None:
                return got
            if len(self.texts) < self.limit:
                self.texts[v] = v
            return v
        if kind is list:
            return [self._value(x) for x in v]
        if kind is tuple:
            return tuple(self._value(x) for x in v)
        if kind is dict:
            return {self._value(k): self._value(x) for k, x in v.items()}
        if dataclasses.is_dataclass(v):
            self._fields(v)
        return v


def judge(raw: RawNode, areas: Sequence[ModuleType], options: Optional[Mapping[str, Any]] = None,
          spec: Optional[Any] = None) -> Judged:
    """``raw`` judged (:func:`nccldiag.check.engine.analyze_node`) and made compact. An area whose facts cannot
    be written as JSON (nested past the encoder's stack) keeps none, and the node says so in an error of that
    area: one area's output never costs the node, nor the node its neighbours."""
    nr = engine.analyze_node(raw, areas, options, spec)
    nr.summary = engine.summarize(nr, areas)
    kept = {}
    for name, value in nr.facts.items():
        try:
            kept[name] = json.dumps(to_jsonable(value), default=str)
        except (RecursionError, ValueError, TypeError) as exc:
            nr.facts[name] = None
            kept[name] = "null"
            nr.findings.append(Finding(name, f"{name}.facts", Status.ERROR,
                                       f"could not keep the {name} facts of {raw.host}: {type(exc).__name__}: "
                                       f"{str(exc)[:200]}", host=raw.host))
    text = "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in kept.items()) + "}"
    nr.facts = {k: v for k, v in nr.facts.items() if k in NODE_AREAS}
    return Judged(nr, text)
