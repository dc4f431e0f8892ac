"""What a Slurm allocation grants each node, read from the environment salloc/sbatch give (pure).

A step inside an allocation may start on a node at most as many tasks as the
allocation's CPUs there allow (``SLURM_JOB_CPUS_PER_NODE`` divided by
``SLURM_CPUS_PER_TASK``); more, and srun refuses the step ("More processors
requested than permitted"). A plain ``salloc -N 2`` grants one CPU per node
where Slurm allocates single CPUs (``SelectTypeParameters=CR_CPU``). Slurm
writes per-node counts compressed, in the order of the allocation's node
list: ``4(x2),8`` is 4, 4 and 8.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence

from nccldiag import rx

_COUNT = rx.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def expand_counts(text: str) -> List[int]:
    """``"4(x2),8"`` -> ``[4, 4, 8]``; ValueError naming the part that is not a count."""
    out: List[int] = []
    for part in (text or "").split(","):
        m = _COUNT.match(part.strip())
        if not m:
            raise ValueError(f"not a Slurm per-node count: {part.strip()!r} in {text!r}")
        out.extend([int(m.group(1))] * int(m.group(2) or 1))
    return out


def gpu_count(text: str) -> Optional[int]:
    """GPUs per node from ``SLURM_GPUS_PER_NODE`` (``4``, ``a100:4``, ``a100:2,v100:2``); None when unreadable."""
    total = 0
    for part in (text or "").split(","):
        number = part.strip().rsplit(":", 1)[-1]
        if not number.isdigit():
            return None
        total += int(number)
    return total or None


@dataclass
class Grant:
    """Tasks a step may start per node in this allocation, and the variables that say so."""

    job: str
    tasks: Dict[str, int] = field(default_factory=dict)  # node -> most tasks a step may start there
    asked: Optional[int] = None  # SLURM_NTASKS_PER_NODE: ranks per node the allocation was asked for
    gpus: Optional[int] = None  # SLURM_GPUS_PER_NODE
    source: str = ""  # the variables read, as ``NAME=value`` words

    def most(self, nodes: Sequence[str]) -> Optional[int]:
        """The most tasks per node a step on ``nodes`` may start (every node, when one is not listed)."""
        known = [self.tasks[n] for n in nodes if n in self.tasks]
        if len(known) < len(nodes):
            known = list(self.tasks.values())
        return min(known) if known else None


def read(env: Mapping[str, str], job: str) -> Optional[Grant]:
    """The grant of allocation ``job`` when ``env`` is that allocation's (``SLURM_JOB_ID``); None otherwise,
    or when the per-node CPUs are absent or unreadable (then Slurm alone decides)."""
    if (env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")) != job:
        return None
    cpus_text = env.get("SLURM_JOB_CPUS_PER_NODE", "")
    try:
        cpus = expand_counts(cpus_text)
    except ValueError:
        return None
    per_task = env.get("SLURM_CPUS_PER_TASK", "1")
    per_task_n = int(per_task) if per_task.isdigit() and int(per_task) > 0 else 1
    source = [f"SLURM_JOB_CPUS_PER_NODE={cpus_text}"] + ([f"SLURM_CPUS_PER_TASK={per_task}"] if per_task_n > 1 else [])
    nodes = _node_names(env.get("SLURM_JOB_NODELIST", ""))
    if len(nodes) != len(cpus):
        nodes = [f"#{i}" for i in range(len(cpus))]  # unmatched: each node's count still bounds the step
    asked_text = env.get("SLURM_NTASKS_PER_NODE", "")
    asked = int(asked_text) if asked_text.isdigit() and int(asked_text) > 0 else None
    if asked:
        source.append(f"SLURM_NTASKS_PER_NODE={asked_text}")
    gpus = gpu_count(env["SLURM_GPUS_PER_NODE"]) if env.get("SLURM_GPUS_PER_NODE") else None
    if gpus:
        source.append(f"SLURM_GPUS_PER_NODE={env['SLURM_GPUS_PER_NODE']}")
    return Grant(job, {n: c // per_task_n for n, c in zip(nodes, cpus)}, asked, gpus, " ".join(source))


def _node_names(nodelist: str) -> List[str]:
    if not nodelist:
        return []
    try:
        from ClusterShell.NodeSet import NodeSet

        return list(NodeSet(nodelist))
    except Exception:  # ClusterShell's parse errors: the counts are then not bound to names
        return []


@dataclass
class Ranks:
    """Ranks per node for a probe in an allocation: how many, and a line saying why when the grant chose it."""

    count: int
    note: str = ""


def ranks_per_node(grant: Grant, nodes: Sequence[str], wanted: int, explicit: bool) -> Ranks:
    """Ranks per node that fit ``grant`` on ``nodes``; ValueError, saying what to ask salloc for, when the
    count given explicitly (``--nproc-per-node``) does not fit.

    Without an explicit count, ``wanted`` (the probe's default: the GPUs, or 2 for gloo) gives way to the
    allocation's ``--ntasks-per-node`` and ``--gpus-per-node`` when it was asked for them, and is cut to the
    tasks the allocation's CPUs allow.
    """
    most = grant.most(nodes)
    if explicit:
        if most is not None and wanted > most:
            raise ValueError(
                f"--nproc-per-node {wanted}: allocation {grant.job} grants {most} task(s) per node "
                f"({grant.source}), and srun would refuse the step; ask salloc for the ranks: "
                f"salloc -N {len(nodes)} --ntasks-per-node={wanted} (or --exclusive for whole nodes), "
                f"or give --nproc-per-node {most} or less")
        return Ranks(wanted)
    chosen, why = wanted, ""
    if grant.asked:
        chosen, why = grant.asked, f"the allocation's --ntasks-per-node ({grant.source})"
    elif grant.gpus and grant.gpus < wanted:
        chosen, why = grant.gpus, f"the allocation's GPUs per node ({grant.source})"
    if most is not None and chosen > most:
        chosen, why = max(1, most), f"what allocation {grant.job} grants ({grant.source})"
    if chosen == wanted:
        return Ranks(wanted)
    more = "" if chosen >= wanted else (f"; for {wanted}, ask salloc for them (salloc -N {len(nodes)} "
                                        f"--ntasks-per-node={wanted}, or --exclusive)")
    return Ranks(chosen, f"{chosen} rank(s) per node: {why}{more}")
