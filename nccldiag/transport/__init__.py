"""Transports: how commands reach a node (SSH with paramiko, or this machine)."""
from nccldiag.transport.base import ExecResult, TransportError  # noqa: F401
