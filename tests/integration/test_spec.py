"""Site specs on the virtual cluster: derived live from one node, then a batch that deviates alike.

The namespace nodes have no GPU and no HCA; they share the host's kernel,
which is what the deviation is about: a spec that names another kernel
release (written for this test) fails every node, though all 4 agree.
"""
import re

from tests.integration.helpers import load_json, timed


def test_spec_from_one_node_passes_all_and_a_batch_deviation_fails_all(vcluster, tmp_path):
    spec = tmp_path / "site.toml"
    r, _ = timed(["spec", "init", "-w", vcluster.hosts[0], "--ssh-config", str(vcluster.ssh_config), "-o", str(spec)])
    assert r.returncode == 0, r.stdout + r.stderr
    text = spec.read_text()
    kernel = re.search(r'^kernel = "([^"]+)"', text, re.M)
    assert kernel, text

    out = tmp_path / "same.json"
    r, _ = timed(["check", str(vcluster.hostfile), "--ssh-config", str(vcluster.ssh_config), "--spec", str(spec),
                  "--mesh", "none", "--json", str(out)])
    assert r.returncode == 0, r.stdout + r.stderr
    nodes = load_json(out)["nodes"]
    assert [n["host"] for n in nodes] == vcluster.hosts
    for n in nodes:
        found = [f for f in n["findings"] if ".spec_" in f["check"]]
        assert any(f["check"] == "system.spec_kernel" and f["status"] == "ok" for f in found), n["host"]
        assert all(f["status"] in ("ok", "skip") for f in found), [f["message"] for f in found]

    other = tmp_path / "other.toml"
    # written for the test: the spec names a kernel release none of the nodes runs
    other.write_text(text.replace(f'kernel = "{kernel.group(1)}"', 'kernel = "6.8.0-31-generic-not-this-one"'))
    line = next(i for i, l in enumerate(other.read_text().splitlines(), 1) if l.startswith("kernel = "))
    out = tmp_path / "other.json"
    r, _ = timed(["check", str(vcluster.hostfile), "--ssh-config", str(vcluster.ssh_config), "--spec", str(other),
                  "--mesh", "none", "--json", str(out)])
    assert r.returncode == 1, r.stdout + r.stderr
    for n in load_json(out)["nodes"]:
        assert n["status"] == "fail", n["host"]
        f = next(f for f in n["findings"] if f["check"] == "system.spec_kernel")
        assert (f["status"], f["actual"], f["expected"]) == ("fail", kernel.group(1), "6.8.0-31-generic-not-this-one")
        assert f["evidence"][0].startswith(f"{other}:{line}: ")
        # the nodes agree with each other: consistency has nothing to say about the kernel
        assert not [c for c in n["findings"] if c["check"] == "consistency.system.kernel"]
