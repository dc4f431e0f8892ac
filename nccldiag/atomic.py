"""Files written so that no reader sees half of one, and read so that nothing planted is followed.

The text goes to a new temporary file with an unpredictable name in the same
directory (``mkstemp``: created exclusively, never through a link), which is
flushed to disk, then renamed over the target.

Directories nccldiag writes in (run directories, bundles) are its own: made by
:func:`own_dir` so that they cannot have existed before, or, when they did,
accepted only if they are real directories of this user that nobody else may
write in, reached through directories nobody else can change.
"""
from __future__ import annotations

import contextlib
import errno
import gc
import io
import itertools
import json
import os
import re
import stat
import tempfile
from typing import Dict, Iterable, Iterator, Optional, Union

from nccldiag.model.sizes import size_text


class Unsafe(PermissionError):
    """A place another user controls: a link, someone else's directory, or one others may write in."""

    def __init__(self, path: str, why: str):
        super().__init__(errno.EPERM, why, path)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _mode(st: os.stat_result) -> str:
    return oct(stat.S_IMODE(st.st_mode))[2:].zfill(4)


def check_own_dir(path: str) -> None:
    """Raise :class:`Unsafe` unless ``path`` is a directory (not a link to one) of this user that only it may write in."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise Unsafe(path, "is a symbolic link: refused (give the directory itself)")
    if not stat.S_ISDIR(st.st_mode):
        raise Unsafe(path, "exists and is not a directory")
    if st.st_uid != os.geteuid():
        raise Unsafe(path, f"belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()}): refused")
    if st.st_mode & 0o022:
        raise Unsafe(path, f"other users may write in it (mode {_mode(st)}): refused")


def check_output_dir(path: str) -> None:
    """Raise :class:`Unsafe` unless ``path`` can be an output directory of this user: nobody else can replace it
    through a directory above it, and if it exists it is this user's, closed to others and not a link."""
    check_parents(path)
    if os.path.lexists(path):
        check_own_dir(path)


def check_links(path: str, last: bool = False) -> None:
    """Raise :class:`Unsafe` if a symbolic link on the way to ``path`` (``path`` itself too with ``last``), or on
    the way to where such a link points, belongs to another user than root or this one: whoever owns a link can
    point it anywhere."""
    me = os.geteuid()
    todo = [(path, last)]
    budget = 64  # links followed in all (the kernel gives up at 40 in one path)
    while todo:
        where, whole = todo.pop()
        here = os.path.abspath(where) if whole else os.path.dirname(os.path.abspath(where))
        cur = "/"
        for part in [p for p in here.split("/") if p]:
            cur = os.path.join(cur, part)
            try:
                st = os.lstat(cur)
            except (FileNotFoundError, NotADirectoryError):
                break
            if not stat.S_ISLNK(st.st_mode):
                continue
            if st.st_uid not in (0, me):
                raise Unsafe(path, f"{cur} is a link of uid {st.st_uid}, who could point it elsewhere: refused")
            budget -= 1
            if budget < 0:
                raise Unsafe(path, "too many symbolic links on the way: refused")
            try:
                todo.append((os.path.join(os.path.dirname(cur), os.readlink(cur)), True))
            except OSError:
                pass


def check_parents(path: str, others: int = 0o022) -> None:
    """Raise :class:`Unsafe` if another user could replace ``path`` through one of the directories above it.

    Every existing directory above it must belong to root or this user and
    be closed to others' writes (``others``: the group's and the world's
    write bits by default; a sticky directory such as ``/tmp`` is fine:
    nobody can rename what is not theirs in it); no link on the way may
    belong to anyone else.
    """
    me = os.geteuid()
    check_links(path)
    here = os.path.dirname(os.path.abspath(path))
    cur = os.path.realpath(here)
    while True:
        try:
            st = os.stat(cur)
        except FileNotFoundError:
            st = None
        if st is not None:
            if st.st_uid not in (0, me):
                raise Unsafe(path, f"{cur} belongs to uid {st.st_uid}, who could replace what is in it: refused")
            if st.st_mode & others and not st.st_mode & stat.S_ISVTX:
                raise Unsafe(path, f"{cur} is open to other users' writes (mode {_mode(st)}), so they could "
                                   "replace what is in it: refused")
        if cur == "/":
            return
        cur = os.path.dirname(cur)


def own_dir(path: str, mode: int = 0o700) -> str:
    """Make ``path`` (and what is missing above it) so that it cannot have existed before; or accept it as it is
    when it is this user's own closed directory (:func:`check_own_dir`). Raises :class:`Unsafe` otherwise."""
    check_parents(path)
    missing = []
    cur = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(cur):
        missing.append(cur)
        cur = os.path.dirname(cur)
    for d in reversed(missing):
        check_parents(d)  # what is above it now: none made meanwhile by another user
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            pass  # made by someone meanwhile: the check below judges it as it is now
    if missing:  # every directory above exists now, and none is another user's to replace: checked again
        check_parents(path)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        check_own_dir(path)
    return path


def create_new(path: str, flags: int = os.O_WRONLY, mode: int = 0o600) -> int:
    """A file descriptor on a new file at ``path``: never an existing file, never through a link."""
    return os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def write_text(path: str, text: Union[str, Iterable[str]], mode: Optional[int] = None) -> None:
    """Replace ``path`` with ``text`` (a string, or its pieces in order) atomically; ``mode`` None keeps
    mkstemp's owner-only 0600."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            if isinstance(text, str):
                f.write(text)
            else:
                for piece in text:
                    f.write(piece)
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


# Compact values: the C encoder (json's own only runs for text without indentation); what is not JSON is
# written as its str(), as plain() reads it.
_COMPACT = json.JSONEncoder(default=str)
_NESTED = (dict, list, tuple)
OUTLINE_DEPTH = 4  # objects and arrays laid out one member per line above this depth ...
LIST_DEPTH = 3  # ... and, for the members of an array, above this one (a log's records, a node's findings)


def pieces(data: Dict) -> Iterator[str]:
    """The JSON text of a report, exactly as every writer writes it, piece by piece, and a newline.

    The outline is indented by two spaces, one member per line: the report's parts, each node, each of a
    node's findings and areas, each record of a log. Each of those, and an array of plain values (strings,
    numbers), is one line of compact JSON (``, `` and ``: `` between members), which keeps a report greppable
    by node or finding and lets the C encoder write the bulk of it (about ten times the pure-Python indenting
    encoder's speed). A writer that writes the pieces as they come holds none of the text."""
    yield from outline(data, 0, False)
    yield "\n"


def outline(value, depth: int, in_list: bool) -> Iterator[str]:
    """The pieces of ``value`` at ``depth`` (0: the document) in :func:`pieces`'s layout, starting where its
    first character goes (after its key, or after its indentation in an array). A value written compact is
    one piece of its own."""
    kind = type(value)
    if (kind is not dict and kind is not list and kind is not tuple) or not value or depth >= OUTLINE_DEPTH or \
            (in_list and depth >= LIST_DEPTH) or \
            (kind is not dict and not any(type(v) in _NESTED for v in value)):  # an array of plain values
        yield _COMPACT.encode(value)
        return
    inner = "\n" + "  " * (depth + 1)
    first = True
    if kind is dict:
        yield "{"
        for key, member in value.items():
            yield (inner if first else "," + inner) + member_name(key) + ": "
            first = False
            yield from outline(member, depth + 1, False)
        yield "\n" + "  " * depth + "}"
    else:
        yield "["
        for member in value:
            yield inner if first else "," + inner
            first = False
            yield from outline(member, depth + 1, True)
        yield "\n" + "  " * depth + "]"


def streamed(doc: Dict, nodes: Iterable[Dict]) -> Iterator[str]:
    """The JSON text of the report ``doc`` whose ``nodes`` (empty in ``doc``) are ``nodes``, each made as it is
    written: exactly :func:`pieces` of the whole document, holding one node's part at a time."""
    nodes = iter(nodes)
    entry = next(nodes, _NONE)
    if entry is _NONE:  # no node: the document as it is
        yield from pieces(doc)
        return
    yield "{"
    first = True
    for key, member in doc.items():
        yield ("\n  " if first else ",\n  ") + member_name(key) + ": "
        first = False
        if key != "nodes":
            yield from outline(member, 1, False)
            continue
        yield "["
        sep = "\n" + "  " * _NODE_DEPTH
        while entry is not _NONE:  # as the whole document's outline writes a node
            yield sep
            yield from outline(entry, _NODE_DEPTH, True)
            entry = None  # the node written is let go before the next is made
            entry = next(nodes, _NONE)
            sep = ",\n" + "  " * _NODE_DEPTH
        yield "\n  ]"
    yield "\n}\n"


_NONE = object()
_NODE_DEPTH = 2  # the document, its "nodes" array, each node


def member_name(key) -> str:
    """A member's name as json writes it (a number, true, false or null as its text in quotes)."""
    if type(key) is str:
        return json.encoder.encode_basestring_ascii(key)
    if key is None or isinstance(key, (bool, int, float)):
        return '"' + _COMPACT.encode(key).strip('"') + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def dumps(data: Dict) -> str:
    """The JSON text of a report, exactly as every writer writes it (report files, a run's ``report.json``):
    :func:`pieces`, gathered as they come (about the text's size in memory)."""
    out = io.StringIO()
    for piece in pieces(data):
        out.write(piece)
    return out.getvalue()


def plain(data: Dict) -> Dict:
    """``data`` as a JSON reader gets it back (what is not JSON made a string, as :func:`dumps` writes it): the
    same document as reading :func:`dumps`'s text, built without it. Strings, numbers, booleans and None (of
    those very types) are kept as they are, lists and tuples made lists and dicts with string keys copied, in
    one walk; any other value (a subclass, an object, a dict with a key that is no string) goes through the
    compact encoder and back, as the whole document once did (the 5 MB log report of a 200 MiB job stdout: 0.03 s
    against 0.14 s). The cyclic collector is paused meanwhile: the walk makes new containers only, none of them
    in a cycle, and the collector's passes during it cost twice the walk itself."""
    with collector_paused():
        return _plain(data)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for a walk that makes new containers only, none in a cycle (and left
    as it was where it was paused already)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


_AS_IS = frozenset((str, int, float, bool, type(None)))  # what a JSON reader gets back unchanged


def _plain(value):
    t = type(value)
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:  # a number, true, false or null as a key: its text, as json writes it
                return json.loads(json.dumps(value, default=str))
            out[k] = v if type(v) in _AS_IS else _plain(v)
        return out
    if t is list or t is tuple:
        return [v if type(v) in _AS_IS else _plain(v) for v in value]
    if t in _AS_IS:
        return value
    return json.loads(json.dumps(value, default=str))


class NotRegular(ValueError):
    """What is at the path is not a regular file (a link, a FIFO, a device, a directory)."""


class TooLarge(ValueError):
    """The file holds more than the caller's limit."""


OWN = "own"  # follow= : links followed only when they are root's or this user's, and so is every link they lead to


def read_regular_bytes(path: str, limit: int, follow: Union[bool, str] = False, owned: bool = False) -> bytes:
    """The bytes of ``path``, read only if it is a regular file, at most ``limit`` bytes.

    The one way nccldiag reads a file it is given. Never through a link
    unless ``follow``: True follows any (a user's own ``~/.ssh`` files may
    be links to a dotfiles checkout, as OpenSSH reads them), :data:`OWN`
    only links of root's or this user's, on the way and where they lead
    (:func:`check_links`: another user's link is never followed into a
    place of theirs). With ``owned`` (a file that tells nccldiag how to
    judge: a site spec, a causes file), :data:`OWN`'s links, and the file
    must be root's or this user's, closed to the world's writes, and in
    directories no other user can replace it through (:func:`check_parents`;
    an admin group's shared directory is fine); else :class:`Unsafe`.
    Opened without waiting (a FIFO is never waited on, a device never read):
    raises ``FileNotFoundError`` (and other ``OSError``) as ``open`` does,
    :class:`NotRegular` for anything but a regular file, and
    :class:`TooLarge` past ``limit``.
    """
    with open_regular(path, limit, follow, owned) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"{path}: larger than {size_text(limit)}")
    return data


def open_regular(path: str, limit: int, follow: Union[bool, str] = False, owned: bool = False) -> io.BufferedReader:
    """A binary file object on ``path``, opened and checked as :func:`read_regular_bytes` reads it (its size at
    most ``limit`` when opened), for a reader that takes it piece by piece."""
    if owned:
        follow = OWN
    if follow == OWN:
        check_links(path, last=True)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise NotRegular(f"{path}: not a regular file (a symbolic link)") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(
                st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode) else "a socket"
            raise NotRegular(f"{path}: not a regular file ({kind})")
        if owned:
            _check_owned(path, st)
        if st.st_size > limit:
            raise TooLarge(f"{path}: larger than {size_text(limit)} ({st.st_size} bytes)")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _check_owned(path: str, st: os.stat_result) -> None:
    """Raise :class:`Unsafe` if another user than root could have written what the open file ``st`` of ``path``
    holds: theirs, open to the world's writes, or in a directory they could replace it in."""
    if st.st_uid not in (0, os.geteuid()):
        raise Unsafe(path, f"belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()}) or root, so "
                           "another user decides what it says: refused (use a copy of your own)")
    if st.st_mode & 0o002:
        raise Unsafe(path, f"any user may write in it (mode {_mode(st)}): refused")
    check_parents(os.path.realpath(path), others=0o002)


def read_regular(path: str, limit: int, follow: Union[bool, str] = False, owned: bool = False) -> str:
    """The text of :func:`read_regular_bytes`; bytes that are not UTF-8 are replaced."""
    return read_regular_bytes(path, limit, follow, owned).decode("utf-8", errors="replace")


# Every JSON document nccldiag reads back (a run's run.json, report.json and JSON lines, a bundle's _bundle.json
# and _node.json) is at most this deep; none it writes is deeper than about 10. Python's parser recurses once per
# level (100,000 levels end in a RecursionError) and so do the readers after it, so deeper text is refused
# before it is parsed.
MAX_JSON_DEPTH = 64
# each string matched whole (one left open runs to the end of the text, which the parser refuses anyway), and
# each run of what is neither a string nor a bracket: what is left are the brackets, in one linear pass
_JSON_SKIP = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[^\[\]{}"]+', re.S)
_JSON_LEVEL = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_loads(text: Union[str, bytes], depth: int = MAX_JSON_DEPTH) -> object:
    """``json.loads(text)`` of a text nested at most ``depth`` deep; deeper is a ``ValueError`` saying so, as a
    text that is no JSON is."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    brackets = _JSON_SKIP.sub("", text)
    if brackets and max(itertools.accumulate(map(_JSON_LEVEL.__getitem__, brackets))) > depth:
        raise ValueError(f"arrays and objects nested more than {depth} deep")
    return json.loads(text)
