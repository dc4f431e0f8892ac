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
