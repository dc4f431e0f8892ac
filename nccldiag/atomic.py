"""Writing a file so that no reader sees half of it and nothing planted beside it is followed.

The text goes to a new temporary file with an unpredictable name in the same
directory (``mkstemp``: created exclusively, never through a link), which is
flushed to disk, then renamed over the target.
"""
from __future__ import annotations

import os
import tempfile
from typing import Optional


def write_text(path: str, text: str, mode: Optional[int] = None) -> None:
    """Replace ``path`` with ``text`` atomically; ``mode`` None keeps mkstemp's owner-only 0600."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
