"""Signatures: causes that are data, one row of the catalog each, judged by one evaluator (pure)."""
from __future__ import annotations

from typing import Any, Dict, List


class Signature:
    def __init__(self, row: Dict[str, Any]) -> None:
        raise NotImplementedError(row["id"])

    def diagnose(self, inp) -> List[Any]:
        return []
