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

from typing import List, Optional, Sequence, Tuple

from nccldiag.model import registry
from nccldiag.model.errors import UsageError
from nccldiag.probe.launchers.base import Launcher, Tagging

LAUNCHERS: Tuple[str, ...] = (
    "torchrun",
    "mpirun",
    "srun",
    "local",
    "clush",
)

SSH = "ssh"  # isolate's name for torchrun over SSH (its default)
AUTO = "auto"  # probe's default: local without hosts, torchrun with hosts
LOCAL = "local"  # every rank on this machine (a probe run's launcher unless it is given one)


def get(name: str) -> Launcher:
    """The launcher named ``name``: one of :data:`LAUNCHERS`, or the ``LAUNCHER`` of the module at a dotted path.
    KeyError for a short name that is none of them; ImportError (or AttributeError, a module without
    ``LAUNCHER``) for a path."""
    if name == SSH:
        name = "torchrun"
    if not registry.dotted(name) and name not in LAUNCHERS:
        raise KeyError(name)
    return registry.load(name, __name__).LAUNCHER


def chosen(name: str, hosts: Optional[Sequence]) -> str:
    """The launcher a probe runs with (``auto`` resolved), given ``hosts`` (None: none given); a usage error when
    it cannot run with them."""
    if name == AUTO:
        name = LOCAL if hosts is None else "torchrun"
    launcher = get(name)
    if not launcher.here and hosts is None:
        raise UsageError(f"--launcher {name} needs hosts (a hostfile or -w)")
    if launcher.here and hosts is not None and len(hosts) > 1:
        raise UsageError(f"--launcher {name} runs every rank on this machine: give no hostfile, or use torchrun/mpirun")
    return name


def in_allocation() -> List[str]:
    """The launchers that run inside a Slurm allocation: those a command's --partition/--nodes/... go with."""
    return [n for n in LAUNCHERS if get(n).allocation]


def refuse_allocation(name: str, asked: bool) -> None:
    """A usage error when a command asks Slurm for an allocation (``asked``) for a launcher that runs outside one."""
    if asked and not (name in in_allocation() or registry.dotted(name) and get(name).allocation):
        raise UsageError("--partition/--nodes/... ask Slurm for an allocation: use them with --launcher "
                         + " or ".join(in_allocation()))


def tagging(name: Optional[str]) -> Optional[Tagging]:
    """The launcher's :class:`~nccldiag.probe.launchers.base.Tagging` a run directory names (None: none, or
    unknown)."""
    for n in LAUNCHERS:
        t = get(n).tagging
        if t is not None and t.name == name:
            return t
    return None


def probe_choices() -> List[str]:
    """``nccldiag probe --launcher``: ``auto`` (local without hosts, torchrun with hosts), then every launcher."""
    return [AUTO] + list(LAUNCHERS)


def isolate_choices() -> List[str]:
    """``nccldiag isolate --launcher``: ``ssh`` (torchrun over SSH), then every launcher that can start its jobs."""
    return [SSH] + [n for n in LAUNCHERS if get(n).jobs and n != "torchrun"]
