"""GPU health from ``nvidia-smi -q``: ECC errors, row remapping, retired pages, reset state, clock events.

What the NVIDIA driver knows about a GPU's own health, read from the full
``nvidia-smi -q`` report (shared source, :mod:`nccldiag.areas.smiq`):

- **ECC**: uncorrectable errors since the driver loaded (volatile) fail, as
  in GCM's ``check_nvidia_smi``; uncorrectable errors over the GPU's life
  (aggregate) warn, and fail above 512 DRAM errors or on any SRAM error, as in
  Azure's NHC ``azure_gpu_ecc``; ``SRAM Threshold Exceeded: Yes`` fails.
- **Row remapping** (A100 and later): a remap ``Pending`` needs a GPU reset to
  take effect, ``Remapping Failure Occurred`` means the GPU is out of spare
  rows (NVIDIA's memory error guide, docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt;
  gpud: pending -> reboot, failure -> RMA).
- **Retired pages** (before A100): a page waiting for retirement
  (``Pending Page Blacklist: Yes``) needs a reset too.
- **Reset status** (driver 535+): ``Reset Required`` or ``Drain and Reset
  Recommended: Yes`` is the driver asking for it.
- **Clock event (throttle) reasons**: ``HW Slowdown``, ``HW Thermal
  Slowdown`` and ``HW Power Brake Slowdown`` (the board or its power
  supply pulling the clocks down) fail; ``SW Thermal Slowdown`` (the driver
  keeping a hot GPU under its target, which a heavy job can cause) warns.
  ``Idle``, ``SW Power Cap`` (the GPU at its power limit under load) and the
  application clock setting are normal (Azure NHC
  ``azure_gpu_clock_throttling`` warns on any reason but idle, none and SW
  power cap). The current and maximum SM clocks are shown beside them.

Persistence mode is judged by the ``gpu`` area (``gpu.persistence``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from nccldiag import rx
from nccldiag.areas import smiq
from nccldiag.areas.base import NodeFacts, parsed
from nccldiag.model.findings import Finding, fail, ok, skip, warn
from nccldiag.spec import thresholds

NAME = "gpuhealth"
TITLE = "GPU health"

SOURCES = (smiq.SOURCE,)

AGGREGATE_DRAM_UE_LIMIT = 512  # Azure NHC azure_gpu_ecc: aggregate uncorrectable above this fails
VOLATILE_CE_LIMIT = 50_000_000  # GCM check_nvidia_smi: volatile corrected above this

HARD_REASONS = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown")
SOFT_REASONS = ("SW Thermal Slowdown",)  # the driver holding clocks down to stay under its temperature target
_REASON_SECTIONS = ("Clocks Event Reasons", "Clocks Throttle Reasons")


@dataclass
class GpuHealth:
    label: str
    ecc_mode: Optional[str] = None
    ecc_current: Optional[str] = None  # ECC Mode Current / Pending as printed ("N/A" and "Unknown Error" kept)
    ecc_pending: Optional[str] = None
    ecc_section: bool = False  # the report has an ECC Mode or ECC Errors section for this GPU
    volatile_ue: Dict[str, int] = field(default_factory=dict)  # "DRAM Uncorrectable" -> n
    aggregate_ue: Dict[str, int] = field(default_factory=dict)
    volatile_ce: Dict[str, int] = field(default_factory=dict)
    sram_threshold: Optional[bool] = None
    remap: Dict[str, str] = field(default_factory=dict)  # Remapped Rows keys as printed
    retired: Dict[str, str] = field(default_factory=dict)  # Retired Pages keys
    reset: Dict[str, str] = field(default_factory=dict)  # GPU Reset Status keys
    reasons: Dict[str, str] = field(default_factory=dict)  # clock event reason -> Active / Not Active
    sm_clock: Optional[int] = None
    sm_max: Optional[int] = None
    pstate: Optional[str] = None

    @property
    def active_reasons(self) -> List[str]:
        return [r for r, v in self.reasons.items() if v.strip().lower() == "active"]


@dataclass
class GpuHealthFacts:
    gpus: List[GpuHealth] = field(default_factory=list)
    driver: Optional[str] = None
    absent: Optional[str] = None  # why there is no GPU (smiq.why_absent)


def _ecc_counts(section: Dict[str, str], kind: str) -> Dict[str, int]:
    """Counters of one ECC section: ``kind`` "ue" (uncorrectable) or "ce" (correctable), every layout."""
    out: Dict[str, int] = {}
    for key, value in section.items():
        n = smiq.to_int(value)
        if n is None:
            continue
        k = key.replace("/", " ")
        low = k.lower()
        if kind == "ue" and ("uncorrectable" in low or (low.startswith("double bit") and low.endswith("total"))):
            out[k] = n
        elif kind == "ce" and (("correctable" in low and "uncorrectable" not in low)
                               or (low.startswith("single bit") and low.endswith("total"))):
            out[k] = n
    return out


def health_of(g: smiq.QGpu) -> GpuHealth:
    h = GpuHealth(g.label)
    h.ecc_mode = g.get("ECC Mode/Current")  # "Ecc Mode" in old drivers: smiq's keys are read whatever their case
    h.ecc_current, h.ecc_pending = g.raw("ECC Mode/Current"), g.raw("ECC Mode/Pending")
    h.ecc_section = bool(g.section("ECC Mode") or g.section("ECC Errors") or g.raw("ECC Mode") is not None)
    h.volatile_ue = _ecc_counts(g.section("ECC Errors/Volatile"), "ue")
    h.aggregate_ue = _ecc_counts(g.section("ECC Errors/Aggregate"), "ue")
    h.volatile_ce = _ecc_counts(g.section("ECC Errors/Volatile"), "ce")
    thr = g.get("ECC Errors/Aggregate/SRAM Threshold Exceeded")
    h.sram_threshold = None if thr is None else thr.lower().startswith("yes")
    h.remap = {k: v for k, v in g.section("Remapped Rows").items() if "/" not in k}
    h.retired = {k: v for k, v in g.section("Retired Pages").items() if "/" not in k}
    h.reset = g.section("GPU Reset Status")
    for sec in _REASON_SECTIONS:
        reasons = g.section(sec)
        if reasons:
            h.reasons = {k.split("/")[-1]: v for k, v in reasons.items()}
            break
    h.sm_clock = smiq.to_int(g.get("Clocks/SM"))
    h.sm_max = smiq.to_int(g.get("Max Clocks/SM"))
    h.pstate = g.get("Performance State")
    return h


def parse_text(text: Optional[str], q: Optional[smiq.SmiQ] = None) -> GpuHealthFacts:
    q = smiq.parse_q(text) if q is None else q
    if q is None or not q.gpus:
        return GpuHealthFacts(absent=smiq.why_absent(text, "GPU health report"))
    return GpuHealthFacts([health_of(g) for g in q.gpus], q.driver)


def parse(raw) -> GpuHealthFacts:
    return parse_text(raw.get(smiq.SOURCE.name), parsed(raw, smiq.SOURCE.name, smiq.parse_q))


def _yes(v: Optional[str]) -> bool:
    return (v or "").strip().lower().startswith("yes")


def _nonzero(d: Dict[str, int]) -> Dict[str, int]:
    return {k: v for k, v in d.items() if v}


def judge(facts: Optional[GpuHealthFacts], node: NodeFacts) -> List[Finding]:
    if facts is None or not facts.gpus:
        return [skip(NAME, "gpuhealth.ecc", (facts.absent if facts else None) or smiq.why_absent(None, "GPU health report"))]
    return _judge_ecc(facts, node) + _judge_remap(facts) + _judge_reset(facts) + _judge_clocks(facts)


_MODE_ERROR = rx.compile(r"error|unknown|unable|lost|reset", re.I)


def _ecc_unreadable(g: GpuHealth) -> bool:
    """ECC Mode Current or Pending reads an error (``Unknown Error``): the driver cannot query the memory state."""
    return any(v and _MODE_ERROR.search(v) for v in (g.ecc_current, g.ecc_pending))


def _judge_ecc(facts: GpuHealthFacts, node: Optional[NodeFacts] = None) -> List[Finding]:
    counted = _judge_ecc_counters(facts, node)
    bad = [g for g in facts.gpus if _ecc_unreadable(g)]
    if not bad:
        return counted
    ev = [f"{g.label}: ECC Mode Current {g.ecc_current or '-'}, Pending {g.ecc_pending or '-'}" for g in bad]
    if counted[0].status.value == "fail":
        counted[0].evidence = list(counted[0].evidence) + ev
        return counted
    before = counted[0].evidence if counted[0].status.value == "warn" else []
    return [warn(NAME, "gpuhealth.ecc", f"the driver cannot read the ECC state of {', '.join(g.label for g in bad)} "
                 f"(ECC Mode {bad[0].ecc_current or bad[0].ecc_pending})"
                 + (f"; {counted[0].message}" if counted[0].status.value == "warn" else ""),
                 actual={g.label: g.ecc_current or g.ecc_pending for g in bad}, expected="Enabled, Disabled or N/A",
                 evidence=ev + list(before),
                 fix="The driver cannot query the GPU's memory state, a sign of a GPU in trouble (often beside a pending "
                     "row remap): read gpuhealth.row_remap and the Xid events, reset the GPU (nvidia-smi -r -i <index>) "
                     "or reboot, and run 'dcgmi diag -r 3'; if the state stays unreadable, service the GPU.")]


def _judge_ecc_counters(facts: GpuHealthFacts, node: Optional[NodeFacts] = None) -> List[Finding]:
    dram_limit, dram_src = thresholds.value(node, "ecc_dram_uncorrectable", AGGREGATE_DRAM_UE_LIMIT)
    ce_limit, ce_src = thresholds.value(node, "ecc_volatile_correctable", VOLATILE_CE_LIMIT)
    known = [g for g in facts.gpus if g.volatile_ue or g.aggregate_ue or g.sram_threshold is not None]
    if not known:
        if not any(g.ecc_section for g in facts.gpus):
            return [skip(NAME, "gpuhealth.ecc", "ECC state not in the report (the nvidia-smi -q output holds no ECC "
                         "section: an excerpt?)")]
        return [skip(NAME, "gpuhealth.ecc", "no ECC counters in the report (ECC not supported or disabled on these GPUs)")]
    failing, warning, evidence = [], [], []
    for g in known:
        vol = _nonzero(g.volatile_ue)
        agg = _nonzero(g.aggregate_ue)
        sram = {k: v for k, v in agg.items() if "SRAM" in k and "Threshold" not in k}
        dram = sum(v for k, v in agg.items() if "SRAM" not in k)
        if vol or sram or g.sram_threshold or dram > dram_limit:
            failing.append(g.label)
        elif agg:
            warning.append(g.label)
        for label, d in (("volatile", vol), ("aggregate", agg)):
            if d:
                evidence.append(f"{g.label}: {label} " + ", ".join(f"{k} {v}" for k, v in d.items()))
        if g.sram_threshold:
            evidence.append(f"{g.label}: SRAM Threshold Exceeded: Yes")
    high_ce = [f"{g.label}: volatile correctable {sum(g.volatile_ce.values())}"
               + (f", more than {ce_limit}{ce_src}" if ce_src else "") for g in known
               if sum(g.volatile_ce.values()) > ce_limit]
    fix = ("Drain the node and reset the GPU (nvidia-smi -r, or reboot); run 'dcgmi diag -r 3'. Uncorrectable "
           "errors that come back after a reset, SRAM uncorrectable errors or an exceeded SRAM threshold mean the "
           "GPU should be replaced (NVIDIA's GPU memory error management guide).")
    if failing:
        return [fail(NAME, "gpuhealth.ecc", f"uncorrectable ECC errors on {len(failing)} of {len(known)} GPUs: "
                     + "; ".join(evidence[:4]), actual=failing, expected="0 volatile uncorrectable, 0 SRAM uncorrectable, "
                     f"at most {dram_limit} aggregate DRAM uncorrectable{dram_src}", evidence=evidence + high_ce, fix=fix)]
    if warning or high_ce:
        return [warn(NAME, "gpuhealth.ecc", "uncorrectable ECC errors in the GPUs' lifetime counters (none since the driver "
                     f"loaded): {'; '.join(evidence[:4] or high_ce[:4])}", actual=warning or high_ce, expected=0,
                     evidence=evidence + high_ce,
                     fix="Watch these GPUs: if the volatile counters move or row remapping fails, drain and replace.")]
    return [ok(NAME, "gpuhealth.ecc", f"no uncorrectable ECC errors on {len(known)} GPUs", actual=0, expected=0)]


def _judge_remap(facts: GpuHealthFacts) -> List[Finding]:
    remap = [g for g in facts.gpus if any(v not in ("N/A", "") for v in g.remap.values())]
    retired = [g for g in facts.gpus if any(v not in ("N/A", "") for v in g.retired.values())]
    if not remap and not retired:
        return [skip(NAME, "gpuhealth.row_remap", "no row remapping or page retirement in the report (not supported)")]
    failed = [g for g in remap if _yes(g.remap.get("Remapping Failure Occurred"))]
    # "Pending Page Blacklist" (460 to 535), "Pending Page Retirement", "Pending" (before 460)
    pending = [g for g in remap if _yes(g.remap.get("Pending"))]
    pending += [g for g in retired if g not in pending and any(_yes(g.retired.get(k)) for k in (
        "Pending Page Blacklist", "Pending Page Retirement", "Pending"))]
    def ev(g: GpuHealth) -> str:
        d = g.remap or g.retired
        return f"{g.label}: " + ", ".join(f"{k} {v}" for k, v in d.items())
    if failed:
        return [fail(NAME, "gpuhealth.row_remap", f"row remapping failed on {', '.join(g.label for g in failed)}: "
                     "the GPU has no spare rows left for a failing memory row",
                     actual=[g.label for g in failed], expected="Remapping Failure Occurred: No",
                     evidence=[ev(g) for g in failed + pending],
                     fix="Drain the node and replace the GPU (RMA); NVIDIA's memory error guide treats a remapping "
                         "failure as a GPU to return.")]
    if pending:
        return [fail(NAME, "gpuhealth.row_remap", f"memory row remap or page retirement pending on "
                     f"{', '.join(g.label for g in pending)}: the faulty row stays in use until the GPU is reset",
                     actual=[g.label for g in pending], expected="Pending: No", evidence=[ev(g) for g in pending],
                     fix="Drain the node, then reset the GPU when it is idle (nvidia-smi -r -i <index>) or reboot the "
                         "node; the remap takes effect at the reset (NVIDIA's GPU memory error management guide).")]
    n = len(remap) or len(retired)
    return [ok(NAME, "gpuhealth.row_remap", f"no pending or failed row remapping on {n} GPUs",
               evidence=[ev(g) for g in (remap or retired) if any(smiq.to_int(v) for v in (g.remap or g.retired).values())])]


def _judge_reset(facts: GpuHealthFacts) -> List[Finding]:
    known = [g for g in facts.gpus if g.reset]
    if not known:
        return []
    asked = [g for g in known if any(_yes(v) for v in g.reset.values())]
    if asked:
        return [fail(NAME, "gpuhealth.reset", f"the driver asks for a reset of {', '.join(g.label for g in asked)}",
                     actual=[g.label for g in asked], expected="Reset Required: No",
                     evidence=[f"{g.label}: " + ", ".join(f"{k} {v}" for k, v in g.reset.items()) for g in asked],
                     fix="Drain the node and reset the GPU (nvidia-smi -r -i <index>) or reboot.")]
    return [ok(NAME, "gpuhealth.reset", f"no GPU reset required on {len(known)} GPUs")]


def _judge_clocks(facts: GpuHealthFacts) -> List[Finding]:
    known = [g for g in facts.gpus if g.reasons]
    if not known:
        return [skip(NAME, "gpuhealth.clocks", "no clock event reasons in the report")]

    def clock(g: GpuHealth) -> str:
        c = f"SM {g.sm_clock}/{g.sm_max} MHz" if g.sm_clock is not None and g.sm_max else "SM clock unknown"
        return f"{g.label}: {g.pstate or '?'}, {c}, active: {', '.join(g.active_reasons) or 'none'}"

    hard = [g for g in known if set(g.active_reasons) & set(HARD_REASONS)]
    if hard:
        reasons = sorted({r for g in hard for r in g.active_reasons if r in HARD_REASONS})
        return [fail(NAME, "gpuhealth.clocks", f"{len(hard)} of {len(known)} GPUs slowed down by {', '.join(reasons)}",
                     actual={g.label: g.active_reasons for g in hard}, expected="no HW/thermal slowdown",
                     evidence=[clock(g) for g in hard],
                     fix="HW Power Brake Slowdown is the board's power-brake signal (PSU or power delivery fault, or a "
                         "power cap from the BMC): check PSUs and the BMC event log. HW/SW Thermal Slowdown: check "
                         "cooling (nvidia-smi -q -d TEMPERATURE, fans, airflow). A slowed GPU drags every collective "
                         "it is in.")]
    soft = [g for g in known if set(g.active_reasons) & set(SOFT_REASONS)]
    if soft:
        return [warn(NAME, "gpuhealth.clocks", f"{len(soft)} of {len(known)} GPUs held down by SW Thermal Slowdown",
                     actual={g.label: g.active_reasons for g in soft}, expected="no thermal slowdown",
                     evidence=[clock(g) for g in soft],
                     fix="The driver is keeping these GPUs under their temperature target: check cooling "
                     "(nvidia-smi -q -d TEMPERATURE, fans, airflow, inlet temperature), and compare with the "
                     "node's other GPUs under the same load.")]
    return [ok(NAME, "gpuhealth.clocks", f"no hardware or thermal slowdown on {len(known)} GPUs",
               evidence=[clock(g) for g in known if g.active_reasons and g.active_reasons != ["Idle"]])]


def summarize(facts: Optional[GpuHealthFacts]) -> Dict[str, Optional[str]]:
    return {}
