"""Hostfile formats, node sets, malformed lines and refused names."""
import os

import pytest

from nccldiag import inventory
from nccldiag.model.errors import InventoryError

HOSTFILES = os.path.join(os.path.dirname(__file__), "..", "..", "hostfiles")


def parse(text):
    return inventory.parse_hostfile_text(text, "hosts.txt").hosts


def test_plain_keeps_file_order_and_multiple_names_per_line():
    hosts = parse("# c\nzeta\n\nalpha beta\n")
    assert [h.name for h in hosts] == ["zeta", "alpha", "beta"]
    assert hosts[0].where == "hosts.txt:2"


def test_openmpi_keywords_and_comments():
    hosts = parse("n1 slots=8 max_slots=8 # trailing\nn2 slots=4 port=2222 username=admin // c\n/* block\nn9\n*/ n3\n")
    assert [(h.name, h.slots, h.port, h.user) for h in hosts] == [
        ("n1", 8, None, None),
        ("n2", 4, 2222, "admin"),
        ("n3", None, None, None),
    ]


def test_mpich_colon_is_slots_not_port():
    (h,) = parse("gpu01:8\n")
    assert (h.name, h.slots, h.port) == ("gpu01", 8, None)


def test_deepspeed_and_user_at_host():
    hosts = parse("worker-0 slots=8\nroot@worker-1 slots=8\n")
    assert [(h.name, h.user, h.slots) for h in hosts] == [("worker-0", None, 8), ("worker-1", "root", 8)]
    assert hosts[1].target == "root@worker-1"


def test_nodeset_expansion_keeps_written_order():
    hosts = parse("gpu[003-004,001]\nlogin1\nadmin@n[1-2]\n")
    assert [h.name for h in hosts] == ["gpu001", "gpu003", "gpu004", "login1", "n1", "n2"]
    assert hosts[-1].user == "admin"


def test_expression_order_across_parts():
    hosts = inventory.from_expression("b[1-2],a1", "-w")
    assert [h.name for h in hosts] == ["b1", "b2", "a1"]


def test_exclusion_in_file_and_on_command_line(tmp_path):
    p = tmp_path / "h"
    p.write_text("n[1-4]\n^n2\n")
    inv = inventory.build([str(p)], exclude_exprs=["n4"], environ={})
    assert inv.names == ["n1", "n3"]


def test_duplicates_reported_first_kept(tmp_path):
    p = tmp_path / "h"
    p.write_text("a\nb\na slots=2\n")
    inv = inventory.build([str(p)], environ={})
    assert inv.names == ["a", "b"]
    assert inv.duplicates == [("a", f"{p}:3", f"{p}:1")]


def test_slurm_nodelist_when_no_hosts_given():
    inv = inventory.build(environ={"SLURM_JOB_NODELIST": "gpu[001-003]"})
    assert inv.names == ["gpu001", "gpu002", "gpu003"]
    assert inventory.build(environ={}) is None


@pytest.mark.parametrize(
    "line, expect",
    [
        ("node01;rm -rf /", "contains ';'"),
        ("node$(id)", "refused"),
        ("node`id`", "refused"),
        ("node|x", "refused"),
        ("n1 slots=x", "slots='x': expected a whole number"),
        ("n1 port=70000", "port=70000: expected 1-65535"),
        ("n1 foo=1", "unknown keyword 'foo'"),
        ("slots=4", "expected a host name first"),
        ("n1:abc", "expected a slot count"),
        ("gpu[1-", "unbalanced brackets"),
        ("gpu[a-b]", "bad node set"),
        ("a b slots=2", "apply to one host"),
        ("-n1", "not a valid host name"),
    ],
)
def test_malformed_lines_name_file_and_line(line, expect):
    text = "ok1\n" + line + "\n"
    with pytest.raises(InventoryError) as exc:
        parse(text)
    assert str(exc.value).startswith("hosts.txt:2: ")
    assert expect in str(exc.value)


def test_hash_starts_a_comment_anywhere():
    assert [h.name for h in parse("ok1\nnode2#comment\n")] == ["ok1", "node2"]


def test_names_with_spaces_cannot_arrive_but_tabs_split():
    # whitespace separates names, so a "name with a space" is two names
    assert [h.name for h in parse("a\tb\n")] == ["a", "b"]


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(InventoryError, match="no such hostfile"):
        inventory.read_hostfile(str(tmp_path / "nope"))
    b = tmp_path / "bin"
    b.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InventoryError, match="not a text file"):
        inventory.read_hostfile(str(b))
    with pytest.raises(InventoryError, match="is a directory"):
        inventory.read_hostfile(str(tmp_path))


def test_everything_excluded_is_an_error(tmp_path):
    p = tmp_path / "h"
    p.write_text("a\n")
    with pytest.raises(InventoryError, match="no hosts left"):
        inventory.build([str(p)], exclude_exprs=["a"], environ={})


@pytest.mark.parametrize("name", sorted(os.listdir(HOSTFILES)))
def test_shipped_examples_parse(name):
    inv = inventory.read_hostfile(os.path.join(HOSTFILES, name))
    assert inv.hosts, name
    assert all(h.where.startswith(os.path.join(HOSTFILES, name)) for h in inv.hosts)


def test_shipped_example_values():
    inv = inventory.read_hostfile(os.path.join(HOSTFILES, "openmpi.txt"))
    assert [(h.name, h.slots, h.port, h.user) for h in inv.hosts] == [
        ("gpu001", 8, None, None),
        ("gpu002", 8, None, None),
        ("gpu003", 8, 2222, None),
        ("gpu004", 8, None, "admin"),
    ]
    ns = inventory.read_hostfile(os.path.join(HOSTFILES, "nodeset.txt"))
    assert len(ns.hosts) == 34 and ns.hosts[-1].name == "login1" and ns.hosts[32].name == "gpu040"


# ---- hostile and careless files (CONSTRUCTED inputs) -------------------------------------------


def test_a_device_is_not_read(tmp_path):
    with pytest.raises(InventoryError, match="not a regular file"):
        inventory.read_hostfile("/dev/zero")


def test_a_huge_node_set_is_refused_before_it_is_expanded():
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(InventoryError, match="limit 100000"):
            inventory.from_expression("n[1-100000000]", "-w")
        with pytest.raises(InventoryError, match="limit 100000"):
            inventory.from_expression("a[1-60000],b[1-60000]", "-w")  # the total counts, not each part
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 100,000,000 names expanded would take gigabytes; counted, the refusal takes next to nothing
    assert peak < 16 << 20, peak


def test_a_credentials_file_is_never_quoted(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$Zq1abc$VerySecretHashValue:19000:0:99999:7:::\n")
    link = tmp_path / "hosts.txt"
    link.symlink_to(secret)
    with pytest.raises(InventoryError) as exc:
        inventory.read_hostfile(str(link))
    assert "VerySecret" not in str(exc.value) and "$6$" not in str(exc.value)
    assert "credentials" in str(exc.value)


def test_a_long_line_is_quoted_short(tmp_path):
    f = tmp_path / "hosts.txt"
    f.write_text("node01\n" + "x;" * 5_000_000 + "\n")
    with pytest.raises(InventoryError) as exc:
        inventory.read_hostfile(str(f))
    assert len(str(exc.value)) < 300 and ":2:" in str(exc.value)


def test_a_bom_is_stripped(tmp_path):
    f = tmp_path / "hosts.txt"
    f.write_bytes("\ufeffnode01 slots=2\nnode02\n".encode("utf-8"))
    assert inventory.read_hostfile(str(f)).names == ["node01", "node02"]


def test_slot_counts_are_capped_and_a_port_like_count_says_so():
    with pytest.raises(InventoryError, match="port=2222"):
        parse("node:2222\n")
    with pytest.raises(InventoryError, match="limit 1024"):
        parse("node slots=5000\n")
    assert parse("node:8\n")[0].slots == 8


def test_the_same_host_two_ways_is_a_conflict_not_a_silent_drop(tmp_path):
    f = tmp_path / "hosts.txt"
    f.write_text("admin@gpu01\ngpu02\ngpu01 port=2222\n")
    with pytest.raises(InventoryError) as exc:
        inventory.build([str(f)])
    msg = str(exc.value)
    assert msg.startswith(f"{f}:3: gpu01") and f"conflicts with {f}:1" in msg and "admin" in msg and "2222" in msg
    f.write_text("gpu01\ngpu02\ngpu01\n")  # the same host the same way: checked once, and said
    inv = inventory.build([str(f)])
    assert inv.names == ["gpu01", "gpu02"] and inv.duplicates == [("gpu01", f"{f}:3", f"{f}:1")]


@pytest.mark.parametrize("name, text, secret, kind", [
    (".netrc", "machine gpu01.example.com login admin password hunter2\n", "hunter2", ".netrc"),
    (".netrc", "default\n    login anonymous\n    password hunter2@example.com\n", "hunter2", ".netrc"),
    (".netrc", "# mirrors\nmachine a.example login bob\n  password hunter2\nmacdef init\n", "hunter2", ".netrc"),
    (".pgpass", "db.example.com:5432:sales:alice:hunter2\n", "hunter2", ".pgpass"),
    ("passwd", "root:x:0:0:root:/root:/bin/bash\nhunter2:x:1000:1000::/home/hunter2:/bin/sh\n", "hunter2", "passwd"),
    ("id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nhunter2AAAAB3NzaC1lZDI1NTE5\n", "hunter2", "private key"),
    # netrc's keywords in capitals, as curl reads them too
    ("hosts", "MACHINE gpu01.example.com LOGIN admin PASSWORD S3cretUpper\n", "S3cretUpper", ".netrc"),
    ("hosts", "Machine a.example\n\tLogin bob\n\tPassword S3cretUpper\n", "S3cretUpper", ".netrc"),
    # a token alone, of the shapes gitleaks' rules describe (characters made up)
    ("hosts", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8\n", "ghp_A1b2", "token"),
    ("token", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH\n", "hf_aBcD", "token"),
    ("hosts", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx\n", "xoxb-1234", "token"),
    ("hosts", "AKIAIOSFODNN7EXAMPLE\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", "AKIAIOSF", "token"),
    # a password alone is a valid host name: the file's name says what it is
    (".git-credentials", "S3cretUpper\n", "S3cretUpper", ".git-credentials"),
    ("_netrc", "S3cretUpper\n", "S3cretUpper", ".netrc"),
])
def test_a_credentials_file_is_refused_before_any_of_it_becomes_a_host(tmp_path, name, text, secret, kind):
    """CONSTRUCTED credential files given as hostfiles: every line of a .netrc parses as host names, so the file is
    recognised before parsing; its words are never hosts (looked up, tried over SSH) and never shown."""
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(InventoryError) as exc:
        inventory.build([str(f)], environ={})
    msg = str(exc.value)
    assert msg.startswith(f"{f}: not a hostfile: it looks like") and kind in msg and "credentials" in msg, msg
    assert secret not in msg


def test_a_hostfile_that_mentions_machines_and_logins_is_still_a_hostfile(tmp_path):
    f = tmp_path / "hosts.txt"
    f.write_text("# machine room B, login nodes first\nlogin01 slots=2 // the login node\ngpu[01-02]:8\n")
    assert inventory.read_hostfile(str(f)).names == ["login01", "gpu01", "gpu02"]


def test_a_netrc_given_to_the_cli_contacts_nothing(tmp_path):
    """Before: the password became a host, was looked up in DNS, tried over SSH and printed."""
    import subprocess
    import sys

    f = tmp_path / "netrc"
    f.write_text("machine gpu01.example.com login admin password hunter2\n")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(HOSTFILES), "NO_COLOR": "1"}
    r = subprocess.run([sys.executable, "-m", "nccldiag", "check", str(f), "--only", "system"], capture_output=True,
                       text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 2 and "looks like a .netrc file" in r.stderr, r.stdout + r.stderr
    assert "hunter2" not in r.stdout + r.stderr


def test_user_at_host_colon_n_is_never_read_silently_as_slots():
    """``root@gpu01:22`` gave 22 ranks without a word: ssh reads the form as a port."""
    with pytest.raises(InventoryError) as exc:
        parse("root@gpu01:22\n")
    assert "'root@gpu01 port=22' for an SSH port or 'root@gpu01 slots=22' for 22 ranks" in str(exc.value)
    with pytest.raises(InventoryError, match="port=22"):
        inventory.from_expression("gpu02,root@gpu01:22", "-w")
    assert [(h.name, h.user, h.slots) for h in parse("gpu01:8 username=root\nroot@gpu02 slots=8\n")] == [
        ("gpu01", "root", 8), ("gpu02", "root", 8)]


@pytest.mark.parametrize("text, what", [
    ("node01\nnode02\rtouch\n", "a carriage return (\\r) inside the line, after 'node02'"),
    ("node02\x0btouch\n", "a vertical tab"),
    ("node02\u2028touch\n", "a line separator (U+2028)"),
    ("node02\x85touch\n", "U+0085"),
])
def test_a_lone_line_break_inside_a_line_makes_no_host(text, what):
    """``node02\\rtouch`` made "touch" a host (splitlines() broke the line there, split() too)."""
    with pytest.raises(InventoryError) as exc:
        parse(text)
    assert what in str(exc.value) and str(exc.value).startswith(f"hosts.txt:{text.count(chr(10))}: ")
    with pytest.raises(InventoryError, match="inside the line"):
        inventory.from_expression(text.rstrip("\n").split("\n")[-1], "-w")
    assert [h.name for h in parse("node01\r\nnode02\r\n")] == ["node01", "node02"]  # CRLF is a line end


@pytest.mark.parametrize("spec, shown", [
    ("::1", "'::1' is an IPv6 address"),
    ("[::1]", "'[::1]' is an IPv6 address"),
    ("fe80::1%eth0", "'fe80::1%eth0' is an IPv6 address"),
    ("root@[::1]:22", "'root@[::1]:22' is an IPv6 address"),
    ("2001:db8::5", "'2001:db8::5' is an IPv6 address"),
])
def test_an_ipv6_address_is_named_as_one(spec, shown):
    """Before: "host name ':' is not valid", "expected a slot count", "bad node set '[::1]'"."""
    for call in (lambda: parse(spec + "\n"), lambda: inventory.from_expression(spec, "-w")):
        with pytest.raises(InventoryError) as exc:
            call()
        msg = str(exc.value)
        assert shown in msg and "HostName" in msg and "slot count" not in msg and "node set" not in msg, msg
    with pytest.raises(InventoryError, match="':22' after it would be read as 22 slots"):
        parse("root@[::1]:22\n")


def test_five_thousand_copies_of_a_host_are_one_note(tmp_path):
    """Before: 4,999 'duplicate host' notes. Now one per host given again, and a count past ten hosts."""
    from nccldiag.collect.session import MOST_DUPLICATE_NOTES, inventory_notes

    f = tmp_path / "hosts"
    f.write_text("advt01\n" * 5000 + "advt02\n")
    inv = inventory.build([str(f)], environ={})
    assert inv.names == ["advt01", "advt02"]
    assert inventory_notes(inv) == [f"{f}:2: duplicate host advt01 (first at {f}:1), and 4998 more times after "
                                    f"(last at {f}:5000), checked once"]
    f.write_text("".join(f"n{i:02d}\nn{i:02d}\n" for i in range(25)))
    notes = inventory_notes(inventory.build([str(f)], environ={}))
    assert len(notes) == MOST_DUPLICATE_NOTES + 1 and notes[0] == f"{f}:2: duplicate host n00 (first at {f}:1), checked once"
    assert notes[-1] == "and 15 more duplicate hosts (25 duplicate entries in all), each checked once"
