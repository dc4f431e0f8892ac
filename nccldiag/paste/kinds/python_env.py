"""The python area's own probe of the node's interpreter (``python_env``: the JSON lines ``nccldiag check``'s
snippet prints, ``{"stage": "start", "python": ..., "executable": ...}`` and the ``"stage": "done"`` line with
torch, CUDA, NCCL, the backends and whether nccldiag and mpi4py import), as a bundle's ``python_env.txt`` holds it,
read by the python area. Its lines quote the import errors they met (``"mpi4py_error": "ImportError: No module
named mpi4py"``): what they mean for the probe is the area's to say, not a program's exception."""
from __future__ import annotations

from typing import Dict, List

from nccldiag import rx
from nccldiag.paste.kinds.base import Context, one

NAME = "python_env"
WORDS = ('"stage": ',)
SOURCES = ("python_env",)
GAPS = 0
UP = False

# a line of the snippet: one JSON object whose stage is its start or its end, with the interpreter's path (the
# snippet runs under python2 too, whose dicts keep no order: the keys are looked for anywhere in the line)
_LINE = rx.compile(r'[ \t]{0,40}\{"[^\n]{0,20000}\}[ \t]{0,40}$')
_STAGE = rx.compile(r'"stage": "(?:start|done)"')
_MISSING = rx.compile(r"[ \t]{0,40}python-missing: \S{1,400}[ \t]{0,40}$")


def anchor(text: str) -> bool:
    return bool(_LINE.match(text)) and bool(_STAGE.search(text)) and '"executable": ' in text


def member(text: str) -> bool:
    return anchor(text) or bool(_MISSING.match(text))


def sections(lines: List[str], context: Context) -> Dict[str, str]:
    return one("python_env", lines)
