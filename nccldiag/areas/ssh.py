"""SSH: could the node be reached, and can it reach the others.

A transport area (``KIND = "transport"``): it collects no source of its own.
Its findings come from how the collection went (the transport's error kind
and its fix, the time taken, a truncated output) and from the node-to-node
test that ``check/mesh.py`` runs inside the same round trip.
"""
from __future__ import annotations

from typing import List

from nccldiag.check import mesh
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
        found.extend(mesh.judge(raw.host, targets, mesh.parse(raw.host, raw.sections.get("ssh_mesh", ""))))
    return found


def _collection(raw: RawNode) -> Finding:
    if raw.error:
        kind = raw.error.get("kind", "unknown")
        return error(NAME, f"ssh.{kind}", raw.error.get("message", kind), actual=kind,
                     fix=raw.error.get("fix") or FIXES.get(kind, ""))
    transport = raw.extra.get("transport")
    how = {"local": "local (no SSH)", "srun": "srun (no SSH)"}.get(transport, "SSH")
    notes = list(raw.extra.get("notes") or [])
    connect = raw.extra.get("connect_s")
    msg = f"{how}: collected in {raw.elapsed:.2f} s" + (f" (connect {connect:.2f} s)" if connect is not None else "")
    if raw.extra.get("timeout"):
        # cut off at its deadline: what came back is judged, but the node is not fully checked
        return error(NAME, f"ssh.{COMMAND_TIMEOUT}", f"{msg}; cut off: {raw.extra['timeout']}", evidence=notes,
                     actual=COMMAND_TIMEOUT, fix=FIXES.get(COMMAND_TIMEOUT, ""))
    if raw.truncated:
        return warn(NAME, "ssh.collect", msg + "; output ended early (truncated)", evidence=notes)
    return ok(NAME, "ssh.collect", msg, evidence=notes)
