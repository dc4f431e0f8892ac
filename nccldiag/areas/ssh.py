"""SSH: could the node be reached, and can it reach the others.

A transport area (``KIND = "transport"``): it collects no source of its own.
Its findings come from how the collection went (the transport's error kind
and its fix, the time taken, a truncated output) and from the node-to-node
test that ``areas/mesh.py`` runs inside the same round trip (and the same login).
"""
from __future__ import annotations

from typing import List

from nccldiag.areas import mesh
from nccldiag.model.findings import Finding, error, ok, warn
from nccldiag.model.raw import RawNode
from nccldiag.transport.base import COMMAND_TIMEOUT, FIXES

NAME = "ssh"
TITLE = "SSH"
KIND = "transport"
SOURCES = ()


def judge_transport(raw: RawNode) -> List[Finding]:
    """Findings about reaching ``raw.host`` (pure: from the raw node and its metadata)."""
    found = [_collection(raw)]
    targets = raw.extra.get("mesh_targets")
    if targets and not raw.error:
        found.extend(mesh.judge(raw.host, targets, mesh.parse(raw.host, raw.sections.get("ssh_mesh", "")),
                                finished=not raw.extra.get("mesh_cut")))
    return found


def _tries(raw: RawNode) -> List[str]:
    """The timed-out tries of a node tried twice (``collect_hosts``), as evidence: each says which bound
    stopped it (login slow, script stalled, no answer)."""
    tries = [str(t) for t in (raw.extra.get("tries") or []) if t]
    return [f"{'first' if i == 0 else 'second'} try: {t}" for i, t in enumerate(tries)]


def _collection(raw: RawNode) -> Finding:
    tries = _tries(raw)
    if raw.error:
        kind = raw.error.get("kind", "unknown")
        message = raw.error.get("message", kind)
        if len(tries) > 1:
            message += f" (tried twice; {tries[0]})"
        return error(NAME, f"ssh.{kind}", message, actual=kind, evidence=tries,
                     fix=raw.error.get("fix") or FIXES.get(kind, ""))
    transport = raw.extra.get("transport")
    how = {"local": "local (no SSH)", "srun": "srun (no SSH)"}.get(transport, "SSH")
    notes = list(raw.extra.get("notes") or [])
    connect = raw.extra.get("connect_s")
    login = raw.extra.get("login_s")
    took = [f"connect {connect:.2f} s"] if isinstance(connect, (int, float)) else []
    took += [f"login {login:.2f} s"] if isinstance(login, (int, float)) else []
    msg = f"{how}: collected in {raw.elapsed:.2f} s" + (f" ({', '.join(took)})" if took else "")
    if raw.extra.get("timeout"):
        # cut off at its deadline: what came back is judged, but the node is not fully checked
        cut = f"{msg}; cut off: {raw.extra['timeout']}" + (f" (tried twice; {tries[0]})" if len(tries) > 1 else "")
        return error(NAME, f"ssh.{COMMAND_TIMEOUT}", cut, evidence=tries + notes,
                     actual=COMMAND_TIMEOUT, fix=FIXES.get(COMMAND_TIMEOUT, ""))
    if tries:
        # stopped at a bound once, then collected whole on a new connection: checked, and the first try said
        msg += f"; on the second try ({tries[0]})"
        notes = tries + notes
    if raw.truncated:
        return warn(NAME, "ssh.collect", msg + "; output ended early (truncated)", evidence=notes)
    return ok(NAME, "ssh.collect", msg, evidence=notes)
