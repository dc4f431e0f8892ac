"""Inventory: which hosts to check, from hostfiles and node-set expressions.

Hostfiles come in the formats admins already have, one host per line, in
file order (order matters: the first host becomes the rendezvous host):

* plain: ``node01`` (several names or node sets on a line are allowed, as in
  ClusterShell's ``--hostfile``)
* Open MPI: ``node01 slots=8 max_slots=8``, ``#`` and ``//`` comments,
  ``username=`` and ``port=`` keywords, ``^node`` excludes a host
* MPICH / Hydra: ``node01:8``
* DeepSpeed: ``worker-0 slots=8``
* ``user@host``
* node sets: ``gpu[001-032,040]`` (expanded with ClusterShell, file order kept)

``host:N`` is a slot count, as in every MPI launcher, never a port.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

from nccldiag import rx
from nccldiag.model.errors import InventoryError
from nccldiag.model.secrets import redact

# A host name or address as it may reach a command line: letters, digits and
# ``. _ -`` only (IPv4 addresses included). Everything else is refused, so that
# nothing from a hostfile can be read by a shell as syntax.
_NAME_RE = rx.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,252})$")
_USER_RE = rx.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
_SHELL_META = set(";&|<>()$`\\\"'*?!{}~#=%^ \t")

_SLOT_KEYS = {"slots", "max_slots", "max-slots", "slots_max", "count", "cpu"}
MAX_HOSTS = 100000  # hosts in one inventory, counted before any node set is expanded
MAX_SLOTS = 1024  # ranks per node, as --nproc-per-node
MAX_HOSTFILE_BYTES = 16 * 1024 * 1024


def _q(text: str, limit: int = 40) -> str:
    """A short, quoted excerpt of what a file said, for an error message."""
    shown = text if len(text) <= limit else text[:limit] + "..."
    return repr(shown) + ("" if len(text) <= limit else f" ({len(text)} characters)")


_SECRET_RE = rx.compile(r"PRIVATE KEY|^[^:\s]+:\$[0-9a-z]+\$|^[^:\s]+:[^:]*:\d+:\d+:|password|passwd|secret|token", re.I | re.M)


def _looks_secret(text: str) -> bool:
    """A file that looks like credentials (a key, a shadow or passwd file): its content is never quoted."""
    return bool(_SECRET_RE.search(text[:4096]))


# Credential files whose every line would otherwise parse as host names (a .netrc is words separated by
# blanks, as a plain hostfile is), recognised before anything of them is used. Each form is one no hostfile
# takes: netrc's keywords (a host named "machine" followed by one named "login"), PEM and OpenSSH key
# armour, and the colon-separated fields of shadow, passwd and .pgpass lines (more, or other, than any
# host, host:N or IPv6 address has).
_CREDENTIALS = (
    # curl and ftp read netrc's keywords in any case (MACHINE ... LOGIN ... PASSWORD)
    (".netrc", rx.compile(r"(?:^|\s)(?:machine\s+\S+|default)(?:\s+\S+\s+\S+){0,3}?\s+(?:login|password|account)\s+\S",
                          re.I)),
    ("a private key", rx.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----|PuTTY-User-Key-File")),
    ("a shadow file", rx.compile(r"^[^:\s]+:[^:\s]*:\d*:\d*:\d*:\d*:\d*:\d*:[^:\s]*$", re.M)),
    ("a passwd file", rx.compile(r"^[^:\s]+:[^:\s]*:\d+:\d+:[^:]*:/[^:]*:(?:/[^:]*)?$", re.M)),
    ("a .pgpass file", rx.compile(r"^[^:\s#]+:(?:\d+|\*):[^:\s]+:[^:\s]+:\S+$", re.M)),
)


# the names credential files have where their tools keep them (a token or a password alone on a line is a
# valid host name: the file's name is what tells it)
_CREDENTIAL_NAMES = {".netrc": ".netrc", "_netrc": ".netrc", ".pgpass": ".pgpass", ".git-credentials": ".git-credentials",
                     ".my.cnf": ".my.cnf", ".boto": ".boto", ".s3cfg": ".s3cfg", ".npmrc": ".npmrc",
                     ".pypirc": ".pypirc", "id_rsa": "a private key", "id_ecdsa": "a private key",
                     "id_ed25519": "a private key", "id_dsa": "a private key"}
_CREDENTIAL_PLACES = {(".aws", "credentials"): "an AWS credentials file", (".docker", "config.json"): "a docker config",
                      ("huggingface", "token"): "a Hugging Face token file"}


def credentials_kind(text: str, path: Optional[str] = None) -> Optional[str]:
    """What kind of credentials file ``text`` (read from ``path``) looks like (``".netrc"``, ``"a private key"``,
    ...), or None: by its name where its tool keeps it, by its form, or by a token it holds (an AWS key, a
    GitHub, Hugging Face or Slack token ...: :func:`nccldiag.model.secrets.redact` would mask it)."""
    if path:
        base = os.path.basename(path)
        place = (os.path.basename(os.path.dirname(os.path.abspath(path))), base)
        if base in _CREDENTIAL_NAMES or place in _CREDENTIAL_PLACES:
            return _CREDENTIAL_NAMES.get(base) or _CREDENTIAL_PLACES[place]
    words = _COMMENT_RE.sub("", text)  # "# machine room, login nodes" is a hostfile's comment
    for kind, pattern in _CREDENTIALS:
        if pattern.search(words if kind == ".netrc" else text):
            return kind
    if redact(words) != words:
        return "a file holding a token"
    return None


_COMMENT_RE = rx.compile(r"(?:#|//).*$", re.M)


_USER_KEYS = {"username", "user-name", "user"}


@dataclass(frozen=True)
class Host:
    """One host to check. ``name`` is what SSH is asked to reach."""

    name: str
    user: Optional[str] = None
    port: Optional[int] = None
    slots: Optional[int] = None
    where: str = ""  # "hosts.txt:3", "-w", "SLURM_JOB_NODELIST"

    @property
    def target(self) -> str:
        return f"{self.user}@{self.name}" if self.user else self.name

    def to_dict(self) -> dict:
        return {"name": self.name, "user": self.user, "port": self.port, "slots": self.slots, "where": self.where}


@dataclass
class Inventory:
    hosts: List[Host] = field(default_factory=list)
    duplicates: List[Tuple[str, str, str]] = field(default_factory=list)  # (name, where, first where)
    excluded: List[str] = field(default_factory=list)

    @property
    def names(self) -> List[str]:
        return [h.name for h in self.hosts]


def check_name(name: str, where: str) -> str:
    """``name`` if it is a valid host name, else an InventoryError naming ``where``."""
    bad = sorted({c for c in name if c in _SHELL_META})
    if bad:
        shown = "".join(bad).replace("\t", "\\t")
        raise InventoryError(where, f"host name {_q(name)} contains {shown!r}: refused (letters, digits, '.', '_', '-' only)")
    if not _NAME_RE.match(name):
        raise InventoryError(where, f"host name {_q(name)} is not a valid host name or IPv4 address")
    return name


def _split_top_level(expr: str, seps: str = ",") -> List[str]:
    """Split on ``seps`` outside brackets: ``a[1-2,5],b`` -> ``['a[1-2,5]', 'b']``."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch in seps and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in (p.strip() for p in parts) if p]


_GROUP_RE = rx.compile(r"\[([^\[\]]*)\]")


def _nodeset_size(part: str) -> int:
    """How many names a bracketed node set names, from its ranges alone (nothing is expanded)."""
    total = 1
    for group in _GROUP_RE.findall(part):
        count = 0
        for item in group.split(","):
            rng, _, step = item.partition("/")
            lo, dash, hi = rng.partition("-")
            try:
                n = (int(hi) - int(lo)) // max(1, int(step or 1)) + 1 if dash else 1
            except ValueError:
                n = 1  # not a range ClusterShell accepts either: its parser says why
            count += max(0, n)
        total *= max(1, count)
    return total


def expand(expr: str, where: str) -> List[str]:
    """Expand one node-set expression, keeping the order it was written in.

    ``gpu[001-003],login1`` -> ``['gpu001', 'gpu002', 'gpu003', 'login1']``.
    Each comma-separated part is expanded by ClusterShell (which sorts within
    a part, the natural order of a range).
    """
    names: List[str] = []
    for part in _split_top_level(expr):
        if "[" in part or "]" in part:
            if part.count("[") != part.count("]"):
                raise InventoryError(where, f"unbalanced brackets in node set {_q(part)}")
            for ch in part:
                if ch in _SHELL_META - {"[", "]"} or ch in "@!&":
                    raise InventoryError(where, f"node set {_q(part)} contains {ch!r}: refused")
            from ClusterShell.NodeSet import NodeSet, NodeSetParseError

            size = _nodeset_size(part)  # counted from the ranges, before anything is expanded
            if len(names) + size > MAX_HOSTS:
                raise InventoryError(where, f"node set {_q(part)} has {size} hosts (limit {MAX_HOSTS} in all)")
            try:
                nodeset = NodeSet(part)
            except (NodeSetParseError, ValueError) as exc:
                raise InventoryError(where, f"bad node set {_q(part)}: {_q(str(exc), 80)}") from None
            names.extend(check_name(n, where) for n in nodeset)
        else:
            names.append(check_name(part, where))
    return names


def _parse_int(value: str, key: str, where: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise InventoryError(where, f"{key}={_q(value)}: expected a whole number") from None
    if n < 0:
        raise InventoryError(where, f"{key}={_q(value)}: expected a number >= 0")
    return n


# Characters that Python's str.split() and splitlines() take for line or word breaks besides space, tab and
# newline: a carriage return alone (``node02\rtouch``) made "touch" a host. Refused wherever they are.
_BREAKS = rx.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_BREAK_NAMES = {"\r": "a carriage return (\\r)", "\x0b": "a vertical tab", "\x0c": "a form feed",
                "\x85": "a next-line character (U+0085)", "\u2028": "a line separator (U+2028)",
                "\u2029": "a paragraph separator (U+2029)"}


def _check_breaks(line: str, where: str) -> None:
    m = _BREAKS.search(line)
    if m:
        c = m.group()
        what = _BREAK_NAMES.get(c, f"a control character ({c!r})")
        raise InventoryError(where, f"{what} inside the line, after {_q(line[:m.start()])}: refused (read as a "
                                    "break, it would make the rest of the line more hosts)")


_BRACKETED_V6 = rx.compile(r"^\[([^\[\]]*:[^\[\]]*)\](?::(\d+))?$")
_BARE_V6 = rx.compile(r"^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%\S+)?$")


def _check_ipv6(spec: str, given: str, where: str) -> None:
    """An IPv6 address, bare or in brackets, is named as one (a port or zone included), never read as a
    host name with a slot count or as a node set."""
    m = _BRACKETED_V6.match(spec)
    addr = m.group(1) if m else spec if _BARE_V6.match(spec) else None
    if addr is None:
        return
    import ipaddress

    try:
        ipaddress.ip_address(addr.split("%", 1)[0])
    except ValueError:
        raise InventoryError(where, f"{_q(given)} is not a valid host name, IPv4 or IPv6 address") from None
    port = m.group(2) if m else None
    tail = f" (and ':{port}' after it would be read as {port} slots, not a port)" if port else ""
    raise InventoryError(where, f"{_q(given)} is an IPv6 address: hosts are given by name or IPv4 address; "
                                f"name it in ~/.ssh/config ('Host n1' with 'HostName {addr}') and give that "
                                f"name{tail}")


def parse_line(line: str, where: str) -> Tuple[List[Host], List[str]]:
    """Hosts and exclusions on one hostfile line (comments already removed)."""
    _check_breaks(line, where)
    tokens = line.split()
    if not tokens:
        return [], []
    specs = [t for t in tokens if "=" not in t]
    options = [t for t in tokens if "=" in t]
    if options and tokens.index(options[0]) == 0:
        raise InventoryError(where, f"expected a host name first, found {_q(tokens[0])}")
    if options and len(specs) > 1:
        raise InventoryError(where, f"keywords ({_q(options[0])}) apply to one host, but the line names {len(specs)}")
    user = port = slots = None
    for opt in options:
        key, _, value = opt.partition("=")
        key = key.lower()
        if key in _SLOT_KEYS:
            n = _parse_int(value, key, where)
            if n > MAX_SLOTS:
                raise InventoryError(where, f"{key}={n}: more ranks than any node runs (limit {MAX_SLOTS})")
            if key in ("slots", "count", "cpu"):
                slots = n
        elif key == "port":
            port = _parse_int(value, key, where)
            if not 0 < port < 65536:
                raise InventoryError(where, f"port={value}: expected 1-65535")
        elif key in _USER_KEYS:
            if not _USER_RE.match(value):
                raise InventoryError(where, f"{key}={_q(value)}: not a valid user name")
            user = value
        else:
            raise InventoryError(
                where,
                f"unknown keyword {_q(key)} (expected slots=, max_slots=, port=, username=; "
                "formats: 'host', 'host slots=N', 'host:N', 'user@host', 'gpu[01-04]')",
            )
    hosts: List[Host] = []
    excluded: List[str] = []
    for spec in specs:
        if spec.startswith("^"):
            excluded.extend(expand(spec[1:], where))
            continue
        h_user = user
        given = spec
        at = "@" in spec
        if at:
            h_user, _, spec = spec.rpartition("@")
            if not _USER_RE.match(h_user):
                raise InventoryError(where, f"{_q(h_user)} is not a valid user name")
        _check_ipv6(spec, given, where)
        h_slots = slots
        if at and ":" in spec:
            name, _, count = spec.rpartition(":")
            raise InventoryError(
                where, f"{_q(given)}: ssh reads 'user@host:N' as a port, MPI launchers as N slots: write "
                       f"'{h_user}@{name} port={count}' for an SSH port or '{h_user}@{name} slots={count}' for "
                       f"{count} ranks")
        if ":" in spec:
            spec, _, count = spec.rpartition(":")
            if not count.isdigit():
                raise InventoryError(
                    # what follows the ':' is not quoted: in a 'user:password' line it is the password
                    where, f"{_q(spec + ':...')}: after ':' expected a slot count (MPICH 'host:N'), found "
                           f"{len(count)} other character(s) (not shown); use port= for a port"
                )
            h_slots = int(count)
            if h_slots > MAX_SLOTS:
                raise InventoryError(where, f"{_q(spec + ':' + count)}: {h_slots} slots is more ranks than any node runs "
                                            f"(limit {MAX_SLOTS}); for an SSH port write '{spec} port={count}'")
        if not spec:
            raise InventoryError(where, "empty host name")
        for name in expand(spec, where):
            hosts.append(Host(name=name, user=h_user, port=port, slots=h_slots, where=where))
    return hosts, excluded


def _strip_comment(line: str) -> str:
    for marker in ("#", "//"):
        idx = line.find(marker)
        if idx >= 0:
            line = line[:idx]
    return line.strip()


def parse_hostfile_text(text: str, path: str = "<hostfile>") -> Inventory:
    """Parse a hostfile's text. Errors name ``path:line``."""
    inv = Inventory()
    in_block_comment = False
    # lines end at "\n" only (a CRLF's "\r" is part of its end): splitlines() also broke a line at a lone
    # "\r", a form feed or U+2028, which parse_line now refuses inside a line
    for lineno, raw in enumerate(text.split("\n"), 1):
        where = f"{path}:{lineno}"
        line = raw[:-1] if raw.endswith("\r") else raw
        if in_block_comment:
            end = line.find("*/")
            if end < 0:
                continue
            line, in_block_comment = line[end + 2 :], False
        start = line.find("/*")
        if start >= 0:
            end = line.find("*/", start + 2)
            if end < 0:
                line, in_block_comment = line[:start], True
            else:
                line = line[:start] + line[end + 2 :]
        line = _strip_comment(line)
        if not line:
            continue
        hosts, excluded = parse_line(line, where)
        inv.hosts.extend(hosts)
        inv.excluded.extend(excluded)
        if len(inv.hosts) + len(inv.excluded) > MAX_HOSTS:
            raise InventoryError(where, f"more than {MAX_HOSTS} hosts")
    return inv


def read_hostfile(path: str) -> Inventory:
    """Read and parse a hostfile: a regular text file (``-`` is not one) of at most 16 MiB.

    Errors name the file and line and quote at most a short excerpt, and
    nothing at all from a file that looks like credentials.
    """
    import os
    import stat

    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(st.st_mode):
            raise InventoryError(path, "not a regular file (a device, FIFO or socket), expected a hostfile")
        if st.st_size > MAX_HOSTFILE_BYTES:
            raise InventoryError(path, f"{st.st_size} bytes: too large for a hostfile (limit {MAX_HOSTFILE_BYTES // 1024 // 1024} MiB)")
        with open(path, "rb") as f:
            data = f.read(MAX_HOSTFILE_BYTES + 1)
        if len(data) > MAX_HOSTFILE_BYTES:
            raise InventoryError(path, f"too large for a hostfile (limit {MAX_HOSTFILE_BYTES // 1024 // 1024} MiB)")
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise InventoryError(path, "no such hostfile") from None
    except IsADirectoryError:
        raise InventoryError(path, "is a directory, expected a hostfile") from None
    except UnicodeDecodeError as exc:
        raise InventoryError(path, f"not a text file ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InventoryError(path, exc.strerror or str(exc)) from None
    text = text[1:] if text.startswith("\ufeff") else text  # a BOM, as Windows editors write
    kind = credentials_kind(text, path)
    if kind is not None:  # before any of it becomes a host: a password must never be looked up, tried or printed
        shown = kind if kind.startswith("a") else f"a {kind} file"
        raise InventoryError(path, f"not a hostfile: it looks like {shown} (credentials), so nothing of it "
                                   "is used or shown")
    try:
        return parse_hostfile_text(text, path)
    except InventoryError as exc:
        if _looks_secret(text):
            raise InventoryError(exc.where, "not a hostfile: it looks like a credentials file, so nothing of it "
                                            "is shown") from None
        raise


def from_expression(expr: str, where: str) -> List[Host]:
    """Hosts of a ``-w`` style expression: node sets, commas, optional ``user@``."""
    hosts: List[Host] = []
    for part in _split_top_level(expr):
        if len(hosts) + _nodeset_size(part) > MAX_HOSTS:
            raise InventoryError(where, f"{_q(part)} takes the hosts past the limit {MAX_HOSTS} in all")
        found, excluded = parse_line(part, where)
        if excluded:
            raise InventoryError(where, f"'^' exclusion is only for hostfiles; use -x {_q(part[1:])}")
        hosts.extend(found)
    return hosts


def build(
    hostfiles: Iterable[str] = (),
    hosts_exprs: Iterable[str] = (),
    exclude_exprs: Iterable[str] = (),
    environ: Optional[Dict[str, str]] = None,
) -> Optional[Inventory]:
    """The inventory from the command line, or None for "the local machine".

    Hostfiles come first, then ``-w`` expressions; with neither, inside a
    Slurm allocation the hosts come from ``SLURM_JOB_NODELIST``. Duplicates
    keep the first occurrence and are reported.
    """
    env = os.environ if environ is None else environ
    merged = Inventory()
    any_source = False
    for path in hostfiles:
        inv = read_hostfile(path)
        merged.hosts.extend(inv.hosts)
        merged.excluded.extend(inv.excluded)
        any_source = True
    for expr in hosts_exprs:
        merged.hosts.extend(from_expression(expr, "-w"))
        any_source = True
    if not any_source and env.get("SLURM_JOB_NODELIST"):
        merged.hosts.extend(from_expression(env["SLURM_JOB_NODELIST"], "SLURM_JOB_NODELIST"))
        any_source = True
    for expr in exclude_exprs:
        merged.excluded.extend(h.name for h in from_expression(expr, "-x"))
    if not any_source:
        if merged.excluded:
            raise InventoryError("-x", "nothing to exclude from: give a hostfile or -w")
        return None
    excluded = set(merged.excluded)
    seen: Dict[str, Host] = {}
    result = Inventory(excluded=sorted(excluded))
    for h in merged.hosts:
        if h.name in excluded:
            continue
        first = seen.get(h.name)
        if first is not None:
            if (h.user, h.port) != (first.user, first.port):
                raise InventoryError(h.where, f"{h.name} as {_how(h)} conflicts with {first.where}, where it is "
                                              f"{_how(first)}: one host cannot be reached two ways")
            result.duplicates.append((h.name, h.where, first.where))
            continue
        seen[h.name] = h
        result.hosts.append(h)
    if not result.hosts:
        raise InventoryError("inventory", "no hosts left to check (all excluded or the hostfile is empty)")
    return result


def _how(h: Host) -> str:
    return f"user {h.user or '(default)'}, port {h.port or '(default)'}"
