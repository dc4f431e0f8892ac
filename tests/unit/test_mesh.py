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
