"""memlock too low, or ibv_reg_mr / ibv_create_qp / ibv_create_cq failures in NCCL's log."""
from __future__ import annotations

from typing import List

from nccldiag.diagnosis.inputs import Inputs, findings_hosts
from nccldiag.diagnosis.model import Diagnosis, finding_evidence, log_evidence
from nccldiag.model.findings import Status

ID = "memlock-too-low"
TITLE = "Locked-memory limit too low for RDMA"
FIX = ("Make memlock unlimited for the sessions the launcher starts: '* soft memlock unlimited' and "
       "'* hard memlock unlimited' in /etc/security/limits.conf (UsePAM yes in sshd_config), "
       "LimitMEMLOCK=infinity for slurmd/containerd/docker services, docker run --ulimit memlock=-1; "
       "check with 'ulimit -l' inside the launcher (mpirun ... sh -c 'ulimit -l').")
_FNS = {"ibv_reg_mr", "ibv_reg_mr_iova2", "ibv_reg_dmabuf_mr", "ibv_create_qp", "ibv_create_cq", "ibv_alloc_pd"}


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = inp.check_findings("limits.memlock", Status.WARN)
    node = [f for f in node if f.check in ("limits.memlock", "limits.memlock_services")]
    warns = [w for ls in inp.log_sets() for w in ls.facts.warns
             if w.kind == "ibv" and (w.detail.get("fn") in _FNS or "Cannot allocate memory" in w.message)]
    if not warns and not any(f.status == Status.FAIL for f in node):
        return []  # a low limit without RDMA devices (a WARN) holds NCCL back nowhere
    ev = [e for f in node for e in finding_evidence(f)]
    for w in warns[:3]:
        ev.append(log_evidence(w.at, w.text))
        for s in w.chain[:1]:
            ev.append(log_evidence(s.at, s.text))
    nodes = findings_hosts(node) + sorted({w.at.host for w in warns if w.at.host})
    fns = sorted({w.detail.get("fn", "ibv call") for w in warns})
    missing: List[str] = []
    if warns and node:
        conf, why = "high", f"{', '.join(fns)} failed in NCCL and the node's memlock limit is low"
    elif warns:
        conf, why = "medium", (f"{', '.join(fns)} failed in NCCL: a low memlock limit is the usual cause; "
                               "the node's limit was not checked")
        missing.append("nccldiag check HOSTFILE --only limits  (ulimit -l as the launcher's sessions see it)")
    else:
        rdma = any(f.status == Status.FAIL for f in node)
        conf, why = ("medium" if rdma else "low"), ("the memlock limit is below what RDMA registration needs"
                                                    + ("" if rdma else "; no RDMA device made it fail here"))
    fixes = sorted({f.fix for f in node if f.fix and f.check == "limits.memlock"})
    fix = fixes[0] if len(fixes) == 1 else FIX  # the check's own fix knows what the node's files already say
    return [Diagnosis(ID, TITLE, "fail" if warns or any(f.status == Status.FAIL for f in node) else "warn",
                      f"memlock too low on {', '.join(dict.fromkeys(nodes)) or 'the nodes of the log'}"
                      + (f": {', '.join(fns)} failed" if fns else ""), conf, why, fix, nodes=nodes, evidence=ev,
                      missing=missing)]
