"""Running Slurm's commands (the I/O edge): each an argv list, each bounded by a timeout."""
from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

from nccldiag import rx
from nccldiag.model.errors import NccldiagError
from nccldiag.slurm import commands
from nccldiag.slurm.nodes import SlurmNode, parse_show_node
from nccldiag.slurm.verdicts import Action
from nccldiag.transport.base import ExecResult
from nccldiag.transport.local import LocalTransport

TIMEOUT = 30.0  # seconds for one scontrol/scancel call


class SlurmError(NccldiagError):
    """Slurm could not do what was asked (no allocation in time, scontrol failing). Exit code 3."""

    exit_code = 3


def run(argv: Sequence[str], timeout: float = TIMEOUT) -> ExecResult:
    return LocalTransport("slurm").run(list(argv), timeout)


def _why(r: ExecResult) -> str:
    if r.error is not None:
        return r.error.message
    text = (r.stderr or r.stdout or "").strip().splitlines()
    return text[-1][:300] if text else f"exit status {r.rc}"


def require(command: str = "scontrol") -> None:
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):
        # Slurm's commands would look for a controller for their whole timeout first
        raise SlurmError(f"SLURM_CONF={conf}: no such file")
    if shutil.which(command) is None:
        raise SlurmError(f"{command} is not on PATH: Slurm's client commands are needed here "
                         "(Debian/Ubuntu: apt-get install slurm-client)")


def show_nodes(names: Optional[str] = None, timeout: float = TIMEOUT) -> List[SlurmNode]:
    require()
    r = run(commands.show_nodes(names), timeout)
    if not r.ok:
        raise SlurmError(f"scontrol show node: {_why(r)}")
    return parse_show_node(r.stdout)


def resolve_all(hosts: Sequence[str], slurm_nodes: Sequence) -> dict:
    """Addresses of the hosts that are neither a Slurm node name nor one of its addresses (for matching by NodeAddr)."""
    import socket

    known = {n.name for n in slurm_nodes} | {n.addr for n in slurm_nodes} | {n.hostname for n in slurm_nodes}
    out = {}
    for h in hosts:
        if h in known:
            continue
        try:
            out[h] = sorted({ai[4][0] for ai in socket.getaddrinfo(h, None)})
        except OSError:
            out[h] = []
    return out


def current_job(environ: Optional[Dict[str, str]] = None) -> Optional[str]:
    env = os.environ if environ is None else environ
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    return job if job and job.isdigit() else None


def steps(match: Callable[[str], bool], timeout: float = TIMEOUT) -> Optional[List[str]]:
    """Ids (``123.4``) of the steps Slurm lists whose name ``match`` accepts; None when squeue fails."""
    r = run(commands.steps_named(), timeout)
    if not r.ok:
        return None
    out = []
    for line in (r.stdout or "").splitlines():
        words = line.split()
        if len(words) == 2 and match(words[1]):
            out.append(words[0])
    return out


def end_steps(match: Callable[[str], bool], wait: float = 30.0, poll: float = 0.5) -> List[str]:
    """Cancel the steps whose name ``match`` accepts until ``squeue`` lists none, for ``wait`` seconds at most.

    Returns what is still listed when the time is up (empty: none is left).
    """
    deadline = time.monotonic() + wait
    while True:
        bound = max(1.0, min(TIMEOUT, deadline - time.monotonic()))
        left = steps(match, timeout=bound)
        if left == []:
            return []
        if time.monotonic() >= deadline:
            return left if left is not None else ["(squeue did not answer: the steps could not be listed)"]
        if left:
            run(commands.cancel_ids(left), bound)
        time.sleep(min(poll, max(0.0, deadline - time.monotonic())))


@dataclass
class ApplyResult:
    action: Action
    ok: bool
    message: str = ""

    def to_dict(self) -> dict:
        return dict(self.action.to_dict(), ok=self.ok, message=self.message)


def apply(actions: Sequence[Action], timeout: float = TIMEOUT) -> List[ApplyResult]:
    """Drain or resume each node with its own scontrol call; "keep" actions are reported, not run."""
    out: List[ApplyResult] = []
    for a in actions:
        if a.action == "drain":
            argv = commands.drain(a.node, a.reason)
        elif a.action == "resume":
            argv = commands.resume(a.node)
        else:
            out.append(ApplyResult(a, True, a.why))
            continue
        r = run(argv, timeout)
        out.append(ApplyResult(a, r.ok, "" if r.ok else _why(r)))
    return out


_GRANTED = rx.compile(r"Granted job allocation (\d+)")


@dataclass
class Allocation:
    """A job allocation nccldiag asked for itself (``salloc --no-shell``); ``release()`` cancels it."""

    job: str
    nodelist: str
    nodes: List[str] = field(default_factory=list)

    def release(self) -> None:
        run(commands.cancel(self.job), TIMEOUT)

    def __enter__(self) -> "Allocation":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def allocate(req: commands.AllocRequest) -> Allocation:
    """Ask Slurm for an allocation; SlurmError naming what Slurm said when it is not granted within ``req.wait`` s."""
    require("salloc")
    # salloc's --immediate bounds the wait; the process bound is a little longer, for salloc's own start and exit
    r = run(commands.salloc(req), req.wait + 30)
    m = _GRANTED.search((r.stderr or "") + (r.stdout or ""))
    if m is None:
        if r.error is not None:
            why = f"salloc did not answer within {req.wait + 30:g} s"
        else:
            why = _why(r).replace("salloc: error: ", "")
        raise SlurmError(f"Slurm did not grant the allocation ({' '.join(req.options()) or 'defaults'}) "
                         f"within --alloc-timeout {req.wait:g} s: {why}")
    job = m.group(1)
    r = run(commands.show_job(job), TIMEOUT)
    found = re.search(r"(?:^|\s)NodeList=(\S+)", r.stdout or "")
    if not r.ok or found is None or found.group(1) == "(null)":
        run(commands.cancel(job), TIMEOUT)
        raise SlurmError(f"job {job} was granted but its node list could not be read: {_why(r)}")
    from nccldiag.inventory import from_expression

    nodelist = found.group(1)
    return Allocation(job, nodelist, [h.name for h in from_expression(nodelist, f"job {job}")])
