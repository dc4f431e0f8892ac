"""JSON reports: the envelope every report shares, and writing it safely."""
from __future__ import annotations

import os
import stat
import time
from typing import Any, Dict, Iterable, Optional, Union

from nccldiag import __version__
from nccldiag.atomic import dumps, plain, write_text


def envelope(schema: str, started: Optional[float] = None, elapsed: Optional[float] = None) -> Dict[str, Any]:
    """The fields that open every report: schema, version, when, how long."""
    out: Dict[str, Any] = {
        "schema": schema,
        "nccldiag_version": __version__,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started if started is not None else time.time())),
    }
    if elapsed is not None:
        out["elapsed_s"] = round(elapsed, 3)
    return out


def render(doc: Dict) -> str:
    """The JSON text of a report document (``--json -``)."""
    return dumps(doc)


def write_file(text: Union[str, Iterable[str]], path: str) -> None:
    """Write a report's ``text`` (a string, or its pieces in order) to ``path``.

    A regular file is replaced atomically through a new, unpredictable
    temporary file in the same directory (a reader never sees half a report,
    and nothing planted at a fixed name is followed); anything else that
    already exists (a FIFO, /dev/stdout) is written in place.
    """
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        regular = True
    if not regular:
        with open(path, "w", encoding="utf-8") as f:
            for piece in [text] if isinstance(text, str) else text:
                f.write(piece)
        return
    write_text(path, text, mode=0o644 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
