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
from nccldiag.model.findings import to_jsonable
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
    """``raw`` judged (:func:`nccldiag.check.engine.analyze_node`) and made compact."""
    nr = engine.analyze_node(raw, areas, options, spec)
    nr.summary = engine.summarize(nr, areas)
    text = json.dumps(to_jsonable(nr.facts), default=str)
    nr.facts = {k: v for k, v in nr.facts.items() if k in NODE_AREAS}
    return Judged(nr, text)
