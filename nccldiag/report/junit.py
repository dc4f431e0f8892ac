"""JUnit XML from a report document: one test case per node × check, and per setting × collective.

The document is the report's JSON object (``check_report.to_json``,
``probe_report.to_json``), so a live run and ``nccldiag report RUN_DIR``
produce the same bytes. Statuses map onto JUnit as CI viewers read it:
``fail`` is a <failure> (actual vs expected in its message), ``error`` (could
not be checked) an <error>, ``skip`` and collectives not run are <skipped>,
``ok`` and ``warn`` pass (a warning's message goes to <system-out>).
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import OrderedDict
from typing import Any, Dict, List, Tuple

from nccldiag import rx
from nccldiag.model.findings import SEVERITY, Status

_RANK = {s.value: SEVERITY[s] for s in Status}
# characters XML 1.0 cannot hold, even escaped: text from nodes never makes the file unreadable
_NOT_XML = rx.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_safe(root: ET.Element) -> None:
    for el in root.iter():
        for k, v in el.attrib.items():
            el.set(k, _NOT_XML.sub("", v))
        if el.text:
            el.text = _NOT_XML.sub("", el.text)


def _value(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True, default=str)


def _message(f: Dict[str, Any]) -> str:
    msg = f.get("message") or ""
    parts = []
    if f.get("actual") is not None:
        parts.append(f"actual: {_value(f['actual'])}")
    if f.get("expected") is not None:
        parts.append(f"expected: {_value(f['expected'])}")
    return msg + (f" ({'; '.join(parts)})" if parts else "")


def _detail(f: Dict[str, Any]) -> str:
    lines = [_message(f)]
    lines += [f"| {e}" for e in f.get("evidence") or []]
    if f.get("fix"):
        lines.append(f"fix: {f['fix']}")
    return "\n".join(lines)


def _case(suite: ET.Element, classname: str, name: str, findings: List[Dict[str, Any]],
          counts: Dict[str, int], time_s: float = 0.0) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time=f"{time_s:.3f}")
    counts["tests"] += 1
    worst = max(findings, key=lambda f: _RANK.get(f.get("status"), 0)) if findings else None
    status = worst.get("status") if worst else "ok"
    bad = [f for f in findings if f.get("status") == status]
    text = "\n".join(_detail(f) for f in bad)
    if status == "fail":
        ET.SubElement(case, "failure", message=_message(bad[0]), type=bad[0].get("check") or "fail").text = text
        counts["failures"] += 1
    elif status == "error":
        ET.SubElement(case, "error", message=_message(bad[0]), type=bad[0].get("check") or "error").text = text
        counts["errors"] += 1
    elif status == "skip":
        ET.SubElement(case, "skipped", message=_message(bad[0]))
        counts["skipped"] += 1
    elif status == "warn":
        ET.SubElement(case, "system-out").text = "warn: " + text


def _suite(root: ET.Element, name: str) -> Tuple[ET.Element, Dict[str, int]]:
    return ET.SubElement(root, "testsuite", name=name), {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}


def _close(suite: ET.Element, counts: Dict[str, int], total: Dict[str, int]) -> None:
    for k, v in counts.items():
        suite.set(k, str(v))
        total[k] += v


def _check(doc: Dict[str, Any], root: ET.Element, total: Dict[str, int]) -> None:
    for node in doc.get("nodes") or []:
        host = node.get("host") or "?"
        suite, counts = _suite(root, f"nccldiag check {host}")
        suite.set("hostname", host)
        by_check: "OrderedDict[str, List[Dict[str, Any]]]" = OrderedDict()
        for f in node.get("findings") or []:
            by_check.setdefault(f.get("check") or "?", []).append(f)
        for check, found in by_check.items():
            _case(suite, f"check.{host}", check, found, counts)
        _close(suite, counts, total)


_COLLECTIVE_STATUS = {"ok": "ok", "wrong": "fail", "hang": "fail", "error": "fail", "incomplete": "fail",
                      "unsupported": "skip", "not-run": "skip"}


def _probe(doc: Dict[str, Any], root: ET.Element, total: Dict[str, int]) -> None:
    if doc.get("findings"):
        suite, counts = _suite(root, "nccldiag probe")
        by_check: "OrderedDict[str, List[Dict[str, Any]]]" = OrderedDict()
        for f in doc["findings"]:
            by_check.setdefault(f.get("check") or "?", []).append(f)
        for check, found in by_check.items():
            _case(suite, "probe", check, found, counts)
        _close(suite, counts, total)
    for s in doc.get("settings") or []:
        name = s.get("name") or "?"
        suite, counts = _suite(root, f"nccldiag probe {name}")
        findings = s.get("findings") or []
        used = set()
        for coll, outcome in (s.get("collectives") or {}).items():
            check = f"probe.{coll}"
            found = [f for f in findings if f.get("check") == check]
            used.update(id(f) for f in found)
            if not found:
                status = _COLLECTIVE_STATUS.get(outcome.get("status"), "fail")
                found = [{"check": check, "status": status,
                          "message": f"[{name}] {coll}: {outcome.get('status')}",
                          "actual": outcome.get("status"), "expected": "ok" if status != "ok" else None}]
            _case(suite, f"probe.{name}", coll, found, counts)
        rest = [f for f in findings if id(f) not in used]
        by_check: "OrderedDict[str, List[Dict[str, Any]]]" = OrderedDict()
        for f in rest:
            by_check.setdefault(f.get("check") or "?", []).append(f)
        for check, found in by_check.items():
            _case(suite, f"probe.{name}", check, found, counts)
        if not s.get("collectives") and not rest:
            _case(suite, f"probe.{name}", "run", [{"check": "probe.run", "status": "fail",
                                                   "message": f"[{name}] no rank reported anything",
                                                   "actual": s.get("status"), "expected": "ok"}], counts)
        _close(suite, counts, total)


# an isolate verdict as a finding status
_ISOLATE_STATUS = {"ok": "ok", "bad": "fail", "suspect": "warn", "excluded": "fail", "untested": "skip"}


def _isolate(doc: Dict[str, Any], root: ET.Element, total: Dict[str, int]) -> None:
    suite, counts = _suite(root, "nccldiag isolate")
    for v in doc.get("nodes") or []:
        node, verdict = v.get("node") or "?", v.get("verdict")
        what = f"{verdict}: {v['cls']}" if v.get("cls") else str(verdict)
        _case(suite, "isolate.node", node, [{"check": "isolate.node", "status": _ISOLATE_STATUS.get(verdict, "fail"),
                                             "message": f"{node}: {what}", "evidence": v.get("evidence") or []}],
              counts)
    by_check: "OrderedDict[str, List[Dict[str, Any]]]" = OrderedDict()
    for f in doc.get("findings") or []:
        by_check.setdefault(f.get("check") or "?", []).append(f)
    for check, found in by_check.items():
        _case(suite, "isolate", check, found, counts)
    if not doc.get("nodes") and not by_check:
        _case(suite, "isolate", "run", [{"check": "isolate.run", "status": "error",
                                         "message": "no node was judged"}], counts)
    _close(suite, counts, total)


def _log(doc: Dict[str, Any], root: ET.Element, total: Dict[str, int]) -> None:
    suite, counts = _suite(root, "nccldiag log")
    by_check: "OrderedDict[str, List[Dict[str, Any]]]" = OrderedDict()
    for f in doc.get("findings") or []:
        by_check.setdefault(f.get("check") or "?", []).append(f)
    for check, found in by_check.items():
        _case(suite, "log", check, found, counts)
    if not by_check:
        _case(suite, "log", "read", [], counts)  # the files were read: nothing to fail
    _close(suite, counts, total)


_KINDS = {"check": _check, "probe": _probe, "log": _log, "isolate": _isolate}


def render(doc: Dict[str, Any]) -> str:
    """The JUnit XML text of a check, probe, log or isolate document."""
    root = ET.Element("testsuites", name=f"nccldiag {doc.get('schema', '?')}")
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    schema = str(doc.get("schema") or "")
    kind = _KINDS.get(schema.split("/")[0].split(".")[-1]) if schema.startswith("nccldiag.") else None
    if kind is None:
        raise ValueError(f"no JUnit form for a {schema or 'schema-less'} document")
    kind(doc, root, total)
    for k, v in total.items():
        root.set(k, str(v))
    if doc.get("elapsed_s") is not None:
        root.set("time", f"{float(doc['elapsed_s']):.3f}")
    for suite in root:
        suite.set("timestamp", str(doc.get("generated_at") or ""))
    _xml_safe(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
