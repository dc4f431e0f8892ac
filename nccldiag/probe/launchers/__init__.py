"""The probe's launchers, one module each: how the ranks of a setting (or an isolate job) are started.

Each module defines ``LAUNCHER``, an object that has what
:class:`~nccldiag.probe.launchers.base.Launcher` names. :data:`LAUNCHERS` is
the registry: the order here is the order of the ``--launcher`` choices of
``nccldiag probe`` and ``nccldiag isolate``. A new launcher is one module
here and one line in :data:`LAUNCHERS`; a site's own launcher is named by its
module's dotted path (``--launcher mysite.launchers.flux``), as ClusterShell
names its workers.
"""
from __future__ import annotations

from typing import List, Tuple

from nccldiag.model import registry
from nccldiag.probe.launchers.base import Launcher

LAUNCHERS: Tuple[str, ...] = (
    "torchrun",
    "mpirun",
    "srun",
    "local",
    "clush",
)

SSH = "ssh"  # isolate's name for torchrun over SSH (its default)


def get(name: str) -> Launcher:
    """The launcher named ``name``: one of :data:`LAUNCHERS`, or the ``LAUNCHER`` of the module at a dotted path.
    KeyError for a short name that is none of them; ImportError (or AttributeError, a module without
    ``LAUNCHER``) for a path."""
    if name == SSH:
        name = "torchrun"
    if not registry.dotted(name) and name not in LAUNCHERS:
        raise KeyError(name)
    return registry.load(name, __name__).LAUNCHER


def probe_choices() -> List[str]:
    """``nccldiag probe --launcher``: ``auto`` (local without hosts, torchrun with hosts), then every launcher."""
    return ["auto"] + list(LAUNCHERS)


def isolate_choices() -> List[str]:
    """``nccldiag isolate --launcher``: ``ssh`` (torchrun over SSH), then every launcher that can start its jobs."""
    return [SSH] + [n for n in LAUNCHERS if get(n).jobs and n != "torchrun"]
