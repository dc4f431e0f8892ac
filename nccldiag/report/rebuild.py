"""A run directory back to its report document.

A finished run kept ``report.json``: that is the document, as the live run
rendered it. A run stopped early (Ctrl-C, a crash) kept only what had
completed; its document is built again from that with the same pure
functions the live run uses: ``check`` judges the raw outputs of the nodes
collected (its ``run.json`` decoded by :class:`nccldiag.sessions.check.CheckMeta`,
which encoded it), ``probe`` reads the records of every setting that started (each
file decoded by :mod:`nccldiag.probe.records`, which encoded it). An
``isolate`` verdict needs every round: a stopped one says what ran and
that no verdict was reached. Such a report says how far the run came, and
never exits 0.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict

from nccldiag import rundir
from nccldiag.atomic import Unsafe, check_links
from nccldiag.model.errors import UsageError
from nccldiag.model.findings import EXIT_UNCHECKED
from nccldiag.report import schema
from nccldiag.report.jsonout import dumps


def load(path: str) -> Dict[str, Any]:
    """The report document of the run directory ``path``."""
    if not os.path.isdir(path):
        raise UsageError(f"{path}: not a directory")
    meta = rundir.read_meta(path)
    doc = rundir.read_report(path)
    where = os.path.join(path, rundir.REPORT)
    if doc is None:
        doc = json.loads(dumps({"check": _check, "probe": _probe, "isolate": _isolate}[meta["command"]](path, meta)))
        where = f"{path} (the report rebuilt from {rundir.META} and the files beside it)"
    try:  # a run directory is read, never trusted: every field of the type the renderers read, or no report
        schema.check(doc)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None
    return doc


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
    from nccldiag import areas as registry, diagnosis
    from nccldiag.bundle import NOT_COLLECTED, not_collected, read_bundle
    from nccldiag.check import engine
    from nccldiag.report import check_report
    from nccldiag.sessions.check import CheckMeta

    try:
        cm = CheckMeta.from_json(meta)
    except ValueError as exc:
        raise UsageError(f"{path}/{rundir.META}: {exc}") from None
    raw_dir = cm.bundle or os.path.join(path, rundir.RAW)
    try:
        if cm.bundle:  # a bundle the run was given, read again where run.json says: never through another's link
            check_links(raw_dir, last=True)
        raws = read_bundle(raw_dir) if os.path.isdir(raw_dir) else []
    except Unsafe as exc:
        raise UsageError(f"{path}/{rundir.META} names the bundle {exc}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{raw_dir}: {exc}") from None
    try:
        areas_sel = registry.select(list(cm.areas), [])
    except ValueError as exc:
        raise UsageError(f"{path}/{rundir.META}: {exc}") from None
    spec = _spec(path, cm.spec) if cm.spec else None  # the site spec the run was checked against, read again
    have = {r.host for r in raws}
    try:  # the hosts run.json names that never reached the run directory: named, not checked
        raws += [not_collected(h, f"{path}/{rundir.META}") for h in dict.fromkeys(cm.hosts) if h not in have]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    missing = [r.host for r in raws if (r.error or {}).get("kind") == NOT_COLLECTED]
    report = engine.analyze(raws, areas_sel, cm.options, spec=spec)
    diagnosis.attach(report, check=report, spec=spec)
    doc = check_report.to_json(report)
    doc["generated_at"] = cm.started or doc["generated_at"]
    doc.pop("elapsed_s", None)
    never = f"; never collected: {', '.join(missing[:20])}" + (f" and {len(missing) - 20} more" if len(missing) > 20
                                                               else "") if missing else ""
    return _incomplete(doc, f"the run stopped before its end: {len(raws) - len(missing)} node(s) had been "
                            f"collected{never}")


def _spec(path: str, spec_path: str):
    """The site spec ``run.json`` names, read as ``--spec`` is (a regular file of root's or this user's, capped,
    its shape bounded): a run directory may be someone else's, and the path in it anything."""
    from nccldiag.spec import model

    if not isinstance(spec_path, str):
        raise UsageError(f"{path}/{rundir.META}: 'spec' should be a path")
    try:
        return model.load(spec_path)
    except UsageError as exc:
        raise UsageError(f"{path}/{rundir.META} names the site spec {spec_path}, which cannot be used: {exc}") from None


def _probe(path: str, meta: Dict[str, Any]) -> Dict[str, Any]:
    from nccldiag.probe import analysis, records
    from nccldiag.report import probe_report

    kept = records.read(path, meta)
    pm = kept.meta
    report = analysis.analyze(
        runs=kept.runs, settings=pm.settings, backend=pm.backend, require_ib=pm.require_ib, launcher=pm.launcher,
        hosts=pm.hosts, unreachable={}, problems={}, loopback=pm.loopback, ifnames=pm.ifnames,
        nproc_per_node=pm.nproc_per_node, out_dir=path, timeout=pm.timeout, run_id=pm.run_id or None,
        iface_speeds=pm.iface_speeds, route_ifnames=pm.route_ifnames, node_facts=kept.node_facts)
    spec = _spec(path, pm.spec) if pm.spec else None  # the site spec the run was given: its policy, its figures
    analysis.conclude(report, spec)
    doc = probe_report.to_json(report)
    doc["generated_at"] = pm.started or doc["generated_at"]
    doc.pop("elapsed_s", None)
    return _incomplete(doc, f"the run stopped before its end: {kept.ended} of {len(pm.settings)} setting(s) had ended")


def _isolate(path: str, meta: Dict[str, Any]) -> Dict[str, Any]:
    from nccldiag.isolate import judge as isolate
    from nccldiag.probe import records
    from nccldiag.report import isolate_report

    kept = sum(1 for _ in rundir.iter_lines(os.path.join(path, records.RECORDS)))
    doc = isolate_report.to_json(isolate.IsolateReport.from_meta(meta, out_dir=path))
    # the rounds that ended, as they were kept: each job's outcome, not yet judged
    doc["rounds"] = [r for r in rundir.read_lines(os.path.join(path, isolate.ROUNDS))
                     if isinstance(r.get("jobs"), list) and all(isinstance(j, dict) for j in r["jobs"])]
    doc["rounds_after_round0"] = sum(1 for r in doc["rounds"] if r.get("stage") != isolate.ALONE)
    doc["generated_at"] = meta.get("started") or doc["generated_at"]
    doc.pop("elapsed_s", None)
    return _incomplete(doc, f"the run stopped before its end ({len(doc['rounds'])} round(s) and {kept} record(s) "
                            "kept): an isolation names nodes only once its rounds are done, so no verdict was "
                            "reached; run it again")
