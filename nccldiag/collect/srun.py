"""Collection through Slurm: the script runs on every node as ONE ``srun`` step, no SSH.

``srun --label`` prefixes each line with its task number (one task per
node); each task first prints the node it runs on and last a done mark, both
carrying a mark of the step's own (the step's command line and name are
public on the nodes; the sections' mark is only in the script, on standard
input). The lines are split by task as they stream in, so
a node is complete (and handed to ``on_node``) as soon as its done mark
arrives, whatever the others do. Slurm's own tree (slurmctld, slurmd,
slurmstepd) does the fan-out; the admin host keeps one process and one
stream however many nodes there are.

Bounds: a node whose task has been silent for ``command_timeout`` seconds,
while others are still working, is cut off when every node still running is
that silent; the whole step stops at ``WHOLE_RUN`` times ``command_timeout``
in any case. A node cut off keeps the sections it sent, flagged truncated.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

from nccldiag import rx
from nccldiag.model.raw import RawNode, released
from nccldiag.slurm import commands
from nccldiag.collect.script import source_names
from nccldiag.collect.sections import split_sections
from nccldiag.transport.base import COMMAND_TIMEOUT, NO_OUTPUT, TransportError
from nccldiag.transport.stream import run_streaming

SRUN = "srun"  # failure kind: the step could not run on the node
UNAVAILABLE = "slurm-unavailable"  # the node's Slurm state keeps steps off it
NOT_A_NODE = "slurm-unknown"  # the host is no Slurm node

FIXES = {
    SRUN: "Look at slurmd's log on the node and at 'scontrol show node NODE'; srun's message is above.",
    UNAVAILABLE: "Slurm runs no step on a node in this state: resume it (scontrol update nodename=NODE state=resume) "
                 "once it is fixed, or check it over SSH (--transport ssh).",
    NO_OUTPUT: "The step ran on the node but its shell printed nothing: run 'srun -w NODE -N1 sh -c \"echo ok\"' and "
               "look at the step's stderr above and at slurmd's log on the node (a prolog, a TaskProlog or a container "
               "plugin that replaced the task's command).",
    NOT_A_NODE: "Give hosts as Slurm knows them (sinfo -N), or make NodeAddr/NodeHostName match the hostfile.",
}

_LABEL = rx.compile(r"^\s*(\d+): ?(.*)$")


@dataclass
class _Task:
    node: str = ""
    lines: List[str] = field(default_factory=list)
    last: float = 0.0
    done: bool = False
    claimed: str = ""  # the node the task said it ran on, when that is not the node srun gave it


def wrapper(mark: str) -> str:
    """What each task runs around the collection script: its node first, a done mark last."""
    return (f"printf '@@nccldiag:%s:node %s@@\\n' {mark} \"${{SLURMD_NODENAME:-$(hostname)}}\"; "
            "sh -s; "
            f"printf '\\n@@nccldiag:%s:done@@\\n' {mark}")


def task_nodes(nodes: Sequence[str], order: Dict[str, int]) -> Dict[int, str]:
    """Which Slurm node runs each task of a one-task-per-node step on ``nodes`` (pure).

    srun lays the tasks out in Slurm's node order (``scontrol show node``),
    whatever order ``--nodelist`` gives; a node Slurm does not list sorts
    after the others, by name.
    """
    return dict(enumerate(sorted(nodes, key=lambda n: (order.get(n, len(order)), n))))


def demux(lines: Sequence[str], mark: str, expected: Optional[Dict[int, str]] = None) -> Dict[int, _Task]:
    """Labelled srun output split by task (pure; the live path does the same line by line)."""
    tasks: Dict[int, _Task] = {}
    for line in lines:
        _feed(tasks, line, mark, 0.0, expected)
    return tasks


def _feed(tasks: Dict[int, _Task], line: str, mark: str, now: float,
          expected: Optional[Dict[int, str]] = None) -> Optional[int]:
    """One labelled line. With ``expected`` (:func:`task_nodes`) a task's node is the one srun gave it:
    the node line the task prints is its claim, kept in ``claimed`` when it names another node."""
    m = _LABEL.match(line)
    if m is None:
        return None
    k = int(m.group(1))
    if expected is not None and k not in expected:
        return None
    t = tasks.setdefault(k, _Task(node=expected[k] if expected is not None else ""))
    text = m.group(2)
    t.last = now
    if text.startswith(f"@@nccldiag:{mark}:node ") and text.endswith("@@") and (not t.node or expected is not None):
        said = text[len(f"@@nccldiag:{mark}:node "):-2]
        if expected is None:
            t.node = said
        elif said != t.node and not t.claimed:
            t.claimed = said[:64]
        return None
    if text == f"@@nccldiag:{mark}:done@@":
        t.done = True
        return int(m.group(1))
    t.lines.append(text)
    return None


def cancel_step(name: str, timeout: float = 30) -> None:
    """Cancel every step (and job) of this user named ``name``: squeue finds them, scancel kills them."""
    from nccldiag.slurm import client

    r = client.run(commands.steps_named(), timeout)
    ids = [line.split()[0] for line in (r.stdout or "").splitlines()
           if len(line.split()) == 2 and line.split()[1] == name]
    if ids:
        client.run(commands.cancel_ids(ids), timeout)


def no_output(host: str, slurm_node: str) -> TransportError:
    """A task that ended (its done mark came) before the collection script printed anything: the script did not
    run on the node, which says nothing of the node's health, so it is not checked, never failing."""
    return TransportError(NO_OUTPUT, f"the task on {slurm_node} ended before the collection script printed anything "
                                     "(the step ran, the script did not)", host)


def task_node(host: str, t: _Task, mark: str, script: str, start: float,
              error: Optional[TransportError] = None) -> RawNode:
    """The node of one task's output (its lines are let go: the outputs are in the node's sections now). A
    collection cut off by the command timeout keeps the sections that came, flagged truncated; a task that
    ended before the script printed anything is :func:`no_output`, never judged on what did not come."""
    sections, rcs, truncated = split_sections("\n".join(t.lines), mark, source_names(script))
    t.lines = []
    end = time.monotonic() if error is not None or not t.last else t.last
    node = RawNode(host=host, sections=sections, rcs=rcs, truncated=truncated, elapsed=end - start)
    if error is None and not sections and not truncated:
        error = no_output(host, t.node)
    if error is not None:
        if sections and error.kind == COMMAND_TIMEOUT:
            node.truncated = True
            node.extra["timeout"] = error.message
        else:
            node.error = dict(error.to_dict(), fix=FIXES.get(error.kind) or error.fix)
    node.extra.update({"transport": "srun", "slurm_node": t.node})
    if t.claimed:
        node.extra["claimed_node"] = t.claimed
    return node


def _error_node(host: str, kind: str, message: str, slurm_node: str = "") -> RawNode:
    node = RawNode(host=host, error={"kind": kind, "message": message, "fix": FIXES.get(kind, "")})
    node.extra["transport"] = "srun"
    if slurm_node:
        node.extra["slurm_node"] = slurm_node
    return node


def collect(
    hosts: Sequence[str],
    names: Dict[str, str],
    unavailable: Dict[str, str],
    script: str,
    env: Dict[str, str],
    mark: str,
    command_timeout: float,
    whole_run: float,
    job: Optional[str] = None,
    req: Optional[commands.AllocRequest] = None,
    on_node: Optional[Callable[[RawNode], None]] = None,
    cancel: Optional[threading.Event] = None,
    order: Optional[Dict[str, int]] = None,
    release: bool = False,
) -> List[RawNode]:
    """One RawNode per host, in ``hosts`` order.

    ``names`` maps hosts to Slurm node names; ``unavailable`` maps hosts to
    why Slurm runs nothing there (those, and hosts without a Slurm node, are
    reported unchecked without being tried). ``order``: Slurm's node order
    (name -> place); with it each task's output is its node's by srun's own
    layout (:func:`task_nodes`), whatever node name the task prints. ``release``: each node's outputs are
    let go once ``on_node`` has seen it (the nodes returned are :func:`~nccldiag.model.raw.released` ones).
    """
    results: Dict[str, RawNode] = {}

    def done_node(node: RawNode) -> None:
        results[node.host] = node
        if on_node is not None:
            on_node(node)
        if release:
            results[node.host] = released(node)

    for h in hosts:
        if h not in names:
            done_node(_error_node(h, NOT_A_NODE, f"{h} is not a Slurm node (no NodeName, NodeHostName or NodeAddr "
                                                  "matches it in 'scontrol show node')"))
        elif h in unavailable:
            done_node(_error_node(h, UNAVAILABLE, unavailable[h], names[h]))
    todo = [h for h in hosts if h not in results]
    if not todo:
        return [results[h] for h in hosts]
    by_node = {names[h]: h for h in todo}
    expected = task_nodes([names[h] for h in todo], order) if order is not None else None
    import secrets

    step_mark = secrets.token_hex(8)
    step_name = f"nccldiag-{step_mark}"
    argv = commands.srun_step([names[h] for h in todo], 1, whole_run + 60, job=job, req=req, label=True,
                              input_all=True, name=step_name) + ["sh", "-c", wrapper(step_mark)]
    tasks: Dict[int, _Task] = {}
    lock = threading.Lock()
    stop = threading.Event()
    start = time.monotonic()

    def finish(t: _Task, error: Optional[TransportError] = None) -> None:
        host = by_node.get(t.node)
        if host is None or host in results:
            return
        done_node(task_node(host, t, mark, script, start, error))

    def on_line(line: str) -> None:
        with lock:
            k = _feed(tasks, line, step_mark, time.monotonic(), expected)
            if k is not None:
                finish(tasks[k])

    def watchdog() -> None:
        # every node still running silent for command_timeout: nothing more is coming
        while not stop.wait(0.5):
            now = time.monotonic()
            with lock:
                running = [t for t in tasks.values() if not t.done]
                started = len(tasks)
                if running and started == len(todo) and all(now - t.last > command_timeout for t in running):
                    break
                if started < len(todo) and now - start > first_output and not any(
                        now - t.last <= command_timeout for t in running):
                    break
            if cancel is not None and cancel.is_set():
                break
        idle.set()

    # a task that never spoke: srun may first wait for the allocation (req.wait), then start the step
    first_output = command_timeout * 2 + (req.wait if req is not None and job is None else 0.0)
    idle = threading.Event()
    dog = threading.Thread(target=watchdog, daemon=True)
    dog.start()
    full_env = dict(env)
    try:
        r = run_streaming(argv, whole_run, on_line, cancel=idle, env=full_env, stdin_text=script, host="srun")
    except KeyboardInterrupt:
        stop.set()
        idle.set()
        cancel_step(step_name)  # srun runs in a session of its own: Slurm ends the step on every node
        raise
    stop.set()
    timed_out = r.error is not None
    if timed_out:
        # srun was killed here; its step goes on on the nodes until slurmctld is told
        cancel_step(step_name)
    why = (f"no output for {command_timeout:g} s (srun step cut off)" if idle.is_set() and r.error is not None
           and time.monotonic() - start < whole_run else f"collection took longer than {whole_run:g} s")
    stderr = r.stderr or ""
    with lock:
        for t in tasks.values():
            if t.node not in by_node or by_node[t.node] in results:
                continue
            if timed_out:
                finish(t, TransportError(COMMAND_TIMEOUT, why, by_node[t.node]))
            elif not t.done:
                said = [ln.strip()[:300] for ln in stderr.splitlines() if t.node in ln][-3:]
                finish(t, TransportError(SRUN, f"the task on {t.node} ended before the collection script finished"
                                               + (": " + "; ".join(said) if said else ""), by_node[t.node]))
            else:
                finish(t)
    for h in todo:
        if h in results:
            continue
        node = names[h]
        said = [ln.strip() for ln in stderr.splitlines() if node in ln] or stderr.strip().splitlines()[-3:]
        if timed_out and not said:
            done_node(_error_node(h, COMMAND_TIMEOUT, why, node))
        else:
            msg = "; ".join(s[:300] for s in said) or f"srun exited with status {r.rc} and {node} sent nothing"
            done_node(_error_node(h, SRUN, f"srun step on {node}: {msg}", node))
    return [results[h] for h in hosts]
