"""A real SSH server (paramiko's server side) on loopback, for transport tests.

It speaks the SSH protocol for real: key exchange, host key, public-key
authentication, exec channels running commands with /bin/sh. Behaviours
that make the client fail in each classified way are switches.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from typing import Optional

import paramiko


class _Server(paramiko.ServerInterface):
    def __init__(self, allowed_key: paramiko.PKey):
        self.allowed_key = allowed_key
        self.command: Optional[bytes] = None
        self.event = threading.Event()

    def check_auth_publickey(self, username, key):
        return paramiko.AUTH_SUCCESSFUL if key == self.allowed_key else paramiko.AUTH_FAILED

    def get_allowed_auths(self, username):
        return "publickey"

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel, command):
        self.command = command
        self.event.set()
        return True


class SSHServer:
    """``mode``: "ok" (serve), "drop" (close before the banner), "silent" (never speak), "cut" (serve, but send
    the first ``cut_at`` bytes of a command's output and then drop the connection, as a killed sshd does),
    "status-first" (send the first ``cut_at`` bytes, then the exit status, and the rest of the output once
    ``release`` is set, then EOF: as OpenSSH's sshd does when the command has exited while its output is still
    queued behind the channel's window)."""

    def __init__(self, host_key: paramiko.PKey, allowed_key: paramiko.PKey, mode: str = "ok"):
        self.host_key = host_key
        self.allowed_key = allowed_key
        self.mode = mode
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        self._held = []
        self._procs = []  # commands run with a login, killed at close
        self.cut_at = 4096
        self.release = threading.Event()  # "status-first": when to send the rest of the output
        # shell text every command's session runs first, as a login shell runs ~/.bashrc; with it the
        # command's output is streamed as it comes, not sent when the command ends
        self.login: Optional[str] = None
        self.accepted = 0  # connections accepted: how many attempts a client made
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            if self.mode == "drop":
                conn.close()
                continue
            if self.mode == "silent":
                self._held.append(conn)
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        t = paramiko.Transport(conn)
        t.add_server_key(self.host_key)
        server = _Server(self.allowed_key)
        try:
            t.start_server(server=server)
        except (paramiko.SSHException, EOFError, OSError):
            return
        while t.is_active():
            chan = t.accept(timeout=1)
            if chan is None:
                continue
            threading.Thread(target=self._exec, args=(server, chan), daemon=True).start()

    def _exec(self, server, chan):
        if not server.event.wait(5):
            chan.close()
            return
        server.event.clear()
        cmd = server.command.decode()
        if self.login is not None:
            self._stream(chan, self.login + "\n" + cmd)
            return
        proc = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        data = b""
        while True:
            chunk = chan.recv(65536)
            if not chunk:
                break
            data += chunk
        try:
            out, err = proc.communicate(data, timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        try:
            if self.mode == "cut":
                chan.sendall(out[: self.cut_at])
                chan.get_transport().close()  # no exit status, no EOF: the session dies mid-output
                return
            if self.mode == "status-first":
                chan.sendall(out[: self.cut_at])
                chan.send_exit_status(proc.returncode)
                if self.release.wait(30):
                    chan.sendall(out[self.cut_at:])
                chan.shutdown_write()  # EOF
                chan.close()
                return
            chan.sendall(out)
            chan.sendall_stderr(err)
            chan.send_exit_status(proc.returncode)
            chan.close()
        except (OSError, EOFError, paramiko.SSHException):
            pass

    def _stream(self, chan, script):
        """Run ``script`` with the channel's input, sending its output and errors as they come."""
        proc = subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        self._procs.append(proc)

        def feed():
            try:
                while True:
                    chunk = chan.recv(65536)
                    if not chunk:
                        break
                    proc.stdin.write(chunk)
                proc.stdin.close()
            except (OSError, EOFError, paramiko.SSHException):
                pass

        def pump(f, send):
            try:
                while True:
                    chunk = os.read(f.fileno(), 65536)
                    if not chunk:
                        break
                    send(chunk)
            except (OSError, EOFError, paramiko.SSHException):
                pass

        threading.Thread(target=feed, daemon=True).start()
        err = threading.Thread(target=pump, args=(proc.stderr, chan.sendall_stderr), daemon=True)
        err.start()
        pump(proc.stdout, chan.sendall)
        err.join()
        try:
            chan.send_exit_status(max(0, proc.wait()))
            chan.close()
        except (OSError, EOFError, paramiko.SSHException):
            pass

    def close(self):
        self._stop.set()
        for p in self._procs:  # with all they started (a test's stalled command)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        self.sock.close()
        for c in self._held:
            c.close()
