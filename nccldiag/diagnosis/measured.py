"""Measured bandwidth against what the path allows: per probe setting, its best busbw and the expectation (pure).

The expectation is the line rate of the slowest segment (:mod:`nccldiag.diagnosis.expected`) or the site spec's
``[bandwidth]`` figure. The ``bandwidth-low`` cause reads these comparisons, and so do the summary's figures and
the P2P cause's workaround cost.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from nccldiag.diagnosis import expected
from nccldiag.diagnosis.inputs import Inputs, LogView, SettingView, peak


def used_ports(facts: LogView) -> Dict[str, List[str]]:
    """Per host, the HCA ports NCCL's ``NET/IB : Using`` lines name (``mlx5_0:1``)."""
    out: Dict[str, List[str]] = {}
    for n in facts.nets:
        if not n.net.lower().startswith("ib") or not n.at.host:
            continue
        for d in n.devices:
            name = f"{d.name}:{d.port or 1}"
            if name not in out.setdefault(n.at.host, []):
                out[n.at.host].append(name)
    return out


def setting_comparison(inp: Inputs, sr: SettingView) -> Optional[expected.Comparison]:
    """The best all_reduce (else any collective) point of one setting against what the nodes allow."""
    best = peak(sr, "all_reduce") or peak(sr)
    if best is None:
        return None
    coll, busbw, size = best
    so = sr.outcome
    if (getattr(so, "world_size", None) or len(getattr(so, "ranks", None) or {})) == 1:
        # nothing crosses a link: busbw is 0 by its formula, or the copy rate of one GPU
        return expected.Comparison(busbw, size, None, comparable=False, collective=coll,
                                   why_not="one rank: no data crosses between GPUs or nodes")
    backend = inp.probe.backend if inp.probe is not None else "nccl"
    lf = sr.log_facts
    network = None
    if lf is not None and lf.networks:
        network = lf.networks[0].name
    hosts = sorted({i.host for i in sr.outcome.ranks.values() if i.host}) or list(inp.hosts)
    exp = expected.expect(inp.node_facts, hosts, backend=backend, network=network,
                          used_ports=used_ports(lf) if lf is not None else None,
                          iface_speeds=inp.iface_speeds, ifnames=inp.ifnames)
    nvls = bool(lf is not None and lf.summary is not None and lf.summary.nvls_used)
    env = sr.setting.env
    off = [f"{k}=1" for k in ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE") if env.get(k) == "1"]
    if off:
        # intra-node traffic leaves NVLink/P2P for host memory or the network: no segment of the nodes' own
        return expected.Comparison(busbw, size, None, comparable=False, collective=coll,
                                   why_not=f"{' '.join(off)} moves intra-node traffic off its usual path")
    exp, floor = from_spec(inp.spec, sr.setting.name, len(hosts) > 1, exp)
    c = expected.compare(busbw, size, exp, len(hosts), algo=env.get("NCCL_ALGO"), nvls=nvls,
                         collective=coll, backend=backend, floor=floor)
    fallback = [f"{k}={env[k]}" for k in ("NCCL_IB_DISABLE", "NCCL_NET", "NCCL_NET_GDR_LEVEL")
                if k in env and (k != "NCCL_NET" or env[k].lower() == "socket")
                and (k != "NCCL_NET_GDR_LEVEL" or env[k].upper() == "LOC")]
    if c.comparable and fallback:
        c.comparable, c.why_not = False, f"a fallback path ({' '.join(fallback)}): shown, not judged"
    return c


def from_spec(spec, setting: str, multi: bool,
              derived: Optional[expected.Expectation]) -> Tuple[Optional[expected.Expectation], float]:
    """The expectation and the share below which busbw is low: the site spec's ``[bandwidth]`` figure and
    ``busbw_share`` where it gives them, else the figure derived from the nodes and :data:`expected.FLOOR`.

    The spec's figure replaces the derived one (shown beside it in the notes); the comparison's rules (size,
    two nodes without Ring, NVLS, fallback paths) stay the same.
    """
    from nccldiag.spec import model

    share = model.threshold(spec, "busbw_share")
    floor = share[0] if share is not None else expected.FLOOR
    got = model.expected_busbw(spec, setting, multi)
    if got is None:
        return derived, floor
    gbps, key, ref = got
    notes = ([f"derived from the nodes: {derived.gbps:.1f} GB/s, bottleneck {derived.bottleneck.text()}"]
             if derived else [])
    if share is not None:
        notes.append(f"low below {floor:.0%} of it (thresholds.busbw_share, {share[1]})")
    return expected.Expectation("inter-node" if multi else "intra-node",
                                [expected.Segment("site spec", gbps, f"bandwidth.{key} of {ref}")], notes), floor


def comparisons(inp: Inputs) -> Dict[str, expected.Comparison]:
    out: Dict[str, expected.Comparison] = {}
    for sr in inp.settings:
        c = setting_comparison(inp, sr)
        if c is not None:
            out[sr.setting.name] = c
    return out


def missing_commands(inp: Inputs, cmps: Sequence[expected.Comparison]) -> List[str]:
    out = []
    if any(c.expectation is None for c in cmps) and inp.check is None:
        out.append("nccldiag check HOSTFILE  (IB port rates, NVLink links, PCIe links: the expected bandwidth)")
    if any("NCCL_ALGO=Ring" in c.why_not for c in cmps):
        out.append("nccldiag probe HOSTFILE --setting NCCL_ALGO=Ring --max-bytes 1G")
    if any("latency-bound" in c.why_not for c in cmps):
        out.append("nccldiag probe HOSTFILE --max-bytes 1G")
    return out
