"""A site spec in ``nccldiag probe`` and ``nccldiag isolate`` (pure but :func:`load`).

The probe reads a few facts from its nodes after an NCCL run, for the
expected bandwidth (``nccldiag.probe.facts``: the IB/RoCE ports from sysfs
and ibstat, the GPUs from ``nvidia-smi --query-gpu``). The spec keys those
facts tell (:data:`PROBE_KEYS`) are judged on every node as
``check --spec`` judges them; the other keys need outputs the probe does
not collect, and one ``probe.spec_not_checked`` finding names them.
``isolate`` reads no node facts: its ``isolate.spec_not_checked`` finding
says so. Both apply the spec's ``[severity]`` to all their findings.
"""
from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple

from nccldiag.model.findings import Finding, Status
from nccldiag.spec import compare, policy
from nccldiag.spec.model import Spec, load_given, threshold

DEFAULT_FRACTION = 0.5  # isolate's --fraction without a spec (nccldiag.isolate.run.IsolateOptions.fraction)

# The keys the probe's node facts tell exactly as the full check's do (tests/unit/test_spec.py compares
# the two readings on a real capture).
PROBE_KEYS = (
    "gpu.model", "gpu.count", "gpu.memory_mib", "gpu.pcie_gen", "gpu.pcie_width", "software.driver",
    "settings.persistence_mode", "nvlink.links_per_gpu", "nvlink.speed_gbs", "nic.*.ports", "nic.*.link_layer",
    "nic.*.rate_gbps", "nic.*.firmware", "nic.*.psid",
)


def from_option(option: Optional[str], causes_file: Optional[str] = None) -> Optional[Spec]:
    """The spec of ``--spec`` or ``$NCCLDIAG_SPEC`` with the causes of ``--causes FILE``, read and validated before
    any node is contacted (None with neither)."""
    return load_given(option, causes_file)


def _not_checked(spec: Spec, command: str, keys: Sequence[str], why: str) -> List[Finding]:
    if not keys:
        return []
    shown = ", ".join(keys[:12]) + (f" and {len(keys) - 12} more" if len(keys) > 12 else "")
    return [Finding(command, f"{command}.spec_not_checked", Status.SKIP,
                    f"{len(keys)} key(s) of {spec.path} not judged by '{command}' ({why}): {shown}; "
                    f"'nccldiag check --spec {spec.path}' judges them",
                    evidence=[f"{spec.path}: {k}" for k in keys[:12]])]


def probe_findings(spec: Spec, node_facts: Mapping[str, Mapping[str, Any]], hosts: Iterable[str],
                   backend: str) -> List[Finding]:
    """Every node of a probe against the spec keys its node facts tell, and one finding naming the others.

    A node whose facts did not come back gets ``skip`` for each key (not
    checked), never ``ok``.
    """
    judged = [e for e in spec.expects if e.field.name in PROBE_KEYS]
    others = list(dict.fromkeys(e.key for e in spec.expects if e.field.name not in PROBE_KEYS))
    out: List[Finding] = []
    if backend != "nccl":
        return _not_checked(spec, "probe", [e.key for e in spec.expects],
                            f"with {backend} the probe reads no node facts")
    for host in hosts:
        facts = dict(node_facts.get(host) or {})
        found = [compare._one(spec, e, e.field.area, facts, None) for e in judged]
        if judged and spec.nic_models and facts.get("ib") is not None:
            found.extend(compare._unlisted_models(spec, facts))
        for f in found:
            f.host = host
        out.extend(found)
    return out + _not_checked(spec, "probe", others,
                              "its node facts are the GPU inventory, the NVLinks and the RDMA ports only")


def isolate_fraction(spec: Optional[Spec], given: Optional[float]) -> Tuple[float, Optional[str]]:
    """isolate's slowness margin: ``--fraction`` where given, else the spec's ``isolate_fraction``, else
    :data:`DEFAULT_FRACTION`; with the note that says where it came from when the spec gave it."""
    if given is not None:
        return given, None
    got = threshold(spec, "isolate_fraction")
    if got is None:
        return DEFAULT_FRACTION, None
    return got[0], f"a pair is slow below {got[0]:g} x the median busbw of its row's healthy pairs " \
                   f"(thresholds.isolate_fraction, {got[1]})"


def isolate_findings(spec: Spec, fraction_note: Optional[str] = None) -> List[Finding]:
    out = [Finding("isolate", "isolate.spec_threshold", Status.OK, fraction_note)] if fraction_note else []
    return out + _not_checked(spec, "isolate", list(dict.fromkeys(e.key for e in spec.expects)),
                              "it reads no node facts, only how its jobs ran")


def apply_policy(spec: Optional[Spec], findings: Iterable[Finding]) -> None:
    if spec is not None:
        policy.apply(spec, findings)
