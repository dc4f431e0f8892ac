"""What a probe keeps in its run directory, encoded and decoded in one place (:class:`nccldiag.rundir.Run` writes it).

- ``run.json``: :class:`ProbeMeta`, what ran (the settings, the world, what
  the nodes said of their interfaces before the first setting);
- ``records.jsonl``: every rank's records as they come, stamped with their setting;
- ``settings.jsonl``: one :func:`setting_line` per setting once it has ended (read back by
  :func:`setting_run`);
- ``nccl-logs/<setting>/<host>/<file>``: the NCCL logs fetched, cited as ``host/file``;
- ``facts.jsonl``: per node, the outputs its expected bandwidth is derived from (NCCL).

A report rebuilt from these reads back exactly what the live run analysed:
:func:`read` returns the same inputs ``analysis.analyze`` was given.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from nccldiag import rundir
from nccldiag.probe import launchers, results
from nccldiag.probe.plan import Setting
from nccldiag.probe.runner import STDERR_TAIL, NodeRun, SettingRun, safe_name

SCHEMA = "nccldiag.probe/1"
RECORDS = "records.jsonl"
SETTINGS = "settings.jsonl"
FACTS = "facts.jsonl"
LOGS = "nccl-logs"


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str_map(d: Any) -> Dict[str, Optional[str]]:
    return {str(k): (None if v is None else str(v)) for k, v in d.items()} if isinstance(d, dict) else {}


def _int_map(d: Any) -> Dict[str, Optional[int]]:
    return {str(k): (v if isinstance(v, int) and not isinstance(v, bool) else None)
            for k, v in d.items()} if isinstance(d, dict) else {}


def setting_json(s: Setting) -> Dict[str, Any]:
    return {"name": s.name, "env": s.env, "why": s.why, "custom": s.custom, "requires_ib": s.requires_ib}


def setting_from(d: Dict[str, Any]) -> Setting:
    return Setting(str(d["name"]), {str(k): str(v) for k, v in (d.get("env") or {}).items()}, str(d.get("why") or ""),
                   bool(d.get("custom")), bool(d.get("requires_ib")))


@dataclass
class ProbeMeta:
    """``run.json`` of a probe: what a report rebuilt from its directory needs besides the records."""

    backend: str
    launcher: str
    hosts: List[str]
    nproc_per_node: int
    timeout: Optional[float]
    require_ib: bool = False
    settings: List[Setting] = field(default_factory=list)
    loopback: Dict[str, List[str]] = field(default_factory=dict)
    ifnames: Dict[str, Optional[str]] = field(default_factory=dict)
    iface_speeds: Dict[str, Optional[int]] = field(default_factory=dict)  # host -> Mb/s of its socket interface
    route_ifnames: Dict[str, Optional[str]] = field(default_factory=dict)  # host -> the interface routing to rank 0
    spec: Optional[str] = None  # the site spec file the run was given
    run_id: str = ""
    started: str = ""

    def to_json(self) -> Dict[str, Any]:
        """The fields of ``run.json`` (the run directory adds ``command``, ``run_id`` and ``started``)."""
        return {"schema": SCHEMA, "backend": self.backend, "launcher": self.launcher, "hosts": list(self.hosts),
                "nproc_per_node": self.nproc_per_node, "timeout": self.timeout, "require_ib": self.require_ib,
                "settings": [setting_json(s) for s in self.settings], "loopback": self.loopback,
                "ifnames": self.ifnames, "iface_speeds": self.iface_speeds, "route_ifnames": self.route_ifnames,
                "spec": self.spec}

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ProbeMeta":
        """A ``run.json`` read back; whatever is missing or of the wrong type is left empty."""
        hosts = d.get("hosts")
        hosts = [h for h in hosts if isinstance(h, str)] if isinstance(hosts, list) else []
        nproc = d.get("nproc_per_node")
        settings = [setting_from(s) for s in d.get("settings") or [] if isinstance(s, dict) and s.get("name")]
        loopback = d.get("loopback") if isinstance(d.get("loopback"), dict) else {}
        return cls(backend=str(d.get("backend") or "?"), launcher=str(d.get("launcher") or "?"), hosts=hosts,
                   nproc_per_node=nproc if isinstance(nproc, int) and not isinstance(nproc, bool) else 0,
                   timeout=d.get("timeout") if _num(d.get("timeout")) else None,
                   require_ib=bool(d.get("require_ib")), settings=settings,
                   loopback={str(k): list(v) for k, v in loopback.items() if isinstance(v, list)},
                   ifnames=_str_map(d.get("ifnames")), iface_speeds=_int_map(d.get("iface_speeds")),
                   route_ifnames=_str_map(d.get("route_ifnames")),
                   spec=str(d["spec"]) if d.get("spec") else None, run_id=str(d.get("run_id") or ""),
                   started=str(d.get("started") or ""))

    def launched(self) -> Optional[results.Launched]:
        """The world the run launched, for a line that does not say it (a run directory of an older version)."""
        if self.hosts and 0 < self.nproc_per_node <= results.MAX_WORLD // len(self.hosts):
            return results.Launched(tuple(self.hosts), self.nproc_per_node, tagged=launchers.tagging(self.launcher))
        return None


def _launched_json(la: Optional[results.Launched]) -> Optional[Dict[str, Any]]:
    if la is None:
        return None
    return {"hosts": list(la.hosts), "nproc": la.nproc, "collectives": list(la.collectives),
            "tagged": la.tagged.name if la.tagged is not None else None}


def _launched_from(d: Any) -> Optional[results.Launched]:
    if not isinstance(d, dict):
        return None
    hosts, nproc = d.get("hosts"), d.get("nproc")
    if not (isinstance(hosts, list) and hosts and all(isinstance(h, str) for h in hosts) and isinstance(nproc, int)
            and not isinstance(nproc, bool) and 0 < nproc <= results.MAX_WORLD // len(hosts)):
        return None
    colls = d.get("collectives")
    colls = tuple(str(c) for c in colls) if isinstance(colls, list) else tuple(results.COLLECTIVES)
    tagged = d.get("tagged")
    return results.Launched(tuple(hosts), nproc, colls, launchers.tagging(tagged) if isinstance(tagged, str) else None)


def setting_line(sr: SettingRun) -> Dict[str, Any]:
    """One line of ``settings.jsonl``: how a setting's run ended on each node (its records are in records.jsonl,
    its logs in nccl-logs/)."""
    return {
        "setting": sr.setting.name, "elapsed": sr.elapsed, "timed_out": sr.timed_out,
        "aborted_after_failure": sr.aborted_after_failure,
        "nodes": {h: {"rc": n.rc, "error": n.error, "stderr_tail": n.stderr_tail, "elapsed": n.elapsed}
                  for h, n in sr.nodes.items()},
        "survivors": sr.survivors, "kill_errors": sr.kill_errors, "commands": sr.commands, "run_id": sr.run_id,
        "logs": sorted(sr.logs), "counters": sr.counters, "rejected": sr.rejected,
        "launched": _launched_json(sr.launched),
        "progress_s": [list(p) for p in sr.progress], "stopped_s": sr.stopped_s, "failures_s": sr.failures,
        "entered_s": {str(k): v for k, v in sr.entered.items()} if sr.entered is not None else None,
    }


def setting_run(setting: Setting, line: Optional[Dict[str, Any]], records: List[dict],
                logs: Dict[str, str], launched: Optional[results.Launched] = None) -> SettingRun:
    """A :class:`~nccldiag.probe.runner.SettingRun` from its line (None: the setting had not ended), its records
    and its logs; ``launched``: the world for a line that does not name it."""
    sr = SettingRun(setting=setting, records=list(records), logs=dict(logs), launched=launched)
    if line is None:
        return sr
    sr.launched = _launched_from(line.get("launched")) or launched
    sr.elapsed = float(line["elapsed"]) if _num(line.get("elapsed")) else 0.0
    sr.timed_out = bool(line.get("timed_out"))
    sr.aborted_after_failure = bool(line.get("aborted_after_failure"))
    nodes = line.get("nodes") if isinstance(line.get("nodes"), dict) else {}
    sr.nodes = {str(h): NodeRun(str(h), n.get("rc") if isinstance(n.get("rc"), int) else None,
                                n.get("error") if isinstance(n.get("error"), dict) else None,
                                str(n.get("stderr_tail") or "")[-STDERR_TAIL:],
                                float(n["elapsed"]) if _num(n.get("elapsed")) else 0.0)
                for h, n in nodes.items() if isinstance(n, dict)}
    sr.survivors = {str(h): [str(x) for x in v] for h, v in (line.get("survivors") or {}).items()
                    if isinstance(v, list)} if isinstance(line.get("survivors"), dict) else {}
    sr.kill_errors = {str(h): str(v) for h, v in (line.get("kill_errors") or {}).items()} \
        if isinstance(line.get("kill_errors"), dict) else {}
    sr.commands = {str(h): str(v) for h, v in (line.get("commands") or {}).items()} \
        if isinstance(line.get("commands"), dict) else {}
    sr.run_id = str(line.get("run_id") or "")
    moved = line.get("progress_s")
    if isinstance(moved, list):
        sr.progress = [(float(p[0]), str(p[1])) for p in moved if isinstance(p, list) and len(p) == 2 and _num(p[0])]
    if _num(line.get("stopped_s")):
        sr.stopped_s = float(line["stopped_s"])
    failed = line.get("failures_s")
    if isinstance(failed, list):
        sr.failures = [float(t) for t in failed if _num(t)]
    entered = line.get("entered_s")
    if isinstance(entered, dict):
        sr.entered = {int(k): float(v) for k, v in entered.items() if str(k).isdigit() and _num(v)}
    for key in ("counters", "rejected"):
        d = line.get(key)
        if isinstance(d, dict):
            setattr(sr, key, {str(h): {str(k): v for k, v in c.items() if isinstance(v, int) and not isinstance(v, bool)}
                              for h, c in d.items() if isinstance(c, dict)})
    return sr


def log_path(setting: str, name: str) -> str:
    """Where the log ``host/file`` of ``setting`` is kept: ``nccl-logs/<setting>/<host>/<file>``."""
    host, sep, file = name.partition("/")
    parts = [host, file] if sep else [name]
    return os.path.join(LOGS, safe_name(setting), *(safe_name(p.replace("/", "__")) for p in parts))


def save_logs(run: "rundir.Run", setting: str, logs: Dict[str, str]) -> None:
    for name, text in logs.items():
        run.write(log_path(setting, name), text)


def read_logs(path: str, setting: str) -> Dict[str, str]:
    """The logs of ``setting`` kept in the run directory ``path``, by the names the live run cited."""
    out: Dict[str, str] = {}
    top = os.path.join(path, LOGS, safe_name(setting))
    if not os.path.isdir(top) or os.path.islink(top):
        return out
    for host in sorted(os.listdir(top)):
        d = os.path.join(top, host)
        if os.path.islink(d):
            continue
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                text = rundir.read_text(os.path.join(d, name))
                if text is not None:
                    out[f"{host}/{name}"] = text
        else:  # a file of its own: a log whose name had no host
            text = rundir.read_text(d)
            if text is not None:
                out[host] = text
    return out


def facts_line(host: str, sections: Dict[str, Optional[str]]) -> Dict[str, Any]:
    """One line of ``facts.jsonl``: the outputs of one node the expected bandwidth is derived from."""
    return {"host": host, "sections": sections}


def read_facts(path: str) -> Dict[str, Dict[str, Any]]:
    """``{host: area facts}`` parsed again from ``facts.jsonl`` with the live run's parser."""
    from nccldiag.probe import facts

    out: Dict[str, Dict[str, Any]] = {}
    for line in rundir.read_lines(os.path.join(path, FACTS)):
        secs = line.get("sections")
        if isinstance(line.get("host"), str) and isinstance(secs, dict):
            out[line["host"]] = facts.from_sections({str(k): v for k, v in secs.items()
                                                     if v is None or isinstance(v, str)})
    return out


@dataclass
class Kept:
    """What a probe's run directory holds, decoded: the inputs of ``analysis.analyze``."""

    meta: ProbeMeta
    runs: list  # SettingRun, in the order the settings ran, for every setting that started
    ended: int  # how many settings had ended
    node_facts: Dict[str, Dict[str, Any]]


def read(path: str, meta: Dict[str, Any]) -> Kept:
    """The run directory ``path`` of a probe (its ``run.json`` already read, as ``meta``)."""
    pm = ProbeMeta.from_json(meta)
    ended = {str(line.get("setting")): line for line in rundir.read_lines(os.path.join(path, SETTINGS))}
    launched = pm.launched()
    # the records stream through a gate per setting as they are read: what is held is bounded by the world
    gates = {s.name: results.Reread((_launched_from(ended[s.name].get("launched")) if s.name in ended else None)
                                    or launched) for s in pm.settings}
    records: Dict[str, List[dict]] = {}
    for rec in rundir.iter_lines(os.path.join(path, RECORDS), max_line=4 * results.MAX_LINE):
        name = str(rec.get("setting") or "default")
        gate = gates.get(name)
        kept = gate.admit(rec) if gate is not None else None
        if kept is not None:
            records.setdefault(name, []).append(kept)
    runs = []
    for s in pm.settings:
        line = ended.get(s.name)
        if line is None and s.name not in records:
            continue
        runs.append(setting_run(s, line, records.get(s.name, []), read_logs(path, s.name), launched))
    return Kept(pm, runs, len(ended), read_facts(path))




class Writer:
    """Writes a probe's run directory as the run goes, in the encodings above (the probe's only writer of it)."""

    def __init__(self, run: "rundir.Run"):
        self.run = run
        self.started = False

    def start(self, meta: ProbeMeta) -> None:
        """``run.json`` and the new records and settings files; raises ``OSError`` when they cannot be made."""
        self.run.create(meta.to_json())
        self.run.lines(RECORDS)
        self.run.lines(SETTINGS)
        self.started = True

    def record(self, rec: dict) -> None:
        """A rank's record as it arrives (nothing before :meth:`start`)."""
        if self.started:
            self.run.lines(RECORDS).add(rec)

    def ended(self, sr) -> None:
        """A setting that ended: its logs, then its line."""
        save_logs(self.run, sr.setting.name, sr.logs)
        self.run.lines(SETTINGS).add(setting_line(sr))

    def facts(self, host: str, sections: Dict[str, Optional[str]]) -> None:
        self.run.lines(FACTS).add(facts_line(host, sections))

    def close(self) -> None:
        self.run.close()
