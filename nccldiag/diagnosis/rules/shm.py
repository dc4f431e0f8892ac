"""/dev/shm too small: NCCL could not create its shared-memory segments, or the node's /dev/shm is below
what NCCL needs.

Evidence: NCCL's WARN ('Error while creating shared memory segment', 'posix_fallocate failed', 'failed to extend
/dev/shm/nccl-...'), also quoted without its prefix; the node's /dev/shm size; with less confidence, a failed call
chain through NCCL's shared-memory transport whose WARN was cut, or a system error on one node that no WARN
explains (a run without NCCL_DEBUG in a container).
References: NVIDIA/nccl#342, #473 (docker --ipc=host), #525; NCCL troubleshooting (Docker shared memory).
"""
from __future__ import annotations

from typing import List

from nccldiag import rx
from nccldiag.diagnosis.inputs import Inputs, findings_hosts
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence, log_evidence

ID = "shm-too-small"
TITLE = "/dev/shm too small"
FIX = ("Give the job a larger /dev/shm: docker run --shm-size=1g (or --ipc=host); Kubernetes: an emptyDir with "
       "medium: Memory mounted on /dev/shm; on the host, remount tmpfs /dev/shm with size=50%.")


SYSTEM_ERROR = rx.compile(r"unhandled system error|ncclSystemError|NCCL Error 2\b")
SHM_STEP = rx.compile(r"(?:^|/)(?:transport/shm\.cc|shmutils\.cc|include/shm\.h)$")


def _one_node(f) -> bool:
    """Known to be one node and nothing over the network: an nccl-tests run whose ranks all name one host,
    communicators of one node, or every process on one host; no channel through the network."""
    if any((c.nnodes or 0) > 1 for c in f.comms) or any(c.transport in ("NET", "COLLNET") for c in f.channels[:1000]):
        return False
    runs = list(f.nccl_tests) + list(f.nccl_tests_no_result)
    hosts = {h for r in runs for h in r.hosts} | {p.host for p in f.procs if p.host}
    return (len(hosts) == 1 or bool(f.comms) and all(c.nnodes == 1 for c in f.comms)) and len(hosts) <= 1


def unnamed_system_error(inp: Inputs) -> List[Evidence]:
    """An NCCL system error on one node that no WARN explains (the run was not at NCCL_DEBUG=WARN or INFO), or a
    failed call chain through NCCL's shared-memory code: within one node the system calls NCCL makes are those
    of its /dev/shm segments, its bootstrap socket on the host aside."""
    out: List[Evidence] = []
    for ls in inp.log_sets():
        f = ls.facts
        chains = [oc for oc in f.orphan_chains if oc.failed and any(SHM_STEP.search(s.file or "") for s in oc.steps)]
        if chains:
            out.append(log_evidence(chains[0].steps[0].at, chains[0].steps[0].text
                                    + "  (an error returned through NCCL's shared-memory transport)"))
            continue
        # a WARN of NCCL's (but the missing libibverbs of a node without IB) names the failing call itself
        if any(w.failure or w.kind != "ibverbs_missing" for w in f.warns) or any(oc.failed for oc in f.orphan_chains) \
                or not _one_node(f):
            continue
        errs = sorted((a for a in f.app_errors if SYSTEM_ERROR.search(a.message or a.text)),
                      key=lambda a: a.at.host is None)
        if errs:
            out.append(log_evidence(errs[0].at, errs[0].text + "  (one node, and no NCCL WARN says which call)"))
    return out


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = inp.check_findings("limits.shm")
    ev = [e for f in node for e in finding_evidence(f)]
    warns = [(ls, w) for ls in inp.log_sets() for w in ls.facts.warns if w.kind == "shm"]
    for _, w in warns[:3]:
        ev.append(log_evidence(w.at, w.text))
    if not node and not warns:
        hint = unnamed_system_error(inp)
        if not hint:
            return []
        chain = any("shared-memory transport" in e.text for e in hint)
        nodes = sorted({e.host for e in hint if e.host})
        return [Diagnosis(ID, TITLE, "warn", f"/dev/shm is the likely cause of NCCL's system error on "
                          f"{', '.join(nodes) or 'the node of the log'}", "medium" if chain else "low",
                          ("the error came back through NCCL's shared-memory code" if chain else
                           "NCCL failed a system call on one node without saying which: there its system calls are "
                           "those of its /dev/shm segments (64 MB in a container by default), its bootstrap socket "
                           "aside"), FIX, nodes=nodes, evidence=hint[:4],
                          workaround="NCCL_SHM_DISABLE=1 (intra-node traffic then uses P2P or the network)",
                          missing=["rerun with NCCL_DEBUG=WARN: NCCL then names the failing call",
                                   "df -h /dev/shm inside the container or pod"],
                          alternatives=["socket_ifname_wrong: no IP interface for NCCL's bootstrap in a container "
                                        "without networking ('Socket creation failed' at NCCL_DEBUG=WARN)"])]
    nodes = findings_hosts(node) + sorted({w.at.host for _, w in warns if w.at.host})
    if warns and node:
        conf, why = "high", "NCCL failed to create a /dev/shm segment and the node's /dev/shm is small"
    elif warns:
        conf, why = "high", "NCCL itself reported it could not create or extend its /dev/shm segment"
    else:
        conf, why = "medium", "the node's /dev/shm is below what NCCL needs; no run has failed on it here"
    missing = [] if node or inp.check is not None else ["nccldiag check HOSTFILE --only limits  (df /dev/shm)"]
    return [Diagnosis(ID, TITLE, "fail" if warns or any(f.status.value == "fail" for f in node) else "warn",
                      f"/dev/shm too small on {', '.join(dict.fromkeys(nodes)) or 'the nodes of the log'}", conf, why,
                      FIX, nodes=nodes, evidence=ev, workaround="NCCL_SHM_DISABLE=1 (intra-node traffic then "
                      "uses P2P or the network)", missing=missing)]
