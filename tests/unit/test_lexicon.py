"""The failure lexicon (nccldiag/knowledge/lexicon.toml) and the invariant it serves.

Every row is held to the real lines it was built from: the cases and captures its ``seen`` names (read in place
from tests/cases and ../shared/fixtures), and the public posts of tests/lexicon/real.toml (each with its address),
with the healthy lines around them. Every pattern is linear in the line's length by construction (no
unbounded repeat inside a repeat nor a repeat inside an unbounded one, every repeat bounded but one). The lines reach the reader whatever way a text is read (the
prefilter of ``nccldiag log``, blocks of any size). Healthy real evidence stays quiet: no healthy case and no
capture the check areas judge healthy has a line of the lexicon left unexplained; and every failed case gets a
fail or warn diagnosis, which an unexplained line of the lexicon gives at least (no false all-clear).
"""
import errno
import io
import json
import os
import platform
import re
import sys
from pathlib import Path

import pytest

from nccldiag.areas import all_areas
from nccldiag.check.engine import analyze_node
from nccldiag.diagnosis import categories
from nccldiag.knowledge import lexicon
from nccldiag.model.findings import Status
from nccldiag.model.raw import RawNode
from nccldiag.nccl import scan
from tests import real, realcases
from tests.unit.test_every_node_fixture import KIND_SOURCES

if sys.version_info >= (3, 11):
    import tomllib
    from re import _constants as sre_constants, _parser as sre_parse
else:  # pragma: no cover
    import sre_constants
    import sre_parse
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
SAMPLES = tomllib.loads((REPO / "tests" / "lexicon" / "real.toml").read_text(encoding="utf-8"))["sample"]
SHAPES = lexicon.shapes()
AREA_NAMES = {a.NAME for a in all_areas()}


def _rows():
    from nccldiag import knowledge
    return knowledge.rows(lexicon.TABLE)


# ---------------------------------------------------------------- the table

def test_every_row_is_complete_and_names_what_exists():
    ids = [s.id for s in SHAPES]
    assert len(ids) == len(set(ids))
    for row in _rows():
        assert row["severity"] in lexicon.SEVERITIES, row["id"]
        assert row["words"] and all(w for w in row["words"]), row["id"]
        assert row["covered_by"], row["id"]
        for c in row["covered_by"]:
            assert c == lexicon.ANY or categories.known(c), (row["id"], c)
        for a in row.get("judged_by") or ():
            assert a in AREA_NAMES, (row["id"], a)
        assert bool(row.get("unless")) == bool(row.get("unless_why")), row["id"]
        assert row["meaning"] and row["seen"], row["id"]
        assert row["where"].startswith("lexicon.toml:")


def _repeats(parsed, inside=None):
    """(unbounded repeats, whether a repeat lies inside a repeat and either is unbounded) of a parsed expression;
    ``inside``: whether the enclosing repeat is unbounded (None: no enclosing repeat)."""
    unbounded, nested = 0, False
    for op, av in parsed:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            lo, hi, sub = av
            endless = hi == sre_constants.MAXREPEAT
            nested = nested or (inside is not None and (inside or endless))
            unbounded += endless
            u, n = _repeats(sub, endless or bool(inside))
            unbounded, nested = unbounded + u, nested or n
        elif op == sre_constants.SUBPATTERN:
            u, n = _repeats(av[-1], inside)
            unbounded, nested = unbounded + u, nested or n
        elif op == sre_constants.BRANCH:
            for alt in av[1]:
                u, n = _repeats(alt, inside)
                unbounded, nested = unbounded + u, nested or n
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            nested = True  # no look-around
    return unbounded, nested


@pytest.mark.parametrize("shape", SHAPES, ids=[s.id for s in SHAPES])
def test_every_pattern_is_linear_by_construction(shape):
    for pattern in [shape.pattern] + ([shape.unless] if shape.unless else []):
        unbounded, nested = _repeats(sre_parse.parse(pattern.pattern))
        assert not nested, (shape.id, pattern.pattern)
        assert unbounded <= 1, (shape.id, pattern.pattern)


def test_the_rows_words_are_the_prefilters():
    from nccldiag.nccl import grammar
    assert set(lexicon.words()) <= set(grammar.WORDS)
    for word in lexicon.words():
        lit, _, tail = word.partition("\0")
        if tail:  # a word that ends in an expression: a real line of its row holds it (the rows' real lines)
            continue
        assert scan.candidate(f"x {word} x".encode()), word
    for line in ("F0105 23:50:34.026692   34204 nccl_all_reduce_thunk.cc:175] x",
                 "E0000 00:00:1750688708.806475  179026 cuda_dnn.cc:8579] x"):
        assert scan.candidate(line.encode()), line


# ---------------------------------------------------------------- each row on its real lines

def _seen_texts(seen):
    """The text of a real case or capture a row's ``seen`` names (None for an address: real.toml has those)."""
    if seen.startswith("http"):
        return None
    if (REPO / seen).is_file() and seen.startswith("tests/"):  # a file of real lines kept in this repository
        return (REPO / seen).read_text(encoding="utf-8")
    if seen.startswith("tests/cases/"):
        case = REPO / seen
    else:
        if not real.AVAILABLE:
            pytest.skip(real.REASON)
        case = (REPO / seen).resolve()
        if case.is_file():
            return case.read_text(encoding="utf-8", errors="replace")
    meta = json.loads((case / "case.json").read_text())
    if meta.get("input") == "bundle":
        return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(case.rglob("*.txt")))
    return "\n".join((case / f).read_text(encoding="utf-8", errors="replace") for f in meta["files"])


@pytest.mark.parametrize("shape", SHAPES, ids=[s.id for s in SHAPES])
def test_every_row_reads_a_real_line_where_it_was_seen(shape):
    row = next(r for r in _rows() if r["id"] == shape.id)
    read = 0
    for seen in row["seen"]:
        text = _seen_texts(seen)
        if text is None:
            assert any(s["url"] == seen and shape.id in s["rows"] for s in SAMPLES), (shape.id, seen)
            read += 1
            continue
        lines = [line for line in text.splitlines() if lexicon.shape_of(line) is shape]
        assert lines, (shape.id, seen)
        for line in lines:  # each match holds one of the row's words
            m = shape.pattern.search(line[:lexicon.MAX_LINE])
            assert any(w in m.group(0) or w in line for w in shape.literals), (shape.id, line)
        read += 1
    assert read


@pytest.mark.parametrize("sample", SAMPLES, ids=[s["url"].rsplit("/", 3)[-3] + "-" + s["url"].rsplit("/", 1)[-1]
                                                  for s in SAMPLES])
def test_every_sample_of_a_public_post_is_read_as_its_rows_and_its_neighbours_are_quiet(sample):
    got = {s.id for line in sample["text"].splitlines() for s in [lexicon.shape_of(line)] if s is not None}
    assert got == set(sample["rows"]), sample["url"]
    for line in sample["quiet"].splitlines():
        assert lexicon.shape_of(line) is None, (sample["url"], line)


# Real healthy lines that lie beside failures, each with the exception of its row that keeps it quiet (the row's
# unless_why says why). Copied from the captures named.
HEALTHY_NEIGHBOURS = [
    # NCCL on a node without RDMA, sockets intended (../shared/fixtures/cases/
    # net-nccltests82-healthy-socket-forced-ib-disabled-warn-only)
    ("net-nccltests82-healthy-socket-forced-ib-disabled-warn-only", "Failed to open libibverbs"),
]


def _shared_case_text(case_id):
    if not real.AVAILABLE:
        pytest.skip(real.REASON)
    return _seen_texts(f"../shared/fixtures/cases/{case_id}")


@pytest.mark.parametrize("case_id,word", HEALTHY_NEIGHBOURS)
def test_a_healthy_runs_lines_beside_the_words_of_failures_are_quiet(case_id, word):
    lines = [line for line in _shared_case_text(case_id).splitlines() if word in line]
    assert lines, word
    for line in lines:
        assert lexicon.shape_of(line) is None, line


def test_an_nccl_info_line_cut_before_its_prefix_stays_quiet():
    """A paste that lost the host:pid:tid prefix (two records run together, a prefix taken off) starts at
    ``NCCL INFO``: each row that excepts NCCL's INFO steps excepts them there too."""
    if not real.AVAILABLE:
        pytest.skip(real.REASON)
    roots = [REPO.parent / "shared" / "fixtures" / "cases", REPO / "tests" / "cases"]
    cut = 0
    for root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix == ".json":
                continue
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                at = line.find("NCCL INFO ")
                if at <= 0 or lexicon.shape_of(line) is not None:
                    continue
                cut += 1
                assert lexicon.shape_of(line[at:]) is None, (str(path), line[at:])
    assert cut > 1000


def test_the_drivers_console_notice_is_quiet_and_its_failures_are_not():
    # the proprietary driver's VGA-console notice on a boot where it loaded and works (a real healthy case), beside
    # its real failure lines (the cases the nvrm-error row was seen in)
    case = realcases.IN_REPO / "node-askubuntu-xenial-nvidia-340-unsigned-module-taint-vga-console-healthy"
    notice = [line for line in (case / "posted-kernel-log.txt").read_text(encoding="utf-8").splitlines()
              if line.startswith("NVRM: ")]
    assert len(notice) == 6, notice
    for line in notice:
        assert lexicon.shape_of(line) is None, line
    failing = [line for c in ("node-funloop-blog-arch-nvrm-api-mismatch-versions-elided",
                              "gpu-cloudatlas-vm-passthrough-nvrm-bar0-invalid-pcihole64-realloc")
               for line in _seen_texts(f"tests/cases/{c}").splitlines() if "NVRM: " in line]
    assert failing and any(lexicon.shape_of(line) is not None and lexicon.shape_of(line).id == "nvrm-error"
                           for line in failing), failing


# The NVIDIA driver's lines of a working start-up, as posted: the legacy-interrupt fallback where MSI cannot be
# enabled (https://github.com/CachyOS/CachyOS-PKGBUILDS/issues/1038, 'The system is stable'), the legacy persistence
# mode's notice (https://github.com/fgci-org/ansible-role-cuda/issues/19), nvidia-uvm's load notice
# (https://github.com/doitsujin/dxvk/issues/747), the module's banner (https://github.com/NVIDIA/NVSentinel/issues/155)
# and the NVLink core's (https://github.com/system76/firmware-open/issues/66).
DRIVER_START_UP = [
    "[    4.302611] NVRM: GPU 0000:01:00.0: Failed to enable MSI; falling back to PCIe virtual-wire interrupts.",
    "NVRM: Persistence mode is deprecated and will be removed in a future release. Please use nvidia-persistenced instead.",
    "[  895.239558] nvidia-uvm: Loaded the UVM driver in 8 mode, major device number 511",
    "[ 1843.439669] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  "
    "(dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025",
    "[   28.108225] nvidia-nvlink: Nvlink Core is being initialized, major device number 237",
]


@pytest.mark.parametrize("line", DRIVER_START_UP)
def test_the_nvidia_drivers_start_up_lines_are_quiet_pasted_alone(line):
    assert lexicon.shape_of(line) is None, line
    for text in (line, "Mar 03 12:00:01 node7 kernel: " + _STAMP.sub("", line), "node7: " + _STAMP.sub("", line)):
        assert not [d for d in _log_of(text + "\n") if d.severity in ("fail", "warn")], text


def test_the_msi_fallback_exception_keeps_the_drivers_interrupt_failures():
    # the same driver's failures to get an interrupt at all stay failure lines (kernel-open/nvidia/nv-msi.c,
    # nv-pci.c at df1c9a3de2be4b130f4fc7680f7198193d8ac6ad), beside its real lines of a failed probe
    for line in ("NVRM: GPU 0000:01:00.0: Failed to enable MSI-X.",
                 "[   28.109032] NVRM: The system BIOS may have misconfigured your GPU."):
        assert lexicon.shape_of(line) is not None, line


def test_flashinfers_handled_autotuner_oom_is_quiet_and_a_real_oom_is_not():
    # FlashInfer's autotuner catching one profiled kernel's out-of-memory and keeping the default tactic, in a real
    # working vLLM run (its progress bars joined to the warning, as the log holds them), beside a real CUDA OOM
    case = realcases.IN_REPO / "gpu-forum40-p2pbench-vllm-tp2-5060ti-nccl2289-p2p-on-redacted-healthy"
    fallback = [line for line in (case / "p2p_on-c1.log").read_text(encoding="utf-8").splitlines()
                if "OOM detected" in line]
    assert len(fallback) > 100 and all("falling back to default tactic" in line for line in fallback)
    for line in fallback:
        assert lexicon.shape_of(line) is None, line
    oom = [line for line in _seen_texts("tests/cases/gpu-cloudatlas-a100-80gb-cuda-oom-single-gpu-large-model")
           .splitlines() if "OutOfMemoryError" in line]
    assert oom and all(lexicon.shape_of(line).id == "out-of-memory" for line in oom), oom


def test_the_loaders_ignored_preload_is_quiet_and_the_loaders_failures_are_not():
    # glibc's loader skipping an LD_PRELOAD library it cannot open, and starting the program without it, on a real
    # working run (a centre's XALT library under Apptainer), beside real loader failures that stop a program
    case = realcases.IN_REPO / "node-hpc43-alcf-polaris-xalt-ld-so-preload-ignored-apptainer-healthy"
    line, = (case / "apptainer-stderr.txt").read_text(encoding="utf-8").splitlines()
    assert "cannot be preloaded" in line and line.endswith(": ignored.")
    assert lexicon.shape_of(line) is None, line
    # written for this test: the words cut before the loader's 'ignored', and another program's error in the same
    # shape, stay failures (the exception is the loader's own skipped preload only)
    for failing in ("ERROR: ld.so: object '/soft/xalt/lib64/libxalt_init.so' from LD_PRELOAD cannot be preloaded",
                    line.replace("ERROR: ld.so:", "ERROR: libnccl-net.so:")):
        assert lexicon.shape_of(failing) is not None, failing


def test_dashs_command_not_found_and_the_loaders_missing_symbol_version_are_failures_and_their_neighbours_not():
    # real: Charliecloud issue 939 (dash running ch-fromhost) and apptainer issue 945 (a host library bound by --nv)
    for case, shape in (("node-gaps80e-charliecloud939-ch-fromhost-nvidia-container-cli-not-found",
                         "posix-sh-command-not-found"),
                        ("gpu-gaps80e-apptainer945-nv-host-libgldispatch-glibc-2-34-not-found-focal-image",
                         "loader-symbol-version-not-found")):
        text = _seen_texts(f"tests/cases/{case}")
        assert [s.id for s in map(lexicon.shape_of, text.splitlines()) if s is not None][:1] == [shape], case
    # written for this test: a configure check, a package manager's answer, and the loader's weak version reference
    # that only ldd -v prints, stay quiet
    for quiet in ("checking for nvidia-container-cli... not found", "Package libibverbs was not found",
                  "\tlibc.so.6 (GLIBC_2.34) => not found", "ldd: weak version `GLIBC_2.2' not found (required by x)"):
        assert lexicon.shape_of(quiet) is None, quiet



def test_ldds_library_not_found_is_a_failure_and_its_resolved_libraries_are_not():
    # real: Red Hat Bugzilla 434805, ldd of an MPI program after an openmpi-libs upgrade (spaces for ldd's tab)
    text = _seen_texts("tests/cases/node-gaps84a-rhbz434805-rhel4-openmpi-libs-upgrade-ldd-libmpi-not-found")
    assert [s.id for s in map(lexicon.shape_of, text.splitlines()) if s is not None] == ["ldd-library-not-found"] * 3
    # real: the same report's 'Expected results', the libraries resolved before the upgrade; written for this test:
    # ldd's own line for the vDSO and ldd -v's weak version reference, which names a version and not a library
    for quiet in ("ldd test.out",
                  "       libmpi.so.0 => /usr/lib64/openmpi/1.2.3-gcc/libmpi.so.0 (0x0000002a95580000)",
                  "\tlinux-vdso.so.1 (0x00007ffd5a3f2000)", "\tlibc.so.6 (GLIBC_2.34) => not found"):
        assert lexicon.shape_of(quiet) is None, quiet


def test_dpkgs_package_left_unconfigured_is_a_failure_and_its_routine_lines_are_not():
    # real: Debian bug 898055, ibverbs-providers installed for amd64 and i386
    text = _seen_texts("tests/cases/node-gaps84a-debbug898055-ibverbs-providers-amd64-i386-dpkg-breaks-unconfigured")
    assert [s.id for s in map(lexicon.shape_of, text.splitlines()) if s is not None] == ["dpkg-dependency-problems"]
    # real: a DKMS build run from a package's postinst that failed (tests/cases/node-gaps54-nvpeermem119-*)
    text = _seen_texts("tests/cases/node-gaps54-nvpeermem119-dkms-build-error-5-15-0-88-module-nv-peer-mem-not-found")
    assert "dpkg-error-processing" in {s.id for s in map(lexicon.shape_of, text.splitlines()) if s is not None}
    # written for this test: dpkg configuring anyway as --force-depends asked
    for quiet in ("Unpacking ibverbs-providers:i386 (17.1-1) ...", "Processing triggers for libc-bin (2.27-3) ...",
                  "dpkg: ibverbs-providers:i386: dependency problems, but configuring anyway as you requested:"):
        assert lexicon.shape_of(quiet) is None, quiet

# The C library's reasons that the row errno-text leaves out (its comment in knowledge/lexicon.toml says why).
ERRNO_LEFT_OUT = (errno.EINTR, errno.ERESTART, errno.EAGAIN, errno.EINPROGRESS, errno.EALREADY, errno.EISCONN,
                  errno.ECHILD, errno.ENOTTY, errno.ESPIPE, errno.ENOMSG, errno.ENODATA, errno.EEXIST, errno.ECANCELED)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the row's words are glibc's strerror table")
def test_the_errno_row_holds_the_c_librarys_reasons_both_ways():
    """Every reason of the C library's table is a word of the row but those left out, and no word is not one."""
    shape = lexicon.shape("errno-text")
    kept = {os.strerror(n) for n in errno.errorcode if n not in ERRNO_LEFT_OUT}
    assert sorted(shape.literals) == sorted({t[1:] if t[0].isalpha() else t for t in kept})
    for text in kept:  # perror's, Python's, a parenthesised reason, Go's lower case
        for line in (f"prog: {text}", f"[Errno 5] {text}: '/x'", f"open failed ({text})",
                     f"open /dev/x: {text[:1].lower()}{text[1:]}"):
            assert lexicon.shape_of(line) is not None, line
    for n in ERRNO_LEFT_OUT:
        line = f"prog: {os.strerror(n)}"
        got = lexicon.shape_of(line)
        assert got is None or got.id != "errno-text", line


def test_a_reason_in_a_sentence_or_behind_advice_is_no_failure():
    """The row reads a reason set apart from what failed, not the same words in prose, an INFO step or a warning."""
    for line in ("The file has no such file or directory entry in the list",
                 "host:1:1 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot "
                 "open shared object file: No such file or directory",
                 "2021-01-01 10:00:00.000000: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not "
                 "load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No "
                 "such file or directory",
                 "[n1:00123] mca_base_component_repository_open: unable to open mca_btl_openib: librdmacm.so.1: cannot "
                 "open shared object file: No such file or directory (ignored)"):
        assert lexicon.shape_of(line) is None, line


def test_the_exceptions_keep_counters_and_advice_quiet():
    # Written for this test, each in the shape of a real healthy line its row's unless_why names.
    for line in ("rx_errors error: 0", "Errors: none", "NCCL_ASYNC_ERROR_HANDLING=1",
                 "UserWarning: Warning: RuntimeError: something", "PCIe Bus Error: severity=Corrected, type=Physical",
                 "mlx5_0:1 FAILED : 0", "CUDA error: no error", "error: no error", "node1:81:90 [0] NCCL INFO Call to connect returned Connection timed "
                 "out, retrying"):
        assert lexicon.shape_of(line) is None, line


def test_a_port_up_but_not_active_is_a_port_line_and_an_active_port_is_not():
    # ibstat's states as infiniband-diags/ibstat.c prints them: the port of a fabric with no subnet manager
    # (tests/cases/net-gaps76c-nickwkt-...-no-subnet-manager), and the Active ports of a working Cori-GPU node
    # (tests/cases/net-gaps76c-sparticlesteve-cori-gpu-ibstat-mlx4-mlx5-ports-active-healthy)
    for line in ("                State: Initializing", "\t\tState: Armed", "\tstate:\t\t\t 2: INIT",
                 "\t\t\tstate:\t\t\tPORT_INIT (2)", "\t\t\tstate:\t\t\tPORT_ARMED (3)"):
        assert lexicon.shape_of(line).id == "ib-port-down", line
    for line in ("\t\tState: Active", "\t\tPhysical state: LinkUp", "\t\t\tstate:\t\t\tPORT_ACTIVE (4)",
                 "[Wed Mar  1 17:45:08 2023] hfi1 0000:45:00.0: hfi1_0: logical state changed to PORT_INIT (0x2)"):
        assert lexicon.shape_of(line) is None, line


def test_a_bmc_threshold_event_is_read_while_asserted_and_quiet_once_deasserted():
    # The line the openbmc list quotes as what 'ipmitool sel elist' prints (lists.ozlabs.org/pipermail/openbmc,
    # 2019-10-28, 'Showing signed sensor value ...'), then the same event as ipmitool prints its end.
    asserted = ("18 | 10/16/19 | 18:28:41 UTC | Temperature nvme0 | Upper Non-critical going high | Asserted | "
                "Reading 72 > Threshold 70 degrees C")
    assert lexicon.shape_of(asserted).id == "bmc-sensor-threshold-crossed"
    assert lexicon.shape_of(asserted.replace("| Asserted", "| Deasserted")) is None


def test_a_bmc_bus_memory_or_power_supply_event_is_read_while_asserted_and_routine_events_are_not():
    # Real SEL lines: ipmitool's 'sel elist' of a Critical Interrupt (ipmitool/ipmitool pull 340), an ASRock Rack
    # BMC's table (magic-blue-smoke/Dual-Edge-TPU-Adapter issue 77), the cases' Supermicro and FreeIPMI lines.
    for line, row in (
            ("   1 |  Pre-Init  |0000198492| Critical Interrupt #0xa1 | Bus Fatal Error | Asserted", "bmc-sel-pci-bus-error"),
            (" 36   | 04/13/2025, 03:08:16 | BIOS             | Critical Interrupt                 | PCI SERR - Asserted",
             "bmc-sel-pci-bus-error"),
            ("[CI-0004] , PCI PERR @Bus85 (DevFn00) - Assertion", "bmc-sel-pci-bus-error"),
            ("Uncorrectable ECC / other uncorrectable memory error @P2-DIMMF1 - Assertion", "bmc-sel-uncorrectable-ecc"),
            ("3    | Dec-09-2024 | 21:12:29 | Power Supply 2 PS2 Status                         | Power Supply      | "
             "Critical | Power Supply Failure detected", "bmc-sel-power-supply-failure")):
        assert lexicon.shape_of(line).id == row, line
    # Routine and ended events of real SELs (sosreport/sos issue 2015, the HPE S2600 'Decoding SEL Errors' page,
    # Linuxfabrik/monitoring-plugins issue 982, thomas-krenn/check_ipmi_sensor_v3 issue 67), and a bus error
    # written for this test as ipmitool prints its end.
    for line in ("  30 | 11/15/2019 | 18:50:40 | Power Unit Pwr Unit Status | Power off/down | Asserted",
                 "  84 | 11/11/2015 | 09:07:31 | Memory Mmry ECC Sensor | Correctable ECC | Asserted",
                 "Event Logging Disabled SEL ; Log area reset/cleared ; Asserted",
                 "165 | PSU2 Status      | Power Supply                | Nominal  | N/A        | N/A   | N/A        | "
                 "N/A        | N/A        | N/A        | N/A        | N/A        | 'Presence detected'",
                 "   2 | 11/15/2019 | 18:52:23 | Critical Interrupt #0xa1 | Bus Fatal Error | Deasserted"):
        assert lexicon.shape_of(line) is None, line


def test_a_dell_servers_bus_error_link_speed_and_memory_rate_messages_are_read_and_its_routine_ones_are_not():
    # Real lines: an R640's iDRAC log (tests/cases/node-gaps83b-strickfaden-...-failed-ndc), the Dell server quoted in
    # Linux commit b112036535eda34460677ea883eaecc3a45a435d (PCI1308), the POST message of Dell R760 and XE8680 nodes
    # (dsx-ai-factory/infra-controller#6282) and the Lifecycle log of Dell's knowledge base 000141221.
    for line, row in (
            ("A fatal error was detected on a component at bus 25 device 0 function 0.", "dell-pci-component-error"),
            ("Event Message: A PCI parity error was detected on a component at bus 0 device 5 function 0.",
             "dell-pci-component-error"),
            ("UEFI0080: PCIe link speed is not optimal for Bus:201 D:1 F:0.", "dell-post-pcie-link-speed-not-optimal"),
            ("2017-03-07 23:08:02 MEM0702 Correctable memory error rate exceeded for DIMM_xx.",
             "dell-correctable-memory-error-rate")):
        assert lexicon.shape_of(line).id == row, line
    # The routine Lifecycle log lines around them (a reset, a power-up the KBs quote), the speeds line that follows
    # UEFI0080, and a link at its speed as lspci prints it (tests/cases healthy lspci -vv captures).
    for line in ("2017-03-07 23:08:02 SYS1003 System CPU Resetting.",
                 "2017-03-07 23:08:02 SYS1001 System is turning off.",
                 "2023-03-09 08:11:26 RAC0701 Requested system powerup.",
                 "Expected link speed is Gen5 but actual link speed is Gen1.",
                 "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)"):
        assert lexicon.shape_of(line) is None, line


def test_a_driver_status_is_read_in_a_paste_and_left_to_the_kernel_areas_in_a_nodes_log():
    shape = lexicon.shape_of("NV_ERR_IN_USE")
    assert shape.id == "nvidia-driver-status-error" and shape.pasted_only
    assert lexicon.shape_of("nouveau 0000:0e:00.0: unknown chipset (0f22d0a1)").id == "nouveau-unknown-chipset"
    assert lexicon.shape_of("nouveau 0000:01:00.0: NVIDIA GA102 (172000a1)") is None


def test_systemctl_saying_its_job_failed_is_read_and_a_started_unit_is_not():
    # systemctl's own messages, as src/shared/bus-wait-for-jobs.c of systemd formats them for a unit
    failed = [
        "Job for nvidia-persistenced.service failed because the control process exited with error code.",
        "Job for nvidia-fabricmanager.service failed because a timeout was exceeded.",
        "Job for slurmd.service failed.",
        "Job for nvidia-persistenced.service canceled.",
        "Job for openibd.service timed out.",
        "A dependency job for nvidia-fabricmanager.service failed. See 'journalctl -xe' for details.",
    ]
    for line in failed:
        shape = lexicon.shape_of(line)
        assert shape is not None and shape.id == "systemd-unit-failed", line
    for line in ("Dec 01 10:00:00 node1 systemd[1]: Started NVIDIA Persistence Daemon.",
                 "Dec 01 10:00:00 node1 systemd[1]: nvidia-persistenced.service: Deactivated successfully.",
                 "Created symlink /etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service"):
        assert lexicon.shape_of(line) is None, line


def test_a_failed_call_to_the_coordination_service_is_read_and_its_healthy_lines_are_not():
    # real: the trimmed status of jax-ml/jax issue 35905 (tests/cases/net-gaps80b-jax35905-...), the gRPC client's
    # untrimmed form of marin-community/levanter issue 432, as posted
    for line in ("RPC: /tensorflow.CoordinationService/RegisterTask",
                 "Additional GRPC error information from remote target unknown_target_for_coordination_leader while "
                 "calling /tensorflow.CoordinationService/Barrier:"):
        shape = lexicon.shape_of(line)
        assert shape is not None and shape.id == "xla-coordination-rpc-failed", line
    # real healthy lines: tasks connecting (pytorch/xla pull request 5559, as posted) and the distributed service of
    # a working two-VM run (tests/cases/net-gaps80b-jax8364-...-healthy)
    for line in ("2023-09-15 02:15:50.592342: I external/tsl/tsl/distributed_runtime/coordination/coordination_service"
                 ".cc:551] /job:jax_worker/replica:0/task:12 has connected to coordination service. Incarnation: "
                 "9502647996696210448",
                 "2023-09-15 02:15:51.064579: I external/xla/xla/pjrt/distributed/client.cc:132] Connected to "
                 "distributed JAX controller",
                 "d/client.cc:180] Distributed task shutdown result: OK"):
        assert lexicon.shape_of(line) is None, line


def test_a_store_client_retrying_port_zero_is_a_failure_and_a_real_port_is_not():
    """c10d's 'No socket on ({}, {}) is listening yet, will retry.' (socket.cpp, pytorch/pytorch 8cf1b8e3): at port 0
    no store can listen (NVIDIA-NeMo/Run#292); at a real port it is a store not up yet, as working runs print."""
    line = ("[default7]:[I715 22:47:11.296780083 socket.cpp:872] [c10d] No socket on (localhost, 0) is listening yet, "
            "will retry.")
    assert lexicon.shape_of(line).id == "c10d-store-port-zero"
    for quiet in ("[default7]:[I715 22:47:11.296780083 socket.cpp:872] [c10d] No socket on (localhost, 29500) is "
                  "listening yet, will retry.",
                  "[I715 22:47:11.296780083 socket.cpp:872] [c10d] No socket on (node-0, 10) is listening yet, will "
                  "retry."):
        assert lexicon.shape_of(quiet) is None, quiet


def test_a_bar_whose_firmware_address_conflicts_is_read_and_an_expansion_rom_is_not():
    # The kernel's last try at a BAR (drivers/pci/setup-res.c pci_revert_fw_address), as the lkml report quotes it
    # (tests/cases/list-gaps76e-lkml-pcie-32bit-mmio-exhaustion-...), and the same message as 6.x words it.
    old = "pci 0002:01:00.0: BAR 0: [mem size 0x00002000 64bit] conflicts with PCI Bus"
    assert lexicon.shape_of(old).id == "pcie-no-space"
    new = "pci 0002:01:00.0: BAR 0 [mem size 0x00002000 64bit]: conflicts with PCI Bus 0002:00 [mem 0x10020000000-0x10027ffffff pref]"
    assert lexicon.shape_of(new).id == "pcie-no-space"  # CONSTRUCTED from the 6.x format string
    # a working machine's unprogrammed expansion ROM (tests/cases/list-gaps76e-linux-pci-rfc-unassigned-...-healthy)
    assert lexicon.shape_of("pci 0000:01:00.0: can't claim BAR 6 [mem 0xfff00000-0xffffffff pref]: "
                            "no compatible bridge window") is None


def test_a_nics_nvm_checksum_failure_is_read_and_a_good_vpd_checksum_is_not():
    # real: the soekris-tech report (tests/cases/list-gaps76e-soekris-tech-...), the em driver's and the boot agent's
    assert lexicon.shape_of(">> em0: The EEPROM Checksum Is Not Valid").id == "nic-nvm-checksum-invalid"
    assert lexicon.shape_of(">> PXE-E05: The LAN adapter's NVM configuration is corrupted or has not been").id == \
        "nic-nvm-checksum-invalid"
    # real: a working H100 node's lspci -vvv (../shared/fixtures/node/lspci/gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt)
    assert lexicon.shape_of("\t\t\t[RV] Reserved: checksum good, 1 byte(s) reserved") is None
    assert lexicon.shape_of(">> em0: <Intel(R) PRO/1000 Network Connection 7.4.2> port 0x2000-0x201f mem ") is None


# ---------------------------------------------------------------- the reader

def _every_text():
    out = [(c.id, _case_text(c)) for c in realcases.cases(realcases.IN_REPO)]
    if real.AVAILABLE:
        out += [(c.id, _case_text(c)) for c in realcases.cases() if not c.bundle]
        out += [(p.name, p.read_text(encoding="utf-8", errors="replace"))
                for p in sorted(real.ROOT.joinpath("nccl-logs").glob("*.log"))]
    return out


def _case_text(case):
    return "\n".join((case.path / f).read_text(encoding="utf-8", errors="replace") for f in case.meta["files"]) \
        if not case.bundle else ""


def _key(lines):
    return sorted((x.shape, x.lineno, x.count, x.text, tuple(x.more)) for x in lines)


def test_the_prefilter_hands_the_reader_every_line_of_a_shape():
    """What `nccldiag log` reads through the prefilter is what the reader finds in the raw text, on every real
    text (small blocks, so that lines straddle them)."""
    for name, text in _every_text():
        data = text.encode("utf-8", "replace")
        raw = lexicon.Reader("f")
        raw.feed(data)
        tapped = lexicon.Reader("f")
        scan.feed(scan.Parser(), "f", io.BytesIO(data), block=4096, lines=tapped)
        assert _key(tapped.finish()) == _key(raw.finish()), name


def test_blocks_of_any_size_give_the_same_lines():
    for name, text in _every_text()[:20]:
        data = text.encode("utf-8", "replace")
        whole = lexicon.Reader("f")
        whole.feed(data)
        want = _key(whole.finish())
        for size in (1, 7, 64, 4096):
            r = lexicon.Reader("f")
            for i in range(0, len(data), size):
                r.feed(data[i:i + size])
            assert _key(r.finish()) == want, (name, size)


def test_a_shape_keeps_its_first_lines_and_counts_the_others():
    # Written for this test.
    text = "".join(f"step {i}\nterminate called after throwing an instance of 'X'\n" for i in range(10))
    [line] = lexicon.lines_in(text, "f")
    assert (line.shape, line.lineno, line.count) == ("cxx-terminate", 2, 10)
    assert [n for n, _ in line.more] == [4, 6]


def test_a_line_longer_than_any_read_is_cut_not_lost():
    # Written for this test.
    text = "x" * (lexicon.MAX_LINE * 10) + "\nSegmentation fault (core dumped)\n"
    [line] = lexicon.lines_in(text, "f")
    assert (line.shape, line.lineno) == ("segfault", 2)


# ---------------------------------------------------------------- healthy evidence stays quiet

def _node_captures():
    if not real.AVAILABLE:
        return [pytest.param(real.ABSENT, real.ABSENT, marks=pytest.mark.skip(reason=real.REASON))]
    return [pytest.param(kind, name, id=f"{kind}/{name}") for kind in sorted(KIND_SOURCES)
            for name in real.names(real.NODE / kind)]


@pytest.mark.parametrize("kind,name", _node_captures())
def test_a_capture_the_checks_judge_healthy_has_no_line_left_unexplained(kind, name):
    text = real.node_text(kind, name)
    for source in KIND_SOURCES[kind]:
        report = analyze_node(RawNode(host="n1", sections={source: text}), all_areas())
        if not any(f.status in (Status.WARN, Status.FAIL) for f in report.findings):
            assert report.failure_lines == [], (source, [(x.shape, x.text) for x in report.failure_lines])


# The healthy NCCL logs of ../shared/fixtures/nccl-logs (runs that completed).
HEALTHY_LOGS = ("net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log", "p2p-direct-pointer-and-shm-8gpu-single-process.log")


@pytest.mark.parametrize("name", HEALTHY_LOGS)
def test_a_healthy_nccl_log_has_no_line_of_the_lexicon(name):
    real.require()
    from nccldiag.sessions import log
    r = log.run([str(real.nccl_log(name))], workers=1)
    assert r.failure_lines == []
    assert not [d for d in r.diagnoses[0] if d.severity in ("fail", "warn")]


def test_no_false_all_clear_is_left_where_a_line_says_something_failed():
    """Every case (tests/cases, ../shared/fixtures/cases) runs through the CLI in tests/unit/test_cases.py: a failed
    run must get a fail/warn diagnosis and a non-zero exit, but for the cases listed there as known gaps or misses,
    whose outcome of today is held too. None of those left a false all-clear may hold a line of the lexicon: such a
    line, unexplained, is a fail/warn diagnosis at least."""
    from tests.cases.gaps import KNOWN_GAPS
    from tests.unit.test_cases import KNOWN_MISSES

    cleared = [c for c in realcases.cases(realcases.IN_REPO)
               if KNOWN_GAPS.get(c.id) and KNOWN_GAPS[c.id].outcome == "false all-clear"]
    if realcases.CASES.is_dir():
        cleared += [c for c in realcases.cases() if c.id in KNOWN_MISSES]
    assert cleared
    for case in cleared:
        assert lexicon.lines_in(_case_text(case), "f") == [], case.id


# ---------------------------------------------------------------- nccldiag check

def test_a_nodes_output_with_a_line_no_area_judges_is_unexplained_in_a_check(tmp_path):
    """A healthy node's bundle is all clear; the same bundle with a line that says something failed in an output
    (written for this test, in the shape of the real 'Segmentation fault (core dumped)' lines of a crashed
    process) fails, citing the line by node, source and line number."""
    real.require()
    from tests.unit import bundles as B

    code, rep = B.check_json(B.write_bundle(tmp_path / "a", {"gpu001": B.healthy_h100()}))
    assert code == 0 and not [d for d in rep["diagnoses"] if d["severity"] in ("fail", "warn")]
    node = B.healthy_h100()
    node["cpufreq"] += "Segmentation fault (core dumped)\n"
    lineno = node["cpufreq"].count("\n")
    code, rep = B.check_json(B.write_bundle(tmp_path / "b", {"gpu001": node}))
    assert code == 1
    [d] = [d for d in rep["diagnoses"] if d["severity"] in ("fail", "warn")]
    assert (d["id"], d["severity"], d["nodes"]) == ("unexplained", "fail", ["gpu001"])
    assert {"kind": "node", "text": "Segmentation fault (core dumped)", "ref": f"cpufreq:{lineno}",
            "host": "gpu001"} in d["evidence"]
    code, text = B.check_table(tmp_path / "b")
    assert code == 1 and text.startswith("Verdict: FAIL Unexplained failure on gpu001")
    assert "nothing broken" not in text


XID79_CASE = REPO / "tests" / "cases" / "gpu-gpud-docs-quoted-dmesg-xid79-nvswitch-sxid20034-ltssm-fault"
_STAMP = re.compile(r"^\s{0,4}\[\s{0,12}\d{1,10}\.\d{6}\] ")
_KERNEL_AREAS = {"xid", "pcie_errors", "kernel", "iommu"}


def _line_of(folder: Path, name: str, words: str) -> str:
    return next(ln for ln in (folder / name).read_text(encoding="utf-8").splitlines() if words in ln)


def _unknown_kernel_lines() -> list:
    """The real dmesg lines of the in-repo cases (as posted, their stamp first) that a lexicon row judged by a
    kernel area reads and that no row of knowledge/kmsg.toml reads: failures the kernel areas do not know."""
    from nccldiag.areas import kernlog

    out = []
    for case in realcases.cases(realcases.IN_REPO):
        if case.healthy or case.bundle:
            continue
        for ln in _case_text(case).splitlines():
            shape = lexicon.shape_of(ln) if _STAMP.match(ln) else None
            if shape is not None and set(shape.judged_by) & _KERNEL_AREAS \
                    and kernlog.read_line(*kernlog.split_line(ln)) is None:
                out.append(ln)
    return out


def test_a_kernel_line_of_a_failure_no_kernel_row_knows_is_unexplained_in_a_check(tmp_path):
    """The kernel areas know the messages of their rows (knowledge/kmsg.toml) only: a kernel line none of them reads
    is not judged healthy by them for the lexicon's ``judged_by``. Real: a dmesg line of a failed case, as posted
    with its stamp, that a lexicon row reads and no kmsg row does, in a healthy node's kernel log fails the node as
    unexplained, citing it; a real Xid 79, which a row reads, is the xid area's."""
    real.require()
    from nccldiag.areas import kernlog
    from tests.unit import bundles as B

    lines = _unknown_kernel_lines()
    assert lines
    line = lines[0]
    node = B.healthy_h100()
    node[kernlog.SOURCE.name] = line + "\n"
    code, rep = B.check_json(B.write_bundle(tmp_path / "a", {"gpu001": node}))
    assert code == 1
    [d] = [d for d in rep["diagnoses"] if d["severity"] in ("fail", "warn")]
    assert (d["id"], d["nodes"]) == ("unexplained", ["gpu001"])
    assert {"kind": "node", "text": line, "ref": "kernel_log:1", "host": "gpu001"} in d["evidence"]

    xid = _line_of(XID79_CASE, "posted-dmesg.txt", "Xid (PCI:0000:91:00): 79").lstrip("> ")
    node = B.healthy_h100()
    node[kernlog.SOURCE.name] = xid + "\n"
    code, rep = B.check_json(B.write_bundle(tmp_path / "b", {"gpu001": node}))
    assert code == 1
    alarms = [d for d in rep["diagnoses"] if d["severity"] in ("fail", "warn")]
    assert alarms and alarms[0]["category"] == "gpu_lost_xid"
    assert "unexplained" not in {d["id"] for d in alarms}


def test_a_pasted_kernel_line_of_a_failure_no_kernel_row_knows_is_never_nothing_broken():
    """Each such line pasted alone to 'nccldiag log', with its dmesg stamp (read as a kernel log) and without it:
    a fail or warn diagnosis, never 'nothing broken'."""
    lines = _unknown_kernel_lines()
    assert lines
    for line in lines:
        for text in (line, _STAMP.sub("", line)):
            assert [d for d in _log_of(text + "\n") if d.severity in ("fail", "warn")], text


def _log_of(text: str):
    import tempfile

    from nccldiag.sessions import log

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "pasted.txt"
        p.write_text(text, encoding="utf-8")
        return log.run([str(p)], workers=1).diagnoses[0]


def test_c10s_own_log_line_with_its_unpadded_month_is_an_error_line():
    """PyTorch's c10 logger writes the month unpadded before the day ((tm_mon + 1) * 100 + tm_mday: 'E109' on
    9 January, 'E1109' on 9 November; c10/util/Logging.cpp). Real: the watchdog's ERROR line of a shared case,
    posted in January; the same logger's line at the warning level (its letter W) is no error line."""
    real.require()
    folder = realcases.CASES / "gpu-automodel1038-consolidation-barrier-allgather-60s-timeout"
    line = _line_of(folder, "posted-watchdog.log", "failure detected by watchdog at work sequence id")
    assert "[E109 " in line
    # the watchdog's words are a shape of their own (nccl-watchdog-collective-failed); the logger's prefix is read
    # on the same line with them taken out
    assert lexicon.shape_of(line).id == "nccl-watchdog-collective-failed"
    bare = line.replace("failure detected by watchdog at work sequence id", "work sequence id")
    assert lexicon.shape_of(bare).id == "glog-error"
    assert lexicon.shape_of(bare.replace("[E109 ", "[E1109 ")).id == "glog-error"
    assert lexicon.shape_of(bare.replace("[E109 ", "[W109 ")) is None
    alarms = [d for d in _log_of(line + "\n") if d.severity in ("fail", "warn")]
    assert alarms and alarms[0].id == "unexplained"


def test_files_read_in_parallel_give_the_lines_of_files_read_in_turn():
    from nccldiag.sessions import log

    paths = [str(c.path / f) for c in realcases.cases(realcases.IN_REPO) if not c.bundle for f in c.meta["files"]]
    lines = {}
    for workers in (1, 2):
        got = []
        log.read(paths, workers=workers, failure_lines=got)
        lines[workers] = sorted((x.source, x.shape, x.lineno, x.count, x.text) for x in got)
    assert lines[1] == lines[2] and len({x[0] for x in lines[1]}) > 20


def test_an_nccl_warn_is_a_line_of_its_own_failing_where_it_says_a_call_failed():
    # real: NCCL's WARN lines as posted, alone (MindSpore's FAQ, NeMo issue 13996, Horovod issue 666: NCCL 2.3 wrote
    # no 'NCCL' before WARN)
    failed = _seen_texts("tests/cases/net-mindspore-faq-zh-openmpi-nccl-connect-network-unreachable-nic-differs")
    bare = _seen_texts("tests/cases/net-nemospeech13996-bare-warn-could-not-find-net-id-0-multinode-ib")
    untagged = _seen_texts("tests/cases/net-horovod666-nccl23-untagged-warn-connection-closed-by-remote-peer-ifname")
    got = {line: lexicon.shape_of(line) for text in (failed, bare, untagged) for line in text.splitlines()
           if " WARN " in line}
    assert {s.id for s in got.values() if s is not None} == {"nccl-warn-failed", "nccl-warn"}, got
    assert all(s is not None for s in got.values()), got
    assert lexicon.shape("nccl-warn-failed").severity == "fail" and lexicon.shape("nccl-warn").severity == "warn"
    # a WARN an earlier row reads keeps that row (written for this test in the shape of ../shared's 'NCCL WARN Cuda
    # failure' lines: the cuda-error row's)
    assert lexicon.shape_of("x:1:2 [0] NCCL WARN Cuda failure 'invalid argument'").id == "cuda-error"


def test_gdrcopys_failed_tests_and_pins_are_failures_and_its_passing_runs_and_traces_are_not():
    """gdrcopy's test summary counting failed tests, its failed assertions and gdrdrv's failed pin (real cases of
    tests/cases) are failure lines; the summary of a run that passed every test (two real healthy cases) and gdrdrv's
    trace of the pin it is about to make (lines posted in NVIDIA/gdrcopy#242, where the pins succeeded) are not."""
    failing = {
        "node-nst-gdrcopy305-sanity-gdr-pin-buffer-failed-560-a100-gdrdrv-fixed-in-master": "gdrcopy-test-failed",
        "node-nst-gdrcopy30-dmesg-gdrdrv-nvidia-p2p-get-pages-einval-driver-cuda-mismatch": "gdrdrv-pin-failed",
    }
    for case_id, row in failing.items():
        shapes = [lexicon.shape_of(line) for line in _seen_texts(f"tests/cases/{case_id}").splitlines()]
        assert row in {s.id for s in shapes if s is not None}, case_id
    for case_id in ("node-nst-gdrcopy299-gdrcopy-sanity-28-passed-550-open-healthy",
                    "node-gdrcopy278-gdrcopy-sanity-28-passed-dev-gdrdrv-healthy"):
        text = _seen_texts(f"tests/cases/{case_id}")
        assert "Failed: 0" in text and lexicon.lines_in(text, "f") == [], case_id
    traces = [  # https://github.com/NVIDIA/gdrcopy/issues/242, as posted
        "[ 1610.951862] gdrdrv:__gdrdrv_pin_buffer:invoking nvidia_p2p_get_pages(va=0x7f0a26800000 len=40 p2p_tok=0 "
        "va_tok=0)",
        "[ 1610.951946] gdrdrv:__gdrdrv_pin_buffer:page table entries: 1",
    ]
    for line in traces:
        assert lexicon.shape_of(line) is None, line


def test_rass_lost_processes_are_failure_lines_and_its_healthy_reports_are_quiet():
    cases = REPO / "tests" / "cases"
    failed = [(cases / c / "posted-ncclras.txt").read_text(encoding="utf-8") for c in (
        "net-gaps76d-nccldocs-ras-status-incomplete-missing-rank-21-process-stopped-timeouts",
        "net-gaps76d-nccldocs-ras-status-dead-process-unreachable-via-ras-network-rank-21")]
    got = {ln.strip(): lexicon.shape_of(ln) for t in failed for ln in t.splitlines()}
    for line in ("Missing communicator data from 1 job process", "Missing communicator data from 1 rank",
                 "1 job process is considered dead (unreachable via the RAS network)"):
        assert got[line].id == "nccl-ras-process-lost"
    assert got["Encountered 2 communication timeouts while gathering communicator data"] is None
    for c in ("net-gaps76d-nccldocs-ras-status-job-summary-4-nodes-32-gpus-communicators-running-ok-healthy",
              "net-gaps76d-nccldocs-ras-status-running-mismatch-collective-counts-6650-6649-healthy",
              "net-gaps76d-nccldocs-ras-status-finalize-mismatch-comm-split-teardown-transitional-healthy"):
        text = (cases / c / "posted-ncclras.txt").read_text(encoding="utf-8")
        assert [ln for ln in text.splitlines() if lexicon.shape_of(ln) is not None] == []


def test_open_mpis_repeat_count_of_a_failures_help_message_is_read_and_a_warnings_is_not():
    """mpirun's '%d more process%s sent help message %s / %s' (orte/util/show_help.c) is a failure line where its topic
    is a failure's (the tcp BTL's [client connect fail], tests/cases/cf-gaps65e-mpi4pyex11-*) and stays quiet where
    its topic is a warning a working run prints (the openib BTL's start-up warnings beside UCX, a real healthy case)."""
    cases = REPO / "tests" / "cases"
    failed = (cases / "cf-gaps65e-mpi4pyex11-rpi-cluster-openmpi-btl-tcp-connect-link-local-169-254" /
              "posted-output.txt").read_text(encoding="utf-8")
    counts = [ln for ln in failed.splitlines() if "sent help message help-mpi-btl-tcp.txt / client connect fail" in ln]
    assert counts and all(lexicon.shape_of(ln).id == "open-mpi-job-failed" for ln in counts)
    healthy = (cases / "net-blogs49-felixfu-notes-openmpi-cpi-8-ranks-openib-not-selected-ucx-healthy" /
               "posted-mpirun-cpi.txt").read_text(encoding="utf-8")
    quiet = [ln for ln in healthy.splitlines() if "sent help message" in ln or "Exit code" in ln or "(" in ln]
    assert any("sent help message help-mpi-btl-openib.txt" in ln for ln in quiet)
    assert [ln for ln in quiet if lexicon.shape_of(ln) is not None] == []


def test_slurms_task_affinity_notices_are_no_failure_and_its_launch_errors_are():
    # Real lines of working steps: Slurm's task/cgroup plugin running a task unbound (openhpc/ohpc#476,
    # lyulyul/shine-cluster#29); and slurmstepd's failures beside them (the cases
    # net-gaps78c-pytorchnccltest-cori-gpu-nine-hcas-roce-mlx5-3-error-12-broadcast-wrong-time-limit and
    # node-gaps60b-osc-docs-oom-kill-srun-task-out-of-memory-and-batch-step).
    for line in ("slurmstepd: error: task/cgroup: plugin not compiled with hwloc support, skipping affinity.",
                 "slurmstepd-eureka: error: task/cgroup: task[0] unable to set taskset '0x0'"):
        for prefix in ("", "node7: ", "[2020-12-14T09:44:56.002] [63532.0] "):
            assert lexicon.shape_of(prefix + line) is None, prefix + line
    for line in ("slurmstepd: error: *** STEP 32233190.0 ON nid01934 CANCELLED AT 2020-07-03T02:59:56 DUE TO TIME "
                 "LIMIT ***",
                 "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=14604003.0 cgroup. Some of your processes "
                 "may have been killed by the cgroup out-of-memory handler."):
        assert lexicon.shape_of(line) is not None, line


def test_slurms_memory_cgroup_it_could_not_create_is_no_failure_and_a_named_one_it_could_not_join_is():
    # task/cgroup's 'unable to add task[pid=%u] to memory cg '%s'' with the cgroup '(null)': the kernel had no
    # memory cgroup ID left for the step and the task ran outside it, printed by jobs that run fine
    # (galaxyproject/galaxy#6293; the line as slurmstepd prints it in galaxyproject/galaxy#6705). Failures of the
    # same plugin beside it stay read: a named cgroup the task could not join, and the cgroup's OOM kills.
    line = "slurmstepd: error: task/cgroup: unable to add task[pid=123] to memory cg '(null)'"
    for prefix in ("", "node7: ", "[2020-12-14T09:44:56.002] [63532.0] "):
        assert lexicon.shape_of(prefix + line) is None, prefix + line
        assert not [d for d in _log_of(prefix + line + "\n") if d.severity in ("fail", "warn")], prefix
    for line in ("slurmstepd: error: task/cgroup: unable to add task[pid=123] to memory cg '/sys/fs/cgroup/memory/slurm/uid_1000/job_6/step_0'",
                 "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=14604003.0 cgroup. Some of your processes "
                 "may have been killed by the cgroup out-of-memory handler."):
        assert lexicon.shape_of(line) is not None, line


def test_nvshmems_error_macros_are_failure_lines_and_its_warnings_are_not():
    # real: Azure/azhpc-images#316 (NVSHMEM's NVSHMEMI_NULL_ERROR_JMP and NVSHMEMI_NZ_ERROR_JMP, nvshmemx_error.h); its
    # WARN of a transport it could not start beside a ring that ran (tests/cases gpu-gaps64d-zenn-nvshmem-ring-*) and
    # a driver's 'status: 0' words are not
    for line in ("src/comm/transports/common/transport_ib_common.cpp:58: NULL value mem registration failed",
                 "src/mem/mem.cpp:604: non-zero status: 7 register heap handle failed",
                 "src/comm/device/proxy_device.cu:701: NULL value failed allocating proxy_channel_g_bufchannel creation "
                 "failed"):
        assert lexicon.shape_of(line).id == "nvshmem-error-jump", line
    for line in ("WARN: init failed for remote transport: ibrc",
                 "WARN: NVSHMEM_IB_TIMEOUT=40 is above the supported range 0-31; using 31.",
                 "PE 0 received 1 from its neighbour"):
        assert lexicon.shape_of(line) is None, line


def test_a_line_quoted_from_a_web_page_is_read_as_the_line_itself():
    """A launcher's log (real: tests/cases node-gaps81e-mpioperator429-*, kubeflow/mpi-operator#429) quoted as a web
    page or a chat quotes it, each line behind markdown's '> ', HTML-escaped and ended by '<br>': every line is of the
    shape it is of as written (the key refused for its mode, 'Permission denied' after a quote mark), and the
    quoted text fails with the cause it fails with as written."""
    import html

    case = "node-gaps81e-mpioperator429-launcher-ssh-private-key-0640-too-open-permission-denied"
    text = (Path(__file__).resolve().parents[1] / "cases" / case / "launcher-log.txt").read_text(encoding="utf-8")
    shapes = 0
    for ln in text.splitlines():
        quoted = "> " + html.escape(ln, quote=True) + "<br>"
        want = lexicon.shape_of(ln)
        got = lexicon.lines_in(quoted + "\n", "quoted.txt")
        assert [x.shape for x in got] == ([want.id] if want else []), (ln, got)
        shapes += want is not None
    assert shapes >= 2
    quoted = "".join("> " + html.escape(ln, quote=True) + "<br>\n" for ln in text.splitlines())
    assert [d.id for d in _log_of(quoted) if d.severity == "fail"][:1] == ["ssh-key-bad-permissions"]


def test_a_private_key_refused_for_its_mode_is_a_failure_line_and_its_banner_is_not():
    # real: kubeflow/mpi-operator#429 and kubeflow/trainer#2716 (OpenSSH authfile.c key_perm_ok, ssherr.c)
    for line in ("Permissions 0640 for '/root/.ssh/id_rsa' are too open.",
                 'Load key "/root/.ssh/id_rsa": bad permissions',
                 'Unable to load host key "/root/.ssh/id_rsa": bad permissions'):
        assert lexicon.shape_of(line).id == "ssh-key-bad-permissions", line
    for line in ("@         WARNING: UNPROTECTED PRIVATE KEY FILE!          @",
                 "It is required that your private key files are NOT accessible by others.",
                 "Warning: Permanently added 'tensorflow-benchmarks-worker-0.tensorflow-benchmarks-worker,10.42.91.237'"
                 " (ECDSA) to the list of known hosts."):
        assert lexicon.shape_of(line) is None, line


# The kernel's PCIe error reports and the routine lines of PCIe ports and mlx5 NICs, each as the kernel printed it
# (its dmesg stamp taken off), pasted alone, behind a launcher's rank tag, a pdsh host, a dmesg stamp and a journal
# prefix. A corrected error's lines name the link as a warning and leave the exit code 0, as a corrected error alone
# does (tests/unit/test_diagnosis_catalog.py); they are no lines of the failure lexicon. Real: the posts of
# tests/lexicon/real.toml and tests/kmsg/real.toml (the AER report's error bits, its register line and TLP header,
# the recovery's lines, Downstream Port Containment), and https://github.com/
# NVIDIA/gpu-operator/issues/2511, https://github.com/PeterSuh-Q3/tinycore-redpill/issues/9,
# https://github.com/leptonai/gpud/issues/348, https://github.com/FrameworkComputer/SoftwareFirmwareIssueTracker/
# issues/17 and https://github.com/qualcomm-linux/kernel/issues/323 (the start-up and power-management lines).
_KERNEL_PREFIXES = ("", "[rank3]: ", "node7: ", "[12345.678901] ", "Dec 01 12:00:00 node7 kernel: ")
PCIE_REPORT_LINES = [
    ("pcieport 0000:00:03.0:    [14] CmpltTO                (First)", "fail"),
    ("pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)", "fail"),
    ("nvidia 0000:02:00.0: device has no AER-aware driver", "fail"),
    ("pcieport 0000:00:03.0: AER: Root Port link has been reset (0)", "fail"),
    ("pcieport 0000:80:1b.4: AER:   TLP Header: 0x34000000 0x00000052 0x00000000 0x00000000", "fail"),
    ("pcieport 0000:30:03.0: DPC: containment event, status:0x0005 source:0x3400", "fail"),
    ("pcieport 0000:30:03.0: DPC: ERR_FATAL detected", "fail"),
    ("pcieport 0000:97:02.0: AER: subordinate device reset failed", "fail"),
    ("pcieport 0000:00:1c.5:    [ 0] Receiver Error        ", "warn"),
    ("pcieport 0000:00:02.0:   device [8086:6f04] error status/mask=00001000/00002000", "warn"),
    ("pcieport 0000:00:00.0: AER: Multiple Correctable error message received from 0000:01:00.0", "warn"),
]
PCIE_AND_MLX5_ROUTINE_LINES = [
    "mlx5_core 0000:63:00.0: mlx5_pcie_event:297:(pid 2071): PCIe slot power capability was not advertised.",
    "mlx5_core 0000:5c:00.0: mlx5_pcie_event:299:(pid 268269): Detected insufficient power on the PCIe slot (27W).",
    "mlx5_core 0000:03:00.0: firmware version: 14.32.1010",
    "nvme 0000:34:00.0: ready 0ms after DPC",
    "pcieport 0000:97:02.0: pciehp: Slot(4): Card present",
    "nvidia 0000:01:00.0: not ready 8191ms after resume; waiting",
    "xhci_hcd 0000:c1:00.3: Refused to change power state from D0 to D3hot",
    "aer_ratelimit: 8156 callbacks suppressed",
]


@pytest.mark.parametrize("line,severity", PCIE_REPORT_LINES)
def test_a_line_of_the_kernels_pcie_error_report_names_the_pcie_link_behind_any_prefix(line, severity):
    from nccldiag.diagnosis.model import fails_run

    for prefix in _KERNEL_PREFIXES:
        got = [d for d in _log_of(prefix + line + "\n") if d.severity in ("fail", "warn")]
        assert got and got[0].category == "pcie_link_aer" and got[0].severity == severity, (prefix, got)
        assert any(fails_run(d) for d in got) == (severity == "fail"), (prefix, got)


def test_a_device_the_kernel_gave_up_waiting_for_is_a_failure_line():
    line = "nvidia 0000:01:00.0: not ready 65535ms after resume; giving up"
    assert lexicon.shape_of(line).id == "pci-device-not-ready"
    for prefix in _KERNEL_PREFIXES:
        assert [d for d in _log_of(prefix + line + "\n") if d.severity == "fail"], prefix


@pytest.mark.parametrize("line", PCIE_AND_MLX5_ROUTINE_LINES)
def test_the_routine_lines_of_pcie_ports_and_mlx5_nics_stay_quiet_behind_any_prefix(line):
    assert lexicon.shape_of(line) is None, line
    for prefix in _KERNEL_PREFIXES:
        assert not [d for d in _log_of(prefix + line + "\n") if d.severity in ("fail", "warn")], prefix


# A shell's report of a job's death in the user's locale: bash prints strsignal's words (glibc po/<locale>.po at
# glibc-2.42, d2097651) and its own ' (core dumped)' (bash po/<locale>.po at bash-5.3, b8c60bc9), alone for a
# foreground job, after '<script>: line <n>: <pid> ' and before the command for a script's. The words are the
# catalogues' msgstr; a SIGTERM's 'Terminated' is no failure line in any locale, as in English.
SIGNAL_WORDS = [
    ("段错误 (核心已转储)", "segfault"), ("程式記憶體區段錯誤 (核心已傾印)", "segfault"),
    ("Speicherzugriffsfehler (Speicherabzug geschrieben)", "segfault"), ("Erreur de segmentation (core dumped)", "segfault"),
    ("Violación de segmento (`core' generado)", "segfault"), ("Falha de segmentação (imagem do núcleo gravada)", "segfault"),
    ("Ошибка сегментирования (образ памяти сброшен на диск)", "segfault"), ("세그멘테이션 오류 (코어 덤프됨)", "segfault"),
    ("Bus-Zugriffsfehler", "segfault"), ("总线错误 (核心已转储)", "segfault"),
    ("已中止 (核心已转储)", "core-dumped"), ("中止 (コアダンプ)", "core-dumped"), ("Abgebrochen (Speicherabzug geschrieben)", "core-dumped"),
    ("Abandon (core dumped)", "core-dumped"), ("Аварийный останов", "core-dumped"),
    ("已杀死", "killed"), ("強制結束", "killed"), ("強制終了", "killed"), ("죽었음", "killed"), ("Getötet", "killed"),
    ("Processus arrêté", "killed"), ("Terminado (killed)", "killed"), ("Morto (Killed)", "killed"), ("Убито", "killed"),
]
TERMINATED_WORDS = ["已终止", "終止", "종료됨", "중단됨", "Beendet", "Abgebrochen (Terminated)", "Complété", "Terminé",
                    "Terminado", "Завершено", "Прерван", "已完成", "Fertig"]


@pytest.mark.parametrize("word,row", SIGNAL_WORDS)
def test_a_job_killed_by_a_signal_is_a_failure_line_in_the_users_locale(word, row):
    for line in (word, f"[rank3]: {word}", f"node7: {word}", f"bash: line 1: 12345 {word} python train.py",
                 f"train.sh: line 3: 12345 {word}      python train.py"):
        shape = lexicon.shape_of(line)
        assert shape is not None and shape.id == row, (line, shape and shape.id)


@pytest.mark.parametrize("word", TERMINATED_WORDS)
def test_a_job_the_user_stopped_stays_quiet_in_the_users_locale(word):
    for line in (word, f"[1]+  {word}                  python train.py", f"bash: line 1: 12345 {word} python train.py"):
        assert lexicon.shape_of(line) is None, line


# Real lines of a GPU node's driver installation and services, each as posted (the thread in the comment), and the
# lines the same emitters print on a working node, from the same threads.
DRIVER_SETUP_LINES = [
    # kmod's modprobe (Witko/nvidia-xrun#135, compiler-explorer/infra#1413)
    ("modprobe: FATAL: Module nvidia not found in directory /lib/modules/5.2.13-200.fc30.x86_64", "nvidia-module-not-found"),
    ("modprobe: FATAL: Module nvidia_uvm not found in directory /lib/modules/5.2.13-200.fc30.x86_64",
     "nvidia-module-not-found"),
    ("Startup `modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.8.0-1015-aws`", "nvidia-module-not-found"),
    # NVIDIA's installer (BenedictThompson-zz/Azure-Ethereum-mine#2, microsoft/pai#2962)
    (" ERROR: The Nouveau kernel driver is currently in use by your system.  This", "nouveau-in-use"),
    ("ERROR: The Nouveau kernel driver is currently in use by your system", "nouveau-in-use"),
    # DKMS without the kernel's headers (emilyst/hid-nx-dkms#20; M-Bab/linux-kernel-amdgpu-binaries#58;
    # tomaspinho/rtl8821ce#191, the older DKMS's 'Error! echo' then the line)
    ("Error! Your kernel headers for kernel 6.6.15-amd64 cannot be found at /lib/modules/6.6.15-amd64/build or "
     "/lib/modules/6.6.15-amd64/source.", "kernel-module-build-failed"),
    ("Error! Your kernel headers for kernel 4.16.3+ cannot be found.", "kernel-module-build-failed"),
    ("Your kernel headers for kernel 5.9.0-kali1-amd64 cannot be found at", "kernel-module-build-failed"),
    # the kernel's signature check under Secure Boot
    # (JafarAkhondali/acer-predator-turbo-and-rgb-keyboard-linux-module#113)
    ("[ 1748.999277] Loading of module with unavailable key is rejected", "module-load-refused"),
    # systemd's start limit (utkuozdemir/nvidia_gpu_exporter#249)
    ("Nov 04 18:32:35 u116594 systemd[1]: nvidia_gpu_expoter.service: Start request repeated too quickly.",
     "systemd-unit-failed"),
]
DRIVER_SETUP_ROUTINE = [
    "Jan 05 14:45:28 TENCENT64 nv-fabricmanager[1120]: Successfully configured all the available NVSwitches to route "
    "GPU NVLink traffic. NVLink Peer-to-Peer support will be enabled once the GPUs are successfully registered with "
    "the NVLink fabric.",  # NVIDIA/nvtrust#128
    "Jan 05 14:45:28 TENCENT64 systemd[1]: Started nvidia-fabricmanager.service - NVIDIA fabric manager service.",
    "Jan 05 14:44:41 TENCENT64 nvidia-fabricmanager-start.sh[1049]: Detected Pre-NVL5 system",
    "May 31 05:33:40 kino1 nvidia-persistenced[19176]: device 0000:3d:00.0 - registered",  # nvidia-persistenced#2
    "Feb 07 23:27:48 lxdlwagpu02 systemd[1]: Started Load openibd on boot.",  # ovro-lwa/lwa-issues#89
    "DKMS: install completed.",  # Mellanox/nv_peer_memory#8
    "Secure Boot not enabled on this system.",  # Mellanox/nv_peer_memory#113
    "Signing module /var/lib/dkms/nct6687d/1/build/nct6687.ko",  # Fred78290/nct6687d#94
    "   - Installing to /lib/modules/6.8.4-2-pve/updates/dkms/",
    "WARNING: The nvidia-drm module will not be installed. As a result, DRM-KMS will not function with this "
    "installation of the NVIDIA driver.",  # pytorch/pytorch#88352
]


def _read_behind(line, row, prefixes):
    """``line`` is of the row ``row`` as posted and behind each of ``prefixes`` (a rank's, a host's, the journal's)."""
    for prefix in prefixes:
        shape = lexicon.shape_of(prefix + line)
        assert shape is not None and shape.id == row, (prefix, line)


def _quiet_behind(line, prefixes):
    """``line`` is of no shape, as posted and behind each of ``prefixes``."""
    for prefix in prefixes:
        assert lexicon.shape_of(prefix + line) is None, (prefix, line)


# A process a fatal signal ended, in the words zsh (its sig_msg) and strsignal give it, and glibc's fortification
# stopping a corrupted stack: real lines of tests/lexicon/real.toml behind a rank's and a host's prefix.
FATAL_SIGNAL_LINES = [
    ("zsh: killed     python3 horo_chart_tabs.py", "killed"),  # naturalstupid/PyJHora#15
    ("    [1]    4939 bus error  python demo_network.py", "segfault"),  # pytorch/pytorch#5848
    ("Program received signal SIGILL, Illegal instruction.", "fatal-signal"),  # pytorch/pytorch#37577
    ('Thread 1 "python" received signal SIGILL, Illegal instruction.', "fatal-signal"),  # pytorch/pytorch#22338
]


@pytest.mark.parametrize("line,row", FATAL_SIGNAL_LINES)
def test_a_process_a_fatal_signal_ended_is_a_failure_line_in_zshs_words_and_strsignals(line, row):
    _read_behind(line, row, ("", "[rank3]: ", "node7: "))


def test_zshs_words_for_a_job_that_ended_well_or_stopped_and_a_gpus_illegal_instruction_stay_out_of_the_signal_rows():
    # written for this test: zsh's job table for a job that finished ('done') or was stopped ('suspended'), and
    # CUDA's lower-case words for a kernel's illegal instruction, which the CUDA error rows read
    _quiet_behind("[1]  + 1234 done       python train.py", ("", "node7: "))
    _quiet_behind("[2]  + 5678 suspended  python train.py", ("", "node7: "))
    _read_behind("RuntimeError: CUDA error: an illegal instruction was encountered", "cuda-error", ("", "[rank3]: "))


def test_a_job_killed_for_exceeding_a_limit_in_a_supervisors_own_words_is_a_failure_line_behind_any_prefix():
    # https://github.com/payu-org/payu/issues/587: NCI Gadi's PBS hook, as posted
    _read_behind("Job 143560526.gadi-pbs killed due to exceeding jobfs quota. Quota: 15.0GB, Used: 15.0GB, Host: "
                 "gadi-cpu-spr-0578", "killed-for-exceeding", ("", "[rank3]: ", "node7: "))
    # the same job's resource-usage summary: PBS's exit status of a signal (256 + 15)
    _read_behind("   Exit Status:        271 (Linux Signal 15 SIGTERM Termination)", "exit-code", ("", "node7: "))
    # https://github.com/payu-org/payu/issues/864: a job that ended well, as payu status shows it
    _quiet_behind("  Exit Status:       0 (Success)", ("", "node7: "))
    # written for this test: a limit announced, not a job killed at it; a limit exceeded with nothing killed
    _quiet_behind("Jobs are killed when they exceed the walltime they requested.", ("", "node7: "))
    _quiet_behind("NOTE: jobs exceeding 48 hours will be killed", ("", "node7: "))
    _quiet_behind("UserWarning: the number of threads exceeds the number of cores", ("", "[rank3]: "))


@pytest.mark.parametrize("line,row", DRIVER_SETUP_LINES)
def test_a_nodes_driver_installation_and_service_failures_are_failure_lines_behind_any_prefix(line, row):
    _read_behind(line, row, ("", "node7: ", "Dec 07 10:00:01 gpu01 systemd[1]: "))


@pytest.mark.parametrize("line", DRIVER_SETUP_ROUTINE)
def test_a_working_nodes_driver_installation_and_service_lines_stay_quiet(line):
    _quiet_behind(line, ("", "node7: "))


# The kernel's note of a program killed by a SIGSEGV it did not handle (arch/x86/mm/fault.c show_signal_msg, at
# torvalds/linux fd5439e0): a warning of its own behind any prefix, whatever program it names; prose that speaks of
# a segfault, and the kernel's rate-limit note, stay quiet. Real: Lam1360/YOLOv3-model-pruning#58 and the sshd
# crashes of tests/cases/node-m4-runlog-tr141-dmesg-hung-task-python-gpfs-mmfs-write.
KERNEL_SEGFAULT_LINES = [
    "python[10098]: segfault at 5563198b0000 ip 00007f905b424c76 sp 00007ffd02bedcf8 error 5 in libc-2.23.so[7f905b2d7000+1c0000]",
    "sshd[30462]: segfault at 0 ip 0000000000000000 sp 00007ffe8ceaabb8 error 14 in sshd[55d80c773000+d0000]",
]
KERNEL_SEGFAULT_QUIET = [
    "show_signal_msg: 34 callbacks suppressed",
    "the trainer segfault at startup is gone since the driver update",
    "python segfault at import of torch, see the issue above",
]


@pytest.mark.parametrize("line", KERNEL_SEGFAULT_LINES)
def test_the_kernels_note_of_a_programs_segfault_is_a_warning_behind_any_prefix(line):
    assert lexicon.shape_of(line).id == "kernel-segfault"
    for prefix in _KERNEL_PREFIXES:
        got = [d for d in _log_of(prefix + line + "\n") if d.severity in ("fail", "warn")]
        assert got and {d.severity for d in got} == {"warn"}, (prefix, got)


@pytest.mark.parametrize("line", KERNEL_SEGFAULT_QUIET)
def test_prose_about_a_segfault_and_the_kernels_rate_limit_note_stay_quiet(line):
    assert lexicon.shape_of(line) is None, line


# bash's own 'Killed' in es and ru ('Matado', 'Убит': bash po/<locale>.po at bash-5.3, b8c60bc9) are everyday words:
# read where bash prints a job's status (after the pid of a script's 'NAME: line N: PID WORD  COMMAND', jobs.c
# notify_of_job_status, or a job listing's '[N]+  WORD  COMMAND'), never in prose.
@pytest.mark.parametrize("word", ["Matado", "Убит"])
def test_bashs_everyday_words_for_killed_are_read_in_a_jobs_status_line_only(word):
    for line in (f"train.sh: line 3: 12345 {word}      python train.py", f"[rank3]: bash: line 1: 12345 {word} python train.py",
                 f"[1]+  {word}                  python train.py"):
        shape = lexicon.shape_of(line)
        assert shape is not None and shape.id == "killed", line
    for line in (word, f"{word} el proceso, el servidor volvió a arrancar", f"{word} процесс, память освобождена",
                 f"el proceso fue {word} por el administrador", f"Вчера {word} ли процесс?"):
        assert lexicon.shape_of(line) is None, line


# A process killed, as bash says it in the user's locale, tells the diagnosis what the English 'Killed' does: the
# run ended badly (nccldiag.diagnosis.signs reads the row 'killed', whose words are data), and beside the kernel's
# OOM killer the same cause is named with the same evidence.
@pytest.mark.parametrize("word", ["已杀死", "Getötet", "Убито", "Убит", "Matado", "強制終了"])
def test_a_translated_kill_reads_as_the_english_one(word):
    from nccldiag.diagnosis import signs

    line = "train.sh: line 3:  4242 {}      python train.py"
    assert signs.ended_badly(line.format(word)) and signs.ended_badly(line.format("Killed"))
    oom = "[12345.678] Out of memory: Killed process 4242 (python) total-vm:100kB, anon-rss:50kB\n"
    for before in ("", oom):
        def said(w):
            return [(d.id, d.severity, d.category, re.sub(r"\S*pasted\.txt", "pasted.txt", d.summary.replace(w, "W")))
                    for d in _log_of(before + line.format(w) + "\n")]
        assert said(word) == said("Killed"), before


# Real lines of AMD GPU nodes' failures, each as posted (the thread in the comment): the amdgpu driver's hung rings,
# resets, GPU page faults, RAS errors and firmware (SMU) stalls, and rocm-smi's failed commands; and the lines the same
# emitters print when the GPU recovers or works, from the same threads.
AMD_GPU_LINES = [
    # amdgpu_job.c amdgpu_job_timedout, before and after Linux 6.12 (pop-os/cosmic-comp#2626, pop-os/cosmic-epoch#3764,
    # FreeBSD's drm-kmod: freebsd/drm-kmod#387)
    ("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=5000163, emitted seq=5000165",
     "amdgpu-gpu-hang"),
    ("Aug 09 11:36:30.370347 kernel: amdgpu 0000:0c:00.0: ring gfx_0.0.0 timeout, signaled seq=5389552, emitted "
     "seq=5389554", "amdgpu-gpu-hang"),
    ("Aug 09 11:36:30.614131 kernel: amdgpu 0000:0c:00.0: Ring gfx_0.0.0 reset failed", "amdgpu-gpu-hang"),
    ("[drm ERROR :amdgpu_job_timedout] ring gfx_0.0.0 timeout, signaled seq=12174921, emitted seq=12174923",
     "amdgpu-gpu-hang"),
    # amdgpu_device.c amdgpu_device_gpu_recover (pop-os/cosmic-comp#2626, ROCm/legacy-rocm-build#2804)
    ("amdgpu 0000:08:00.0: amdgpu: GPU reset begin!", "amdgpu-gpu-hang"),
    ("[  650.160935] amdgpu 0000:0b:00.0: amdgpu: GPU reset(1) failed", "amdgpu-gpu-hang"),
    # amdkfd kfd_device_queue_manager.c (ROCm/legacy-rocm-build#1584)
    ("Oct 07 15:47:47 sanori-laptop kernel: amdgpu: qcm fence wait loop timeout expired", "amdgpu-gpu-hang"),
    # gmc_v9_0.c and the later gmc's page faults (ROCm/amdgpu#172, #168, getsolus/packages#7986, freebsd/drm-kmod#78)
    ("[ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769)",
     "amdgpu-vm-page-fault"),
    ("[ 4778.917054] amdgpu 0000:c6:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00301031", "amdgpu-vm-page-fault"),
    ("[  283.724128] amdgpu 0000:2b:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00701031", "amdgpu-vm-page-fault"),
    ("[ 2480.727732] amdgpu 0000:0e:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:173 vmid:8 pasid:32791)",
     "amdgpu-vm-page-fault"),
    ("drmn0: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:5 pasid:32772, for process  pid 101038 thread  pid "
     "101038)", "amdgpu-vm-page-fault"),
    # amdgpu_ras.c amdgpu_ras_global_ras_isr (ROCm/legacy-rocm-build#1886, #1386)
    ("[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) "
     "detected!", "amdgpu-ras-uncorrectable"),
    ("[ 1358.996458] amdgpu 0000:83:00.0: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
     "amdgpu-ras-uncorrectable"),
    # swsmu smu_cmn.c (NixOS/nixpkgs#176915)
    ("[Wed Jun  8 16:35:03 2022] amdgpu 0000:03:00.0: amdgpu: SMU: I'm not done with your previous command!",
     "amdgpu-smu-unresponsive"),
    # rocm-smi (ROCm/rocm_smi_lib#85)
    ("WARNING:  \t\t One or more commands failed", "rocm-smi-commands-failed"),
]
AMD_GPU_ROUTINE = [
    "amdgpu 0000:08:00.0: amdgpu: GPU reset(2) succeeded!",  # pop-os/cosmic-comp#2626
    "maj 08 19:27:35 RX-78-FPC kernel: amdgpu 0000:c2:00.0: Ring gfx_0.0.0 reset succeeded",  # ggml-org/llama.cpp#21724
    "[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: SRAM ECC is active.",  # ROCm/legacy-rocm-build#1886
    "Oct 07 15:47:47 sanori-laptop kernel: amdgpu 0000:03:00.0: amdgpu: RAS: optional ras ta ucode is not available",
    "[    6.008707] amdgpu 0000:03:00.0: firmware: direct-loading firmware amdgpu/psp_13_0_0_sos.bin",  # ROCm/...#2197
    "[5621798.980225] amdgpu 0000:83:00.0: amdgpu: SMU driver if version not matched",  # ROCm/TheRock#2591
    "[5621799.027382] amdgpu 0000:83:00.0: amdgpu: SMU is resumed successfully!",
    "[5621799.208840] amdgpu 0000:83:00.0: amdgpu: ring gfx_0.0.0 uses VM inv eng 0 on hub 0",
]


@pytest.mark.parametrize("line,row", AMD_GPU_LINES)
def test_an_amd_gpu_nodes_failures_are_failure_lines_behind_any_prefix(line, row):
    _read_behind(line, row, ("", "[rank3]: ", "node7: ", "Dec 07 10:00:01 gpu01 kernel: "))


@pytest.mark.parametrize("line", AMD_GPU_ROUTINE)
def test_an_amd_gpu_nodes_routine_and_recovery_lines_stay_quiet(line):
    _quiet_behind(line, ("", "node7: "))


# Real lines of the training launchers and wrappers above torch.distributed, each as posted (the thread in the
# comment), and the lines the same launchers print in a working run, from the same threads.
LAUNCHER_WRAPPER_LINES = [
    # PyTorch Lightning's signal connector under Slurm's time limit (Lightning-AI/pytorch-lightning#20542)
    ("[rank: 0] Received SIGTERM: 15", "lightning-sigterm"),
    ("Bypassing SIGTERM: 15", "lightning-sigterm"),
    # accelerate launch's port check (vision-x-nyu/thinking-in-space#22)
    ("Tried to launch distributed communication on port `29500`, but another process is utilizing it. Please specify "
     "a different port (such as using the `--main_process_port` flag or specifying a different `main_process_port` in "
     "your config file) and rerun your script. To automatically use the next open port (on a single node), you can "
     "set this to `0`.", "accelerate-port-in-use"),
]
LAUNCHER_WRAPPER_ROUTINE = [
    "[2020-12-24 16:25:13,160] [WARNING] [runner.py:117:fetch_hostfile] Unable to find hostfile, will proceed with "
    "training with local resources only.",  # deepspeedai/DeepSpeed#618
    "[2020-12-24 16:25:13,902] [INFO] [launch.py:84:main] nnodes=1, num_local_procs=2, node_rank=0",
    "[2020-12-24 16:25:13,902] [INFO] [launch.py:102:main] Setting CUDA_VISIBLE_DEVICES=0,1",
    "[2022-04-28 04:19:02,152] [INFO] [launch.py:96:main] WORLD INFO DICT: {'algo-1': [0, 1, 2, 3, 4, 5, 6, 7]}",
    "[2022-04-28 04:19:02,153] [INFO] [launch.py:116:main] dist_world_size=8",  # deepspeedai/DeepSpeed#1923
    "[2020-12-05 17:42:22,315] [INFO] [runner.py:283:main] Using IP address of 192.168.2.57 for node 192.168.2.57",
    "The following values were not passed to `accelerate launch` and had defaults used instead:",
    "        `--num_cpu_threads_per_process` was set to `6` to improve out-of-box performance",
    "To avoid this warning pass in values for each of the problematic parameters or run `accelerate config`.",
    "(autoscaler +32s) Tip: use `ray status` to view detailed cluster status. To disable these messages, set "
    "RAY_SCHEDULER_EVENTS=0.",  # SkyworkAI/Skywork-OR1#34
    "2025-03-06 14:19:18,166\tINFO worker.py:1841 -- Started a local Ray instance.",  # Jiayi-Pan/TinyZero#94
    "2025-01-13 10:29:17,448 INFO config.py:83 -- Setting up process group for: env:// [rank=0, world_size=1]",
    "2025-01-13 10:29:19,506 INFO backend_executor.py:447 -- Started distributed worker processes: ",
]


@pytest.mark.parametrize("line,row", LAUNCHER_WRAPPER_LINES)
def test_a_training_launchers_failure_lines_are_failure_lines_behind_any_prefix(line, row):
    _read_behind(line, row, ("", "[rank3]: ", "node7: "))


@pytest.mark.parametrize("line", LAUNCHER_WRAPPER_ROUTINE)
def test_a_training_launchers_routine_lines_stay_quiet(line):
    _quiet_behind(line, ("", "[rank3]: ", "node7: "))


# Real lines of the RDMA NICs and Ethernet fabrics that are not Mellanox's, each as posted (the thread in the
# comment), and the lines the same drivers print on working nodes, from the same threads.
NIC_FABRIC_LINES = [
    # Broadcom bnxt_re and bnxt_en (linux-rdma, 'regression: nvme rdma with bnxt_re0 broken', 2019:
    # https://lore.kernel.org/linux-rdma/66d43fd8-18e8-8b9d-90e3-ee2804d56889@redhat.com)
    ("[  476.320742] bnxt_en 0000:19:00.0: QPLIB: cmdq[0x4b9]=0x15 status 0x5", "bnxt-firmware-command-failed"),
    ("[   21.098510] bnxt_en 0000:19:00.0 bnxt_roce: Too many traffic classes requested: 8. Max supported is 2.",
     "nic-dcb-traffic-classes-refused"),
    # bnxt_en VFs whose transmit queues hang (netdev, 2020:
    # https://lore.kernel.org/netdev/CAH6h+heNaKFT-xYdbOfYUa0Vp=Ybohb6A0TQ=N1EJDvFE6wbpw@mail.gmail.com and
    # https://lore.kernel.org/netdev/CAH6h+hceDweydEtSV8jXs15oqXMMNH+YZxzo+wZ3_MR9-Uqw4g@mail.gmail.com)
    ("[17879.279213] bnxt_en 0000:01:09.0 s1p1: TX timeout detected, starting reset task!", "nic-tx-unit-hang"),
    ("[17883.075299] bnxt_en 0000:01:09.0 s1p1: Resp cmpl intr err msg: 0x51", "bnxt-firmware-command-failed"),
    ("[17883.075302] bnxt_en 0000:01:09.0 s1p1: hwrm_ring_free type 1 failed. rc:fffffff0 err:0",
     "bnxt-firmware-command-failed"),
    ("bnxt_en 0000:01:09.1 s1p2: hwrm req_type 0xe0 seq id 0xcdf error 0x3", "bnxt-firmware-command-failed"),
    # Intel irdma on an E810 (ice), the RDMA engine's critical error and its reset (the stable review of 'ice: Dont
    # double unplug aux on peer initiated reset':
    # https://lore.kernel.org/stable/20220926100810.617881253@linuxfoundation.org)
    ("[  662.815006] ice 0000:4c:00.0 rocep76s0: ICE OICR event notification: oicr = 0x10000003", "irdma-critical-error"),
    ("[  662.815014] ice 0000:4c:00.0 rocep76s0: critical PE Error, GLPE_CRITERR=0x00011424", "irdma-critical-error"),
    ("[  662.815017] ice 0000:4c:00.0 rocep76s0: Requesting a reset", "irdma-critical-error"),
    ("[  662.676609] ice 0000:4c:00.0 rocep76s0: [Modify QP Cmd Error][op_code=8] status=-29 waiting=1 "
     "completion_err=1 maj=0xffff min=0x8003", "irdma-critical-error"),
    # Intel's Ethernet drivers: a link down, a NIC off PCIe, i40e's transmit hang (ntop/PF_RING#293,
    # appneta/tcpreplay#183 and #169, PartialVolume/shredos.x86_64#212, pcengines/apu2-documentation#174)
    ("Nov 17 13:16:56 superserver kernel: [11314.655315] ixgbe 0000:08:00.0 eth11: NIC Link is Down", "nic-link-down"),
    ("Jun  3 09:03:27 x710sbprobe kernel: i40e 0000:08:00.1: eth9: NIC Link is Down", "nic-link-down"),
    ("[28432.122502] e1000e 0000:00:1f.6 eth0: NIC Link is Down", "nic-link-down"),
    ("[72334.790042] ixgbe 0000:01:00.1 eth1: initiating reset to clear Tx work after link loss", "nic-link-down"),
    ("Apr 20 21:44:24 sfo-router kernel: [127576.922378] igb 0000:02:00.0 enp2s0: PCIe link lost", "nic-pcie-link-lost"),
    ("Jun  3 09:03:26 x710sbprobe kernel: i40e 0000:08:00.1: eth9: tx_timeout recovery level 1", "nic-tx-unit-hang"),
    ("<i> tx_timeout recovery level 2, hung_queue 31", "nic-tx-unit-hang"),  # open-power/op-build#3274, an XL710
]
NIC_FABRIC_ROUTINE = [
    "[   20.010469] hfi1 0000:d8:00.0: hfi1_0: Switching to NO_DMA_RTAIL",  # the linux-rdma thread above
    "[   22.058647] IPv6: ADDRCONF(NETDEV_CHANGE): hfi1_opa0: link becomes ready",
    "[  211.425275] infiniband bnxt_re0: del_gid port=1 index=6 gid 0000:0000:0000:0000:0000:ffff:ac1f:28bb",
    "[49103.729412] infiniband bnxt_re1: bnxt_re_stop: L2 driver notified to stop.Attempting to stop and Dispatching "
    "event to inform the stack",  # the netdev thread above
    "Nov 17 13:16:56 superserver kernel: [11314.654843] ixgbe 0000:08:00.0 eth11: NIC Link is Up 10 Gbps, Flow Control: RX",
    "Jun  3 09:03:27 x710sbprobe kernel: i40e 0000:08:00.1: eth9: NIC Link is Up 10 Gbps Full Duplex, Flow Control: None",
    "Jun  3 09:03:27 x710sbprobe kernel: i40e 0000:08:00.1: FCoE capability is disabled",
    "[39435.060730] infiniband efa_0: IB device registered",  # amzn/amzn-drivers#114
    "[39435.059374] efa 0000:00:07.0: Setup irq:0xffff8f3bcee5b288 vector:93 name:efa-mgmnt@pci:0000:00:07.0",
    "[68998.526165] Elastic Fabric Adapter (EFA) v2.6.0g",  # amzn/amzn-drivers#308
    "[68998.526276] efa 0000:4f:00.0: enabling device (0000 -> 0002)",
    "[68998.638853] efa 0000:4f:00.0: Setup irq:1861 name:efa-mgmnt@pci:0000:4f:00.0",
    # a port of an unused NIC at boot, as a working node printed it (be2net, not 'NIC Link is Down': tests/cases/
    # cf-gaps69b-rtx6kpro-wiki-asus-esc8000a-8x-rtx-pro-6000-dmesg-bridge-window-io-failed-to-assign-healthy)
    "[    9.156555] be2net 0000:f3:00.1 enp243s0f1: Link is Down",
]


@pytest.mark.parametrize("line,row", NIC_FABRIC_LINES)
def test_the_failures_of_rdma_nics_and_ethernet_fabrics_not_mellanox_are_failure_lines_behind_any_prefix(line, row):
    for prefix in ("", "[rank3]: ", "node7: ", "Dec 07 10:00:01 gpu01 kernel: "):
        shape = lexicon.shape_of(prefix + line)
        assert shape is not None and shape.id == row, (prefix, line, shape and shape.id)


@pytest.mark.parametrize("line", NIC_FABRIC_ROUTINE)
def test_the_lines_working_rdma_nics_and_ethernet_fabrics_print_stay_quiet(line):
    _quiet_behind(line, ("", "node7: "))


# What the parallel shells and configuration tools admins run over their nodes print for a node that did not answer
# or whose command failed, as posted (the addresses in tests/lexicon/real.toml), and what they print for the nodes
# that worked: Ansible's UNREACHABLE!/FAILED! results and its PLAY RECAP, Salt's minion that did not return.
NODE_TOOL_FAILURES = [
    ('fatal: [117.250.157.210]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: '
     'nib@117.250.157.210: Permission denied (publickey,password).", "unreachable": true}', "ansible-host-unreachable"),
    ("192.168.33.30 | UNREACHABLE! => {", "ansible-host-unreachable"),
    ("fatal: [repo.example.com]: UNREACHABLE! => changed=false ", "ansible-host-unreachable"),
    ('    "unreachable": true', "ansible-host-unreachable"),
    ('fatal: [mon]: FAILED! => {"failed": true, "msg": "Timeout (62s) waiting for privilege escalation prompt: "}',
     "ansible-task-failed"),
    ("kraken.escuela.com   : ok=0    changed=0    unreachable=1    failed=0   ",
     "ansible-play-recap-unreachable-or-failed"),
    ("localhost                  : ok=17   changed=8    unreachable=0    failed=1   ",  # ymcatwincities/openy#1760
     "ansible-play-recap-unreachable-or-failed"),
    ("    Minion did not return. [No response]", "salt-minion-did-not-return"),
    ("    Minion did not return. [Not connected]", "salt-minion-did-not-return"),
]
NODE_TOOL_ROUTINE = [
    "192.168.164.1                  : ok=1    changed=0    unreachable=0    failed=0  ",  # ansible/ansible#1398
    "172.31.37.16               : ok=3    changed=1    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0",
    "ok: [app]",
    'ok: [app] => {"cache_update_time": 1516732901, "cache_updated": false, "changed": false}',
    "apache | CHANGED | rc=0 >>",
    "[2] 14:03:03 [SUCCESS] host3",  # lilydjwg/pssh#102
    "    True",
    "  unreachable: true",  # the YAML callback's result under the fatal line (rdbreak/rhcsa7env#8): the fatal line is read
]


@pytest.mark.parametrize("line,row", NODE_TOOL_FAILURES)
def test_a_node_that_a_configuration_tool_could_not_reach_or_failed_on_is_a_failure_line_behind_any_prefix(line, row):
    for prefix in ("", "[rank3]: ", "node7: "):
        shape = lexicon.shape_of(prefix + line)
        assert shape is not None and shape.id == row, (prefix, line, shape and shape.id)


@pytest.mark.parametrize("line", NODE_TOOL_ROUTINE)
def test_the_lines_a_configuration_tool_prints_for_the_nodes_that_worked_stay_quiet(line):
    _quiet_behind(line, ("", "node7: "))


def test_the_cuda_toolkits_stub_nvml_banner_is_a_failure_and_its_other_lines_are_not():
    # real: openucx/ucx pull request 9232, ucx_info with the toolkit's stub libnvidia-ml.so preloaded; the banner's
    # first line (also behind UCX's prefix) and the stub's 'wrong path' line are the failure, its other lines are not
    text = _seen_texts("tests/cases/gpu-gaps85c-ucxpr9232-ucx-info-cuda-ipc-preloaded-nvml-stub-banner")
    read = [(s.id, line) for line in text.splitlines() for s in [lexicon.shape_of(line)] if s is not None]
    assert [i for i, _ in read if i == "nvml-stub-library"] == ["nvml-stub-library"] * 3, read
    for quiet in ("NVIDIA Display Driver. By default it's installed in /usr/lib and /usr/lib64.",
                  "libnvidia-ml.so in GDK package is a stub library that is attached only for",
                  # written for this test: the driver's own NVML as ldd and ldconfig list it on a working node
                  "\tlibnvidia-ml.so.1 => /lib/x86_64-linux-gnu/libnvidia-ml.so.1 (0x00007f3c1a200000)",
                  "\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so.1"):
        assert lexicon.shape_of(quiet) is None, quiet
