"""A hang localised: the ranks and nodes that never finished, the collective, and whether the same
nodes hang under the other settings.

A probe setting the deadline cut is told by its ranks' progress records (``SettingReport.unfinished``): still
moving at the deadline is a slow setting (a warning: the collective worked, slower than the deadline allows),
moving and then stopped is a stall (after N calls), no call done at all is a hang. One whose ranks had not entered
the collective, none having failed, is not started (a warning: nothing was measured on it, its ranks were still
starting), never a hang of the network path.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.diagnosis import signs
from nccldiag.diagnosis.inputs import Inputs, LogView, setting_hosts
from nccldiag.diagnosis.model import Diagnosis, Evidence, log_evidence
from nccldiag.model.findings import Status
from nccldiag.nccl import ras_checks

ID = "hang"
TITLE = "Hang localised"
FIX = ("Start with the named nodes: their links to the others (interface, firewall, IB port), their GPUs "
       "('nvidia-smi', dmesg Xid lines), and compare with the settings that worked. With NCCL 2.24 or newer, run "
       "'ncclras' (or 'echo verbose status | nc localhost 28028') on a node while the job hangs: it names the "
       "INCOMPLETE, DEAD or MISMATCHED rank, node and GPU ('nccldiag log' reads its answer; a hung NCCL probe "
       "asks it before killing the ranks).")
RAS = "ncclras -v  (on a node of the hung job, NCCL 2.24+; JSON with -f json from 2.28.7)"


def ras_evidence(facts: Optional[LogView]) -> List[Evidence]:
    """What NCCL's RAS said about the job: its dead, missing and failed ranks (the last report of each source)."""
    reports = list(facts.ras) if facts is not None else []
    last: Dict[str, object] = {}
    for r in reports:
        last[r.source] = r
    out: List[Evidence] = []
    for r in last.values():
        ref = f"{r.source}:{r.lineno}"
        problems = [p for p in r.problems if p.kind != "TIMEOUT"]
        if not problems:
            out.append(Evidence("log", f"RAS: every rank answered, no error ({', '.join(r.statuses()) or 'no'} "
                                       "communicators)", ref))
        for p in problems[:4]:
            names = ras_checks.named(p, 4)
            what = f"{p.comm} {p.kind}" if p.comm else p.kind
            out.append(Evidence("log", f"RAS: {what}" + (f": {names}" if names else ""), ref,
                                p.nodes()[0] if len(p.nodes()) == 1 else None))
    return out


def _stuck(sr) -> Dict[str, object]:
    so = sr.outcome
    hung: List[int] = []
    where: Dict[int, str] = {}
    colls: List[str] = []
    for oc in so.collectives.values():
        if oc.status == "hang":
            colls.append(oc.collective)
            for r in oc.ranks_hung:
                hung.append(r)
                at = oc.hung_at.get(r) or {}
                size = at.get("size")
                where[r] = f"{oc.collective} {at.get('phase') or ''}" + (f" at {size} B" if size else "")
    for r in so.stuck_in_init:
        hung.append(r)
        where[r] = "process-group initialisation"
    waiting = sorted({r for oc in so.collectives.values() if oc.status == "hang" for r in oc.ranks_error
                      if r not in hung})
    return {"hung": sorted(set(hung)), "where": where, "colls": colls, "waiting": waiting}


def _probe(inp: Inputs) -> List[Diagnosis]:
    out: List[Diagnosis] = []
    for sr in inp.settings:
        if sr.status != "hang":
            continue
        if sr.unfinished == "slow":
            out.append(_slow(inp, sr))
            continue
        if sr.unfinished == "not-started":
            out.append(_not_started(inp, sr))
            continue
        st = _stuck(sr)
        hung: List[int] = st["hung"]  # type: ignore[assignment]
        so = sr.outcome
        world = so.world_size or len(so.ranks)
        nodes = setting_hosts(sr, hung)
        ev = [Evidence("probe", f"{so.ranks[r].where() if r in so.ranks else f'rank {r}'} last reported "
                                f"{st['where'].get(r, '?')}", sr.setting.name, so.host_of(r))  # type: ignore[union-attr]
              for r in hung[:8]]
        if st["waiting"]:
            ev.append(Evidence("probe", f"ranks {', '.join(map(str, st['waiting']))} timed out waiting for them",
                               sr.setting.name))
        if not hung and sr.timed_out:
            ev.append(Evidence("probe", "the run's deadline passed before every node finished", sr.setting.name))
        others = []
        for o in inp.settings:
            if o is sr:
                continue
            at_fault = set(setting_hosts(o, _stuck(o)["hung"])) if o.status == "hang" else set()  # type: ignore[arg-type]
            same = sorted(at_fault & set(nodes))
            others.append(f"{o.setting.name}: {o.verdict}"
                          + (f" (same nodes: {', '.join(same)})" if same else ""))
        if others:
            ev.append(Evidence("probe", "other settings: " + "; ".join(others), "settings"))
        lf = sr.log_facts
        for w in (lf.watchdogs if lf is not None else [])[:2]:
            ev.append(log_evidence(w.at, w.text))
        ras = ras_evidence(lf)
        ev.extend(ras)
        everyone = bool(world) and len(hung) >= world
        if hung and not everyone:
            conf, why = "high", (f"{len(hung)} of {world} ranks never came back from the collective while the "
                                 "others reached it and timed out waiting")
        elif hung:
            conf, why = "medium", "every rank is stuck: the setting's transport hangs, no single node stands out"
            nodes = nodes or list(inp.hosts)
        else:
            conf, why = "low", "the run timed out but no rank said where it was"
            nodes = list(inp.hosts)
        coll = ", ".join(st["colls"]) or ("initialisation" if so.stuck_in_init else "?")  # type: ignore[arg-type]
        ok_settings = [o.setting.name for o in inp.settings if o.status == "ok"]
        stalled = sr.unfinished == "stalled"
        if stalled:
            ev.insert(0, Evidence("probe", f"data moved ({sr.calls} calls done), then nothing for the last "
                                           f"{sr.quiet_s or 0:.0f} s before the run ended", sr.setting.name))
            why += f"; data moved for {sr.calls} calls, then stopped (a stall, not slowness)"
        if hung:
            what = (f"[{sr.setting.name}] {coll} {'stalled after ' + str(sr.calls) + ' calls' if stalled else 'hung'}: "
                    f"rank{'s' if len(hung) != 1 else ''} {', '.join(map(str, hung))} on {', '.join(nodes)} "
                    "never finished")
        else:
            what = f"[{sr.setting.name}] the run did not finish on {', '.join(nodes)} and no rank said where it was"
        out.append(Diagnosis(ID, TITLE, "fail", what, conf, why, FIX, nodes=nodes,
                             evidence=ev, workaround=(f"the settings that worked: {', '.join(ok_settings)}"
                                                      if ok_settings else ""),
                             missing=[RAS] if inp.probe.backend == "nccl" and not ras else [],
                             figures={"ranks_hung": hung, "collectives": st["colls"], "world_size": world}))
    return out


SLOW_FIX = ("Rerun the setting with a longer --timeout to measure its busbw and compare it with the other "
            "settings; if it stays slow, look at its links (interface speed, errors, TCP retransmissions) and at "
            "what else loads the nodes.")


def _slow(inp: Inputs, sr) -> Diagnosis:
    """A setting the deadline cut while its ranks still reported calls done: slow, not hung."""
    so = sr.outcome
    moving = {}  # rank -> busbw of its calls so far (its last progress record)
    for r, info in so.ranks.items():
        last = info.last or {}
        if last.get("type") == "progress" and isinstance(last.get("busbw"), (int, float)):
            moving[r] = float(last["busbw"])
    ev = [Evidence("probe", f"{sr.calls} calls done, the last sign of progress {sr.quiet_s or 0:.0f} s before the "
                            "deadline", sr.setting.name)]
    if moving:
        slowest = min(moving, key=lambda r: moving[r])
        ev.append(Evidence("probe", f"busbw so far: {moving[slowest]:g} GB/s on {so.ranks[slowest].where()} (the "
                                    "slowest rank)", sr.setting.name, so.host_of(slowest)))
    nodes = sorted({h for h in (so.host_of(r) for r in so.ranks) if h}) or list(inp.hosts)
    return Diagnosis(ID, "Slow: still moving at the deadline", "warn",
                     f"[{sr.setting.name}] slow (still moving at the deadline): {sr.calls} calls done, not hung",
                     "medium", "its ranks reported calls done until near the deadline: the collective moved data, "
                     "slower than the deadline allows", SLOW_FIX, nodes=nodes, evidence=ev,
                     figures={"calls_done": sr.calls, "busbw_so_far": min(moving.values()) if moving else None})


NOT_STARTED_FIX = ("Nothing was measured on this setting: run it again with a longer --timeout, or when the nodes "
                   "are less loaded. A node whose ranks stay so on an idle machine is slow to start Python and torch "
                   "(its file system, its CPUs) or to join the rendezvous: 'nccldiag check' on it.")


def _not_started(inp: Inputs, sr) -> Diagnosis:
    """A setting the deadline cut before any rank had entered the collective, none having failed: not started."""
    so = sr.outcome
    nodes = sorted({h for h in (so.host_of(r) for r in so.ranks) if h}) or list(inp.hosts)
    ev = [Evidence("probe", f"no rank had entered the collective at the deadline, and none had failed: "
                            f"{sr.starting or 'no rank heard from'}", sr.setting.name)]
    return Diagnosis(ID, "Not started: ranks still starting at the deadline", "warn",
                     f"[{sr.setting.name}] not started: its ranks were still starting when the deadline came "
                     f"({sr.starting or 'no rank heard from'}); nothing was measured", "medium",
                     "no rank wrote the record it writes just before its first collective call, and no rank reported "
                     "a failure: the setting was never tested, which is neither a hang nor a pass",
                     NOT_STARTED_FIX, nodes=nodes, evidence=ev)


def _logs(inp: Inputs) -> List[Diagnosis]:
    if inp.logs is None or not inp.logs.watchdogs:
        return []
    ws = inp.logs.watchdogs
    ranks = sorted({w.rank for w in ws if w.rank is not None})
    ops = sorted({w.op_type or "?" for w in ws})
    seqs = sorted({w.seq for w in ws if w.seq is not None})
    nodes = sorted({w.at.host for w in ws if w.at.host})
    nranks = max([c.nranks for c in inp.logs.comms] + [0])
    silent = [r for r in range(nranks) if r not in ranks] if nranks and ranks else []
    ev = [log_evidence(w.at, w.text) for w in ws[:4]]
    ras = ras_evidence(inp.logs)
    ev.extend(ras)
    why = "the PyTorch watchdog fired on these ranks: the collective never completed"
    if silent:
        why += f"; ranks {', '.join(map(str, silent[:16]))} printed no timeout in these logs and may be the ones stuck"
    return [Diagnosis(ID, TITLE, "fail",
                      f"{', '.join(ops)} (SeqNum {', '.join(map(str, seqs)) or '?'}) timed out on ranks "
                      f"{', '.join(map(str, ranks)) or '?'}", "low" if not silent else "medium", why, FIX,
                      nodes=nodes, evidence=ev,
                      missing=([] if ras else [RAS]) + ["nccldiag probe HOSTFILE  (on the job's nodes)"],
                      figures={"ranks_timed_out": ranks, "ranks_silent": silent})]


STUCK_SHAPE = "nccl-watchdog-stuck"  # knowledge/lexicon.toml: the watchdog's heartbeat monitor timed out
_PG_RANK = rx.compile(r"\[PG \w{1,40}(?: PG GUID \w{1,40}(?:\([^)]{0,40}\))?)? Rank (\d{1,7})\]|\[rank(\d{1,7})\]")


def _watchdog_stuck(inp: Inputs) -> List[Diagnosis]:
    """PyTorch's NCCL watchdog that stopped itself: its heartbeat monitor timed out ('Heartbeat monitor timed out',
    "ProcessGroupNCCL's watchdog got stuck for N seconds"): a NCCL or CUDA call that never returned blocked the
    thread that times collectives out, so no collective timeout is printed; the run hung."""
    lines = [l for l in inp.failure_lines if l.shape == STUCK_SHAPE]
    if not lines:
        return []
    texts = [t for l in lines for t in l.texts()]
    ranks = sorted({int(next(g for g in m.groups() if g)) for t in texts for m in [_PG_RANK.search(t)] if m})
    hosts = sorted({l.host for l in lines if l.host})
    ev = [Evidence("log", l.text[:300], l.ref, l.host) for l in lines[:4]]
    return [Diagnosis(ID, TITLE, "fail",
                      "PyTorch's NCCL watchdog stopped: its heartbeat monitor timed out" +
                      (f" on ranks {', '.join(map(str, ranks[:16]))}" if ranks else "") +
                      f": {lines[0].text.strip()[:160]}", "medium",
                      "the thread that times collectives out made no progress for the heartbeat timeout: a NCCL or "
                      "CUDA call blocked it (a collective or a GPU that never returned), so the run hung",
                      FIX, nodes=hosts, evidence=ev,
                      missing=[RAS, "py-spy dump --pid <rank's pid> on a node while it hangs (where each rank waits)"],
                      alternatives=["a rank's GPU stuck (an Xid, a hung task in the kernel): the node's dmesg at that "
                                    "time", "another thread holding the GIL inside a CUDA call (py-spy dump shows it)"],
                      figures={"ranks_timed_out": ranks})]


MONITOR = "job monitor"  # the paste kind of a monitor's lines (paste/kinds/job_monitor.py)
SILENT = 3600  # seconds of a running job with no line of its own that make a hang


def _monitor_stalled(inp: Inputs) -> List[Diagnosis]:
    """A job whose monitor or scheduler keeps saying it is running (``PULSE: <job> is running for 1-07:27:33``,
    read by the ``job monitor`` paste kind) while, between two such lines an hour apart or more, the job printed
    nothing: its output stopped with no failure line, and it did not end: a hang with no timeout to end it. A
    monitor's lines alone (nothing of the job before them) say nothing of the job's output."""
    if inp.pasted is None:
        return []
    out: List[Diagnosis] = []
    for b in inp.pasted.blocks:
        if b.kind != MONITOR or b.lineno <= 1:
            continue
        seen: Dict[str, List] = {}
        for line in b.text.splitlines():
            got = signs.running(line)
            if got is not None:
                seen.setdefault(got[0], []).append((got[1], got[2], line.strip()))
        for job, times in seen.items():
            first, last = times[0], times[-1]
            if len(times) < 2 or any(b2[0] <= a[0] for a, b2 in zip(times, times[1:])) or last[0] - first[0] < SILENT:
                continue
            quiet = last[0] - first[0]
            out.append(Diagnosis(
                ID, TITLE, "fail",
                f"the job's output stopped while its monitor says {job} is still running: running for {first[1]}, "
                f"then {last[1]}, {quiet // 3600} h {quiet % 3600 // 60:02d} min with no line of the job's own "
                "between (no failure line, no timeout: a hang)", "medium",
                "the monitor's lines follow one another with nothing of the job between them: the ranks stopped "
                "making progress and no timeout ended them (a rank waiting outside the collective, a data loader, "
                "a collective that never completed)",
                FIX + " With no NCCL line, 'py-spy dump --pid <pid>' on every rank shows where each one waits.",
                nodes=[b.host] if b.host else [],
                evidence=[Evidence("log", first[2][:300], f"{b.path}:{b.lineno}", b.host),
                          Evidence("log", last[2][:300], f"{b.path}:{b.end}", b.host)],
                missing=["py-spy dump --pid <pid> of every rank while it hangs", RAS,
                         "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and a collective timeout, so that a hang ends in an error"],
                figures={"silent_seconds": quiet}))
    return out


PYSPY = "py-spy dump"  # the paste kind of py-spy's stacks (paste/kinds/pyspy.py)


def _stacks(inp: Inputs) -> List[Diagnosis]:
    """py-spy dumps of ranks whose main threads wait in torch.distributed's collectives: the run was caught
    waiting (a warning: a dump of a run that moves shows collectives too); a rank whose main thread waits anywhere
    else beside them is the one the others may wait for, and is named."""
    if inp.pasted is None:
        return []
    blocks = [b for b in inp.pasted.blocks if b.kind == PYSPY]
    stacks = [(n, fn, path, b) for b in blocks for n, fn, path in signs.py_stacks(b.text)]
    waiting = [s for s in stacks if signs.in_collective(s[1], s[2])]
    if not waiting:
        return []
    elsewhere = [s for s in stacks if not signs.in_collective(s[1], s[2])]

    def count(found) -> str:
        by: Dict[str, int] = {}
        for n, fn, path, _ in found:
            key = fn if signs.in_collective(fn, path) else f"{fn} ({path})"
            by[key] = by.get(key, 0) + n
        return ", ".join(f"{k} x{v}" for k, v in by.items())

    summary = f"py-spy: {sum(s[0] for s in waiting)} ranks wait in collectives ({count(waiting)})"
    if elsewhere:
        summary += (f"; {sum(s[0] for s in elsewhere)} elsewhere ({count(elsewhere)}): a rank outside the collective "
                    "is what the others wait for")
    hosts = sorted({b.host for b in blocks if b.host})
    return [Diagnosis(ID, TITLE, "warn", summary, "medium" if elsewhere else "low",
                      "the ranks' main threads were dumped waiting in torch.distributed's calls; a dump alone does not "
                      "say for how long (a run that moves is caught in collectives too)",
                      FIX + " Dump every rank (py-spy dump --pid) twice a minute apart: the same frames twice is a "
                      "hang, and the rank that is not in the collective is where to look.",
                      nodes=hosts,
                      evidence=[Evidence("log", f"{fn} ({path}) x{n}", f"{b.path}:{b.lineno}", b.host)
                                for n, fn, path, b in (elsewhere + waiting)[:4]],
                      missing=[RAS, "a second py-spy dump of every rank a minute later"])]


RAS_STOPPED = ("nccl.ras_dead", "nccl.ras_incomplete", "nccl.ras_mismatch")


def _ras(inp: Inputs) -> List[Diagnosis]:
    """A job whose NCCL RAS report names processes that stopped answering (INCOMPLETE; DEAD after 60 s without
    contact) or a communicator stuck at unchanged operation counts: the job waits for those ranks. What stopped
    them (a crash, a GPU or network fault on their node, a process stopped or hung) is on the node named."""
    if inp.logs is None or not inp.logs.ras:
        return []
    stopped = [f for f in ras_checks.judge(inp.logs.ras) if f.check in RAS_STOPPED and f.status == Status.FAIL]
    if not stopped:
        return []
    nodes = sorted({f.host for f in stopped if f.host})
    ev = ras_evidence(inp.logs)
    dead = any(f.check == "nccl.ras_dead" for f in stopped)
    why = ("NCCL's RAS, which every process of the job runs, " +
           ("declared these processes dead: no contact for 60 s" if dead else
            "got no answer from these ranks, or their operation counts stopped moving") +
           "; the other ranks cannot complete a collective without them, so the job hangs until a timeout ends it")
    return [Diagnosis(ID, TITLE, "fail", stopped[0].message, "medium", why, stopped[0].fix or FIX, nodes=nodes,
                      evidence=ev,
                      alternatives=["the process crashed or was killed (its own log, dmesg OOM kills on its node)",
                                    "a GPU fault on its node (dmesg Xid lines)",
                                    "its node lost the network RAS uses (the bootstrap interface)"])]


def diagnose(inp: Inputs) -> List[Diagnosis]:
    logs = _logs(inp)
    found = logs + ([] if logs else _watchdog_stuck(inp) or _ras(inp)) + _monitor_stalled(inp)
    return _probe(inp) + found + ([] if found else _stacks(inp))
