"""IB present but NCCL used sockets; the candidate causes ranked by the evidence for each."""
from __future__ import annotations

from typing import List, Tuple

from nccldiag import rx
from nccldiag.diagnosis.inputs import Inputs, LogSet
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence, log_evidence
from nccldiag.diagnosis.signs import log_failed
from nccldiag.nccl.facts import NET_IB, NET_IB_GDR, NET_SOCKET

ID = "ib-unused-sockets"
TITLE = "IB present but NCCL used sockets"
FIX = ("Remove the cause ranked first below, then run 'nccldiag probe HOSTFILE --ib' (NCCL_NET=IB: it fails "
       "instead of falling back silently).")
_IB_NETDEV = rx.compile(r"^(ib|ibp|ibs)\w*")


def _asked_for_sockets(ls: LogSet) -> bool:
    env = ls.env
    return env.get("NCCL_IB_DISABLE") == "1" or env.get("NCCL_NET", "").lower() == "socket"


def _used_sockets(ls: LogSet) -> bool:
    chans = [c for c in ls.facts.channels if c.transport == "NET"]
    if chans:
        return any(c.category == NET_SOCKET for c in chans) and not any(
            c.category in (NET_IB, NET_IB_GDR) for c in chans)
    return bool(ls.facts.networks) and all(n.name.lower() == "socket" for n in ls.facts.networks)


def _presence(inp: Inputs, ls: LogSet, hosts: List[str]) -> List[Evidence]:
    ev: List[Evidence] = []
    for h in hosts or inp.hosts:
        ib = inp.facts(h, "ib")
        active = [p for p in getattr(ib, "ports", None) or [] if p.active]
        if active:
            ev.append(Evidence("node", f"{len(active)} active IB/RoCE port(s): "
                                       + ", ".join(p.name for p in active[:8]), "ib.port_state", h))
    for b in ls.facts.bootstrap:
        if any(_IB_NETDEV.match(d.name or "") for d in b.interfaces):
            ev.append(log_evidence(b.at, b.text + "  (an IPoIB interface: the node has InfiniBand)"))
            break
    return ev


def _causes(inp: Inputs, ls: LogSet, hosts: List[str]) -> List[Tuple[int, str, List[Evidence]]]:
    f = ls.facts
    out: List[Tuple[int, str, List[Evidence]]] = []
    env = [e for e in f.env if e.name == "NCCL_IB_DISABLE" and e.value == "1"]
    if env and "NCCL_IB_DISABLE" not in ls.env:
        out.append((3, "NCCL_IB_DISABLE=1 is set in the jobs' environment (or /etc/nccl.conf)",
                    [log_evidence(env[0].at, env[0].text)]))
    net = [e for e in f.env if e.name == "NCCL_NET" and e.value.lower() == "socket"]
    if net and "NCCL_NET" not in ls.env:
        out.append((3, "NCCL_NET=Socket is set in the environment", [log_evidence(net[0].at, net[0].text)]))
    verbs = [n for n in f.notes if n.kind == "ibverbs_missing"] + [w for w in f.warns if w.kind == "ibverbs_missing"]
    if verbs:
        out.append((3, "libibverbs is missing where NCCL runs (install rdma-core/libibverbs1, inside the container "
                       "too)", [log_evidence(verbs[0].at, verbs[0].text)]))
    down = [x for x in inp.check_findings("ib.port_state") if not hosts or x.host in hosts]
    if down:
        out.append((3, "IB/RoCE ports are down", [e for x in down for e in finding_evidence(x, 1)]))
    nodev = [n for n in f.notes if n.kind == "ib_no_device"] + [n for n in f.notes if n.kind == "ib_no_active_port"]
    if nodev:
        out.append((2, "NCCL saw no usable IB device: /dev/infiniband not passed to the container "
                       "(--device=/dev/infiniband), the mlx5_ib/ib_uverbs modules not loaded, or NCCL_IB_HCA naming "
                       "another device", [log_evidence(nodev[0].at, nodev[0].text)]))
    plugins = [p for p in f.plugins if p.kind in ("path", "p2p_plugin", "loaded_net", "load_failed")]
    if plugins:
        out.append((2, "an external net plugin (HPC-X libnccl-net.so / IBext) is loaded and decides the network; "
                       "test with NCCL_NET_PLUGIN=none", [log_evidence(p.at, p.text) for p in plugins[:2]]))
    gid = [x for x in inp.check_findings("ib.roce_gid") if not hosts or x.host in hosts]
    if gid:
        out.append((2, "no RoCE v2 GID with an IPv4 address on the RoCE ports",
                    [e for x in gid for e in finding_evidence(x, 1)]))
    ifn = [e for e in f.env if e.name in ("NCCL_SOCKET_IFNAME", "NCCL_IB_HCA")]
    if ifn:
        out.append((1, f"{ifn[0].name}={ifn[0].value} is set: check it names the IB/RoCE devices' interfaces",
                    [log_evidence(ifn[0].at, ifn[0].text)]))
    return sorted(out, key=lambda c: -c[0])


def diagnose(inp: Inputs) -> List[Diagnosis]:
    out: List[Diagnosis] = []
    for ls in inp.log_sets():
        if _asked_for_sockets(ls) or not _used_sockets(ls):
            continue
        sock = [c for c in ls.facts.channels if c.category == NET_SOCKET]
        hosts = sorted({c.at.host for c in sock if c.at.host} & set(inp.hosts)) or []
        present = _presence(inp, ls, hosts)
        if not present:
            continue
        causes = _causes(inp, ls, hosts)
        ev = list(present)
        for c in sock[:2]:
            ev.append(log_evidence(c.at, c.text))
        if not sock and ls.facts.networks:
            ev.append(log_evidence(ls.facts.networks[0].at, ls.facts.networks[0].text))
        ranked = []
        for i, (score, text, cev) in enumerate(causes, 1):
            ranked.append(f"{i}. {text} ({['', 'weak', 'some', 'strong'][score]} evidence)")
            ev.extend(cev)
        missing = []
        if inp.check is None:
            missing.append("nccldiag check HOSTFILE --only ib,gdr,limits  (port state, GIDs, modules, memlock)")
        chosen = [e for e in ls.facts.env if (e.name == "NCCL_IB_DISABLE" and e.value == "1")
                  or (e.name == "NCCL_NET" and e.value.lower() == "socket")]
        if chosen and not log_failed(ls.facts) and inp.check is None and inp.probe is None:
            # the jobs' environment asked for sockets and the run shows no failure: a choice, not a fault
            out.append(Diagnosis(ID, TITLE, "info",
                                 f"[{ls.label}] NCCL used sockets as the environment asked "
                                 f"({chosen[0].name}={chosen[0].value}) although InfiniBand/RoCE is present"
                                 + (f" on {', '.join(hosts)}" if hosts else "") + "; the run shows no failure",
                                 "medium", "a setting of the jobs' environment, not a fault: sockets between nodes "
                                 "are slower than IB", "Unset " + chosen[0].name + " to let NCCL use IB between nodes.",
                                 nodes=hosts, evidence=(ev + [log_evidence(chosen[0].at, chosen[0].text)])[:12]))
            continue
        conf = "high" if causes and causes[0][0] >= 3 else ("medium" if causes else "low")
        why = ("NCCL's channel lines show sockets where IB is present; "
               + (f"top cause: {causes[0][1]}" if causes else "no cause has evidence yet"))
        nodes = hosts or sorted({e.host for e in present if e.host})
        out.append(Diagnosis(ID, TITLE, "fail" if conf != "low" else "warn",
                             f"[{ls.label}] NCCL used NET/Socket although InfiniBand/RoCE is present"
                             + (f" on {', '.join(nodes)}" if nodes else ""), conf, why,
                             FIX + (" Causes, most likely first: " + " ".join(ranked) if ranked else ""),
                             nodes=nodes, evidence=ev[:12], missing=missing,
                             pairs=sorted({f"{c.src}->{c.dst}" for c in sock})[:16],
                             figures={"causes": [t for _, t, _ in causes]}))
    return out
