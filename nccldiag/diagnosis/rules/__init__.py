"""The diagnosis rules, one module each, in the order reports list them at equal severity.

A rule module has ``ID``, ``TITLE`` and ``diagnose(inputs) -> [Diagnosis]``
(pure; :class:`~nccldiag.diagnosis.inputs.Inputs` in). ``docs/diagnoses.md``
describes each; a test fails until every ``ID`` is documented there.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import List

RULE_MODULES = (
    "p2p_broken",
    "no_p2p",
    "ib_sockets",
    "gdr",
    "interface",
    "shm",
    "memlock",
    "versions",
    "hang",
    "bandwidth",
)


def all_rules() -> List[ModuleType]:
    return [importlib.import_module(f"nccldiag.diagnosis.rules.{m}") for m in RULE_MODULES]
