"""What a node sent back, before any parsing."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional


@dataclass
class RawNode:
    """Everything gathered from one node, before parsing."""

    host: str
    sections: Dict[str, str] = field(default_factory=dict)
    rcs: Dict[str, int] = field(default_factory=dict)
    error: Optional[dict] = None  # transport failure: {"kind": ..., "message": ...}
    truncated: bool = False  # output ended inside a section
    elapsed: float = 0.0
    extra: Dict[str, object] = field(default_factory=dict)


@dataclass
class ReleasedNode(RawNode):
    """What a run keeps of a node once it was judged and written out: how it was reached (its error, return
    codes, timings, transport notes), never its outputs. A live check holds one of these per node instead
    of the node's raw outputs, so its memory does not grow with what each node sends. Nothing judges one."""


def released(node: RawNode) -> ReleasedNode:
    """``node`` without its outputs (:class:`ReleasedNode`)."""
    return ReleasedNode(host=node.host, rcs=dict(node.rcs), error=node.error, truncated=node.truncated,
                        elapsed=node.elapsed, extra=node.extra)
