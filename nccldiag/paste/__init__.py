"""Node outputs pasted anywhere in a text, read through what surrounds them and judged as a bundle's (pure).

Admins give ``nccldiag log`` whatever they have: a job's output, a shell transcript, a chat message, one command's
output alone. This package finds the node outputs in it and judges them with the parsers and judges of the check
areas (the same functions ``check --bundle`` runs), so that a finding reads the same whichever way its evidence
came:

- :mod:`~nccldiag.paste.lines`: a line read through its decorations (shell prompts, quote marks, timestamps,
  launcher and host prefixes, ``grep``'s file names, markdown and HTML), with what was taken off it;
- :mod:`~nccldiag.paste.kinds`: one module per kind of output (``ibstat``, ``nvidia-smi -q``, kernel lines,
  ``lspci``, ...), each its words, its anchor, its lines and the sources it feeds; the registry is
  ``kinds/__init__.py``;
- :mod:`~nccldiag.paste.reader`: the text searched for the kinds' words, read only where they are, the blocks
  grown from their anchors and attributed to a host; a process's end (:mod:`~nccldiag.paste.ends`) on the way;
- :mod:`~nccldiag.paste.judge`: each host's blocks judged as one node of a bundle.

:func:`read_file` and :class:`Reader` find; :func:`judged` judges what was found (once for all the files of a
run, so that one host's outputs pasted in several files are one node); :func:`scan` does both on one text.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Tuple

from nccldiag.model.findings import Finding
from nccldiag.nccl.unwrap import Unwrapping, unwrap
from nccldiag.paste.ends import SIGNAL_NAMES, Line, signal_of
from nccldiag.paste.reader import CHUNK, Block, Found, Partial, Reader

__all__ = ["Block", "Found", "Line", "Partial", "Pasted", "Reader", "SIGNAL_NAMES", "judged", "merged", "read_file",
           "scan", "signal_of"]


@dataclass
class Pasted:
    """What the texts of a run held besides NCCL's lines: the node outputs (blocks), their failing and warning
    findings, each host's facts (``""``: no host), the lines read only in part, how processes ended."""

    blocks: List[Block] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    facts: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    partial: List[Partial] = field(default_factory=list)
    signals: List[Tuple[int, Line]] = field(default_factory=list)  # (signal number, line) of processes killed
    oom: List[Line] = field(default_factory=list)  # the kernel's or the runtime's OOM-kill lines
    bounded: List[str] = field(default_factory=list)  # the texts a bound stopped the reading of
    memlock_unlimited: List[Line] = field(default_factory=list)  # lines that set or show memlock unlimited
    peermem_absent: List[Line] = field(default_factory=list)  # 'lsmod | grep <peer-memory module>' printing nothing
    judged: Dict[Tuple[str, int], FrozenSet[str]] = field(default_factory=dict)  # (file, line) of a block -> its judges
    container_no_gpu: List[Tuple[Line, Line]] = field(default_factory=list)  # a container started without GPUs, and
    # the GPU failure printed after it
    slurm_reasons: List[Tuple[Line, str, str]] = field(default_factory=list)  # 'sinfo -R' rows: (row, reason, nodes)
    rdma_test_mtu: List[Tuple[Line, int]] = field(default_factory=list)  # an RDMA test's command and the MTU it asks
    nccl_conf: List[Tuple[Line, str, str]] = field(default_factory=list)  # a pasted NCCL config file: (line, name, value)
    last: List[Line] = field(default_factory=list)  # each text's last line that is not blank, its layers off
    rdma_test_device: List[Tuple[Line, str]] = field(default_factory=list)  # an RDMA test's command and the HCA it names
    one_gpu: List[Line] = field(default_factory=list)  # a CUDA program's list of the node's GPUs that lists one

    def lists_one_gpu(self, path: str) -> bool:
        """Whether the text ``path`` lists the node's GPUs and lists one (a line of a shape that says two GPUs cannot
        reach each other says nothing there)."""
        return any(line.path == path for line in self.one_gpu)

    def __bool__(self) -> bool:
        return bool(self.blocks or self.signals or self.oom or self.partial)

    @property
    def read(self) -> bool:
        """Whether anything in the texts was read as a node's output (in part, too)."""
        return bool(self.blocks or self.partial)

    def to_dict(self) -> Dict[str, Any]:
        return {"blocks": [b.to_dict() for b in self.blocks],
                "findings": [f.to_dict() for f in self.findings],
                "partial": [p.to_dict() for p in self.partial],
                "signals": [{"signal": n, "file": line.path, "line": line.lineno, "text": line.text[:300],
                             "host": line.host} for n, line in self.signals],
                "oom": [{"file": line.path, "line": line.lineno, "text": line.text[:300]} for line in self.oom],
                "bounded": list(self.bounded)}


def judged(found: Found) -> Pasted:
    """What was found, its blocks judged (:func:`nccldiag.paste.judge.judge`; where none was found, the node
    areas that judge them are not imported)."""
    findings: List[Any] = []
    facts: Dict[str, Dict[str, Any]] = {}
    by: Dict[Any, Any] = {}
    if found.blocks:
        from nccldiag.paste.judge import judge

        findings, facts, by = judge(found.blocks)
    return Pasted(list(found.blocks), findings, facts, list(found.partial), list(found.signals), list(found.oom),
                  [found.bounded] if found.bounded else [], list(found.memlock_unlimited), list(found.peermem_absent),
                  by, list(found.container_no_gpu), list(found.slurm_reasons), list(found.rdma_test_mtu),
                  list(found.nccl_conf), list(found.last), list(found.rdma_test_device),
                  list(found.one_gpu))


def read_file(path: str) -> Found:
    """The node outputs and processes' ends in the file at ``path``, read in blocks whatever its size; an
    unreadable file holds none (the log reader says why it cannot read it)."""
    reader = Reader(path)
    try:
        with open(path, "rb") as fh:
            stream = Unwrapping(fh)
            while True:
                data = stream.read(CHUNK)
                if not data:
                    break
                reader.feed(data)
    except OSError:
        return Found()
    return reader.end()


def scan(text: str, path: str = "<text>") -> Pasted:
    """The node outputs and processes' ends in ``text``, judged."""
    reader = Reader(path)
    reader.feed(unwrap(text).encode("utf-8", "surrogateescape"))
    return judged(reader.end())


def merged(parts: List[Found]) -> Found:
    out = Found()
    for part in parts:
        out.merge(part)
    return out

