"""The parent's side: hosts spread over worker processes, their results taken as they arrive.

Each worker (:mod:`nccldiag.shards.worker`, started with this interpreter and this copy of nccldiag)
reads its :class:`Job` on standard input and keeps that input open: its end (the parent gone, or done with
it) ends the worker. It sends one frame per node on standard output as the node is done: the node without
its outputs, and, in a check, the node judged and made compact. Per-host deadlines are the workers' own
(:func:`nccldiag.collect.runner.collect_hosts`, as in one process). A worker that exits before all its hosts
are done (killed, out of memory, a bug) leaves them reported with that cause ("worker exited"), never lost;
Ctrl-C and SIGTERM (a KeyboardInterrupt in the parent) stop every worker, bounded, before they go on up.
"""
from __future__ import annotations

import collections
import dataclasses
import math
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple

import nccldiag
from nccldiag.areas import mesh
from nccldiag.bundle import Bundle
from nccldiag.collect import runner
from nccldiag.inventory import Host
from nccldiag.model.raw import RawNode, ReleasedNode, released
from nccldiag.shards import judged as judging

PER_WORKER = 64  # hosts a worker is worth starting for: fewer share a process
MARGIN = 30.0  # seconds a worker is given beyond its hosts' deadlines (start-up, its last frames)
JUDGE_S = 1.0  # seconds a worker is given to judge and write each host (a real node takes under 0.1 s)
STOP_WAIT = 5.0  # seconds a stopped worker is given to exit before it is killed
WORKER = "worker"  # the error kind of a host whose worker exited before it was done


def default_workers(hosts: int, cores: Optional[int] = None) -> int:
    """One worker per ``PER_WORKER`` hosts, at most one per core: a small cluster pays no process start-up."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
    return max(1, min(cores, math.ceil(hosts / PER_WORKER)))


@dataclass
class Job:
    """What one worker is given."""

    hosts: List[Host]
    index: List[int]  # each host's place in the run's input
    script: str
    opts: runner.CollectOptions  # its share of --fanout; names already looked up
    plan: Dict[str, List[str]]  # the node-to-node test's targets, planned over every host
    areas: Optional[List[str]] = None  # the areas to judge with (names); None: collect only
    options: Dict[str, Any] = field(default_factory=dict)
    spec: Any = None
    bundles: List[Bundle] = field(default_factory=list)  # where each node's outputs are written


def frame_of(obj: Any) -> bytes:
    """``obj`` as one frame, whole (an object that cannot be pickled raises here, before anything is written)."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return struct.pack(">Q", len(data)) + data


def host_bound(opts: runner.CollectOptions, mesh_targets: int = 0) -> float:
    """The longest one host's collection may take in a worker (:func:`nccldiag.collect.runner.collect_host`):
    its connection with every retry, its login, the script's whole-run bound, and the node-to-node test's."""
    ssh = opts.ssh
    connect = ssh.connect_timeout * (1 + max(0, ssh.retries))
    mesh_s = mesh.command_timeout(mesh_targets, opts.mesh_timeout) + 5 if mesh_targets else 0.0
    return connect + runner.login_timeout(ssh) + max(ssh.command_timeout * runner.WHOLE_RUN, mesh_s)


def bound(job: Job, left: int) -> float:
    """Seconds a worker may go without sending a node while ``left`` of its hosts are not done: the run's own
    deadlines (each wave of its share of --fanout takes at most one :func:`host_bound`, and a host stopped at
    a bound is tried once more), plus each host's judging, plus :data:`MARGIN`."""
    if left <= 0:
        return MARGIN
    waves = math.ceil(left / max(1, job.opts.fanout))
    targets = max((len(t) for t in job.plan.values()), default=0)
    return 2 * waves * host_bound(job.opts, targets) + left * JUDGE_S + MARGIN


def send(out: BinaryIO, obj: Any) -> None:
    out.write(frame_of(obj))
    out.flush()


def receive(inp: BinaryIO) -> Any:
    """The next frame, or None at the end of the stream (a frame cut short is the end too)."""
    head = _exactly(inp, 8)
    if head is None:
        return None
    body = _exactly(inp, struct.unpack(">Q", head)[0])
    return None if body is None else pickle.loads(body)


def _exactly(inp: BinaryIO, n: int) -> Optional[bytes]:
    buf = bytearray()
    while len(buf) < n:
        chunk = inp.read(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _cause(rc: Optional[int], tail: Sequence[str]) -> str:
    if rc is None:
        how = "did not exit"
    elif rc < 0:
        try:
            how = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            how = f"killed by signal {-rc}"
    else:
        how = f"exit status {rc}"
    last = next((line for line in reversed(tail) if line.strip()), "")
    return how + (f"; its last words: {last.strip()[:300]}" if last else "")


def lost(host: str, cause: str) -> RawNode:
    """The node of a host whose worker exited before the host was done."""
    return RawNode(host=host, error={
        "kind": WORKER, "message": f"not collected: the worker process collecting it exited ({cause})",
        "fix": "Run the check again; if a worker exits again, run it with --workers 1 and report the error."},
        extra={"transport": "ssh"})


def overdue(host: str, cause: str) -> RawNode:
    """The node of a host whose worker was past its bound (stopped or hung) and was killed."""
    return RawNode(host=host, error={
        "kind": WORKER, "message": f"not checked: the worker process collecting it did not finish in time ({cause})",
        "fix": "Run the check again on this host; if its worker hangs again, run it with --workers 1 and look "
               "for a process stopped or stuck in a write (a hung --save or run directory file system)."},
        extra={"transport": "ssh"})


def unsent(host: str, cause: str) -> RawNode:
    """The node of a host whose worker collected it but could not judge it or send its records back."""
    return RawNode(host=host, error={
        "kind": WORKER, "message": f"not checked: its worker could not judge it or send its records ({cause})",
        "fix": "Save the node's outputs ('nccldiag collect -w HOST -o DIR') and report the bundle: one node's "
               "output must never stop its check."}, extra={"transport": "ssh"})


class _Worker:
    def __init__(self, k: int, job: Job, results: "queue.Queue[tuple]"):
        self.k = k
        self.job = job
        self.tail: "collections.deque[str]" = collections.deque(maxlen=20)
        self.expired = ""  # why it was killed past its bound ('' while it was not)
        self.last = time.monotonic()  # when it last sent a node (or was started)
        self.handing = False  # its last node waits for room in the parent's queue: the parent's delay, not its
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(nccldiag.__file__)))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        # this very copy of nccldiag, first on the path (before the working directory, which -m and -c put
        # first); a session of its own: the terminal's Ctrl-C reaches the parent only, which stops the workers
        boot = f"import sys; sys.path.insert(0, {root!r}); from nccldiag.shards import worker; worker.main()"
        self.proc = subprocess.Popen([sys.executable, "-c", boot], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, close_fds=True,
                                     start_new_session=True)
        self.reader = threading.Thread(target=self._read, args=(results,), name=f"nccldiag-shard-{k}", daemon=True)
        self.errors = threading.Thread(target=self._stderr, name=f"nccldiag-shard-{k}-err", daemon=True)
        self.errors.start()
        self.reader.start()

    def _read(self, results: "queue.Queue[tuple]") -> None:
        try:
            try:
                send(self.proc.stdin, self.job)  # the input stays open: its end tells the worker to stop
            except (OSError, ValueError):  # it died at once (or was stopped): what it said is reported
                pass
            while True:
                try:
                    msg = receive(self.proc.stdout)
                except Exception as exc:  # a frame that does not unpickle: the worker is not to be trusted
                    self.tail.append(f"unreadable result: {type(exc).__name__}: {exc}")
                    msg = None
                if msg is None:
                    break
                self.last, self.handing = time.monotonic(), True
                results.put(("node", self.k, msg))
                self.last, self.handing = time.monotonic(), False
        finally:
            self.proc.stdout.close()
            rc = self.proc.wait()
            self.errors.join(STOP_WAIT)
            results.put(("end", self.k, rc))

    def _stderr(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            self.tail.append(line.decode("utf-8", "replace"))

    def expire(self, why: str) -> None:
        """Kill the worker at once (a stopped process does not act on SIGTERM): it is past its bound."""
        self.expired = why
        try:
            self.proc.kill()
        except OSError:
            pass

    def stop(self) -> None:
        """End the worker (its input closed, then SIGTERM, then SIGKILL), bounded."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_WAIT)


def collect(
    hosts: Sequence[Host],
    script: str,
    opts: runner.CollectOptions,
    workers: int,
    areas: Optional[Sequence[ModuleType]] = None,
    options: Optional[Dict[str, Any]] = None,
    spec: Any = None,
    bundles: Sequence[Bundle] = (),
    on_node: Optional[Callable[[ReleasedNode, Optional[judging.Judged], Dict[str, str]], None]] = None,
    on_workers: Optional[Callable[[List[int]], None]] = None,
    limit: Callable[[Job, int], float] = bound,
) -> List[ReleasedNode]:
    """Collect from ``hosts`` over ``workers`` processes, each with its share of ``opts.fanout``; in a check
    (``areas`` given) each node is judged in its worker. Every node's outputs are written to each of
    ``bundles`` (already indexed) by its worker. ``on_node(node, judged, not_saved)`` sees each node as it
    arrives (``not_saved``: a bundle's path -> why the node could not be written there); the result is every node, in
    input order (what was judged is ``on_node``'s to keep). ``on_workers`` is given the workers' process ids
    once they are started. ``limit(job, hosts left)``: seconds a worker may go without sending a node before
    it is killed and its hosts left are reported not checked (:func:`bound`)."""
    hosts = list(hosts)
    if not hosts:
        return []
    plan = runner.mesh_plan(hosts, opts.mesh)
    runner.resolve(hosts, opts)
    workers = max(1, min(workers, len(hosts)))
    share = max(1, math.ceil(opts.fanout / workers))
    results: "queue.Queue[tuple]" = queue.Queue(maxsize=max(64, 2 * share))
    jobs = []
    for k in range(workers):
        index = list(range(k, len(hosts), workers))
        mine = [hosts[i] for i in index]
        ssh = dataclasses.replace(opts.ssh, resolved={h.name: opts.ssh.resolved[h.name] for h in mine
                                                      if h.name in opts.ssh.resolved})
        sub = dataclasses.replace(opts, ssh=ssh, fanout=share)
        jobs.append(Job(mine, index, script, sub, {h.name: plan[h.name] for h in mine if h.name in plan},
                        [a.NAME for a in areas] if areas is not None else None, dict(options or {}), spec,
                        list(bundles)))
    done: Dict[int, ReleasedNode] = {}
    started: List[_Worker] = []
    try:
        for k, job in enumerate(jobs):
            started.append(_Worker(k, job, results))
        if on_workers is not None:
            on_workers([w.proc.pid for w in started])
        running = len(started)
        left = [len(w.job.hosts) for w in started]
        ended = [False] * len(started)
        while running:
            now = time.monotonic()
            for w in started:  # each worker bounded, however busy the others keep this loop
                if not ended[w.k] and not w.expired and not w.handing:
                    allowed, silent = limit(w.job, left[w.k]), now - w.last
                    if silent > allowed:
                        w.expire(f"no node from it for {silent:.0f} s, past its bound of "
                                 f"{allowed:.0f} s for its {left[w.k]} hosts left; killed")
            try:
                what, k, payload = results.get(timeout=0.5)
            except queue.Empty:
                continue
            if what == "node":
                i, node, judged, not_saved = payload
                done[i] = node
                left[k] -= 1
                if on_node is not None:
                    on_node(node, judged, not_saved)
                continue
            running -= 1
            ended[k] = True
            w = started[k]
            missing = [(i, h) for i, h in zip(w.job.index, w.job.hosts) if i not in done]
            if missing:
                cause = w.expired or _cause(payload, list(w.tail))
                for i, h in missing:
                    node, judged, not_saved = _lost(h.name, cause, areas, options, spec, bundles,
                                                    overdue if w.expired else lost)
                    done[i] = node
                    if on_node is not None:
                        on_node(node, judged, not_saved)
    finally:
        for w in started:
            w.stop()
    return [done[i] for i in range(len(hosts))]


def _lost(host: str, cause: str, areas, options, spec, bundles, why=lost
          ) -> Tuple[ReleasedNode, Optional[judging.Judged], Dict[str, str]]:
    raw = why(host, cause)
    not_saved = {}
    for b in bundles:
        try:
            b.node(raw)
        except OSError as exc:
            not_saved[b.path] = exc.strerror or str(exc)
    judged = judging.judge(raw, areas, options, spec) if areas is not None else None
    return released(raw), judged, not_saved
