"""Benchmark outputs -> findings: nccl-tests' own verdict on its results, perftest's figure and warnings,\np2pBandwidthLatencyTest's peer copies against host-staged ones."""
from __future__ import annotations

from typing import List, Sequence

from nccldiag.benchmarks.nccltests import NcclTestsRun
from nccldiag.benchmarks.p2pbw import P2pBandwidth, compared_pairs, slow_pairs
from nccldiag.benchmarks.perftest import PerftestResult
from nccldiag.model.findings import Finding, fail, ok, skip, warn

AREA = "benchmark"

FIX_WRONG = (
    "Wrong results are corrupted data on some path, not slowness: find the path by re-running with "
    "NCCL_P2P_DISABLE=1, then NCCL_SHM_DISABLE=1, then NCCL_IB_DISABLE=1 (the run whose results turn right names "
    "the transport), and check the GPUs' ECC, row remapping and Xid events and the links' error counters "
    "(`nccldiag check` on the nodes involved)."
)
FIX_PERFTEST_WARNING = (
    "perftest says its figure may be off: fix what it names and run it again (for 'CPU Frequency is not max', set "
    "the governor to performance on both hosts: `cpupower frequency-set -g performance`, which `nccldiag check` "
    "reports under limits)."
)


def _name(run: NcclTestsRun) -> str:
    return run.name or "nccl-tests"


def _row_text(r) -> str:
    return (f"{r.size} B {r.dtype} {r.redop}: busbw {r.busbw_oop} / {r.busbw_ip} GB/s (out of place / in place), "
            f"#wrong {r.wrong}")


def judge_nccl_tests(run: NcclTestsRun) -> Finding:
    where = f"{_name(run)} in {run.source}" if run.source else _name(run)
    wrong = run.wrong_rows
    oob = run.out_of_bounds or 0
    peak = run.peak_busbw
    figures = (f"peak busbw {peak:.2f} GB/s" if peak is not None else "no busbw")
    if run.avg_busbw is not None:
        figures += f", average {run.avg_busbw:.2f} GB/s"
    sizes = f"{len(run.rows)} size{'s' if len(run.rows) != 1 else ''}"
    if wrong or oob:
        what = []
        if wrong:
            what.append(f"{len(wrong)} of {len(run.rows)} sizes returned wrong results (#wrong)")
        if oob:
            what.append(f"{oob} out-of-bounds values")
        return fail(AREA, "nccltests.result", f"{where}: {'; '.join(what)}", actual=f"{len(wrong)} sizes wrong, {oob} out of bounds",
                    expected="0 wrong, 0 out of bounds", evidence=[_row_text(r) for r in wrong[:8]], fix=FIX_WRONG)
    if not run.verified:
        return skip(AREA, "nccltests.result",
                    f"{where}: {sizes}, {figures}; results not verified (the run used -c 0: #wrong is N/A)",
                    actual="not verified", expected="verified results (-c 1, the default)",
                    fix="Run nccl-tests with result checking on (-c 1, the default) to know the data arrived intact.")
    return ok(AREA, "nccltests.result", f"{where}: {sizes}, {figures}, results verified (0 wrong, {oob} out of bounds)",
              actual=peak)


def judge_perftest(r: PerftestResult) -> List[Finding]:
    where = " ".join(x for x in (r.test, f"on {r.device}" if r.device else None,
                                  f"({r.link_type})" if r.link_type else None) if x) or "perftest"
    src = f" in {r.source}" if r.source else ""
    out: List[Finding] = []
    if r.rows:
        last = r.rows[-1]
        out.append(ok(AREA, "perftest.result",
                      f"{where}{src}: average {last['average']:g} {r.unit or ''} at {int(last['bytes'])} B "
                      f"(peak {last['peak']:g})", actual=last["average"]))
    elif r.latency_rows:
        last = r.latency_rows[-1]
        shown = ", ".join(f"{k} {v:g} us" for k, v in last.items() if k.startswith("t_"))
        out.append(ok(AREA, "perftest.result", f"{where}{src}: latency at {int(last['bytes'])} B: {shown}",
                      actual=last.get("t_typical") or last.get("t_avg")))
    if r.warnings:
        out.append(warn(AREA, "perftest.warning", f"{where}{src}: perftest warned that its figure may be off: "
                        f"{r.warnings[0]}", evidence=list(r.warnings[:5]), fix=FIX_PERFTEST_WARNING))
    return out


FIX_P2P_SLOW = (
    "Peer copies slower than copies staged through host memory take a path that does not forward P2P: an IOMMU in "
    "translated mode or PCIe ACS redirect sends them up to the root complex. Put the IOMMU in passthrough or off "
    "(iommu=pt, amd_iommu=off / intel_iommu=off, or IOMMU disabled in the BIOS) and disable ACS redirect on the "
    "bridges above the GPUs (BIOS, or 'setpci -s <bdf> ECAP_ACS+6.w=0000'); 'dmesg | grep -i -e AMD-Vi -e DMAR' "
    "shows the IOMMU's faults. Until then NCCL_P2P_DISABLE=1 avoids the path."
)


def judge_p2p_bandwidth(r: P2pBandwidth) -> Finding:
    """p2pBandwidthLatencyTest's matrices: a pair with peer access whose direct copies run at under half the
    bandwidth of the same copies staged through host memory is a P2P path that does not work."""
    where = "p2pBandwidthLatencyTest" + (f" in {r.source}" if r.source else "")
    slow = slow_pairs(r)
    if slow:
        shown = [f"GPU{p.src}->GPU{p.dst} {p.test}: {p.enabled:g} GB/s with P2P, {p.disabled:g} GB/s staged through "
                 "host memory" for p in slow]
        return fail(AREA, "benchmark.p2p_bandwidth",
                    f"{where}: {len(slow)} GPU pair(s) with peer access copy slower with P2P enabled than through "
                    f"host memory: {'; '.join(shown[:3])}",
                    actual={f"GPU{p.src}->GPU{p.dst} {p.test}": p.enabled for p in slow},
                    expected="P2P=Enabled bandwidth at least that of P2P=Disabled on pairs with peer access",
                    evidence=shown[:8], fix=FIX_P2P_SLOW)
    n = compared_pairs(r)
    if n:
        return ok(AREA, "benchmark.p2p_bandwidth",
                  f"{where}: P2P copies no slower than host-staged ones on the {n} figure(s) compared")
    if r.matrices:
        return ok(AREA, "benchmark.p2p_bandwidth",
                  f"{where}: bandwidth matrices read; no P2P=Enabled figure to compare with a P2P=Disabled one")
    peers = sum(1 for v in r.access.values() if v) or sum(1 for k, v in r.connectivity.items() if v and
                                                           k.split("->")[0] != k.split("->")[1])
    return skip(AREA, "benchmark.p2p_bandwidth", f"{where}: no bandwidth matrix in the text ({peers} GPU pair(s) "
                "with peer access listed): whether the peer copies run at speed cannot be told")


FIX_NO_RESULT = ("A run that stops after its header hangs in its first collective: run it again with NCCL_DEBUG=INFO "
                 "and give the output to 'nccldiag log'; NCCL_P2P_DISABLE=1 (P2P broken by PCIe ACS or the IOMMU) "
                 "and NCCL_IB_DISABLE=1 (the network) tell which path hangs.")


def judge_no_result(run: NcclTestsRun) -> Finding:
    """A run that printed its header and no result row: it stopped or hung before its first collective ended."""
    where = f"{_name(run)} in {run.source}" if run.source else _name(run)
    ranks = f" on {run.ranks} rank(s)" if run.ranks else ""
    return warn(AREA, "nccltests.result", f"{where}: started{ranks} but printed no result row: it stopped or hung "
                "before its first collective finished", actual="no result", expected="a result row per size",
                fix=FIX_NO_RESULT)


def judge_elided(run: NcclTestsRun) -> Finding:
    """A run whose rows the poster cut ('...' after the column titles): no row says nothing about a hang."""
    where = f"{_name(run)} in {run.source}" if run.source else _name(run)
    return skip(AREA, "nccltests.result", f"{where}: its result rows were cut from this text ('...' after the "
                "column titles): whether the run finished cannot be told", actual="rows elided",
                expected="a result row per size",
                fix="Give nccldiag the whole output of the run (nccl-tests prints one row per size and a summary).")


def judge(nccl_tests: Sequence[NcclTestsRun], perftests: Sequence[PerftestResult],
          no_result: Sequence[NcclTestsRun] = (), p2p: Sequence[P2pBandwidth] = ()) -> List[Finding]:
    """``no_result``: runs that printed a header and no row, and whose ranks did not all complete NCCL's init
    in the same logs (an excerpt cut after init is not a hang)."""
    out: List[Finding] = [judge_nccl_tests(run) for run in nccl_tests]
    out += [judge_no_result(run) if not run.elided else judge_elided(run)
            for run in no_result if not nccl_tests and run.table]
    for r in perftests:
        out.extend(judge_perftest(r))
    out += [judge_p2p_bandwidth(r) for r in p2p]
    return out
