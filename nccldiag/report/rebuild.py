"""A run directory back to its report document.

A finished run kept ``report.json``: that is the document, as the live run
rendered it. A run stopped early (Ctrl-C, a crash) kept only what had
completed; its document is built again from that with the same pure
functions the live run uses: ``check`` judges the raw outputs of the nodes
collected, ``probe`` reads the records of every setting that started. Such a
report says how far the run came, and never exits 0.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from nccldiag import rundir
from nccldiag.model.errors import UsageError
from nccldiag.model.findings import EXIT_UNCHECKED
from nccldiag.report.jsonout import dumps


def load(path: str) -> Dict[str, Any]:
    """The report document of the run directory ``path``."""
    if not os.path.isdir(path):
        raise UsageError(f"{path}: not a directory")
    meta = rundir.read_meta(path)
    doc = rundir.read_report(path)
    if doc is not None:
        return doc
    doc = _check(path, meta) if meta["command"] == "check" else _probe(path, meta)
    return json.loads(dumps(doc))


def _incomplete(doc: Dict[str, Any], note: str) -> Dict[str, Any]:
    doc["interrupted"] = True
    if doc.get("exit_code") == 0:
        doc["exit_code"] = EXIT_UNCHECKED
    if "notes" in doc:
        doc["notes"] = list(doc["notes"]) + [note]
    else:
        doc["note"] = (doc.get("note") + " " if doc.get("note") else "") + note
    return doc


def _check(path: str, meta: Dict[str, Any]) -> Dict[str, Any]:
    from nccldiag import areas as registry
    from nccldiag.check import engine
    from nccldiag.collect import sections
    from nccldiag.report import check_report

    raw_dir = meta.get("bundle") or os.path.join(path, "raw")
    try:
        raws = sections.read_bundle(raw_dir) if os.path.isdir(raw_dir) else []
    except (OSError, ValueError) as exc:
        raise UsageError(f"{raw_dir}: {exc}") from None
    names = meta.get("areas") or []
    try:
        areas_sel = registry.select(list(names), [])
    except ValueError as exc:
        raise UsageError(f"{path}/{rundir.META}: {exc}") from None
    spec = None
    if meta.get("spec"):  # the site spec the run was checked against, read again
        from nccldiag.spec import model

        spec = model.load(str(meta["spec"]))
    report = engine.analyze(raws, areas_sel, meta.get("options") or {}, spec=spec)
    doc = check_report.to_json(report)
    doc["generated_at"] = meta.get("started") or doc["generated_at"]
    doc.pop("elapsed_s", None)
    return _incomplete(doc, f"the run stopped before its end: {len(raws)} node(s) had been collected")


def _probe(path: str, meta: Dict[str, Any]) -> Dict[str, Any]:
    from nccldiag.probe import analysis, results, runner
    from nccldiag.probe.plan import Setting
    from nccldiag.report import probe_report

    settings = [Setting(s["name"], dict(s.get("env") or {}), s.get("why") or "", bool(s.get("custom")),
                        bool(s.get("requires_ib"))) for s in meta.get("settings") or []]
    records: Dict[str, List[dict]] = {}
    for rec in rundir.read_lines(os.path.join(path, "records.jsonl")):
        records.setdefault(str(rec.get("setting") or "default"), []).append(rec)
    ended = {str(line.get("setting")): line for line in rundir.read_lines(os.path.join(path, "settings.jsonl"))}
    hosts = meta.get("hosts") or []
    nproc = meta.get("nproc_per_node")
    launched = None
    if isinstance(hosts, list) and all(isinstance(h, str) for h in hosts) and hosts \
            and isinstance(nproc, int) and 0 < nproc <= results.MAX_WORLD // len(hosts):
        # the world the run launched bounds what its records may say
        launched = results.Launched(tuple(hosts), nproc, tagged="mpirun" if meta.get("launcher") == "mpirun" else None)
    runs = []
    for s in settings:
        line = ended.get(s.name)
        if line is None and s.name not in records:
            continue
        sr = runner.SettingRun(setting=s, records=records.get(s.name, []), launched=launched)
        if line is not None:
            sr.elapsed = float(line.get("elapsed") or 0.0)
            sr.timed_out = bool(line.get("timed_out"))
            sr.aborted_after_failure = bool(line.get("aborted_after_failure"))
            sr.nodes = {h: runner.NodeRun(h, n.get("rc"), n.get("error"), n.get("stderr_tail") or "",
                                          float(n.get("elapsed") or 0.0))
                        for h, n in (line.get("nodes") or {}).items()}
            sr.survivors = dict(line.get("survivors") or {})
            sr.kill_errors = dict(line.get("kill_errors") or {})
            sr.commands = dict(line.get("commands") or {})
            sr.run_id = line.get("run_id") or ""
            moved = line.get("progress_s")
            if isinstance(moved, list):
                sr.progress = [(float(p[0]), str(p[1])) for p in moved if isinstance(p, list) and len(p) == 2
                               and isinstance(p[0], (int, float)) and not isinstance(p[0], bool)]
            stopped = line.get("stopped_s")
            if isinstance(stopped, (int, float)) and not isinstance(stopped, bool):
                sr.stopped_s = float(stopped)
            counters = line.get("counters") or {}
            if isinstance(counters, dict):
                sr.counters = {str(h): {str(k): v for k, v in d.items() if isinstance(v, int) and not isinstance(v, bool)}
                               for h, d in counters.items() if isinstance(d, dict)}
        logs_dir = os.path.join(path, "nccl-logs", runner.safe_name(s.name))
        if os.path.isdir(logs_dir) and not os.path.islink(logs_dir):
            for name in sorted(os.listdir(logs_dir)):
                text = rundir.read_text(os.path.join(logs_dir, name))
                if text is not None:
                    sr.logs[name] = text
        runs.append(sr)
    report = analysis.analyze(
        runs=runs, settings=settings, backend=meta.get("backend") or "?", require_ib=bool(meta.get("require_ib")),
        launcher=meta.get("launcher") or "?", hosts=meta.get("hosts") or [], unreachable={}, problems={},
        loopback=meta.get("loopback") or {}, ifnames=meta.get("ifnames") or {},
        nproc_per_node=int(meta.get("nproc_per_node") or 0), out_dir=path, timeout=meta.get("timeout"),
        run_id=meta.get("run_id"))
    if meta.get("spec"):  # the site spec the run was given, read again: its policy and bandwidth figures
        from nccldiag.spec import model, runs as spec_runs

        report.spec = model.load(str(meta["spec"]))
        # the node facts are read after the last setting: a run stopped before has none (each key: skip)
        report.findings.extend(spec_runs.probe_findings(report.spec, {}, report.hosts, report.backend))
        spec_runs.apply_policy(report.spec, report.all_findings)
    doc = probe_report.to_json(report)
    doc["generated_at"] = meta.get("started") or doc["generated_at"]
    doc.pop("elapsed_s", None)
    done = len(ended)
    return _incomplete(doc, f"the run stopped before its end: {done} of {len(settings)} setting(s) had ended")
