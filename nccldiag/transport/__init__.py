"""Transports: how commands reach a node (SSH with paramiko, or this machine), and the one orchestrator (task)."""
from nccldiag.transport.base import ExecResult, TransportError

__all__ = ["ExecResult", "TransportError"]
