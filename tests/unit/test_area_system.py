"""System area: the node's own host name (resolves to a routable address, to loopback, or not at all)."""
import subprocess

from nccldiag.areas import system
from nccldiag.areas.base import NodeFacts
from nccldiag.model.findings import Status
from tests.unit.bundles import system_sources


def judge(raw):
    facts = system.parse(raw)
    return facts, {f.check: f for f in system.judge(facts, NodeFacts("h"))}


def test_healthy_name_gives_no_resolution_finding():
    facts, found = judge(system_sources("gpu01", "10.0.0.2"))
    assert facts.self_resolves is True and facts.self_addresses == ["10.0.0.2"]
    assert "system.hostname_unresolved" not in found and "system.hostname_loopback" not in found
    assert all(f.status == Status.OK for f in found.values())


def test_unresolvable_name_is_a_finding_with_why_and_fix():
    raw = dict(system_sources("gpu01", "10.0.0.2"), resolve_self="unresolved\n")
    facts, found = judge(raw)
    assert facts.self_resolves is False and facts.self_addresses == []
    f = found["system.hostname_unresolved"]
    assert f.status == Status.WARN and "gpu01" in f.message
    for word in ("c10d rendezvous", "NCCL", "MPI", "/etc/hosts", "DNS", "--master-addr"):
        assert word in f.fix, word
    assert "system.hostname_loopback" not in found


def test_loopback_is_still_reported():
    raw = dict(system_sources("gpu01", "10.0.0.2"), resolve_self="127.0.1.1\n")
    _, found = judge(raw)
    assert found["system.hostname_loopback"].status == Status.WARN
    assert "system.hostname_unresolved" not in found


def test_no_resolve_section_says_nothing():
    raw = dict(system_sources("gpu01", "10.0.0.2"))
    del raw["resolve_self"]
    facts, found = judge(raw)
    assert facts.self_resolves is None and "system.hostname_unresolved" not in found


def test_resolve_self_command_prints_the_marker_for_an_unknown_name(tmp_path):
    (source,) = [s for s in system.SOURCES if s.name == "resolve_self"]
    # a hostname command that prints a name no resolver knows
    (tmp_path / "hostname").write_text("#!/bin/sh\necho nccldiag-no-such-host.invalid\n")
    (tmp_path / "hostname").chmod(0o755)
    r = subprocess.run(["sh", "-c", source.command], capture_output=True, text=True, timeout=30,
                       env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert r.stdout.strip() == system.UNRESOLVED
