"""Wrong bootstrap or socket interface: loopback, docker/veth/bridge, link-local, or a host name that
resolves to loopback or not at all. Names the interface to use.

An interface that cannot leave the host is the fault where NCCL uses it: first in the bootstrap list, a device a
channel goes through ('via NET/Socket/<dev>'), or any listed one in a run that failed. Listed after a routable
first one, in a run that shows no failure, it is noted (info), not alarmed on: NCCL 2.4 to 2.7 listed every
interface it found, and such runs worked (pytorch/pytorch#68893). Loopback is fine for a job on one node: that the
job spans nodes is read from NCCL's own lines (nNodes, hosts, a channel over the network), the hosts checked, or a
pasted launcher's command line that starts it on several (``--nnodes=2``: pytorch/pytorch#52916)."""
from __future__ import annotations

import ipaddress
import os
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence, finding_evidence, log_evidence
from nccldiag.diagnosis.signs import VIRTUAL, log_failed

ID = "wrong-interface"
TITLE = "Wrong bootstrap or socket interface"
# NCCL connecting to a peer's loopback address ('socketStartConnect: Connect to 127.0.0.1<45069> failed'): NCCL
# advertises the address of its socket interface, so that peer's NCCL chose loopback (no other interface matched)
NCCL_LOOPBACK_CONNECT = rx.compile(r"Connect to \[?127\.\d+\.\d+\.\d+\]?<\d+>[^\n]{0,300}?failed")


def bad_address(addr: Optional[str]) -> Optional[str]:
    """Why an address cannot carry traffic between nodes (loopback, link-local), or None."""
    if not addr:
        return None
    a = addr.split("<")[0].split("%")[0].strip("[]")
    try:
        ip = ipaddress.ip_address(a)
    except ValueError:
        return None
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    return None


def bad_name(name: Optional[str]) -> Optional[str]:
    if not name:
        return None
    m = VIRTUAL.match(name)
    if not m:
        return None
    return "loopback" if name == "lo" else "a container/virtual bridge interface"


def suggest(inp: Inputs, host: str) -> Optional[str]:
    """The interface to use on ``host``: the probe's route to the first node, else the first up, routable one."""
    for name in (inp.ifnames.get(host), inp.route_ifnames.get(host)):
        if name and not bad_name(name):
            return name
    sysf = inp.facts(host, "system")
    for i in getattr(sysf, "interfaces", None) or []:
        if bad_name(i.name) or i.state not in ("UP", "UNKNOWN"):
            continue
        if any(not bad_address(a.split("/")[0]) and ":" not in a for a in i.addresses):
            return i.name
    return None


def _fix(inp: Inputs, hosts: List[str], names_bad: bool) -> str:
    names = {h: suggest(inp, h) for h in hosts}
    known = {h: n for h, n in names.items() if n}
    if known and len(set(known.values())) == 1:
        n = next(iter(known.values()))
        fix = f"Set NCCL_SOCKET_IFNAME={n} GLOO_SOCKET_IFNAME={n} in the jobs' environment."
    elif known:
        prefix = os.path.commonprefix(list(known.values()))
        fix = ("Set GLOO_SOCKET_IFNAME per node to the exact name: " + ", ".join(f"{n} on {h}" for h, n in known.items())
               + (f"; NCCL_SOCKET_IFNAME={prefix} matches them all as a prefix." if prefix else "."))
    else:
        fix = "Set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the data-network interface ('ip -br addr')."
    if names_bad:
        fix += " Map each host name to its data-network address in /etc/hosts or DNS (not 127.0.1.1)."
    return fix


def diagnose(inp: Inputs) -> List[Diagnosis]:
    ev: List[Evidence] = []
    listed: List[Evidence] = []
    good: List[str] = []  # the routable interfaces listed beside those
    nodes: List[str] = []
    named = inp.check_findings("system.hostname_") + [f for f in inp.all_findings()
                                                      if f.check == "probe.hostname_loopback"]
    for f in named:
        ev.extend(finding_evidence(f, 1))
        nodes.append(f.host or "")
    multi = len(inp.hosts) > 1
    launched, launch = signs.launch_nodes(inp)  # a pasted launcher's command line: the job's nodes
    for ls in inp.log_sets():
        nnodes = max([c.nnodes or 0 for c in ls.facts.comms] + [len({p.host for p in ls.facts.procs}), launched])
        if nnodes < 2 and not multi and not any(c.transport == "NET" for c in ls.facts.channels[:200]):
            continue  # one node (no channel over the network): loopback is fine
        used = {c.net_dev for c in ls.facts.channels if (c.net or "").lower() == "socket" and c.net_dev is not None}
        failed = log_failed(ls.facts)
        for b in list(ls.facts.bootstrap) + [n for n in ls.facts.nets if n.net.lower().startswith("socket")]:
            devs = b.interfaces if hasattr(b, "interfaces") else b.devices
            for i, d in enumerate(devs):
                why = bad_name(d.name) or bad_address(d.address)
                idx = d.index if d.index is not None else i
                # an interface listed after a routable first one carries traffic only where a channel uses it;
                # listed and unused, in a run that shows no failure, it is not the cause of anything
                if why and (idx == 0 or idx in used or failed):
                    ev.append(log_evidence(b.at, f"{b.text}  ({d.name} is {why})"))
                    nodes.append(b.at.host or "")
                elif why:
                    good.extend(x.name for x in devs if not (bad_name(x.name) or bad_address(x.address)))
                    listed.append(log_evidence(b.at, f"{b.text}  ({d.name} is {why}; no channel shown uses it)"))
    if ev and launch is not None and not multi:
        ev.extend(launch.evidence())  # what says the job spans nodes where the logs are of one
    loop = C.find(inp, NCCL_LOOPBACK_CONNECT, ("warn", "last-error", "error", "app"))[:2]
    for c in loop:
        ev.extend(c.evidence())  # NCCL advertises its socket interface's address: the peer's NCCL chose 'lo'
        nodes.append(c.host or "")
    if inp.probe is not None and multi:
        for host, given in sorted(inp.ifnames.items()):
            why = bad_name(given)
            if why:
                ev.append(Evidence("probe", f"the probe gave the ranks GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME={given} "
                                            f"({why})", "--ifname", host))
                nodes.append(host)
    if inp.probe is not None and inp.probe.backend == "gloo" and multi:
        for sr in inp.settings:
            seen: Dict[str, str] = {}
            for r, info in sorted(sr.outcome.ranks.items()):
                given = info.socket_ifname
                if given:  # gloo binds to the interface it was given, whatever routes to the peers
                    why = bad_name(given)
                    what = f"rank {r} was given GLOO_SOCKET_IFNAME={given} ({why})"
                else:
                    why = bad_name(info.interface) or bad_address(info.address)
                    what = f"rank {r} used {info.interface} {info.address} ({why})"
                if why and info.host and info.host not in seen:
                    seen[info.host] = why
                    ev.append(Evidence("probe", what, sr.setting.name, info.host))
                    nodes.append(info.host)
    nodes = [n for n in dict.fromkeys(nodes) if n]
    if not ev and listed:
        where = sorted({e.host for e in listed if e.host})
        return [Diagnosis(ID, TITLE, "info", "NCCL lists an interface that cannot leave the host beside a routable "
                          f"one{' on ' + ', '.join(where) if where else ''}; the run shows no failure",
                          "medium", "an interface listed after a routable first one carries traffic only where a "
                          "channel uses it: if the job fails or hangs connecting, it is the first suspect",
                          (f"If the job fails connecting: NCCL_SOCKET_IFNAME={good[0]} GLOO_SOCKET_IFNAME={good[0]}."
                           if good else _fix(inp, where, False)), nodes=where, evidence=listed[:4])]
    if not ev:
        return []
    direct = [e for e in ev if e.kind in ("log", "probe")]
    conf = "high" if direct else "medium"
    why = ("the interface NCCL/gloo actually used is one peers cannot reach" if direct else
           "the host name resolves to loopback or not at all, so gloo/NCCL would advertise an unreachable address "
           "unless an interface is named")
    missing = [] if direct or inp.probe is not None else ["nccldiag probe HOSTFILE  (shows the interface each rank used)"]
    # evidence of the host name alone: its category is the name's, the interface is how to live with it
    return [Diagnosis(ID, TITLE, "fail" if direct else "warn",
                      f"bootstrap/socket interface unusable between nodes on {', '.join(nodes) or 'the nodes'}"
                      + ("" if direct else ": the host name resolves to loopback or not at all")
                      + (": NCCL connected to a peer's loopback address (its NCCL used 'lo')" if loop else ""),
                      conf, why, _fix(inp, nodes, bool(named)), nodes=nodes, evidence=ev[:10], missing=missing,
                      category="" if direct else "hostname_resolution")]
