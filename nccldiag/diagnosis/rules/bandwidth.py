"""Bandwidth below expectation: measured busbw against the line rate of the slowest segment of the path."""
from __future__ import annotations

from typing import List

from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.measured import comparisons
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "bandwidth-low"
TITLE = "Bandwidth below expectation"


def diagnose(inp: Inputs) -> List[Diagnosis]:
    cmps = comparisons(inp)
    out: List[Diagnosis] = []
    for name, c in cmps.items():
        if not c.below:
            continue
        b = c.expectation.bottleneck  # type: ignore[union-attr]
        ev = [Evidence("figure", f"{c.collective} busbw {c.measured:.2f} GB/s at {c.size >> 20} MiB", name),
              Evidence("figure", f"expected {c.expectation.gbps:.1f} GB/s: " +  # type: ignore[union-attr]
                       "; ".join(s.text() for s in c.expectation.segments[:6]), "expected")]  # type: ignore[union-attr]
        ev += [Evidence("figure", n, "expected") for n in c.expectation.notes]  # type: ignore[union-attr]
        nodes = [b.host] if b.host else []
        against = (f"the site spec expects ({b.basis})" if b.name == "site spec"
                   else f"the path allows; bottleneck: {b.name} ({b.basis})")
        out.append(Diagnosis(ID, TITLE, "warn",
                             f"[{name}] {c.collective} busbw {c.measured:.2f} GB/s is {c.percent:.0f}% of the "
                             f"{c.expectation.gbps:.1f} GB/s {against}",  # type: ignore[union-attr]
                             "medium", f"below {c.floor:.0%} of the "
                             + ("site spec's figure" if b.name == "site spec" else "line rate of the slowest segment")
                             + ", at a message size large enough to reach it",
                             f"Check the bottleneck segment ({b.name}) on {b.host or 'the nodes'}: link rate and width "
                             "('ibstat', 'nvidia-smi nvlink --status', 'nvidia-smi -q' PCIe), error counters, "
                             "CPU/NUMA placement; then probe again.",
                             nodes=nodes, evidence=ev, figures=c.to_dict()))
    return out
