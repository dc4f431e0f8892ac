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
program the engine refuses) is compiled by ``re`` as before. A pattern is kept
only where the expression made from its program is the one ``re.compile``
made (its pattern, flags and groups). Expressions made from what a run reads
(a host name, a site's row) are compiled with ``re.compile`` where they are
made: this module is for the package's own, fixed patterns.
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


def compile(pattern: Pattern, flags: Union[int, re.RegexFlag] = 0) -> "re.Pattern":  # noqa: A001 - re's name
    """``re.compile(pattern, flags)``, from the program kept for it where there is one."""
    flags = int(flags)
    kept = _table()
    if kept is None:
        return re.compile(pattern, flags)
    key = (pattern, flags)
    entry = kept.get(key)
    if entry is not None:
        try:
            made = _sre.compile(pattern, *entry)
        except Exception:  # a program of another engine, a damaged entry
            made = None
        if made is not None:
            _used.add(key)
            return made
    made = re.compile(pattern, flags)
    entry = _entry(pattern, flags, made)
    if entry is not None:
        if not _new:
            atexit.register(_save)
        _new[key] = entry
        _used.add(key)
    return made


def _entry(pattern: Pattern, flags: int, made: "re.Pattern") -> Optional[Entry]:
    """The engine's arguments for ``pattern`` as ``re`` computes them (``re._compiler.compile``), or None where the
    expression they make is not ``made``."""
    try:
        p = _parser.parse(pattern, flags)
        code = [int(c) for c in _compiler._code(p, flags)]
        groupindex = dict(p.state.groupdict)
        indexgroup = [None] * p.state.groups
        for name, i in groupindex.items():
            indexgroup[i] = name
        entry = (int(flags | p.state.flags), code, p.state.groups - 1, groupindex, tuple(indexgroup))
        again = _sre.compile(pattern, *entry)
    except Exception:
        return None
    same = (again.pattern == made.pattern and again.flags == made.flags and again.groups == made.groups
            and dict(again.groupindex) == dict(made.groupindex))
    return entry if same else None


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
