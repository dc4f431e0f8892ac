"""/dev/shm too small: NCCL could not create its shared-memory segments, or the node's /dev/shm is below
what NCCL needs."""
from __future__ import annotations

from typing import List

from nccldiag.diagnosis.inputs import Inputs, findings_hosts
from nccldiag.diagnosis.model import Diagnosis, finding_evidence, log_evidence

ID = "shm-too-small"
TITLE = "/dev/shm too small"
CATEGORY = "shm_too_small"
FIX = ("Give the job a larger /dev/shm: docker run --shm-size=1g (or --ipc=host); Kubernetes: an emptyDir with "
       "medium: Memory mounted on /dev/shm; on the host, remount tmpfs /dev/shm with size=50%.")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    node = inp.check_findings("limits.shm")
    ev = [e for f in node for e in finding_evidence(f)]
    warns = [(ls, w) for ls in inp.log_sets() for w in ls.facts.warns if w.kind == "shm"]
    for _, w in warns[:3]:
        ev.append(log_evidence(w.at, w.text))
    if not node and not warns:
        return []
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
