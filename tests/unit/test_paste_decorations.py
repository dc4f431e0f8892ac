"""A paste's decorations and damage that the reader reads through (tests/mutations.py measures them over every
case; these hold each reading on the real text it was built from).

The texts are real (../shared/fixtures, tests/cases); what is put around them (a time, a line number, a list
marker, HTML escapes, a second paste of a CA cut before its ports) is written for the test, as said at each.
"""
from pathlib import Path
from typing import Dict, List

import pytest

from nccldiag import paste
from nccldiag.areas import smiq
from nccldiag.model.findings import Status
from nccldiag.nccl import grammar
from nccldiag.paste import lines as L, reader
from nccldiag.paste.kinds import kernel
from tests import mutations, real

CASES = Path(__file__).resolve().parents[1] / "cases"
DOWN = "gpud-h100-roce400g-down-polling-disabled.txt"  # mlx5_11 port 1 Down / Polling, mlx5_5 Disabled
SYSLOG = "May  1 12:00:00 host kernel: "  # written for the test: a syslog prefix before every line
DMESG_T = "[Wed May  1 12:00:00 2024] "  # written for the test: dmesg -T's time before every line


def case_text(case: str, name: str) -> str:
    return (CASES / case / name).read_text(encoding="utf-8")


def alarms(text: str) -> List[Dict]:
    """The fail/warn diagnoses of ``nccldiag log`` on ``text`` (its reader, in this process), as its report has them."""
    return mutations.alarms([("paste.txt", text)])


def cites(d: Dict, word: str) -> bool:
    return word in d.get("summary", "") or any(word in (e.get("text") or "") for e in d.get("evidence") or [])


def stamped(stamp: str, text: str) -> str:
    return "".join(stamp + ln + "\n" for ln in text.splitlines())


# ---- a failure line left alone is never 'nothing broken' --------------------------------------------------------


@pytest.mark.parametrize("case,name", [
    ("gpu-mlengineering-dcgmi-diag-r2-gpu-memory-fail-faulty-node", "posted-dcgmi-r2.txt"),
    ("gpu-mlengineering-nvidia-smi-grep-sram-uncorrectable-broken-gpu", "posted-transcript.txt"),
])
def test_a_failing_row_cut_from_its_table_is_unexplained_not_judged_healthy(case, name):
    # the failure lexicon's lines of the real text, alone: a dcgmi row 'Fail - GPU: 0' without its table, SRAM
    # counters without their section. The area that reads them skips every check (no table, no section): it
    # judged nothing, and the lines say something failed.
    only = mutations.lexicon_only(case_text(case, name))
    assert only.strip()
    p = paste.scan(only, "paste.txt")
    assert p.blocks and not [f for f in p.findings if f.status in (Status.FAIL, Status.WARN)]
    d = alarms(only)
    assert d and d[0]["severity"] == "fail" and d[0]["category"] == "unexplained"


def test_a_healthy_table_an_area_judges_keeps_its_lines_quiet():
    # the whole dcgmi diag table of a run that passes: the area judges it, no line is left to the lexicon
    case = CASES / "gpu-dcgm55-dcgmi-diag-r3-deployment-tests-all-pass-healthy"
    texts = [f.read_text(encoding="utf-8") for f in sorted(case.glob("posted*"))]
    assert texts and all(alarms(t) == [] for t in texts)
    assert any("dcgmi diag" in [b.kind for b in paste.scan(t).blocks] for t in texts)


def test_the_inforom_and_nvswitch_lines_are_failure_lines_wherever_they_are_cut():
    inforom = case_text("gpu-gpuoperator-docs-validator-nvidia-smi-inforom-corrupted-rc14",
                        "posted-driver-validation-log.txt")
    d = alarms(mutations.TRANSFORMS["tail-15"](inforom))
    assert d and d[0]["category"] == "gpu_lost_xid" and cites(d[0], "infoROM is corrupted")
    sxid = case_text("gpu-gpud-docs-quoted-dmesg-xid79-nvswitch-sxid20034-ltssm-fault", "posted-dmesg.txt")
    d = alarms(mutations.TRANSFORMS["tail-15"](sxid))
    assert d and d[0]["severity"] == "fail" and cites(d[0], "SXid")


# ---- a time before every line ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stamp", [SYSLOG, DMESG_T, "2024-05-01T12:00:00.123Z "])
def test_a_tools_output_under_a_time_is_read_as_the_tool_not_the_kernel(stamp):
    lspci = case_text("node-cloudnetops-blog-lspci-lnksta-8gts-x2-downgraded-from-16gts-x4", "posted-lspci-speed.txt")
    p = paste.scan(stamped(stamp, lspci), "paste.txt")
    assert [b.kind for b in p.blocks] == ["lspci"]
    d = alarms(stamped(stamp, lspci))
    assert d and d[0]["category"] == "pcie_link_aer"


@pytest.mark.parametrize("stamp", [SYSLOG, DMESG_T])
def test_a_shell_transcript_under_a_time_is_read_as_one(stamp):
    shell = case_text("node-nvpeermem46-lsmod-empty-modinfo-nv-peer-mem-after-reboot", "posted-shell.txt")
    p = paste.scan(stamped(stamp, shell), "paste.txt")
    assert [ln.lineno for ln in p.peermem_absent] == [1]  # 'lsmod | grep nv_peer' and the next prompt
    assert "modinfo" in [b.kind for b in p.blocks]
    assert alarms(stamped(stamp, shell))[0]["category"] == "peermem_missing"


def test_a_prompt_and_a_command_behind_a_time_are_the_shells():
    p = L.peel(SYSLOG + "root@node1:~# lsmod | grep nv_peer_mem")
    assert [la.kind for la in p.layers] == ["time", "prompt"] and p.text == "lsmod | grep nv_peer_mem"
    assert kernel.classify(p) is None
    launched = L.peel(SYSLOG + "bash -c 'ulimit -l unlimited && ./alltoall_perf -b 1 -e 8'")
    assert kernel.classify(launched) is None
    # the kernel's own lines that name a program first stay the kernel's (the message of tests/kmsg/real.toml,
    # its program's name written as a launcher's for the test)
    for comm in ("pool", "python3", "bash"):
        oom = L.peel(DMESG_T + comm + " invoked oom-killer: gfp_mask=0x6200ca(GFP_HIGHUSER_MOVABLE), order=0")
        assert kernel.classify(oom) == 0, comm


def test_powerline_fish_and_oh_my_zsh_prompts_are_read_as_prompts():
    # real: a personal notes site's transcripts under a powerline prompt, its segments rendered ' > '
    # (tests/cases/*-blogs37-asokolsky-*): the command after the last segment, the host its user@host names
    p = L.peel("alex@exi > ~/Projects/asokolsky.github.io > main \u00b1 > nvidia-smi")
    assert [la.kind for la in p.layers] == ["prompt"] and p.text == "nvidia-smi" and p.host() == "exi"
    for case, name, kind, command in (
            ("node-blogs37-asokolsky-nvml-mismatch-proc-version-550-144-reboot-helped",
             "posted-nvidia-smi-proc-version.txt", "nvidia-smi failure", "nvidia-smi"),
            ("gpu-blogs37-asokolsky-exi-nvidia-smi-550-144-before-upgrade-healthy", "posted-nvidia-smi.txt",
             "nvidia-smi", "nvidia-smi"),
            ("node-blogs37-asokolsky-exi-lspci-nnkq-rtx3050-coral-tpu-healthy", "posted-lspci-nnkq.txt", "lspci",
             "lspci -nnkq")):
        blocks = paste.scan(case_text(case, name), "paste.txt").blocks
        assert [(b.kind, b.host, b.command) for b in blocks] == [(kind, "exi", command)], case
    assert alarms(case_text("gpu-blogs37-asokolsky-exi-nvidia-smi-550-144-before-upgrade-healthy",
                            "posted-nvidia-smi.txt")) == []
    # fish's and SUSE's default prompts ('user@host ~/dir> '), and oh-my-zsh's default theme (robbyrussell: the
    # arrow, the directory's name, 'git:(branch)' and the dirty mark), written for this test from their prompt
    # definitions; a line that only holds an address and a '>' is no prompt
    for line, host in (("user@node1 ~/work> ibstat", "node1"), ("user@node1:~> ibstat", "node1"),
                       ("\u279c  nccl git:(master) \u2717 ibstat", None), ("\u279c  ~ ibstat", None)):
        p = L.peel(line)
        assert [la.kind for la in p.layers] == ["prompt"] and p.text == "ibstat" and p.host() == host, line
    for line in ("foo@bar.com wrote:", "mail a@b.c > thanks", "x@y.z>5"):
        assert "prompt" not in [la.kind for la in L.peel(line).layers], line


def test_the_kernels_own_lines_under_a_time_stay_the_kernels():
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."  # a real message's form
    for stamp in (SYSLOG, DMESG_T):
        p = paste.scan(stamp + xid + "\n", "paste.txt")
        assert [b.kind for b in p.blocks] == ["kernel log"]
    lines = real.node_text("kernel-xid", "gpud-dmesg-decode-iso-xid13-sm-exceptions-xid43.txt")
    assert [b.kind for b in paste.scan(lines).blocks] == [b.kind for b in paste.scan(stamped(DMESG_T, lines)).blocks]


# ---- HTML escapes, line numbers, list markers, lines flush left -----------------------------------------------


def test_a_kinds_anchor_word_is_found_html_escaped():
    assert {"CA &#x27;", "CA &#39;", "CA &apos;"} <= set(reader.escaped(["CA '"]))
    quoted = mutations.quoted_html(real.node_text("ibstat", DOWN))
    assert "CA &#x27;mlx5_11&#x27;" in quoted
    p = paste.scan(quoted, "paste.txt")
    assert [b.kind for b in p.blocks] == ["ibstat"]
    assert [f.check for f in p.findings if f.status == Status.FAIL] == ["ib.port_state"]


@pytest.mark.parametrize("name", ["lineno-dot", "lineno-pipe", "lineno-colon", "list-dash", "list-star",
                                  "flush-left"])
def test_a_decorated_ibstat_reads_as_the_plain_one(name):
    text = real.node_text("ibstat", DOWN)
    plain, decorated = paste.scan(text, "p.txt"), paste.scan(mutations.TRANSFORMS[name](text), "p.txt")
    assert [(b.kind, b.lineno, b.end) for b in decorated.blocks] == [(b.kind, b.lineno, b.end) for b in plain.blocks]
    assert ([(f.check, f.status, f.message) for f in decorated.findings]
            == [(f.check, f.status, f.message) for f in plain.findings])


@pytest.mark.parametrize("kind,name", [("ibv_devinfo", "deepep60-cx6dx-eth-port-down-mtu1024-fragment.txt"),
                                       ("ibv_devinfo", "azhpcimages44-azure-hbv2-renamed-hcas-fragment.txt"),
                                       ("ibstat", "azhpc-ibstatus-ethernet-and-ib-hdr.txt"),
                                       ("ibstat", "gpud99-cx6dx-down-disabled-truncated-by-poster.txt")])
def test_ibv_devinfo_ibstatus_and_ibstat_flush_left_read_as_indented(kind, name):
    text = real.node_text(kind, name)
    plain, flush = paste.scan(text, "p.txt"), paste.scan(mutations.flush_left(text), "p.txt")
    assert flush.blocks and [b.kind for b in flush.blocks] == [b.kind for b in plain.blocks]
    assert [(f.check, f.status, f.message) for f in flush.findings] == [(f.check, f.status, f.message)
                                                                        for f in plain.findings]


def test_an_nvidia_smi_q_excerpt_flush_left_is_read_under_its_sections():
    fabric = case_text("node-gpuoperator-docs-nvidia-smi-q-fabric-state-in-progress-no-fabricmanager",
                       "posted-nvidia-smi-q-fabric.txt")
    flat = mutations.flush_left(fabric)
    assert flat != fabric
    got = smiq.parse_q(flat)
    assert got.gpus[0].fields == smiq.parse_q(fabric).gpus[0].fields and got.gpus[0].get("Fabric/State")
    assert alarms(flat)[0]["category"] == "fabric_manager"
    # ECC Errors > Volatile / Aggregate, written for the test from nvidia-smi -q's tree, trimmed flush left
    ecc = smiq.parse_q("ECC Errors\nVolatile\nSRAM Uncorrectable   : 1\nAggregate\nSRAM Uncorrectable   : 5\n")
    assert ecc.gpus[0].fields == {"ECC Errors/Volatile/SRAM Uncorrectable": "1",
                                  "ECC Errors/Aggregate/SRAM Uncorrectable": "5"}


def test_line_numbers_are_a_layer_of_any_value_and_srun_labels_stay_ranks():
    p = L.peel("  10. CA 'mlx5_0'")
    assert [la.kind for la in p.layers] == ["number"] and p.text == "CA 'mlx5_0'"
    assert [la.kind for la in L.peel("* CA 'mlx5_0'").layers] == ["bullet"]
    assert [la.kind for la in L.peel("> - CA 'mlx5_0'").layers] == ["quote", "bullet"]
    first, nxt = L.peel("10: CA 'mlx5_0'"), L.peel("11: \tCA type: MT4129")
    assert L.follow(nxt, first.layers, 1) == "\tCA type: MT4129"  # an editor's numbers, one line on
    assert L.follow(nxt, first.layers, 2) is None and L.follow(nxt, first.layers) is None  # two ranks of srun


def test_the_nccl_reader_takes_a_line_number_and_a_list_marker_off():
    line = "gpu1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"  # a real line's form
    for front in ("  10. ", "10 | ", "- ", "* ", "  7. - "):
        assert grammar.clean(front + line) == line, front
    row = "           8             2     float     sum"  # a benchmark's row: a number, then no '.' nor '|'
    assert grammar.clean(row) == row


# ---- a partial reading adds, never erases ------------------------------------------------------------------------


def test_an_ibstat_cut_before_its_ports_keeps_the_ports_read_before_it():
    # written for this test from the real capture: 'ibstat mlx5_11' (its port Down, Polling) then 'ibstat mlx5_0'
    # cut by the poster before its first 'Port' line, on one host's prompt
    src = real.node_text("ibstat", DOWN).splitlines()
    assert src[51] == "CA 'mlx5_11'" and src[0] == "CA 'mlx5_0'" and "Port 1:" not in src[0:7]
    one = "root@node1:~# ibstat mlx5_11\n" + "\n".join(src[51:68]) + "\n"
    both = one + "root@node1:~# ibstat mlx5_0\n" + "\n".join(src[0:7]) + "\n"
    p = paste.scan(both, "paste.txt")
    assert [b.kind for b in p.blocks] == ["ibstat", "ibstat"]
    assert "mlx5_11 port 1" in [q.name for q in p.facts["node1"]["ib"].ports]
    for text in (one, both):
        d = alarms(text)
        assert d[0]["category"] == "ib_port_down" and cites(d[0], "mlx5_11")


# ---- an RDMA test's asked path MTU against the port's -------------------------------------------------------------

MTU_CASE = ("net-blogs49-live4thee-roce-srq-pingpong-path-mtu-4096-over-active-1024-retry-exceeded",
            "posted-rdma-transcript.txt")


def test_an_rdma_tests_mtu_option_is_read_with_its_command():
    p = paste.scan(case_text(*MTU_CASE), "paste.txt")
    assert [(ln.lineno, mtu) for ln, mtu in p.rdma_test_mtu] == [(4, 4096), (7, 4096)]
    assert "-d mlx5_bond_0" in p.rdma_test_mtu[0][0].text


@pytest.mark.parametrize("front", ["    ", "\t", "[rank0]: ", "0: ", "> "])
def test_an_rdma_tests_command_is_read_behind_an_indent_a_label_or_a_quote(front):
    """The transcript as a paste puts it behind something (an indent, a launcher's label, a quote mark): the test's
    command is still read, with its prompt's mark or without it, and the mismatch named."""
    text = "".join(front + line for line in case_text(*MTU_CASE).splitlines(keepends=True))
    assert [(ln.lineno, mtu) for ln, mtu in paste.scan(text, "paste.txt").rdma_test_mtu] == [(4, 4096), (7, 4096)]
    assert alarms(text)[0]["category"] == "mtu_mismatch"
    bare = text.replace("$ ibv_srq_pingpong", "ibv_srq_pingpong")
    assert [mtu for _, mtu in paste.scan(bare, "paste.txt").rdma_test_mtu] == [4096, 4096]
    # a sentence that names the test is no command
    prose = front + "We ran ibv_srq_pingpong with -m 4096 and it failed.\n"
    assert paste.scan(prose, "paste.txt").rdma_test_mtu == []


def test_the_same_test_at_its_default_mtu_asks_nothing_and_is_not_an_mtu_mismatch():
    text = case_text(*MTU_CASE).replace(" -m 4096", "")
    assert paste.scan(text, "paste.txt").rdma_test_mtu == []
    assert all(d["category"] != "mtu_mismatch" for d in alarms(text))


def test_an_mtu_asked_within_the_ports_active_mtu_is_not_an_mtu_mismatch():
    text = case_text(*MTU_CASE).replace("-m 4096", "-m 1024")
    assert [mtu for _, mtu in paste.scan(text, "paste.txt").rdma_test_mtu] == [1024, 1024]
    assert all(d["category"] != "mtu_mismatch" for d in alarms(text))
