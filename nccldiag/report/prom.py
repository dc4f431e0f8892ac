"""Prometheus text exposition of a report document (node_exporter's textfile collector).

Written with prometheus-client's own text format (``generate_latest`` on a
private registry). Status values: ``ok`` 0, ``warn`` 1, ``fail`` 2, ``error``
(could not be checked) 3, ``skip`` -1, so ``>= 2`` is the alert threshold.
Collective statuses: ``ok`` 0, ``unsupported``/``not-run`` -1, anything
else (wrong, hang, error, incomplete) 2.
"""
from __future__ import annotations

import calendar
import time
from typing import Any, Dict

from nccldiag.model.findings import SEVERITY, Status
from nccldiag.report.matrix import expectation

STATUS_VALUE = {"ok": 0, "warn": 1, "fail": 2, "error": 3, "skip": -1}
COLLECTIVE_VALUE = {"ok": 0, "unsupported": -1, "not-run": -1}
ISOLATE_VALUE = {"ok": 0, "suspect": 1, "bad": 2, "excluded": 2, "untested": -1}
_RANK = {s.value: SEVERITY[s] for s in Status}


def _worst(statuses) -> str:
    statuses = [s for s in statuses if s in _RANK]
    return max(statuses, key=_RANK.get) if statuses else "skip"


def _timestamp(doc: Dict[str, Any]) -> float:
    try:
        return float(calendar.timegm(time.strptime(str(doc.get("generated_at")), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return 0.0


def render(doc: Dict[str, Any]) -> str:
    """The exposition text of a check, probe, log or isolate document."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    reg = CollectorRegistry(auto_describe=True)
    schema = str(doc.get("schema") or "")
    kind = schema.split("/")[0].split(".")[-1]
    if kind not in ("check", "probe", "log", "isolate"):
        raise ValueError(f"no Prometheus form for a {schema or 'schema-less'} document")
    Gauge("nccldiag_last_run_timestamp_seconds", "When the nccldiag run started (Unix time).",
          ["command"], registry=reg).labels(kind).set(_timestamp(doc))
    Gauge("nccldiag_exit_code", "Exit code of the run: 0 healthy, 1 unhealthy, 3 incomplete.",
          ["command"], registry=reg).labels(kind).set(doc.get("exit_code") or 0)
    Gauge("nccldiag_diagnoses", "Diagnoses the run made.", ["command"], registry=reg
          ).labels(kind).set(len(doc.get("diagnoses") or []))
    if kind == "check":
        node_g = Gauge("nccldiag_node_status", "Worst status of a node: ok 0, warn 1, fail 2, error 3, skip -1.",
                       ["node"], registry=reg)
        check_g = Gauge("nccldiag_check_status",
                        "Status of one check on one node: ok 0, warn 1, fail 2, error 3, skip -1.",
                        ["node", "check"], registry=reg)
        for node in doc.get("nodes") or []:
            host = node.get("host") or "?"
            node_g.labels(host).set(STATUS_VALUE.get(node.get("status"), 3))
            by_check: Dict[str, list] = {}
            for f in node.get("findings") or []:
                by_check.setdefault(f.get("check") or "?", []).append(f.get("status"))
            for check, statuses in by_check.items():
                check_g.labels(host, check).set(STATUS_VALUE[_worst(statuses)])
    elif kind == "log":
        check_g = Gauge("nccldiag_log_check_status",
                        "Worst status of one check over the logs: ok 0, warn 1, fail 2, error 3, skip -1.",
                        ["check"], registry=reg)
        by_check: Dict[str, list] = {}
        for f in doc.get("findings") or []:
            by_check.setdefault(f.get("check") or "?", []).append(f.get("status"))
        for check, statuses in by_check.items():
            check_g.labels(check).set(STATUS_VALUE[_worst(statuses)])
    elif kind == "isolate":
        node_g = Gauge("nccldiag_isolate_node_status",
                       "Verdict of an isolation on a node: ok 0, suspect 1, bad or excluded 2, untested -1.",
                       ["node"], registry=reg)
        for v in doc.get("nodes") or []:
            node_g.labels(v.get("node") or "?").set(ISOLATE_VALUE.get(v.get("verdict"), 2))
        pair_g = None
        for r in doc.get("rounds") or []:
            for j in r.get("jobs") or []:
                if j.get("busbw") is not None and len(j.get("nodes") or []) == 2:
                    if pair_g is None:
                        pair_g = Gauge("nccldiag_isolate_pair_busbw_gigabytes_per_second",
                                       "Bus bandwidth of a pair of nodes on one network path (GB/s), its last job.",
                                       ["row", "nodes"], registry=reg)
                    pair_g.labels(j.get("row") or "?", "-".join(j["nodes"])).set(float(j["busbw"]))
    else:
        setting_g = Gauge("nccldiag_probe_setting_ok", "1 when every collective of the setting worked, else 0.",
                          ["setting"], registry=reg)
        coll_g = Gauge("nccldiag_probe_collective_status",
                       "Status of one collective under one setting: ok 0, failed 2, not run -1.",
                       ["setting", "collective"], registry=reg)
        bw_g = Gauge("nccldiag_probe_busbw_gigabytes_per_second",
                     "Peak bus bandwidth of one collective under one setting (GB/s, nccl-tests' busbw).",
                     ["setting", "collective"], registry=reg)
        exp_g = None
        for s in doc.get("settings") or []:
            name = s.get("name") or "?"
            setting_g.labels(name).set(1 if s.get("status") == "ok" else 0)
            for coll, oc in (s.get("collectives") or {}).items():
                coll_g.labels(name, coll).set(COLLECTIVE_VALUE.get(oc.get("status"), 2))
                sweep = [p for p in oc.get("sweep") or [] if p.get("size")]
                if sweep:
                    bw_g.labels(name, coll).set(max(float(p.get("busbw") or 0.0) for p in sweep))
            expected = expectation(doc, s)[1]
            if expected is not None:
                if exp_g is None:
                    exp_g = Gauge("nccldiag_probe_expected_busbw_gigabytes_per_second",
                                  "Bus bandwidth expected under one setting from what the nodes report (GB/s).",
                                  ["setting"], registry=reg)
                exp_g.labels(name).set(float(expected))
    return generate_latest(reg).decode("utf-8")
