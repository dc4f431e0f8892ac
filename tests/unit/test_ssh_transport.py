"""Every classified SSH failure, against a real SSH server on loopback."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import paramiko
import psutil
import pytest

from nccldiag.transport import base, ssh, sshconfig
from nccldiag.transport.ssh import SSHConnection, SSHOptions, jump_argv
from tests.unit.sshserver import SSHServer


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
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


def test_output_read_by_polling_is_whole_and_its_silence_still_bounded(keys, server):
    s = server()
    s.login = "true"  # the server streams the command's output as it comes
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    with connect(cfg) as conn:
        r = conn.run("for i in 1 2 3 4 5 6; do echo line$i; sleep 0.2; done; echo err >&2; exit 4", timeout=20,
                     poll=1.0)
        assert (r.rc, r.stdout, r.stderr, r.error) == (4, "".join(f"line{i}\n" for i in range(1, 7)), "err\n", None)
        r = conn.run("echo begin; exec sleep 30", timeout=20, idle_timeout=2, poll=1.0)
    assert r.error is not None and r.error.kind == base.COMMAND_TIMEOUT and "nothing sent for 2 s" in r.error.message
    assert r.stdout == "begin\n"


def test_aead_ciphers_come_first_and_the_host_key_is_still_verified(keys, server):
    s = server()
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    with connect(cfg) as conn:
        assert conn.transport.local_cipher == "aes128-gcm@openssh.com"
        assert conn.transport.remote_cipher == "aes128-gcm@openssh.com"
        assert conn.transport.host_key_type == keys["host"].get_name()
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["other_host"]))
    with pytest.raises(base.TransportError) as exc:
        connect(cfg)
    assert exc.value.kind == base.HOSTKEY_CHANGED


def test_a_key_is_read_once_per_change_of_its_file(keys, tmp_path):
    path = tmp_path / "id_test"
    keys["client"].write_private_key_file(str(path))
    first, _ = ssh._load_key(str(path))
    assert first == keys["client"] and ssh._load_key(str(path))[0] is first
    before = os.stat(path).st_mtime_ns
    keys["wrong"].write_private_key_file(str(path))
    # written again within the same clock tick, the file could keep its time stamp: set one a second later
    os.utime(path, ns=(before + 10**9, before + 10**9))
    assert ssh._load_key(str(path))[0] == keys["wrong"]


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


def test_a_connection_lost_mid_command_is_an_error_not_an_exit_status(keys, server):
    """The server drops the connection after part of the output, with no exit status: the run is a protocol
    error (what came is kept), never an exit status of -1 that reads as the command's own failure."""
    s = server("cut")
    s.cut_at = 3
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    with connect(cfg) as conn:
        r = conn.run("echo partial-output", timeout=10)
    assert r.rc is None and r.error is not None and r.error.kind == base.PROTOCOL, r
    assert "connection lost" in r.error.message and r.stdout == "par"


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


def test_only_a_connection_dropped_before_the_banner_is_tried_again(keys, server):
    """MaxStartups drops a connection: worth another try. A silent sshd is not shedding load: trying it again
    only waited as long again (by default 3 attempts x 10 s)."""
    for mode, attempts in (("drop", 3), ("silent", 1)):
        s = server(mode)
        cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client")
        opts = SSHOptions(config_path=cfg, connect_timeout=1, use_agent=False, retries=2)
        with pytest.raises(base.TransportError) as exc:
            SSHConnection("node", opts).connect()
        assert exc.value.kind == base.BANNER
        assert s.accepted == attempts, (mode, s.accepted)
    assert "stalled" in exc.value.message and "closed" not in exc.value.message


SILENT_DNS = """
import json, os, socket, subprocess, sys, threading, time
dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dns.bind(("127.0.0.1", 53))  # a DNS server that reads every query and answers none
threading.Thread(target=lambda: [dns.recvfrom(4096) for _ in iter(int, 1)], daemon=True).start()
t0 = time.monotonic()
r = subprocess.run([sys.executable, "-m", "nccldiag", *sys.argv[1:]], capture_output=True, text=True, timeout=300)
print(json.dumps({"rc": r.returncode, "elapsed": time.monotonic() - t0, "stderr": r.stderr[-2000:]}))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"),
                    reason="needs root, unshare and ip for a private network and resolv.conf")
def test_names_are_looked_up_at_once_each_within_the_connect_timeout(tmp_path):
    """A DNS server that never answers (a real resolver, in a network namespace of its own whose resolv.conf
    names a server that reads and says nothing): 200 names cost one connect timeout, not one resolver timeout
    (10 s) per --fanout hosts, and each says why."""
    (tmp_path / "resolv.conf").write_text("nameserver 127.0.0.1\n")
    (tmp_path / "dns.py").write_text(SILENT_DNS)
    out = tmp_path / "r.json"
    inner = (f"ip link set lo up && mount --bind {tmp_path / 'resolv.conf'} /etc/resolv.conf && "
             f"exec {sys.executable} {tmp_path / 'dns.py'} check -w 'nosuch[1-200]' --only system --mesh none "
             f"--connect-timeout 1 --json {out}")
    r = subprocess.run(["unshare", "-mn", "sh", "-c", inner], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    res = json.loads(r.stdout.splitlines()[-1])
    assert res["rc"] == 3, (r.stderr, res)
    nodes = json.loads(out.read_text())["nodes"]
    assert len(nodes) == 200
    for n in nodes:
        f = next(f for f in n["findings"] if f["area"] == "ssh")
        assert f["check"] == "ssh.resolve" and f"'{n['host']}' did not resolve within 1 s" in f["message"], f
    assert res["elapsed"] < 30, res  # before: 4 rounds of 64 lookups, each waiting the resolver's 10 s


def test_command_timeout_is_bounded(keys, server):
    s = server()
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    with connect(cfg) as conn:
        t0 = time.monotonic()
        r = conn.run("echo started; sleep 20", timeout=1)
    assert r.error is not None and r.error.kind == base.COMMAND_TIMEOUT
    assert time.monotonic() - t0 < 4


def test_every_kind_has_a_fix():
    kinds = [v for k, v in vars(base).items() if k.isupper() and isinstance(v, str) and k != "FIXES" and not k.endswith("_FIX")]
    assert kinds and all(base.FIXES.get(k) for k in kinds)


# --- proxies ---------------------------------------------------------------------------------

RELAY = Path(__file__).with_name("relay.py")


def proxy_config(d, name, port, identity, known, extra):
    kh = d / f"known_hosts_{name}"
    kh.write_text(known)
    cfg = d / f"ssh_config_{name}"
    cfg.write_text(
        f"Host node\n  HostName 127.0.0.1\n  Port {port}\n  User tester\n  IdentityFile {identity}\n"
        f"  UserKnownHostsFile {kh}\n  GlobalKnownHostsFile /dev/null\n  IdentitiesOnly yes\n{extra}"
    )
    return str(cfg)


def test_proxy_command_tokens_are_expanded_and_the_proxy_ends_with_the_connection(keys, server, tmp_path):
    s = server()
    seen = tmp_path / "seen"
    proxy = f"/bin/sh -c 'echo %h:%p:%r:%n:%% > {seen}; exec {sys.executable} {RELAY} %h %p'"
    cfg = proxy_config(keys["dir"], "pc", s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]),
                       f"  ProxyCommand {proxy}\n")
    conn = connect(cfg)
    try:
        assert conn.proxied
        r = conn.run("echo through")
        assert (r.rc, r.stdout) == (0, "through\n")
        pid = conn.proxy.process.pid
    finally:
        conn.close()
    assert seen.read_text() == f"127.0.0.1:{s.port}:tester:node:%\n"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_proxy_command_with_an_unknown_token_is_refused(keys, tmp_path):
    cfg = proxy_config(keys["dir"], "badtoken", 1, keys["dir"] / "id_client", "", "  ProxyCommand nc %h %C\n")
    with pytest.raises(base.TransportError) as exc:
        connect(cfg)
    assert exc.value.kind == base.CONFIG and "%C" in exc.value.message


def test_expand_proxy_command():
    cfg = sshconfig.HostConfig(alias="n1", hostname="10.0.0.1", port=2222, user="root")
    assert sshconfig.expand_proxy_command("x %h %p %r %n %%h 100%%", cfg) == "x 10.0.0.1 2222 root n1 %h 100%"
    for bad in ("nc %h %d", "nc %h %"):
        with pytest.raises(base.TransportError):
            sshconfig.expand_proxy_command(bad, cfg)


def test_jump_argv_hands_the_hops_to_openssh():
    cfg = sshconfig.HostConfig(alias="n3", hostname="10.0.0.3", port=22, proxy_jump="j1,admin@j2:2222")
    argv = jump_argv(cfg, SSHOptions(config_path="/tmp/cfg"), timeout=5)
    assert argv[1:] == ["-F", "/tmp/cfg", "-o", "BatchMode=yes", "-o", "ConnectTimeout=4",
                        "-J", "j1", "-W", "10.0.0.3:22", "-l", "admin", "-p", "2222", "--", "j2"]
    cfg = sshconfig.HostConfig(alias="n", hostname="fe80::1", port=22, proxy_jump="ssh://j1:22")
    argv = jump_argv(cfg, SSHOptions(), timeout=1)
    assert "-J" not in argv and argv[-6:] == ["-W", "[fe80::1]:22", "-p", "22", "--", "j1"]


# One ProxyJump hop as ssh -G prints it: current OpenSSH (9.2p1-2+deb12u10, 10.x) brackets an address,
# older releases print the hop as written. Both spellings of each hop, and what ssh is given for it.
HOPS = [
    # (as written / old ssh -G,   as current ssh -G prints it,   (user, host, port))
    ("10.0.0.5", "[10.0.0.5]", (None, "10.0.0.5", None)),
    ("10.0.0.5:2222", "[10.0.0.5]:2222", (None, "10.0.0.5", 2222)),
    ("admin@10.0.0.5", "admin@[10.0.0.5]", ("admin", "10.0.0.5", None)),
    ("admin@10.0.0.5:22", "admin@[10.0.0.5]:22", ("admin", "10.0.0.5", 22)),
    ("fe80::1", "[fe80::1]", (None, "fe80::1", None)),
    ("[fe80::1]:2222", "[fe80::1]:2222", (None, "fe80::1", 2222)),
    ("u@[fe80::1%eth0]:22", "u@[fe80::1%eth0]:22", ("u", "fe80::1%eth0", 22)),
    ("bastion", "bastion", (None, "bastion", None)),
    ("user@bastion:2222", "user@bastion:2222", ("user", "bastion", 2222)),
    ("ssh://u@10.0.0.5:2200", "u@[10.0.0.5]:2200", ("u", "10.0.0.5", 2200)),
    ("ssh://[fe80::1]", "[fe80::1]", (None, "fe80::1", None)),
]


@pytest.mark.parametrize("written,printed,want", HOPS)
def test_a_jump_hop_is_read_in_both_spellings(written, printed, want):
    assert ssh.split_jump_hop(written) == want
    assert ssh.split_jump_hop(printed) == want
    user, host, port = want
    dest = (["-l", user] if user else []) + (["-p", str(port)] if port else []) + ["--", host]
    for hop in (written, printed):
        for chain in (hop, f"user@bastion:2222,{hop}", f"[10.0.0.7],{hop}"):
            cfg = sshconfig.HostConfig(alias="n", hostname="10.0.0.3", proxy_jump=chain)
            argv = jump_argv(cfg, SSHOptions(), timeout=5)
            assert argv[argv.index("-W") + 2:] == dest, (chain, argv)
            if "," in chain:
                assert argv[argv.index("-J") + 1] == chain.rpartition(",")[0]


@pytest.mark.parametrize("bad", ["[10.0.0.5", "[10.0.0.5]x", "host:port", "h:0", "u@", "@h", "[]:22"])
def test_a_jump_hop_that_does_not_parse_is_a_config_error_naming_it(bad):
    cfg = sshconfig.HostConfig(alias="n9", hostname="10.0.0.9", proxy_jump=f"bastion,{bad}")
    with pytest.raises(base.TransportError) as exc:
        jump_argv(cfg, SSHOptions(), timeout=5)
    assert exc.value.kind == base.CONFIG and bad in exc.value.message and exc.value.host == "n9"


def _ssh_G(argv):
    """``ssh -G`` of the installed OpenSSH for ``argv``: keyword -> value."""
    out = subprocess.run([shutil.which("ssh"), "-G", *argv], capture_output=True, text=True, timeout=30,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    return dict(l.split(" ", 1) for l in out.stdout.splitlines() if " " in l)


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")
@pytest.mark.parametrize("jump,last", [
    ("10.0.0.5", ("root", "10.0.0.5", "22")),
    ("admin@10.0.0.5:2222", ("admin", "10.0.0.5", "2222")),
    ("[fe80::1]:2200", ("root", "fe80::1", "2200")),
    ("u@[fe80::1%eth0]", ("u", "fe80::1%eth0", "22")),
    ("bastion", ("jumper", "192.0.2.1", "2022")),
    ("user@bastion:2222,10.0.0.5", ("root", "10.0.0.5", "22")),
    ("10.0.0.5,[fe80::1]:2200", ("root", "fe80::1", "2200")),
    ("10.0.0.5,admin@bastion", ("admin", "192.0.2.1", "2022")),
])
def test_proxy_jump_through_the_installed_openssh_reaches_the_last_hop(tmp_path, jump, last):
    """ssh_config read by the installed ``ssh -G`` (which brackets addresses since OpenSSH 10.3 and its
    backports), the hop nccldiag hands to ssh read back by ``ssh -G``: the host is the hop's, not a
    name with brackets in it."""
    config = tmp_path / "ssh_config"  # written for this test
    config.write_text(f"Host node\n  HostName 10.0.0.3\n  ProxyJump {jump}\n"
                      "Host bastion\n  HostName 192.0.2.1\n  Port 2022\n  User jumper\n"
                      "Host *\n  User root\n")
    cfg = sshconfig.resolve("node", config_path=str(config))
    argv = jump_argv(cfg, SSHOptions(config_path=str(config)), timeout=5)
    tail = argv[argv.index("-W") + 2:]
    hop = _ssh_G(["-F", str(config), *tail])
    assert (hop["user"], hop["hostname"], hop["port"]) == last, (cfg.proxy_jump, tail)
    if "," in jump:  # the hops before the last are ssh's to read, and it reads them
        first = argv[argv.index("-J") + 1]
        printed = _ssh_G(["-F", str(config), "-J", first, "x"])["proxyjump"]
        assert [ssh.split_jump_hop(h) for h in printed.split(",")] == [ssh.split_jump_hop(h) for h in first.split(",")]


def proxy_processes(before):
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in before]


@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")
@pytest.mark.parametrize("jump_mode", ["refused", "silent"])
def test_failing_jump_host_is_a_bounded_proxy_error(keys, server, jump_mode):
    if jump_mode == "refused":
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        jump_port = probe.getsockname()[1]
        probe.close()
    else:
        jump_port = server("silent").port
    target = server()
    cfg = proxy_config(keys["dir"], f"jump_{jump_mode}", target.port, keys["dir"] / "id_client",
                       known_line(target.port, keys["host"]),
                       f"  ProxyJump bastion\nHost bastion\n  HostName 127.0.0.1\n  Port {jump_port}\n"
                       f"  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    t0 = time.monotonic()
    with pytest.raises(base.TransportError) as exc:
        connect(cfg, connect_timeout=2)
    elapsed = time.monotonic() - t0
    assert exc.value.kind == base.PROXY, exc.value
    assert "jump host bastion" in exc.value.message
    if jump_mode == "refused":  # what ssh said about the jump host is in the message
        assert "Connection refused" in exc.value.message
    assert elapsed < 2 + 2, elapsed
    assert not [p for p in proxy_processes(before) if p.status() != psutil.STATUS_ZOMBIE]


def test_cli_never_prints_paramiko_tracebacks(keys, server, tmp_path):
    s = server("silent")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host stalled\n  HostName 127.0.0.1\n  Port {s.port}\n  UserKnownHostsFile /dev/null\n")
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": str(Path(__file__).parents[2])}
    r = subprocess.run(
        [sys.executable, "-m", "nccldiag", "check", "-w", "stalled", "--ssh-config", str(cfg), "--only", "system",
         "--mesh", "none", "--connect-timeout", "1", "--json", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env,
    )
    assert "Traceback" not in r.stderr, r.stderr
    assert "SSHException" not in r.stderr, r.stderr
    node = json.loads((tmp_path / "r.json").read_text())["nodes"][0]
    f = next(f for f in node["findings"] if f["area"] == "ssh")
    assert (f["status"], f["check"]) == ("error", "ssh.banner"), f
    assert "ssh.banner" in r.stdout


def test_a_key_trusted_on_first_use_is_said_without_verbose(keys, server, tmp_path):
    """--accept-new-host-keys saves a key nobody verified: check and collect say so on every run, not only
    with -v (it was one evidence line of an ok finding)."""
    s = server()
    cfg, kh = write_config(tmp_path, s.port, keys["dir"] / "id_client")
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "300", "PYTHONPATH": str(Path(__file__).parents[2])}
    base_args = ["-w", "node", "--ssh-config", cfg, "--only", "system", "--accept-new-host-keys"]
    r = subprocess.run([sys.executable, "-m", "nccldiag", "check", *base_args, "--mesh", "none"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert f"note: node: added {keys['host'].get_name()} key of [127.0.0.1]:{s.port} to {kh} (trust on first use)" \
        in " ".join(r.stdout.split()), r.stdout
    kh.write_text("")
    r = subprocess.run([sys.executable, "-m", "nccldiag", "collect", *base_args, "-o", str(tmp_path / "b")],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
    assert r.returncode == 0 and "nccldiag: note: node: added" in r.stderr and "trust on first use" in r.stderr, r.stderr


def test_a_node_that_sends_too_much_is_cut_off(keys, server):
    """A node whose source is /dev/zero cannot exhaust the admin host: reading stops at max_output."""
    s = server()
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    with connect(cfg, max_output=1024 * 1024) as conn:
        r = conn.run("head -c 4000000 /dev/zero", timeout=20)
    assert r.error is not None and r.error.kind == base.OVERSIZE and "1 MiB" in r.error.message
    assert len(r.stdout) == 1024 * 1024 and r.rc is None


def hostile_config(d, port, identity, known_hosts) -> str:
    cfg = d / f"ssh_config_hostile_{abs(hash((str(identity), str(known_hosts))))}"
    cfg.write_text(f"Host node\n  HostName 127.0.0.1\n  Port {port}\n  User tester\n  IdentityFile {identity}\n"
                   f"  UserKnownHostsFile {known_hosts}\n  GlobalKnownHostsFile /dev/null\n  IdentitiesOnly yes\n")
    return str(cfg)


@pytest.mark.parametrize("poll", [None, 1.0])
def test_output_queued_behind_the_exit_status_is_read_to_its_end(keys, server, monkeypatch, poll):
    # sshd sends the exit status when the command exits, ahead of output still queued behind the channel's
    # window: the server here holds the rest of the output back until the client has seen the status
    s = server("status-first")
    s.cut_at = 65536
    seen = paramiko.Channel.exit_status_ready

    def exit_status_ready(chan):
        ready = seen(chan)
        if ready:
            s.release.set()
        return ready

    monkeypatch.setattr(paramiko.Channel, "exit_status_ready", exit_status_ready)
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    with connect(cfg) as conn:
        r = conn.run("head -c 200000 /dev/zero | tr '\\0' x; exit 3", timeout=30, poll=poll)
    assert r.error is None and r.rc == 3
    assert r.stdout == "x" * 200000


def test_files_ssh_config_names_are_regular_files_read_with_a_cap(keys, server, tmp_path):
    """CONSTRUCTED: IdentityFile /dev/zero, an identity file of 2 GiB, a UserKnownHostsFile that is a FIFO and an
    ssh_config that is a FIFO. Each is named in a classified error, at once: never read without end (MemoryError)
    or waited on past every timeout."""
    s = server()
    kh = tmp_path / "known_hosts"
    kh.write_text(known_line(s.port, keys["host"]))
    big = tmp_path / "id_big"
    with open(big, "wb") as f:
        f.truncate(2 << 30)  # sparse: 2 GiB to read, no disk used
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    for identity, words in (("/dev/zero", "/dev/zero: not a regular file (a device) (skipped)"),
                            (big, f"{big}: larger than 1 MiB"), (fifo, f"{fifo}: not a regular file (a FIFO)")):
        with pytest.raises(base.TransportError) as exc:
            connect(hostile_config(tmp_path, s.port, identity, kh))
        assert exc.value.kind == base.AUTH and words in exc.value.message, exc.value
    with pytest.raises(base.TransportError) as exc:
        connect(hostile_config(tmp_path, s.port, keys["dir"] / "id_client", fifo))
    assert exc.value.kind == base.CONFIG and f"known_hosts file {fifo}: not a regular file (a FIFO)" in str(exc.value)
    assert exc.value.host == "node"
    with pytest.raises(base.TransportError) as exc:
        connect(str(fifo))
    assert exc.value.kind == base.CONFIG and f"ssh_config file {fifo}: not a regular file (a FIFO)" in str(exc.value)
    assert time.monotonic() - t0 < 30  # the bound: every step above fails at once, none waits on the FIFO
    with connect(hostile_config(tmp_path, s.port, keys["dir"] / "id_client", kh)) as conn:  # the same, sound
        assert conn.run("true", timeout=10).rc == 0


@pytest.mark.parametrize("cause", ["oversize", "dead channel"])
def test_a_collection_cut_short_judges_what_ended_and_leaves_the_rest_not_checked(keys, server, tmp_path,
                                                                                 monkeypatch, cause):
    """CONSTRUCTED node root whose /proc/cmdline (iommu's first source) is 2 MiB: the output passes the 1 MiB cap,
    or sshd dies 1 MiB into it. Before: oversize was reported as a command timeout with its fix, a dead channel
    as one too, and the cut area was judged on the part that came (ok). Now the cause is named with its own fix,
    the system area (whose sources all ended) is judged, and iommu is not checked."""
    from nccldiag import areas as registry
    from nccldiag.check import engine
    from nccldiag.collect import runner
    from nccldiag.inventory import Host

    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cmdline").write_text("quiet " * ((2 << 20) // 6))
    monkeypatch.setenv("NCCLDIAG_ROOT", str(tmp_path))  # the test sshd's shell reads this root
    s = server("cut" if cause == "dead channel" else "ok")
    s.cut_at = 1 << 20
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    ssh_opts = SSHOptions(config_path=cfg, connect_timeout=3, use_agent=False, retries=0,
                          max_output=(1 << 20) if cause == "oversize" else 32 << 20)
    areas = registry.select(["iommu"], [])
    opts = runner.CollectOptions(ssh=ssh_opts, mesh="none")
    raw = runner.collect_host(Host("node"), runner.script_for(areas, mark=opts.mark), opts)
    nr = engine.analyze_node(raw, areas)
    by_area = {a: [f for f in nr.findings if f.area == a] for a in ("ssh", "system", "iommu")}
    (how,) = by_area["ssh"]
    want = base.OVERSIZE if cause == "oversize" else base.PROTOCOL
    assert (how.check, how.status.value, how.fix) == (f"ssh.{want}", "error", base.FIXES[want]), how
    assert by_area["system"] and not [f for f in by_area["system"] if f.check.endswith("not_checked")]
    (cut,) = by_area["iommu"]
    assert (cut.check, cut.status.value) == ("iommu.not_checked", "error") and "proc_cmdline" in cut.message, cut
    assert cut.fix == base.FIXES[want] and nr.status.value == "error" and engine.exit_code([nr]) == 3


@pytest.mark.parametrize("how", ["login exits", "login says no", "session killed"])
def test_a_session_that_ends_before_the_script_says_anything_is_not_checked_never_failing(keys, server, how):
    """The node's login ends the session before the collection script runs (a ForceCommand, a shell that exits
    at once: the test server's login text written for this test), or sshd drops it before a byte came. Before:
    `FAIL system.basic no basic facts came back from the node`, exit 1, and --drain would drain it."""
    from nccldiag import areas as registry
    from nccldiag.check import engine
    from nccldiag.collect import runner
    from nccldiag.inventory import Host

    s = server("cut" if how == "session killed" else "ok")
    s.cut_at = 0
    if how != "session killed":
        s.login = "exit 0" if how == "login exits" else "echo 'This account is currently not available.' >&2; exit 1"
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    areas = registry.select(["system"], [])
    opts = runner.CollectOptions(ssh=SSHOptions(config_path=cfg, connect_timeout=3, use_agent=False, retries=0),
                                 mesh="none")
    raw = runner.collect_host(Host("node"), runner.script_for(areas, mark=opts.mark), opts)
    nr = engine.analyze_node(raw, areas)
    assert not [f for f in nr.findings if f.status.value == "fail"], nr.findings
    (how_it_ended,) = [f for f in nr.findings if f.area == "ssh"]
    want = base.PROTOCOL if how == "session killed" else base.NO_OUTPUT
    assert (how_it_ended.check, how_it_ended.status.value) == (f"ssh.{want}", "error"), how_it_ended
    assert "before the collection script printed anything" in how_it_ended.message
    if how == "login says no":
        assert "exit status 1" in how_it_ended.message and "currently not available" in how_it_ended.message
    assert how_it_ended.fix == base.FIXES[want] and engine.exit_code([nr]) == 3 and not nr.reachable


def test_known_hosts_read_once_per_change_plain_and_hashed(keys, tmp_path):
    a, b = keys["host"], keys["other_host"]
    kh = tmp_path / "known_hosts"
    hashed = paramiko.HostKeys.hash_host("hashed.example")
    kh.write_text(f"plain.example,10.0.0.1 {a.get_name()} {a.get_base64()}\n"
                  f"{hashed} {b.get_name()} {b.get_base64()}\n"
                  f"@revoked revoked.example {a.get_name()} {a.get_base64()}\n"
                  "broken line\n")
    known = ssh._load_known_hosts([str(kh)])
    assert known.lookup("10.0.0.1") == {a.get_name(): [a]}
    assert known.lookup("hashed.example") == {b.get_name(): [b]}
    assert known.lookup("revoked.example") == {} and known.lookup("other") == {}
    assert ssh._load_known_hosts([str(kh)]) is known  # unchanged file: not read again
    with open(kh, "a") as f:
        f.write(f"new.example {b.get_name()} {b.get_base64()}\n")
    again = ssh._load_known_hosts([str(kh)])
    assert again is not known and again.lookup("new.example") == {b.get_name(): [b]}


# A login that takes its time before the command starts: the test server runs this shell text first, as
# sshd's shell runs ~/.bashrc (written for these tests, in the role of a shared home's pyenv/conda init).
# A stall is a read of a FIFO nobody writes: it lasts until the server is closed, never a sleep.

def _release(fifo):
    """End every read of ``fifo`` still waiting: a writer that opens and closes it gives them end of file."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # no reader left
        return
    os.close(fd)


def _started(keys, server, login):
    s = server()
    s.login = login
    cfg, _ = write_config(keys["dir"], s.port, keys["dir"] / "id_client", known_line(s.port, keys["host"]))
    return cfg


def test_the_login_before_a_command_starts_is_not_its_silence(keys, server):
    cfg = _started(keys, server, "sleep 2")  # a login longer than the silence bound
    with connect(cfg) as conn:
        before = conn.run("printf 'MARK\\n'; echo done", timeout=30, idle_timeout=1)
        r = conn.run("printf 'MARK\\n'; echo done", timeout=30, idle_timeout=1, start_marker=b"MARK",
                     start_timeout=30)
    # without a marker the login counts as silence, as it did for every collection
    assert before.error is not None and "nothing sent for 1 s" in before.error.message
    assert (r.rc, r.stdout, r.error) == (0, "MARK\ndone\n", None)
    assert r.started is not None and r.started >= 2


def test_a_command_stalled_after_its_start_is_named_at_the_silence_bound(keys, server, tmp_path):
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    cfg = _started(keys, server, "sleep 2")
    with connect(cfg) as conn:
        t0 = time.monotonic()
        r = conn.run(f"printf 'MA'; printf 'RK\\n'; cat {fifo}", timeout=60, idle_timeout=1, start_marker=b"MARK",
                     start_timeout=30, what="script")
        elapsed = time.monotonic() - t0
    assert r.error is not None and r.error.kind == base.COMMAND_TIMEOUT
    assert r.error.message == "script stalled: nothing sent for 1 s after it started", r.error.message
    assert r.started is not None and r.started >= 2 and r.stdout == "MARK\n"
    assert elapsed < r.started + 1 + 3, elapsed


@pytest.mark.parametrize("says", ["", "pyenv: rehashing"])
def test_a_login_that_never_starts_the_command_is_slow_or_silent(keys, server, tmp_path, says):
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    cfg = _started(keys, server, (f"echo '{says}' >&2; " if says else "") + f"cat {fifo} >/dev/null")
    with connect(cfg) as conn:
        t0 = time.monotonic()
        r = conn.run("printf 'MARK\\n'", timeout=60, idle_timeout=30, start_marker=b"MARK", start_timeout=1,
                     what="script")
        elapsed = time.monotonic() - t0
    assert r.error is not None and r.error.kind == base.COMMAND_TIMEOUT and r.started is None
    if says:
        assert r.error.message.startswith("login slow: the login did not start the script within 1 s"), r.error
        assert says in r.error.message
    else:
        assert r.error.message == "no answer: the login sent nothing and did not start the script within 1 s"
    assert elapsed < 1 + 3, elapsed


def _collect(cfg, extra, **ssh_kw):
    from nccldiag.areas import ssh as ssh_area
    from nccldiag.areas.base import Source
    from nccldiag.collect import runner
    from nccldiag.inventory import Host

    opts = runner.CollectOptions(ssh=SSHOptions(config_path=cfg, connect_timeout=3, use_agent=False, retries=0,
                                                **ssh_kw), mesh="none",
                                 extra_sources=[Source(n, c, t) for n, c, t in extra])
    script = runner.script_for([], opts.extra_sources, opts.mark)
    seen = []
    t0 = time.monotonic()
    nodes = runner.collect_hosts([Host("node")], script, opts, on_node=seen.append)
    elapsed = time.monotonic() - t0
    assert [n.host for n in seen] == ["node"]  # reported once, after its retry
    assert seen[0] is nodes[0]
    return nodes[0], ssh_area.judge_transport(nodes[0])[0], elapsed


def test_a_slow_login_is_collected_whole_on_the_first_try(keys, server):
    cfg = _started(keys, server, "sleep 2")
    node, f, _ = _collect(cfg, [("said", "echo fine", 5)], command_timeout=1, login_timeout=30)
    assert node.error is None and node.sections["said"] == "fine\n" and "tries" not in node.extra, node
    assert node.extra["login_s"] >= 2
    assert f.status.value == "ok" and "login " in f.message, f


def test_a_node_that_timed_out_is_tried_again_on_a_new_connection(keys, server, tmp_path):
    """The first login never starts the script (a login queued on a lock), the second does: the node is
    checked, and its finding says what the first try met."""
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    cfg = _started(keys, server, f"if mkdir {tmp_path}/first 2>/dev/null; then cat {fifo} >/dev/null; fi")
    node, f, elapsed = _collect(cfg, [("said", "echo fine", 5)], command_timeout=5, login_timeout=1)
    assert node.error is None and node.sections["said"] == "fine\n", node
    assert node.extra["tries"] == ["no answer: the login sent nothing and did not start the script within 1 s"]
    assert f.status.value == "ok" and "on the second try (first try: no answer" in f.message, f
    assert elapsed < 1 + 10, elapsed


def test_a_stalled_script_is_named_stalled_after_its_retry_within_the_bounds(keys, server, tmp_path):
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    cfg = _started(keys, server, "true")
    try:
        node, f, elapsed = _collect(cfg, [("said", "echo fine", 5), ("hung", f"cat {fifo}", 1000)], command_timeout=1)
    finally:
        _release(fifo)  # the source runs under its own timeout's process group, out of the server's reach
    stalled = "script stalled: nothing sent for 1 s after it started"
    assert node.sections["said"] == "fine\n" and node.extra["tries"] == [stalled, stalled], node
    assert (f.status.value, f.check) == ("error", "ssh.command-timeout"), f
    assert stalled in f.message and "tried twice" in f.message, f
    assert f.evidence[:2] == [f"first try: {stalled}", f"second try: {stalled}"]
    assert elapsed < 2 * (1 + 3), elapsed  # two tries, each stopped at the 1 s silence bound


def test_a_login_is_bounded_at_twice_the_command_timeout_unless_told():
    from nccldiag.collect import runner

    assert runner.login_timeout(SSHOptions(command_timeout=7)) == 14
    assert runner.login_timeout(SSHOptions(command_timeout=7, login_timeout=3)) == 3

    from nccldiag.areas import system

    # what the collection script prints first, before any source's output: the end of the login
    script = runner.script_for([system], [], "ab12cd34")
    out = subprocess.run(["sh", "-s"], input=script.encode(), capture_output=True, timeout=120).stdout
    assert out.startswith(runner.start_marker("ab12cd34")) and runner.start_marker("ab12cd34") == b"@@nccldiag:ab12cd34:begin "


def test_a_first_try_held_for_its_retry_is_still_reported_when_the_run_is_interrupted(monkeypatch):
    from nccldiag.collect import runner
    from nccldiag.inventory import Host
    from nccldiag.model.raw import RawNode

    first = "no answer: the login sent nothing and did not start the script within 2 s"
    calls = []

    def collect_host(h, script, opts, targets=()):
        calls.append(h.name)
        if len(calls) == 1:
            return RawNode(host=h.name, error=base.TransportError(base.COMMAND_TIMEOUT, first, h.name).to_dict())
        raise KeyboardInterrupt  # Ctrl-C during the retry

    monkeypatch.setattr(runner, "collect_host", collect_host)
    seen = []
    opts = runner.CollectOptions(ssh=SSHOptions(resolved={"n1": []}), mesh="none")
    with pytest.raises(KeyboardInterrupt):
        runner.collect_hosts([Host("n1")], "", opts, on_node=seen.append)
    assert calls == ["n1", "n1"]
    assert [n.host for n in seen] == ["n1"] and seen[0].extra["tries"] == [first]


class _Clock:
    """A clock the test moves (time.monotonic in the transport module)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _login(gate, clock, took, started=True):
    gate.enter()
    clock.now += took
    gate.leave(started)


def test_the_login_gate_lets_quick_logins_through_and_holds_queued_ones_to_its_floor(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(ssh.time, "monotonic", clock)
    gate = ssh.LoginGate(limit=32, floor=4)
    assert gate.allowed == 4  # no herd of logins at the start
    gate._waiting = 10  # logins waiting at the gate: it may open wider
    for took in (0.10, 0.12, 0.11, 0.13, 0.10, 0.14) * 10:  # quick logins, each on its own node
        _login(gate, clock, took)
    assert gate.base == pytest.approx(0.10) and gate.allowed == 32
    # logins queued on one lock (each waits for all the others before it): down to the floor
    for k in range(40):
        _login(gate, clock, 0.5 * (k % 8 + 4))
    assert gate.allowed == 4
    # a login stopped before its command started teaches nothing, and leaving twice is nothing
    _login(gate, clock, 50.0, started=False)
    gate.leave(True)
    assert gate.allowed == 4 and gate.base == pytest.approx(0.10)


def test_logins_slow_each_on_its_own_are_not_held(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(ssh.time, "monotonic", clock)
    gate = ssh.LoginGate(limit=32, floor=4)
    gate._waiting = 10
    for k in range(60):  # conda's init on every node: about a second each, whatever the others do
        _login(gate, clock, 0.9 + 0.2 * ((k * 7) % 5) / 4)
    assert gate.allowed == 32


def test_the_login_gate_holds_at_most_its_allowed_logins_at_once():
    import threading

    gate = ssh.LoginGate(limit=8, floor=2)
    inside, most, lock = [0], [0], threading.Lock()
    release = threading.Event()

    def one():
        gate.enter()
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        release.wait(30)
        with lock:
            inside[0] -= 1
        gate.leave(False)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while gate._waiting < 4 and time.monotonic() < deadline:  # four wait at the gate, two are in
        time.sleep(0.01)
    assert len(gate._inside) == 2 and gate._waiting == 4
    release.set()
    for t in threads:
        t.join(30)
    assert most[0] == 2 and not gate._inside and gate._waiting == 0


def test_a_command_holds_its_place_at_the_login_gate_until_its_marker_comes(keys, server, tmp_path):
    import threading

    fifo = tmp_path / "login"
    os.mkfifo(fifo)
    held = connect(_started(keys, server, f"cat {fifo} >/dev/null"))  # a login that waits for the test
    quick = connect(_started(keys, server, "true"))
    gate = ssh.LoginGate(limit=1, floor=1)
    results, seen = {}, []

    def run(name, conn):
        results[name] = conn.run("printf 'MARK\\n'; echo after", timeout=60, start_marker=b"MARK",
                                 start_timeout=60, gate=gate,
                                 on_line=lambda line: seen.append((name, line, len(gate._inside))))

    def until(cond):
        deadline = time.monotonic() + 30
        while not cond() and time.monotonic() < deadline:
            time.sleep(0.01)
        return cond()

    try:
        first = threading.Thread(target=run, args=("held", held))
        first.start()
        assert until(lambda: len(gate._inside) == 1)
        second = threading.Thread(target=run, args=("quick", quick))
        second.start()
        # the second command's login waits at the gate while the first login is in progress
        assert until(lambda: gate._waiting == 1) and "quick" not in results
        deadline = time.monotonic() + 30
        while True:  # the first login goes on once the fifo has a writer
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                break
            except OSError:  # no reader yet
                assert time.monotonic() < deadline
                time.sleep(0.01)
        first.join(60)
        second.join(60)
    finally:
        held.close()
        quick.close()
    for name in ("held", "quick"):
        r = results[name]
        assert (r.rc, r.stdout, r.error) == (0, "MARK\nafter\n", None) and r.started is not None
    # each command left the gate when its marker came, before its lines were handed on
    assert {(name, line, inside) for name, line, inside in seen} == {
        (n, l, 0) for n in ("held", "quick") for l in ("MARK", "after")}
    assert not gate._inside and gate._waiting == 0 and gate.base is not None


def test_a_command_that_ends_before_its_marker_leaves_the_gate_untimed(keys, server):
    gate = ssh.LoginGate(limit=2, floor=1)
    with connect(_started(keys, server, "true")) as conn:
        r = conn.run("echo no marker", timeout=30, start_marker=b"MARK", start_timeout=30, gate=gate)
    assert r.rc == 0 and r.started is None
    assert not gate._inside and gate.base is None
