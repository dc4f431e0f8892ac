"""NCCL log facts -> findings: which transport carried the traffic, and what went wrong.

Pure: :class:`~nccldiag.nccl.facts.NcclLogFacts` in, findings out. Used by
``nccldiag log`` and by the probe on the logs of each setting. The judgement
rests on the channel lines (what NCCL did) rather than on the environment
(what was asked), and every finding carries the log lines it came from and the
fix known for that failure.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from nccldiag import rx
from nccldiag.nccl import grammar
from nccldiag.model.findings import Finding, fail, ok, skip, warn
from nccldiag.nccl.facts import (
    ERROR_RESULTS, NET_IB, NET_IB_GDR, NET_SOCKET, RESULT_NAMES, RESULT_TEXT, CategoryStats, Channel, Loc,
    NcclLogFacts, NetDevice, Warn,
)

AREA = "nccl"
MAX_EVIDENCE = 8

FIX_SOCKET = (
    "Make IB/RoCE usable for NCCL on every node: 'ibstat' shows the ports Active/LinkUp; libibverbs1 and rdma-core "
    "are installed (inside the container too); containers get /dev/infiniband (--device=/dev/infiniband, "
    "--cap-add IPC_LOCK) and --ulimit memlock=-1; NCCL_IB_DISABLE is not set and NCCL_NET is not Socket. "
    "Set NCCL_NET=IB (or the plugin's name) to fail instead of falling back silently.")
FIX_GDR = (
    "Load the GPUDirect RDMA module on every node: 'sudo modprobe nvidia-peermem' (make it persistent), or use "
    "DMA-BUF (open kernel driver and a recent kernel). Check NCCL_NET_GDR_LEVEL is not LOC and that GPU and NIC "
    "share a PCIe switch ('nvidia-smi topo -m': PIX/PXB).")
FIX_VERSION = ("Use the same NCCL build on every node (same container image or wheel); "
               "check which libnccl each rank loads.")
FIX_WATCHDOG = (
    "A collective hung until the watchdog fired: a rank stopped or the network between ranks failed. Look for NCCL "
    "WARN lines of the other ranks, find the lagging rank with TORCH_NCCL_DUMP_ON_TIMEOUT=1 (flight recorder) or "
    "py-spy dump, and run 'nccldiag probe' on these hosts. Lower init_process_group(timeout=...) to see hangs sooner.")
FIX_SHM = (
    "Give the container a larger /dev/shm: docker run --shm-size=1g (or --ipc=host) --ulimit memlock=-1; in "
    "Kubernetes mount an emptyDir with medium: Memory on /dev/shm; with systemd-logind set RemoveIPC=no. "
    "Workaround: NCCL_SHM_DISABLE=1.")
FIX_MEMLOCK = (
    "Raise the locked-memory limit where the job runs: '* soft memlock unlimited' and '* hard memlock unlimited' in "
    "/etc/security/limits.conf (log in again), LimitMEMLOCK=infinity for slurmd/containerd, docker --ulimit "
    "memlock=-1. Check with 'ulimit -l' inside the same launcher (mpirun ... bash -c 'ulimit -l').")
FIX_MODIFY_QP = (
    "The queue pair could not be connected: on RoCE check the GID table ('show_gids') and that the peer is routable "
    "on that subnet; with NCCL >= 2.21 do not set NCCL_IB_GID_INDEX; check 'ibstat' and run ib_write_bw "
    "between the nodes.")
FIX_IB_COMPLETION = (
    "The fabric dropped or refused packets (retry exceeded): check port counters and cables ('ibstat', 'rdma statistic', "
    "'perfquery'), run ib_write_bw between the hosts, and only then tune NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT.")
FIX_DUP_GPU = (
    "Give each rank its own GPU: call torch.cuda.set_device(LOCAL_RANK) before init_process_group, and check "
    "CUDA_VISIBLE_DEVICES per rank. NCCL >= 2.30 allows sharing only with NCCL_MULTI_RANK_GPU_ENABLE=1 (experimental).")
FIX_PLUGIN = (
    "An external net plugin (HPC-X libnccl-net.so, IBext) ignores NCCL_IB_DISABLE. To force sockets set NCCL_NET=Socket "
    "or NCCL_NET_PLUGIN=none.")
FIX_SOCKET_CONNECT = (
    "Check that every node can reach every other on the NCCL interface: firewalls must allow the rendezvous port and "
    "the ephemeral range (net.ipv4.ip_local_port_range) both ways (nc -zv); set NCCL_SOCKET_IFNAME to the same "
    "routable interface on all nodes (exclude docker/veth/virbr).")
FIX_REMOTE_CLOSED = (
    "The peer process closed the connection, usually because it failed first: read the log of the host named in the "
    "message for its first WARN.")
FIX_IFNAME = ("NCCL found no usable socket interface: set NCCL_SOCKET_IFNAME to an interface that exists and is up on "
              "every node ('ip -br addr'), e.g. NCCL_SOCKET_IFNAME=ens5.")
FIX_NVLS = (
    "NVLink SHARP (NVLS) failed: check Fabric Manager ('systemctl status nvidia-fabricmanager', 'nvidia-smi -q' "
    "Fabric state); after a Fabric Manager restart reset the GPUs or reboot. Workaround: NCCL_NVLS_ENABLE=0.")
FIX_CUDA = "Read the CUDA error: check 'nvidia-smi', dmesg for Xid errors, and that the driver and CUDA runtime match."
FIX_P2P_NVLINK = "NVLink-connected GPUs refused P2P: check 'nvidia-smi nvlink -s' and 'nvidia-smi topo -p2p n'; reboot or reset the GPUs."
FIX_ERROR = "Read the first NCCL WARN of the failing rank and its call chain; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV."


# --------------------------------------------------------------------------- evidence and wording


def _cite(at: Loc, text: str) -> str:
    return at.cite(text)


def _warn_evidence(ws: Iterable[Warn], limit: int = MAX_EVIDENCE) -> List[str]:
    out: List[str] = []
    for w in ws:
        out.append(_cite(w.at, w.text))
        for s in w.chain[:2]:
            out.append(_cite(s.at, s.text))
        if len(out) >= limit:
            break
    return out[:limit]


def _host(locs: Iterable[Loc]) -> Optional[str]:
    hosts = {a.host for a in locs if a.host}
    return hosts.pop() if len(hosts) == 1 else None


def _where(locs: Iterable[Loc]) -> str:
    hosts = sorted({a.host for a in locs if a.host})
    if not hosts:
        return ""
    return " on " + (", ".join(hosts) if len(hosts) <= 4 else f"{len(hosts)} hosts")


def _result(w: Warn) -> str:
    r = w.result
    if r is None or r not in ERROR_RESULTS:
        return ""
    return f" ({RESULT_NAMES[r]}: {RESULT_TEXT[r]})"


def _stats(facts: NcclLogFacts, pred) -> List[CategoryStats]:
    """The channel tallies whose category satisfies ``pred``, as the parser counted them (every line)."""
    if facts.channel_stats:
        return [st for cat, st in facts.channel_stats.items() if pred(cat)]
    out: "OrderedDict[str, CategoryStats]" = OrderedDict()  # facts assembled by hand
    for c in facts.channels:
        if not pred(c.category):
            continue
        st = out.setdefault(c.category, CategoryStats(c.category))
        st.lines += 1
        if len(st.first) < 4:
            st.first.append(c)
        if c.at.host and c.at.host not in st.hosts:
            st.hosts.append(c.at.host)
        if c.dst is not None and f"{c.src}->{c.dst}" not in st.pairs:
            st.pairs.append(f"{c.src}->{c.dst}")
        if c.net and c.net not in st.nets:
            st.nets.append(c.net)
    return list(out.values())


def _lines(stats: Sequence[CategoryStats]) -> int:
    return sum(st.lines for st in stats)


def _first(stats: Sequence[CategoryStats], n: int) -> List[Channel]:
    return [c for st in stats for c in st.first][:n]


def _hosts_of(stats: Sequence[CategoryStats]) -> List[str]:
    return sorted({h for st in stats for h in st.hosts})


def _on(hosts: Sequence[str]) -> str:
    if not hosts:
        return ""
    return " on " + (", ".join(hosts) if len(hosts) <= 4 else f"{len(hosts)} hosts")


def _one(hosts: Sequence[str]) -> Optional[str]:
    return hosts[0] if len(hosts) == 1 else None


def _by_kind(facts: NcclLogFacts, *kinds: str) -> List[Warn]:
    return [w for w in facts.warns if w.kind in kinds]


def _norm_env(value: str) -> str:
    v = str(value).strip()
    return v[:-1] if re.fullmatch(r"-?\d+\.", v) else v


# --------------------------------------------------------------------------- checks


def separate_runs(facts: NcclLogFacts) -> bool:
    """Whether the logs hold several runs: more than one version line, each printed by a rank 0 of its own.

    NCCL prints its version on rank 0 only, so a second rank-0 version line starts another run (its world size,
    where a comm, Init or ring-order line gave it, is on the line: ``VersionLine.world``).
    """
    return len(facts.versions) > 1 and all(v.rank0 for v in facts.versions)


def versions_differ(facts: NcclLogFacts) -> bool:
    """Whether ranks of one run had different NCCL versions: a ``Mismatched NCCL version`` WARN, or more than one
    version that separate runs do not explain. ``nccl.version`` fails on it, and so does the versions diagnosis."""
    versions = facts.summary.versions if facts.summary else []
    return bool(_by_kind(facts, "version_mismatch")) or (len(versions) > 1 and not separate_runs(facts))


def _version(facts: NcclLogFacts) -> List[Finding]:
    mism = _by_kind(facts, "version_mismatch")
    versions = facts.summary.versions if facts.summary else []
    if not versions_differ(facts) and len(versions) > 1:
        # NCCL prints its version on rank 0 only: one rank 0 per version line means separate runs.
        runs = "; ".join(f"{v.version} ({v.world} ranks)" if v.world else v.version for v in facts.versions[:6])
        return [ok(AREA, "nccl.version",
                   f"NCCL {', '.join(versions)}: {len(facts.versions)} separate runs in these logs, each version "
                   f"printed by its own rank 0 ({runs})", actual=versions,
                   evidence=[_cite(v.at, v.text) for v in facts.versions][:MAX_EVIDENCE])]
    if mism or len(versions) > 1:
        by_version: "OrderedDict[str, List[str]]" = OrderedDict()
        for v in facts.versions:
            by_version.setdefault(v.version, [])
            if v.at.proc and v.at.proc not in by_version[v.version]:
                by_version[v.version].append(v.at.proc)
        detail = "; ".join(f"{v} on {', '.join(p) or '?'}" for v, p in by_version.items())
        ev = [_cite(v.at, v.text) for v in facts.versions][:MAX_EVIDENCE - len(mism)] + _warn_evidence(mism, 4)
        return [fail(AREA, "nccl.version", f"NCCL version mismatch across ranks: {detail or mism[0].message}",
                     actual=versions, expected="one NCCL version", evidence=ev, fix=FIX_VERSION)]
    if versions:
        procs = {v.at.proc for v in facts.versions if v.at.proc}
        return [ok(AREA, "nccl.version", f"NCCL {versions[0]} (printed by {len(procs) or 1} process(es))",
                   actual=versions[0], evidence=[_cite(facts.versions[0].at, facts.versions[0].text)])]
    return []


# Interfaces that exist on one host only: container/bridge/overlay plumbing and loopback.
_VIRTUAL_IF = rx.compile(r"^(?:veth|docker|br-|virbr|cni|flannel|lo$)")


def _link_local(address: Optional[str]) -> bool:
    a = (address or "").split("<", 1)[0].split("%", 1)[0].strip("[]").lower()
    return a.startswith("fe80:") or a.startswith("169.254.")


def unroutable(dev: NetDevice) -> Optional[str]:
    """Why a socket interface cannot carry inter-node traffic, or None."""
    if _VIRTUAL_IF.match(dev.name):
        return "loopback" if dev.name == "lo" else "a host-local virtual interface"
    if _link_local(dev.address):
        return "its only address is link-local"
    return None


def _socket_lines(facts: NcclLogFacts):
    """(interfaces, at, text, carries) of every Bootstrap and NET/Socket line kept.

    ``carries(i)``: whether the i-th interface carries traffic. NET/Socket spreads its connections over the
    interfaces it lists, each a device of its own: where the channel lines name the devices they go through
    (``via NET/Socket/<dev>``), those carry it; without such lines, any may. The bootstrap listed several in older
    NCCL but connects over the first.
    """
    used = {c.net_dev for c in facts.channels if (c.net or "").lower() == "socket" and c.net_dev is not None}
    for b in facts.bootstrap:
        yield b.interfaces, b.at, b.text, (lambda i: i == 0)
    for n in facts.nets:
        if n.net.lower().startswith("socket"):
            yield n.devices, n.at, n.text, ((lambda i: i in used) if used else (lambda i: True))


def _unroutable_socket_devices(facts: NcclLogFacts):
    """[(device, (at, text), carries traffic?)] for every unroutable Bootstrap / NET/Socket interface."""
    out = []
    for devs, at, text, carries in _socket_lines(facts):
        for i, d in enumerate(devs):
            if unroutable(d):
                out.append((d, (at, text), carries(i)))
    return out


def _ifname_fix(facts: NcclLogFacts) -> str:
    good = sorted({d.name for devs, _, _, _ in _socket_lines(facts) for d in devs if not unroutable(d)})
    name = good[0] if good else "<the routable data interface, e.g. ens5>"
    return (f"Set NCCL_SOCKET_IFNAME={name} (the interface that reaches the other nodes, the same on every node; "
            "'ip -br addr' lists them) so NCCL skips docker/veth/bridge/loopback and link-local-only interfaces.")


def _single_node(facts: NcclLogFacts) -> bool:
    """Known to be one node: communicators of one node, or an nccl-tests run whose ranks all name one host."""
    if any((c.nnodes or 0) > 1 for c in facts.comms):
        return False
    if facts.comms and all(c.nnodes == 1 for c in facts.comms):
        return True
    hosts = {h for r in list(facts.nccl_tests) + list(facts.nccl_tests_no_result) for h in r.hosts}
    return len(hosts) == 1 and len({p.host for p in facts.procs} - hosts) == 0


def _multi_node(facts: NcclLogFacts) -> bool:
    """Known to span nodes: a communicator of several nodes, a connection over the network (a ``[send]`` or
    ``[receive] via NET/...`` line is itself the evidence), or processes on several hosts of one run. Hosts of
    separate runs pasted into one file are not pooled: two single-host runs are not a multi-node one."""
    if any((c.nnodes or 0) > 1 for c in facts.comms):
        return True
    if any(st.lines and (cat.startswith("NET/") or cat == "CollNet") for cat, st in facts.channel_stats.items()) or \
            any(c.transport in ("NET", "COLLNET") for c in facts.channels[:1000]):
        return True
    return len({p.host for p in facts.procs}) > 1 and not separate_runs(facts)


def _socket_ifs(facts: NcclLogFacts) -> List[Finding]:
    bad = _unroutable_socket_devices(facts)
    if not bad:
        return []
    names: "OrderedDict[str, str]" = OrderedDict()
    for d, _, _ in bad:
        names.setdefault(d.name, unroutable(d) or "")
    what = "; ".join(f"{n} ({why})" for n, why in names.items())
    hosts = sorted({at.host for _, (at, _), _ in bad if at.host})
    ev: List[str] = []
    for _, (at, text), _ in bad:
        line = _cite(at, text)
        if line not in ev:
            ev.append(line)
    # A failure where such an interface carries traffic between nodes; listed beside a good first bootstrap
    # interface, or in a single-node run, it is a warning.
    if _single_node(facts) and not any(c.transport == "NET" for c in facts.channels[:1000]):
        # one node and nothing over the network: loopback or a bridge carries what it needs to
        return [ok(AREA, "nccl.socket_if", f"single-node run: NCCL's socket interfaces are {what}, which is fine "
                   f"within one node{_on(hosts)}", actual=sorted(names), evidence=ev[:2], host=_one(hosts))]
    mk = fail if _multi_node(facts) and any(c for _, _, c in bad) else warn
    return [mk(AREA, "nccl.socket_if",
               f"NCCL's bootstrap/socket interfaces include {what}: it cannot carry traffic between nodes"
               f"{_on(hosts)}", actual=sorted(names), expected="a routable interface",
               evidence=ev[:MAX_EVIDENCE], fix=_ifname_fix(facts), host=_one(hosts))]


def _reasons_for_socket(facts: NcclLogFacts) -> List[str]:
    ev = [_cite(n.at, n.text) for n in facts.notes if n.kind in ("ib_no_device", "ibverbs_missing")][:2]
    ev += [_cite(e.at, e.text) for e in facts.env if e.name in ("NCCL_IB_DISABLE", "NCCL_NET", "NCCL_NET_PLUGIN")][:2]
    ev += [_cite(p.at, p.text) for p in facts.plugins][:2]
    return ev


def _transports(facts: NcclLogFacts) -> List[Finding]:
    """An overview: which transports the channel lines show, overall and how many rank pairs."""
    s = facts.summary
    if s is None or not s.transports:
        return []
    per_cat: Dict[str, int] = {}
    for p in s.pairs:
        for c in p.categories:
            per_cat[c] = per_cat.get(c, 0) + 1
    parts = [f"{c} ({per_cat[c]} pair{'s' if per_cat[c] != 1 else ''})" if c in per_cat else c for c in s.transports]
    ev = []
    for cat in s.transports:
        first = _first(_stats(facts, lambda c, cat=cat: c == cat), 1)
        if first:
            ev.append(_cite(first[0].at, first[0].text))
    return [ok(AREA, "nccl.transports", "Transports used: " + ", ".join(parts), actual=s.transports, evidence=ev)]


def _network(facts: NcclLogFacts, require_ib: bool, expected_env: Mapping[str, str]) -> List[Finding]:
    out: List[Finding] = []
    chosen = facts.summary.networks if facts.summary else []
    want = expected_env.get("NCCL_NET")
    if want:
        wrong = [n for n in facts.networks if n.name.lower() != str(want).lower()]
        if wrong:
            out.append(fail(AREA, "nccl.network", f"NCCL used network {wrong[0].name}, NCCL_NET asked for {want}",
                            actual=chosen, expected=want, evidence=[_cite(n.at, n.text) for n in wrong][:MAX_EVIDENCE],
                            fix="Check that the requested network's library/plugin loads on every node.",
                            host=_host(n.at for n in wrong)))
    net_st = _stats(facts, lambda c: c.startswith("NET/"))
    if net_st:
        sock = [st for st in net_st if st.category == NET_SOCKET]
        ib = [st for st in net_st if st.category in (NET_IB, NET_IB_GDR)]
        names = sorted({n for st in ib for n in st.nets} or {"?"})
        n_sock, n_ib = _lines(sock), _lines(ib)
        bad_ifs = _unroutable_socket_devices(facts)
        if sock and not ib:
            msg = (f"NCCL fell back to NET/Socket: {n_sock} inter-node connection(s) over TCP sockets"
                   f"{_on(_hosts_of(sock))}, none over InfiniBand/RoCE")
            ev = [_cite(c.at, c.text) for c in _first(sock, 3)] + _reasons_for_socket(facts)
            fix = FIX_SOCKET
            if bad_ifs:
                names_bad = ", ".join(sorted({d.name for d, _, _ in bad_ifs}))
                msg += f"; the socket interface {names_bad} cannot carry inter-node traffic"
                ev = [_cite(at, text) for _, (at, text), _ in bad_ifs[:2]] + ev
                fix = _ifname_fix(facts) + " " + FIX_SOCKET
            mk = fail if require_ib else warn
            out.append(mk(AREA, "nccl.network", msg, actual=NET_SOCKET, expected=NET_IB if require_ib else None,
                          evidence=ev[:MAX_EVIDENCE], fix=fix, host=_one(_hosts_of(sock))))
        elif sock and ib:
            pairs = sorted({p for st in sock for p in st.pairs})
            out.append((fail if require_ib else warn)(
                AREA, "nccl.network",
                f"Mixed networks: {n_sock} connection(s) over NET/Socket (pairs {', '.join(pairs[:8])}) "
                f"next to {n_ib} over NET/{'/'.join(names)}",
                actual=sorted(st.category for st in net_st), expected=NET_IB,
                evidence=[_cite(c.at, c.text) for c in _first(sock, 4) + _first(ib, 2)], fix=FIX_SOCKET))
        elif ib:
            first = _first(ib, 1)[0]
            out.append(ok(AREA, "nccl.network",
                          f"Inter-node traffic used NET/{'/'.join(names)} ({n_ib} connection line(s))",
                          actual=NET_IB, evidence=[_cite(first.at, first.text)]))
        else:
            others = sorted(st.category for st in net_st)
            first = _first(net_st, 1)[0]
            out.append((fail if require_ib else ok)(
                AREA, "nccl.network", f"Inter-node traffic used {', '.join(others)}", actual=others,
                expected=NET_IB if require_ib else None, evidence=[_cite(first.at, first.text)],
                fix=FIX_SOCKET if require_ib else ""))
    elif chosen:
        ib_like = [n for n in chosen if n.lower().startswith("ib")]
        first = facts.networks[0]
        if require_ib and not ib_like:
            out.append(fail(AREA, "nccl.network", f"NCCL picked network {', '.join(chosen)}, not InfiniBand/RoCE",
                            actual=chosen, expected="IB", fix=FIX_SOCKET,
                            evidence=([_cite(first.at, first.text)] + _reasons_for_socket(facts))[:MAX_EVIDENCE]))
        else:
            out.append(ok(AREA, "nccl.network",
                          f"NCCL picked network {', '.join(chosen)} (no inter-node connection lines in the logs)",
                          actual=chosen, evidence=[_cite(first.at, first.text)]))
    elif require_ib:
        out.append(skip(AREA, "nccl.network", "No 'Using network' or NET connection lines in the logs "
                                              "(single node, or NCCL_DEBUG was not INFO)"))
    return out


def _gdrdma(facts: NcclLogFacts) -> List[Finding]:
    ib = _stats(facts, lambda c: c in (NET_IB, NET_IB_GDR))
    if not ib:
        return []
    without = [st for st in ib if st.category == NET_IB]
    n_ib, n_without = _lines(ib), _lines(without)
    disabled = [g for g in facts.gdr if not g.enabled]
    reasons = sorted({g.reason for g in disabled if g.reason})
    why = f" (NCCL: {'; '.join(reasons)})" if reasons else ""
    ev = [_cite(c.at, c.text) for c in _first(without, 4)] + [_cite(g.at, g.text) for g in disabled[:3]]
    hosts = _hosts_of(without)
    if n_without == n_ib:
        return [warn(AREA, "nccl.gdrdma",
                     f"GPUDirect RDMA not used on NET/IB: none of {n_ib} IB connection line(s) has /GDRDMA"
                     f"{_on(hosts)}{why}; data is staged through host memory",
                     actual="no GDRDMA", expected="/GDRDMA", evidence=ev, fix=FIX_GDR, host=_one(hosts))]
    if n_without:
        return [warn(AREA, "nccl.gdrdma",
                     f"GPUDirect RDMA used on only {n_ib - n_without} of {n_ib} IB connection line(s): "
                     f"missing{' on ' + ', '.join(hosts) if hosts else ''}{why}",
                     actual=f"{n_ib - n_without}/{n_ib}", expected="all", evidence=ev, fix=FIX_GDR,
                     host=_one(hosts))]
    first = _first(ib, 1)[0]
    return [ok(AREA, "nccl.gdrdma", f"GPUDirect RDMA used on all {n_ib} IB connection line(s)",
               actual="GDRDMA", evidence=[_cite(first.at, first.text)])]


def _watchdog(facts: NcclLogFacts) -> List[Finding]:
    groups: "OrderedDict[str, list]" = OrderedDict()
    for w in facts.watchdogs:
        groups.setdefault(w.op_type or "?", []).append(w)
    out = []
    for op, ws in groups.items():
        first = ws[0]
        ranks = sorted({w.rank for w in ws if w.rank is not None})
        rank_s = f" on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}" if ranks else ""
        timing = ""
        if first.ran_for_ms is not None:
            timing = f": ran {first.ran_for_ms} ms"
            if first.timeout_ms is not None:
                timing += f" against a timeout of {first.timeout_ms} ms"
        seq = f" (SeqNum {first.seq})" if first.seq is not None else ""
        out.append(fail(AREA, "nccl.watchdog", f"Watchdog timeout in {op}{rank_s}{seq}{timing}",
                        actual=first.ran_for_ms, expected=first.timeout_ms,
                        evidence=[_cite(w.at, w.text) for w in ws][:MAX_EVIDENCE], fix=FIX_WATCHDOG,
                        host=_host(w.at for w in ws)))
    return out


_SHM_SIZE = rx.compile(r"to (\d+) bytes|\(size (\d+)\)")


def _shm(facts: NcclLogFacts) -> List[Finding]:
    ws = _by_kind(facts, "shm")
    if not ws:
        return []
    sizes = sorted({int(a or b) for w in ws for a, b in _SHM_SIZE.findall(w.message)})
    size = f" of {sizes[-1]} bytes" if sizes else ""
    return [fail(AREA, "nccl.shm",
                 f"/dev/shm too small: NCCL could not create its shared-memory segment{size}{_where(w.at for w in ws)}"
                 f"{_result(ws[0])}", actual=ws[0].message, expected="room in /dev/shm",
                 evidence=_warn_evidence(ws), fix=FIX_SHM, host=_host(w.at for w in ws))]


_MEMLOCK_FNS = {"ibv_reg_mr", "ibv_reg_mr_iova2", "ibv_reg_dmabuf_mr", "ibv_create_qp", "ibv_create_cq", "ibv_alloc_pd"}


def _ibv(facts: NcclLogFacts) -> List[Finding]:
    out = []
    ws = _by_kind(facts, "ibv")
    memlock = [w for w in ws if (w.detail.get("fn") in _MEMLOCK_FNS or "Cannot allocate memory" in w.message)
               and "Operation not supported" not in w.message]  # a call the stack lacks, not a limit
    modify = [w for w in ws if w.detail.get("fn") == "ibv_modify_qp"]
    other = [w for w in ws if w not in memlock and w not in modify]
    for group, what, fix in ((memlock, "memlock limit", FIX_MEMLOCK), (modify, "RoCE GID or routing", FIX_MODIFY_QP),
                             (other, "IB verbs", FIX_ERROR)):
        if not group:
            continue
        fns = sorted({w.detail.get("fn", "ibv call") for w in group})
        err = group[0].detail.get("err")
        out.append(fail(AREA, "nccl.ib_verbs",
                        f"{', '.join(fns)} failed{' (' + err + ')' if err else ''}: {what}"
                        f"{_where(w.at for w in group)}{_result(group[0])}",
                        actual=group[0].message, evidence=_warn_evidence(group), fix=fix, host=_host(w.at for w in group)))
    cq = _by_kind(facts, "ib_completion")
    if cq:
        st = sorted({w.detail.get("status", "?") for w in cq})
        out.append(fail(AREA, "nccl.ib_completion", f"IB completion error status={', '.join(st)}{_where(w.at for w in cq)}"
                        + (" (12 = transport retry counter exceeded)" if "12" in st else ""),
                        actual=st, evidence=_warn_evidence(cq), fix=FIX_IB_COMPLETION, host=_host(w.at for w in cq)))
    return out


def _simple(facts: NcclLogFacts, kinds: Sequence[str], check: str, title: str, fix: str) -> List[Finding]:
    ws = _by_kind(facts, *kinds)
    if not ws:
        return []
    msg = f"{title}{_where(w.at for w in ws)}: {ws[0].message}{_result(ws[0])}"
    if len(ws) > 1:
        msg += f" (and {len(ws) - 1} more)"
    return [fail(AREA, check, msg, actual=ws[0].message, evidence=_warn_evidence(ws), fix=fix,
                 host=_host(w.at for w in ws))]


def _shared_bus_id(facts: NcclLogFacts) -> List[Finding]:
    """Two ranks of one communicator whose 'Init START/COMPLETE' lines name one host and one busId: NCCL's
    'Duplicate GPU detected' (init.cc checks hostHash and busId of every pair of ranks), read from the INFO lines
    when the WARN is not in the text. NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL 2.30) allows it."""
    if any(e.name == "NCCL_MULTI_RANK_GPU_ENABLE" and _norm_env(e.value) == "1" for e in facts.env):
        return []
    seen: Dict[Tuple[str, str, str], Any] = {}
    for e in facts.inits:
        # a host name redacted before posting ('node-xxx', '<hostname>') is shared by several machines, whose GPUs
        # of one index have one busId: no sign of one machine
        if not (e.at.host and e.comm_id and e.bus_id) or grammar.anonymised_host(e.at.host):
            continue
        key = (e.at.host, e.comm_id, e.bus_id.lower())
        first = seen.setdefault(key, e)
        # two processes of one machine have two pids; one pid under one host name is two machines whose containers
        # number their processes alike (or share a host name), each rank on its own GPU
        if first.rank != e.rank and first.at.pid is not None and e.at.pid is not None and first.at.pid != e.at.pid:
            return [fail(AREA, "nccl.duplicate_gpu",
                         f"Duplicate GPU: two ranks on one GPU on {e.at.host}: rank {first.rank} and rank {e.rank} of "
                         f"communicator {e.comm_id} both on busId {e.bus_id}", actual=e.bus_id,
                         evidence=[_cite(first.at, first.text), _cite(e.at, e.text)], fix=FIX_DUP_GPU,
                         host=e.at.host)]
    return []


def _plugin(facts: NcclLogFacts, expected_env: Mapping[str, str]) -> List[Finding]:
    ib_disable = expected_env.get("NCCL_IB_DISABLE")
    echoed = [e for e in facts.env if e.name == "NCCL_IB_DISABLE"]
    if ib_disable is None and echoed:
        ib_disable = echoed[-1].value
    if _norm_env(ib_disable or "0") != "1":
        return []
    ext_nets = [n for n in facts.networks if n.name.lower().startswith("ibext") or "sharp" in n.name.lower()]
    net_st = _stats(facts, lambda c: c.startswith("NET/"))
    ext_names = sorted({n for st in net_st for n in st.nets if n.lower().startswith("ibext")})
    ext_ch = [c for st in net_st for c in st.first if c.net and c.net.lower().startswith("ibext")]
    if not ext_nets and not ext_names:
        return []
    ev = [_cite(n.at, n.text) for n in ext_nets[:2]] + [_cite(c.at, c.text) for c in ext_ch[:2]]
    ev += [_cite(e.at, e.text) for e in echoed[:1]] + [_cite(p.at, p.text) for p in facts.plugins[:2]]
    return [warn(AREA, "nccl.net_plugin",
                 "External net plugin ignores NCCL_IB_DISABLE=1: NCCL still used "
                 f"{(ext_nets[0].name if ext_nets else ext_names[0])} instead of sockets",
                 actual=ext_nets[0].name if ext_nets else ext_names[0], expected="Socket", evidence=ev[:MAX_EVIDENCE],
                 fix=FIX_PLUGIN)]


_SPECIFIC = {"duplicate_gpu", "version_mismatch", "shm", "ibv", "ib_completion", "nvls", "cuda", "no_interface",
             "socket_connect", "remote_closed", "proxy", "p2p_nvlink_disabled"}


def _other_errors(facts: NcclLogFacts, have_failure: bool) -> List[Finding]:
    out = []
    generic = [w for w in facts.warns if w.failure and w.kind not in _SPECIFIC]
    if generic:
        out.append(fail(AREA, "nccl.error", f"NCCL error{_where(w.at for w in generic)}: {generic[0].message}"
                        f"{_result(generic[0])}" + (f" (and {len(generic) - 1} more)" if len(generic) > 1 else ""),
                        actual=generic[0].result_name, evidence=_warn_evidence(generic), fix=FIX_ERROR,
                        host=_host(w.at for w in generic)))
    orphans = [o for o in facts.orphan_chains if o.failed]
    if orphans and not have_failure and not generic:
        names = sorted({RESULT_NAMES[o.result] for o in orphans if o.result is not None})
        ev = [_cite(s.at, s.text) for o in orphans for s in o.steps[:2]][:MAX_EVIDENCE]
        out.append(fail(AREA, "nccl.error",
                        f"NCCL returned {', '.join(names)}{_where(o.at for o in orphans)} (the WARN that explains it "
                        "is not in the log)", actual=names, evidence=ev, fix=FIX_ERROR, host=_host(o.at for o in orphans)))
    if facts.app_errors:
        a = facts.app_errors[0]
        out.append(fail(AREA, "nccl.app_error", f"{a.kind} reported an NCCL failure: {a.message}"
                        + (f" (and {len(facts.app_errors) - 1} more)" if len(facts.app_errors) > 1 else ""),
                        actual=a.message, evidence=[_cite(x.at, x.text) for x in facts.app_errors][:MAX_EVIDENCE],
                        fix=FIX_ERROR, host=_host(x.at for x in facts.app_errors)))
    notices = [w for w in facts.warns if not w.failure and w.kind not in HARMLESS_WARNS
               and not BENIGN_ASYNC.search(w.message)]
    if notices:
        out.append(warn(AREA, "nccl.warn", f"NCCL printed {len(notices)} WARN line(s) without an error result: "
                        f"{notices[0].message}", evidence=_warn_evidence(notices),
                        fix="Read the WARN lines; they often explain a slower fallback.",
                        host=_host(w.at for w in notices)))
    return out


# WARN lines NCCL prints on healthy runs: no libibverbs where IB is not used (a Socket or plugin network).
# no RDMA library on a node meant for sockets; aws-ofi-nccl's optional GIN plugin declining to start (NCCL runs its
# collectives without GIN); NCCL 2.25 declining to IPC-register a user buffer (it goes on with its own buffers)
HARMLESS_WARNS = frozenset({"ibverbs_missing", "gin_declined", "ipc_register_declined"})
# IB asynchronous events NCCL prints as WARNs that are the subnet manager's housekeeping or a port coming up
# (IBV_EVENT_CLIENT_REREGISTER, _LID_CHANGE, _SM_CHANGE, _PKEY_CHANGE, _PORT_ACTIVE): no fault on their own
BENIGN_ASYNC = rx.compile(r"Got async event\s*:\s*(?:client reregistration|LID change|SM change|P_?Key change|"
                          r"port active)\s*$", re.I)


def _init(facts: NcclLogFacts) -> List[Finding]:
    pending = []
    for p in facts.procs:
        for r in p.init_started:
            if r not in p.init_completed:
                pending.append((p, r))
    if not pending:
        done = [e for e in facts.inits if e.phase == "COMPLETE"]
        if done:
            return [ok(AREA, "nccl.init", f"Init COMPLETE on {len({(e.at.proc, e.rank) for e in done})} rank(s)",
                       evidence=[_cite(done[0].at, done[0].text)])]
        return []
    ev = [_cite(e.at, e.text) for e in facts.inits if e.phase == "START"
          and any(e.at.proc == p.name and e.rank == r for p, r in pending)]
    pending_procs = {p.name for p, _ in pending}
    setup = [c for c in facts.channels if c.at.proc in pending_procs][:1] or \
        [c for c in facts.connected if c.at.proc in pending_procs][:1]
    failed = any(w.failure for w in facts.warns) or facts.app_errors or facts.watchdogs
    if not setup and not failed:
        # the lines stop before these ranks set up a channel: an excerpt as often as a hang
        return [skip(AREA, "nccl.init", f"Init START without Init COMPLETE in these lines on {len(pending)} rank(s), "
                     "and they stop before any channel set-up: not judged (an excerpt?)", evidence=ev[:2],
                     host=_host(Loc("", 0, p.host) for p, _ in pending))]
    return [warn(AREA, "nccl.init", f"Init START without Init COMPLETE on {len(pending)} rank(s): "
                 + ", ".join(f"rank {r} ({p.name})" for p, r in pending[:6]),
                 evidence=ev[:MAX_EVIDENCE], fix="Initialisation hung or failed: see the WARN lines of these ranks.",
                 host=_host(Loc("", 0, p.host) for p, _ in pending))]


def _env(facts: NcclLogFacts, expected_env: Mapping[str, str]) -> List[Finding]:
    if not expected_env:
        return []
    seen = facts.env_values()
    bad, good, missing = [], [], []
    for key, want in expected_env.items():
        if key not in seen:
            missing.append(key)
            continue
        got = seen[key]
        (good if got == [_norm_env(want)] else bad).append((key, want, got))
    out = []
    if bad:
        ev = [_cite(e.at, e.text) for e in facts.env if e.name in {k for k, _, _ in bad}][:MAX_EVIDENCE]
        out.append(fail(AREA, "nccl.env", "NCCL read other values than intended: " + "; ".join(
            f"{k}={'/'.join(g)} (expected {w})" for k, w, g in bad), actual={k: g for k, _, g in bad},
            expected={k: w for k, w, _ in bad}, evidence=ev,
            fix="NCCL reads its environment once per process: pass the variable to every rank "
                "(mpirun -x, srun --export, torchrun env) and check /etc/nccl.conf and ~/.nccl.conf."))
    if good and not bad:
        msg = "NCCL echoed " + ", ".join(f"{k}={w}" for k, w, _ in good)
        if missing:
            msg += f"; not echoed: {', '.join(missing)}"
        out.append(ok(AREA, "nccl.env", msg, actual={k: g for k, _, g in good}))
    return out


def init_completed_everywhere(facts: NcclLogFacts) -> bool:
    """Whether every rank of the logs' communicators logged Init COMPLETE (an excerpt cut after init)."""
    def comm(e) -> object:  # each rank logs its own comm pointer; the commId is the communicator's
        return e.comm_id or e.nranks

    done = {(comm(e), e.rank) for e in facts.inits if e.phase == "COMPLETE"}
    if not done:
        return False
    sizes = {comm(e): e.nranks for e in facts.inits}
    return all(len({r for c, r in done if c == key}) >= n for key, n in sizes.items())


def judge(facts: NcclLogFacts, require_ib: bool = False,
                       expected_env: Optional[Mapping[str, str]] = None) -> List[Finding]:
    """Judge what the logs say about transports and failures.

    ``require_ib``: inter-node traffic must go over InfiniBand/RoCE (a Socket
    fallback fails instead of warning). ``expected_env``: the NCCL variables the
    run set (``{"NCCL_IB_DISABLE": "1"}``); echoed values that differ fail, and
    ``NCCL_NET`` / ``NCCL_IB_DISABLE`` feed the network and plugin checks.
    """
    env: Dict[str, str] = {k: _norm_env(v) for k, v in (expected_env or {}).items()}
    out: List[Finding] = []
    out += _version(facts)
    out += _transports(facts)
    out += _network(facts, require_ib, env)
    out += _socket_ifs(facts)
    out += _gdrdma(facts)
    out += _plugin(facts, env)
    out += _watchdog(facts)
    out += _shm(facts)
    out += _ibv(facts)
    dup = _simple(facts, ["duplicate_gpu"], "nccl.duplicate_gpu", "Duplicate GPU: two ranks on one GPU", FIX_DUP_GPU)
    out += dup or _shared_bus_id(facts)
    out += _simple(facts, ["no_interface"], "nccl.socket_ifname", "No usable socket interface", FIX_IFNAME)
    out += _simple(facts, ["socket_connect"], "nccl.socket_connect", "Socket connection failed", FIX_SOCKET_CONNECT)
    out += _simple(facts, ["remote_closed"], "nccl.remote_closed", "Connection closed by the remote peer",
                   FIX_REMOTE_CLOSED)
    out += _simple(facts, ["proxy"], "nccl.proxy", "NCCL proxy thread failed", FIX_SOCKET_CONNECT)
    out += _simple(facts, ["nvls"], "nccl.nvls", "NVLS (NVLink SHARP) setup failed", FIX_NVLS)
    out += _simple(facts, ["cuda"], "nccl.cuda", "CUDA call failed inside NCCL", FIX_CUDA)
    out += _simple(facts, ["p2p_nvlink_disabled"], "nccl.p2p_nvlink", "P2P disabled between NVLink GPUs", FIX_P2P_NVLINK)
    have_failure = any(f.status.value == "fail" for f in out)
    out += _other_errors(facts, have_failure)
    out += _init(facts)
    out += _env(facts, env)
    from nccldiag.benchmarks import checks as bench

    out += bench.judge(facts.nccl_tests, facts.perftests,
                       [] if init_completed_everywhere(facts) else facts.nccl_tests_no_result, facts.p2p_bandwidth)
    from nccldiag.nccl import ras_checks

    out += ras_checks.judge(facts.ras)
    return out
