"""The kernel-message table (nccldiag/knowledge/kmsg.toml): its rows well formed, every row read on real failing
text and on none of the healthy real kernel logs, the node-side filter built from the same words and keeping
every line a row reads, each pattern linear in the length of a line.

Real text: tests/kmsg/real.toml (each sample with the address it was posted at) and ../shared/fixtures.
Text written for the tests: tests/kmsg/constructed.toml (labelled CONSTRUCTED there).
"""
import re
import sys
import tomllib
from pathlib import Path

import pytest

from nccldiag import knowledge
from nccldiag.areas import area_names, kernlog
from nccldiag.diagnosis.categories import CATEGORIES, OTHER
from tests import real

from .areahelp import run_sources, stand_in

if sys.version_info >= (3, 11):
    import re._parser as sre_parse
else:  # pragma: no cover
    import sre_parse

HERE = Path(__file__).resolve().parents[1]
REAL = tomllib.loads((HERE / "kmsg" / "real.toml").read_text(encoding="utf-8"))
MADE = tomllib.loads((HERE / "kmsg" / "constructed.toml").read_text(encoding="utf-8"))
READERS = {"", "xid", "aer", "bar", "flaps"}

# rows whose real failing text is a capture of ../shared/fixtures rather than a posted line of tests/kmsg/real.toml
FIXTURE_SAMPLES = {
    "nvrm-xid": ("node", "kernel-xid", "gpud-dell-xe9680-h100-dmesg-T-xid119-gsp-timeout.txt"),
    "nvrm-fallen-off-bus": ("cases", "node-msm80-titan-v-overheating-xid79-fallen-off-bus", "node-a", "kernel_log.txt"),
    "nvrm-reset-required": ("cases", "gpu-sichek51-nccltest-device-busy-gsp-reset-required", "posted-dmesg.txt"),
}
# real kernel logs of working systems (or with no failure of a row's kind) in ../shared/fixtures/node
HEALTHY_CAPTURES = (
    ("kernel-xid", "gpud-h100-boot-dmesg-decode-nvrm-nvswitch-no-xid-healthy.txt"),
    ("dmesg-pcie", "mleng-h100-pcie-bandwidth-limited-by-gen4-switch.txt"),
    ("firmware", "gpud-h100-dmesg-mlx5-firmware-version-cx7-cx6dx-12-funcs-selected.txt"),
    ("link-flaps", "armnas16-cx5-dmesg-grep-mlx5-cable-plugged-sufficient-power-partial.txt"),
    ("link-flaps", "gpud-h100-dmesg-mlx5-port-module-cable-plugged-unplugged-selected.txt"),
    ("lsmod-modules", "gpud-dmesg-nvidia-peermem-invalid-context-errors.txt"),
) + tuple(("dmesg-iommu", n) for n in (
    "amd-vi-unknown-option-on-blockquoted.txt", "fwupd2093-lenovo-dmar-table-but-no-iommu-enabled-line-indented.txt",
    "fwupd5304-default-domain-translated.txt", "hotsos-kvm-guest-only-default-domain-line.txt",
    "lake10-dmesg-T-kern-info-dmar-7-units-partial.txt"))


def fixture_text(parts):
    real.require()
    return real.ROOT.joinpath(*parts).read_text(encoding="utf-8")


def rows_read(text):
    """The ids of the rows the lines of ``text`` are read as (before resolution)."""
    out = set()
    for when, msg in kernlog.parse(text).lines:
        ev = kernlog.read_line(when, msg)
        if ev:
            out.add(ev.message.id)
    return out


# ---- the table itself ------------------------------------------------------------------------------------

def test_every_row_is_well_formed():
    areas = set(area_names())
    ids = [m.id for m in kernlog.MESSAGES]
    assert len(ids) == len(set(ids))
    for m in kernlog.MESSAGES:
        assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", m.id), m.id
        assert m.area in areas, m.id
        assert m.check.startswith(m.area + "."), m.id
        # a [[check]] says what the finding of the rows judged by kernlog.finding says
        assert m.check in kernlog.CHECKS or m.reader in ("xid", "aer", "flaps"), m.id
        assert m.reader in READERS, m.id
        assert m.severity in ("fail", "warn") or (m.severity == "varies" and m.reader), m.id
        cat = m.category
        assert cat in CATEGORIES or OTHER.match(cat) or (cat == "varies" and m.reader), m.id
        assert m.meaning and m.fix and m.where.startswith("kmsg.toml:"), m.id
        assert "real:" in m.source, m.id  # every wording cites a real posted log or capture
        assert not m.resolves or m.resolves in kernlog.BY_ID, m.id
        assert all(i in kernlog.BY_ID for i in m.implied_by), m.id
        if m.resolves or any(o.resolves == m.id for o in kernlog.MESSAGES):
            assert "key" in m.pattern.groupindex, m.id  # a resolution pairs lines by their key


def test_the_rows_of_one_check_share_its_category():
    for check in kernlog.CHECKS:
        cats = {m.category for m in kernlog.MESSAGES if m.check == check and m.category != "varies"}
        assert len(cats) <= 1, (check, cats)
    for area in area_names():
        for check in kernlog.checks_of(area):
            assert kernlog.category_of(check) not in ("varies", "")
    assert set(kernlog.CHECKS) <= {m.check for m in kernlog.MESSAGES}, "a [[check]] without rows"


def test_the_header_names_its_sources():
    top = knowledge.header("kmsg.toml")
    assert "hung_task.c" in top["source"] and re.fullmatch(r"\d{4}-\d\d-\d\d", top["checked"])


# ---- linear time -------------------------------------------------------------------------------------------

_UNBOUNDED = sre_parse.MAXREPEAT


def _repeats(items, inside=False):
    """(unbounded repeats, nested repeats) of a parsed expression."""
    unbounded = nested = 0
    for op, av in items:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            if hi == _UNBOUNDED:
                unbounded += 1
            if inside:
                nested += 1
            u, n = _repeats(sub, True)
            unbounded, nested = unbounded + u, nested + n
        elif name == "SUBPATTERN":
            u, n = _repeats(av[-1], inside)
            unbounded, nested = unbounded + u, nested + n
        elif name == "BRANCH":
            for b in av[1]:
                u, n = _repeats(b, inside)
                unbounded, nested = unbounded + u, nested + n
        elif name in ("ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS"):
            nested += 100  # look-arounds and back-references: not allowed
    return unbounded, nested


def test_every_pattern_is_linear_in_the_line():
    """No repeat inside a repeat, no look-around or back-reference, and at most one unbounded repeat: searched
    from each position, a pattern then costs at most a bounded amount per character of a line (lines are cut at
    kernlog.MAX_LINE before any pattern sees them)."""
    for m in kernlog.MESSAGES:
        unbounded, nested = _repeats(sre_parse.parse(m.pattern.pattern))
        assert nested == 0 and unbounded <= 1, (m.id, m.pattern.pattern)
    for keep in [m.keep for m in kernlog.MESSAGES] + list(kernlog.CONTEXT):
        # the node's words: no repeat at all (awk and the Python prefilter read every line with all of them)
        assert _repeats(sre_parse.parse(keep)) == (0, 0), keep
    long_line = "[ 1.0] " + "NVRM: Xid (PCI:" * 2000
    assert len(kernlog.parse(long_line).lines[0][1]) <= kernlog.MAX_LINE


# ---- the node-side filter ----------------------------------------------------------------------------------

_ERE_WORDS = re.compile(r"[A-Za-z0-9 _:.,\-\[\]|()*+#@]+")


def test_the_filter_is_the_tables_words_in_the_subset_awk_and_python_read_alike():
    keeps = [m.keep for m in kernlog.MESSAGES] + list(kernlog.CONTEXT)
    assert kernlog.PATTERN == "|".join(keeps)
    for keep in keeps:
        # plain words, [Aa] classes, ".", "|", groups; no quote (the awk program is single-quoted), no slash
        assert _ERE_WORDS.fullmatch(keep), keep
        assert "'" not in keep and "/" not in keep and "\\" not in keep and "{" not in keep, keep
        re.compile(keep)
    assert f"/{kernlog.PATTERN}/" in kernlog.SOURCE.command


def test_every_row_matches_only_lines_its_keep_words_keep():
    for sample in REAL["sample"] + MADE["sample"]:
        for when, msg in kernlog.parse(sample["text"]).lines:
            ev = kernlog.read_line(when, msg)
            if ev:
                assert re.search(ev.message.keep, msg), (ev.message.id, msg)


def all_text():
    texts = [s["text"] for s in REAL["sample"] + MADE["sample"]]
    if real.AVAILABLE:
        texts += [fixture_text(parts) for parts in FIXTURE_SAMPLES.values()]
    return "\n".join(t.strip("\n") for t in texts) + "\n"


def test_the_node_side_filter_keeps_every_line_a_row_reads(tmp_path):
    """The collection script's own awk, over every sample: each line a row reads comes back."""
    text = all_text()
    (tmp_path / "dmesg.txt").write_text(text, encoding="utf-8")
    stand_in(tmp_path / "bin", "dmesg", f"cat '{tmp_path / 'dmesg.txt'}'")
    kept = run_sources((kernlog.SOURCE,), tmp_path / "root", tmp_path / "bin")["kernel_log"].splitlines()
    wanted = [line.strip() for line in text.splitlines()
              if line.strip() and kernlog.read_line(*kernlog.split_line(line.strip()[:kernlog.MAX_LINE]))]
    assert wanted and set(wanted) <= {k.strip() for k in kept}
    assert kept[-1] == f"nccldiag: kernel log lines {len(text.splitlines())}"


# ---- real failing text, healthy text ----------------------------------------------------------------------

@pytest.mark.parametrize("sample", REAL["sample"], ids=[s["url"][-48:] for s in REAL["sample"]])
def test_real_failing_lines_are_read_as_their_rows(sample):
    assert rows_read(sample["text"]) == set(sample["rows"])


@pytest.mark.parametrize("sample", MADE["sample"], ids=[s["what"][:48] for s in MADE["sample"]])
def test_constructed_lines_are_read_as_their_rows(sample):
    assert rows_read(sample["text"]) == set(sample["rows"])
    if "events" in sample:
        assert {e.message.id for e in kernlog.events(kernlog.parse(sample["text"]))} == set(sample["events"])


def test_every_row_is_read_on_real_failing_text():
    seen = set()
    for sample in REAL["sample"]:
        seen |= set(sample["rows"])
    for row, parts in FIXTURE_SAMPLES.items():
        if real.AVAILABLE:
            assert row in rows_read(fixture_text(parts)), row
        seen.add(row)
    resolving = {m.id for m in kernlog.MESSAGES if m.resolves}
    assert {m.id for m in kernlog.MESSAGES} - resolving - seen == set()
    # the rows that clear a failure are read on real healthy text
    healthy = set().union(*(rows_read(h["text"]) for h in REAL["healthy"] + REAL["sample"]))
    assert resolving <= healthy


@pytest.mark.parametrize("sample", REAL["healthy"], ids=[h["url"][-48:] for h in REAL["healthy"]])
def test_real_healthy_lines_are_no_event(sample):
    assert kernlog.events(kernlog.parse(sample["text"])) == []


@pytest.mark.parametrize("parts", HEALTHY_CAPTURES, ids=["/".join(p) for p in HEALTHY_CAPTURES])
def test_healthy_real_kernel_logs_are_no_event(parts):
    text = real.node_text(*parts)
    assert kernlog.events(kernlog.parse(text)) == []


def test_the_failing_captures_have_only_the_events_they_show():
    """The real failing kernel logs of ../shared/fixtures read as their failures and nothing else."""
    want = {
        "gpud-dell-xe9680-h100-dmesg-T-xid119-gsp-timeout.txt": {"nvrm-xid", "nvrm-gsp-timeout"},
        "gpud-dmesg-iso-xid48-dbe-xid63-remap-xid94-peermem.txt": {"nvrm-xid"},
        "gpud-dmesg-decode-iso-xid13-sm-exceptions-xid43.txt": {"nvrm-xid"},
        "ogkm1030-rtx5070ti-595-dmesg-xid31-mmu-fault-channel-hex.txt": {"nvrm-xid"},
    }
    for name, rows in want.items():
        got = {e.message.id for e in kernlog.events(kernlog.parse(real.node_text("kernel-xid", name)))}
        assert got == rows, name


def test_a_device_inaccessible_after_d3_is_a_lost_gpu_only_on_a_gpus_function_0():
    """The PCI core's 'Unable to change power state from %s to D0, device inaccessible' is a lost GPU where a GPU
    driver, or vfio-pci holding a passthrough GPU, owns function 0; a GPU's USB-C controller ('nvidia-gpu', function
    3) prints it on cards without that device, and a NIC's or a bridge's line is not a GPU's."""
    for lost in ("vfio-pci 0000:0a:00.0: Unable to change power state from D3cold to D0, device inaccessible",
                 "[  812.3] nvidia 0000:41:00.0: Unable to change power state from D3hot to D0, device inaccessible",
                 "[200584.544050] amdgpu 0000:0a:00.0: Unable to change power state from D3hot to D0, device inaccessible"):
        assert rows_read(lost) == {"pci-gpu-inaccessible-d0"}, lost
    for other in ("[ 9426.768449] nvidia-gpu 0000:0b:00.3: Unable to change power state from D3hot to D0, device "
                  "inaccessible",
                  "igc 0000:02:00.0: Unable to change power state from D3hot to D0, device inaccessible",
                  "[200584.540184] pcieport 0000:08:00.0: Unable to change power state from D3hot to D0, device inaccessible"):
        assert rows_read(other) == set(), other


def test_a_kernel_list_corruption_is_an_oops_whatever_its_variant():
    """lib/list_debug.c's reports, with and without the neighbour's address that 5.16 added, and a double add."""
    for line in ("kernel: list_del corruption. prev->next should be fffff7eac79a1808,",
                 "list_del corruption. next->prev should be ffff8801c2f41b18, but was (null)",
                 "list_del corruption, ffff88013008e520->next is LIST_POISON1 (dead000000100100)",
                 "list_add corruption. prev->next should be next (ffff880036835630), but was ffff88003683c630. "
                 "(prev=ffff880036835630).",
                 "list_add double add: new=ffff9e1f4b1c0a88, prev=ffff9e1f4b1c0a88, next=ffff9e1f80c3d2c0."):
        assert rows_read(line) == {"kernel-list-corruption"}, line
    assert rows_read("list_del(&entry->list); /* corruption. checked by CONFIG_DEBUG_LIST */") == set()
