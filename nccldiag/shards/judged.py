"""What a check keeps of a judged node (pure): its findings, the summary the cluster areas compare, the facts
the diagnoses read, and the rest of its facts as the JSON text of its part of the report."""
from __future__ import annotations

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


def judge(raw: RawNode, areas: Sequence[ModuleType], options: Optional[Mapping[str, Any]] = None,
          spec: Optional[Any] = None) -> Judged:
    """``raw`` judged (:func:`nccldiag.check.engine.analyze_node`) and made compact."""
    nr = engine.analyze_node(raw, areas, options, spec)
    nr.summary = engine.summarize(nr, areas)
    text = json.dumps(to_jsonable(nr.facts), default=str)
    nr.facts = {k: v for k, v in nr.facts.items() if k in NODE_AREAS}
    return Judged(nr, text)
