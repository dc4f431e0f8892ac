"""NCCL RAS reports -> findings: the dead, missing and failed ranks a hung job's RAS names.

Pure. Reports from one source are read in order as repeated queries of one
job: the last one is the job's state; a MISMATCH that an earlier query
already showed unchanged means the communicator is stuck (counts that move on
are NCCL outpacing RAS, which its documentation calls normal).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from nccldiag.model.findings import Finding, fail, ok, warn
from nccldiag.nccl.ras import RasProblem, RasReport

AREA = "nccl"
MAX_NAMED = 8

FIX_DEAD = ("RAS lost this process for more than 60 s: it crashed, hung hard or lost its network. On that node "
            "look at dmesg (Xid lines, OOM kills), 'nvidia-smi', and the link RAS uses (the bootstrap interface, "
            "NCCL_SOCKET_IFNAME); the job cannot complete without it.")
FIX_INCOMPLETE = ("These ranks did not answer RAS: their process is stopped, hung in a CUDA call or unreachable. "
                  "Start with the named nodes and GPUs ('nvidia-smi', dmesg Xid lines, the network between the "
                  "nodes); query again: a rank still missing after 60 s is declared DEAD.")
FIX_ERROR = ("A rank reported an NCCL error: its own log (NCCL_DEBUG=WARN) names the cause; the communicator "
             "cannot go on and must be aborted.")
FIX_MISMATCH = ("The named ranks have launched a different number of operations than the others. If a repeated "
                "query shows the same counts, the communicator is stuck waiting for the ranks that are behind: "
                "look at those ranks' processes (py-spy dump, the application's logs) and their nodes.")
FIX_TIMEOUT = ("Some RAS peers did not answer in time while the data was gathered: the report may be missing "
               "processes. Query again with a longer timeout (ncclras -t 30).")


def named(p: RasProblem, limit: int = MAX_NAMED) -> str:
    """The ranks (or, where RAS gave none, the processes) a problem names, at most ``limit`` of them."""
    names = [r.where() for r in p.ranks[:limit]]
    if not names and p.missing_ranks:
        names = [f"rank {r}" for r in p.missing_ranks[:limit]]
    if not names:
        names = [pr.where() for pr in p.processes[:limit]]
    more = max(len(p.ranks), len(p.missing_ranks), len(p.processes)) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _host(p: RasProblem) -> Optional[str]:
    nodes = p.nodes()
    return nodes[0] if len(nodes) == 1 else None


def _evidence(r: RasReport, p: RasProblem) -> List[str]:
    at = f"{r.source}:{r.lineno}" if r.source else f"line {r.lineno}"
    head = (f"{p.comm} ({p.comm_hash}) {p.kind}" if p.comm else p.kind)
    body = p.lines + [x.where() for x in p.ranks[:MAX_NAMED]] + [x.where() for x in p.processes[:MAX_NAMED]]
    return [f"{at}: {head}"] + [f"  {b}" for b in body[:MAX_NAMED * 2]]


def _one(r: RasReport, p: RasProblem, stuck: bool) -> Finding:
    where = named(p)
    comm = f"communicator {p.comm} ({p.comm_hash})" if p.comm else ""
    ev = _evidence(r, p)
    if p.kind == "DEAD":
        n = p.count or len(p.processes) or len(p.ranks)
        msg = f"RAS: {n} process{'es' if n != 1 else ''} considered dead" + (f": {where}" if where else "")
        return fail(AREA, "nccl.ras_dead", msg, actual="DEAD", expected="RUNNING", evidence=ev, fix=FIX_DEAD,
                    host=_host(p))
    if p.kind == "INCOMPLETE":
        n = p.count or len(p.ranks) or len(p.missing_ranks) or len(p.processes)
        if comm:
            what = f"{comm} is missing {n} rank{'s' if n != 1 else ''}"
        else:
            what = f"no answer from {n} job process{'es' if n != 1 else ''}"
        return fail(AREA, "nccl.ras_incomplete", f"RAS: {what}" + (f": {where}" if where else ""),
                    actual="INCOMPLETE", expected="every rank answering", evidence=ev, fix=FIX_INCOMPLETE,
                    host=_host(p))
    if p.kind == "ERROR":
        what = "; ".join(p.lines) or "error"
        return fail(AREA, "nccl.ras_error", f"RAS: {comm}: {what}" + (f": {where}" if where else ""),
                    actual="ERROR", expected="OK", evidence=ev, fix=FIX_ERROR, host=_host(p))
    if p.kind == "MISMATCH":
        what = p.lines[0] if p.lines else "ranks differ"
        if stuck:
            return fail(AREA, "nccl.ras_mismatch",
                        f"RAS: {comm} is stuck: {what[0].lower() + what[1:]}, unchanged across repeated queries"
                        + (f"; ranks apart: {where}" if where else ""),
                        actual="MISMATCH", expected="counts moving on", evidence=ev, fix=FIX_MISMATCH, host=_host(p))
        return warn(AREA, "nccl.ras_mismatch",
                    f"RAS: {comm}: {what[0].lower() + what[1:]}" + (f"; ranks apart: {where}" if where else "")
                    + " (normal while a job runs unless a repeated query shows the same counts)",
                    actual="MISMATCH", expected="OK", evidence=ev, fix=FIX_MISMATCH, host=_host(p))
    what = p.lines[0] if p.lines else "timeouts while gathering data"
    return warn(AREA, "nccl.ras_timeout", f"RAS: {what[0].lower() + what[1:]}", evidence=ev, fix=FIX_TIMEOUT)


def _summary(r: RasReport) -> str:
    parts = []
    if r.nodes is not None:
        parts.append(f"{r.nodes} node{'s' if r.nodes != 1 else ''}, {r.processes} process"
                     f"{'es' if r.processes != 1 else ''}, {r.gpus} GPU{'s' if r.gpus != 1 else ''}")
    if r.communicators is not None:
        st = "/".join(r.statuses())
        parts.append(f"{r.communicators} communicator{'s' if r.communicators != 1 else ''}" + (f" {st}" if st else ""))
    return "; ".join(parts)


def judge(reports: Sequence[RasReport]) -> List[Finding]:
    """Findings for the RAS reports read: one per problem in each source's last report."""
    by_source: Dict[str, List[RasReport]] = {}
    for r in reports:
        by_source.setdefault(r.source, []).append(r)
    out: List[Finding] = []
    for source, rs in by_source.items():
        last = rs[-1]
        earlier = {p.signature() for r in rs[:-1] for p in r.problems if p.kind == "MISMATCH"}
        problems = last.problems
        for p in problems:
            out.append(_one(last, p, stuck=p.kind == "MISMATCH" and p.signature() in earlier))
        if not any(p.severity == "error" for p in problems) and not any(p.kind == "MISMATCH" for p in problems):
            at = f"{source}:{last.lineno}" if source else f"line {last.lineno}"
            queries = f" ({len(rs)} queries)" if len(rs) > 1 else ""
            if last.no_communicators:
                out.append(warn(AREA, "nccl.ras", f"RAS answered but holds no communicator{queries}: the job has "
                                "not created one yet, or has already destroyed it", evidence=[at]))
            else:
                out.append(ok(AREA, "nccl.ras", f"RAS: every rank answered, no error{queries}: {_summary(last)}",
                              evidence=[at]))
    return out

