"""Errors that reach the user as a one-line message (never a traceback)."""
from __future__ import annotations


class NccldiagError(Exception):
    """Base of the errors the CLI turns into a message and an exit code."""

    exit_code = 2


class UsageError(NccldiagError):
    """Bad input: a hostfile, an option, a bundle. Exit code 2."""


class InventoryError(UsageError):
    """A hostfile or node-set expression that cannot be read, with its location."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.detail = message
