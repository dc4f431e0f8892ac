"""memlock too low, or ibv_reg_mr / ibv_create_qp / ibv_create_cq failures in NCCL's log."""
from __future__ import annotations

from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs, findings_hosts
from nccldiag.diagnosis.model import Diagnosis, finding_evidence, log_evidence
from nccldiag.model.findings import Status

ID = "memlock-too-low"
TITLE = "Locked-memory limit too low for RDMA"
FIX = ("Make memlock unlimited for the sessions the launcher starts: '* soft memlock unlimited' and "
       "'* hard memlock unlimited' in /etc/security/limits.conf (UsePAM yes in sshd_config), "
       "LimitMEMLOCK=infinity for slurmd/containerd/docker services, docker run --ulimit memlock=-1; "
       "check with 'ulimit -l' inside the launcher (mpirun ... sh -c 'ulimit -l').")
def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = signs.memlock_low(inp)
    warns, text = signs.rdma_failures(inp)
    if not warns and not text and not node:
        return []
    if not warns and not text and not any(f.status == Status.FAIL for f in node):
        # a low limit where no RDMA device is known: it fails the first RDMA job, not this node's other work
        return [Diagnosis(ID, TITLE, "warn", f"memlock too low on {', '.join(findings_hosts(node)) or 'the node'}: "
                          f"{node[0].message}", "low",
                          "the limit is below what RDMA registration needs; no RDMA failure is in the evidence",
                          node[0].fix or FIX, nodes=findings_hosts(node),
                          evidence=[e for f in node for e in finding_evidence(f)])]
    warns_ev = [log_evidence(c.at, c.cite or c.text) for c in text[:3]]
    ev = [e for f in node for e in finding_evidence(f)] + warns_ev
    for w in warns[:3]:
        ev.append(log_evidence(w.at, w.text))
        for s in w.chain[:1]:
            ev.append(log_evidence(s.at, s.text))
    nodes = findings_hosts(node) + sorted({w.at.host for w in warns if w.at.host}) + C.hosts(text)
    fns = sorted({w.detail.get("fn", "ibv call") for w in warns} | ({"memory registration"} if text else set()))
    missing: List[str] = []
    alternatives: List[str] = []
    failed = bool(warns or text)  # NCCL's own ibv WARNs, or another program's registration failure
    if failed and node:
        conf, why = "high", f"{', '.join(fns)} failed and the node's memlock limit is low"
    elif failed:
        conf, why = "medium", (f"{', '.join(fns)} failed: a low memlock limit is the usual cause; "
                               "the node's limit was not checked")
        missing.append("nccldiag check HOSTFILE --only limits  (ulimit -l as the launcher's sessions see it)")
        alternatives.append("other:rdma-resources-exhausted: with memlock already unlimited, the HCA's resources "
                            "(queue pairs, completion queues, registered memory) ran out for the connections and "
                            "buffers asked: fewer channels or QPs per peer (NCCL_NCHANNELS_PER_NET_PEER, "
                            "NCCL_IB_QPS_PER_CONNECTION=1), a smaller NCCL_BUFFSIZE")
    else:
        rdma = any(f.status == Status.FAIL for f in node)
        conf, why = ("medium" if rdma else "low"), ("the memlock limit is below what RDMA registration needs"
                                                    + ("" if rdma else "; no RDMA device made it fail here"))
    fixes = sorted({f.fix for f in node if f.fix and f.check == "limits.memlock"})
    fix = fixes[0] if len(fixes) == 1 else FIX  # the check's own fix knows what the node's files already say
    return [Diagnosis(ID, TITLE, "fail" if failed or any(f.status == Status.FAIL for f in node) else "warn",
                      f"memlock too low on {', '.join(dict.fromkeys(nodes)) or 'the nodes of the log'}"
                      + (f": {', '.join(fns)} failed" if fns else ""), conf, why, fix, nodes=nodes, evidence=ev,
                      missing=missing, alternatives=alternatives)]
