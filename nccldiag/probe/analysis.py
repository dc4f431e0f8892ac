"""From what a probe produced to findings (pure).

Inputs: per setting, the ranks' records and how each node's launcher ended
(:class:`~nccldiag.probe.runner.SettingRun`), the NCCL logs, and what the
preparation found (unreachable nodes, missing torch, host names resolving to
loopback). Output: a :class:`ProbeReport` with, per setting, each
collective's outcome and busbw, the transports NCCL used, and findings that
name the node, rank or link at fault.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from nccldiag.model.findings import Finding, Status, error, exit_code, fail, ok, warn
from nccldiag.probe import results
from nccldiag.probe.plan import GLOO_REASON, Setting

AREA = "probe"
SCHEMA = "nccldiag.probe/1"


@dataclass
class SettingReport:
    setting: Setting
    outcome: results.SettingOutcome
    findings: List[Finding] = field(default_factory=list)
    transports: List[str] = field(default_factory=list)
    networks: List[str] = field(default_factory=list)
    nccl_versions: List[str] = field(default_factory=list)
    log_facts: object = None
    elapsed: float = 0.0
    timed_out: bool = False

    @property
    def status(self) -> str:
        s = self.outcome.status
        if self.timed_out and s in ("ok", "not-run"):
            return "hang"
        if any(f.status == Status.FAIL for f in self.findings) and s == "ok":
            return "error"
        return s


@dataclass
class ProbeReport:
    backend: str
    launcher: str
    hosts: List[str]
    nproc_per_node: int
    settings: List[SettingReport] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)  # not tied to one setting
    out_dir: Optional[str] = None
    elapsed: float = 0.0
    started: float = field(default_factory=time.time)
    note: str = ""
    run_id: Optional[str] = None  # the NCCLDIAG_RUN marker every process of the run carries

    @property
    def all_findings(self) -> List[Finding]:
        return list(self.findings) + [f for s in self.settings for f in s.findings]

    @property
    def exit_code(self) -> int:
        return exit_code((f.status for f in self.all_findings), incomplete=not self.settings)


def _tail(text: str, lines: int = 6) -> List[str]:
    keep = [l for l in (text or "").splitlines() if l.strip()]
    return keep[-lines:]


def _run_findings(setting: Setting, run, outcome: results.SettingOutcome, timeout: Optional[float]) -> List[Finding]:
    """What the launch itself says: nodes that failed, did not finish, or left processes."""
    out: List[Finding] = []
    tag = f"[{setting.name}]"
    hosts_with_records = {r.host for r in outcome.ranks.values() if r.host}
    for host, nr in sorted(run.nodes.items()):
        if nr.error and nr.error.get("kind") == "command-timeout":
            if run.timed_out:
                out.append(fail(AREA, f"{AREA}.timeout",
                                f"{tag} {host} had not finished when the run's {timeout or 0:g} s were up; "
                                "its processes were killed",
                                host=host, evidence=_tail(nr.stderr_tail),
                                fix="See which collective its ranks were in below; a hang in the first collective "
                                    "or in init usually means the node cannot reach its peers (interface, firewall)."))
        elif nr.error:
            out.append(error(AREA, f"{AREA}.launch", f"{tag} {host}: {nr.error.get('message')}", host=host))
        elif nr.rc not in (0, None) and host not in hosts_with_records:
            out.append(fail(AREA, f"{AREA}.launch",
                            f"{tag} the launcher on {host} exited {nr.rc} before any rank reported",
                            host=host, evidence=_tail(nr.stderr_tail, 10),
                            fix="Read the launcher's messages above: rendezvous not reachable (firewall on the "
                                "port, wrong interface), torch missing, or a rank crashing at start."))
    for host, procs in sorted(run.survivors.items()):
        out.append(fail(AREA, f"{AREA}.survivors", f"{tag} {len(procs)} probe processes survived the kill on {host}",
                        host=host, evidence=procs[:10],
                        fix=f"kill them by hand: pkill -9 -f NCCLDIAG_RUN (they carry NCCLDIAG_RUN in their environment)"))
    for host, msg in sorted(run.kill_errors.items()):
        out.append(error(AREA, f"{AREA}.unreachable",
                         f"{tag} could not reach {host} to stop the run ({msg}): its link may be down",
                         host=host,
                         fix=f"Check {host}'s network; once it is back, kill leftover processes with "
                             "pkill -9 -f NCCLDIAG_RUN."))
    return out


def _transport(setting: Setting, run, backend: str, require_ib: bool, sr: SettingReport) -> List[Finding]:
    if backend != "nccl":
        return []
    from nccldiag.nccl import log as nccllog
    from nccldiag.nccl import checks as nccl_checks

    if not run.logs:
        return [warn(AREA, f"{AREA}.nccl_logs", f"[{setting.name}] no NCCL log came back from the nodes",
                     fix="NCCL_DEBUG_FILE could not be written on the nodes, or the ranks died before NCCL started.")]
    facts = nccllog.parse_logs(run.logs)
    summary = facts.summary or nccllog.summarize(facts)
    sr.log_facts = facts
    sr.transports = list(summary.transports)
    sr.networks = list(summary.networks)
    sr.nccl_versions = list(summary.versions)
    found = nccl_checks.judge(facts, require_ib=require_ib or setting.requires_ib, expected_env=setting.env)
    for f in found:
        f.message = f"[{setting.name}] {f.message}"
    return found


def analyze(runs: Sequence, settings: Sequence[Setting], backend: str, require_ib: bool, launcher: str,
            hosts: Sequence[str], unreachable: Dict[str, str], problems: Dict[str, str],
            loopback: Dict[str, List[str]], ifnames: Dict[str, Optional[str]], nproc_per_node: int,
            out_dir: Optional[str] = None, cleanup_failed: Optional[Dict[str, str]] = None,
            elapsed: float = 0.0, timeout: Optional[float] = None, run_id: Optional[str] = None) -> ProbeReport:
    report = ProbeReport(backend=backend, launcher=launcher, hosts=list(hosts), nproc_per_node=nproc_per_node,
                         out_dir=out_dir, elapsed=elapsed, run_id=run_id)
    if backend == "gloo":
        report.note = GLOO_REASON
    for host, msg in unreachable.items():
        report.findings.append(error(AREA, f"{AREA}.ssh", f"{host}: {msg}", host=host,
                                     fix="Run 'nccldiag check' on this host to see why it cannot be reached."))
    for host, msg in problems.items():
        report.findings.append(error(AREA, f"{AREA}.prepare", msg, host=host))
    if unreachable or problems:
        report.findings.append(error(AREA, f"{AREA}.not_run",
                                     "no probe ran: every node must take part, and some could not (above)"))
    for host, addrs in sorted(loopback.items()):
        iface = ifnames.get(host)
        report.findings.append(warn(
            AREA, f"{AREA}.hostname_loopback",
            f"{host}'s host name resolves to {', '.join(addrs)}: without GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME, "
            f"gloo and NCCL advertise that loopback address to their peers and multi-node runs hang"
            + (f"; this probe set them to {iface}" if iface else ""),
            host=host, actual=addrs,
            fix="Map the host name to its data-network address in /etc/hosts, or export "
                f"GLOO_SOCKET_IFNAME={iface or 'IFACE'} NCCL_SOCKET_IFNAME={iface or 'IFACE'} in your jobs."))
    by_name = {s.name: s for s in settings}
    for run in runs:
        setting = by_name.get(run.setting.name) or Setting(run.setting.name, dict(run.setting.env))
        outcome = results.aggregate_setting(setting.name, run.records)
        sr = SettingReport(setting=setting, outcome=outcome, elapsed=run.elapsed, timed_out=run.timed_out)
        sr.findings.extend(_run_findings(setting, run, outcome, timeout))
        sr.findings.extend(results.findings(outcome))
        sr.findings.extend(_transport(setting, run, backend, require_ib, sr))
        report.settings.append(sr)
    for host, msg in sorted((cleanup_failed or {}).items()):
        report.findings.append(warn(AREA, f"{AREA}.cleanup", f"could not remove the run directory on {host}: {msg}",
                                    host=host))
    if report.settings and not any(f.status in (Status.FAIL, Status.ERROR) for f in report.all_findings):
        report.findings.append(ok(AREA, f"{AREA}.summary",
                                  f"{len(report.settings)} setting(s) ran on {len(hosts)} node(s): all collectives verified"))
    return report


def unreachable_report(unreachable: Dict[str, str], hosts: Sequence[str], run_id: Optional[str] = None) -> ProbeReport:
    report = ProbeReport(backend="?", launcher="?", hosts=list(hosts), nproc_per_node=0, run_id=run_id)
    for host, msg in unreachable.items():
        report.findings.append(error(AREA, f"{AREA}.ssh", f"{host}: {msg}", host=host,
                                     fix="Run 'nccldiag check' on this host to see why it cannot be reached."))
    report.findings.append(error(AREA, f"{AREA}.not_run", "no probe ran: the rendezvous host could not be reached"))
    return report

