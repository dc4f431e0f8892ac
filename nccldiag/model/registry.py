"""Registries that also take a dotted module path, as ClusterShell takes its workers (pure but the import).

A registry of nccldiag (rule modules, launchers, report formats) names its
own modules by a short name; a site names one of its own by the module's
dotted path (``mysite.launchers.flux``), importable from ``sys.path``, and
no file of nccldiag changes.
"""
from __future__ import annotations

import importlib
from types import ModuleType


def dotted(name: str) -> bool:
    """Whether ``name`` is a dotted module path rather than a short name of a registry."""
    return "." in name and all(part.isidentifier() for part in name.split("."))


def load(name: str, package: str) -> ModuleType:
    """The module ``name``: ``package.name`` for a short name, the module itself for a dotted path. A module that
    cannot be imported raises ImportError naming it."""
    path = name if dotted(name) else f"{package}.{name}"
    try:
        return importlib.import_module(path)
    except ImportError as exc:
        raise ImportError(f"cannot import {path}: {exc}") from exc
