"""SSH with paramiko, behaving like OpenSSH in batch mode.

* settings from ``~/.ssh/config`` (see :mod:`nccldiag.transport.sshconfig`),
  including ``ProxyJump`` and ``ProxyCommand``: both are handed to OpenSSH.
  ``ProxyJump h1,...,hn`` runs ``ssh -J h1,...,h(n-1) -W host:port hn`` in
  batch mode, and ``ProxyCommand`` runs with its ``%`` tokens expanded; the
  SSH session to the node goes through that process's stdin and stdout,
  and the process (with all it started) is killed when the connection ends;
* host keys verified against ``known_hosts``: an unknown key is refused
  unless trust on first use was asked for, a changed key is always refused;
* keys from ``IdentityFile`` and the agent; never a prompt;
* a timeout on every step: TCP connect, banner, key exchange, auth, each command.

Every failure becomes a :class:`TransportError` of one kind, so the report
can say "connection refused" rather than print a traceback.
"""
from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import hmac
import logging
import math
import os
import select
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import paramiko

from nccldiag.transport import sshconfig
from nccldiag.transport.local import kill_tree
from nccldiag.transport.base import (
    AUTH,
    BANNER,
    COMMAND_TIMEOUT,
    CONFIG,
    HOSTKEY_CHANGED,
    HOSTKEY_UNKNOWN,
    OVERSIZE,
    PROTOCOL,
    PROXY,
    REFUSED,
    RESOLVE,
    STALLED_FIX,
    UNREACHABLE,
    ExecResult,
    TransportError,
)


# paramiko logs every failed handshake at ERROR level with a traceback; with no
# logging configured those records reach stderr through logging.lastResort.
# Every failure is reported as a classified TransportError instead.
_paramiko_log = logging.getLogger("paramiko")
_paramiko_log.addHandler(logging.NullHandler())
_paramiko_log.propagate = False


@dataclass
class SSHOptions:
    config_path: Optional[str] = None
    connect_timeout: float = 10.0
    auth_timeout: float = 15.0
    command_timeout: float = 60.0
    accept_new_host_keys: bool = False
    identity_files: List[str] = field(default_factory=list)
    use_agent: bool = True
    # how long a login (the remote shell and its startup files) may take before a command that says when it
    # starts does (:meth:`SSHConnection.run` with ``start_marker``); None: the caller's default
    login_timeout: Optional[float] = None
    retries: int = 2  # for connections dropped before the banner (MaxStartups)
    max_output: int = 32 * 1024 * 1024  # bytes of stdout+stderr one command may send back
    # names looked up ahead of the connections, all at once (:func:`resolve_names`): name -> addresses or why not
    resolved: Dict[str, object] = field(default_factory=dict, repr=False)
    # the settings of a run's hosts, shared where the configuration cannot tell them apart
    # (:class:`~nccldiag.transport.sshconfig.HostConfigs`); None: ``ssh -G`` for each connection
    configs: Optional[sshconfig.HostConfigs] = field(default=None, repr=False, compare=False)


_known_hosts_lock = threading.Lock()

# The most of a file named in ssh_config that is read: a private key, certificate or public key (the largest,
# RSA 16384, is under 13 KiB), and a known_hosts file (hundreds of thousands of entries).
MAX_KEY_FILE = 1 << 20
MAX_KNOWN_HOSTS = 64 << 20


def _read_ssh_file(path: str, limit: int) -> Optional[bytes]:
    """A file ssh_config names, read as OpenSSH's own files are (links followed): a regular file of at most
    ``limit`` bytes, never a FIFO waited on or a device read; None when it is absent or unreadable.
    Raises :class:`~nccldiag.atomic.NotRegular` or :class:`~nccldiag.atomic.TooLarge`, naming the file."""
    from nccldiag.atomic import read_regular_bytes

    if path == os.devnull:  # "UserKnownHostsFile /dev/null": OpenSSH's own way to say none
        return b""
    try:
        return read_regular_bytes(path, limit, follow=True)
    except OSError:
        return None


def _host_key_names(cfg: sshconfig.HostConfig) -> List[str]:
    names = [cfg.host_key_alias] if cfg.host_key_alias else [cfg.hostname, cfg.alias]
    out: List[str] = []
    for n in names:
        key = n if cfg.port == 22 else f"[{n}]:{cfg.port}"
        if key not in out:
            out.append(key)
    return out


class KnownHosts:
    """The entries of known_hosts files, indexed by host name.

    Read once per change of the files (a run of hundreds of nodes reads
    them once, not twice per node: paramiko's own ``HostKeys.load`` is
    quadratic in the number of lines, which at hundreds of nodes made the
    handshakes wait on the head node's CPU). Hashed names
    (``|1|salt|hash``) are matched by hashing the name asked for, as OpenSSH
    does. Marker lines (``@cert-authority``, ``@revoked``) and lines that do
    not parse are not trusted.
    """

    def __init__(self, paths: Sequence[str]):
        from nccldiag.atomic import NotRegular, TooLarge

        self.plain: Dict[str, Dict[str, List[paramiko.PKey]]] = {}
        self.hashed: List[Tuple[bytes, bytes, Dict[str, List[paramiko.PKey]]]] = []  # salt, HMAC-SHA1, keys
        self._found: Dict[str, Dict[str, List[paramiko.PKey]]] = {}  # name -> what lookup gave
        self._lock = threading.Lock()
        for path in paths:
            try:
                data = _read_ssh_file(path, MAX_KNOWN_HOSTS)
            except (NotRegular, TooLarge) as exc:
                raise TransportError(CONFIG, f"known_hosts file {exc}: refused") from None
            if data is None:
                continue
            lines = data.decode("utf-8", "replace").splitlines()
            for lineno, line in enumerate(lines, 1):
                line = line.strip()
                if not line or line.startswith(("#", "@")):
                    continue
                try:
                    entry = paramiko.hostkeys.HostKeyEntry.from_line(line, lineno)
                except (paramiko.SSHException, ValueError, TypeError):
                    continue
                if entry is None or entry.key is None:
                    continue
                for name in entry.hostnames:
                    if name.startswith("|1|"):
                        hashed = _hashed_name(name)
                        if hashed is not None:
                            self.hashed.append(hashed + ({entry.key.get_name(): [entry.key]},))
                    else:
                        self.plain.setdefault(name, {}).setdefault(entry.key.get_name(), []).append(entry.key)

    def lookup(self, name: str) -> Dict[str, List[paramiko.PKey]]:
        """Key type -> the keys known for ``name`` (empty when unknown). Worked out once per name: a hashed
        known_hosts (Debian's ``HashKnownHosts yes``) costs one HMAC per line, for every name asked."""
        with self._lock:
            found = self._found.get(name)
        if found is not None:
            return found
        out: Dict[str, List[paramiko.PKey]] = {t: list(k) for t, k in self.plain.get(name, {}).items()}
        if self.hashed:
            raw = name.encode("utf-8")
            for salt, digest, keys in self.hashed:
                if hmac.new(salt, raw, hashlib.sha1).digest() != digest:
                    continue
                for t, k in keys.items():
                    out.setdefault(t, []).extend(k)
        with self._lock:
            self._found[name] = out
        return out


def _hashed_name(name: str) -> Optional[Tuple[bytes, bytes]]:
    """``(salt, HMAC-SHA1 of the name)`` of a hashed known_hosts name (``|1|salt|hash``), or None."""
    parts = name.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return None
    try:
        return base64.b64decode(parts[2], validate=True), base64.b64decode(parts[3], validate=True)
    except (binascii.Error, ValueError):
        return None


_known_cache: Dict[Tuple[str, ...], Tuple[tuple, KnownHosts]] = {}


def _stamp(paths: Sequence[str]) -> tuple:
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append((p, st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append((p, None))
    return tuple(out)


def _load_known_hosts(paths: Sequence[str], host: str = "") -> KnownHosts:
    key = tuple(paths)
    stamp = _stamp(paths)
    with _known_hosts_lock:
        cached = _known_cache.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    try:
        known = KnownHosts(paths)
    except TransportError as exc:
        exc.host = host
        raise
    with _known_hosts_lock:
        _known_cache[key] = (stamp, known)
    return known


def _fingerprint(key: paramiko.PKey) -> str:
    return key.fingerprint if hasattr(key, "fingerprint") else key.get_name()


def verify_host_key(
    cfg: sshconfig.HostConfig, key: paramiko.PKey, accept_new: bool, host: str
) -> Optional[str]:
    """Check ``key`` against known_hosts. Returns a note when a key was added.

    Raises TransportError(HOSTKEY_CHANGED) when a known name has a different
    key of the same type, TransportError(HOSTKEY_UNKNOWN) when no entry exists
    and trust on first use is off.
    """
    known = _load_known_hosts(cfg.known_hosts_files, host)
    names = _host_key_names(cfg)
    key_type = key.get_name()
    for name in names:
        entry = known.lookup(name)
        if not entry:
            continue
        if key_type in entry:
            if key in entry[key_type]:
                return None
            raise TransportError(
                HOSTKEY_CHANGED,
                f"host key for {name} CHANGED ({key_type} {_fingerprint(key)} does not match known_hosts): refused",
                host,
            )
        # known under this name, only with other key types: OpenSSH refuses too
        if any(t for t in entry.keys()):
            raise TransportError(
                HOSTKEY_CHANGED,
                f"{name} is known with key types {', '.join(sorted(entry.keys()))} but offered {key_type}: refused",
                host,
            )
    policy = cfg.strict_host_key_checking
    if accept_new or policy in ("accept-new", "no", "off"):
        target = next((p for p in cfg.known_hosts_files if "ssh_known_hosts" not in p), None)
        if target is None:
            return f"trusted {key_type} key of {names[0]} for this run (no known_hosts file to save it in)"
        with _known_hosts_lock:
            os.makedirs(os.path.dirname(target) or ".", mode=0o700, exist_ok=True)
            # never waits on a FIFO (O_NONBLOCK) or writes into a device
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as f:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise TransportError(CONFIG, f"known_hosts file {target}: not a regular file: refused", host)
                f.write(f"{names[0]} {key_type} {key.get_base64()}\n")
        return f"added {key_type} key of {names[0]} to {target} (trust on first use)"
    raise TransportError(
        HOSTKEY_UNKNOWN,
        f"host key of {names[0]} is not in known_hosts ({key_type} {_fingerprint(key)}): refused",
        host,
    )


class _ReadAhead:
    """A connected socket whose reads take what the kernel holds, up to 64 KiB, and hand it out as asked.

    paramiko reads each packet in two calls (its first block, then the rest), each a ``poll`` and a
    ``recv`` on a socket with a timeout: some four system calls per packet, for a node's output that comes in
    a hundred packets and more. Here one ``recv`` serves both, and the packets that came together. Everything
    else is the socket's own."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._held = b""

    def recv(self, n: int) -> bytes:
        if not self._held:
            self._held = self._sock.recv(max(n, 65536))  # socket.timeout and EOF (b"") as the socket gives them
            if not self._held:
                return b""
        out, self._held = self._held[:n], self._held[n:]
        return out

    def __getattr__(self, name: str):
        return getattr(self._sock, name)


class _Transport(paramiko.Transport):
    """paramiko's client transport, its reading thread woken once a second rather than ten times.

    The thread wakes on every packet; between packets it only looks whether the transport was closed
    (``Transport.close`` closes the socket itself, so that look is the end of a thread nobody waits for) and
    whether a handshake ran out of time (the timeouts this module sets are whole seconds). Ten wake-ups a
    second per connection were most of the head's CPU while connections wait on their nodes' logins, with
    64 of them open at once."""

    _active_check_timeout = 1.0


# Ciphers offered first: the AEAD ones (AES-GCM, one pass of C code per packet), ahead of CTR with a separate
# MAC, whose tag paramiko compares byte by byte in Python. The rest of paramiko's own list follows, in its
# order. paramiko has no chacha20-poly1305.
_CIPHERS_FIRST = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
# Key exchanges: the hybrid post-quantum ones paramiko has (ML-KEM with X25519, in C), then X25519, then the
# rest in paramiko's order (NIST curves, then finite-field Diffie-Hellman: modular exponentiation of 2048
# bits and more, the costliest).
_KEX_FIRST = ("mlkem768x25519-sha256", "curve25519-sha256", "curve25519-sha256@libssh.org")


def _first(offered: Sequence[str], first: Sequence[str]) -> Tuple[str, ...]:
    return tuple([a for a in first if a in offered] + [a for a in offered if a not in first])


def _prefer_fast_algorithms(t: paramiko.Transport) -> None:
    """The cheapest ciphers and key exchanges first among those paramiko offers (nothing added, nothing
    dropped: what the server supports still decides)."""
    opts = t.get_security_options()
    try:
        opts.ciphers = _first(opts.ciphers, _CIPHERS_FIRST)
        opts.kex = _first(opts.kex, _KEX_FIRST)
    except (ValueError, TypeError):  # an older paramiko that knows none of them: its own order stands
        pass


def _prefer_known_key_types(t: paramiko.Transport, cfg: sshconfig.HostConfig) -> None:
    """Negotiate a host key type known_hosts has for this host, as OpenSSH does.

    Without this, a host known by its ECDSA key that also offers Ed25519 would
    look like a changed key.
    """
    known = _load_known_hosts(cfg.known_hosts_files, cfg.alias)
    types: List[str] = []
    for name in _host_key_names(cfg):
        entry = known.lookup(name)
        if entry:
            types.extend(k for k in entry.keys() if k not in types)
    if not types:
        return
    opts = t.get_security_options()
    preferred = [k for k in opts.key_types if k in types or (k.startswith("rsa-sha2") and "ssh-rsa" in types)]
    if preferred:
        opts.key_types = preferred


# Names looked up at once. A lookup costs the admin host nothing but a thread, while a DNS server that
# drops some of many queries makes each of them wait out the resolver's own retries (5 s and more): with the
# lookups inside the connections, --fanout at a time, 2,000 names that do not resolve took 213 s.
RESOLVE_CONCURRENCY = 1024


def resolve_names(names: Sequence[str], timeout: float,
                  concurrency: int = RESOLVE_CONCURRENCY) -> Dict[str, object]:
    """``{name: [(family, type, proto, address)] or the reason it did not resolve}`` for every name, looked up
    ``concurrency`` at a time; each lookup is given ``timeout`` seconds from its own start and then left
    behind (``getaddrinfo`` cannot be interrupted; its thread ends on its own)."""
    out: Dict[str, object] = {}
    cond = threading.Condition()
    inflight: Dict[str, float] = {}

    def look(name: str) -> None:
        try:
            infos = socket.getaddrinfo(name, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
            value: object = [(f, t, p, a[0] if f == socket.AF_INET else a[:1] + a[2:]) for f, t, p, _, a in infos]
        except socket.gaierror as exc:
            value = f"name {name!r} does not resolve ({exc.strerror})"
        except (OSError, UnicodeError) as exc:
            value = f"name {name!r} cannot be looked up ({exc})"
        with cond:
            if name in inflight:
                del inflight[name]
                out[name] = value
                cond.notify_all()

    pending = list(dict.fromkeys(names))
    pending.reverse()
    with cond:
        while pending or inflight:
            now = time.monotonic()
            for name, started in list(inflight.items()):
                if now - started >= timeout:
                    del inflight[name]
                    out[name] = f"name {name!r} did not resolve within {timeout:g} s (no answer from DNS)"
            while pending and len(inflight) < concurrency:
                name = pending.pop()
                inflight[name] = now
                threading.Thread(target=look, args=(name,), name="nccldiag-resolve", daemon=True).start()
            if inflight:
                cond.wait(max(0.01, min(inflight.values()) + timeout - time.monotonic()))
    return out


def open_socket(hostname: str, port: int, timeout: float, host: str,
                resolved: Optional[Dict[str, object]] = None) -> socket.socket:
    """A connected TCP socket, or a classified TransportError. The name is looked up within ``timeout``,
    unless ``resolved`` (from :func:`resolve_names`) holds it already."""
    found = resolved.get(hostname) if resolved is not None else None
    if found is None:
        found = resolve_names([hostname], timeout)[hostname]
    if isinstance(found, str):
        raise TransportError(RESOLVE, found, host)
    infos = []
    for family, stype, proto, addr in found:  # type: ignore[union-attr]
        infos.append((family, stype, proto, "", (addr, port) if family == socket.AF_INET else
                      (addr[0], port) + tuple(addr[1:])))
    deadline = time.monotonic() + timeout
    last: Optional[TransportError] = None
    for family, stype, proto, _, addr in infos:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        sock = socket.socket(family, stype, proto)
        sock.settimeout(remaining)
        try:
            sock.connect(addr)
            sock.settimeout(None)
            return sock
        except socket.timeout:
            last = TransportError(UNREACHABLE, f"connect to {addr[0]} port {port} timed out after {timeout:g} s", host)
        except ConnectionRefusedError:
            last = TransportError(REFUSED, f"connection refused by {addr[0]} port {port} (no sshd listening)", host)
        except OSError as exc:
            if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN):
                last = TransportError(UNREACHABLE, f"{addr[0]} unreachable: {exc.strerror}", host)
            else:
                last = TransportError(UNREACHABLE, f"connect to {addr[0]} port {port}: {exc.strerror or exc}", host)
        sock.close()
    raise last or TransportError(UNREACHABLE, f"connect to {hostname} port {port} timed out", host)


def _key_from_bytes(data: bytes) -> paramiko.PKey:
    """The private key ``data`` holds, as :meth:`paramiko.PKey.from_path` reads it, from bytes already read."""
    import io

    from cryptography.hazmat.primitives import asymmetric, serialization

    try:
        loaded = serialization.load_ssh_private_key(data=data, password=None)
    except ValueError:
        loaded = serialization.load_pem_private_key(data=data, password=None)
    if isinstance(loaded, asymmetric.rsa.RSAPrivateKey):
        cls = paramiko.RSAKey
    elif isinstance(loaded, asymmetric.ed25519.Ed25519PrivateKey):
        cls = paramiko.Ed25519Key
    elif isinstance(loaded, asymmetric.ec.EllipticCurvePrivateKey):
        cls = paramiko.ECDSAKey
    else:
        raise paramiko.SSHException(f"unsupported key type {type(loaded).__name__}")
    return cls.from_private_key(io.StringIO(data.decode("utf-8", "replace")))


_keys_lock = threading.Lock()
_keys: Dict[str, Tuple[tuple, Tuple[Optional[paramiko.PKey], Optional[str]]]] = {}


def _load_key(path: str) -> Tuple[Optional[paramiko.PKey], Optional[str]]:
    """:func:`_read_key`, once per change of the key's file or its certificate (a run of hundreds of hosts
    reads and parses each identity once)."""
    stamp = _stamp([path, path + "-cert.pub"])
    with _keys_lock:
        cached = _keys.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    got = _read_key(path)
    with _keys_lock:
        _keys[path] = (stamp, got)
    return got


def _read_key(path: str) -> Tuple[Optional[paramiko.PKey], Optional[str]]:
    """The key in ``path``, or why it cannot be used (encrypted keys are skipped: nccldiag asks no passphrase).

    The file is read once, as a regular file of at most :data:`MAX_KEY_FILE` bytes (``IdentityFile
    /dev/zero`` or a FIFO is named, never read or waited on)."""
    from nccldiag.atomic import NotRegular, TooLarge

    try:
        data = _read_ssh_file(path, MAX_KEY_FILE)
    except (NotRegular, TooLarge) as exc:
        return None, f"{exc} (skipped)"
    if data is None:
        return None, f"{path}: cannot be read (skipped)"
    try:
        key = _key_from_bytes(data)
    except paramiko.PasswordRequiredException:
        return None, f"{path} is encrypted (skipped; load it into ssh-agent)"
    except (OSError, paramiko.SSHException, ValueError, TypeError, AssertionError, IndexError) as exc:
        # paramiko raises several types for keys it cannot read (TypeError for some encrypted formats)
        text = str(exc)
        if isinstance(exc, TypeError) or "encrypt" in text.lower() or "password" in text.lower():
            return None, f"{path} is encrypted (skipped; load it into ssh-agent)"
        return None, f"{path}: {text[:200]}"
    cert = path + "-cert.pub"
    if os.path.exists(cert):
        try:
            text = _read_ssh_file(cert, MAX_KEY_FILE)
            if text:
                key.load_certificate(text.decode("ascii", "replace"))
        except (ValueError, paramiko.SSHException):
            pass
    return key, None


def _public_blob(path: str) -> Optional[bytes]:
    """The key blob of an OpenSSH ``.pub`` file, or None."""
    import base64
    import binascii

    try:
        words = (_read_ssh_file(path, MAX_KEY_FILE) or b"").split()
        return base64.b64decode(words[1], validate=True) if len(words) >= 2 else None
    except (binascii.Error, ValueError):
        return None


class _TimedAgent(paramiko.agent.AgentSSH):
    """ssh-agent over ``SSH_AUTH_SOCK`` with every read and write bounded by ``timeout``.

    paramiko's own Agent waits for ever on an agent that accepts and never
    answers; this one raises ``OSError`` (socket.timeout) instead, both when
    listing keys and when the agent signs during authentication.
    """

    def __init__(self, path: str, timeout: float):
        super().__init__()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            self._connect(sock)
        except BaseException:
            sock.close()
            raise

    def close(self) -> None:
        self._close()


def agent_keys(timeout: float) -> Tuple[Optional[_TimedAgent], Tuple[paramiko.PKey, ...], Optional[str]]:
    """``(agent, keys, problem)`` from the agent at ``SSH_AUTH_SOCK``, bounded by ``timeout``."""
    path = os.environ.get("SSH_AUTH_SOCK")
    if not path:
        return None, (), None
    try:
        agent = _TimedAgent(path, timeout)
    except socket.timeout:
        return None, (), f"ssh-agent at SSH_AUTH_SOCK did not answer within {timeout:g} s"
    except (OSError, paramiko.SSHException, EOFError, ValueError) as exc:
        return None, (), f"ssh-agent at SSH_AUTH_SOCK unusable: {str(exc)[:200]}"
    return agent, agent.get_keys(), None


class ProxyProcess(paramiko.ProxyCommand):
    """A proxy command in a session of its own, used by paramiko as its socket.

    Unlike :class:`paramiko.ProxyCommand` it takes an argv, reports the end of
    the proxy's output as end of file at once (instead of waiting for a
    timeout), keeps the proxy's stderr for the error message, and
    :meth:`close` kills the proxy with everything it started (the hops of
    ``ssh -J`` included).
    """

    def __init__(self, argv: Sequence[str]):
        self.cmd = list(argv)
        self.timeout: Optional[float] = None
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        env["SSH_ASKPASS_REQUIRE"] = "never"  # no passphrase or password dialog either
        try:
            self.process = subprocess.Popen(
                self.cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                bufsize=0,
                env=env,
                start_new_session=True,  # no controlling terminal: nothing can prompt
            )
        except OSError:
            self._stderr.close()
            raise

    def recv(self, size: int) -> bytes:
        buffer = b""
        start = time.monotonic()
        try:
            while len(buffer) < size:
                wait = None
                if self.timeout is not None:
                    wait = self.timeout - (time.monotonic() - start)
                    if wait <= 0:
                        if buffer:
                            return buffer
                        raise socket.timeout()
                r, _, _ = select.select([self.process.stdout], [], [], wait)
                if r:
                    chunk = os.read(self.process.stdout.fileno(), size - len(buffer))
                    if not chunk:  # the proxy closed its output: end of file
                        return buffer
                    buffer += chunk
            return buffer
        except (OSError, ValueError) as exc:
            if isinstance(exc, socket.timeout):
                raise
            raise paramiko.ProxyCommandFailure(shlex.join(self.cmd), str(exc)) from None

    def stderr_text(self, wait: float = 0.0) -> str:
        """What the proxy wrote to stderr, after waiting up to ``wait`` s for it to exit."""
        if wait > 0:
            try:
                self.process.wait(wait)
            except subprocess.TimeoutExpired:
                pass
        try:
            self._stderr.seek(0)
            return self._stderr.read(65536).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        if self.process.stdin is None or self.process.stdin.closed:
            return  # closed already
        if self.process.poll() is None:
            kill_tree(self.process.pid)
        else:  # the proxy exited, but what it started may live on in its group
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for f in (self.process.stdin, self.process.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        try:
            self.process.wait(1)
        except subprocess.TimeoutExpired:
            pass

    def dispose(self) -> None:
        """:meth:`close`, and drop the saved stderr (paramiko may close the proxy before it is read)."""
        self.close()
        try:
            self._stderr.close()
        except OSError:
            pass

    @property
    def closed(self) -> bool:
        return self.process.poll() is not None


def split_jump_hop(hop: str, host: str = "") -> Tuple[Optional[str], str, Optional[int]]:
    """``(user, host, port)`` of one ProxyJump hop, as OpenSSH reads it.

    A hop is ``[user@]host[:port]`` or ``ssh://[user@]host[:port]``; the host may be bracketed
    (``[10.0.0.5]``, ``[fe80::1%eth0]:2222``), as an IPv6 address with a port must be and as
    ``ssh -G`` of current OpenSSH prints every address (``proxyjump [10.0.0.5]``). Older releases
    print it as written. ``user`` and ``port`` are None when the hop does not give them. A hop that
    does not parse is a CONFIG error naming it (``host`` is the node it was for).
    """
    text = hop.strip()
    uri = text[:6].lower() == "ssh://"
    if uri:
        text = text[6:].rstrip("/")
    user: Optional[str] = None
    if "@" in text:
        user, _, text = text.rpartition("@")
        if uri:
            from urllib.parse import unquote

            user = unquote(user)
    port: Optional[str] = None
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise TransportError(CONFIG, f"ProxyJump hop {hop!r}: unbalanced brackets", host)
        port = rest[1:] if rest else None
    elif text.count(":") == 1:  # an unbracketed address with several colons is IPv6 without a port
        name, _, port = text.partition(":")
    else:
        name = text
    if not name or (user is not None and not user):
        raise TransportError(CONFIG, f"ProxyJump hop {hop!r} names no host", host)
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise TransportError(CONFIG, f"ProxyJump hop {hop!r}: port {port!r} is not a port number", host)
    return user, name, int(port) if port is not None else None


def _jump_destination(hop: str, host: str = "") -> List[str]:
    """The last ProxyJump hop as ``ssh`` arguments: ``[-l user] [-p port] -- host``.

    ``ssh -J`` reads every spelling of a hop, but a plain destination reads
    neither a port nor brackets: ``ssh [10.0.0.5]`` looks up the name
    ``[10.0.0.5]``. The hop is taken apart here and its host passed bare.
    """
    user, name, port = split_jump_hop(hop, host)
    argv: List[str] = []
    if user is not None:
        argv += ["-l", user]
    if port is not None:
        argv += ["-p", str(port)]
    return argv + ["--", name]


def jump_argv(cfg: sshconfig.HostConfig, options: SSHOptions, timeout: float) -> List[str]:
    """``ssh`` in batch mode forwarding stdin/stdout to the node through its ProxyJump hops."""
    ssh = shutil.which("ssh")
    if ssh is None:
        raise TransportError(PROXY, "ProxyJump needs the OpenSSH client (ssh), which is not installed", cfg.alias)
    hops = [h.strip() for h in (cfg.proxy_jump or "").split(",") if h.strip()]
    if not hops:
        raise TransportError(PROXY, f"ProxyJump {cfg.proxy_jump!r} names no host", cfg.alias)
    argv = [ssh]
    if options.config_path:
        argv += ["-F", options.config_path]
    argv += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, math.ceil(timeout) - 1)}"]
    if options.accept_new_host_keys:
        argv += ["-o", "StrictHostKeyChecking=accept-new"]
    if len(hops) > 1:
        argv += ["-J", ",".join(hops[:-1])]
    target = f"[{cfg.hostname}]:{cfg.port}" if ":" in cfg.hostname else f"{cfg.hostname}:{cfg.port}"
    argv += ["-W", target, *_jump_destination(hops[-1], cfg.alias)]
    return argv


def _close(chan) -> None:
    """Close a channel whose connection may be gone already (closing then raises EOFError or OSError)."""
    try:
        chan.close()
    except (OSError, EOFError, paramiko.SSHException):
        pass


def _dropped_before_banner(exc: TransportError) -> bool:
    """sshd shed the connection before its banner (MaxStartups): worth a retry.

    Only a connection closed or reset before the banner is; an sshd that
    accepted the connection and then said nothing until the deadline is not
    shedding load, and a retry would only wait as long again. Through a jump
    host, OpenSSH reports the jump host's sshd dropping it as
    ``kex_exchange_identification: ...``.
    """
    if exc.kind == BANNER:
        return bool(getattr(exc, "dropped", False))
    return exc.kind == PROXY and "kex_exchange_identification" in exc.message


def _dropped(kind: str, message: str, host: str) -> TransportError:
    exc = TransportError(kind, message, host)
    exc.dropped = True  # type: ignore[attr-defined]
    return exc


_CLOSED = (EOFError, ConnectionResetError, ConnectionAbortedError, BrokenPipeError)

IDLE_WAKE = 5.0  # seconds a command's reader waits at most with nothing to read and no deadline nearer
# bytes taken from a channel at once: what a poll finds buffered (a node's whole output, often) in one copy
READ_SIZE = 1 << 20


def _last_line(text: str) -> str:
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


class LoginGate:
    """How many logins one process lets be in progress at once: all it may (``limit``) while logins are quick,
    down to ``floor`` while they queue.

    A login (the remote shell and its startup files, before the command's first output) costs the node, not
    the head. But where the nodes share a home directory whose shell start-up works under a lock (pyenv's
    rehash, conda's init), logins queue on that lock one at a time, and every login waiting for it does
    work of its own (pyenv's polls the lock ten times a second, a process each time, and gives up after 60
    s): dozens of them in flight only slow the one that holds the lock. The gate learns which case it is
    in as TCP Vegas does, from the time logins take: the quickest login of the run (``base``) is what one
    costs without a queue; each login that took more than ``QUEUED`` times that lowers the number allowed
    in flight by one, down to ``floor``, and each that took less than ``CLEAR`` times that raises it by one
    while logins wait at the gate, up to ``limit``. Logins that are slow each on its own (conda's init on
    every node) take about the same time each, and are let through ``limit`` at once."""

    QUEUED = 3.0
    CLEAR = 1.5

    def __init__(self, limit: int, floor: int = 8):
        self.limit = max(1, limit)
        self.floor = max(1, min(floor, self.limit))
        self.allowed = self.floor  # grows while logins are quick: no herd of logins at the start
        self.base: Optional[float] = None
        self._cv = threading.Condition()
        self._inside: Dict[int, float] = {}  # thread -> when its login began
        self._waiting = 0

    def __getstate__(self) -> dict:
        return {"limit": self.limit, "floor": self.floor}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["limit"], state["floor"])  # type: ignore[misc]

    def enter(self) -> None:
        """Wait for a place (the login then begins)."""
        with self._cv:
            self._waiting += 1
            try:
                while len(self._inside) >= self.allowed:
                    self._cv.wait(1.0)
            finally:
                self._waiting -= 1
            self._inside[threading.get_ident()] = time.monotonic()

    def leave(self, started: bool) -> None:
        """The login of this thread is over: ``started`` (the command's first output came, which times it),
        or not (its command ended or was stopped before). A second call is nothing."""
        with self._cv:
            began = self._inside.pop(threading.get_ident(), None)
            if began is None:
                return
            if started:
                took = max(time.monotonic() - began, 1e-3)
                if self.base is None or took < self.base:
                    self.base = took
                if took > self.QUEUED * self.base:
                    self.allowed = max(self.floor, self.allowed - 1)
                elif took < self.CLEAR * self.base and self._waiting:
                    self.allowed = min(self.limit, self.allowed + 1)
            self._cv.notify_all()


class SSHConnection:
    """One authenticated SSH connection to one host."""

    def __init__(self, name: str, options: SSHOptions, user: Optional[str] = None, port: Optional[int] = None):
        self.name = name
        self.options = options
        self.user = user
        self.port = port
        self.transport: Optional[paramiko.Transport] = None
        self.proxy: Optional[ProxyProcess] = None
        self.proxied = False  # through ProxyJump or ProxyCommand: the peer address is not the node's
        self.notes: List[str] = []
        self.config: Optional[sshconfig.HostConfig] = None

    # -- connecting ---------------------------------------------------------
    def connect(self) -> "SSHConnection":
        if self.options.configs is not None:
            cfg = self.options.configs.resolve(self.name, self.user, self.port)
        else:
            cfg = sshconfig.resolve(self.name, self.user, self.port, self.options.config_path)
        self.config = cfg
        attempts = 1 + max(0, self.options.retries)
        for attempt in range(attempts):
            try:
                self._connect_once(cfg)
                return self
            except TransportError as exc:
                self.close()
                if not _dropped_before_banner(exc) or attempt == attempts - 1:
                    raise
                time.sleep(0.3 * (2**attempt))  # back off: sshd is shedding new connections
        return self  # pragma: no cover

    def _sock(self, cfg: sshconfig.HostConfig):
        timeout = self._timeout(cfg)
        if cfg.proxy_jump or cfg.proxy_command:
            self.proxied = True
            if cfg.proxy_jump:
                argv = jump_argv(cfg, self.options, timeout)
            else:
                argv = ["/bin/sh", "-c", "exec " + cfg.proxy_command]  # as ssh runs it
            try:
                self.proxy = ProxyProcess(argv)
            except OSError as exc:
                raise TransportError(PROXY, f"cannot start {argv[0]}: {exc.strerror or exc}", self.name) from None
            return self.proxy
        return _ReadAhead(open_socket(cfg.hostname, cfg.port, timeout, self.name, self.options.resolved))

    def _timeout(self, cfg: sshconfig.HostConfig) -> float:
        return min(self.options.connect_timeout, cfg.connect_timeout or self.options.connect_timeout)

    def _proxy_error(self, cfg: sshconfig.HostConfig, what: str) -> TransportError:
        """The failure of a proxied connection before its handshake, blamed on the proxy."""
        assert self.proxy is not None
        said = _last_line(self.proxy.stderr_text(wait=0.5))
        rc = self.proxy.process.poll()
        target = f"{cfg.hostname}:{cfg.port}"
        if cfg.proxy_jump:
            via = f"jump host {cfg.proxy_jump}"
        else:
            via = f"ProxyCommand {cfg.proxy_command!r}"
        if said:
            detail = said
        elif rc is not None:
            detail = f"{what} (the proxy exited with status {rc})"
        else:
            detail = what
        return TransportError(PROXY, f"{via} did not get through to {target}: {detail}", self.name)

    def _connect_once(self, cfg: sshconfig.HostConfig) -> None:
        sock = self._sock(cfg)
        timeout = self._timeout(cfg) if self.proxied else self.options.connect_timeout
        t = _Transport(sock)
        self.transport = t
        t.banner_timeout = timeout
        t.handshake_timeout = timeout
        t.auth_timeout = self.options.auth_timeout
        _prefer_fast_algorithms(t)
        _prefer_known_key_types(t, cfg)
        try:
            try:
                t.start_client(timeout=timeout)
            except paramiko.SSHException as exc:
                text = str(exc)
                if "banner" in text.lower():
                    if isinstance(exc.__context__, _CLOSED):
                        raise _dropped(BANNER, f"sshd closed the connection before its banner ({text})",
                                       self.name) from None
                    raise TransportError(BANNER, f"no SSH banner within {timeout:g} s ({text}): sshd accepted "
                                                 "the connection but stalled", self.name, STALLED_FIX) from None
                raise TransportError(PROTOCOL, f"SSH negotiation failed: {text}", self.name) from None
            except (EOFError, OSError) as exc:
                raise _dropped(BANNER, f"connection closed during SSH negotiation ({exc or type(exc).__name__})",
                               self.name) from None
            if not (t.is_active() and getattr(t, "initial_kex_done", True)):
                raise TransportError(
                    BANNER,
                    f"no SSH handshake within {timeout:g} s (sshd accepted the connection but stalled)",
                    self.name,
                    STALLED_FIX,
                )
        except TransportError as exc:
            if self.proxy is not None:
                raise self._proxy_error(cfg, exc.message) from None
            raise
        note = verify_host_key(cfg, t.get_remote_server_key(), self.options.accept_new_host_keys, self.name)
        if note:
            self.notes.append(note)
        self._auth(cfg, t)

    def _auth(self, cfg: sshconfig.HostConfig, t: paramiko.Transport) -> None:
        tried: List[str] = []
        problems: List[str] = []
        paths = list(self.options.identity_files) + list(cfg.identity_files)
        explicit = bool(paths)
        if not explicit:
            paths = sshconfig.default_identities()
        seen = set()
        for path in paths:
            if path in seen or not os.path.exists(path):
                continue
            seen.add(path)
            key, problem = _load_key(path)
            if key is None:
                problems.append(problem or path)
                continue
            tried.append(os.path.basename(path))
            if self._try_key(t, cfg.user, key):
                return
        # IdentitiesOnly (as OpenSSH): the agent may only offer the configured
        # identities, matched by their public halves (how an encrypted
        # IdentityFile whose key the agent holds still logs in)
        allowed = None
        if cfg.identities_only:
            allowed = {b for b in (_public_blob(p + ".pub") for p in seen) if b}
        if self.options.use_agent and (allowed is None or allowed):
            agent, keys, problem = agent_keys(min(10.0, max(1.0, self.options.connect_timeout)))
            if problem:
                problems.append(problem)
            try:
                for key in keys:
                    if allowed is not None and key.asbytes() not in allowed:
                        continue
                    tried.append(f"agent:{key.get_name()}")
                    if self._try_key(t, cfg.user, key):
                        return
            finally:
                if agent is not None:
                    agent.close()
        detail = f"tried {', '.join(tried)}" if tried else "no usable key (none in ~/.ssh, IdentityFile or the agent)"
        if problems:
            detail += "; " + "; ".join(problems)
        raise TransportError(AUTH, f"authentication failed for {cfg.user}@{cfg.hostname}: {detail}", self.name)

    def _try_key(self, t: paramiko.Transport, user: str, key: paramiko.PKey) -> bool:
        try:
            t.auth_publickey(user, key)
        except paramiko.BadAuthenticationType as exc:
            raise TransportError(
                AUTH, f"server does not accept public keys (allowed: {', '.join(exc.allowed_types)})", self.name
            ) from None
        except paramiko.AuthenticationException:
            return False
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise TransportError(AUTH, f"authentication aborted: {exc}", self.name) from None
        return t.is_authenticated()

    # -- running ------------------------------------------------------------
    def run(
        self,
        command: str,
        timeout: Optional[float] = None,
        stdin: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        on_line: Optional[Callable[[str], None]] = None,
        cancel: Optional[threading.Event] = None,
        idle_timeout: Optional[float] = None,
        start_marker: Optional[bytes] = None,
        start_timeout: Optional[float] = None,
        what: str = "command",
        poll: Optional[float] = None,
        gate: Optional["LoginGate"] = None,
    ) -> ExecResult:
        """Run ``command`` (already quoted for the remote shell) with a deadline.

        ``on_line`` receives each complete stdout line as it arrives (results
        are handled before the command ends); ``cancel`` stops waiting early.
        With ``idle_timeout``, the command is also stopped once it has sent
        nothing for that long; ``timeout`` stays the bound on the whole.

        With ``start_marker`` (bytes the command prints first), the time until
        the marker arrives is the login's: the remote user's shell and its
        startup files (a ``~/.bashrc`` queued on a shared home's lock) run
        before the command does. That time is not the command's silence:
        ``timeout`` and ``idle_timeout`` count from the marker, and the login
        is bounded by ``start_timeout`` (``timeout`` when None). A command
        stopped before its marker came is reported as a slow login, or as no
        answer when nothing at all came back; one stopped after it, as stalled.
        ``what`` names the command in those messages.

        With ``poll``, what came is read every ``poll`` seconds, and at once when the command ends, rather than
        as each packet comes: a node's output comes in as many packets as it has writes (a hundred and more for
        a collection script), and waking for each of them was much of the head's CPU per node. The times of the
        marker and of the last output are then known to within ``poll`` seconds, always late: a silence is
        never measured longer than it was.
        """
        timeout = self.options.command_timeout if timeout is None else timeout
        if gate is not None:
            gate.enter()
        try:
            return self._run(command, timeout, stdin, env, on_line, cancel, idle_timeout, start_marker,
                             start_timeout, what, poll, gate)
        finally:
            if gate is not None:
                gate.leave(False)

    def _run(self, command, timeout, stdin, env, on_line, cancel, idle_timeout, start_marker, start_timeout,
             what, poll, gate) -> ExecResult:
        start = time.monotonic()
        if env:
            command = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + command
        if self.transport is None or not self.transport.is_active():
            err = TransportError(PROTOCOL, "connection is closed", self.name)
            return ExecResult(self.name, None, error=err)
        try:
            chan = self.transport.open_session(timeout=min(timeout, self.options.connect_timeout))
            chan.exec_command(command)
            if stdin is not None:
                chan.sendall(stdin.encode())
            chan.shutdown_write()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            err = TransportError(PROTOCOL, f"could not start the command: {exc}", self.name)
            return ExecResult(self.name, None, error=err, elapsed=time.monotonic() - start)
        out, err_chunks = [], []
        deadline = start + (timeout if start_marker is None or start_timeout is None else start_timeout)
        last = start  # when the command last sent anything
        timed_out = idle = False
        pending = b""
        received = 0
        started: Optional[float] = None if start_marker is not None else 0.0
        tail = b""  # the end of what came before the marker, for a marker split between chunks
        try:
            while True:
                while chan.recv_ready() and received <= self.options.max_output:
                    chunk = chan.recv(READ_SIZE)
                    received += len(chunk)
                    last = time.monotonic()
                    out.append(chunk)
                    if started is None:
                        window = tail + chunk
                        if start_marker in window:
                            started = last - start
                            deadline = last + timeout  # the command's own bound starts with it
                            if gate is not None:
                                gate.leave(True)
                        tail = window[-len(start_marker):]
                    if on_line is not None:
                        pending += chunk
                        *lines, pending = pending.split(b"\n")
                        for line in lines:
                            on_line(line.decode("utf-8", "replace"))
                while chan.recv_stderr_ready() and received <= self.options.max_output:
                    chunk = chan.recv_stderr(65536)
                    received += len(chunk)
                    last = time.monotonic()
                    err_chunks.append(chunk)
                if received > self.options.max_output:
                    break
                # sshd sends the exit status as soon as the command has exited, ahead of output still queued
                # behind the channel's window: the output is whole only at EOF (or once the channel is closed)
                if (chan.exit_status_ready() and (chan.eof_received or chan.closed)
                        and not chan.recv_ready() and not chan.recv_stderr_ready()):
                    break
                now = time.monotonic()
                remaining = deadline - now
                if idle_timeout is not None and started is not None and now - last >= idle_timeout:
                    timed_out = idle = True
                    break
                if remaining <= 0 or (cancel is not None and cancel.is_set()):
                    timed_out = True
                    break
                # the channel's pipe wakes this wait on output (stdout or stderr), EOF and close; the bound is
                # the next deadline (the whole, the silence), a cancel looked at twice a second
                wait = min(remaining, 0.5 if cancel is not None else IDLE_WAKE)
                if idle_timeout is not None and started is not None:
                    wait = min(wait, max(0.01, idle_timeout - (now - last)))
                if chan.eof_received or (poll is not None and started is not None and not chan.status_event.is_set()):
                    # output is over, the exit status is still to come: the channel's pipe stays readable
                    # after EOF, so wait on the status instead. Polled, the same until the status comes (it
                    # is also set when the channel closes or the connection drops); after it, the rest of
                    # the output, up to its EOF, is waited for on the pipe
                    chan.status_event.wait(wait if poll is None else min(wait, poll))
                else:
                    select.select([chan], [], [], wait)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            _close(chan)
            err = TransportError(PROTOCOL, f"connection lost while running the command: {exc}", self.name)
            return ExecResult(self.name, None, b"".join(out).decode("utf-8", "replace"), "", time.monotonic() - start, err)
        if received > self.options.max_output:
            _close(chan)
            cap = self.options.max_output
            stdout = b"".join(out)[:cap].decode("utf-8", "replace")
            stderr = b"".join(err_chunks)[:65536].decode("utf-8", "replace")
            err = TransportError(OVERSIZE, f"output cut at {cap // (1024 * 1024)} MiB: the node sent more", self.name)
            return ExecResult(self.name, None, stdout, stderr, time.monotonic() - start, err)
        if on_line is not None and pending:
            on_line(pending.decode("utf-8", "replace"))
        stdout = b"".join(out).decode("utf-8", "replace")
        del out
        stderr = b"".join(err_chunks).decode("utf-8", "replace")
        said = bool(received)
        if start_marker is None:
            started = None
        if timed_out:
            _close(chan)
            if cancel is not None and cancel.is_set():
                why = f"{what} cancelled"
            elif start_marker is not None and started is None:
                bound = timeout if start_timeout is None else start_timeout
                if said:
                    last_said = _last_line(stderr) or _last_line(stdout)
                    why = (f"login slow: the login did not start the {what} within {bound:g} s "
                           f"(its last words: {last_said[:200]!r})")
                else:
                    why = f"no answer: the login sent nothing and did not start the {what} within {bound:g} s"
            elif start_marker is not None and idle:
                why = f"{what} stalled: nothing sent for {idle_timeout:g} s after it started"
            elif idle:
                why = f"{what} timed out: nothing sent for {idle_timeout:g} s"
            else:
                why = f"{what} timed out after {timeout:g} s"
            err = TransportError(COMMAND_TIMEOUT, why, self.name)
            return ExecResult(self.name, None, stdout, stderr, time.monotonic() - start, err, started, said)
        rc = chan.recv_exit_status()
        _close(chan)
        if rc == -1 and (self.transport is None or not self.transport.is_active()):
            # the channel closed with no exit status because the connection itself went (sshd killed, the node
            # or the network gone): no answer of the command's, whatever it printed
            err = TransportError(PROTOCOL, f"connection lost while running the {what}: no exit status came", self.name)
            return ExecResult(self.name, None, stdout, stderr, time.monotonic() - start, err, started, said)
        return ExecResult(self.name, rc, stdout, stderr, time.monotonic() - start, None, started, said)

    def sftp(self) -> paramiko.SFTPClient:
        assert self.transport is not None
        return paramiko.SFTPClient.from_transport(self.transport)

    def close(self) -> None:
        if self.transport is not None:
            try:
                self.transport.close()
            except Exception:  # closing a half-open transport may raise anything
                pass
            self.transport = None
        if self.proxy is not None:
            self.proxy.dispose()
            self.proxy = None

    def __enter__(self) -> "SSHConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
