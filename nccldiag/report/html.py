"""One self-contained HTML file from a report document: nothing to fetch to view it.

CSS is inline, plots are inline SVG drawn by matplotlib (deterministic: no
date, a fixed hash salt for element ids), so a live run and ``nccldiag report
RUN_DIR`` write the same bytes. Holds the diagnoses, the node × check grid and
the GPU/NIC topology heat map (check), the transport matrix and busbw-versus-
size plots per setting (probe), and every finding at warn or worse with its
evidence.
"""
from __future__ import annotations

import io
import json
import re
from html import escape
from typing import Any, Dict, Iterable, List, Optional

from nccldiag.model.findings import SEVERITY, Status
from nccldiag.model.sizes import size_text
from nccldiag.report import matrix as tmatrix
from nccldiag.report.probe_report import NOT_RUN

_RANK = {s.value: SEVERITY[s] for s in Status}

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}
h3{font-size:15px;margin:12px 0 4px}.meta{color:#5b6575}.muted{color:#8a93a3}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #d8dde6;padding:3px 8px;text-align:left;white-space:nowrap}
th{background:#f3f5f9}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok,.works{background:#d9f2dd;color:#14532d}.warn{background:#fff1c2;color:#6b4e00}
.fail,.wrong,.hang{background:#f9d0d0;color:#7f1d1d;font-weight:600}.error{background:#ecd5f5;color:#5b1a78}
.skip,.not-used,.not-run,.unknown,.unsupported{background:#f3f5f9;color:#8a93a3}.incomplete{background:#fff1c2}
.summary span{display:inline-block;margin-right:14px}.badge{padding:1px 6px;border-radius:3px}
.diagnosis{border:1px solid #d8dde6;border-left:4px solid #b91c1c;padding:6px 12px;margin:8px 0;background:#fffafa}
.warn-diagnosis{border-left-color:#d4a000;background:#fffdf3}.info-diagnosis{border-left-color:#8a93a3;background:#fff}
.info{background:#f3f5f9;color:#5b6575}
.finding{margin:6px 0}.finding pre,.diagnosis pre{background:#f6f8fa;padding:6px;margin:4px 0;white-space:pre-wrap;overflow-wrap:anywhere;font-size:12px}
.heat td{width:46px;text-align:center;font-size:12px}figure{margin:8px 0;display:inline-block;vertical-align:top}
figcaption{font-weight:600}
"""

_HEAT = [  # (pattern, css background, rank for the legend)
    (r"NV\d+|NVL", "#1a7f37", "NVLink"),
    (r"PIX", "#6cc070", "PIX: one PCIe switch"),
    (r"PXB", "#b5de8f", "PXB: several PCIe switches"),
    (r"PHB", "#f3d36b", "PHB: through the CPU's host bridge"),
    (r"NODE", "#f0a35e", "NODE: across host bridges in one NUMA node"),
    (r"SYS", "#e0605e", "SYS: across NUMA nodes (SMP interconnect)"),
]


def _e(v: Any) -> str:
    return escape("" if v is None else str(v), quote=True)


def _slug(v: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", v).strip("-") or "x"


def _cls(status: Optional[str]) -> str:
    return _slug((status or "unknown").replace(" ", "-"))


def _diagnoses(doc: Dict[str, Any]) -> str:
    from nccldiag.report.diagnoses_report import view

    items = [view(d) for d in doc.get("diagnoses") or []]
    out = ['<section id="diagnoses"><h2>Diagnoses</h2>']
    if not items:
        out.append('<p class="muted">No diagnosis: the evidence shows nothing broken.</p>')
    for i, d in enumerate(items):
        out.append(f'<article class="diagnosis {_cls(d["severity"])}-diagnosis" id="diagnosis-{i}">'
                   f'<h3><span class="badge {_cls(d["severity"])}">{_e(d["severity"].upper())}</span> '
                   f'{_e(d["title"])}</h3>')
        if d["summary"]:
            out.append(f'<div>{_e(d["summary"])}</div>')
        if d["nodes"]:
            out.append(f'<div><b>nodes:</b> {_e(", ".join(d["nodes"]))}</div>')
        if d["confidence"]:
            out.append(f'<div><b>confidence:</b> {_e(d["confidence"])}</div>')
        if d["evidence"]:
            out.append("<pre>" + _e("\n".join(d["evidence"])) + "</pre>")
        if d["fix"]:
            out.append(f'<div><b>fix:</b> {_e(d["fix"])}</div>')
        if d["workaround"]:
            out.append(f'<div><b>workaround:</b> {_e(d["workaround"])}</div>')
        for m in d["missing"]:
            out.append(f'<div class="muted">to confirm, run: {_e(m)}</div>')
        out.append("</article>")
    out.append("</section>")
    return "".join(out)


def _findings(groups: Iterable[tuple]) -> str:
    """``groups``: (where, findings); those at warn or worse, worst first, with evidence and fix."""
    out = ['<section id="findings"><h2>Findings</h2>']
    shown = 0
    for where, found in groups:
        bad = sorted((f for f in found if _RANK.get(f.get("status"), 0) >= _RANK["warn"]),
                     key=lambda f: -_RANK.get(f.get("status"), 0))
        for f in bad:
            shown += 1
            st = f.get("status")
            out.append(f'<div class="finding"><span class="badge {_cls(st)}">{_e(str(st).upper())}</span> '
                       f'<b>{_e(f.get("check"))}</b> <span class="meta">{_e(f.get("host") or where)}</span> '
                       f'{_e(f.get("message"))}')
            ev = f.get("evidence") or []
            extra = []
            if f.get("actual") is not None:
                extra.append(f"actual: {json.dumps(f['actual'], default=str)}")
            if f.get("expected") is not None:
                extra.append(f"expected: {json.dumps(f['expected'], default=str)}")
            if ev or extra:
                out.append(f'<details><summary>evidence</summary><pre>{_e(chr(10).join(extra + list(ev)))}</pre>'
                           "</details>")
            if f.get("fix"):
                out.append(f'<div><b>fix:</b> {_e(f["fix"])}</div>')
            out.append("</div>")
    if not shown:
        out.append('<p class="muted">No finding at warn or worse.</p>')
    out.append("</section>")
    return "".join(out)


def _grid(doc: Dict[str, Any]) -> str:
    areas = doc.get("areas") or []
    out = ['<section id="grid"><h2>Nodes × checks</h2><table class="grid"><thead><tr><th>node</th>']
    out += [f"<th>{_e(a)}</th>" for a in areas]
    out.append("<th>status</th></tr></thead><tbody>")
    for n in doc.get("nodes") or []:
        out.append(f'<tr><th>{_e(n.get("host"))}</th>')
        for a in areas:
            st = (n.get("areas") or {}).get(a)
            checks = [f"{f.get('check')}: {f.get('status')}" for f in n.get("findings") or [] if f.get("area") == a]
            out.append(f'<td class="{_cls(st or "skip")}" title="{_e(chr(10).join(checks))}">{_e(st or "-")}</td>')
        out.append(f'<td class="{_cls(n.get("status"))}">{_e(n.get("status"))}</td></tr>')
    out.append("</tbody></table></section>")
    return "".join(out)


def _heat_color(cell: str) -> str:
    for pattern, color, _ in _HEAT:
        if re.fullmatch(pattern, cell or ""):
            return color
    return "#eef0f4"


def _topology(doc: Dict[str, Any]) -> str:
    groups: Dict[str, List[str]] = {}
    topos: Dict[str, Dict[str, Any]] = {}
    for n in doc.get("nodes") or []:
        topo = (((n.get("facts") or {}).get("topology") or {}) or {}).get("topo") or {}
        if not topo.get("devices") or not topo.get("cells"):
            continue
        key = json.dumps([topo["devices"], topo["cells"]], sort_keys=True)
        groups.setdefault(key, []).append(n.get("host") or "?")
        topos[key] = topo
    if not groups:
        return ""
    out = ['<section id="topology"><h2>GPU/NIC topology</h2><p class="legend">']
    out += [f'<span class="badge" style="background:{c}{";color:#fff" if i == 0 else ""}">{_e(label)}</span> '
            for i, (_, c, label) in enumerate(_HEAT)]
    out.append("</p>")
    for key, hosts in groups.items():
        topo = topos[key]
        devs = topo["devices"]
        names = topo.get("nic_names") or {}
        out.append(f'<h3>{_e(", ".join(hosts))}</h3><table class="heat"><tr><th></th>')
        out += [f'<th title="{_e(names.get(d, d))}">{_e(d)}</th>' for d in devs]
        out.append("</tr>")
        for a in devs:
            out.append(f'<tr><th title="{_e(names.get(a, a))}">{_e(a)}</th>')
            for b in devs:
                cell = (topo["cells"].get(a) or {}).get(b) or (topo["cells"].get(b) or {}).get(a) or ""
                ink = "color:#fff;" if re.fullmatch(_HEAT[0][0], cell or "") else ""
                out.append(f'<td style="{ink}background:{_heat_color(cell)}" title="{_e(a)}-{_e(b)}: {_e(cell)}">'
                           f"{_e(cell)}</td>")
            out.append("</tr>")
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def _matrix(doc: Dict[str, Any]) -> str:
    m = tmatrix.build(doc)
    out = ['<section id="transport-matrix"><h2>Transport matrix</h2><table><thead><tr><th>setting</th><th>status</th>']
    out += [f"<th>{_e(c)}</th>" for c in m.columns]
    out.append("<th>busbw GB/s</th><th>% of expected</th></tr></thead><tbody>")
    for r in m.rows:
        out.append(f'<tr><th>{_e(r.label)}</th><td class="{_cls(r.status)}">{_e(r.status)}</td>')
        out += [f'<td class="{_cls(r.cells[c])}">{_e(r.cells[c])}</td>' for c in m.columns]
        bw = "-" if r.busbw is None else f"{r.busbw:.2f}" + (f" ({r.collective})" if r.collective else "")
        pct = "-" if r.percent is None else f"{r.percent:.0f}% of {r.expected:.1f}"
        out.append(f'<td class="num">{_e(bw)}</td><td class="num">{_e(pct)}</td></tr>')
    out.append("</tbody></table>")
    if doc.get("backend") != "nccl":
        out.append('<p class="muted">gloo: the columns are the socket interfaces the ranks bound.</p>')
    out.append("</section>")
    return "".join(out)


def _plot(setting: Dict[str, Any], expected_gbps: Optional[float] = None) -> Optional[str]:
    """busbw against message size for every collective that moved data, as inline SVG."""
    series = []
    for name, oc in (setting.get("collectives") or {}).items():
        pts = sorted((int(p["size"]), float(p.get("busbw") or 0.0)) for p in oc.get("sweep") or [] if p.get("size"))
        if pts:
            series.append((name, pts))
    if not series:
        return None
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    from cycler import cycler

    colours = matplotlib.colormaps["tab20"].colors
    style = {"svg.hashsalt": "nccldiag", "svg.fonttype": "none", "font.size": 8,
             "axes.prop_cycle": cycler(color=colours[0::2] + colours[1::2])}
    with matplotlib.rc_context(style):
        fig = Figure(figsize=(6.4, 3.4))
        ax = fig.add_subplot(1, 1, 1)
        for name, pts in series:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=2.5, linewidth=1, label=name)
        if expected_gbps is not None:
            ax.axhline(float(expected_gbps), color="#b91c1c", linestyle="--", linewidth=1,
                       label=f"expected {float(expected_gbps):.1f}")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: size_text(v, short=True)))
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.grid(True, linewidth=0.3)
        ax.legend(fontsize=6, ncol=2, loc="upper left", frameon=False)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def _plots(doc: Dict[str, Any]) -> str:
    out = ['<section id="busbw"><h2>busbw by message size</h2>']
    any_plot = False
    for s in doc.get("settings") or []:
        svg = _plot(s, tmatrix.expectation(doc, s)[1])
        if svg is None:
            continue
        any_plot = True
        out.append(f'<figure id="plot-{_slug(s.get("name") or "?")}"><figcaption>{_e(s.get("name"))}</figcaption>'
                   f"{svg}</figure>")
    if not any_plot:
        out.append('<p class="muted">No collective moved data.</p>')
    out.append("</section>")
    return "".join(out)


def _collectives(doc: Dict[str, Any]) -> str:
    out = ['<section id="collectives"><h2>Collectives per setting</h2>']
    for s in doc.get("settings") or []:
        out.append(f'<h3>{_e(s.get("name"))} <span class="badge {_cls(s.get("status"))}">{_e(s.get("status"))}'
                   f'</span> <span class="meta">{_e(s.get("elapsed_s"))} s</span></h3>')
        if not s.get("collectives"):
            out.append('<p class="muted">no rank reported anything</p>')
            continue
        out.append("<table><tr><th>collective</th><th>status</th><th>ranks ok</th><th>peak busbw GB/s</th></tr>")
        for name, oc in s["collectives"].items():
            pts = [float(p.get("busbw") or 0.0) for p in oc.get("sweep") or [] if p.get("size")]
            peak = f"{max(pts):.2f}" if pts else "-"
            out.append(f'<tr><td>{_e(name)}</td><td class="{_cls(oc.get("status"))}">{_e(oc.get("status"))}</td>'
                       f'<td class="num">{len(oc.get("ranks_ok") or [])}</td><td class="num">{peak}</td></tr>')
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def _head(title: str, doc: Dict[str, Any], summary: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
            f'<header id="summary"><h1>{_e(title)}</h1><div class="meta">{_e(doc.get("schema"))} · nccldiag '
            f'{_e(doc.get("nccldiag_version"))} · {_e(doc.get("generated_at"))} · exit {_e(doc.get("exit_code"))}'
            f'</div><div class="summary">{summary}</div></header>')


def render(doc: Dict[str, Any]) -> str:
    """The HTML text of a check, probe, log or isolate document."""
    schema = str(doc.get("schema") or "")
    if schema.startswith("nccldiag.check/"):
        counts = (doc.get("summary") or {}).get("by_status") or {}
        summary = "".join(f'<span class="badge {_cls(k)}">{_e(v)} {_e(k)}</span>' for k, v in counts.items() if v)
        body = [_head(f"nccldiag check: {len(doc.get('nodes') or [])} node(s)", doc, summary),
                _diagnoses(doc), _grid(doc), _topology(doc),
                _findings((n.get("host"), n.get("findings") or []) for n in doc.get("nodes") or [])]
    elif schema.startswith("nccldiag.probe/"):
        settings = doc.get("settings") or []
        worked = sum(1 for s in settings if s.get("status") == "ok")
        unrun = sum(1 for s in settings if s.get("status") in NOT_RUN)
        failed = len(settings) - worked - unrun
        summary = (f'<span>{_e(doc.get("backend"))} via {_e(doc.get("launcher"))}, {len(doc.get("hosts") or [])} '
                   f'node(s) × {_e(doc.get("nproc_per_node"))} rank(s)</span>'
                   f'<span class="badge ok">{worked} setting(s) worked</span>'
                   + (f'<span class="badge fail">{failed} failed</span>' if failed else "")
                   + (f'<span class="badge skip">{unrun} not run</span>' if unrun else ""))
        groups = [("probe", doc.get("findings") or [])] + [(s.get("name"), s.get("findings") or []) for s in settings]
        body = [_head(f"nccldiag probe: {', '.join(doc.get('hosts') or [])}", doc, summary),
                _diagnoses(doc), _matrix(doc), _plots(doc), _collectives(doc), _findings(groups)]
        if doc.get("note"):
            body.insert(1, f'<p class="muted">{_e(doc["note"])}</p>')
    elif schema.startswith("nccldiag.log/"):
        found = doc.get("findings") or []
        failed = sum(1 for f in found if f.get("status") == "fail")
        summary = (f'<span>{len(doc.get("files") or [])} file(s)</span>'
                   f'<span class="badge {"fail" if failed else "ok"}">{failed} failure(s)</span>')
        body = [_head(f"nccldiag log: {', '.join(doc.get('files') or [])}", doc, summary),
                _diagnoses(doc), _findings([("log", found)])]
    elif schema.startswith("nccldiag.isolate/"):
        nodes = doc.get("nodes") or []
        bad = [v.get("node") for v in nodes if v.get("verdict") == "bad"]
        summary = (f'<span>{_e(doc.get("backend"))} via {_e(doc.get("launcher"))}, {len(doc.get("hosts") or [])} '
                   f'node(s) × {_e(doc.get("nproc_per_node"))} rank(s)</span>'
                   f'<span class="badge {"fail" if bad else "ok"}">{len(bad)} bad</span>')
        body = [_head(f"nccldiag isolate: {', '.join(doc.get('hosts') or [])}", doc, summary),
                _isolate_nodes(doc), _isolate_rounds(doc), _findings([("isolate", doc.get("findings") or [])])]
        if doc.get("note"):
            body.insert(1, f'<p class="muted">{_e(doc["note"])}</p>')
    else:
        raise ValueError(f"no HTML form for a {schema or 'schema-less'} document")
    return "".join(body) + "</body></html>\n"


def _isolate_nodes(doc: Dict[str, Any]) -> str:
    out = ['<section id="nodes"><h2>Nodes</h2>']
    if not doc.get("nodes"):
        out.append('<p class="muted">No node was judged.</p>')
    else:
        out.append("<table><tr><th>node</th><th>verdict</th><th>class</th><th>evidence</th></tr>")
        for v in doc["nodes"]:
            verdict = v.get("verdict")
            out.append(f'<tr><td>{_e(v.get("node"))}</td><td class="{_cls(_ISOLATE_STATUS.get(verdict, "skip"))}">'
                       f'{_e(verdict)}</td><td>{_e(v.get("cls") or "-")}</td>'
                       f'<td>{_e((v.get("evidence") or ["-"])[0])}</td></tr>')
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def _isolate_rounds(doc: Dict[str, Any]) -> str:
    out = ['<section id="rounds"><h2>Rounds</h2>']
    for r in doc.get("rounds") or []:
        out.append(f'<h3>round {_e(r.get("index"))} {_e(r.get("stage"))} '
                   f'<span class="meta">{_e(r.get("elapsed_s"))} s</span></h3>')
        out.append("<table><tr><th>row</th><th>nodes</th><th>result</th><th>busbw GB/s</th></tr>")
        for j in r.get("jobs") or []:
            result = j.get("kind") or j.get("status")
            bw = j.get("busbw")
            out.append(f'<tr><td>{_e(j.get("row"))}</td><td>{_e(", ".join(j.get("nodes") or []))}</td>'
                       f'<td class="{_cls({"ok": "ok", "not-started": "skip", "unmeasured": "skip"}.get(str(result), "fail"))}">{_e(result)}</td>'
                       f'<td class="num">{"-" if bw is None else f"{float(bw):.4g}"}</td></tr>')
        out.append("</table>")
    if not doc.get("rounds"):
        out.append('<p class="muted">No round ran to its end.</p>')
    out.append("</section>")
    return "".join(out)


# an isolate verdict as a finding status
_ISOLATE_STATUS = {"ok": "ok", "bad": "fail", "suspect": "warn", "excluded": "fail", "untested": "skip"}
