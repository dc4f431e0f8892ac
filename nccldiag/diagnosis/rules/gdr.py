"""NET/IB without GPUDirect RDMA while GPU and NIC share a PCIe switch: peermem missing, or DMA-BUF not usable."""
from __future__ import annotations

from typing import List

from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence, log_evidence
from nccldiag.diagnosis.signs import log_failed
from nccldiag.nccl.facts import NET_IB, NET_IB_GDR

ID = "gdr-unused"
TITLE = "NET/IB without GPUDirect RDMA"
FIX_PEERMEM = ("Load nvidia-peermem on every node ('modprobe nvidia-peermem', and list it in /etc/modules-load.d), "
               "or use DMA-BUF (NVIDIA open kernel module, Linux 5.12+, NCCL 2.13+).")
FIX_DMABUF = ("DMA-BUF is not usable here: it needs the NVIDIA open kernel module, Linux 5.12 or newer and NCCL 2.13 "
              "or newer; otherwise load nvidia-peermem.")

FIX_DMABUF_OFF = ("Set NCCL_DMABUF_ENABLE=0 and load nvidia-peermem for GPUDirect RDMA, or give DMA-BUF what it needs "
                  "(NVIDIA open kernel module, Linux 5.12+, an RDMA stack with ibv_reg_dmabuf_mr: rdma-core 34+ or "
                  "MLNX_OFED 5.5+); newer NCCL versions fall back to nvidia-peermem by themselves.")


def _close(topo, nics: List[str]) -> List[str]:
    """GPU-NIC pairs behind one PCIe switch (PIX/PXB) in 'nvidia-smi topo -m'."""
    out = []
    if topo is None:
        return out
    for g in topo.gpus:
        for n in topo.nics:
            link = topo.link(g, n)
            if link in ("PIX", "PXB"):
                out.append(f"{g}-{topo.nic_name(n)} {link}")
    return out


def _dmabuf_unsupported(inp: Inputs) -> List[Diagnosis]:
    """NCCL (2.13+) registers GPU memory with DMA-BUF where it thinks it can; 'ibv_reg_dmabuf_mr failed with error
    Operation not supported' says the RDMA driver stack (or kernel, or GPU driver) lacks it. NCCL then needs
    nvidia-peermem, or NCCL_DMABUF_ENABLE=0 to stop trying (NVIDIA/nccl#778)."""
    out: List[Diagnosis] = []
    for ls in inp.log_sets():
        ws = [w for w in ls.facts.warns if w.kind == "ibv" and w.detail.get("fn") == "ibv_reg_dmabuf_mr"
              and "Operation not supported" in w.message]
        if not ws:
            continue
        hosts = sorted({w.at.host for w in ws if w.at.host})
        failed = log_failed(ls.facts)
        out.append(Diagnosis(ID, TITLE, "fail" if failed else "warn",
                             f"[{ls.label}] DMA-BUF registration of GPU memory is not supported by the RDMA stack"
                             + (f" on {', '.join(hosts)}" if hosts else "") + ": " + ws[0].message,
                             "medium", "NCCL tried GPUDirect RDMA through DMA-BUF and the driver refused the call; "
                             "without nvidia-peermem there is no GPUDirect RDMA, and older NCCL versions do not fall "
                             "back cleanly", FIX_DMABUF_OFF, nodes=hosts,
                             evidence=[log_evidence(w.at, w.text) for w in ws[:3]],
                             missing=([] if inp.check is not None else
                                      ["nccldiag check HOSTFILE --only gdr  (nvidia-peermem, open kernel module, "
                                       "kernel version)"])))
    return out


def diagnose(inp: Inputs) -> List[Diagnosis]:
    out: List[Diagnosis] = _dmabuf_unsupported(inp)
    for ls in inp.log_sets():
        if ls.env.get("NCCL_NET_GDR_LEVEL") == "LOC":
            continue  # asked for no GDR
        ib = [c for c in ls.facts.channels if c.category in (NET_IB, NET_IB_GDR)]
        if not ib or any(c.gdrdma for c in ib):
            continue
        hosts = sorted({c.at.host for c in ib if c.at.host})
        ev = [log_evidence(c.at, c.text) for c in ib[:2]]
        ev += [log_evidence(g.at, g.text) for g in ls.facts.gdr if not g.enabled][:2]
        close, peermem, missing = [], [], []
        far = []
        for h in hosts or inp.hosts:
            topo = getattr(inp.facts(h, "topology"), "topo", None)
            if topo is not None and topo.nics and not _close(topo, []):
                far.append(h)
            pairs = _close(topo, [])
            if pairs:
                close.append(h)
                ev.append(Evidence("node", "GPU and NIC share a PCIe switch: " + ", ".join(pairs[:4]),
                                   "topology.matrix", h))
        if far and not close:
            continue  # GPU and NIC are not behind one switch: NCCL leaves GDR off by design (NCCL_NET_GDR_LEVEL)
        pm = [f for f in inp.check_findings("gdr.peermem") if not hosts or f.host in hosts]
        for f in pm:
            ev.extend(finding_evidence(f, 1))
            peermem.append(f.host)
        reasons = sorted({g.reason for g in ls.facts.gdr if not g.enabled and g.reason})
        if close and pm:
            conf, why = "high", "GPU and NIC share a switch, so GDR should be used, and the peer-memory module is missing"
        elif close or pm:
            conf = "medium"
            why = ("GPU and NIC share a switch; why GDR is off was not checked" if close else
                   "the peer-memory module is missing; the GPU-NIC distance was not checked")
        else:
            conf, why = "low", "the log shows IB without GDRDMA; the nodes were not checked"
        if inp.check is None:
            missing.append("nccldiag check HOSTFILE --only gdr,topology  (nvidia-peermem, GPU-NIC distance)")
        fix = FIX_PEERMEM if pm or not any("dma" in r.lower() for r in reasons) else FIX_DMABUF
        nodes = sorted(set(close) | {h for h in peermem if h}) or hosts
        unsupported = bool(reasons) and all("not supported by GPU" in r for r in reasons)
        if unsupported:
            # NCCL says the GPU cannot do GPUDirect RDMA: expected for that GPU, nothing on the node to fix
            conf, why = "high", "NCCL reported that the GPU does not support GPUDirect RDMA"
            fix, missing = "Nothing to fix on the node: this GPU model has no GPUDirect RDMA; use GPUs that do.", []
        stated = [g for g in ls.facts.gdr if not g.enabled]
        completed = any(e.phase == "COMPLETE" for e in ls.facts.inits) or bool(ls.facts.nccl_tests)
        quiet = (inp.check is None and not close and not pm and not stated and completed
                 and not log_failed(ls.facts))
        if quiet and not unsupported:
            # the log alone, a run that set up and shows no failure, NCCL saying nothing of GDR: NCCL leaves GDR off
            # by design where GPU and NIC are far apart (NCCL_NET_GDR_LEVEL): a note until the nodes are checked
            why = ("the log shows IB without GDRDMA in a run that shows no failure, and NCCL said nothing of GDR: "
                   "NCCL leaves it off where GPU and NIC are far apart; the nodes were not checked")
            ev += [e for f in C.findings(inp, "nccl.gdrdma") for e in finding_evidence(f, 1)]  # the note accounts for it
        out.append(Diagnosis(ID, TITLE, "info" if unsupported or quiet else "warn",
                             f"[{ls.label}] NCCL used NET/IB without GPUDirect RDMA"
                             + (f" on {', '.join(nodes)}" if nodes else "")
                             + (f" (NCCL: {'; '.join(reasons)})" if reasons else "")
                             + ": data is staged through host memory", conf, why, fix, nodes=nodes,
                             evidence=ev[:12], missing=missing))
    return out
