"""The collection script, its sections, and bundles."""
import json
import subprocess

from click.testing import CliRunner

from nccldiag import areas
from nccldiag.areas.base import Source
from nccldiag.cli import main
from nccldiag import bundle
from nccldiag.collect import runner, sections
from nccldiag.collect.script import build_script
from nccldiag.model.raw import RawNode


def run_script(script, env=None, timeout=30):
    return subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True, timeout=timeout, env=env).stdout


def test_sections_round_trip_with_rc_and_quotes(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n")
    srcs = [
        Source("cmdline", 'cat "$R/proc/cmdline"'),
        Source("quotes", "echo 'it'\"'\"'s'; printf 'no newline'"),
        Source("failing", "echo partial; exit 7"),
        Source("missing", "no-such-command-nccldiag"),
        Source("dump", '_dump "$R"/proc/cmdline "$R"/proc/absent'),
    ]
    out = run_script(build_script(srcs), env={"NCCLDIAG_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"})
    secs, rcs, truncated = sections.split_sections(out)
    assert not truncated
    assert secs["cmdline"] == "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n"
    assert secs["quotes"].startswith("it's\nno newline")
    assert (secs["failing"], rcs["failing"]) == ("partial\n", 7)
    assert secs["missing"] == "" and rcs["missing"] == 127
    assert secs["dump"].startswith("==> /proc/cmdline <==\nBOOT_IMAGE")
    assert "absent" not in secs["dump"]


def test_source_timeout_bounds_the_script():
    script = build_script([Source("slow", "sleep 30", timeout=1), Source("after", "echo still-ran")])
    out = run_script(script, timeout=15)
    secs, rcs, _ = sections.split_sections(out)
    assert rcs["slow"] == 124
    assert secs["after"] == "still-ran\n"


def test_truncated_output_keeps_what_came():
    text = "@@nccldiag:begin a@@\nx\n\n@@nccldiag:end a rc=0@@\n@@nccldiag:begin b@@\npartial li"
    secs, rcs, truncated = sections.split_sections(text)
    assert truncated and secs["a"] == "x\n" and secs["b"] == "partial li" and "b" not in rcs


def test_bundle_round_trip_keeps_order(tmp_path):
    nodes = [
        RawNode("zz", {"hostname": "zz\n"}, {"hostname": 0}, elapsed=1.5),
        RawNode("aa", {}, {}, error={"kind": "refused", "message": "connection refused"}),
    ]
    bundle.write_bundle_index(str(tmp_path), ["zz", "aa"])
    for n in nodes:
        bundle.write_node(str(tmp_path), n)
    back = bundle.read_bundle(str(tmp_path))
    assert [n.host for n in back] == ["zz", "aa"]
    assert back[0].sections == {"hostname": "zz\n"} and back[0].rcs == {"hostname": 0}
    assert back[1].error["kind"] == "refused"


def test_collect_script_prints_exactly_the_script():
    res = CliRunner().invoke(main, ["collect", "--script", "--only", "system"])
    assert res.exit_code == 0
    assert res.output == runner.script_for(areas.select(["system"]))
    assert res.output.startswith("#!/bin/sh\n")


def test_local_check_and_bundle_agree(tmp_path):
    cli = CliRunner()
    res = cli.invoke(main, ["collect", "-o", str(tmp_path / "b"), "--only", "system", "-w", "a"], catch_exceptions=False)
    # -w a: an SSH target that does not resolve here -> recorded as such, exit 3
    assert res.exit_code == 3
    meta = json.loads((tmp_path / "b" / "a" / "_node.json").read_text())
    assert meta["error"]["kind"] in ("resolve", "config", "unreachable")
    live = cli.invoke(main, ["check", "--only", "system", "--save", str(tmp_path / "l"), "--json", str(tmp_path / "live.json")])
    assert live.exit_code in (0, 1)
    offline = cli.invoke(main, ["check", "--bundle", str(tmp_path / "l"), "--json", "-"])
    data = json.loads(offline.output)
    live_data = json.loads((tmp_path / "live.json").read_text())
    strip = lambda d: [(f["check"], f["status"], f["message"]) for n in d["nodes"] for f in n["findings"] if f["area"] != "ssh"]
    assert strip(data) == strip(live_data)
    assert data["schema"] == "nccldiag.check/1"


def test_usage_errors_are_messages_not_tracebacks(tmp_path):
    cli = CliRunner()
    r = cli.invoke(main, ["check", str(tmp_path / "missing.txt")])
    assert r.exit_code == 2 and "missing.txt: no such hostfile" in r.output and "Traceback" not in r.output
    bad = tmp_path / "hosts"
    bad.write_text("good\nbad;name\n")
    r = cli.invoke(main, ["check", str(bad)])
    assert r.exit_code == 2 and f"{bad}:2:" in r.output
    r = cli.invoke(main, ["check", "--only", "nonsense"])
    assert r.exit_code == 2 and "unknown area nonsense" in r.output
    r = cli.invoke(main, ["check", "--bundle", str(tmp_path / "nobundle")])
    assert r.exit_code == 2 and "nobundle" in r.output


def test_json_to_a_device_writes_in_place(tmp_path):
    """--json /dev/stdout (or a FIFO) must be written to, never replaced by a file."""
    import os
    import stat

    from nccldiag.report.outputs import Outputs

    def write_json(doc, path):  # as every command writes --json PATH
        Outputs({"json": path}).write(doc)

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import threading

    got = {}
    reader = threading.Thread(target=lambda: got.update(text=open(fifo).read()))
    reader.start()
    write_json({"a": 1}, str(fifo))
    reader.join(10)
    assert json.loads(got["text"]) == {"a": 1}
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    write_json({"b": 2}, str(tmp_path / "plain.json"))
    assert json.loads((tmp_path / "plain.json").read_text()) == {"b": 2}
    assert not (tmp_path / "plain.json.tmp").exists()


def test_json_write_never_follows_a_planted_temporary_name(tmp_path):
    """A symlink at the old fixed name ``out.json.tmp`` is left alone: its target is not written."""
    import os

    from nccldiag.report.outputs import Outputs

    target = tmp_path / "victim"
    target.write_text("untouched\n")
    os.symlink(target, tmp_path / "out.json.tmp")
    Outputs({"json": str(tmp_path / "out.json")}).write({"a": 1})
    assert target.read_text() == "untouched\n"
    assert json.loads((tmp_path / "out.json").read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "out.json.tmp", "victim"]


def test_collect_refuses_a_directory_that_is_not_a_bundle(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("someone's notes\n")
    r = CliRunner().invoke(main, ["collect", "-o", str(out), "--only", "system"])
    assert r.exit_code == 2 and "not empty and not a bundle" in r.output, r.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    r = CliRunner().invoke(main, ["check", "--save", str(out), "--only", "system"])
    assert r.exit_code == 2 and "not empty and not a bundle" in r.output


def test_a_bundle_rewritten_holds_only_its_last_collection(tmp_path):
    """A node directory left from an earlier collection is not read back as current."""
    b = str(tmp_path / "b")
    for host in ("old-node", "n1"):
        bundle.write_node(b, RawNode(host=host, sections={"os_release": f"NAME={host}\n"}))
    bundle.write_bundle_index(b, ["n1"])
    bundle.write_node(b, RawNode(host="n1", sections={"os_release": "NAME=new\n"}))
    back = bundle.read_bundle(b)
    assert [n.host for n in back] == ["n1"] and back[0].sections["os_release"] == "NAME=new\n"
    # the replaced node leaves nothing hidden behind
    assert not [p for p in (tmp_path / "b").iterdir() if p.name.startswith(".")]


def test_a_full_disk_saves_no_half_node_and_loses_no_result(tmp_path):
    """A real full file system (a 16 KiB tmpfs): the node is reported collected but not saved, exit 3,
    and nothing that reads back as a node is left."""
    import os

    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(small)],
                      capture_output=True, timeout=30).returncode != 0:
        import pytest

        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        r = CliRunner().invoke(main, ["collect", "-o", str(small / "b")])
        assert r.exit_code == 3, r.output
        assert "collected but not saved" in r.output and "No space left on device" in r.output
        assert "Traceback" not in r.output
        # the host the bundle lists reads back as not collected, never as a node with outputs
        back = bundle.read_bundle(str(small / "b"))
        assert [(n.sections, n.error["kind"]) for n in back] == [({}, bundle.NOT_COLLECTED)]
        assert not [p for p in os.listdir(small / "b") if p.startswith(".")]
    finally:
        subprocess.run(["umount", str(small)], timeout=30)


def test_a_source_that_never_answers_is_named_on_its_node_and_its_area_is_not_checked(tmp_path):
    """This machine with a root (NCCLDIAG_ROOT, written for this test) whose /etc/os-release is a FIFO no one
    writes: its read is stopped at the source's bound (10 s). Before: the node was healthy, the OS missing from
    its facts and nothing said. Now the source is a warning naming the file, in the table, the JSON and the
    HTML, and the system area says skip with the reason, never ok."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    os.mkfifo(root / "etc" / "os-release")
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "NCCLDIAG_ROOT": str(root), "PYTHONPATH": repo, "NO_COLOR": "1", "COLUMNS": "250",
           "XDG_STATE_HOME": str(tmp_path / "state")}
    r = subprocess.run([sys.executable, "-m", "nccldiag", "check", "--local", "--only", "system", "--json",
                        str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")],
                       capture_output=True, text=True, timeout=120, env=env)
    doc = json.loads((tmp_path / "r.json").read_text())
    (node,) = doc["nodes"]
    by = {f["check"]: f for f in node["findings"]}
    note = by["system.source_stopped"]
    assert note["status"] == "warn" and note["message"].startswith("/etc/os-release: no answer in 10 s"), note
    assert by["system.source_missing"]["status"] == "skip" and "/etc/os-release" in by["system.source_missing"]["message"]
    assert node["areas"]["system"] == "warn" and node["status"] == "warn" and "system.basic" not in by
    assert "/etc/os-release: no answer in 10 s" in r.stdout, r.stdout + r.stderr
    assert "/etc/os-release: no answer in 10 s" in (tmp_path / "r.html").read_text()
