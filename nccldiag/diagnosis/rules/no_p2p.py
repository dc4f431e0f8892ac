"""GPUs without P2P (GNS/CNS/NS, consumer cards): expected, NCCL uses SHM. A diagnosis only if the
default setting hangs on those nodes."""
from __future__ import annotations

from typing import List

from nccldiag.diagnosis.inputs import Inputs, bad_ranks, setting_hosts
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence

ID = "no-p2p-hang"
TITLE = "GPUs without P2P, and the default setting hangs"
FIX = ("These GPUs cannot do P2P (the driver says so), so NCCL should use SHM by itself. Set NCCL_P2P_DISABLE=1 for "
       "jobs on these nodes, and update NCCL and the driver: the hang is NCCL attempting P2P the driver refuses.")


def diagnose(inp: Inputs) -> List[Diagnosis]:
    default = inp.setting("default")
    if default is None or default.status != "hang":
        return []
    no_p2p = inp.check_findings("topology.p2p")
    no_p2p = [f for f in no_p2p if f.check == "topology.p2p"]
    ranks, colls = bad_ranks(default)
    hung = setting_hosts(default, ranks) or list(inp.hosts)
    nodes = sorted({f.host for f in no_p2p if f.host in hung})
    if not nodes:
        return []
    ev = [Evidence("probe", f"default: hang in {', '.join(colls) or 'init'}", "default")]
    for f in no_p2p:
        if f.host in nodes:
            ev.extend(finding_evidence(f))
    p2p_off = inp.setting("p2p-off")
    if p2p_off is not None:
        ev.append(Evidence("probe", f"p2p-off: {p2p_off.status}", "p2p-off"))
    conf = "high" if p2p_off is not None and p2p_off.status == "ok" else "medium"
    why = ("the driver reports no P2P between these GPUs, the default hung on them"
           + (" and p2p-off worked" if conf == "high" else "; p2p-off did not confirm it"))
    return [Diagnosis(ID, TITLE, "fail", f"default hangs on {', '.join(nodes)}, whose GPUs have no P2P",
                      conf, why, FIX, nodes=nodes, evidence=ev, workaround="NCCL_P2P_DISABLE=1",
                      missing=[] if p2p_off is not None else ["nccldiag probe HOSTFILE --settings all"])]
