"""nccldiag: validate GPU nodes before they go into service."""

__version__ = "0.1.0"
