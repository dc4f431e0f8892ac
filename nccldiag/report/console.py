"""Terminal output: a rich console on stdout or stderr, honouring NO_COLOR."""
from __future__ import annotations

import os
import sys
from typing import Optional

from rich.console import Console
from rich.theme import Theme

THEME = Theme(
    {
        "ok": "green",
        "warn": "yellow",
        "fail": "bold red",
        "error": "magenta",
        "skip": "dim",
        "wrong": "bold red",
        "hang": "bold magenta",
        "unsupported": "dim",
        "muted": "dim",
    }
)


def console(stderr: bool = False, color: str = "auto", width: Optional[int] = None) -> Console:
    """A console; ``color`` is auto (TTY and no NO_COLOR), always or never."""
    no_color = color == "never" or (color == "auto" and bool(os.environ.get("NO_COLOR")))
    force = True if color == "always" else None
    stream = sys.stderr if stderr else sys.stdout
    return Console(
        file=stream,
        theme=THEME,
        no_color=no_color,
        force_terminal=force,
        highlight=False,
        width=width or (None if stream.isatty() else 120),
        soft_wrap=False,
    )
