"""NCCL (or the framework's CUDA build) too old for the GPU, with both named: the kernels of the run could not load
('named symbol not found', 'no kernel image is available for execution on the device', 'invalid device function',
the signature ``nccl-too-old-for-gpu`` reads), and the evidence says which NCCL and which GPU, or which
capabilities the framework was built for.

The knowledge is ``knowledge/gpu_arch.toml``: per compute capability, the GPUs of it and the first NCCL release
whose default build has kernels for it (read from NVIDIA/nccl's makefiles/common.mk at each tag), and the first
CUDA that compiles for it. The cause then names the GPU and its capability, the NCCL version and the first one
that supports the GPU, or PyTorch's own list of the capabilities its build has. What it cannot tell it says: an
NCCL at or past the table's first release (a build of it made with an NVCC_GENCODE without the GPU's kernels, as
NVIDIA/nccl#1372), a GPU or a version the evidence does not give. It judges nothing alone: without the errors of a
missing kernel there is no diagnosis, so a supported pair, or an unsupported one that did not fail, is never
reported. Where it speaks, the signature's plainer diagnosis is explained by it.

References: NVIDIA/nccl tags (makefiles/common.mk NVCC_GENCODE); pytorch/pytorch#152077 (NCCL 2.14.3 on an RTX 5090,
sm_120); NVIDIA/nccl#1372 (NCCL built for sm_80 on H100); HazyResearch/hyena-dna#76 (PyTorch 1.13 cu117 on H100,
sm_90); PyTorch's torch/cuda/__init__.py ('with CUDA capability sm_N is not compatible with the current PyTorch
installation. The current PyTorch install supports CUDA capabilities ...').
"""
from __future__ import annotations

import functools
import re
import sys
from typing import Dict, List, Optional, Tuple

from nccldiag import knowledge, rx
from nccldiag.diagnosis import clues as C
from nccldiag.diagnosis.inputs import Inputs
from nccldiag.diagnosis.model import Diagnosis, Evidence

ID = "nccl-arch-unsupported"
TITLE = "NCCL or the framework's build predates this GPU"
FIX = ("Use an NCCL and a framework build that have kernels for this GPU: an NCCL release at or past the one "
       "named (the framework's wheel for a CUDA at or past the one named: PyTorch cu118+ for Hopper, cu128+ for "
       "Blackwell), or rebuild NCCL with the GPU's NVCC_GENCODE (-gencode=arch=compute_NN,code=sm_NN).")
CONFIRM = ("nvidia-smi --query-gpu=name,compute_cap --format=csv; python -c 'import torch; "
           "print(torch.__version__, torch.cuda.nccl.version(), torch.cuda.get_arch_list())'")

# the errors of a kernel that is not in the build, as the signature nccl-too-old-for-gpu reads them
NO_KERNEL = rx.compile(r"named symbol not found|no kernel image is available for execution|cudaErrorNoKernelImageForDevice|"
                       r"CUDA_ERROR_NO_BINARY_FOR_GPU|invalid device function|cudaErrorSymbolNotFound|"
                       r"is not compatible with the current PyTorch installation")
# PyTorch's warning: the GPU, its capability, and (next line) what its build supports
TORCH_GPU = rx.compile(r"([A-Za-z][^\n]{0,80}?) with CUDA capability sm_(\d{2,3}) is not compatible")
TORCH_LIST = rx.compile(r"supports CUDA capabilities((?: sm_\d{2,3}){1,40})")
NCCL_VERSION = rx.compile(r"NCCL version:? ?(\d{1,2}\.\d{1,3}\.\d{1,3})")
KINDS = ("warn", "last-error", "app", "error")


@functools.lru_cache(maxsize=None)
def not_a_kernel() -> Optional["re.Pattern[str]"]:
    """The lines of those errors that are no kernel's: the signature's own ``unless`` (a pointer query's
    CUDA_ERROR_NOT_FOUND, which cuGetErrorString also words 'named symbol not found')."""
    row = next((r for r in knowledge.rows("causes.toml", "cause") if r["id"] == "nccl-too-old-for-gpu"), {})
    return re.compile(row["unless"]) if row.get("unless") else None


@functools.lru_cache(maxsize=None)
def archs() -> Tuple[Dict, ...]:
    return tuple(knowledge.rows("gpu_arch.toml", "arch"))


@functools.lru_cache(maxsize=None)
def _names() -> Tuple[Tuple["re.Pattern[str]", Dict], ...]:
    pairs = [(n, a) for a in archs() for n in a["names"]]
    pairs.sort(key=lambda p: -len(p[0]))
    return tuple((re.compile(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])", re.I), a) for n, a in pairs)


def arch_of_sm(sm: int) -> Optional[Dict]:
    return next((a for a in archs() if a["sm"] == sm), None)


def arch_of_name(text: str) -> Optional[Tuple[str, Dict]]:
    """The GPU a text names and its row: the longest name of the table found in it."""
    for pat, a in _names():
        m = pat.search(text)
        if m:
            return m.group(0), a
    return None


def _vt(v: str) -> Tuple[int, ...]:
    return C.version_tuple(v)


def _texts(inp: Inputs) -> List[str]:
    texts = [c.text for c in C.clues(inp) if c.kind in KINDS]
    texts += [getattr(line, "text", "") for line in inp.failure_lines]
    for ls in inp.log_sets():
        for r in list(ls.facts.nccl_tests) + list(ls.facts.nccl_tests_no_result):
            texts += list(getattr(r, "devices", []) or [])
    return texts


def diagnose(inp: Inputs) -> List[Diagnosis]:
    skip = not_a_kernel()
    found = [c for c in C.find(inp, NO_KERNEL, KINDS) if skip is None or not skip.search(c.text)]
    if not found:
        return []
    texts = _texts(inp)
    gpu: Optional[Tuple[str, Dict]] = None
    sm: Optional[int] = None
    built: List[str] = []
    for t in texts:
        m = TORCH_GPU.search(t)
        if m and sm is None:
            sm = int(m.group(2))
            gpu = (m.group(1).strip(), arch_of_sm(sm) or {})
        lm = TORCH_LIST.search(t)
        if lm and not built:
            built = lm.group(1).split()
    if gpu is None:
        for t in texts:
            named = arch_of_name(t)
            if named:
                gpu, sm = named, named[1]["sm"]
                break
    versions = C.nccl_versions(inp) or list(dict.fromkeys(m.group(1) for t in texts for m in NCCL_VERSION.finditer(t)))
    row = gpu[1] if gpu else {}
    if gpu is None and not versions:
        return []  # neither is known: the signature's plainer diagnosis says what it can
    extra: List[Evidence] = []
    if row:
        extra.append(Evidence("figure", f"the GPU architecture table's sm_{row['sm']} ({row['family']}): kernels "
                                        f"from NCCL {row['nccl']}, CUDA {row['cuda']} ({row['source']})",
                              row.get("where", "gpu_arch.toml")))
    said_gpu = f"{gpu[0]} (sm_{sm}{', ' + row['family'] if row else ''})" if gpu else ""
    missing: List[str] = []
    if built:
        summary = (f"{said_gpu or 'the GPU'} is not in the framework's build, which has kernels for "
                   f"{' '.join(built)} only")
        why = "PyTorch said its build has no kernels for this GPU's capability"
        fix = (f"Install a framework build with sm_{sm} kernels"
               + (f" (built with CUDA {row['cuda']} or later)" if row else "") + ". " + FIX)
        conf = "high"
    elif gpu and versions and row:
        old = [v for v in versions if _vt(v) < _vt(row["nccl"])]
        if old:
            summary = (f"NCCL {', '.join(old)} predates {said_gpu}: the first NCCL release with kernels for it is "
                       f"{row['nccl']} (built with CUDA {row['cuda']} or later)")
            why = "the NCCL version is older than the first release whose build has this GPU's kernels"
            conf = "high"
        else:
            summary = (f"NCCL {', '.join(versions)} supports {said_gpu} (from {row['nccl']}) but this build of it "
                       "has no kernels for it: it was built with an NVCC_GENCODE without them")
            why = "the release supports the GPU, so the build left its architecture out"
            conf = "medium"
        fix = FIX
    elif gpu:
        summary = (f"no kernels for {said_gpu}: the NCCL version is not in the evidence"
                   + (f" (the first release with kernels for it is {row['nccl']}, CUDA {row['cuda']})" if row else ""))
        why = "the kernels did not load on this GPU; which NCCL ran is not known"
        missing.append("the 'NCCL version' line (NCCL_DEBUG=VERSION) or torch.cuda.nccl.version()")
        conf, fix = "medium", FIX
    else:
        summary = f"NCCL {', '.join(versions)} has no kernels for this GPU: which GPU is not in the evidence"
        why = "the kernels did not load; the GPU's architecture is not known to compare with the NCCL version"
        missing.append("nvidia-smi --query-gpu=name,compute_cap --format=csv")
        conf, fix = "medium", FIX
    return [C.make(sys.modules[__name__], summary, found, confidence=conf, why=why, fix=fix, extra=extra,
                   missing=missing,
                   alternatives=["cuda_driver_mismatch: a driver older than the CUDA the build needs fails "
                                 "differently ('driver version is insufficient', 'API call is not supported')"])]
