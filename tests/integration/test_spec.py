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


def test_probe_and_isolate_take_the_spec_policy_and_thresholds(vcluster, tmp_path, monkeypatch):
    spec = tmp_path / "site.toml"
    # written for the test: a key the probe's facts do not tell, and isolate's slowness margin
    spec.write_text('[software]\nkernel = "*"\n\n[thresholds]\nisolate_fraction = 0.1\n')
    hosts = ["-w", ",".join(vcluster.hosts[:2]), "--ssh-config", str(vcluster.ssh_config)]
    out = tmp_path / "p.json"
    r, _ = timed(["probe", *hosts, "--nproc-per-node", "2", "--timeout", "90", "--spec", str(spec),
                  "-o", str(tmp_path / "run"), "--json", str(out)], timeout=200)
    assert r.returncode == 0, r.stdout + r.stderr
    (rest,) = [f for f in load_json(out)["findings"] if f["check"] == "probe.spec_not_checked"]
    assert rest["status"] == "skip" and "software.kernel" in rest["message"] and "gloo" in rest["message"]

    monkeypatch.setenv("NCCLDIAG_SPEC", str(spec))  # isolate reads the same spec from the environment
    out = tmp_path / "iso.json"
    r, _ = timed(["isolate", *hosts, "--size", "64K", "--timeout", "90", "-o", str(tmp_path / "iso"),
                  "--json", str(out)], timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    data = load_json(out)
    assert {t["fraction"] for t in data["thresholds"].values()} == {0.1}
    (note,) = [f for f in data["findings"] if f["check"] == "isolate.spec_threshold"]
    assert f"{spec}:5" in note["message"]
