"""The node-to-node SSH test's shell command, run for real with an ``ssh`` stand-in on PATH."""
import subprocess

from nccldiag.areas import mesh

# CONSTRUCTED: an ssh stand-in that authenticates every target after 0.3 s and
# records how many of it run at once (one directory per live client).
FAKE_SSH = r"""#!/bin/sh
for a in "$@"; do [ "$a" = -G ] && exit 0; done
d=__DIR__
mkdir "$d/live.$$"
n=$(ls -d "$d"/live.* | wc -l)
echo "$n" >> "$d/counts"
sleep 0.3
rmdir "$d/live.$$"
exit 0
"""


def run_mesh(tmp_path, targets, batch, xargs=True):
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "ssh").write_text(FAKE_SSH.replace("__DIR__", str(tmp_path)))
    (bins / "ssh").chmod(0o755)
    if not xargs:  # a node whose xargs has no -P: the batches are used instead
        (bins / "xargs").write_text("#!/bin/sh\nexit 1\n")
        (bins / "xargs").chmod(0o755)
    cmd = mesh.build_command(targets, timeout=2, batch=batch)
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{bins}:/usr/bin:/bin"})
    counts = [int(x) for x in (tmp_path / "counts").read_text().split()]
    return mesh.parse("src", out.stdout), counts


def test_every_target_answered_at_most_batch_at_once(tmp_path):
    targets = [f"node{i:03d}" for i in range(1, 24)]
    results, counts = run_mesh(tmp_path, targets, batch=5)
    assert sorted(r.target for r in results) == targets
    assert all(r.rc == 0 for r in results)
    assert len(counts) == len(targets) and max(counts) <= 5
    assert not list(tmp_path.glob("live.*"))


def test_without_xargs_batches_keep_the_bound(tmp_path):
    targets = [f"node{i:03d}" for i in range(1, 12)]
    results, counts = run_mesh(tmp_path, targets, batch=4, xargs=False)
    assert sorted(r.target for r in results) == targets and all(r.rc == 0 for r in results)
    assert len(counts) == len(targets) and max(counts) <= 4


def test_bound_grows_with_batches():
    assert mesh.command_timeout(255, 5, batch=16) > 16 * 10 > mesh.command_timeout(15, 5, batch=16)


# CONSTRUCTED: an ssh stand-in whose first connection to each target times out (a peer's sshd slow under load)
# and whose second authenticates; targets named deny* refuse the key every time. Each call is recorded.
FLAKY_SSH = r"""#!/bin/sh
for a in "$@"; do [ "$a" = -G ] && exit 0; done
for a in "$@"; do t=$a; done
d=__DIR__
echo "$t" >> "$d/calls"
case "$t" in deny*) echo "$t: Permission denied (publickey)." >&2; exit 255;; esac
if [ -e "$d/seen.$t" ]; then exit 0; fi
: > "$d/seen.$t"
echo "ssh: connect to host $t port 22: Connection timed out" >&2
exit 255
"""


def test_a_connection_that_fails_once_is_tried_again_and_a_refused_key_is_not(tmp_path):
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "ssh").write_text(FLAKY_SSH.replace("__DIR__", str(tmp_path)))
    (bins / "ssh").chmod(0o755)
    targets = ["node1", "node2", "deny3"]
    cmd = mesh.build_command(targets, timeout=2, batch=4)
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=mesh.command_timeout(3, 2, 4),
                         env={"PATH": f"{bins}:/usr/bin:/bin"})
    results = {r.target: r for r in mesh.parse("src", out.stdout)}
    assert results["node1"].rc == 0 and results["node2"].rc == 0
    assert results["deny3"].rc == 255 and "Permission denied" in results["deny3"].message
    calls = (tmp_path / "calls").read_text().split()
    # a timed-out control-master connection, then the second try; the refused key once, never again
    assert calls.count("node1") == 2 and calls.count("node2") == 2 and calls.count("deny3") == 1
    findings = mesh.judge("src", targets, list(results.values()))
    assert [f.status.value for f in findings] == ["fail"] and "1 of 3" in findings[0].message


# The test inside the collection script's own login (collect/script.with_mesh), run by sh for real. The sources
# and the test's command are CONSTRUCTED for these tests: a stand-in test that says when it started.
def _script(tmp_path, mesh_command, bound=30, beat=10):
    from nccldiag.areas.base import Source
    from nccldiag.collect.script import build_script, with_mesh

    d = tmp_path
    sources = [
        # runs while the test runs: it waits (bounded) for the test to have started
        Source("first", f"i=0; while [ ! -e {d}/started ] && [ $i -lt 250 ]; do sleep 0.1; i=$((i+1)); done; "
                        f"[ -e {d}/started ] && echo alongside", 30),
        Source("second", "echo two", 30),
    ]
    return with_mesh(build_script(sources, mark="0123abcd"), mesh_command, bound, beat)


def _run_script(script, path=None, tmp=None):
    from nccldiag.collect.script import source_names
    from nccldiag.collect.sections import split_sections

    env = {"PATH": path or "/usr/bin:/bin"}
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    out = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=60, env=env)
    _run_script.stdout = out.stdout
    return split_sections(out.stdout, "0123abcd", source_names(script))


def test_the_test_runs_in_the_background_of_the_script_and_is_its_last_section(tmp_path):
    command = f"touch {tmp_path}/started; for t in n2 n3; do printf '@@mesh %s 0 \\n' $t; done; printf '@@mesh n4 255 no\\n'"
    (tmp_path / "tmp").mkdir()
    sections, rcs, truncated = _run_script(_script(tmp_path, command), tmp=tmp_path / "tmp")
    assert sections["first"].strip() == "alongside" and sections["second"].strip() == "two"
    assert list(sections)[-1] == "ssh_mesh" and rcs["ssh_mesh"] == 0 and not truncated
    results = {r.target: r.rc for r in mesh.parse("n1", sections["ssh_mesh"])}
    assert results == {"n2": 0, "n3": 0, "n4": 255}
    assert "@@mesh-done" not in sections["ssh_mesh"]
    assert not list((tmp_path / "tmp").iterdir())  # the test's file is removed


def test_a_long_test_sends_a_blank_line_while_the_script_waits_for_it(tmp_path):
    # the heartbeat's sleep (of a second, beat=1: the sources' are shorter) notes each of its ends; the test
    # ends once the heartbeat has come round twice, so that its first blank line was sent whatever the load
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "sleep").write_text(f"#!/bin/sh\n/bin/sleep \"$1\"\n[ \"$1\" = 1 ] && echo >> {tmp_path}/beats\n"
                                "exit 0\n")
    (bins / "sleep").chmod(0o755)
    command = (f"touch {tmp_path}/started; i=0; while [ \"$(cat {tmp_path}/beats 2>/dev/null | wc -l)\" -lt 2 ] "
               f"&& [ $i -lt 250 ]; do /bin/sleep 0.1; i=$((i+1)); done; printf '@@mesh n2 0 \\n'")
    sections, rcs, _ = _run_script(_script(tmp_path, command, beat=1), path=f"{bins}:/usr/bin:/bin")
    assert [r.target for r in mesh.parse("n1", sections["ssh_mesh"])] == ["n2"] and rcs["ssh_mesh"] == 0
    # between the last source's section and the test's, where no section reads them
    between = _run_script.stdout.split("end second rc=0@@\n", 1)[1].split("@@nccldiag:0123abcd:begin ssh_mesh@@")[0]
    assert between.count("\n") >= 1 and not between.strip()


def test_nothing_of_the_wait_holds_the_output_open(tmp_path):
    # the heartbeat's sleep is a minute long here: were its output the script's, the node's output would end
    # only with it (sshd sends EOF once nothing holds the command's output), past this run's bound
    command = f"touch {tmp_path}/started; sleep 2; printf '@@mesh n2 0 \\n'"
    script = _script(tmp_path, command, beat=60)
    out = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=45,
                         env={"PATH": "/usr/bin:/bin"})
    assert "@@mesh n2 0" in out.stdout and out.returncode == 0


def test_without_mktemp_the_test_runs_as_the_last_section(tmp_path):
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "mktemp").write_text("#!/bin/sh\nexit 1\n")
    (bins / "mktemp").chmod(0o755)
    command = "printf '@@mesh n2 0 \\n'"
    sections, rcs, _ = _run_script(_script(tmp_path, command), path=f"{bins}:/usr/bin:/bin")
    assert [r.target for r in mesh.parse("n1", sections["ssh_mesh"])] == ["n2"] and rcs["ssh_mesh"] == 0


def test_a_test_cut_off_with_its_node_is_not_the_targets_failure():
    from nccldiag.areas import ssh as ssh_area
    from nccldiag.model.raw import RawNode

    targets = ["n2", "n3", "n4"]
    answered = "@@mesh n2 0 \n"
    # the collection on n1 stopped at its bound before the test's section ended (CONSTRUCTED node)
    node = RawNode(host="n1", sections={"ssh_mesh": answered}, truncated=True,
                   extra={"mesh_targets": targets, "mesh_cut": True, "timeout": "script stalled"})
    (finding,) = [f for f in ssh_area.judge_transport(node) if f.check == "ssh.node_to_node"]
    assert finding.status.value == "error" and "1 of 3" in finding.message and finding.evidence == ["n3", "n4"]
    # a target that answered and failed still fails
    node.sections["ssh_mesh"] = answered + "@@mesh n3 255 Permission denied (publickey).\n"
    (finding,) = [f for f in ssh_area.judge_transport(node) if f.check == "ssh.node_to_node"]
    assert finding.status.value == "fail" and finding.actual == ["n3: Permission denied (publickey)."]
    assert "1 of 3 nodes not tested" in finding.message
    # the test that ended: a target without an answer did not answer, which is no evidence of a fault
    node.extra.pop("mesh_cut")
    node.sections["ssh_mesh"] = answered
    (finding,) = [f for f in ssh_area.judge_transport(node) if f.check == "ssh.node_to_node"]
    assert finding.status.value == "warn" and "n4: no answer (the test did not finish)" in finding.actual


# ---- the real OpenSSH client's output, judged ------------------------------------------------------------
# The mesh command runs as on a node, with the real `ssh` of this machine; an `ssh` on PATH (written for these
# tests) only adds `-F CONFIG`, which sends each peer name to a loopback port: a closed port (refused), a socket
# that accepts and never speaks (a peer's sshd too loaded to send its banner: a timeout), the in-repo SSH server
# with a key it does not accept (denied) or a host key nobody listed (host key).

import shutil  # noqa: E402
import socket  # noqa: E402

import paramiko  # noqa: E402
import pytest  # noqa: E402

from nccldiag.model.findings import Status  # noqa: E402
from tests.unit.sshserver import SSHServer  # noqa: E402

SSH = shutil.which("ssh")


@pytest.fixture
def peers(tmp_path):
    host_key, allowed, other = (paramiko.ECDSAKey.generate() for _ in range(3))
    other.write_private_key_file(str(tmp_path / "id_other"))
    server = SSHServer(host_key, allowed)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # connections complete in the kernel; nothing ever answers them
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()  # bound then closed: nothing listens there
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{server.port} {host_key.get_name()} {host_key.get_base64()}\n")
    common = (f"  HostName 127.0.0.1\n  IdentityFile {tmp_path / 'id_other'}\n  IdentitiesOnly yes\n"
              f"  GlobalKnownHostsFile /dev/null\n  User tester\n")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host denied\n  Port {server.port}\n  UserKnownHostsFile {kh}\n{common}"
        f"Host hostkey\n  Port {server.port}\n  UserKnownHostsFile /dev/null\n{common}"
        f"Host refused\n  Port {closed_port}\n  UserKnownHostsFile {kh}\n{common}"
        f"Host loaded*\n  Port {silent.getsockname()[1]}\n  UserKnownHostsFile {kh}\n{common}")
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "ssh").write_text(f"#!/bin/sh\nexec {SSH} -F {cfg} \"$@\"\n")
    (bins / "ssh").chmod(0o755)
    yield bins
    silent.close()
    server.close()


def _real_mesh(bins, targets):
    cmd = mesh.build_command(targets, timeout=1, batch=16)
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=mesh.command_timeout(
        len(targets), 1, 16), env={"PATH": f"{bins}:/usr/bin:/bin"})
    return mesh.parse("src", out.stdout)


@pytest.mark.skipif(SSH is None, reason="no OpenSSH client on this machine")
def test_every_peer_timing_out_under_load_is_could_not_tell_never_a_fail(peers):
    targets = [f"loaded{i}" for i in range(1, 6)]
    results = _real_mesh(peers, targets)
    assert sorted(r.target for r in results) == targets and all(r.rc == 255 for r in results), results
    assert all("timed out" in r.message for r in results), results  # ssh's own words for it
    [f] = mesh.judge("src", targets, results)
    assert f.status is Status.WARN and "could not tell" in f.message and "5 of 5" in f.message, f
    # the same peers with no answer at all (the node-side test cut off): could not tell either
    [f] = mesh.judge("src", targets, [])
    assert f.status is Status.WARN and "no answer" in f.actual[0]


@pytest.mark.skipif(SSH is None, reason="no OpenSSH client on this machine")
def test_a_refused_connection_key_or_host_key_is_a_fail_with_ssh_s_words(peers):
    targets = ["denied", "hostkey", "refused", "loaded1"]
    results = {r.target: r for r in _real_mesh(peers, targets)}
    assert "Permission denied" in results["denied"].message, results
    assert "host key is known for" in results["hostkey"].message, results  # "... requested strict checking."
    assert "Connection refused" in results["refused"].message, results
    assert [mesh.fault(results[t].message) for t in targets] == [True, True, True, False]
    [f] = mesh.judge("src", targets, list(results.values()))
    assert f.status is Status.FAIL and "3 of 4 nodes (1 more could not be told)" in f.message, f
    assert [a.split(":")[0] for a in f.actual] == ["denied", "hostkey", "refused", "loaded1"]


@pytest.mark.skipif(SSH is None, reason="no OpenSSH client on this machine")
def test_peers_the_head_could_not_reach_either_are_not_counted_against_the_source(peers):
    """The real client's refusals and timeouts, settled against the nodes the head could not reach."""
    targets = ["denied", "refused", "loaded1", "loaded2"]
    [f] = mesh.judge("src", targets, _real_mesh(peers, targets))
    f.host = "src"
    assert f.status is Status.FAIL
    # the refusing and the silent peer were not reached by the head either: only the denied key is the source's
    settled = mesh.settle(f, {"refused", "loaded1"})
    assert settled.status is Status.FAIL and settled.host == "src"
    assert [a.split(":")[0] for a in settled.actual] == ["denied", "loaded2"]
    assert "1 of 4 nodes (1 more could not be told)" in settled.message
    assert "2 not counted: the head could not reach them either (loaded1, refused)" in settled.message
    # every failure a peer the head could not reach: the source reaches all the others
    [f] = mesh.judge("src", ["refused", "loaded1", "loaded2"],
                     [r for r in _real_mesh(peers, ["refused", "loaded1"])] + [mesh.MeshResult("src", "loaded2", 0, "")])
    settled = mesh.settle(f, {"refused", "loaded1"})
    assert settled.status is Status.OK and "reaches the 1 other node it could test" in settled.message
    assert settled.evidence == ["loaded1", "refused"]
    # a warning where the peer that timed out was reached by the head stays a warning
    [f] = mesh.judge("src", ["loaded1"], _real_mesh(peers, ["loaded1"]))
    assert mesh.settle(f, {"refused"}) is f and f.status is Status.WARN


def test_the_engine_settles_the_node_to_node_finding_with_the_nodes_it_could_not_reach():
    from nccldiag.areas import ssh as ssh_area
    from nccldiag.check import engine
    from nccldiag.model.raw import RawNode

    # CONSTRUCTED nodes: n1 tested n2 and n3; the head's login to n3 got no banner, as n1's ssh did not
    n1 = RawNode(host="n1", sections={"ssh_mesh": "@@mesh n2 0 \n@@mesh n3 255 Connection timed out during banner "
                                                  "exchange\n"},
                 extra={"mesh_targets": ["n2", "n3"]})
    n2 = RawNode(host="n2", sections={"ssh_mesh": ""})
    n3 = RawNode(host="n3", error={"kind": "banner", "message": "no SSH banner within 10 s"})
    report = engine.analyze([n1, n2, n3], [ssh_area])
    by = {n.host: n for n in report.nodes}
    [f] = [f for f in by["n1"].findings if f.check == "ssh.node_to_node"]
    assert f.status is Status.OK and "n3" in f.message and f.host == "n1"
    assert not by["n3"].reachable
    # with n3 reached by the head, n1's timeout to it is what it was
    report = engine.analyze([n1, n2, RawNode(host="n3", sections={"ssh_mesh": ""})], [ssh_area])
    [f] = [f for n in report.nodes if n.host == "n1" for f in n.findings if f.check == "ssh.node_to_node"]
    assert f.status is Status.WARN
