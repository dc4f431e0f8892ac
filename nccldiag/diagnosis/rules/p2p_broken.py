"""P2P path broken: the default setting hangs, fails or corrupts while NCCL_P2P_DISABLE=1 works,
and the node shows ACS redirect on the GPU path or an IOMMU in translated mode."""
from __future__ import annotations

from typing import List

from nccldiag.diagnosis.inputs import BAD, Inputs, bad_ranks, findings_hosts, peak, setting_hosts
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence, log_evidence
from nccldiag.diagnosis.measured import setting_comparison
from nccldiag.model.findings import Status
from nccldiag.model.sizes import size_text

ID = "p2p-path-broken"
TITLE = "P2P path broken"
FIX = ("Disable ACS redirect on the PCIe switches and root ports above the GPUs (BIOS: ACS off, or "
       "'setpci -s BDF ECAP_ACS+6.w=0000' at every boot) and put the IOMMU in passthrough "
       "(intel_iommu=on iommu=pt or amd_iommu=on iommu=pt on the kernel command line) or off; reboot and probe again.")
WORKAROUND = "NCCL_P2P_DISABLE=1 in the jobs' environment: intra-node traffic goes through host shared memory (SHM)"


def _node_evidence(inp: Inputs, hosts: List[str]):
    """ACS redirect and translated-IOMMU findings, on ``hosts`` when given."""
    # a FAIL is ACS redirect on the path of GPUs or NICs; a WARN is elsewhere (an NVMe switch) and no cause
    acs = [f for f in inp.check_findings("pcie.acs", Status.FAIL) if not hosts or f.host in hosts]
    iommu = [f for f in inp.check_findings("iommu.mode")
             if "translated" in f"{f.actual} {f.message}".lower() and (not hosts or f.host in hosts)]
    return acs, iommu


def diagnose(inp: Inputs) -> List[Diagnosis]:
    default, p2p_off = inp.setting("default"), inp.setting("p2p-off")
    if default is not None and p2p_off is not None:
        if default.status not in BAD or p2p_off.status != "ok":
            return []
        ranks, colls = bad_ranks(default)
        hosts = setting_hosts(default, ranks) or list(inp.hosts)
        acs, iommu = _node_evidence(inp, hosts)
        ev = [Evidence("probe", f"default: {default.status} in {', '.join(colls) or 'init'} "
                                f"(ranks {', '.join(map(str, ranks)) or '?'})", "default"),
              Evidence("probe", "p2p-off (NCCL_P2P_DISABLE=1): every collective verified", "p2p-off")]
        for f in acs + iommu:
            ev.extend(finding_evidence(f))
        lf = default.log_facts
        p2p_lines = [c for c in (lf.channels if lf is not None else []) if c.transport == "P2P"]
        for c in p2p_lines[:3]:
            ev.append(log_evidence(c.at, c.text))
        missing: List[str] = []
        if acs or iommu:
            what = " and ".join(x for x, y in (("ACS redirect", acs), ("a translated IOMMU", iommu)) if y)
            conf, why = "high", (f"default failed and p2p-off worked on the same nodes, and {what} "
                                 f"on {', '.join(findings_hosts(acs + iommu))} is the known cause")
            nodes = findings_hosts(acs + iommu)
        else:
            conf, why = "medium", ("default failed and p2p-off worked, so the P2P transport is at fault; "
                                   "no node evidence of ACS or IOMMU translation at hand")
            nodes = hosts
            missing.append("nccldiag check HOSTFILE --only pcie,iommu  (as root: lspci -vvv shows ACSCtl)")
        cost = None
        best = peak(p2p_off)
        if best is not None:
            cost = f"p2p-off peak busbw {best[1]:.2f} GB/s ({best[0]}, {size_text(best[2])})"
            c = setting_comparison(inp, p2p_off)
            if c is not None and c.percent is not None:
                cost += f", {c.percent:.0f}% of the {c.expectation.gbps:.1f} GB/s expected"  # type: ignore[union-attr]
            cost += "; the default had none"
        pairs = sorted({f"{c.src}->{c.dst}" + (f" ({c.at.host})" if c.at.host else "") for c in p2p_lines})
        return [Diagnosis(ID, TITLE, "fail",
                          f"P2P between GPUs is broken on {', '.join(nodes)}: default {default.status}, "
                          "NCCL_P2P_DISABLE=1 works", conf, why, FIX, nodes=nodes, evidence=ev,
                          workaround=WORKAROUND, workaround_cost=cost, missing=missing, pairs=pairs[:16])]
    # no probe to compare: ACS redirect above GPUs predicts the failure
    acs = [f for f in inp.check_findings("pcie.acs", Status.FAIL)]
    if not acs:
        return []
    nodes = findings_hosts(acs)
    ev = [e for f in acs for e in finding_evidence(f)]
    return [Diagnosis(ID, TITLE, "fail",
                      f"ACS redirect above the GPUs on {', '.join(nodes)}: P2P traffic is sent through the root "
                      "complex, where it hangs or corrupts on many platforms", "medium",
                      "ACS redirect on the GPU path is the known cause of P2P hangs; no probe confirmed it here",
                      FIX, nodes=nodes, evidence=ev, workaround=WORKAROUND,
                      missing=["nccldiag probe HOSTFILE  (compares the default with p2p-off)"])]
