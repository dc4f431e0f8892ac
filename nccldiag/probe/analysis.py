"""From what a probe produced to findings (pure).

Inputs: per setting, the ranks' records and how each node's launcher ended
(:class:`~nccldiag.probe.runner.SettingRun`), the NCCL logs, and what the
preparation found (unreachable nodes, missing torch, host names resolving to
loopback). Output: a :class:`ProbeReport` with, per setting, each
collective's outcome and busbw, the transports NCCL used, and findings that
name the node, rank or link at fault.
"""
from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from nccldiag import rx
from nccldiag.model.findings import Finding, Status, error, exit_code, fail, ok, warn
from nccldiag.probe import launch, progress, results
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
    # a setting the deadline cut: progress.HANG (no data moved), STALLED (moved, then stopped) or SLOW (still
    # moving), or NOT_STARTED (no rank had entered a collective, none had failed); the calls its ranks completed, and
    # the seconds from its last sign of progress to the stop
    unfinished: Optional[str] = None
    starting: str = ""  # NOT_STARTED: where its ranks were (progress.starting_stage)
    # cut by the deadline with no rank failing before it: failures its ranks reported after the stop (a peer's
    # processes killed) are the deadline's doing, so the setting is unfinished, not failed
    cut: bool = False
    calls: int = 0
    quiet_s: Optional[float] = None

    @property
    def verdict(self) -> str:
        """The status in words: a hang the deadline cut says whether data still moved (``slow``), moved and
        stopped (``stalled after N calls``) or never moved (``hang``)."""
        s = self.status
        if s != "hang" or self.unfinished in (None, progress.HANG):
            return s
        if self.unfinished == progress.NOT_STARTED:
            return f"not started ({self.starting})" if self.starting else "not started"
        if self.unfinished == progress.SLOW:
            return "slow (still moving at the deadline)"
        return f"stalled after {self.calls} call{'s' if self.calls != 1 else ''}"

    @property
    def status(self) -> str:
        s = self.outcome.status
        o = self.outcome
        # ranks the launch started that never reported before the deadline: stuck before their first record
        silent = bool(o.missing_ranks) and not o.setup_errors and \
            all(c.status in ("ok", "not-run") for c in o.collectives.values())
        if self.timed_out and (s in ("ok", "not-run") or silent or (self.cut and s in ("error", "incomplete"))):
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
    commands: Optional[List[Tuple[str, str, str]]] = None  # --dry-run: (setting, host, command), nothing ran
    bounds: List[str] = field(default_factory=list)  # --dry-run: the time bounds --timeout gives (plan.Bounds)
    ifnames: Dict[str, Optional[str]] = field(default_factory=dict)  # host -> the socket interface given to gloo/NCCL
    iface_speeds: Dict[str, Optional[int]] = field(default_factory=dict)  # host -> its speed in Mb/s (sysfs)
    route_ifnames: Dict[str, Optional[str]] = field(default_factory=dict)  # host -> the interface routing to rank 0
    node_facts: Dict[str, Dict[str, object]] = field(default_factory=dict)  # host -> {"ib": .., "gpu": ..} (NCCL)
    spec: object = None  # the site spec of --spec (nccldiag.spec.model.Spec): its [bandwidth] and busbw_share
    # attached by conclude() once the run is judged: the verdicts every view of the report renders
    diagnoses: List[Any] = field(default_factory=list)
    diagnosis_summary: Any = None

    @property
    def all_findings(self) -> List[Finding]:
        return list(self.findings) + [f for s in self.settings for f in s.findings]

    @property
    def exit_code(self) -> int:
        return exit_code((f.status for f in self.all_findings), incomplete=not self.settings)


def _tail(text: str, lines: int = 6) -> List[str]:
    keep = [l for l in (text or "").splitlines() if l.strip()]
    return keep[-lines:]


_ERROR_WORDS = rx.compile(r"error|fatal|abort|fail|denied|refused|not permitted|not found|no such|invalid|unable|"
                          r"cannot|can't|killed|exception|timed out", re.I)
_RULE = rx.compile(r"^[\s\-=*_#]*$")  # banner rules (Open MPI's dashes)


def last_words(text: str, most: int = 2, width: int = 240) -> List[str]:
    """The last lines of a launcher's stderr that say what went wrong (pure), cleaned of terminal escapes:
    the last ``most`` lines with an error word, else its last line; each cut to ``width`` characters."""
    from nccldiag.model.findings import clean_text

    lines = [clean_text(l).strip() for l in (text or "").splitlines()]
    lines = [l for l in lines if l and not _RULE.match(l)]
    chosen = [l for l in lines if _ERROR_WORDS.search(l)][-most:] or lines[-1:]
    return [l if len(l) <= width else l[:width - 3] + "..." for l in chosen]


@dataclass(frozen=True)
class LaunchCause:
    """A cause recognised in a launcher's stderr or a rank's error: ``pattern`` -> ``cause``, ``fix``.

    ``cause`` and ``fix`` are formatted with ``host``, the rendezvous ``addr``
    and ``port`` the node was given, and the pattern's named groups.
    """

    key: str
    pattern: "re.Pattern[str]"
    cause: str
    fix: str


def _cause(key: str, pattern: str, cause: str, fix: str) -> LaunchCause:
    return LaunchCause(key, re.compile(pattern), cause, fix)


# First match wins: a missing torch explains everything after it, and a name
# that does not resolve explains a rendezvous that never formed.
LAUNCH_CAUSES: Tuple[LaunchCause, ...] = (
    _cause("torch_missing", r"No module named '?torch\b",
           "torch is not installed for the Python that ran the launcher on {host}",
           "Install torch for that interpreter on {host} (pip install 'nccldiag[probe]'), or pass --python with "
           "an interpreter that has it; 'nccldiag check' (python area) shows which one has torch."),
    _cause("hostname_unresolved",
           r"socket\.gaierror|Name or service not known|Temporary failure in name resolution"
           r"|nodename nor servname provided",
           "a host name does not resolve on {host} (torchrun's c10d rendezvous, gloo and NCCL's bootstrap and MPI "
           "look up the node's own host name)",
           "Add the node's host name to /etc/hosts (or DNS) on every node, with its data-network address, or "
           "launch by address (static rendezvous: --master-addr, --node-rank); 'nccldiag check' reports it as "
           "system.hostname_unresolved."),
    _cause("interface",
           r"Unable to find address for: ?(?P<iface>\S+)|no socket interface found|NET/Socket : no interface found"
           r"|No usable listening interface found",
           "the socket interface given to gloo/NCCL ({iface}) does not exist or has no address on {host}",
           "Check GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME (or --ifname) against 'ip -br addr' on {host}; "
           "interface names may differ per node."),
    _cause("rendezvous_unreachable",
           r"timed out after \d+ ?ms while trying to connect to \((?P<addr>[^,\s]+), (?P<port>\d+)\)"
           r"|Connection refused|Connection timed out|connect\(\) timed out|No route to host|Network is unreachable",
           "{host} could not connect to the rendezvous at {addr}:{port}: the port is blocked (firewall), refused "
           "(the first node's launcher not listening) or the address unreachable from {host}",
           "Open port {port} on {addr} to the other nodes and check it with 'nc -zv {addr} {port}' from {host}; "
           "if the first node's launcher failed, its own finding says why."),
    _cause("slurm_step_refused", r"Unable to create step for job \d+: (?P<why>[^\n]+)",
           "Slurm refused the probe's step ({why}): the allocation does not hold the ranks it asked for",
           "Ask salloc for the ranks per node (salloc -N NODES --ntasks-per-node=RANKS, or --exclusive for whole "
           "nodes), or give --nproc-per-node within the CPUs per node of 'scontrol show job $SLURM_JOB_ID'."),
    _cause("rendezvous_incomplete", r"waiting for clients\. (?P<joined>\d+)/(?P<total>\d+) clients joined",
           "only {joined} of {total} nodes joined the rendezvous on {host} before its timeout",
           "Another node's launcher did not start or cannot reach port {port} on {addr}: see that node's finding; "
           "check the port with 'nc -zv {addr} {port}' from every node."),
)


def recognise(text: str, host: Optional[str] = None, addr: Optional[str] = None,
              port: Optional[object] = None) -> Optional[Tuple[LaunchCause, str, str]]:
    """``(entry, cause, fix)`` for the first entry of :data:`LAUNCH_CAUSES` found in ``text``, or None."""
    for entry in LAUNCH_CAUSES:
        m = entry.pattern.search(text or "")
        if m:
            values = {"host": host or "the node", "addr": addr or "the first node", "port": port or "PORT",
                      "iface": "as named"}
            values.update({k: v for k, v in m.groupdict().items() if v})
            return entry, entry.cause.format(**values), entry.fix.format(**values)
    return None


_MASTER_ADDR = rx.compile(r"--master-addr=(\S[^'\s]{0,511})['\s]")


def _rendezvous_of(command: str) -> Tuple[Optional[str], Optional[str]]:
    """The rendezvous address and port a node's launch command names (torchrun's static rendezvous)."""
    addr = _MASTER_ADDR.search(command or "")
    port = re.search(r"--master-port=(\d+)", command or "")
    return (addr.group(1) if addr else None), (port.group(1) if port else None)


def rank_deaths(text: str) -> List[Dict[str, object]]:
    """Ranks a launcher says were killed by a signal (pure): ``rank``, ``signal``, ``name``, ``local_rank``
    (and ``node`` when the launcher names it), in the words of every launcher
    (:meth:`~nccldiag.probe.launchers.base.Launcher.deaths`: torchrun's root-cause block, "mpirun noticed ...").

    A signal that asks a process to stop (SIGHUP, SIGINT, SIGTERM) is left out: launchers send it to the
    ranks they stop after another rank failed.
    """
    from nccldiag.probe import launchers

    out: List[Dict[str, object]] = []
    seen = set()
    for name in launchers.LAUNCHERS:
        how = getattr(type(launchers.get(name)), "deaths")
        if how not in seen:
            seen.add(how)
            out.extend(how(launchers.get(name), text))
    return out


def _run_findings(setting: Setting, run, outcome: results.SettingOutcome, timeout: Optional[float]) -> List[Finding]:
    """What the launch itself says: nodes that failed, did not finish, or left processes."""
    out: List[Finding] = []
    tag = f"[{setting.name}]"
    hosts_with_records = {r.host for r in outcome.ranks.values() if r.host}
    for host, nr in sorted(run.nodes.items()):
        out.extend(_launcher_end(tag, host, nr, run, hosts_with_records, timeout))
    return out + _run_leftovers(tag, run)


def _launcher_end(tag: str, host: str, nr, run, hosts_with_records: set, timeout: Optional[float]) -> List[Finding]:
    """What the end of ``host``'s launcher says: it did not finish, could not start, reported a rank killed by a
    signal, or exited before any rank reported."""
    out: List[Finding] = []
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
    elif nr.rc not in (0, None) and _deaths_on(run, host, nr.stderr_tail):
        for d in _deaths_on(run, host, nr.stderr_tail):
            local = f", local rank {d['local_rank']}" if d["local_rank"] is not None else ""
            # mpirun reports every node's ranks: the node is the one it names, as its own host name
            where = str(d.get("node") or host)
            at = where if where in run.nodes or "node" not in d else None
            out.append(fail(AREA, f"{AREA}.rank_died",
                            f"{tag} rank {d['rank']}{local} on {where} was killed by {d['name']}",
                            host=at, actual={"rank": d["rank"], "signal": d["signal"], "node": where},
                            evidence=_tail(nr.stderr_tail, 10),
                            fix=f"Find what killed it on {where}: the kernel log (OOM killer, segfault or bus "
                                "error lines, GPU Xid errors: 'dmesg -T | tail'), and memory and GPU health "
                                "('nvidia-smi -q'). The ranks that timed out waiting for it are not at fault."))
    elif nr.rc not in (0, None) and host not in hosts_with_records:
        known = recognise(nr.stderr_tail, host, *_rendezvous_of(run.commands.get(host, "")))
        msg = f"{tag} the launcher on {host} exited {nr.rc} before any rank reported"
        said = last_words(nr.stderr_tail)
        msg += (f": {known[1]}" if known else "") + (f"; it said: {' | '.join(said)}" if said else
                                                     "; it wrote nothing on stderr")
        out.append(fail(AREA, f"{AREA}.launch", msg,
                        host=host, evidence=_tail(nr.stderr_tail, 10),
                        actual={"cause": known[0].key} if known else None,
                        fix=known[2] if known else
                        "Read the launcher's messages above: rendezvous not reachable (firewall on the "
                        "port, wrong interface), torch missing, or a rank crashing at start."))
    return out


def _run_leftovers(tag: str, run) -> List[Finding]:
    """What the run left: error counters that rose, output not kept, processes that survived the kill, nodes
    that could not be reached to stop it."""
    from nccldiag.probe.counters import error_counters

    out: List[Finding] = []
    for host, delta in sorted((getattr(run, "counters", None) or {}).items()):
        # drops count benign traffic too (unknown protocols, multicast): only errors are a finding
        moved = {k: v for k, v in error_counters(delta).items() if not k.endswith("_dropped")}
        if moved:
            shown = ", ".join(f"{k} +{v}" for k, v in sorted(moved.items()))
            out.append(warn(AREA, f"{AREA}.counters", f"{tag} error counters rose on {host} while the probe ran: {shown}",
                            host=host, actual=moved, expected="no error counted",
                            evidence=[f"{k}: +{v}" for k, v in sorted(moved.items())],
                            fix="Errors counted during the run point at this end of the link: check its cable, "
                                "transceiver and switch port (`mlxlink -d DEV -m`, `ethtool -S IF`, `ibstat`), then "
                                "run the probe again and see whether they keep rising."))
    for host, why in sorted((getattr(run, "rejected", None) or {}).items()):
        shown = ", ".join(f"{k} ({v})" for k, v in sorted(why.items()))
        out.append(warn(AREA, f"{AREA}.rejected",
                        f"{tag} {host} sent output that was not kept: {shown}",
                        host=host, actual=dict(why),
                        fix=f"A rank's records speak for the ranks {host} launched, and its NCCL logs for {host} "
                            "alone: output claiming other ranks or hosts means something on this node writes "
                            "as the probe does. Look at what runs there (a wrapper around python or torchrun, a "
                            "modified package)."))
    kill = _kill_hint(run)
    for host, procs in sorted(run.survivors.items()):
        out.append(fail(AREA, f"{AREA}.survivors", f"{tag} {len(procs)} probe processes survived the kill on {host}",
                        host=host, evidence=procs[:10],
                        fix=f"Kill them by hand on {host} (they carry {launch.RUN_MARK} in their environment, not "
                            f"on their command line): {kill}"))
    for host, msg in sorted(run.kill_errors.items()):
        out.append(error(AREA, f"{AREA}.unreachable",
                         f"{tag} could not reach {host} to stop the run ({msg}): its link may be down",
                         host=host,
                         fix=f"Check {host}'s network; once it is back, kill leftover processes there with: {kill}"))
    return out


def _deaths_on(run, host: str, text: str) -> List[Dict[str, object]]:
    """The deaths ``host``'s launcher reports, of ranks it launched (mpirun's, on the first node, name their node)."""
    launched = getattr(run, "launched", None)
    out = []
    for d in rank_deaths(text):
        rank = d["rank"]
        if launched is not None and (not isinstance(rank, int) or launched.node_of(rank) is None or
                                     ("node" not in d and launched.node_of(rank) != host)):
            continue
        out.append(d)
    return out


def _kill_hint(run) -> str:
    """The command that kills the run's processes on a node (as the probe itself does)."""
    run_id = getattr(run, "run_id", "") or ""
    if not run_id:
        m = re.search(rf"{launch.RUN_MARK}=(nccldiag-[A-Za-z0-9-]+)", " ".join(getattr(run, "commands", {}).values()))
        run_id = m.group(1) if m else "RUN_ID"
    return f"sh -c {shlex.quote(launch.kill_command(run_id))}"


def _explain_setup_errors(found: List[Finding]) -> None:
    """Give a rank's setup error (init, bootstrap) the cause it shows, when it is one :data:`LAUNCH_CAUSES` knows."""
    for f in found:
        if f.fix or f.check not in (f"{AREA}.init", f"{AREA}.bootstrap", f"{AREA}.import", f"{AREA}.device"):
            continue
        known = recognise(" ".join([f.message] + [str(e) for e in (f.evidence or [])]), f.host)
        if known:
            f.message = f"{f.message} ({known[1]})"
            f.fix = known[2]


def _transport(setting: Setting, run, backend: str, require_ib: bool, sr: SettingReport) -> List[Finding]:
    if backend != "nccl":
        return []
    from nccldiag.nccl import checks as nccl_checks
    from nccldiag.nccl.facts import summarize
    from nccldiag.nccl.parser import parse_logs

    if not run.logs:
        return [warn(AREA, f"{AREA}.nccl_logs", f"[{setting.name}] no NCCL log came back from the nodes",
                     fix="NCCL_DEBUG_FILE could not be written on the nodes, or the ranks died before NCCL started.")]
    facts = parse_logs(run.logs)
    summary = facts.summary or summarize(facts)
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
            elapsed: float = 0.0, timeout: Optional[float] = None, run_id: Optional[str] = None,
            iface_speeds: Optional[Dict[str, Optional[int]]] = None,
            route_ifnames: Optional[Dict[str, Optional[str]]] = None,
            node_facts: Optional[Dict[str, Dict[str, object]]] = None) -> ProbeReport:
    report = ProbeReport(backend=backend, launcher=launcher, hosts=list(hosts), nproc_per_node=nproc_per_node,
                         out_dir=out_dir, elapsed=elapsed, run_id=run_id, ifnames=dict(ifnames),
                         iface_speeds=dict(iface_speeds or {}), route_ifnames=dict(route_ifnames or {}),
                         node_facts=dict(node_facts or {}))
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
        setting = by_name.get(run.setting.name) or run.setting
        sr = job_report(setting, run, timeout)
        sr.findings.extend(_transport(setting, run, backend, require_ib, sr))
        report.settings.append(sr)
    for host, msg in sorted((cleanup_failed or {}).items()):
        report.findings.append(warn(AREA, f"{AREA}.cleanup", f"could not remove the run directory on {host}: {msg}",
                                    host=host))
    if report.settings and not any(f.status in (Status.FAIL, Status.ERROR) for f in report.all_findings):
        report.findings.append(ok(AREA, f"{AREA}.summary",
                                  f"{len(report.settings)} setting(s) ran on {len(hosts)} node(s): all collectives verified"))
    return report


def job_report(setting: Setting, run, timeout: Optional[float] = None) -> SettingReport:
    """One run's outcome and findings without the NCCL log reading (the small jobs of ``nccldiag isolate``).

    The world and the collectives are those launched (``run.launched``), never what a rank claims.
    """
    launched = getattr(run, "launched", None)
    outcome = results.aggregate_setting(setting.name, run.records,
                                        world=launched.world if launched is not None else None,
                                        planned=launched.planned if launched is not None else None)
    sr = SettingReport(setting=setting, outcome=outcome, elapsed=run.elapsed, timed_out=run.timed_out)
    failures = getattr(run, "failures", None)
    sr.cut = bool(run.timed_out) and failures is not None and \
        not progress.failed_before(failures, getattr(run, "stopped_s", None))
    sr.findings.extend(_run_findings(setting, run, outcome, timeout))
    found = results.findings(outcome)
    _explain_setup_errors(found)
    sr.findings.extend(found)
    _unfinished(sr, run, timeout)
    return sr


def _unfinished(sr: SettingReport, run, timeout: Optional[float]) -> None:
    """A setting that hung: whether its data still moved, moved and stopped, or never moved, said in its
    timeout findings. Cut by the probe's deadline: :func:`~nccldiag.probe.progress.unfinished_kind` on when
    the records showing progress arrived. Ended by the ranks' own timeout (their process-group timeout, which
    fires only when a call made no progress for that long): stalled if data had moved, else hung. Where ranks
    were inside a collective at the end, only that collective's progress counts: the collectives completed
    before it say nothing of whether it moved."""
    if sr.status != "hang":
        return
    if sr.cut and progress.never_entered(run.records) and not _failed_otherwise(sr):
        _not_started(sr, run)
        return
    stuck = {oc.collective for oc in sr.outcome.collectives.values() if oc.status == "hang"}
    arrivals = [(t, c) for t, c in (getattr(run, "progress", None) or []) if not stuck or c in stuck]
    if sr.outcome.stuck_in_init and not stuck:
        arrivals = []  # ranks that never finished init moved no data
    moved = [t for t, _ in arrivals]
    stopped = getattr(run, "stopped_s", None) if run.timed_out else None
    ended = [nr.elapsed for nr in run.nodes.values() if nr.elapsed]
    end = stopped if stopped is not None else (max(ended) if ended else run.elapsed)
    # the stuck collectives' own findings ("never completed it") are the deadline's doing when it came too soon
    waited = frozenset(f"{AREA}.{c}" for c in stuck)
    if sr.cut and not moved and stopped is not None and not _failed_otherwise(sr, waited):
        launched = getattr(run, "launched", None)
        world = launched.world if launched is not None else (sr.outcome.world_size or None)
        left = progress.entered_late(getattr(run, "entered", None) or {}, world, stopped, timeout or stopped)
        if left is not None:
            _not_started(sr, run, f"the ranks entered the collective only {left:.0f} s before the deadline: "
                                  "their first call had no time to end", waited)
            return
    if run.timed_out:
        sr.unfinished = progress.unfinished_kind(moved, end, timeout or end)
    else:
        sr.unfinished = progress.STALLED if moved else progress.HANG
    sr.calls = progress.calls_done([r for r in run.records if not stuck or r.get("collective") in stuck])
    sr.quiet_s = max(0.0, end - max(moved)) if moved else None
    if sr.unfinished == progress.HANG:
        return
    of = f" of {', '.join(sorted(stuck))}" if stuck else ""
    if sr.unfinished == progress.SLOW:
        said = (f"; its ranks were still moving data ({sr.calls} calls{of} done, the last {sr.quiet_s:.0f} s before "
                "the stop): slow, not hung")
        fix = ("Rerun the setting with a longer --timeout to measure its busbw; if it stays slow against the other "
               "settings, look at its links (interface speed, errors, retransmissions) and the nodes' load.")
    else:
        said = (f"; data moved ({sr.calls} calls{of} done), then nothing for the last {sr.quiet_s:.0f} s before the "
                "stop: stalled")
        fix = None
    for f in sr.findings:
        if f.check == f"{AREA}.timeout":
            f.message += said
            if fix:
                f.fix = fix


# What a run the deadline cut while its ranks were still starting shows of itself: the timeout, ranks that never
# reported or never finished init. Any other failure (a launcher that exited on an error, a rank killed) is its own.
_START_SIGNS = frozenset({f"{AREA}.timeout", f"{AREA}.init", f"{AREA}.ranks"})


def _failed_otherwise(sr: SettingReport, also: frozenset = frozenset()) -> bool:
    """Whether a finding other than the deadline's own (and ``also``'s) says something failed (a launcher's error, a
    rank killed)."""
    return any(f.status == Status.FAIL and f.check not in _START_SIGNS | also for f in sr.findings)


def _not_started(sr: SettingReport, run, late: str = "", waited: frozenset = frozenset()) -> None:
    """A setting the deadline cut before any rank had entered a collective, or (``late``, in words) so soon after
    the last had entered that its first call could not end, none having failed before it: its ranks were still
    starting (a loaded machine stretches the import of torch and the rendezvous). That is no hang of the network
    path, and no pass: its timeout finding says where its ranks were, as an error (not checked, exit 3), and so do
    the findings of the collectives its ranks ``waited`` in."""
    launched = getattr(run, "launched", None)
    world = launched.world if launched is not None else (sr.outcome.world_size or None)
    sr.unfinished = progress.NOT_STARTED
    sr.starting = late or progress.starting_stage(run.records, world)
    sr.calls, sr.quiet_s = 0, None
    said = ("no data had moved, and no rank had failed" if late else
            "no rank had entered the collective, and none had failed")
    for f in sr.findings:
        if f.check == f"{AREA}.timeout":
            f.status = Status.ERROR
            f.message += (f"; {said}: its ranks were still starting ({sr.starting}): not started, not a hang")
            f.fix = ("Nothing was measured on this setting: run it again with a longer --timeout, or when the nodes "
                     "are less loaded; a node whose ranks stay so on an idle machine is slow to start Python and "
                     "torch (its file system, its CPUs) or to join the rendezvous.")
        elif (f.check in (f"{AREA}.init", f"{AREA}.ranks") or f.check in waited) and f.status == Status.FAIL:
            f.status = Status.ERROR  # still starting when the deadline killed them, with no error: no failure of theirs


def conclude(report: ProbeReport, spec: Any = None) -> ProbeReport:
    """The end of a probe, live or rebuilt from its run directory: the site spec's findings and policy (with
    ``--spec``), then the diagnoses, attached to the report for every view of it."""
    from nccldiag import diagnosis

    if spec is not None:
        from nccldiag.spec import runs

        report.spec = spec  # the expected busbw and its share, for the bandwidth comparison
        # the node facts are read after the last setting: a run stopped before has none (each key: skip)
        report.findings.extend(runs.probe_findings(spec, report.node_facts, report.hosts, report.backend))
        runs.apply_policy(spec, report.all_findings)
    diagnosis.attach(report, probe=report)
    return report


def unreachable_report(unreachable: Dict[str, str], hosts: Sequence[str], run_id: Optional[str] = None) -> ProbeReport:
    report = ProbeReport(backend="?", launcher="?", hosts=list(hosts), nproc_per_node=0, run_id=run_id)
    for host, msg in unreachable.items():
        report.findings.append(error(AREA, f"{AREA}.ssh", f"{host}: {msg}", host=host,
                                     fix="Run 'nccldiag check' on this host to see why it cannot be reached."))
    report.findings.append(error(AREA, f"{AREA}.not_run", "no probe ran: the rendezvous host could not be reached"))
    return report

