"""One ``nccldiag check`` end to end: the nodes collected live (:mod:`nccldiag.sessions.collection`) or read from
a saved bundle, each judged and kept in the run directory as it arrives, then the cluster areas judged, the
diagnoses attached and Slurm told; the report is returned (nothing is printed here).

What a check keeps in its run directory (:class:`nccldiag.rundir.Run` writes it):

- ``run.json``: :class:`CheckMeta`, what the run was to check, written before the first node arrives;
- ``nodes.jsonl``: one :meth:`~nccldiag.check.engine.NodeReport.to_line` per node as it is judged;
- ``raw/``: the nodes' outputs as a bundle (:meth:`~nccldiag.rundir.Run.bundle`), but for a check of a saved
  bundle, which ``run.json`` names instead.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from nccldiag import rundir
from nccldiag.check import engine
from nccldiag.model.raw import RawNode

NODES = "nodes.jsonl"

# Areas a health check runs by default: those that read files and run status
# commands only (no Python or torch import, no topology matrix).
HEALTH_AREAS = ("system", "iommu", "pcie", "ib", "gdr", "gpu", "gpuhealth", "xid", "kernel", "limits")


@dataclass
class CheckMeta:
    """``run.json`` of a check: what a report rebuilt from its directory needs besides the nodes' outputs."""

    hosts: List[str]
    areas: List[str]
    options: Dict[str, Any] = field(default_factory=dict)
    bundle: Optional[str] = None  # the saved bundle the run judged (its nodes are read from there)
    spec: Optional[str] = None  # the site spec file the nodes were compared with
    started: str = ""

    def to_json(self) -> Dict[str, Any]:
        """The fields of ``run.json`` (the run directory adds ``command``, ``run_id`` and ``started``)."""
        return {"schema": engine.SCHEMA, "hosts": list(self.hosts), "areas": list(self.areas),
                "options": dict(self.options), "bundle": self.bundle, "spec": self.spec}

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "CheckMeta":
        """A ``run.json`` read back; a field of the wrong type is a ``ValueError`` naming it."""
        def names(key: str) -> List[str]:
            v = d.get(key) or []
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError(f"'{key}' should be a list of names")
            return v

        def text(key: str) -> Optional[str]:
            v = d.get(key) or None
            if v is not None and not isinstance(v, str):
                raise ValueError(f"'{key}' should be a string")
            return v

        options = d.get("options") or {}
        if not isinstance(options, dict):
            raise ValueError("'options' should be an object")
        return cls(hosts=names("hosts"), areas=names("areas"), options=options, bundle=text("bundle"),
                   spec=text("spec"), started=text("started") or "")


@dataclass
class Slurm:
    """What the check tells Slurm of its verdicts (:func:`nccldiag.slurm.feedback.run`)."""

    drain: bool = False
    drain_unchecked: bool = False
    resume_healthy: bool = False
    local: bool = False  # this machine alone: Slurm knows it as $SLURMD_NODENAME


class CheckRun:
    """One check: its nodes kept as they arrive (:class:`Keeper`), then judged together (:meth:`conclude`)."""

    def __init__(self, run: rundir.Run, areas_sel, options: Dict[str, Any], spec=None):
        self.run, self.areas, self.options, self.spec = run, list(areas_sel), options, spec
        self.keeper: Optional[Keeper] = None
        self.raws: List[RawNode] = []
        self.notes: List[str] = []
        self.target = None

    def from_bundle(self, path: str, only_given: bool) -> None:
        """The nodes of a saved bundle, judged as if live (the areas it collected, unless ``only_given``)."""
        from nccldiag.collect import session

        self.raws, self.areas = session.from_bundle(path, self.areas, only_given)
        self.keeper = Keeper(self.run, self.areas, self.options, os.path.abspath(path), [r.host for r in self.raws],
                             spec=self.spec)
        for raw in self.raws:
            self.keeper.node(raw)

    def live(self, target, opts, save_dir: Optional[str] = None, workers: Optional[int] = None,
             on_start=None, on_node=None) -> None:
        """The nodes of ``target`` (its ``inv``, ``transport``, ``job``, ``alloc``: a
        :class:`~nccldiag.cli.host.HostCommand`), collected as ``opts`` say, each kept as it arrives."""
        from nccldiag.sessions import collection

        self.target = target
        inv = target.inv
        hosts = list(inv.names) if inv is not None else [_this_host()]
        self.keeper = Keeper(self.run, self.areas, self.options, None, hosts,
                             target.transport if inv is not None else "local", spec=self.spec)
        self.raws, self.notes = collection.collect(inv, opts, self.areas, save_dir, workers, keeper=self.keeper,
                                                   on_start=on_start, on_node=on_node)

    def conclude(self, slurm: Optional[Slurm] = None) -> engine.CheckReport:
        """Every node judged (those kept as they arrived), then the cluster areas; the diagnoses attached; with a
        live target, Slurm told of the verdicts (and drains done) when asked or when Slurm ran the check."""
        from nccldiag import diagnosis
        from nccldiag.sessions.collection import trust_notes

        self.keeper.close()
        report = engine.analyze(self.raws, self.areas, self.options, judged=self.keeper.judged, spec=self.spec)
        report.inventory_notes = list(self.notes) + trust_notes(self.raws)
        diagnosis.attach(report, check=report, spec=self.spec)
        t, slurm = self.target, slurm or Slurm()
        if t is not None and (slurm.drain or slurm.resume_healthy or t.transport == "srun" or t.alloc is not None
                              or t.job is not None):
            from nccldiag.slurm import feedback

            report.slurm = feedback.run(report, self.raws, slurm.drain, slurm.drain_unchecked, slurm.resume_healthy,
                                        local_name=(os.environ.get("SLURMD_NODENAME") or None) if slurm.local else None,
                                        spec=self.spec)
        return report

    @property
    def failed(self) -> str:
        """Why the run directory could not be written ('' while it could)."""
        return self.keeper.failed if self.keeper is not None else ""

    def facts(self, host: str) -> Dict[str, Any]:
        """A node's facts as its part of the report holds them, read back from where they waited."""
        return self.keeper.facts.get(host)


def _this_host() -> str:
    import socket

    return socket.gethostname()


class Keeper:
    """Writes the run directory of a check as nodes arrive: raw outputs (a bundle) and one judged line each.

    ``run.json`` and the raw bundle's ``_bundle.json`` name the hosts the run
    was to check, written before the first node arrives.
    """

    def __init__(self, run: rundir.Run, areas_sel, options, bundle: Optional[str], hosts: list,
                 transport: str = "ssh", spec=None):
        self.run = run
        self.spec = spec
        self.areas = areas_sel
        self.options = options
        self.bundle = bundle
        self.raw = run.bundle()
        self.judged = {}  # host -> NodeReport, judged once, as it arrived
        from nccldiag.shards.judged import Shared

        self.shared = Shared()  # the texts the nodes repeat, held once
        self.failed = ""  # why the run directory could not be written, once it could not
        self.lines = None
        meta = CheckMeta(list(hosts), [a.NAME for a in areas_sel], options, bundle,
                         os.path.abspath(spec.path) if spec is not None else None)
        try:
            run.create(meta.to_json())
            self.lines = run.lines(NODES)
            if bundle is None:
                self.raw.start(list(hosts), {"transport": transport, "areas": meta.areas})
        except OSError as exc:  # the default state directory unwritable: the check runs, unkept
            self.failed = f"{exc.strerror or exc}"
        self.facts = Spool(run.path if os.path.isdir(run.path) else None)

    def node(self, raw) -> None:
        """A node as it arrives: judged, its outputs written, what the run keeps of it taken."""
        from nccldiag.shards import judged

        j = judged.judge(raw, self.areas, self.options, self.spec)
        if not self.failed and self.bundle is None:
            try:
                self.raw.node(raw)
            except OSError as exc:  # a full disk loses the run directory, never the check
                self.failed = f"{exc.strerror or exc}"
        self.take(j)

    def take(self, j) -> None:
        """What the check keeps of a judged node (:class:`nccldiag.shards.judged.Judged`): its findings, the
        summary the cluster areas compare and the facts the diagnoses read; the rest of its facts wait in the
        spool, read back as the report is written."""
        nr = j.node
        self.shared.node(nr)
        self.judged[nr.host] = nr
        self.facts.add(nr.host, j.facts)
        if self.failed:
            return
        try:
            self.lines.add(nr.to_line())
        except OSError as exc:  # a full disk loses the run directory, never the check
            self.failed = f"{exc.strerror or exc}"

    def close(self) -> None:
        self.run.close()


class Spool:
    """Each node's facts as JSON text, by host: in an unnamed temporary file of the run directory (in memory
    where no file can be written), so that a thousand nodes' facts are not held until the report is written."""

    def __init__(self, where: Optional[str]):
        self.at = {}  # host -> (offset, length) in the file, or the text itself
        self.file = None
        for d in ([where] if where else []) + [None]:
            try:
                self.file = tempfile.TemporaryFile(dir=d)
                break
            except OSError:
                continue
        self.end = 0
        self.writable = self.file is not None

    def add(self, host: str, text: str) -> None:
        data = text.encode()
        if self.writable:
            try:
                self.file.seek(self.end)
                self.file.write(data)
                self.at[host] = (self.end, len(data))
                self.end += len(data)
                return
            except OSError:  # a full disk: what comes next is held
                self.writable = False
        self.at[host] = data

    def get(self, host: str):
        where = self.at.get(host)
        if where is None:
            return {}
        if isinstance(where, tuple):
            self.file.seek(where[0])
            where = self.file.read(where[1])
        return json.loads(where)
