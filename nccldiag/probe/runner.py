"""Running a probe: stage, launch one setting at a time, collect, clean up.

This is the I/O edge of ``nccldiag probe``. For each setting it starts fresh
processes on every node (NCCL reads its environment once per process),
streams the ranks' JSON-lines records back as they come (each one written
to disk at once), bounds the run by a deadline, and afterwards kills every
process of the run on every node and checks that none survived.
"""
from __future__ import annotations

import os
import re
import shlex
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from nccldiag import rx
from nccldiag.areas.base import json_line
from nccldiag.node import node_program
from nccldiag.probe import launch, results
from nccldiag.probe.plan import RAS_GUARD, RAS_WAIT, Setting
from nccldiag.probe.progress import entered_collective, shows_failure, shows_progress
from nccldiag.transport.base import TransportError
from nccldiag.transport.nodes import run_all
from nccldiag.transport.task import fan_out

_SAFE = rx.compile(r"[^A-Za-z0-9._-]")
STDERR_TAIL = 4000  # the characters of a launcher's stderr kept (its end), and read back from a run directory


@dataclass
class NodeRun:
    host: str
    rc: Optional[int] = None
    error: Optional[dict] = None
    stderr_tail: str = ""
    elapsed: float = 0.0


@dataclass
class SettingRun:
    setting: Setting
    records: List[dict] = field(default_factory=list)
    nodes: Dict[str, NodeRun] = field(default_factory=dict)
    timed_out: bool = False
    aborted_after_failure: bool = False
    survivors: Dict[str, List[str]] = field(default_factory=dict)
    kill_errors: Dict[str, str] = field(default_factory=dict)
    logs: Dict[str, str] = field(default_factory=dict)  # file name -> text
    counters: Dict[str, Dict[str, int]] = field(default_factory=dict)  # host -> counters that grew during the run
    after: Dict[str, str] = field(default_factory=dict)  # host -> output of the command run after the reap
    ras: Dict[str, str] = field(default_factory=dict)  # host -> its NCCL RAS answer when the setting hung
    elapsed: float = 0.0
    commands: Dict[str, str] = field(default_factory=dict)
    run_id: str = ""
    launched: Optional[results.Launched] = None  # the ranks launched, on which node, for which collectives
    rejected: Dict[str, Dict[str, int]] = field(default_factory=dict)  # host -> what of its output was not kept
    # (arrival in seconds after the launch on this machine's clock, collective) of each record that shows data
    # moved (progress.shows_progress), and when the deadline stopped the run: what tells slow, stalled and hung
    progress: List[Tuple[float, str]] = field(default_factory=list)
    stopped_s: Optional[float] = None
    # arrival (seconds after the launch) of each record that says a rank failed (progress.shows_failure): a
    # failure only after the deadline stopped the run is the stop's doing, not the setting's
    failures: Optional[List[float]] = None  # None: not known (a run directory written before they were kept)
    # arrival (seconds after the launch) of each rank's first record saying it had entered a collective
    # (progress.entered_collective): a run cut just after its ranks entered was still starting, not hung
    entered: Optional[Dict[int, float]] = None  # None: not known (a run directory written before they were kept)


@dataclass
class Prepared:
    run_id: str
    rundir: str
    rdzv_host: str
    rdzv_port: int
    ifnames: Dict[str, Optional[str]]
    loopback: Dict[str, List[str]]  # host -> loopback addresses its name resolves to
    problems: Dict[str, str]  # host -> why it cannot take part
    info: Dict[str, dict] = field(default_factory=dict)  # host -> python/torch facts
    hostnames: Dict[str, str] = field(default_factory=dict)  # inventory name -> the node's own host name


_INFO_SNIPPET = node_program("info")


def _archive(files: Dict[str, str]) -> str:
    """The worker's files as a base64 tar.gz, sent on one command's stdin."""
    import base64
    import io
    import tarfile

    def own(info: tarfile.TarInfo) -> tarfile.TarInfo:
        # root's files, closed to others, whoever owns them here: tar run as root keeps the archive's owner
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode = 0o700 if info.isdir() else 0o600
        return info

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, path in sorted(files.items()):
            tar.add(path, arcname=rel, filter=own)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def new_run_id() -> str:
    from nccldiag.rundir import new_run_id as new

    return new()


def _parse_kv(text: str) -> Dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition("=")
        if k:
            out[k.strip()] = v.strip()
    return out


def prepare(nodes: Sequence, python: str, ifname: Optional[str], shared_dir: Optional[str],
            timeout: float = 30, stage: bool = True, run_id: Optional[str] = None, fanout: int = 64,
            watchdog: int = 0) -> Prepared:
    """Stage the worker, pick the rendezvous port and each node's interface.

    ``watchdog``: seconds the run may last at most; every node that makes a
    run directory over a connection that lasts the run (SSH) leaves a
    watchdog beside it (:func:`~nccldiag.probe.launch.rundir_watchdog`), in
    the same command, so that the directory goes however nccldiag ends. An
    answer that is not what the node program prints makes the node a
    problem, named.
    """
    run_id = run_id or new_run_id()
    first = nodes[0]
    out = Prepared(run_id, os.path.join(shared_dir or "/tmp", run_id), first.address or first.name, 29400, {}, {},
                   {})
    archive = _archive(worker_files()) if stage else None

    def prep(node) -> None:
        # one round trip per node: make the run directory (a shared one: the first node makes it, the
        # others check that it is the one it made), unpack the worker (from stdin), find the interface,
        # look at the Python
        unpack = archive is not None and (shared_dir is None or node is first)
        makes = stage and (shared_dir is None or node is first)
        guard = (launch.rundir_watchdog(out.rundir, run_id, watchdog)
                 if makes and watchdog and getattr(node, "holds_session", False) else "")
        cmd = ((launch.make_rundir(out.rundir) + guard if makes else launch.owned_rundir(out.rundir) if stage else "")
               + (f"base64 -d | tar -xzf - -C {shlex.quote(out.rundir)} && " if unpack else "")
               + _facts_command(out.rdzv_host, ifname, python))
        try:
            r = node.run(cmd, timeout, stdin=archive if unpack else None)
        except TransportError as exc:
            out.problems[node.name] = exc.message
            return
        if r.error or r.rc != 0:
            out.problems[node.name] = (r.error.message if r.error else f"setup failed: {r.stderr.strip()[:200]}")
            return
        _read_facts(node.name, _parse_kv(r.stdout), out, python, ifname)

    if shared_dir and stage:
        fan_out([first], prep, 1)  # the others find the directory it made, or are refused
        rest = [n for n in nodes if n is not first] if first.name not in out.problems else []
        for n in nodes:
            if n is not first and first.name in out.problems:
                out.problems[n.name] = f"the shared run directory was not made on {first.name}"
        fan_out(rest, prep, fanout)
    else:
        fan_out(list(nodes), prep, fanout)
    out.rdzv_port = int(out.info.get(first.name, {}).get("free_port") or 29400)
    return out


def _facts_command(rdzv_host: str, ifname: Optional[str], python: str) -> str:
    """sh printing a node's interface towards ``rdzv_host``, its speed, and what the Python finds (``key=value``)."""
    speed_of = shlex.quote(ifname) if ifname else '"$d"'  # the interface gloo/NCCL get, quoted on the node
    return (launch.iface_command(rdzv_host)
            + f"; echo \"speed=$(cat /sys/class/net/{speed_of}/speed 2>/dev/null)\""
            + f"; echo \"info=$({shlex.quote(python)} -c {shlex.quote(_INFO_SNIPPET)} 2>&1 | tail -n 1)\"")


def _read_facts(name: str, kv: Dict[str, str], out: Prepared, python: str, ifname: Optional[str]) -> None:
    """A node's answer to :func:`_facts_command` into ``out``; an answer that is not what the node program
    prints, or a Python without torch, makes the node a problem, named."""
    out.ifnames[name] = ifname or kv.get("iface") or None
    out.hostnames[name] = kv.get("hostname") or name
    facts, _ = json_line(kv.get("info", ""))  # bounded in length and depth: the node's answer is not trusted
    port = facts.get("free_port", 29400) if isinstance(facts, dict) else None
    if not isinstance(facts, dict) or not isinstance(port, int) or isinstance(port, bool) \
            or not 0 < port < 65536 or not isinstance(facts.get("gpus", 0), int):
        out.problems[name] = f"{python} cannot run the probe on {name}: {kv.get('info', '')[:200]!r}"
        return
    out.info[name] = facts
    if not facts.get("torch"):
        out.problems[name] = (f"torch is not installed for {python} on {name}: "
                              "pip install 'nccldiag[probe]' there, or pass --python")
        return
    speed = kv.get("speed", "").strip()
    facts["iface_speed"] = int(speed) if speed.isdigit() and int(speed) > 0 else None
    facts["route_iface"] = kv.get("iface") or None  # what routes to the first node
    loop = [a for a in kv.get("self", "").split() if a.startswith("127.") or a == "::1"]
    if loop:
        out.loopback[name] = loop


def run_setting(
    nodes: Sequence,
    commands: Dict[str, str],
    setting: Setting,
    timeout: float,
    grace: float,
    run_id: str,
    on_record: Optional[Callable[[dict], None]] = None,
    log_glob: Optional[str] = None,
    fanout: int = 64,
    launchers: Optional[Sequence] = None,
    after: Optional[str] = None,
    on_timeout: Optional[str] = None,
    launched: Optional[results.Launched] = None,
    hostnames: Optional[Dict[str, str]] = None,
    on_started: Optional[Callable[[], None]] = None,
) -> SettingRun:
    """Run ``commands[host]`` on each node at once, bounded by ``timeout``. ``on_started``: called once
    every launcher's command is under way, while the ranks start. ``launched``: the ranks each node launched (without it, the first
    launcher's stream is the only one read, and the world is unknown). Every line is admitted through a
    :class:`~nccldiag.probe.results.Gate`: a record is kept only for a rank
    its stream's node launched, bound to that node; what was dropped is
    counted per node in ``rejected``. ``hostnames``: each node's own host
    name, as its NCCL log lines carry it (:func:`fetch_logs`).

    ``on_timeout``: sh run on the nodes when the deadline passes, before
    the ranks are killed (the NCCL RAS query, :func:`ras_command`; see
    :func:`ask_hung`); the first node that answers gives the report kept
    with the setting's logs.

    When one node's launcher fails, the others get ``grace`` seconds to
    report their own errors before everything is killed. Every node's
    launcher starts at once (the ranks of a collective must all be up);
    reaping and log fetching go ``fanout`` nodes at a time. ``launchers``,
    when given, run the commands instead (srun on this machine starts every
    rank); reaping and logs still cover ``nodes``.
    """
    active = list(launchers) if launchers else [n for n in nodes if n.name in commands]
    ranks_on = list(nodes) if launchers else active
    out = SettingRun(setting=setting, commands=dict(commands), run_id=run_id, launched=launched, failures=[],
                     entered={})
    # with a query to make at the deadline, the streams outlive it: closing a rank's output kills it
    streams = _Streams(out, launched or results.Launched((active[0].name,) if active else (), results.MAX_WORLD),
                       on_record, timeout + (RAS_GUARD if on_timeout else 0))
    streams.start(active)
    if on_started is not None:
        on_started()
    interrupted = streams.wait(timeout, grace)
    if out.timed_out and on_timeout and interrupted is None:
        ask_hung(ranks_on, on_timeout, out, fanout)
    streams.cancel.set()
    reap_all(ranks_on, run_id, fanout, out, after=after)
    if interrupted is not None:
        raise interrupted
    streams.join()
    if log_glob:
        out.logs.update(fetch_logs(ranks_on, log_glob, fanout=fanout, hostnames=hostnames, rejected=out.rejected))
    out.elapsed = time.monotonic() - streams.t0
    return out


class _Streams:
    """Every launcher's output of one setting, streamed at once, each on its own thread: each line admitted
    through the setting's :class:`~nccldiag.probe.results.Gate` into ``out.records``, each launcher's end in
    ``out.nodes``."""

    def __init__(self, out: SettingRun, launched: results.Launched, on_record: Optional[Callable[[dict], None]],
                 stream_timeout: float):
        self.out, self.on_record, self.stream_timeout = out, on_record, stream_timeout
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.failed = threading.Event()
        self.t0 = time.monotonic()
        self.gate = results.Gate(launched)
        out.rejected = self.gate.rejected
        self.threads: Dict[str, threading.Thread] = {}

    def handle(self, host: str, line: str) -> None:
        with self.lock:
            rec = self.gate.admit(host, line)
            if rec is None:
                return
            rec["setting"] = self.out.setting.name
            self.out.records.append(rec)
            rank = rec.get("rank")
            if self.out.entered is not None and entered_collective(rec) and isinstance(rank, int) \
                    and not isinstance(rank, bool) and rank not in self.out.entered:
                self.out.entered[rank] = round(time.monotonic() - self.t0, 3)
            if shows_progress(rec):
                self.out.progress.append((round(time.monotonic() - self.t0, 3), str(rec.get("collective"))))
            elif shows_failure(rec):
                self.out.failures.append(round(time.monotonic() - self.t0, 3))
        if self.on_record is not None:
            self.on_record(rec)

    def go(self, node, command: str) -> None:
        t0 = time.monotonic()
        r = node.stream(command, self.stream_timeout, lambda line: self.handle(node.name, line), self.cancel)
        err = r.error.to_dict() if r.error else None
        if err is None and self.cancel.is_set() and r.rc is not None and r.rc < 0:
            # stopped with the run: the reap killed it (a launcher on this machine carries the run's marker
            # too, as srun does) before its own stream noticed the cancel
            err = {"kind": "command-timeout", "message": f"stopped with the run (signal {-r.rc})"}
        nr = NodeRun(node.name, r.rc, err, (r.stderr or "")[-STDERR_TAIL:], time.monotonic() - t0)
        with self.lock:
            self.out.nodes[node.name] = nr
        if r.error is None and r.rc != 0:
            self.failed.set()

    def start(self, active: Sequence) -> None:
        self.threads = {n.name: threading.Thread(target=self.go, args=(n, self.out.commands[n.name]), daemon=True)
                        for n in active}
        for t in self.threads.values():
            t.start()

    def wait(self, timeout: float, grace: float) -> Optional[BaseException]:
        """Until every stream ended, the deadline passed (``out.timed_out``), or ``grace`` seconds after a
        launcher failed; a Ctrl-C is returned, for the caller to raise once the ranks are killed."""
        out = self.out
        deadline = self.t0 + timeout
        try:
            while any(t.is_alive() for t in self.threads.values()):
                now = time.monotonic()
                if now >= deadline:
                    out.timed_out = True
                    out.stopped_s = round(now - self.t0, 3)
                    break
                if self.failed.is_set():
                    self.failed.clear()
                    deadline = min(deadline, now + grace)
                    out.aborted_after_failure = True
                for t in self.threads.values():
                    if t.is_alive():
                        t.join(min(0.2, max(0.0, deadline - time.monotonic())))
                        break
        except KeyboardInterrupt as exc:
            return exc  # the ranks are killed all the same, then the interrupt goes on
        return None

    def join(self) -> None:
        """The streams' threads, once the ranks are reaped; a launcher that never ended is one with no answer."""
        for name, t in self.threads.items():
            t.join(5)
            if name not in self.out.nodes:
                self.out.nodes[name] = NodeRun(name, None, {"kind": "command-timeout", "message": "no answer"})


RAS_NO_ANSWER = "nccldiag-ras:"
_RAS_SNIPPET = node_program("rasquery")


def ras_command(python: str, addr: Optional[str] = None, wait: int = RAS_WAIT) -> str:
    """sh that asks the NCCL RAS service on a node for its job's status (``VERBOSE STATUS``)."""
    return (f"{shlex.quote(python)} -c {shlex.quote(_RAS_SNIPPET)} {shlex.quote(addr or 'localhost:28028')} "
            f"{int(wait)}")


RAS_BATCH = 4  # nodes asked at once: each query gathers the whole job's state over RAS's own network
RAS_BATCHES = 3  # when none of the first RAS_BATCH * RAS_BATCHES nodes answers, RAS is not running


def ask_hung(nodes: Sequence, command: str, out: SettingRun, fanout: int, wait: int = RAS_WAIT) -> None:
    """Run ``command`` on the nodes of a hung setting, its ranks still alive, until one answers.

    Every node's RAS answers for the whole job, so the nodes are asked a few
    at a time, in host order, and the asking stops at the first batch with
    an answer (or after :data:`RAS_BATCHES` batches without one). Each
    answer is kept in ``out.ras``; the first report, in host order, is added
    to ``out.logs`` as ``<host>/ncclras.txt``, where the setting's log
    reading finds it.
    """
    def answered(text: str) -> bool:
        return bool(text.strip()) and not text.lstrip().startswith(RAS_NO_ANSWER)

    order = list(nodes)
    for i in range(0, min(len(order), RAS_BATCH * RAS_BATCHES), RAS_BATCH):
        batch = order[i:i + RAS_BATCH]
        for name, r in run_all(batch, command, wait + 15, min(fanout, RAS_BATCH)).items():
            out.ras[name] = (r.stdout or "") if r.error is None else f"{RAS_NO_ANSWER} {r.error.message}\n"
        first = next((n for n in batch if answered(out.ras.get(n.name, ""))), None)
        if first is not None:
            out.logs[f"{first.name}/ncclras.txt"] = out.ras[first.name]
            return


_AFTER_MARK = "@@nccldiag-after@@"


def reap_all(nodes: Sequence, run_id: str, fanout: int, out: Optional[SettingRun] = None,
             after: Optional[str] = None) -> None:
    """Kill every process of run ``run_id`` on every node, then look for survivors (one round trip each).

    ``after``: sh run in the same round trip once the survivors are listed;
    its output is kept per node in ``out.after``.
    """
    kill = launch.kill_command(run_id)
    check = launch.survivors_command(run_id)
    tail = f"; echo {_AFTER_MARK}; {after}" if after else ""
    for name, r in run_all(nodes, kill + "; " + check + tail, 15, fanout).items():
        if out is None:
            continue
        if r.error:
            out.kill_errors[name] = r.error.message
            continue
        text, rest = r.stdout or "", ""
        if after:
            text, _, rest = text.partition(_AFTER_MARK + "\n")
            out.after[name] = rest
        if text.strip():
            out.survivors[name] = text.strip().splitlines()


MAX_LOG_FILES = 256  # NCCL log files kept per node and setting (one per process that ran NCCL)
FOREIGN_LINES = "NCCL log lines naming another host"


def fetch_logs(nodes: Sequence, pattern: str, timeout: float = 30, fanout: int = 64,
               hostnames: Optional[Dict[str, str]] = None,
               rejected: Optional[Dict[str, Dict[str, int]]] = None) -> Dict[str, str]:
    """Every file matching ``pattern`` (a shell glob) on the nodes, by name (``<node>/<file name>``).

    Each file is read with its node known: with ``hostnames`` (node -> its
    own host name), an NCCL line that names another host is dropped and
    counted in ``rejected[node]``, so a node's logs speak for that node
    alone. The files' delimiters carry a mark chosen for this fetch, and a
    node gives at most :data:`MAX_LOG_FILES` files.
    """
    import secrets

    logs: Dict[str, str] = {}
    mark = secrets.token_hex(8)
    cmd = (f'for f in {pattern}; do [ -f "$f" ] || continue; printf "@@file:{mark} %s@@\\n" "$f"; cat "$f"; done; '
           "true")
    head = re.compile(r"^@@file:" + mark + r" (.+)@@$")
    for name, r in run_all(nodes, cmd, timeout, fanout).items():
        if r.error:
            continue
        mine: Dict[str, List[str]] = {}
        current = None
        for line in r.stdout.splitlines(keepends=True):
            m = head.match(line.rstrip("\n"))
            if m:
                current = f"{name}/{os.path.basename(m.group(1))}"
                if current not in mine and len(mine) >= MAX_LOG_FILES:
                    current = None
                    continue
                mine.setdefault(current, [])
            elif current is not None:
                mine[current].append(line)
        dropped = 0
        own = (hostnames or {}).get(name)
        for k, v in mine.items():
            text = "".join(v)
            if own:
                text, n = own_log_lines(text, own)
                dropped += n
            logs[k] = text
        if dropped and rejected is not None:
            per = rejected.setdefault(name, {})
            per[FOREIGN_LINES] = per.get(FOREIGN_LINES, 0) + dropped
    return dict(sorted(logs.items()))


def own_log_lines(text: str, hostname: str) -> "tuple[str, int]":
    """``text`` without the NCCL lines that name a host other than ``hostname``, and how many there were (pure).

    NCCL writes its host name cut at the first dot (``node01:1234:1240 [0] NCCL
    INFO ...``); a line holding any prefix with another name goes, whatever
    else it holds. So does a failure line of nccl-tests that names another
    host (``node01: Test NCCL failure common.cu:1279 ...``): the parser takes
    its host from the line, so it would blame that node for this one's log.
    """
    from nccldiag.nccl.grammar import _TESTS_CUDA, _TESTS_FAIL, PREFIX

    short = hostname.split(".")[0]
    kept: List[str] = []
    dropped = 0

    def other(m) -> bool:
        return m is not None and bool(m.group("host")) and m.group("host").split(".")[0] != short

    for line in text.splitlines(keepends=True):
        if "NCCL " in line and any(m.group("host").split(".")[0] != short for m in PREFIX.finditer(line)):
            dropped += 1
            continue
        if "failure" in line and (other(_TESTS_FAIL.search(line)) or other(_TESTS_CUDA.search(line))):
            dropped += 1
            continue
        kept.append(line)
    return "".join(kept), dropped


def cleanup(nodes: Sequence, rundir: str, timeout: float = 15, fanout: int = 64) -> Dict[str, str]:
    """Remove the run directory on every node; returns hosts where it failed."""
    failed: Dict[str, str] = {}
    if not os.path.basename(rundir).startswith("nccldiag-"):
        return {"*": f"refusing to remove {rundir}"}

    # only the directory this run made: one another user put there first is left to the admin
    cmd = f"if {_owned_test(rundir)}; then rm -rf -- {shlex.quote(rundir)}; fi"
    for name, r in run_all(nodes, cmd, timeout, fanout).items():
        if r.error or r.rc != 0:
            failed[name] = r.error.message if r.error else r.stderr.strip()[:200]
    return failed


def _owned_test(rundir: str) -> str:
    q = shlex.quote(rundir)
    return f"[ -d {q} ] && [ ! -h {q} ] && [ -O {q} ]"


def safe_name(name: str) -> str:
    return _SAFE.sub("_", name)


def worker_files() -> Dict[str, str]:
    """The files a node needs to run the worker: the ``nccldiag.node`` package, no more."""
    import nccldiag

    root = os.path.dirname(os.path.abspath(nccldiag.__file__))
    files = {"nccldiag/__init__.py": os.path.join(root, "__init__.py")}
    node = os.path.join(root, "node")
    for dirpath, _dirs, names in os.walk(node):
        for n in names:
            if n.endswith(".py"):
                full = os.path.join(dirpath, n)
                files[os.path.relpath(full, os.path.dirname(root))] = full
    return files
