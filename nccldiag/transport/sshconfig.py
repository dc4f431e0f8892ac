"""Resolving a host's SSH settings the way OpenSSH does.

paramiko parses ``ssh_config`` but ignores ``Include``, ``Match exec`` and
``ProxyJump``. When the OpenSSH client is installed, ``ssh -G HOST`` prints
the effective configuration after every ``Host``/``Match``/``Include`` was
evaluated, so that is asked first; paramiko's parser is the fallback.

``ssh -G`` prints ``ProxyCommand`` as written, with its ``%`` tokens
unexpanded; :func:`resolve` expands them the way ``ssh`` would.
"""
from __future__ import annotations

import glob
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from nccldiag.transport.base import CONFIG, TransportError

_DEFAULT_IDENTITIES = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")


@dataclass
class HostConfig:
    alias: str
    hostname: str
    port: int = 22
    user: Optional[str] = None
    identity_files: List[str] = field(default_factory=list)
    identities_only: bool = False
    proxy_jump: Optional[str] = None
    proxy_command: Optional[str] = None
    known_hosts_files: List[str] = field(default_factory=list)
    strict_host_key_checking: str = "ask"  # yes | ask | accept-new | no
    host_key_alias: Optional[str] = None
    connect_timeout: Optional[float] = None


def _expand(path: str) -> str:
    return os.path.expanduser(path)


def parse_ssh_G(text: str, alias: str) -> HostConfig:
    """Parse the output of ``ssh -G``: one ``keyword value`` per line."""
    values: Dict[str, List[str]] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            values.setdefault(key.lower(), []).append(value.strip())

    def first(key: str) -> Optional[str]:
        v = values.get(key)
        return v[0] if v else None

    known: List[str] = []
    for key in ("userknownhostsfile", "globalknownhostsfile"):
        for v in values.get(key, []):
            known.extend(_expand(p) for p in v.split())
    proxy_jump = first("proxyjump")
    proxy_command = first("proxycommand")
    ct = first("connecttimeout")
    return HostConfig(
        alias=alias,
        hostname=first("hostname") or alias,
        port=int(first("port") or 22),
        user=first("user"),
        identity_files=[_expand(p) for p in values.get("identityfile", [])],
        identities_only=(first("identitiesonly") or "no").lower() == "yes",
        proxy_jump=None if not proxy_jump or proxy_jump.lower() == "none" else proxy_jump,
        proxy_command=None if not proxy_command or proxy_command.lower() == "none" else proxy_command,
        known_hosts_files=known,
        strict_host_key_checking=(first("stricthostkeychecking") or "ask").lower(),
        host_key_alias=first("hostkeyalias"),
        connect_timeout=float(ct) if ct and ct.isdigit() and ct != "0" else None,
    )


# The tokens ssh_config(5) allows in ProxyCommand.
PROXY_COMMAND_TOKENS = "%%, %h, %n, %p, %r"


def expand_proxy_command(command: str, cfg: HostConfig) -> str:
    """``command`` with ``%h`` (HostName), ``%p`` (port), ``%r`` (user), ``%n``
    (the name as given) and ``%%`` replaced, as ``ssh`` does for ProxyCommand.

    Any other token is refused with a CONFIG error, as ``ssh`` refuses it.
    """
    values = {"h": cfg.hostname, "p": str(cfg.port), "r": cfg.user or "", "n": cfg.alias, "%": "%"}
    out: List[str] = []
    i = 0
    while i < len(command):
        c = command[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        token = command[i + 1 : i + 2]
        if token not in values:
            shown = f"%{token}" if token else "a trailing %"
            raise TransportError(
                CONFIG, f"ProxyCommand uses {shown}; only {PROXY_COMMAND_TOKENS} are allowed there", cfg.alias
            )
        out.append(values[token])
        i += 2
    return "".join(out)


MAX_CONFIG_FILE = 16 << 20  # bytes of an ssh_config file


def _config_text(path: str, alias: str) -> Optional[str]:
    """The text of the ssh_config file ``path`` (None when there is none): a regular file (links followed, as
    OpenSSH does) of at most 16 MiB; a FIFO, a device or a huge file is a CONFIG error naming it."""
    from nccldiag.atomic import NotRegular, TooLarge, read_regular

    try:
        return read_regular(path, MAX_CONFIG_FILE, follow=True)
    except FileNotFoundError:
        return None
    except (NotRegular, TooLarge) as exc:
        raise TransportError(CONFIG, f"ssh_config file {exc}: refused", alias) from None
    except OSError as exc:
        raise TransportError(CONFIG, f"ssh_config file {path}: cannot read it: {exc.strerror or exc}", alias) from None


def _from_paramiko(alias: str, config_path: Optional[str]) -> HostConfig:
    import paramiko

    path = config_path or os.path.expanduser("~/.ssh/config")
    cfg = paramiko.SSHConfig()
    text = _config_text(path, alias)
    if text is not None:
        try:
            cfg = paramiko.SSHConfig.from_text(text)
        except Exception as exc:  # paramiko raises a variety of parse errors
            raise TransportError(CONFIG, f"cannot parse {path}: {exc}", alias) from None
    d = cfg.lookup(alias)
    known = [_expand(p) for p in str(d.get("userknownhostsfile", "~/.ssh/known_hosts")).split()]
    known += [_expand(p) for p in str(d.get("globalknownhostsfile", "/etc/ssh/ssh_known_hosts")).split()]
    ct = d.get("connecttimeout")
    return HostConfig(
        alias=alias,
        hostname=d.get("hostname", alias),
        port=int(d.get("port", 22)),
        user=d.get("user"),
        identity_files=[_expand(p) for p in d.get("identityfile", [])],
        identities_only=str(d.get("identitiesonly", "no")).lower() == "yes",
        proxy_jump=d.get("proxyjump"),
        proxy_command=d.get("proxycommand"),
        known_hosts_files=known,
        strict_host_key_checking=str(d.get("stricthostkeychecking", "ask")).lower(),
        host_key_alias=d.get("hostkeyalias"),
        connect_timeout=float(ct) if ct and str(ct).isdigit() and str(ct) != "0" else None,
    )


def _ssh_G(ssh: str, alias: str, user: Optional[str], port: Optional[int], config_path: Optional[str],
           timeout: float) -> str:
    """What ``ssh -G`` prints for ``alias``, or a CONFIG error naming it."""
    argv = [ssh, "-G"]
    if config_path:
        argv += ["-F", config_path]
    if user:
        argv += ["-l", user]
    if port:
        argv += ["-p", str(port)]
    argv += ["--", alias]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise TransportError(CONFIG, f"'ssh -G {alias}' did not finish in {timeout:g} s", alias) from None
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["ssh -G failed"])[-1]
        raise TransportError(CONFIG, f"ssh configuration: {msg}", alias)
    return proc.stdout


def _finish(cfg: HostConfig, user: Optional[str], port: Optional[int], from_ssh: bool) -> HostConfig:
    """The command line's user and port over the configuration's, the local user by default, and
    ProxyCommand's tokens expanded (``ssh -G`` prints them as written; paramiko's parser expands them)."""
    if user:
        cfg.user = user
    if port:
        cfg.port = port
    if not cfg.user:
        import getpass

        cfg.user = getpass.getuser()
    if from_ssh and cfg.proxy_command:
        cfg.proxy_command = expand_proxy_command(cfg.proxy_command, cfg)
    return cfg


def resolve(
    alias: str,
    user: Optional[str] = None,
    port: Optional[int] = None,
    config_path: Optional[str] = None,
    timeout: float = 30.0,  # local, but a loaded head node or a slow Match exec must not fail a healthy host
) -> HostConfig:
    """The effective settings for ``alias`` (command-line user/port win)."""
    ssh = shutil.which("ssh")
    if not ssh:
        return _finish(_from_paramiko(alias, config_path), user, port, False)
    # what ssh -G reads first: a FIFO there would hold it to the timeout, for every host
    _config_text(config_path or os.path.expanduser("~/.ssh/config"), alias)
    return _finish(parse_ssh_G(_ssh_G(ssh, alias, user, port, config_path, timeout), alias), user, port, True)


# The keywords of ``ssh -G`` that :func:`parse_ssh_G` reads: the only ones compared between hosts.
READ_KEYS = frozenset((
    "hostname", "port", "user", "identityfile", "identitiesonly", "proxyjump", "proxycommand",
    "userknownhostsfile", "globalknownhostsfile", "stricthostkeychecking", "hostkeyalias", "connecttimeout",
))

_SYSTEM_CONFIG = "/etc/ssh/ssh_config"
_MAX_DEPTH = 16  # Include levels, as OpenSSH's READCONF_MAX_DEPTH


class _PerHost(Exception):
    """The configuration may tell hosts apart in a way :class:`Layout` does not work out: ``ssh -G`` per host."""


def _argv_split(text: str) -> List[str]:
    """The arguments of a configuration line as OpenSSH's ``argv_split`` makes them (quotes, escapes, a ``#``
    starting an argument ends the line)."""
    out: List[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t":
            i += 1
            continue
        if text[i] == "#":
            break
        quote = ""
        arg: List[str] = []
        while i < n:
            c = text[i]
            if c == "\\" and i + 1 < n and (text[i + 1] in "'\"\\" or (not quote and text[i + 1] == " ")):
                i += 1
                arg.append(text[i])
            elif not quote and c in " \t":
                break
            elif not quote and c in "\"'":
                quote = c
            elif quote and c == quote:
                quote = ""
            else:
                arg.append(c)
            i += 1
        if quote:
            raise _PerHost("unbalanced quotes")
        out.append("".join(arg))
    return out


def _split_line(line: str) -> Tuple[str, List[str]]:
    """``(keyword in lower case, its arguments)`` of one line (``Keyword args`` or ``Keyword=args``)."""
    line = line.strip(" \t\r\n\f")
    if not line or line.startswith("#"):
        return "", []
    m = re.match(r"([^\s=]+)\s*(?:=\s*|\s+|$)(.*)", line)
    if not m:
        return "", []
    return m.group(1).lower(), _argv_split(m.group(2))


def _glob_pattern(pattern: str) -> "re.Pattern[str]":
    """OpenSSH's ``match_pattern``: ``*`` and ``?``, every other character literal."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + r"\Z",
                      re.S)


def _host_line(patterns: List[str]) -> Callable[[str], bool]:
    """A ``Host`` line as OpenSSH applies it to the name given (case as given): the block applies when a pattern
    matches and no negated one does. A pattern without ``*`` or ``?`` is compared as it is."""
    compiled = []
    for p in patterns:
        negated = p.startswith("!")
        body = p[1:] if negated else p
        compiled.append((negated, _glob_pattern(body).match if "*" in body or "?" in body else body.__eq__))

    def applies(name: str) -> bool:
        active = False
        for negated, matches in compiled:
            if matches(name):
                if negated:
                    return False
                active = True
        return active

    return applies


def _hostname_list(arg: str) -> Callable[[str], bool]:
    """``Match host``/``originalhost`` patterns: OpenSSH's ``match_hostname``, a comma-separated list, names and
    patterns compared in lower case; -1 (a negated match) and 0 both mean no match."""
    items = [(p.startswith("!"), _glob_pattern((p[1:] if p.startswith("!") else p).lower()))
             for p in arg.split(",")]

    def matches(name: str) -> bool:
        name = name.lower()
        got = False
        for negated, rx in items:
            if rx.match(name):
                if negated:
                    return False
                got = True
        return got

    return matches


class _File:
    """One ssh_config file, parsed: the directives before its first ``Host``/``Match``, then its blocks in
    runs (consecutive ``Host`` blocks whose patterns are plain names are looked up by name)."""

    def __init__(self) -> None:
        self.head: List[tuple] = []  # ("set", keyword, args) | ("include", [_File])
        self.blocks: List[Tuple[tuple, List[tuple]]] = []  # (condition, items)
        self.runs: List[object] = []  # {name: [block index]} for a run of plain Host blocks, or a block index

    def close(self) -> None:
        index: Optional[Dict[str, List[int]]] = None
        for i, (cond, _) in enumerate(self.blocks):
            names = cond[2] if cond[0] == "host" else None
            if names is None:
                index = None
                self.runs.append(i)
                continue
            if index is None:
                index = {}
                self.runs.append(index)
            for name in names:
                index.setdefault(name, []).append(i)


class _State:
    def __init__(self) -> None:
        self.applied: List[tuple] = []
        self.hostname: Optional[str] = None  # the first HostName applied, as written


class Layout:
    """What the ssh_config files ``ssh -G`` reads make of each host name, worked out once for a run.

    The files are read as OpenSSH reads them (``Include`` with its globs and its relative paths, a ``Host``
    or ``Match`` line deciding whether what follows applies, an included file never clobbering the
    including file's state, nothing of a file included from a block that does not apply) and, for each
    host, the directives that reach it are listed in order. Hosts with the same list, the same user and
    port from the hostfile, and names of the same shape (:func:`_shape`) get the same settings but for
    their names: the host's own name (the default HostName, ``%h`` in a value) and the one literal
    ``HostName`` the list may give each host (``Host node01`` / ``HostName 10.0.0.1``, one block per host
    as cluster tools write them), which :class:`HostConfigs` puts into one ``ssh -G`` answer.

    ``Host`` patterns (``*``, ``?``, ``!`` negation, case as given) and ``Match host`` (the HostName applied
    so far, ``%h`` expanded, else the name) and ``originalhost`` (the name), both in lower case, are
    evaluated here. Anything else that could tell hosts apart makes every host its own group
    (:attr:`per_host`, the reason): ``Match`` on anything but ``all``, ``host`` and ``originalhost``
    (``exec``, ``canonical``, ``final``, ``user``, ``tagged``, ...), an ``Include`` with tokens or
    variables, a line that does not parse, a file that cannot be read. A host that canonicalizes its name
    (``CanonicalizeHostname``, ``CanonicalizePermittedCNAMEs``) or whose HostName has other tokens is its
    own group.
    """

    def __init__(self, config_path: Optional[str]):
        self.files: List[_File] = []
        self.per_host: Optional[str] = None  # why
        try:
            if config_path == "none":
                pass
            elif config_path:
                self.files.append(self._read(config_path, os.path.expanduser("~/.ssh"), 0))
            else:
                self.files.append(self._read(os.path.expanduser("~/.ssh/config"), os.path.expanduser("~/.ssh"), 0))
                self.files.append(self._read(_SYSTEM_CONFIG, "/etc/ssh", 0))
        except _PerHost as why:
            self.per_host = str(why)
            self.files = []

    def _read(self, path: str, base: str, depth: int) -> _File:
        if depth > _MAX_DEPTH:
            raise _PerHost(f"Include nested deeper than {_MAX_DEPTH}")
        try:
            text = _config_text(path, "")
        except TransportError as exc:
            raise _PerHost(exc.message) from None
        f = _File()
        items = f.head
        for line in (text or "").splitlines():
            keyword, args = _split_line(line)
            if not keyword:
                continue
            if keyword == "host":
                plain = all(a and not a.startswith("!") and "*" not in a and "?" not in a for a in args)
                items = []
                # a block of plain names is looked up by name (_File.runs); its line is never evaluated
                f.blocks.append((("host", None if plain else _host_line(args), set(args) if plain else None),
                                 items))
            elif keyword == "match":
                items = []
                f.blocks.append((("match", self._criteria(args)), items))
            elif keyword == "include":
                found: List[_File] = []
                for arg in args:
                    if "%" in arg or "$" in arg:
                        raise _PerHost("Include with tokens or variables")
                    pattern = os.path.expanduser(arg)
                    if not os.path.isabs(pattern):
                        pattern = os.path.join(base, pattern)
                    found.extend(self._read(p, base, depth + 1) for p in sorted(glob.glob(pattern)))
                items.append(("include", found))
            else:
                items.append(("set", keyword, tuple(args)))
        f.close()
        return f

    @staticmethod
    def _criteria(args: List[str]) -> List[Tuple[str, bool, Optional[Callable[[str], bool]]]]:
        out: List[Tuple[str, bool, Optional[Callable[[str], bool]]]] = []
        i = 0
        while i < len(args):
            attrib = args[i]
            i += 1
            negate = attrib.startswith("!")
            name = attrib[1:] if negate else attrib
            arg: Optional[str] = None
            if "=" in name:
                name, _, arg = name.partition("=")
            name = name.lower()
            if name == "all":
                out.append(("all", negate, None))
                continue
            if name not in ("host", "originalhost"):
                raise _PerHost(f"Match {name}")
            if arg is None:
                if i >= len(args):
                    raise _PerHost("Match criterion without its argument")
                arg = args[i]
                i += 1
            out.append((name, negate, _hostname_list(arg)))
        return out

    def _walk(self, f: _File, alias: str, st: _State) -> None:
        self._apply(f.head, alias, st)
        for run in f.runs:
            if isinstance(run, dict):
                for i in run.get(alias, ()):
                    self._apply(f.blocks[i][1], alias, st)
                continue
            cond, items = f.blocks[run]  # type: ignore[index]
            if self._applies(cond, alias, st):
                self._apply(items, alias, st)

    @staticmethod
    def _applies(cond: tuple, alias: str, st: _State) -> bool:
        if cond[0] == "host":
            return cond[1](alias)
        host = alias if st.hostname is None else st.hostname.replace("%h", alias)
        for name, negate, matches in cond[1]:
            got = True if matches is None else matches(alias if name == "originalhost" else host)
            if got == negate:
                return False
        return True

    def _apply(self, items: List[tuple], alias: str, st: _State) -> None:
        for item in items:
            if item[0] == "include":
                for f in item[1]:
                    self._walk(f, alias, st)
                continue
            st.applied.append(item)
            if item[1] == "hostname" and st.hostname is None and item[2]:
                st.hostname = item[2][0]

    def key(self, alias: str, user: Optional[str], port: Optional[int]) -> Tuple[Optional[tuple], Optional[str]]:
        """``(group key, literal HostName)`` of ``alias``: what decides its settings but its name and that
        HostName (key None: ``alias`` is its own)."""
        shape = _shape(alias)
        if self.per_host is not None or shape is None:
            return None, None
        st = _State()
        for f in self.files:
            self._walk(f, alias, st)
        applied = list(st.applied)
        literal = None
        for i, (_, keyword, args) in enumerate(applied):
            if keyword in ("canonicalizehostname", "canonicalizepermittedcnames"):
                if (args[:1] or ("no",))[0].lower() not in ("no", "none"):
                    return None, None  # the name may be rewritten from the DNS
            if keyword == "hostname" and literal is None and args:
                if "%" in args[0]:
                    if args[0].replace("%%", "").replace("%h", "").count("%"):
                        return None, None  # tokens other than %h
                    break  # written from the name: the same for the whole group
                literal = args[0]
                applied[i] = ("set", "hostname", None)
        relation: tuple = ()
        if literal is not None:
            lshape = _shape(literal)
            if lshape is None:
                return None, None
            words = (alias, alias.lower(), literal, literal.lower())
            relation = (lshape,) + tuple(x in y for x in words for y in words)
        return (tuple(applied), user, port, shape, relation), literal


def _shape(alias: str) -> Optional[str]:
    """How ``ssh`` writes ``alias`` into HostName when nothing renames it: a name in lower case ("lower", or
    "upper" for one that has capitals), an address as it is, after putting it in its canonical form
    (``getnameinfo``). Only canonical IPv4 addresses ("ipv4") are sure to stay as given; None for any other
    address (``10.1``, IPv6), which ``ssh -G`` resolves on its own."""
    try:
        socket.getaddrinfo(alias, None, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return "upper" if alias != alias.lower() else "lower"
    try:
        return "ipv4" if str(ipaddress.IPv4Address(alias)) == alias else None
    except ValueError:
        return None


_SLOTS = ("\x00\x01\x00", "\x00\x02\x00", "\x00\x03\x00", "\x00\x04\x00")  # a template's places (no ssh -G output has a NUL)


def _words(alias: str, literal: Optional[str]) -> List[Tuple[str, str]]:
    """``(text, slot)``: the host's name and literal HostName, as given and in lower case, longest first."""
    out = [(alias, _SLOTS[0]), (alias.lower(), _SLOTS[1])]
    if literal is not None:
        out += [(literal, _SLOTS[2]), (literal.lower(), _SLOTS[3])]
    return sorted(out, key=lambda w: -len(w[0]))


def _template(text: str, alias: str, literal: Optional[str]) -> Dict[str, List[str]]:
    """The keywords nccldiag reads of one ``ssh -G`` output, each of the host's words (:func:`_words`) replaced
    by its slot."""
    out: Dict[str, List[str]] = {}
    for key, values in _read_part(text).items():
        for value in values:
            for word, slot in _words(alias, literal):
                value = value.replace(word, slot)
            out.setdefault(key, []).append(value)
    return out


def _fill(template: Dict[str, List[str]], alias: str, literal: Optional[str]) -> str:
    words = {slot: word for word, slot in _words(alias, literal)}
    lines = []
    for key, values in template.items():
        for value in values:
            for slot, word in words.items():
                value = value.replace(slot, word)
            lines.append(f"{key} {value}")
    return "\n".join(lines)


def _read_part(text: str) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        if key.lower() in READ_KEYS:
            out.setdefault(key.lower(), []).append(value.strip())
    return out


class HostConfigs:
    """The effective settings of the hosts of one run, asking ``ssh -G`` once per group of hosts the
    configuration cannot tell apart (:class:`Layout`) rather than once per host: a process of a few
    milliseconds of CPU each, a sizeable part of the head's work per host.

    The first host of a group to connect runs ``ssh -G`` for itself and for a second host of the group; the
    group's template is the first answer with the host's words (its name, and its literal HostName) as
    slots, kept only if filling in the second host's words gives exactly the second host's answer (as far
    as nccldiag reads it). Where it does not (a ``%C`` hash, a name written some other way), every host of
    the group runs its own. Without OpenSSH's client every host is resolved on its own by paramiko's
    parser, as :func:`resolve` does."""

    def __init__(self, config_path: Optional[str], hosts: Sequence[Tuple[str, Optional[str], Optional[int]]],
                 timeout: float = 30.0):
        self.config_path = config_path
        self.timeout = timeout
        self.hosts = [tuple(h) for h in hosts]
        self.asked = 0  # ssh -G runs, for tests and benchmarks
        self._setup()

    def _setup(self) -> None:
        self._lock = threading.Lock()
        self._groups: Dict[tuple, List[Tuple[str, Optional[str]]]] = {}  # key -> [(name, literal HostName)]
        self._key: Dict[tuple, Tuple[Optional[tuple], Optional[str]]] = {}
        self._done: Dict[tuple, object] = {}  # group key -> template, or None: every host on its own
        self._busy: Dict[tuple, threading.Event] = {}
        self._answers: Dict[tuple, str] = {}  # (name, user, port) -> its ssh -G answer, asked for another's sake
        self._ssh = shutil.which("ssh")
        self._checked = False
        layout = Layout(self.config_path) if self._ssh else None
        for alias, user, port in self.hosts:
            key, literal = layout.key(alias, user, port) if layout is not None else (None, None)
            self._key[(alias, user, port)] = (key, literal)
            if key is not None:
                self._groups.setdefault(key, []).append((alias, literal))

    def __getstate__(self) -> dict:
        return {"config_path": self.config_path, "timeout": self.timeout, "hosts": self.hosts, "asked": 0}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._setup()

    def _ask(self, alias: str, user: Optional[str], port: Optional[int]) -> str:
        with self._lock:
            self.asked += 1
            check = not self._checked
            self._checked = True
        if check:  # what ssh -G reads first: a FIFO there would hold every run to the timeout
            _config_text(self.config_path or os.path.expanduser("~/.ssh/config"), alias)
        assert self._ssh is not None
        return _ssh_G(self._ssh, alias, user, port, self.config_path, self.timeout)

    def resolve(self, alias: str, user: Optional[str] = None, port: Optional[int] = None) -> HostConfig:
        """The effective settings for ``alias`` with the hostfile's ``user`` and ``port``, as :func:`resolve`
        gives them."""
        if not self._ssh:
            return resolve(alias, user, port, self.config_path, self.timeout)
        key, literal = self._key.get((alias, user, port), (None, None))
        members = self._groups.get(key, []) if key is not None else []
        if len(members) < 2:
            return self._own(alias, user, port)
        while True:
            with self._lock:
                if key in self._done:
                    template = self._done[key]
                    break
                busy = self._busy.get(key)
                mine = busy is None
                if mine:
                    busy = self._busy[key] = threading.Event()
            if not mine:
                busy.wait()
                continue
            try:
                return self._learn(key, members, alias, literal, user, port)
            finally:
                with self._lock:
                    self._done.setdefault(key, None)
                    del self._busy[key]
                busy.set()
        if template is None:
            return self._own(alias, user, port)
        return _finish(parse_ssh_G(_fill(template, alias, literal), alias), user, port, True)  # type: ignore[arg-type]

    def _own(self, alias: str, user: Optional[str], port: Optional[int]) -> HostConfig:
        with self._lock:
            text = self._answers.pop((alias, user, port), None)
        if text is None:
            text = self._ask(alias, user, port)
        return _finish(parse_ssh_G(text, alias), user, port, True)

    def _learn(self, key: tuple, members: List[Tuple[str, Optional[str]]], alias: str, literal: Optional[str],
               user: Optional[str], port: Optional[int]) -> HostConfig:
        """``alias``'s settings, and its group's template when a second host confirms it."""
        text = self._ask(alias, user, port)
        mine = {w for w in (alias, literal) if w}
        others = [m for m in members if m[0] != alias]
        # the second host: one whose words are not part of the first's, nor the first's of its
        other, other_literal = next(
            (m for m in others if not any(a in b or b in a for a in mine for b in (m[0], m[1]) if b)), others[0])
        template = _template(text, alias, literal)
        try:
            answer = self._ask(other, user, port)
        except TransportError:  # the other host is told so when it connects
            answer = None
        confirmed = answer is not None and _read_part(answer) == _read_part(_fill(template, other, other_literal))
        with self._lock:
            self._done[key] = template if confirmed else None
            if answer is not None and not confirmed:
                self._answers[(other, user, port)] = answer
        return _finish(parse_ssh_G(text, alias), user, port, True)


def default_identities() -> List[str]:
    return [_expand(p) for p in _DEFAULT_IDENTITIES]
