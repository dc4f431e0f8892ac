"""Regular expressions compiled once per machine rather than once per run.

nccldiag's modules hold about 800 regular expressions. Python's ``re`` compiles
each in Python code (it parses the pattern, then writes the engine's program),
which costs every run about 0.13 s of CPU: a third of reading a short log.
:func:`compile` returns what ``re.compile`` returns, and keeps each
expression's program in the user's cache directory
(:func:`nccldiag.hscache.directory`, its folder ``regex``; nothing is kept
where ``NCCLDIAG_CACHE_DIR=off``), in a file named by the Python whose engine
ran it. A later run hands the kept program to the engine (``_sre.compile``, the
call ``re`` ends with, which checks the program it is given) instead of
compiling the pattern again: about 0.01 s for all of them.

Whatever does not fit (an engine without that call, a file of another shape, a
program the engine refuses) is compiled by ``re`` as before. A program is made
as ``re`` makes it (``re._compiler.compile``); the first one each process makes
is compared with what ``re.compile`` gives (its pattern, flags and groups), and
none is kept where they differ. Expressions made from what a run reads (a
host name, an address) are compiled with ``re.compile`` where they are made:
this module is for fixed patterns (the package's, and a site spec's rows).
"""
from __future__ import annotations

import atexit
import hashlib
import marshal
import os
import re
import sys
from typing import Any, Dict, Optional, Set, Tuple, Union

try:
    import _sre

    if sys.version_info >= (3, 11):
        from re import _compiler, _parser
    else:  # pragma: no cover - exercised on Python 3.9/3.10 only
        import sre_compile as _compiler
        import sre_parse as _parser
    _ENGINE: Optional[bytes] = b"%d %d %s" % (_sre.MAGIC, _sre.CODESIZE, sys.version.encode())
except (ImportError, AttributeError):  # pragma: no cover - another Python's engine
    _ENGINE = None

from nccldiag import hscache

VERSION = b"nccldiag-rx-1"  # changes when what a file holds changes
MAX_KEPT = 20000  # more patterns than the package holds: the file is written again with this process's only

Pattern = Union[str, bytes]
Key = Tuple[Pattern, int]
Entry = Tuple[int, list, int, dict, tuple]  # the engine's arguments after the pattern: flags, program, groups...

_kept: Optional[Dict[Key, Entry]] = None  # read from the file on first use
_new: Dict[Key, Entry] = {}  # compiled in this process, to be written at exit
_used: Set[Key] = set()
_path: Optional[str] = None
_checked = False  # whether a program made here gave the expression re.compile gives, in this process


def compile(pattern: Pattern, flags: Union[int, re.RegexFlag] = 0) -> "re.Pattern":  # noqa: A001 - re's name
    """``re.compile(pattern, flags)``, from the program kept for it where there is one."""
    global _checked
    flags = int(flags)
    kept = _table()
    if kept is None:
        return re.compile(pattern, flags)
    key = (pattern, flags)
    entry = kept.get(key)
    if entry is not None:
        made = _made(pattern, entry)
        if made is not None:
            _used.add(key)
            return made
    entry = _entry(pattern, flags)
    made = _made(pattern, entry) if entry is not None else None
    if made is None or not _checked:  # the first pattern this process compiles is compared with re's own
        own = re.compile(pattern, flags)
        if made is None or not _same(made, own):
            return own
        _checked = True
    if not _new:
        atexit.register(_save)
    _new[key] = entry  # type: ignore[assignment]
    _used.add(key)
    return made


def _made(pattern: Pattern, entry: Entry) -> Optional["re.Pattern"]:
    """The expression the engine makes of ``pattern`` and its program, or None where it refuses them."""
    try:
        return _sre.compile(pattern, *entry)
    except Exception:  # a program of another engine, a damaged entry
        return None


def _entry(pattern: Pattern, flags: int) -> Optional[Entry]:
    """The engine's arguments for ``pattern`` as ``re`` computes them (``re._compiler.compile``), or None."""
    try:
        p = _parser.parse(pattern, flags)
        code = [int(c) for c in _compiler._code(p, flags)]
        groupindex = dict(p.state.groupdict)
        indexgroup = [None] * p.state.groups
        for name, i in groupindex.items():
            indexgroup[i] = name
        return int(flags | p.state.flags), code, p.state.groups - 1, groupindex, tuple(indexgroup)
    except Exception:
        return None


def _same(a: "re.Pattern", b: "re.Pattern") -> bool:
    return (a.pattern == b.pattern and a.flags == b.flags and a.groups == b.groups
            and dict(a.groupindex) == dict(b.groupindex))


def _table() -> Optional[Dict[Key, Entry]]:
    """The programs kept, read once per process; None where none are kept (no engine call, no cache directory)."""
    global _kept, _path
    if _kept is not None:
        return _kept
    if _ENGINE is None:
        return None
    where = hscache.directory("regex")
    if where is None:
        return None
    _path = os.path.join(where, hashlib.sha256(VERSION + b"\0" + _ENGINE).hexdigest() + ".marshal")
    _kept = {}
    data = hscache.read_kept(_path)
    if data is not None:
        try:
            got: Any = marshal.loads(data)
        except (EOFError, ValueError, TypeError):  # truncated or damaged
            got = None
        if type(got) is dict:
            _kept = got
    return _kept


def _save() -> None:
    """The programs compiled in this process added to the file (written whole, then renamed over it); where the
    file would hold more than :data:`MAX_KEPT`, this process's only."""
    if not _new or _path is None:
        return
    both = dict(_kept or {})
    both.update(_new)
    if len(both) > MAX_KEPT:
        both = {k: both[k] for k in _used if k in both}
    try:
        data = marshal.dumps(both)
    except ValueError:
        return
    hscache.keep(_path, data)
    _new.clear()
