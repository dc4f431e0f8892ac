"""A check's verdicts sent back to Slurm: the nodes to drain, and what --drain / --resume-healthy did."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from nccldiag.model.findings import Status
from nccldiag.model.raw import RawNode
from nccldiag.slurm import verdicts
from nccldiag.slurm.nodes import SlurmNode, match_hosts, shared_nodes


def node_verdicts(report, spec=None) -> List[verdicts.NodeVerdict]:
    """pass / fail / held / unchecked per host of a CheckReport (pure). With a site ``spec`` whose ``[drain]``
    keeps every failure of a node from draining it, that node is ``held``: failing, neither drained nor resumed."""
    out: List[verdicts.NodeVerdict] = []
    for n in report.nodes:
        failed = list(dict.fromkeys(f.check for f in n.findings if f.status == Status.FAIL))
        errors = list(dict.fromkeys(f.check for f in n.findings if f.status == Status.ERROR))
        draining = [c for c in failed if spec is None or spec.drains(c)]
        if draining:
            out.append(verdicts.NodeVerdict(n.host, "fail", draining))
        elif failed:
            out.append(verdicts.NodeVerdict(n.host, "held", failed))
        elif not n.reachable or errors:
            out.append(verdicts.NodeVerdict(n.host, "unchecked", errors or ["unreachable"]))
        else:
            out.append(verdicts.NodeVerdict(n.host, "pass"))
    return out


def names_for(report, raws: Sequence[RawNode], slurm_nodes: Sequence[SlurmNode], addresses=None) -> Dict[str, str]:
    """Hosts matched to Slurm node names by what Slurm says: the node srun ran the host's step on, else the
    NodeName, NodeHostName or NodeAddr the host is or resolves to. Never the host name a node reports (its own
    claim)."""
    names = {r.host: str(r.extra["slurm_node"]) for r in raws if r.extra.get("slurm_node")}
    rest = [n.host for n in report.nodes if n.host not in names]
    names.update(match_hosts(rest, slurm_nodes, addresses=addresses))
    known = {n.name for n in slurm_nodes}
    return {h: n for h, n in names.items() if n in known}


def run(report, raws: Sequence[RawNode], drain: bool, drain_unchecked: bool, resume_healthy: bool,
        slurm_nodes: Optional[Sequence[SlurmNode]] = None, local_name: Optional[str] = None, spec=None) -> dict:
    """Plan (and with --drain / --resume-healthy, apply) the verdicts; the report's ``slurm`` section.

    ``local_name``: this machine's Slurm node name (``$SLURMD_NODENAME`` in a
    health check), taken as is. Without --drain or --resume-healthy a Slurm
    that cannot be asked only leaves a note; with them it is an error.
    """
    from nccldiag.slurm.client import resolve_all
    from nccldiag.slurm import client

    if slurm_nodes is None:
        try:
            slurm_nodes = client.show_nodes()
        except client.SlurmError as exc:
            if drain or resume_healthy:
                raise
            return {"error": str(exc), "nodes": {}, "to_drain": [], "applied": []}
    if local_name and len(report.nodes) == 1:
        names = {report.nodes[0].host: local_name}
    else:
        addresses = resolve_all([n.host for n in report.nodes], slurm_nodes)
        names = names_for(report, raws, slurm_nodes, addresses)
    shared = shared_nodes(names)
    matched = {h: n for h, n in names.items() if n not in shared}  # a node two hosts match is left alone
    vs = node_verdicts(report, spec)
    planned = verdicts.to_drain(vs, matched, drain_unchecked=True)
    section = {
        "nodes": names,
        **({"shared": shared} if shared else {}),
        "to_drain": [a.to_dict() for a in planned if drain_unchecked or not a.reason.startswith(
            verdicts.REASON_PREFIX_UNCHECKED)],
        "applied": [],
    }
    actions: List[verdicts.Action] = []
    if drain:
        actions.extend(verdicts.to_drain(vs, matched, drain_unchecked))
    if resume_healthy:
        actions.extend(verdicts.to_resume(vs, matched, verdicts.index(slurm_nodes)))
    if actions:
        section["applied"] = [r.to_dict() for r in client.apply(actions)]
    return section
