"""What every transport returns, and the classification of its failures."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# Failure kinds, each a distinct thing for an admin to fix.
RESOLVE = "resolve"  # the name does not resolve
REFUSED = "refused"  # nothing listens on the SSH port
UNREACHABLE = "unreachable"  # no route / host down / connect timed out
AUTH = "auth"  # no accepted key
HOSTKEY_UNKNOWN = "hostkey-unknown"
HOSTKEY_CHANGED = "hostkey-changed"
BANNER = "banner"  # sshd dropped the connection before the handshake (MaxStartups, PerSourcePenalties)
PROTOCOL = "protocol"  # SSH negotiation failed otherwise
PROXY = "proxy"  # the ProxyJump host or ProxyCommand could not be used
COMMAND_TIMEOUT = "command-timeout"
CONFIG = "config"  # ssh_config could not be resolved
LOCAL = "local"  # could not start the local command
OVERSIZE = "oversize"  # the node sent more output than any real source produces
NO_OUTPUT = "no-output"  # the session ended before the command printed anything

# An sshd that accepted the connection and sent nothing (no banner, no handshake) within the bound.
STALLED_FIX = ("The node's sshd accepted the connection and sent nothing within the bound: the node is hung or "
               "overloaded (sshd stopped, a hung file system or driver, memory exhausted). Look at its console or "
               "BMC, or run 'ssh -v NODE true' to see where it stops; raise --connect-timeout if it is merely slow.")

FIXES = {
    OVERSIZE: "The node sent far more output than any real source produces (a file like /dev/zero where a text file should be, or a compromised node): look at what the named sources read on the node.",
    RESOLVE: "Check the name in the hostfile, DNS or /etc/hosts on the head node.",
    REFUSED: "Start sshd on the node (systemctl start ssh) or check the port (Port in ~/.ssh/config, port= in the hostfile).",
    UNREACHABLE: "Check that the node is up and its management link is cabled; check firewalls between head node and node.",
    AUTH: "Install your public key in the node's ~/.ssh/authorized_keys (ssh-copy-id), or load the key into ssh-agent.",
    HOSTKEY_UNKNOWN: "Verify the node's key (ssh-keyscan, compare fingerprints) and add it to known_hosts, or rerun with --accept-new-host-keys to trust it on first use.",
    HOSTKEY_CHANGED: "The node's host key differs from known_hosts: if the node was reinstalled, remove the old entry (ssh-keygen -R HOST) after verifying the new key; otherwise treat it as a possible attack.",
    BANNER: "sshd closed the connection before its banner: raise MaxStartups on the node, or lower --fanout; OpenSSH >= 9.8 PerSourcePenalties may be refusing the head node after failed logins.",
    PROTOCOL: "Check sshd's logs on the node (journalctl -u ssh) for the negotiation failure.",
    PROXY: "Check the ProxyJump host or ProxyCommand for this host in ~/.ssh/config (ssh -G HOST shows them): the jump host must be reachable and accept your key in batch mode (ssh -o BatchMode=yes JUMPHOST true).",
    COMMAND_TIMEOUT: "The node did not answer in time. Script stalled: look for hung file systems or drivers (a hung nvidia-smi is common); raise --command-timeout if the node is merely slow. Login slow or no answer: the login's shell startup files (a ~/.bashrc on a shared home running pyenv or conda init, a hung home directory) held the script back: time 'ssh NODE true', raise --login-timeout or lower --fanout.",
    CONFIG: "Check ~/.ssh/config for this host (ssh -G HOST shows what OpenSSH makes of it).",
    LOCAL: "Check that /bin/sh exists and the machine is not out of processes or memory.",
    NO_OUTPUT: "The login ran something other than the command, or ended before it: look for a ForceCommand in the node's sshd_config (a Match block for this user), a login shell that exits (nologin, an 'exit' in ~/.bashrc), and try 'ssh NODE echo ok'.",
}


class TransportError(Exception):
    """A classified failure to run something on a host."""

    def __init__(self, kind: str, message: str, host: str = "", fix: str = ""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.host = host
        self._fix = fix

    @property
    def fix(self) -> str:
        """What to do: the kind's fix, or the one this failure was raised with."""
        return self._fix or FIXES.get(self.kind, "")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "fix": self.fix}

    def __str__(self) -> str:
        return f"{self.host}: {self.message}" if self.host else self.message


@dataclass
class ExecResult:
    """The outcome of one command on one host."""

    host: str
    rc: Optional[int]
    stdout: str = ""
    stderr: str = ""
    elapsed: float = 0.0
    error: Optional[TransportError] = None
    # with a start marker: seconds from the request until the command's own first output (its marker) came,
    # None when it never came; the time before it is the login's (the shell and its startup files)
    started: Optional[float] = None
    said: bool = False  # anything at all (stdout or stderr) came back

    @property
    def ok(self) -> bool:
        return self.error is None and self.rc == 0
