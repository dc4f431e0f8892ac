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
from dataclasses import dataclass, field, replace
from typing import Dict, Iterable, List, Optional, Tuple

from nccldiag.model.errors import InventoryError

# A host name or address as it may reach a command line: letters, digits and
# ``. _ -`` only (IPv4 addresses included). Everything else is refused, so that
# nothing from a hostfile can be read by a shell as syntax.
_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,252})$")
_USER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
_SHELL_META = set(";&|<>()$`\\\"'*?!{}~#=%^ \t")

_SLOT_KEYS = {"slots", "max_slots", "max-slots", "slots_max", "count", "cpu"}
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
        raise InventoryError(where, f"host name {name!r} contains {shown!r}: refused (letters, digits, '.', '_', '-' only)")
    if not _NAME_RE.match(name):
        raise InventoryError(where, f"host name {name!r} is not a valid host name or IPv4 address")
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
                raise InventoryError(where, f"unbalanced brackets in node set {part!r}")
            for ch in part:
                if ch in _SHELL_META - {"[", "]"} or ch in "@!&":
                    raise InventoryError(where, f"node set {part!r} contains {ch!r}: refused")
            from ClusterShell.NodeSet import NodeSet, NodeSetParseError

            try:
                expanded = list(NodeSet(part))
            except (NodeSetParseError, ValueError) as exc:
                raise InventoryError(where, f"bad node set {part!r}: {exc}") from None
            if len(expanded) > 100000:
                raise InventoryError(where, f"node set {part!r} expands to {len(expanded)} hosts (limit 100000)")
            names.extend(check_name(n, where) for n in expanded)
        else:
            names.append(check_name(part, where))
    return names


def _parse_int(value: str, key: str, where: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise InventoryError(where, f"{key}={value!r}: expected a whole number") from None
    if n < 0:
        raise InventoryError(where, f"{key}={value!r}: expected a number >= 0")
    return n


def parse_line(line: str, where: str) -> Tuple[List[Host], List[str]]:
    """Hosts and exclusions on one hostfile line (comments already removed)."""
    tokens = line.split()
    if not tokens:
        return [], []
    specs = [t for t in tokens if "=" not in t]
    options = [t for t in tokens if "=" in t]
    if options and tokens.index(options[0]) == 0:
        raise InventoryError(where, f"expected a host name first, found {tokens[0]!r}")
    if options and len(specs) > 1:
        raise InventoryError(where, f"keywords ({options[0]}) apply to one host, but the line names {len(specs)}")
    user = port = slots = None
    for opt in options:
        key, _, value = opt.partition("=")
        key = key.lower()
        if key in _SLOT_KEYS:
            n = _parse_int(value, key, where)
            if key in ("slots", "count", "cpu"):
                slots = n
        elif key == "port":
            port = _parse_int(value, key, where)
            if not 0 < port < 65536:
                raise InventoryError(where, f"port={value}: expected 1-65535")
        elif key in _USER_KEYS:
            if not _USER_RE.match(value):
                raise InventoryError(where, f"{key}={value!r}: not a valid user name")
            user = value
        else:
            raise InventoryError(
                where,
                f"unknown keyword {key!r} (expected slots=, max_slots=, port=, username=; "
                "formats: 'host', 'host slots=N', 'host:N', 'user@host', 'gpu[01-04]')",
            )
    hosts: List[Host] = []
    excluded: List[str] = []
    for spec in specs:
        if spec.startswith("^"):
            excluded.extend(expand(spec[1:], where))
            continue
        h_user = user
        if "@" in spec:
            h_user, _, spec = spec.rpartition("@")
            if not _USER_RE.match(h_user):
                raise InventoryError(where, f"{h_user!r} is not a valid user name")
        h_slots = slots
        if ":" in spec:
            spec, _, count = spec.rpartition(":")
            if not count.isdigit():
                raise InventoryError(
                    where, f"'{spec}:{count}': after ':' expected a slot count (MPICH 'host:N'); use port= for a port"
                )
            h_slots = int(count)
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
    for lineno, raw in enumerate(text.splitlines(), 1):
        where = f"{path}:{lineno}"
        line = raw
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
    return inv


def read_hostfile(path: str) -> Inventory:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise InventoryError(path, "no such hostfile") from None
    except IsADirectoryError:
        raise InventoryError(path, "is a directory, expected a hostfile") from None
    except UnicodeDecodeError as exc:
        raise InventoryError(path, f"not a text file ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InventoryError(path, exc.strerror or str(exc)) from None
    return parse_hostfile_text(text, path)


def from_expression(expr: str, where: str) -> List[Host]:
    """Hosts of a ``-w`` style expression: node sets, commas, optional ``user@``."""
    hosts: List[Host] = []
    for part in _split_top_level(expr):
        found, excluded = parse_line(part, where)
        if excluded:
            raise InventoryError(where, f"'^' exclusion is only for hostfiles; use -x {part[1:]}")
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
    seen: Dict[str, str] = {}
    result = Inventory(excluded=sorted(excluded))
    for h in merged.hosts:
        if h.name in excluded:
            continue
        if h.name in seen:
            result.duplicates.append((h.name, h.where, seen[h.name]))
            continue
        seen[h.name] = h.where
        result.hosts.append(h)
    if not result.hosts:
        raise InventoryError("inventory", "no hosts left to check (all excluded or the hostfile is empty)")
    return result


def local_host() -> Host:
    import socket

    return Host(name=socket.gethostname(), where="local")


def with_user(host: Host, user: Optional[str]) -> Host:
    return replace(host, user=user) if user and not host.user else host
