"""GPUs without P2P (GNS/CNS/NS, consumer cards): expected, NCCL uses SHM. A diagnosis only if the
default setting hangs on those nodes."""
from __future__ import annotations

from typing import List

from nccldiag.diagnosis.inputs import Inputs, bad_ranks, findings_hosts, setting_hosts
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence
from nccldiag.model.findings import Status

ID = "no-p2p-hang"
TITLE = "GPUs without P2P, and the default setting hangs"
FIX = ("These GPUs cannot do P2P (the driver says so), so NCCL should use SHM by itself. Set NCCL_P2P_DISABLE=1 for "
       "jobs on these nodes, and update NCCL and the driver: the hang is NCCL attempting P2P the driver refuses.")


_BY_DESIGN = ("GNS", "CNS")  # the GPU or chipset does not offer P2P: how the hardware ships, not a fault


def by_design(inp: Inputs) -> List[Diagnosis]:
    """P2P not offered by these GPUs (consumer cards, GNS/CNS) and nothing failed on it: expected, said as info."""
    # the finding is ok (information) where every pair is GNS or consumer cards, a warn otherwise
    found = [f for f in inp.check_findings("topology.p2p", Status.OK) if f.check == "topology.p2p"
             and any(c in str(f.actual) for c in _BY_DESIGN)]
    if not found:
        return []
    ev = [e for f in found for e in finding_evidence(f, 1)]
    hosts = [h for h in findings_hosts(found) if h]
    where = f"the GPUs of {', '.join(hosts)}" if hosts else "these GPUs"
    return [Diagnosis("no-p2p-hang.by-design", "GPUs without P2P (as designed)", "info",
                      f"P2P is not offered between {where}: NCCL uses its SHM "
                      "transport between them, as expected for these GPUs", "high",
                      "the driver reports the GPU or chipset does not support P2P (GNS/CNS)",
                      "Nothing to fix. If a job hangs on these GPUs, run it with NCCL_P2P_DISABLE=1 and update NCCL.",
                      nodes=findings_hosts(found), evidence=ev)]


def diagnose(inp: Inputs) -> List[Diagnosis]:
    default = inp.setting("default")
    # a default still moving data when the deadline cut it is slow, not the hang missing P2P causes
    if default is None or default.status != "hang" or default.unfinished == "slow":
        return by_design(inp)
    no_p2p = inp.check_findings("topology.p2p", Status.OK)
    no_p2p = [f for f in no_p2p if f.check == "topology.p2p" and f.actual and f.actual != "OK"]
    ranks, colls = bad_ranks(default)
    hung = setting_hosts(default, ranks) or list(inp.hosts)
    nodes = sorted({f.host for f in no_p2p if f.host in hung})
    if not nodes:
        return by_design(inp)
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
