"""Resolving a host's SSH settings the way OpenSSH does.

paramiko parses ``ssh_config`` but ignores ``Include``, ``Match exec`` and
``ProxyJump``. When the OpenSSH client is installed, ``ssh -G HOST`` prints
the effective configuration after every ``Host``/``Match``/``Include`` was
evaluated, so that is asked first; paramiko's parser is the fallback.

``ssh -G`` prints ``ProxyCommand`` as written, with its ``%`` tokens
unexpanded; :func:`resolve` expands them the way ``ssh`` would.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional

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


def resolve(
    alias: str,
    user: Optional[str] = None,
    port: Optional[int] = None,
    config_path: Optional[str] = None,
    timeout: float = 30.0,  # local, but a loaded head node or a slow Match exec must not fail a healthy host
) -> HostConfig:
    """The effective settings for ``alias`` (command-line user/port win)."""
    ssh = shutil.which("ssh")
    cfg: Optional[HostConfig] = None
    from_ssh = False
    if ssh:
        # what ssh -G reads first: a FIFO there would hold it to the timeout, for every host
        _config_text(config_path or os.path.expanduser("~/.ssh/config"), alias)
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
        if proc.returncode == 0:
            cfg = parse_ssh_G(proc.stdout, alias)
            from_ssh = True
        else:
            msg = (proc.stderr.strip().splitlines() or ["ssh -G failed"])[-1]
            raise TransportError(CONFIG, f"ssh configuration: {msg}", alias)
    if cfg is None:
        cfg = _from_paramiko(alias, config_path)
    if user:
        cfg.user = user
    if port:
        cfg.port = port
    if not cfg.user:
        import getpass

        cfg.user = getpass.getuser()
    if from_ssh and cfg.proxy_command:  # paramiko's parser expands them itself
        cfg.proxy_command = expand_proxy_command(cfg.proxy_command, cfg)
    return cfg


def default_identities() -> List[str]:
    return [_expand(p) for p in _DEFAULT_IDENTITIES]
