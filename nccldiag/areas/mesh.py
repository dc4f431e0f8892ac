"""Node-to-node SSH: can a node reach its peers without a password?

mpirun starts its daemons over SSH from the launch node (and, with Open
MPI's tree spawn, from other nodes too), in batch mode. The command below
runs on a source node and tries, in parallel, a non-interactive ``ssh`` to
each target the way mpirun would; :func:`parse` turns its output into one
result per target.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Collection, List, Optional, Sequence

from nccldiag import rx
from nccldiag.model.findings import Finding, Status, error, fail, ok, warn

MARK = "@@mesh "
BATCH = 16  # ssh clients one node runs at once
KEX_FIRST = "-oKexAlgorithms=^curve25519-sha256,curve25519-sha256@libssh.org"


# What the OpenSSH client prints when a connection fails, and what it shows. A fault (the peer refuses, the key
# or host key is refused, the name or route is missing) fails the source node; a timeout or a connection the
# peer dropped before its banner is what a loaded node or peer gives too (sshd's MaxStartups, a CPU-starved
# client): no evidence either way. (message as ssh prints it, fault?) — ssh.c (resolve), sshconnect.c (connect,
# host key), sshconnect2.c (authentication), kex.c (banner exchange); each checked on the client's real output
# in tests/unit/test_mesh.py.
SSH_MESSAGES = (
    ("Permission denied", True),
    ("Host key verification failed", True),
    ("requested strict checking", True),  # "No ECDSA host key is known for [h]:p and you have requested strict checking."
    ("REMOTE HOST IDENTIFICATION HAS CHANGED", True),
    ("No matching host key", True),
    ("Unable to negotiate", True),
    ("Too many authentication failures", True),
    ("Could not resolve hostname", True),
    ("Connection refused", True),
    ("No route to host", True),
    ("Network is unreachable", True),
    ("Connection timed out", False),
    ("Operation timed out", False),
    ("Connection closed by", False),
    ("Connection reset by peer", False),
)


def fault(message: str) -> Optional[bool]:
    """True where ``message`` (ssh's own words) is evidence of a fault, False where it is a timeout or a dropped
    connection (no evidence), None where ssh said nothing nccldiag knows."""
    low = message.lower()
    for words, is_fault in SSH_MESSAGES:
        if words.lower() in low:
            return is_fault
    return None


@dataclass
class MeshResult:
    source: str
    target: str
    rc: int
    message: str


def command_timeout(n_targets: int, timeout: int = 5, batch: int = BATCH) -> float:
    """The bound for the whole node-side test: every batch may take its connect timeout twice (a target that
    fails is tried again once), and more."""
    batches = max(1, -(-n_targets // batch))
    return batches * (2 * (2 * timeout + 2) + 1) + 10


def build_command(targets: Sequence[str], timeout: int = 5, batch: int = BATCH) -> str:
    """A POSIX sh command that tests SSH from this node to every target, ``batch`` at a time.

    The node runs at most ``batch`` ssh clients at once, so a source node
    testing hundreds of peers never starves itself (or the nodes it shares a
    machine with) of CPU, which would turn healthy peers into false timeouts.

    Each test authenticates as mpirun's launcher would (batch mode, host key
    verified) and stops right after authentication (``-f -N`` on a control
    master, then ``-O exit``), so no remote shell has to start: the test costs
    one handshake per target. Where a control socket cannot be made, it falls
    back to running ``true`` on the target. Host names were validated by the
    inventory; they are still quoted.

    The classical key exchange is put first where the client accepts the
    ``^`` (prepend) syntax: OpenSSH 9's default post-quantum exchange
    (sntrup761) costs about 100 ms of CPU per connection in the client, and
    this test carries no data worth protecting beyond the authentication
    itself. The default list stays behind it, so a server that only offers
    other algorithms still negotiates as mpirun's ssh would.
    """
    ssh = (
        f"ssh $_k -o BatchMode=yes -o ConnectTimeout={int(timeout)} -o StrictHostKeyChecking=yes "
        "-o NumberOfPasswordPrompts=0"
    )
    one = (  # one target, "$1"; run by sh -c with _d and _k in its environment
        "_n=0; while :; do "
        f'if [ -n "$_d" ]; then _e=$({ssh} -o ControlMaster=yes -o ControlPath="$_d/$1" -o ControlPersist=no -f -N "$1" 2>&1 </dev/null); _r=$?; '
        "else _e=nomux; _r=1; fi; "
        'if [ $_r -ne 0 ]; then case "$_e" in *ontrol*|*mux*) '
        f'_e=$({ssh} "$1" true 2>&1 </dev/null); _r=$?;; esac; fi; '
        # a connection that failed once (a peer's sshd slow to answer under load) is tried again a second
        # later; a refusal that would say the same again (key, host key, name) is not
        '_n=$((_n+1)); [ $_r -eq 0 ] || [ $_n -ge 2 ] && break; '
        'case "$_e" in *"ermission denied"*|*"erification failed"*|*"trict checking"*|*"ould not resolve"*) break;; esac; '
        "sleep 1; done; "
        f"printf '{MARK}%s %s %s\\n' \"$1\" \"$_r\" \"$(printf %s \"$_e\" | tr '\\n' ' ' | cut -c1-300)\""
    )
    body = (
        '_d=$(mktemp -d 2>/dev/null) || _d=; '
        f"_k=; ssh -G {KEX_FIRST} localhost >/dev/null 2>&1 </dev/null && _k={KEX_FIRST}; "
        f"export _d _k; _one={shlex.quote(one)}; "
    )
    names = " ".join(shlex.quote(t) for t in targets)
    # a sliding window of `batch` clients (xargs -P); without it, batches of `batch`
    groups = [targets[i:i + batch] for i in range(0, len(targets), batch)]
    batches = " wait; ".join(" ".join(f'sh -c "$_one" _ {shlex.quote(t)} &' for t in g) for g in groups)
    calls = (
        f"if echo x | xargs -P 2 -n 1 true >/dev/null 2>&1; then "
        f'printf \'%s\\n\' {names} | xargs -P {int(batch)} -n 1 sh -c "$_one" _; '
        f"else {batches} wait; fi;"
    )
    # the masters left in the background after authenticating: one pkill for all,
    # or one 'ssh -O exit' each where pkill is missing
    reap = (
        ' wait; if [ -n "$_d" ]; then if command -v pkill >/dev/null 2>&1; then pkill -f "ControlPath=$_d/" 2>/dev/null; '
        'else for _s in "$_d"/*; do [ -S "$_s" ] && ssh -o ControlPath="$_s" -O exit x >/dev/null 2>&1; done; fi; '
        'rm -rf "$_d"; fi; true'
    )
    return f"sh -c {shlex.quote(body + calls + reap)}"


def parse(source: str, text: str) -> List[MeshResult]:
    results = []
    for line in text.splitlines():
        if not line.startswith(MARK):
            continue
        parts = line[len(MARK) :].split(" ", 2)
        if len(parts) < 2 or not parts[1].lstrip("-").isdigit():
            continue
        results.append(MeshResult(source, parts[0], int(parts[1]), (parts[2] if len(parts) > 2 else "").strip()))
    return results


def judge(source: str, targets: Sequence[str], results: Sequence[MeshResult], finished: bool = True) -> List[Finding]:
    """One finding for ``source``: every target reached (ok); some refused with evidence of the fault (fail:
    refused, denied, host key, no name or route); otherwise, where some timed out, were dropped, gave no answer
    or said what nccldiag does not know, it could not tell (warn, never a fail: a loaded node times out on
    every peer). With ``finished`` False (the collection on ``source`` was cut off before the test ended) a
    target without an answer was not tested: the targets that answered with a fault still fail, and without
    any the test is reported not finished, never as the targets' failure."""
    by_target = {r.target: r for r in results}
    faults, unclear, untested = [], [], []
    for t in targets:
        r = by_target.get(t)
        if r is None:
            if finished:
                unclear.append(f"{t}: no answer (the test did not finish)")
            else:
                untested.append(t)
        elif r.rc != 0:
            said = f"{t}: {r.message or f'ssh exited {r.rc}'}"
            (faults if fault(r.message) else unclear).append(said)
    return [_finding(source, len(targets), faults, unclear, untested)]


_OF_N = rx.compile(r" of (\d+) nodes")  # the targets' count, in each message of :func:`_finding`


def settle(finding: Finding, unreached: Collection[str]) -> Finding:
    """``finding``, a source's node-to-node finding, with the targets that the head could not reach either
    taken out of its failures: a stalled, stopped or refusing node fails every login, the source's as the
    head's, and is named on its own row; the source is not at fault for it. Findings of other checks, and
    those with no target in ``unreached``, are returned as they are."""
    if finding.check != "ssh.node_to_node" or finding.status not in (Status.FAIL, Status.WARN):
        return finding
    said = [str(a) for a in finding.actual] if isinstance(finding.actual, list) else []
    gone = [a for a in said if a.split(": ", 1)[0] in unreached]
    if not gone:
        return finding
    rest = [a for a in said if a not in gone]
    faults = [a for a in rest if fault(a.split(": ", 1)[-1])]
    unclear = [a for a in rest if a not in faults]
    counted = _OF_N.search(finding.message)
    if not counted:
        return finding
    source = finding.host or finding.message.split(":", 1)[0].split(" ", 1)[0]
    settled = _finding(source, int(counted.group(1)), faults, unclear, [], sorted(a.split(": ", 1)[0] for a in gone))
    settled.host = finding.host
    return settled


def _finding(source: str, n: int, faults: List[str], unclear: List[str], untested: List[str],
             unreached: Sequence[str] = ()) -> Finding:
    """The one finding of ``source``'s test of ``n`` targets: the failures with evidence of a fault, those
    that could not be told, the targets not tested because the collection was cut off, and (``unreached``)
    those not counted because the head could not reach them either."""
    cut = (f"; the collection on {source} was cut off before the test ended: {len(untested)} of "
           f"{n} nodes not tested") if untested else ""
    gone = (f"; {len(unreached)} not counted: the head could not reach them either "
            f"({', '.join(unreached[:5])}{', ...' if len(unreached) > 5 else ''}), each named on its own row"
            ) if unreached else ""
    fix = (f"On {source}: install a key whose public half is in each node's authorized_keys and add the "
           "nodes' host keys to known_hosts (ssh-keyscan). mpirun needs it; Open MPI's tree spawn needs "
           "it between all nodes unless --mca plm_rsh_no_tree_spawn 1.")
    if faults:
        more = f" ({len(unclear)} more could not be told)" if unclear else ""
        return fail(
            "ssh",
            "ssh.node_to_node",
            f"{source} cannot SSH non-interactively to {len(faults)} of {n} nodes{more}" + cut + gone,
            actual=faults + unclear,
            expected="passwordless, host-key-verified SSH to every node",
            evidence=(faults + unclear)[:20],
            fix=fix
        )
    if unclear:
        return warn(
            "ssh",
            "ssh.node_to_node",
            f"{source}: could not tell whether it reaches {len(unclear)} of {n} nodes over SSH "
            "(timed out, dropped or unexplained: no evidence of a fault; a loaded node or peer gives the same)"
            + cut + gone,
            actual=unclear,
            expected="passwordless, host-key-verified SSH to every node",
            evidence=unclear[:20],
            fix=f"Run the check again when the nodes are less loaded; if it persists, run 'ssh -o BatchMode=yes <peer> true' on {source} to see the cause. " + fix
        )
    if untested:
        return error("ssh", "ssh.node_to_node",
                     f"node-to-node SSH from {source} not finished: {n - len(untested)} of "
                     f"{n} nodes reached before the collection on {source} was cut off",
                     actual=n - len(untested), evidence=untested[:20],
                     fix="See the collection finding of this node for what cut it off; run the check again.")
    if unreached:
        return ok("ssh", "ssh.node_to_node",
                  f"{source} reaches {_nodes(n - len(unreached), 'other node')} it could test over SSH" + gone,
                  actual=n - len(unreached), evidence=list(unreached)[:20])
    return ok("ssh", "ssh.node_to_node", f"{source} reaches {_nodes(n, 'other node')} over SSH", actual=n)


def _nodes(n: int, what: str) -> str:
    """'the 1 other node', 'all 5 other nodes'."""
    return f"the 1 {what}" if n == 1 else f"all {n} {what}s"
