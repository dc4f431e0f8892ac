"""Every Slurm command nccldiag runs, as an argv list (pure; never a shell string)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence


@dataclass
class AllocRequest:
    """What to ask Slurm for (``salloc``'s options of the same names)."""

    partition: Optional[str] = None
    nodelist: Optional[str] = None
    reservation: Optional[str] = None
    nodes: Optional[int] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    time: Optional[str] = None
    wait: float = 60.0  # seconds to wait for the allocation to be granted

    @property
    def asked(self) -> bool:
        return any(v is not None for v in (self.partition, self.nodelist, self.reservation, self.nodes,
                                            self.account, self.qos, self.time))

    def options(self) -> List[str]:
        out: List[str] = []
        for flag, value in (("--partition", self.partition), ("--nodelist", self.nodelist),
                            ("--reservation", self.reservation), ("--account", self.account),
                            ("--qos", self.qos), ("--time", self.time)):
            if value is not None:
                out.append(f"{flag}={value}")
        if self.nodes is not None:
            out.append(f"--nodes={int(self.nodes)}")
        return out


def minutes(seconds: float) -> int:
    """Slurm's time limits are whole minutes: at least one, rounded up."""
    return max(1, int(math.ceil(seconds / 60.0)))


def show_nodes(names: Optional[str] = None) -> List[str]:
    return ["scontrol", "show", "node", "--oneliner"] + ([names] if names else [])


def show_job(job: str) -> List[str]:
    return ["scontrol", "show", "job", "--oneliner", job]


def drain(node: str, reason: str) -> List[str]:
    return ["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"]


def resume(node: str) -> List[str]:
    return ["scontrol", "update", f"nodename={node}", "state=resume"]


def salloc(req: AllocRequest, name: str = "nccldiag") -> List[str]:
    """Whole nodes (a node is validated with all its GPUs), without a shell: salloc exits once granted
    (or once ``wait`` has passed)."""
    return ["salloc", "--no-shell", "--exclusive", f"--job-name={name}",
            f"--immediate={max(1, int(math.ceil(req.wait)))}"] + req.options()


def cancel(job: str) -> List[str]:
    return ["scancel", job]


def steps_named() -> List[str]:
    """Every step Slurm runs, as ``ID NAME`` lines (the caller picks its own by name)."""
    return ["squeue", "--steps", "--noheader", "--format=%i %j"]


def cancel_ids(ids: Sequence[str]) -> List[str]:
    """Kill these jobs or steps (``123`` or ``123.4``) now."""
    return ["scancel", "--signal=KILL", "--full"] + list(ids)


def srun_step(nodes: Sequence[str], tasks_per_node: int, time_s: float, job: Optional[str] = None,
              req: Optional[AllocRequest] = None, label: bool = False, input_all: bool = False,
              kill_on_bad_exit: bool = False, chdir: Optional[str] = None, name: str = "nccldiag") -> List[str]:
    """``srun`` options for one step on exactly ``nodes``.

    Inside an allocation (``job``) the step overlaps the allocation's other
    steps. Otherwise srun asks for the allocation itself with ``req``'s
    options, waiting at most ``req.wait`` seconds (``--immediate``). The step's
    time limit is ``time_s`` rounded up to whole minutes; nccldiag's own
    deadline (the exact one) kills the step before Slurm would.
    """
    argv = ["srun", f"--job-name={name}", f"--nodes={len(nodes)}", f"--ntasks={len(nodes) * tasks_per_node}",
            f"--ntasks-per-node={tasks_per_node}", f"--nodelist={','.join(nodes)}", f"--time={minutes(time_s)}",
            f"--kill-on-bad-exit={1 if kill_on_bad_exit else 0}", "--wait=0", "--quiet"]
    if job:
        argv += [f"--jobid={job}", "--overlap"]
    elif req is not None:
        argv += [f"--immediate={max(1, int(math.ceil(req.wait)))}"] + [o for o in req.options()
                                                                        if not o.startswith(("--nodelist=", "--nodes=", "--time="))]
    if label:
        argv.append("--label")
    if input_all:
        argv.append("--input=all")
    if chdir:
        argv.append(f"--chdir={chdir}")
    return argv
