"""Every classified SSH failure, against a real SSH server on loopback."""
import socket
import time

import paramiko
import pytest

from nccldiag.transport import base
from nccldiag.transport.ssh import SSHConnection, SSHOptions
from tests.unit.sshserver import SSHServer


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    client = paramiko.Ed25519Key.from_private_key_file if False else None
    host_key = paramiko.ECDSAKey.generate()
    other_host_key = paramiko.ECDSAKey.generate()
    client_key = paramiko.ECDSAKey.generate()
    wrong_key = paramiko.ECDSAKey.generate()
    client_key.write_private_key_file(str(d / "id_client"))
    wrong_key.write_private_key_file(str(d / "id_wrong"))
    return {"dir": d, "host": host_key, "other_host": other_host_key, "client": client_key, "wrong": wrong_key}


def write_config(d, port, identity, known_hosts_line=None):
    kh = d / f"known_hosts_{port}"
    kh.write_text(known_hosts_line or "")
    cfg = d / f"ssh_config_{port}"
    cfg.write_text(
        f"Host node\n  HostName 127.0.0.1\n  Port {port}\n  User tester\n  IdentityFile {identity}\n"
        f"  UserKnownHostsFile {kh}\n  GlobalKnownHostsFile /dev/null\n  IdentitiesOnly yes\n"
    )
    return str(cfg), kh


def known_line(port, key):
    return f"[127.0.0.1]:{port} {key.get_name()} {key.get_base64()}\n"


@pytest.fixture
def server(keys):
    servers = []

    def make(mode="ok"):
        s = SSHServer(keys["host"], keys["client"], mode)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


def connect(cfg, **kw):
    opts = SSHOptions(config_path=cfg, connect_timeout=kw.pop("connect_timeout", 3), use_agent=False, retries=0, **kw)
    return SSHConnection("node", opts).connect()


def test_success_runs_command_with_stdin_and_rc(keys, server):
    s = server()
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    with connect(cfg) as conn:
        r = conn.run("cat; echo err >&2; exit 3", timeout=10, stdin="hello\n")
    assert (r.rc, r.stdout, r.stderr, r.error) == (3, "hello\n", "err\n", None)


def test_refused(keys):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    cfg, _ = write_config(keys["dir"], port, keys["dir"] / "id_client")
    with pytest.raises(base.TransportError) as exc:
        connect(cfg)
    assert exc.value.kind == base.REFUSED
    assert "refused" in exc.value.message


def test_name_does_not_resolve(keys, tmp_path):
    cfg = tmp_path / "cfg"
    cfg.write_text("Host *\n  GlobalKnownHostsFile /dev/null\n")
    opts = SSHOptions(config_path=str(cfg), connect_timeout=3, use_agent=False)
    with pytest.raises(base.TransportError) as exc:
        SSHConnection("no-such-node.invalid", opts).connect()
    assert exc.value.kind == base.RESOLVE


def test_unknown_host_key_refused_by_default_then_accepted_on_request(keys, server):
    s = server()
    cfg, kh = write_config(keys["dir"], s.port, keys["dir"] / "id_client")
    with pytest.raises(base.TransportError) as exc:
        connect(cfg)
    assert exc.value.kind == base.HOSTKEY_UNKNOWN
    assert kh.read_text() == ""
    with connect(cfg, accept_new_host_keys=True) as conn:
        assert conn.run("true", timeout=5).rc == 0
        assert any("trust on first use" in n for n in conn.notes)
    assert keys["host"].get_base64() in kh.read_text()
    with connect(cfg) as conn:  # now known: no flag needed
        assert conn.run("true", timeout=5).rc == 0


def test_changed_host_key_always_refused(keys, server):
    s = server()
    cfg, kh = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["other_host"]))
    for accept in (False, True):
        with pytest.raises(base.TransportError) as exc:
            connect(cfg, accept_new_host_keys=accept)
        assert exc.value.kind == base.HOSTKEY_CHANGED
        assert "CHANGED" in exc.value.message
    assert keys["host"].get_base64() not in kh.read_text()


def test_auth_failed_names_keys_tried_not_their_content(keys, server):
    s = server()
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_wrong", known_line(s.port, keys["host"]))
    with pytest.raises(base.TransportError) as exc:
        connect(cfg)
    assert exc.value.kind == base.AUTH
    assert "id_wrong" in exc.value.message
    assert keys["wrong"].get_base64() not in exc.value.message


def test_connection_dropped_before_banner(keys, server):
    s = server("drop")
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client")
    with pytest.raises(base.TransportError) as exc:
        connect(cfg)
    assert exc.value.kind == base.BANNER


def test_silent_server_bounded_by_connect_timeout(keys, server):
    s = server("silent")
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client")
    t0 = time.monotonic()
    with pytest.raises(base.TransportError) as exc:
        connect(cfg, connect_timeout=1)
    assert exc.value.kind == base.BANNER
    assert time.monotonic() - t0 < 5


def test_command_timeout_is_bounded(keys, server):
    s = server()
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    with connect(cfg) as conn:
        t0 = time.monotonic()
        r = conn.run("echo started; sleep 20", timeout=1)
    assert r.error is not None and r.error.kind == base.COMMAND_TIMEOUT
    assert time.monotonic() - t0 < 4


def test_every_kind_has_a_fix():
    kinds = [v for k, v in vars(base).items() if k.isupper() and isinstance(v, str) and k != "FIXES"]
    assert kinds and all(base.FIXES.get(k) for k in kinds)
