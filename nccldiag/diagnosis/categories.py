"""The categories a diagnosis names: what kind of cause it is (one word per cause, as failure reports use them).

Every diagnosis carries one. ``unexplained`` is the verdict on a run that
failed for a reason no cause of the catalog recognised: it cites the first
failing evidence and the command that would tell more. The vocabulary is a
table of :mod:`nccldiag.knowledge` (``categories.toml``), the one the real
cases use (``../shared/fixtures/cases/README.md``).
"""
from __future__ import annotations

from typing import Dict

from nccldiag import knowledge, rx

CATEGORIES: Dict[str, str] = {r["name"]: r["what"] for r in knowledge.rows("categories.toml", "category")}

OTHER = rx.compile(r"^other:[a-z0-9][a-z0-9-]*$")  # a cause outside the list, named by its slug


def known(category: str) -> bool:
    """Whether ``category`` is of the vocabulary, or ``other:<slug>``."""
    return category in CATEGORIES or bool(OTHER.match(category))


def check(category: str) -> str:
    """``category`` if it is known (or ``other:<slug>``), else ValueError (a rule's typo must not reach a report)."""
    if not known(category):
        raise ValueError(f"unknown diagnosis category {category!r}")
    return category
