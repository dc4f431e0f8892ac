"""One ``ssh -G`` answer shared by the hosts the configuration cannot tell apart, checked against ``ssh -G`` run
for every host by the installed OpenSSH client. The ssh_config files here are written for these tests."""
import pickle
import shutil
import threading

import pytest

from nccldiag.transport import sshconfig

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")


def settings(config, hosts):
    """Every host's settings through one :class:`HostConfigs`, asked in a scrambled order, and through
    ``ssh -G`` for each host alone; and how many ``ssh -G`` runs the shared ones took."""
    shared = sshconfig.HostConfigs(str(config), [(h, None, None) for h in hosts])
    order = hosts[1::2] + hosts[::2]
    got = {h: shared.resolve(h) for h in order}
    alone = {h: sshconfig.resolve(h, config_path=str(config)) for h in hosts}
    return got, alone, shared.asked


# One block per node with its address, as cluster tools write them; patterns and tokens on top.
PER_NODE = """\
Host node01
  HostName 10.0.0.1
Host node02
  HostName 10.0.0.2
Host node03
  HostName 10.0.0.3
Host node04
  HostName 10.0.0.4
  Port 2222
Host node05
  HostName 10.0.0.5
  User admin
Host gpu*
  HostName %h.ib
  IdentityFile ~/.ssh/id_%h
Host * !gpu03
  UserKnownHostsFile /tmp/known_hosts_%n
  StrictHostKeyChecking accept-new
"""


def test_hosts_that_differ_each_get_their_own_settings(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(PER_NODE)
    hosts = ["node01", "node02", "node03", "node04", "node05", "gpu01", "gpu02", "gpu03", "login", "Login2"]
    got, alone, asked = settings(config, hosts)
    assert got == alone
    # what the check relies on: the address, port and user of each, and the name written where %h/%n are
    assert [got[h].hostname for h in ("node01", "node02", "node04", "gpu02")] == [
        "10.0.0.1", "10.0.0.2", "10.0.0.4", "gpu02.ib"]
    assert (got["node04"].port, got["node05"].user, got["node01"].port) == (2222, "admin", 22)
    assert got["gpu02"].known_hosts_files[0] == "/tmp/known_hosts_gpu02" and got["gpu03"].known_hosts_files[0] != (
        "/tmp/known_hosts_gpu03")
    # node01-03 share one answer (their blocks differ only by the address), gpu01-02 another; node04 and
    # node05 (a port, a user of their own), gpu03 (no known_hosts line), login and Login2 (a name with
    # capitals, which ssh writes in lower case) are each their own
    assert asked == 2 + 2 + 1 + 1 + 1 + 1 + 1


def test_match_host_and_originalhost_are_evaluated_per_host(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host n1\n  HostName 10.1.0.1\nHost n2\n  HostName 10.1.0.2\nHost n3\n  HostName 10.2.0.3\n"
        "Match host 10.1.*\n  Port 2200\n"
        "Match originalhost n2,n3 !host 10.2.*\n  User ops\n"
        "Host *\n  User root\n")
    got, alone, _ = settings(config, ["n1", "n2", "n3", "n4"])
    assert got == alone
    assert [(got[h].port, got[h].user) for h in ("n1", "n2", "n3", "n4")] == [
        (2200, "root"), (2200, "ops"), (22, "root"), (22, "root")]


def test_an_include_and_a_match_it_cannot_work_out(tmp_path):
    inc = tmp_path / "cluster.conf"
    inc.write_text("Host c*\n  Port 2201\n")
    config = tmp_path / "ssh_config"
    config.write_text(f"Include {inc}\nHost c1\n  HostName 10.3.0.1\nHost c2\n  HostName 10.3.0.2\n")
    got, alone, asked = settings(config, ["c1", "c2", "c3"])
    assert got == alone and got["c2"].port == 2201 and asked == 2 + 1
    # Match exec reads anything: every host asks ssh -G for itself
    config.write_text(f"Match exec \"test %h = c2\"\n  Port 2202\nHost *\n  Include {inc}\n")
    got, alone, asked = settings(config, ["c1", "c2", "c3"])
    assert got == alone and got["c2"].port == 2202 and got["c1"].port == 2201 and asked == 3
    assert sshconfig.Layout(str(config)).per_host == "Match exec"


def test_a_value_that_is_not_the_name_written_in_is_not_shared(tmp_path):
    # %C is a hash of the host's names: the second host's answer does not confirm the first's template
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  UserKnownHostsFile /tmp/known_hosts_%C\n")
    got, alone, asked = settings(config, ["a1", "a2", "a3", "a4"])
    assert got == alone and asked == 4
    # names that are part of each other (n1, n10, n100) share one answer, each written in whole
    config.write_text("Host *\n  UserKnownHostsFile /tmp/known_hosts_%n\n")
    got, alone, asked = settings(config, ["n1", "n10", "n100", "n2"])
    assert got == alone and asked == 2


def test_addresses_other_than_canonical_ipv4_ask_for_themselves(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  Port 2203\n")
    hosts = ["10.4.0.1", "10.4.0.2", "10.4.0.3", "10.1", "fe80::1", "fe80::2"]
    got, alone, asked = settings(config, hosts)
    assert got == alone and asked == 2 + 1 + 2


def test_hosts_connecting_at_once_share_one_answer(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(PER_NODE)
    hosts = [f"gpu{i:02d}" for i in range(1, 33)]
    shared = sshconfig.HostConfigs(str(config), [(h, None, None) for h in hosts])
    got = {}

    def one(h):
        got[h] = shared.resolve(h)

    threads = [threading.Thread(target=one, args=(h,)) for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    # gpu03 (outside "Host * !gpu03") asks for itself, the 31 others share two answers
    assert shared.asked == 3 and [got[h].hostname for h in hosts] == [f"{h}.ib" for h in hosts]
    # a worker process gets the hosts and the file, and works its answers out again
    again = pickle.loads(pickle.dumps(shared))
    assert again.asked == 0 and again.resolve("gpu07") == got["gpu07"]


def test_a_host_whose_ssh_G_fails_is_a_config_error_and_the_others_ask_for_themselves(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  Port 2204\n")
    shared = sshconfig.HostConfigs(str(config), [("ok1", None, None), ("bad name", None, None), ("ok2", None, None)])
    with pytest.raises(sshconfig.TransportError) as exc:
        shared.resolve("bad name")
    assert exc.value.kind == sshconfig.CONFIG
    assert shared.resolve("ok1") == sshconfig.resolve("ok1", config_path=str(config))
