"""The Python environment that ``nccldiag probe`` will run in on the node.

The probes are torch.distributed programs, so every node needs an interpreter
with torch, and on GPU nodes a CUDA build of torch that can see the GPUs. The
versions matter across nodes too: mixed torch or NCCL builds fail at
communicator creation ("Mismatched NCCL version") or hang, so ``summarize``
exposes python/torch/CUDA/NCCL versions for the cross-node comparison.

The interpreter is ``$NCCLDIAG_PYTHON`` when set on the node, else ``python3``.
The snippet prints one JSON line when it starts and one when it is done, with
every import guarded, so a crash or a hang while importing torch (a broken
CUDA install) shows as "started but never finished" rather than as nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from nccldiag.areas.base import JSON_LINE_LIMIT, NodeFacts, Source, json_line, section
from nccldiag.node import node_program
from nccldiag.areas.pcie import node_gpus
from nccldiag.model.findings import Finding, error, fail, ok, skip, warn

NAME = "python"
TITLE = "Python"

_PROBE = node_program("envprobe")

SOURCES = (
    Source(
        "python_env",
        'p="${NCCLDIAG_PYTHON:-python3}"; '
        'command -v "$p" >/dev/null 2>&1 || { echo "python-missing: $p"; exit 0; }; '
        f"\"$p\" -c '{_PROBE.strip()}'",
        timeout=30,
        line_limit=JSON_LINE_LIMIT,  # one JSON object a line
        own=True,
        description="interpreter, torch, CUDA, NCCL, torch.distributed backends and mpi4py as the probe will see them",
    ),
)


@dataclass
class PythonFacts:
    missing: Optional[str] = None  # the interpreter name that was not found
    started: bool = False
    done: bool = False
    python: Optional[str] = None
    executable: Optional[str] = None
    torch: Optional[str] = None
    torch_error: Optional[str] = None
    cuda_build: Optional[str] = None  # torch.version.cuda; None for a CPU build
    cuda_available: Optional[bool] = None
    cuda_error: Optional[str] = None
    device_count: Optional[int] = None
    nccl: Optional[str] = None
    backends: Dict[str, Optional[bool]] = field(default_factory=dict)  # gloo/nccl/mpi
    mpi4py: Optional[str] = None
    nccldiag: Optional[str] = None
    nccldiag_error: Optional[str] = None  # why the interpreter could not import nccldiag (the probe's ranks need it)
    other: List[str] = field(default_factory=list)  # lines that were not ours (warnings printed to stdout)
    unreadable: Optional[str] = None  # why a line of the snippet's own could not be read (the first such)


def parse(raw) -> PythonFacts:
    f = PythonFacts()
    text = section(raw, "python_env")
    last: Dict[str, Any] = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("python-missing:"):
            f.missing = line.split(":", 1)[1].strip() or "python3"
            continue
        if line.startswith("{"):
            obj, why = json_line(line)
            if why is not None:
                f.unreadable = f.unreadable or why
                f.other.append(line[:200])
                continue
            if isinstance(obj, dict):
                last = obj
                continue
        f.other.append(line[:200])
    if last:
        f.started = True
        f.done = last.get("stage") == "done"
        for name in _TEXTS:
            value = last.get(name)
            if value is not None and not isinstance(value, (str, int, float)):  # a version is a word, never a structure
                f.unreadable = f.unreadable or f"'{name}' is a JSON {type(value).__name__}, not a value"
                f.done, value = False, None
            setattr(f, name, None if value is None else str(value))
        ca = last.get("cuda_available")
        f.cuda_available = ca if isinstance(ca, bool) else None
        dc = last.get("device_count")
        f.device_count = dc if isinstance(dc, int) and not isinstance(dc, bool) else None
        f.backends = {b: last.get("backend_" + b) for b in ("gloo", "nccl", "mpi") if "backend_" + b in last}
        f.backends = {b: (v if isinstance(v, bool) else None) for b, v in f.backends.items()}
    return f


_TEXTS = ("python", "executable", "torch", "torch_error", "cuda_build", "cuda_error", "nccl", "mpi4py", "nccldiag",
          "nccldiag_error")
_INSTALL = "pip install 'nccldiag[probe]'"


def judge(facts: Optional[PythonFacts], node: NodeFacts) -> List[Finding]:
    if facts is not None and facts.unreadable and not facts.done:  # not the snippet's answer: no verdict on it
        return [error(NAME, "python.output", f"the python_env output could not be read: {facts.unreadable}",
                      evidence=facts.other[-5:],
                      fix="Run the python_env snippet on the node and look at what it prints on stdout; a wrapper "
                          "or a site customization that writes there can garble it.")]
    if facts is None or (not facts.missing and not facts.started):
        return [skip(NAME, "python.interpreter", "no Python information collected")]
    if facts.missing:
        return [fail(NAME, "python.interpreter", f"no Python interpreter '{facts.missing}' on the node: the probe cannot run here",
                     actual=None, expected="python3",
                     fix="Install python3 (and 'pip install nccldiag[probe]'), or point NCCLDIAG_PYTHON at the "
                         "interpreter of the training environment.")]
    found: List[Finding] = []
    where = f"Python {facts.python} ({facts.executable})"
    if not facts.done:
        return [fail(NAME, "python.interpreter", f"{where} started but did not finish importing torch "
                     "(crashed, or hung past the 30 s limit)", evidence=facts.other[-5:],
                     fix=f"Run '{facts.executable or 'python3'} -c \"import torch; print(torch.cuda.is_available())\"' "
                         "on the node to see the error; a broken CUDA/driver install usually shows here.")]
    found.append(ok(NAME, "python.interpreter", where, actual=facts.python))
    if facts.nccldiag_error and not facts.nccldiag:
        # the probe's ranks are 'python -m nccldiag.node.worker' (probe/launchers): an interpreter that cannot
        # import nccldiag cannot start them; the check itself needs nothing installed on the node
        found.append(warn(NAME, "python.nccldiag", f"nccldiag is not importable by {facts.executable}: the probe's "
                          f"ranks cannot start here ({facts.nccldiag_error})", actual=facts.nccldiag_error,
                          expected="nccldiag installed",
                          fix=f"{_INSTALL} in that interpreter's environment (or set NCCLDIAG_PYTHON to one that has "
                              "it); 'nccldiag check' runs without it."))
    if not facts.torch:
        why = f" ({facts.torch_error})" if facts.torch_error else ""
        found.append(warn(NAME, "python.torch", f"torch is not importable by {facts.executable}: probe cannot run here{why}",
                          actual=facts.torch_error, expected="torch installed",
                          fix=f"{_INSTALL} in that interpreter's environment (or set NCCLDIAG_PYTHON to one that has torch)."))
        return found
    gpus, gpu_words = node_gpus(node)
    versions = f"torch {facts.torch}, CUDA {facts.cuda_build or 'none (CPU build)'}, NCCL {facts.nccl or 'none'}"
    if gpus and not facts.cuda_available:
        why = ("torch is a CPU-only build" if not facts.cuda_build
               else f"torch (CUDA {facts.cuda_build}) cannot use the GPUs" + (f": {facts.cuda_error}" if facts.cuda_error else
                                                                             " (driver too old for this CUDA, or no device access)"))
        found.append(fail(NAME, "python.torch_cuda", f"{gpu_words} but torch.cuda.is_available() is False: {why}",
                          actual={"torch": facts.torch, "cuda_build": facts.cuda_build}, expected="a CUDA build of torch that sees the GPUs",
                          fix="Install a CUDA build of torch that the driver supports (pip install torch --index-url "
                              "https://download.pytorch.org/whl/cuXXX, XXX <= the CUDA version nvidia-smi shows), and check "
                              "that the user can open /dev/nvidia*."))
    elif gpus and facts.cuda_available and not facts.backends.get("nccl", True):
        found.append(fail(NAME, "python.torch_cuda", f"torch sees the GPUs but its NCCL backend is unavailable ({versions})",
                          fix="Install an official CUDA build of torch (it bundles NCCL)."))
    else:
        found.append(ok(NAME, "python.torch", versions + (f", {facts.device_count} CUDA devices" if facts.cuda_available else ""),
                        actual={"torch": facts.torch, "cuda": facts.cuda_build, "nccl": facts.nccl}))
    gpu_list = getattr(node.get("gpu"), "gpus", None) if node is not None else None
    if facts.cuda_available and isinstance(gpu_list, (list, tuple)) and facts.device_count is not None \
            and facts.device_count < len(gpu_list):
        found.append(warn(NAME, "python.cuda_devices",
                          f"torch sees {facts.device_count} CUDA devices, the driver lists {len(gpu_list)}",
                          actual=facts.device_count, expected=len(gpu_list),
                          fix="CUDA_VISIBLE_DEVICES is set in the login environment, or some GPUs are not accessible "
                              "(cgroup / container device list)."))
    if facts.backends and facts.backends.get("gloo") is False:
        found.append(warn(NAME, "python.gloo", "torch.distributed has no gloo backend: the CPU probes cannot run",
                          fix="Install an official torch build (gloo is part of it)."))
    return found


def summarize(facts: Optional[PythonFacts]) -> Dict[str, Optional[str]]:
    if facts is None or not facts.done:
        return {}
    return {"python": facts.python, "torch": facts.torch, "cuda": facts.cuda_build, "nccl": facts.nccl}
