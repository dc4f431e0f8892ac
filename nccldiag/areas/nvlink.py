"""NVLink and the NVSwitch fabric: fabric manager, fabric state, link count and speed, link error counters.

On NVSwitch systems (HGX/DGX A100, H100, H200, B200; GB200 NVL) no GPU can
reach another over NVLink until the fabric manager has configured the
switches and each GPU has registered with the fabric:

- ``nvlink.fabric``: each GPU's ``Fabric`` ``State`` and ``Status`` in
  ``nvidia-smi -q`` (driver 535+) must read ``Completed`` / ``Success``
  (NVSentinel's fabric state check; Azure/azhpc-images). ``N/A`` means the
  GPU has no NVSwitch fabric. Recent drivers (MNNVL, GB200) add a ``Health``
  subsection: ``Summary`` other than ``Healthy`` (``Unhealthy`` fails,
  ``Limited Capacity`` warns), ``Bandwidth`` other than ``Full``, and route
  recovery, route unhealthy, access-timeout recovery or an incorrect
  configuration warn.
- ``nvlink.fabricmanager``: the ``nvidia-fabricmanager`` service
  (``systemctl show``) must be active where the GPUs have a fabric, and its
  log (``/var/log/fabricmanager.log``, else the unit's journal) must show no
  NVSwitch errors (gpud's fabric-manager component reads the same log).
- ``nvlink.links``: every GPU has the links its model has, each at its
  model's speed (``nvidia-smi nvlink -s``; NVIDIA Health Validation
  ``nvlink_bandwidth_count_speed``: 18 links at 26.562 GB/s on H100/H200,
  18 at 53.125 GB/s on B200/GB200), else as many and as fast as the other
  GPUs of the node. Inactive links of an otherwise linked GPU are
  ``gpu.nvlink``'s finding where the ``gpu`` area has an inventory, this
  check's otherwise; an output with GPU lines but no link state (``nvlink
  --capabilities``) is a skip.
- ``nvlink.errors``: the replay, recovery and CRC counters of
  ``nvidia-smi nvlink -e`` (slurm-gcp's prolog drains a node on any
  non-zero NVLink error count).

``nvlink.links`` reads the ``gpu`` area's ``nvlink_status`` source (listed
here too, so that it is collected when ``gpu`` is skipped).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from nccldiag import rx
from nccldiag.areas import gpu as gpu_area
from nccldiag.areas import smiq
from nccldiag.areas.base import NodeFacts, Source, section, parsed
from nccldiag.model.findings import Finding, fail, ok, skip, warn

NAME = "nvlink"
TITLE = "NVLink fabric"

_FM = "nvidia-fabricmanager"
FM_SOURCE = Source(
    "fabricmanager",
    '[ -d "$R/proc/driver/nvidia" ] || [ -r "$R/var/log/fabricmanager.log" ] || command -v nv-fabricmanager >/dev/null 2>&1 || exit 0; '
    f"if command -v systemctl >/dev/null 2>&1; then systemctl show -p LoadState -p ActiveState -p SubState -p Result {_FM}.service 2>/dev/null; fi; "
    "if command -v nv-fabricmanager >/dev/null 2>&1; then echo \"fm-version: $(nv-fabricmanager --version 2>&1 | head -n 2 | tr '\\n' ' ')\"; fi; "
    'if [ -r "$R/var/log/fabricmanager.log" ]; then echo "--- /var/log/fabricmanager.log"; '
    'tail -n 5000 "$R/var/log/fabricmanager.log" | grep -E "ERROR|FATAL|[Ff]atal|version|Successfully configured|initializing|failed" | tail -n 80; '
    f"elif command -v journalctl >/dev/null 2>&1; then echo '--- journal'; journalctl -u {_FM} -b --no-pager -q -n 80 2>/dev/null; fi",
    timeout=15,
    description="fabric manager (where the NVIDIA driver, the manager or its log is present): systemd state, version, "
                "log lines (errors, start, version)",
)
NVLINK_ERRORS = Source(
    "nvlink_errors",
    "command -v nvidia-smi >/dev/null 2>&1 || exit 0; nvidia-smi nvlink -e 2>&1 | head -n 5000",
    timeout=30,
    description="nvidia-smi nvlink -e: replay, recovery and CRC error counters per link",
)
_STATUS = next(s for s in gpu_area.SOURCES if s.name == "nvlink_status")

SOURCES = (smiq.SOURCE, _STATUS, NVLINK_ERRORS, FM_SOURCE)

# (name fragment, links, GB/s per link): NVIDIA Health Validation nvlink_bandwidth_count_speed, NVIDIA datasheets
EXPECTED = (
    ("GB300", 18, 53.125), ("GB200", 18, 53.125), ("B300", 18, 53.125), ("B200", 18, 53.125),
    ("H200", 18, 26.562), ("H100 80GB HBM3", 18, 26.562), ("A100-SXM4", 12, 25.0), ("V100-SXM2", 6, 25.781),
)


def expected_links(name: Optional[str]) -> Optional[Tuple[int, float]]:
    if not name or "NVL" in name.replace("NVLink", "") or "PCIe" in name:
        return None
    for frag, n, speed in EXPECTED:
        if frag in name:
            return n, speed
    return None


@dataclass
class LinkGpu:
    index: int
    name: Optional[str] = None
    links: Dict[int, Optional[float]] = field(default_factory=dict)  # link -> GB/s; None: inactive
    elided: bool = False  # the output was cut or elided inside this GPU's block
    all_inactive: bool = False  # "Unable to retrieve NVLink information as all links are inactive"

    @property
    def active(self) -> int:
        return sum(1 for s in self.links.values() if s is not None)


@dataclass
class FabricManager:
    props: Dict[str, str] = field(default_factory=dict)  # systemctl show
    version: Optional[str] = None
    log: List[str] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    fatal: List[str] = field(default_factory=list)
    state_from_log: Optional[str] = None  # "running" | "failed" | "stopped"
    state_from_status: Optional[str] = None  # the "Active:" line of systemctl status: "running" | "failed" | ...
    nothing_to_do: bool = False  # FM found no NVSwitch (NV_WARN_NOTHING_TO_DO)


@dataclass
class NvlinkFacts:
    fabric: Dict[str, Tuple[Optional[str], Optional[str]]] = field(default_factory=dict)  # GPU -> (state, status)
    health: Dict[str, Dict[str, str]] = field(default_factory=dict)  # GPU -> Fabric/Health keys as printed (N/A left out)
    links: Optional[List[LinkGpu]] = None  # None: nvlink -s not collected
    errors: Optional[Dict[str, Dict[str, int]]] = None  # "GPU 0" -> {"Replay Errors": n, ...}
    error_lines: List[str] = field(default_factory=list)
    fm: Optional[FabricManager] = None
    errors_collected: bool = False  # nvidia-smi nvlink -e came back (empty where the GPUs have no NVLink)
    fm_collected: bool = True  # the fabricmanager source came back (empty where the node has no driver nor manager)
    driver: Optional[str] = None
    smi_models: List[str] = field(default_factory=list)  # the GPUs' Product Name in nvidia-smi -q (one per GPU)
    smi_collected: bool = False  # nvidia-smi -q came back with a report


_GPU_LINE = rx.compile(r"^GPU (\d+):\s*(.*?)(?:\s*\(UUID:.*)?$")
_LINK = rx.compile(r"^Link (\d+):\s*(.*)$")


def parse_status(text: Optional[str]) -> Optional[List[LinkGpu]]:
    """``nvidia-smi nvlink -s``: links per GPU; ``[]`` for the empty output of GPUs without NVLink."""
    if text is None:
        return None
    gpus: List[LinkGpu] = []
    cur: Optional[LinkGpu] = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _GPU_LINE.match(line)
        if m:
            cur = LinkGpu(int(m.group(1)), m.group(2).strip() or None)
            gpus.append(cur)
            continue
        if cur is None or not line:
            continue
        m = _LINK.match(line)
        if m:
            speed = re.match(r"^([\d.]+)\s*GB/s", m.group(2))
            cur.links[int(m.group(1))] = float(speed.group(1)) if speed else None
        elif "all links are inactive" in line:
            cur.all_inactive = True
        elif line in ("...", "[...]", "[snip]"):
            cur.elided = True
    for g in gpus:
        if g.links and max(g.links) + 1 != len(g.links):
            g.elided = True
    return gpus


_ERR = rx.compile(r"^Link (\d+):\s*(.+?):\s*(\d+)\s*$")


def parse_errors(text: Optional[str]) -> Tuple[Optional[Dict[str, Dict[str, int]]], List[str]]:
    if text is None:
        return None, []
    out: Dict[str, Dict[str, int]] = {}
    lines: List[str] = []
    cur = None
    for raw in text.splitlines():
        line = raw.strip()
        m = _GPU_LINE.match(line)
        if m:
            cur = f"GPU {m.group(1)}"
            out.setdefault(cur, {})
            continue
        m = _ERR.match(line)
        if m and cur:
            kind, n = m.group(2), int(m.group(3))
            out[cur][kind] = out[cur].get(kind, 0) + n
            if n:
                lines.append(f"{cur} {line}")
    return out, lines


_FM_VERSION = rx.compile(r"(?:Fabric Manager version(?: is)?\s*(?::\s*)?)(\d+\.\d+(?:\.\d+)?)")
# systemctl status: "Active: active (running) since ...", "Active: activating (auto-restart) (Result: exit-code)"
_ACTIVE = rx.compile(r"^Active:\s+([a-z-]+)(?:\s+\(([^)]{0,40})\))?")
_ACTIVE_STATE = {"active": "running", "failed": "failed", "inactive": "stopped", "activating": "restarting",
                 "deactivating": "stopped", "reloading": "running"}


def parse_fm(text: Optional[str]) -> Optional[FabricManager]:
    if text is None or not text.strip():
        return None
    fm = FabricManager()
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("--- "):
            continue
        m = re.match(r"^(LoadState|ActiveState|SubState|Result)=(\S*)$", line)
        if m:
            fm.props[m.group(1)] = m.group(2)
            continue
        if re.match(r"^[A-Za-z]+=", line):  # another property (a stand-in's or a newer systemd's)
            continue
        v = _FM_VERSION.search(line)
        if v and not fm.version:
            fm.version = v.group(1)
        if line.startswith("fm-version:"):
            continue
        m = _ACTIVE.match(line)
        if m:
            fm.state_from_status = _ACTIVE_STATE.get(m.group(1), m.group(1))
            if m.group(1) == "active" and m.group(2) and m.group(2) != "running":
                fm.state_from_status = "stopped" if m.group(2) == "exited" else m.group(2)
        fm.log.append(line)
        low = line.lower()
        if "[error]" in low or "failed!" in low or "status=1/failure" in low:
            (fm.fatal if "fatal" in low.replace("non-fatal", "") else fm.errors).append(line)
        elif "[fatal]" in low or "fatal error" in low.replace("non-fatal", ""):
            fm.fatal.append(line)
        if "nothing to do" in low or "nv_warn_nothing_to_do" in low:
            fm.nothing_to_do = True
        if "successfully configured all the available nvswitches" in low or 'started "nvidia fabric manager"' in low:
            fm.state_from_log = "running"
        elif "failed!" in low or "status=1/failure" in low or "failed with result" in low:
            fm.state_from_log = "failed"
        elif "cannot be started" in low or re.search(r"\bdo(?:n't|n’t|esn't|esn’t|es not| not) match\b", low):
            # the start wrapper's pre-check refused (NVL5: ib_umad not loaded), or the driver version differs
            # (Fabric Manager's 'don't match with driver version', 'doesn't match' in its newer wording)
            fm.errors.append(line)
            fm.state_from_log = "failed"
        elif "stopped" in low and "fabric manager" in low:
            fm.state_from_log = "stopped"
    if not (fm.props or fm.version or fm.log):
        return None
    return fm


def parse(raw) -> NvlinkFacts:
    f = NvlinkFacts()
    q = parsed(raw, smiq.SOURCE.name, smiq.parse_q)
    if q is not None:
        f.driver = q.driver
        f.smi_collected = bool(q.gpus) or q.driver is not None
        f.smi_models = [g.get("Product Name") or "" for g in q.gpus]
        for i, g in enumerate(q.gpus):
            state, status = g.get("Fabric/State"), g.get("Fabric/Status")
            if state or status:
                f.fabric[g.bus_id or f"GPU {i}"] = (state, status)
            health = {k: v for k, v in g.section("Fabric/Health").items()
                      if "/" not in k and v.strip().strip("[]") not in _NO_VALUE}
            if health:
                f.health[g.bus_id or f"GPU {i}"] = health
    status = raw.get(_STATUS.name)
    f.links = parse_status(status) if status is not None else None
    f.errors, f.error_lines = parse_errors(section(raw, NVLINK_ERRORS.name))
    f.errors_collected = raw.get(NVLINK_ERRORS.name) is not None
    f.fm = parse_fm(section(raw, FM_SOURCE.name))
    f.fm_collected = raw.get(FM_SOURCE.name) is not None
    return f


def judge(facts: Optional[NvlinkFacts], node: NodeFacts) -> List[Finding]:
    if facts is None:
        return [skip(NAME, "nvlink.fabric", "NVLink outputs not collected (nvidia-smi -q, nvidia-smi nvlink)")]
    return _judge_fabric(facts) + _judge_fm(facts, node) + _judge_links(facts, node) + _judge_errors(facts)


def _fabric_applies(facts: NvlinkFacts) -> bool:
    return bool(facts.fabric)


_NO_VALUE = ("N/A", "Not Supported", "")
# Fabric / Health of nvidia-smi -q (drivers 550+, MNNVL/GB200): the value each key has on a healthy fabric
HEALTHY = {"Summary": "Healthy", "Bandwidth": "Full", "Route Recovery in progress": "False", "Route Unhealthy": "False",
           "Access Timeout Recovery": "False", "Incorrect Configuration": "None"}


def _health_faults(health: Dict[str, str]) -> Dict[str, str]:
    """The Health keys that are not at their healthy value (keys nccldiag does not know are left out)."""
    want = {k.lower(): v.lower() for k, v in HEALTHY.items()}
    return {k: v for k, v in health.items() if k.lower() in want and v.strip().lower() != want[k.lower()]}


def _judge_fabric(facts: NvlinkFacts) -> List[Finding]:
    if not facts.fabric and not facts.smi_collected:
        return [skip(NAME, "nvlink.fabric", "the GPUs' fabric state was not collected (nvidia-smi -q)")]
    if not facts.fabric:
        return [skip(NAME, "nvlink.fabric", "no NVSwitch fabric state (GPUs without NVSwitch, or a driver before 535)")]
    bad = {g: s for g, s in facts.fabric.items() if s != ("Completed", "Success")}
    faults = {g: _health_faults(h) for g, h in facts.health.items()}
    faults = {g: d for g, d in faults.items() if d}
    if not bad and faults:
        ev = [f"GPU {g}: Fabric Health " + ", ".join(f"{k} {v}" for k, v in d.items()) for g, d in faults.items()]
        unhealthy = [g for g, d in faults.items() if any(k.lower() == "summary" and v.strip().lower() == "unhealthy"
                                                         for k, v in d.items())]
        status = fail if unhealthy else warn
        what = (f"{len(unhealthy)} of {len(facts.fabric)} GPUs report an unhealthy NVLink fabric" if unhealthy
                else f"{len(faults)} of {len(facts.fabric)} GPUs report a degraded NVLink fabric")
        return [status(NAME, "nvlink.fabric", f"{what} although registered (Completed/Success): " + "; ".join(ev[:4]),
                       actual={g: d for g, d in faults.items()}, expected=HEALTHY, evidence=ev,
                       fix="The GPU joined the fabric but the fabric reports it degraded: bandwidth below full means "
                       "links or NVSwitch ports are down, route and access-timeout recovery mean the fabric is "
                       "rerouting around a fault. Check 'nvidia-smi nvlink -s' and '-e', the fabric manager or NVLink "
                       "switch logs (NMX, nvlsm), and drain the node if the summary stays Unhealthy; an incorrect "
                       "configuration names what to fix (partition, firmware, location).")]
    ev = [f"GPU {g}: Fabric State {s[0] or '?'}, Status {s[1] or '?'}" for g, s in (bad or facts.fabric).items()]
    if bad:
        return [fail(NAME, "nvlink.fabric", f"{len(bad)} of {len(facts.fabric)} GPUs have not joined the NVLink fabric: "
                     + "; ".join(ev[:4]), actual={g: f"{s[0]}/{s[1]}" for g, s in bad.items()}, expected="Completed/Success",
                     evidence=ev, fix="Start the fabric manager (systemctl enable --now nvidia-fabricmanager) with the "
                     "same version as the driver, then check its log (/var/log/fabricmanager.log). 'In Progress' that "
                     "does not end, or a Status other than Success, needs a GPU reset or a reboot.")]
    healthy = f", fabric health Healthy on {len(facts.health)}" if facts.health else ""
    return [ok(NAME, "nvlink.fabric", f"all {len(facts.fabric)} GPUs registered with the NVLink fabric (Completed/Success)"
               + healthy, actual="Completed/Success", expected="Completed/Success")]


def gpu_models(facts: NvlinkFacts, node: Optional[NodeFacts] = None) -> Optional[str]:
    """The GPU inventory beside the fabric manager's state (``8x NVIDIA H100 80GB HBM3``), from nvidia-smi -q or
    the ``gpu`` area; None when neither was collected (then nobody can tell whether the manager is needed)."""
    gpu = node.get("gpu") if node is not None else None
    if getattr(gpu, "gpus", None):
        return gpu.models_text()
    names = Counter(m for m in facts.smi_models if m)
    if names:
        return " + ".join(f"{n}x {m}" for m, n in names.most_common())
    if facts.smi_collected:
        return "no GPU"
    return None


def _judge_fm(facts: NvlinkFacts, node: Optional[NodeFacts] = None) -> List[Finding]:
    fm = facts.fm
    applies = _fabric_applies(facts)
    inventory = gpu_models(facts, node)
    if fm is None and not facts.fm_collected:
        return [skip(NAME, "nvlink.fabricmanager", "fabric manager state not collected (systemctl show "
                     f"{_FM}, its log)")]
    if fm is None or (not fm.log and fm.props.get("LoadState") in (None, "not-found") and not fm.version):
        if applies and any(s != ("Completed", "Success") for s in facts.fabric.values()):
            return [fail(NAME, "nvlink.fabricmanager", "the GPUs have an NVSwitch fabric but no fabric manager service was found",
                         expected=f"{_FM} active", fix="Install the fabric manager package of the driver's exact version "
                         f"(nvidia-fabricmanager-<driver branch>) and: systemctl enable --now {_FM}")]
        return [skip(NAME, "nvlink.fabricmanager", "no fabric manager on this node" + (
            " (the fabric is configured: NVLink 5 systems or a manager elsewhere)" if applies else ""))]
    active = fm.props.get("ActiveState")
    state = {"active": "running", "failed": "failed", "inactive": "stopped", "activating": "restarting"}.get(
        active or "", fm.state_from_status or fm.state_from_log)
    unknown_need = not applies and inventory is None
    ev = fm.fatal[-4:] + fm.errors[-6:] or fm.log[-4:]
    if fm.props:
        ev = [" ".join(f"{k}={v}" for k, v in fm.props.items())] + ev
    if state in ("failed", "stopped", "restarting", "auto-restart"):
        if fm.nothing_to_do and not applies:
            return [warn(NAME, "nvlink.fabricmanager", f"the fabric manager service {state}: it found no NVSwitch to "
                         "manage (NV_WARN_NOTHING_TO_DO)", actual=state, expected="service disabled where there is no NVSwitch",
                         evidence=ev, fix=f"This node has no NVSwitch fabric: disable the unit (systemctl disable --now {_FM}) "
                         "so that it does not show as failed.")]
        if unknown_need and not (fm.errors or fm.fatal):
            return [skip(NAME, "nvlink.fabricmanager", f"the fabric manager service is {state}, and whether this node "
                         "needs it cannot be told: no GPU inventory (nvidia-smi -q) was collected beside it",
                         actual=state, evidence=ev, fix="Collect nvidia-smi -q with it (the nvidia_smi_full source): "
                         "NVSwitch systems (HGX/DGX A100, H100, H200, B200) need the fabric manager running; GPUs "
                         "without NVSwitch do not.")]
        status = fail if applies or fm.errors or fm.fatal else warn
        return [status(NAME, "nvlink.fabricmanager", f"the fabric manager service is {state}", actual=state, expected="running",
                       evidence=ev, fix=f"systemctl restart {_FM}; journalctl -u {_FM} -b shows why it stopped. Its "
                       "version must equal the driver's; on NVSwitch systems no GPU can use NVLink without it.")]
    if fm.fatal:
        return [fail(NAME, "nvlink.fabricmanager", f"{len(fm.fatal)} fatal NVSwitch/fabric manager errors in its log",
                     actual=len(fm.fatal), expected=0, evidence=ev,
                     fix="A fatal NVSwitch error stops NVLink traffic: drain the node, reboot it, and if the error "
                     "returns collect nvidia-bug-report.sh for NVIDIA support.")]
    if fm.errors:
        return [warn(NAME, "nvlink.fabricmanager", f"{len(fm.errors)} errors in the fabric manager log"
                     + (f" (service {state})" if state else ""), actual=len(fm.errors), expected=0, evidence=ev,
                     fix="Non-fatal NVSwitch errors name the switch and port: if they keep coming, drain the node and "
                     "run 'dcgmi diag -r 3'; a port that repeats points at a GPU baseboard or NVSwitch tray fault.")]
    if state == "running":
        need = (" (whether this node needs it cannot be told: no GPU inventory, nvidia-smi -q, was collected beside it)"
                if unknown_need else "")
        return [ok(NAME, "nvlink.fabricmanager", "the fabric manager is running" + (f" (version {fm.version})" if fm.version else "")
                   + need, actual=state, evidence=(ev[:1] if fm.props else []) + fm.log[-2:])]
    return [skip(NAME, "nvlink.fabricmanager", "the fabric manager's state cannot be told from its output (no systemd "
                 "state, no start or stop line in its log)" + (f"; state {state}" if state else ""), evidence=fm.log[-4:])]


def _gpu_judges_inactive(node: Optional[NodeFacts]) -> bool:
    """Whether the gpu area runs on this node with an inventory, so that gpu.nvlink reports inactive links."""
    g = node.get("gpu") if node is not None else None
    return bool(getattr(g, "gpus", None))


def _judge_links(facts: NvlinkFacts, node: Optional[NodeFacts] = None) -> List[Finding]:
    if facts.links is None:
        return [skip(NAME, "nvlink.links", "NVLink link state not collected (nvidia-smi nvlink --status)")]
    if not facts.links:
        if facts.driver is None:
            return [skip(NAME, "nvlink.links", "not present: nvidia-smi nvlink -s printed nothing (GPUs without NVLink, "
                         "or no NVIDIA driver)")]
        return [skip(NAME, "nvlink.links", "not present: no NVLink on these GPUs (nvidia-smi nvlink -s printed nothing)")]
    if not any(g.links or g.all_inactive for g in facts.links):
        # GPU lines and no "Link N: <speed>" line: the output of another nvlink option (-c: "Link 0, P2P is supported")
        return [skip(NAME, "nvlink.links", f"no link state in the output: {len(facts.links)} GPU(s) named but no "
                     "'Link N: <speed>' or '<inactive>' line (another nvidia-smi nvlink option's output?)",
                     fix="Collect 'nvidia-smi nvlink --status' (nvlink_status).")]
    # inactive links of a linked GPU are gpu.nvlink's finding where the gpu area has an inventory, ours otherwise
    own_inactive = not _gpu_judges_inactive(node)
    any_active = any(g.active for g in facts.links)
    if own_inactive and not any_active and not any(g.all_inactive for g in facts.links):
        sxm = any("SXM" in (g.name or "") for g in facts.links)
        return [(fail if sxm else warn)(NAME, "nvlink.links", f"no NVLink link is active on any of {len(facts.links)} GPUs",
                                        actual={"category": "nvlink_error", "active": 0} if sxm else 0,
                                        expected="links active (SXM/NVSwitch systems); none on PCIe cards without a bridge",
                                        fix="On SXM boards the links must be up: check nvidia-fabricmanager (NVSwitch "
                                        "systems), the Xid events, and reset or reboot. On PCIe cards this only means no "
                                        "NVLink bridge is fitted.")]
    # links are counted as listed (inactive ones included: gpu.nvlink reports those); speed on the active ones
    counts = Counter(len(g.links) for g in facts.links if not g.elided and not g.all_inactive)
    speeds = Counter(s for g in facts.links for s in g.links.values() if s is not None)
    peer_n = counts.most_common(1)[0][0] if counts else None
    peer_s = max(speeds) if speeds else None
    bad, ev, judged = [], [], 0
    for g in facts.links:
        exp = expected_links(g.name)
        want_n = exp[0] if exp else peer_n
        want_s = exp[1] if exp else peer_s
        slow = sorted(l for l, s in g.links.items() if s is not None and want_s and s < want_s * 0.99)
        judged += 1
        if g.all_inactive:
            bad.append(f"GPU {g.index}")
            ev.append(f"GPU {g.index} ({g.name or '?'}): all links inactive")
            continue
        few = not g.elided and want_n is not None and len(g.links) < want_n
        down = sorted(l for l, sp in g.links.items() if sp is None) if own_inactive else []
        if down:
            ev.append(f"GPU {g.index} ({g.name or '?'}): links {down} inactive ({g.active} of {len(g.links)} up)")
            if not (few or slow):
                bad.append(f"GPU {g.index}")
        if few or slow:
            bad.append(f"GPU {g.index}")
            speeds_here = sorted({f"{s:g}" for s in g.links.values() if s is not None})
            ev.append(f"GPU {g.index} ({g.name or '?'}): {len(g.links)} links" + (f" at {', '.join(speeds_here)} GB/s" if speeds_here else "")
                      + (f", expected {want_n}" if few else "") + (f"; links {slow} below {want_s:g} GB/s" if slow else ""))
    if bad:
        what = "NVLink links inactive, missing or slow" if any("inactive (" in e for e in ev) else "NVLink count or speed short"
        return [fail(NAME, "nvlink.links", f"{what} on {', '.join(bad)}: " + "; ".join(ev[:3]),
                     actual={"category": "nvlink_error", "gpus": bad}, expected="every GPU with its model's links at "
                     "full speed", evidence=ev,
                     fix="Reset the GPU or reboot; links that stay down or slow after that point at the GPU baseboard, "
                     "NVSwitch tray or a seating problem: run 'dcgmi diag -r 3' and 'nvidia-smi nvlink -e', then open a "
                     "hardware case.")]
    parts = Counter(f"{len(g.links)}x {max(s for s in g.links.values() if s is not None):g} GB/s" for g in facts.links if g.active)
    notes = []
    if any(g.elided for g in facts.links):
        notes.append("some output was elided, counted where complete")
    if any(g.active < len(g.links) for g in facts.links):
        notes.append("inactive links are gpu.nvlink's finding")
    return [ok(NAME, "nvlink.links", f"{judged} GPUs with their model's NVLink count, the active links at full speed ("
               + ", ".join(f"{k} on {n}" for k, n in parts.items()) + ")" + "".join(f"; {n}" for n in notes))]


def _judge_errors(facts: NvlinkFacts) -> List[Finding]:
    if facts.errors is None and facts.errors_collected:
        return [skip(NAME, "nvlink.errors", "no NVLink error counters: nvidia-smi nvlink -e printed nothing (no NVLink "
                                            "on these GPUs)")]
    if facts.errors is None:
        return [skip(NAME, "nvlink.errors", "NVLink error counters not collected (nvidia-smi nvlink -e)")]
    if not facts.errors:
        return [skip(NAME, "nvlink.errors", "no NVLink error counters (nvidia-smi nvlink -e printed none)")]
    nonzero = {g: {k: v for k, v in d.items() if v} for g, d in facts.errors.items()}
    nonzero = {g: d for g, d in nonzero.items() if d}
    if nonzero:
        return [warn(NAME, "nvlink.errors", "NVLink errors counted on " + "; ".join(
            f"{g}: " + ", ".join(f"{k} {v}" for k, v in d.items()) for g, d in nonzero.items()),
            actual={"category": "nvlink_error", "counters": nonzero}, expected=0, evidence=facts.error_lines[:12],
            fix="Replay and CRC errors are retried by the link but cost bandwidth; recovery errors mean the link "
            "retrained. Reset the counters (nvidia-smi nvlink -r), run a collective, and drain the node if they "
            "grow (slurm-gcp's prolog drains on any).")]
    return [ok(NAME, "nvlink.errors", f"no NVLink errors on {len(facts.errors)} GPUs", actual=0, expected=0)]


def summarize(facts: Optional[NvlinkFacts]) -> Dict[str, Optional[str]]:
    return {}
