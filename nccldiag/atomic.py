"""Files written so that no reader sees half of one, and read so that nothing planted is followed.

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


class NotRegular(ValueError):
    """What is at the path is not a regular file (a link, a FIFO, a device, a directory)."""


class TooLarge(ValueError):
    """The file holds more than the caller's limit."""


def read_regular(path: str, limit: int) -> str:
    """The text of ``path``, read only if it is a regular file, never through a link, at most ``limit`` bytes.

    Raises ``FileNotFoundError`` (and other ``OSError``) as ``open`` does,
    :class:`NotRegular` for anything but a regular file (a FIFO is not waited
    on), and :class:`TooLarge` past ``limit``. Bytes that are not UTF-8 are
    replaced.
    """
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(f"{path}: larger than {limit >> 20} MiB")
    return data.decode("utf-8", errors="replace")
