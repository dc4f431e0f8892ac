"""The cause catalog's registry: every row of ``knowledge/causes.toml``, in its order, ready to judge.

A row names a cause: its ``id``, ``category``, ``tier`` and ``explained_by``
(who explains whom: :func:`nccldiag.diagnosis.diagnose` applies them once,
after every cause has run). A row with ``rule`` is judged by code: a module
of this package (its short name) or any importable module (a dotted module
path, as ClusterShell names its workers), which has ``ID``, ``TITLE``,
``FIX``, ``CONFIRM`` (``WORKAROUND`` where there is one) and
``diagnose(inputs) -> [Diagnosis]`` (pure; :class:`~nccldiag.diagnosis.inputs.Inputs`
in). A row without is a signature: its pattern and texts are the cause
(:mod:`nccldiag.diagnosis.signature`). A site adds causes of its own
(``[[cause]]`` rows of its spec, :mod:`nccldiag.spec.causes`): signatures, or a
rule module of its own named by its dotted path; they follow the catalog's.
``docs/diagnoses.md`` describes each cause; a test fails until every id is
documented there, and until every module here has its row.
"""
from __future__ import annotations

import functools
from types import ModuleType
from typing import Any, Dict, List, Optional, Sequence, Tuple

from nccldiag import knowledge
from nccldiag.diagnosis import signature
from nccldiag.diagnosis.model import Diagnosis
from nccldiag.model import registry

TABLE = "causes.toml"


class Cause:
    """One cause of the catalog: its row, and what judges it (a rule module, or the row's signature)."""

    def __init__(self, row: Dict[str, Any], rule: Optional[ModuleType] = None) -> None:
        self.row = row
        self.rule = rule
        self.signature = None if rule is not None else signature.Signature(row)

    @property
    def ID(self) -> str:  # noqa: N802 - the name rule modules give it
        return self.row["id"]

    @property
    def TITLE(self) -> str:  # noqa: N802
        return self.rule.TITLE if self.rule is not None else self.signature.TITLE

    @property
    def CATEGORY(self) -> str:  # noqa: N802
        return self.row["category"]

    @property
    def TIER(self) -> int:  # noqa: N802
        return int(self.row.get("tier", 0))

    @property
    def EXPLAINED_BY(self) -> Tuple[str, ...]:  # noqa: N802
        return tuple(self.row.get("explained_by", ()))

    @property
    def CONFIRM(self) -> str:  # noqa: N802
        return getattr(self.rule, "CONFIRM", "") if self.rule is not None else self.signature.CONFIRM

    @property
    def where(self) -> str:
        """The file and line that define the cause (``causes.toml:41``, or a site's ``site.toml:12``)."""
        return self.row["where"]

    @property
    def site(self) -> bool:
        """A cause a site added (its spec's ``[[cause]]`` rows, or ``--causes FILE``)."""
        return bool(self.row.get("site"))

    def diagnose(self, inputs) -> List[Diagnosis]:
        judge = self.rule.diagnose if self.rule is not None else self.signature.diagnose
        return judge(inputs)


def module(name: str) -> ModuleType:
    """The rule module ``name``: a module of this package by its short name, or any module by its dotted path."""
    return registry.load(name, __name__)


def rows() -> List[Dict[str, Any]]:
    """The rows of the catalog's table, in order (each a fresh ``dict``)."""
    return knowledge.rows(TABLE, "cause")


@functools.lru_cache(maxsize=None)
def _builtin() -> Tuple[Cause, ...]:
    return tuple(Cause(r, module(r["rule"]) if r.get("rule") else None) for r in rows())


def all_rules(site: Sequence[Dict[str, Any]] = ()) -> List[Cause]:
    """Every cause of the catalog, in its order, then the site's rows ``site`` (validated by
    :mod:`nccldiag.spec.causes`)."""
    return list(_builtin()) + [Cause(dict(r, site=True), module(r["rule"]) if r.get("rule") else None) for r in site]


RULE_MODULES: Tuple[str, ...] = tuple(r["rule"] for r in rows() if r.get("rule"))
