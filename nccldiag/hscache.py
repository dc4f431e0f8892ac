"""Hyperscan databases compiled once per machine and kept, so that a run loads them instead of compiling them again.

Compiling the prefilter's words (:mod:`nccldiag.nccl.scan`) takes about 0.1 s of CPU, half of what starting
``nccldiag log`` costs otherwise; loading the same database, serialized, takes 0.1 ms. :func:`database` compiles
expressions as ``hyperscan.Database.compile`` does and keeps the result in a file named by a digest of everything
the database depends on: the expressions, their ids and flags, the mode, Hyperscan's version and the machine's
processor (its architecture and the features Hyperscan compiles for).

The files lie in ``$NCCLDIAG_CACHE_DIR/hyperscan`` (``NCCLDIAG_CACHE_DIR=off``: nothing kept, every run compiles),
else ``$XDG_CACHE_HOME/nccldiag/hyperscan``, else ``~/.cache/nccldiag/hyperscan``. A file is loaded only from a
directory of this user that nobody else may write in, where it is a regular file of this user; one that does not
load (truncated, of another Hyperscan, of a processor lacking a feature it was compiled for) is compiled again and
replaced. :func:`read_kept` and :func:`keep` read and write such a file for others: the package's knowledge
tables, parsed once and kept in ``knowledge`` beside ``hyperscan`` (:mod:`nccldiag.knowledge`). Nothing here fails a run: a directory that cannot be made or written leaves the database compiled, as
without a cache. Writes go to a temporary file of the same directory, renamed over the name, so that a run reading
the file while another writes it sees the whole of either.
"""
from __future__ import annotations

import hashlib
import os
import platform
import stat
from typing import Any, Optional, Sequence

VERSION = b"nccldiag-hscache-1"  # changes when what a file holds changes
MAX_BYTES = 64 * 1024 * 1024  # a larger file is not one of ours


def directory(kind: str = "hyperscan") -> Optional[str]:
    """Where files of ``kind`` are kept (``hyperscan``: databases), or None where ``NCCLDIAG_CACHE_DIR`` is ``off``
    (or no home is known)."""
    root = os.environ.get("NCCLDIAG_CACHE_DIR", "")
    if root.lower() in ("off", "0", "none", "no"):
        return None
    if not root:
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not base:
            home = os.path.expanduser("~")
            if home in ("", "~"):
                return None
            base = os.path.join(home, ".cache")
        root = os.path.join(base, "nccldiag")
    return os.path.join(root, kind)


def _processor() -> bytes:
    """The machine's architecture and, on Linux, the first processor's feature flags (Hyperscan compiles for the
    features of the processor it runs on)."""
    out = platform.machine().encode()
    try:
        with open("/proc/cpuinfo", "rb") as f:
            for _, line in zip(range(64), f):  # the first processor's lines
                if line.startswith((b"flags", b"Features")):
                    return out + b"\0" + line
    except OSError:
        pass
    return out


def key(hyperscan: Any, mode: int, expressions: Sequence[bytes], ids: Sequence[int], flags: Sequence[int]) -> str:
    """The digest naming a database of ``expressions`` (with their ``ids`` and ``flags``) compiled in ``mode``."""
    h = hashlib.sha256(VERSION)
    for part in (str(getattr(hyperscan, "__version__", "")).encode(), _processor(), b"%d" % mode):
        h.update(b"%d:" % len(part) + part)
    for e, i, f in zip(expressions, ids, flags):
        h.update(b"%d:%s %d %d\0" % (len(e), e, i, f))
    return h.hexdigest()


def _own(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def read_kept(path: str) -> Optional[bytes]:
    """The bytes of the file kept at ``path``, or None (missing, not this user's, open to others, too large), from
    a directory of this user that nobody else may write in."""
    try:
        st = os.lstat(os.path.dirname(path))
        if not stat.S_ISDIR(st.st_mode) or not _own(st):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _own(st) or st.st_size > MAX_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def _load(hyperscan: Any, path: str, mode: int) -> Any:
    """The database kept at ``path``, or None (missing, not this user's, open to others, or not loadable)."""
    data = read_kept(path)
    if data is None:
        return None
    try:
        db = hyperscan.loadb(data, mode)
        db.scratch = hyperscan.Scratch(db)  # compile() allocates it; a database loaded has none
        return db
    except Exception:  # truncated, another version's, a processor without a feature it needs
        return None


def keep(path: str, data: bytes) -> None:
    """``data`` written to ``path`` (a temporary file of its directory, made this user's and closed to others,
    renamed over it); any failure leaves things as they were."""
    d = os.path.dirname(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or not _own(st):
            return
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                f.write(data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except Exception:  # a read-only home, a full disk
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _store(hyperscan: Any, db: Any, path: str) -> None:
    """``db`` serialized to ``path`` (:func:`keep`); any failure leaves things as they were."""
    try:
        data = hyperscan.dumpb(db)
    except Exception:  # a database Hyperscan cannot serialize
        return
    keep(path, data)


def database(hyperscan: Any, expressions: Sequence[bytes], ids: Sequence[int], flags: Sequence[int],
             mode: Optional[int] = None) -> Any:
    """A ``hyperscan.Database`` of ``expressions``, as ``Database(mode=mode).compile(...)`` gives it (``mode``:
    ``HS_MODE_BLOCK`` by default): loaded where this machine compiled it before, else compiled and kept. Raises
    what compiling raises (an expression Hyperscan cannot compile)."""
    mode = hyperscan.HS_MODE_BLOCK if mode is None else mode
    where = directory()
    path = None
    if where is not None and hasattr(hyperscan, "loadb") and hasattr(hyperscan, "dumpb"):
        path = os.path.join(where, key(hyperscan, mode, expressions, ids, flags) + ".db")
        db = _load(hyperscan, path, mode)
        if db is not None:
            return db
    db = hyperscan.Database(mode=mode)
    db.compile(expressions=list(expressions), ids=list(ids), elements=len(expressions), flags=list(flags))
    if path is not None:
        _store(hyperscan, db, path)
    return db
