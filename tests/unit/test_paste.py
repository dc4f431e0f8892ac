"""A pasted line read through what surrounds it (``nccldiag.paste.lines``), and ``nccldiag log`` reading node
outputs from standard input and files alike.

The decorated lines here are written for these tests, each in the form the program named beside it prints (a
shell prompt, pdsh, a launcher, dmesg, syslog, grep, chat); the node outputs are real captures read in place from
../shared/fixtures/node.
"""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nccldiag import paste
from nccldiag.cli.log import log as log_command
from nccldiag.model.findings import Status
from nccldiag.paste import lines as L
from tests import real

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
CA = "CA 'mlx5_0'"

# (the line as pasted, the clean line, the layers taken off: (kind, host named))
LINES = [
    ("root@node1:~# ibstat", "ibstat", [("prompt", "node1")]),  # bash's prompt
    ("[user@node1 ~]$ ibstat", "ibstat", [("prompt", "node1")]),  # RHEL's prompt
    ("$ nvidia-smi -q", "nvidia-smi -q", [("prompt", None)]),
    ("# \t\tState: Down", "\t\tState: Down", [("comment", None)]),  # an output quoted as a shell comment
    (f"> > {CA}", CA, [("quote", None), ("quote", None)]),  # nested quote marks
    (f"2024-05-01T10:00:00.123Z {CA}", CA, [("time", None)]),
    (f"Nov 29 00:12:15 gpu7 kernel: {XID}", XID, [("time", "gpu7")]),  # syslog names the host
    (f"[ 123.456789] {XID}", XID, [("time", None)]),  # dmesg
    (f"[  +0.000004] {XID}", XID, [("time", None)]),  # dmesg -H's delta
    (f"[Tue Apr 15 16:50:03 2025] {XID}", XID, [("time", None)]),  # dmesg -T
    (f"192.168.11.119: kern: warning: [2025-04-15T16:50:03.123456+08:00]: {XID}", XID,
     [("host", "192.168.11.119"), ("time", None), ("time", None)]),  # a log shipper's host, facility and time
    (f"[default3]:{CA}", CA, [("launcher", None)]),  # torchrun's label
    (f"3: {CA}", CA, [("launcher", None)]),  # srun --label
    (f"node7: {CA}", CA, [("host", "node7")]),  # pdsh
    (f"[pod/trainer-0/main] {CA}", CA, [("launcher", "trainer-0")]),  # kubectl logs --prefix
    (f"messages:Jun 17 10:00:00 gpu7 kernel: {XID}", XID, [("grep", None), ("time", "gpu7")]),  # grep's file name
    (f"/var/log/kern.log:12:Jun 17 10:00:00 gpu7 kernel: {XID}", XID, [("grep", None), ("time", "gpu7")]),
    (f"&gt; {CA}", CA, [("quote", None)]),  # an HTML page's quote
    (f"| {CA} |", CA, [("cell", None)]),  # a markdown table's cell
    (f"<node ip>: {CA}", CA, [("host", None)]),  # an anonymised host names none
    # lspci -vvv's numbered register fields with their indentation gone are no pdsh host
    ("LnkCtl2: Target Link Speed: 16GT/s, EnterCompliance- SpeedDis-",
     "LnkCtl2: Target Link Speed: 16GT/s, EnterCompliance- SpeedDis-", []),
    ("DevCap2: Completion Timeout: Range ABCD, TimeoutDis+", "DevCap2: Completion Timeout: Range ABCD, TimeoutDis+", []),
]


@pytest.mark.parametrize("line,clean,layers", LINES, ids=[x[0][:40] for x in LINES])
def test_a_line_is_read_through_what_surrounds_it(line, clean, layers):
    p = L.peel(line)
    assert p.text == clean
    assert [(la.kind, la.host) for la in p.layers] == layers


def test_an_html_break_is_a_line_break():
    assert L.split_breaks("CA 'mlx5_0'<br>\tCA type: MT4123<br/>") == ["CA 'mlx5_0'", "\tCA type: MT4123", ""]


DOWN = "gpud-h100-roce400g-down-polling-disabled.txt"


def run(*args, input=None):
    return CliRunner().invoke(log_command, [str(a) for a in args], input=input)


def test_an_ibstat_on_standard_input_is_read_judged_and_fails_the_run():
    r = run("-", "--json", "-", input="root@gpu7:~# ibstat\n" + real.node_text("ibstat", DOWN))
    doc = json.loads(r.stdout)
    assert r.exit_code == 1
    assert [(b["kind"], b["file"], b["host"]) for b in doc["pasted"]["blocks"]] == [("ibstat", "<stdin>", "gpu7")]
    assert [f["check"] for f in doc["pasted"]["findings"] if f["status"] == "fail"] == ["ib.port_state"]
    top = [d for d in doc["diagnoses"] if d["severity"] in ("fail", "warn")]
    assert top and top[0]["severity"] == "fail" and "mlx5_11" in top[0]["summary"]


def test_standard_input_and_a_file_read_the_same(tmp_path):
    text = "# " + real.node_text("ibstat", DOWN).replace("\n", "\n# ")
    f = tmp_path / "paste.txt"
    f.write_text(text)
    a, b = json.loads(run("-", "--json", "-", input=text).stdout), json.loads(run(f, "--json", "-").stdout)
    key = lambda doc: [(x["check"], x["status"], x["message"]) for x in doc["pasted"]["findings"]]  # noqa: E731
    assert key(a) == key(b) and key(a)
    assert [d["id"] for d in a["diagnoses"]] == [d["id"] for d in b["diagnoses"]]


def test_a_healthy_output_alone_is_read_and_is_no_failure_nor_nothing_to_judge():
    r = run("-", input=real.node_text("ibstat", "gpud-h100-ib-ndr-all-active-space-indented.txt"))
    assert r.exit_code == 0, r.output
    assert "nothing to judge" not in r.output and "ibstat" in r.output
    empty = run("-", input="hello\n")
    assert "nothing to judge" in empty.output


def test_one_hosts_outputs_in_two_files_are_one_node(tmp_path):
    real.require()
    ulimit = real.ROOT / "cases" / "node-ucx8229-ulimit-a-memlock-64k-create-cq-enomem" / "node-a" / "ulimit.txt"
    (tmp_path / "a.txt").write_text("root@gpu7:~# ibstat\n" + real.node_text("ibstat", DOWN))
    (tmp_path / "b.txt").write_text("root@gpu7:~# ulimit -a\n" + ulimit.read_text(encoding="utf-8"))
    found = paste.judged(paste.merged([paste.read_file(str(tmp_path / n)) for n in ("a.txt", "b.txt")]))
    assert [(b.kind, b.host) for b in found.blocks] == [("ibstat", "gpu7"), ("ulimit -a", "gpu7")]
    assert {"ib", "limits"} <= set(found.facts["gpu7"])
    assert {f.check for f in found.findings} >= {"ib.port_state", "limits.memlock"}
    assert {f.host for f in found.findings} == {"gpu7"}


def test_the_locked_memory_row_of_ulimit_a_alone_is_read_as_the_limit():
    """The row an admin quotes (``ulimit -a | grep locked``), cut from a real ``ulimit -a``: a limit of 64 KiB
    warns on its own, an unlimited one is quiet; two other rows of the table alone are no block."""
    ulimit = real.ROOT / "cases" / "node-ucx8229-ulimit-a-memlock-64k-create-cq-enomem" / "node-a" / "ulimit.txt"
    rows = ulimit.read_text(encoding="utf-8").splitlines()
    low = next(r for r in rows if r.startswith("max locked memory"))
    r = run("-", "--json", "-", input="$ ulimit -a | grep locked\n" + low + "\n")
    doc = json.loads(r.stdout)
    assert [b["kind"] for b in doc["pasted"]["blocks"]] == ["ulimit -a"]
    assert [f["check"] for f in doc["pasted"]["findings"] if f["status"] in ("fail", "warn")] == ["limits.memlock"]
    assert [d["severity"] for d in doc["diagnoses"]][:1] == ["warn"]
    unlimited = low.replace(low.split()[-1], "unlimited")
    quiet = json.loads(run("-", "--json", "-", input=unlimited + "\n").stdout)
    assert [b["kind"] for b in quiet["pasted"]["blocks"]] == ["ulimit -a"]
    assert not [d for d in quiet["diagnoses"] if d["severity"] in ("fail", "warn")]
    others = [r for r in rows if "-l)" not in r and r.strip()][:2]
    assert not json.loads(run("-", "--json", "-", input="\n".join(others) + "\n").stdout)["pasted"]["blocks"]


def test_an_error_quoted_behind_a_hash_in_a_transcript_is_read_as_the_error():
    """A transcript whose outputs the admin quoted behind '# ' (tests/cases/node-wanpihou-...): nvidia-smi's NVML
    error alone names the driver/library mismatch, as it does unquoted; nccl-tests' own '#' lines stay comments."""
    posted = (Path(__file__).resolve().parents[1] / "cases" / "node-wanpihou-blog-driver-library-mismatch-dkms-transcript"
              / "posted-transcript.txt").read_text(encoding="utf-8").splitlines()
    lines = [posted[1], next(line for line in posted if line.startswith("# Failed to initialize NVML"))]
    for text in ("\n".join(lines), "\n".join(line.replace("# ", "", 1) for line in lines)):
        doc = json.loads(run("-", "--json", "-", input=text + "\n").stdout)
        assert doc["diagnoses"][0]["id"] == "cuda-driver-mismatch", text
    from nccldiag.nccl.grammar import error_kind
    assert error_kind(lines[1]) == "error"
    assert error_kind("# Out of bounds values : 0 OK") is None and error_kind(
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong") is None


CASES = Path(__file__).resolve().parents[1] / "cases"


def test_two_dots_alone_stand_for_lines_left_out_and_keep_an_ibstat_whole():
    from nccldiag.paste.kinds.base import elided
    assert elided("        ..") and elided("..") and elided("....") and not elided(".") and not elided(".. done")
    down = (CASES / "net-blog44-lambdadalton-notes-ibstat-mlx5-port-down-polling-elided" / "posted-ibstat.txt")
    found = paste.judged(paste.merged([paste.read_file(str(down))]))
    assert [b.kind for b in found.blocks] == ["ibstat"]
    assert [f.check for f in found.findings if f.status == Status.FAIL] == ["ib.port_state"]
    up = (CASES / "net-blog44-lambdadalton-notes-ibstat-mlx5-active-linkup-working-card-healthy" / "posted-ibstat.txt")
    found = paste.judged(paste.merged([paste.read_file(str(up))]))
    assert [b.kind for b in found.blocks] == ["ibstat"]
    assert not [f for f in found.findings if f.status in (Status.FAIL, Status.WARN)]


def test_an_nvidia_smi_q_fabric_section_is_read_whatever_its_keys_padding():
    r580 = (CASES / "node-gaps62b-gpuoperator2511-r580-nvidia-smi-q-fabric-state-in-progress-validator-init-error"
            / "posted-nvidia-smi-q-fabric.txt").read_text(encoding="utf-8")
    # the R580 block, the R580 block cut to its first lines, and what 'nvidia-smi -q | grep -A 2 Fabric' leaves
    grep = "\n".join(r580.splitlines()[:3]) + "\n"
    for text in (r580, "\n".join(r580.splitlines()[:5]) + "\n", grep, grep.replace(" " * 15 + ":", ":")):
        found = paste.scan(text)
        assert [b.kind for b in found.blocks] == ["nvidia-smi -q"], text
        assert [f.check for f in found.findings if f.status == Status.FAIL] == ["nvlink.fabric"], text
    done = grep.replace("In Progress", "Completed").replace(": N/A", ": Success")
    found = paste.scan(done)
    assert [b.kind for b in found.blocks] == ["nvidia-smi -q"]
    assert not [f for f in found.findings if f.status in (Status.FAIL, Status.WARN)]


def test_a_texts_last_line_is_read_whatever_it_holds():
    """The last line of a text (where its process stopped) is found past markup alone, and a long run of rule
    characters or of tags at the end is read in one pass (a bound on the line, no repeat inside a repeat)."""
    from nccldiag.paste.reader import read

    assert [x.text for x in read(b"Using /r as PyTorch extensions root...\n</details>\n```\n\n").last] == [
        "Using /r as PyTorch extensions root..."]
    for end in (b"-" * 200_000, b"- " * 100_000, b"</b>" * 50_000, b"_" * 299 + b"x"):
        got = read(b"first\n" + end + b"\n").last
        assert len(got) == 1 and got[0].lineno == 2
