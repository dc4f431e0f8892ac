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
