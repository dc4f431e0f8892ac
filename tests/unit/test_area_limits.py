"""Limits area: memlock (ulimit, /proc limits, limits.conf), CPU governor, /dev/shm; judgement and snippets."""
import subprocess

import pytest

from nccldiag.areas import limits
from nccldiag.areas.base import NodeFacts
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections
from nccldiag.model.findings import Status
from tests import real

CONF = ("limits-ulimit", "azhpc-limits-conf-memlock-unlimited.txt")
PROC1 = ("limits-ulimit", "hotsos-proc-1-limits-memlock-64MiB.txt")
GOV = ("cpufreq-governor", "hotsos245-policy-scaling-governor-performance-elided.txt")
MIB = 1024 ** 2


class Ib:
    def __init__(self, n):
        self.ports = list(range(n))


def node(ports=None):
    n = NodeFacts("h")
    if ports is not None:
        n.facts["ib"] = Ib(ports)
    return n


def by_check(findings):
    return {f.check: f for f in findings}


def test_limits_conf_fixture_memlock_lines():
    conf = limits.parse_limits_conf(real.node_text(*CONF))
    mem = [(c.domain, c.type, c.value) for c in conf if c.item == "memlock"]
    assert mem == [("*", "soft", "unlimited"), ("*", "hard", "unlimited"), ("*", "hard", "unlimited"), ("*", "soft", "unlimited")]
    assert [(c.type, c.value) for c in conf if c.item == "nofile"] == [("hard", 65535), ("soft", 65535)]
    # the commented examples (#*  soft  core  0) are not taken
    assert all(not c.line.startswith("#") for c in conf)


def test_proc_1_limits_fixture_64MiB():
    f = limits.parse({"proc_limits": "==> /proc/1/limits <==\n" + real.node_text(*PROC1)})
    assert f.proc_limits == {"1": {"memlock": {"soft": 64 * MIB, "hard": 64 * MIB},
                                   "nofile": {"soft": 1048576, "hard": 1048576}}}
    assert f.memlock_soft is None  # PID 1's limit is not the shell's
    # without a header the table is read as the shell's own (/proc/self/limits)
    g = limits.parse({"proc_limits": real.node_text(*PROC1)})
    assert g.memlock_soft == 64 * MIB and g.memlock_source == "/proc/self/limits" and g.nofile_soft == 1048576


def test_governor_fixture_with_elision():
    assert limits.parse_governors(real.node_text(*GOV)) == {"performance": 1}
    f = limits.parse({"cpufreq": real.node_text(*GOV)})
    [g] = [x for x in limits.judge(f, node()) if x.check == "limits.cpu_governor"]
    assert g.status == Status.OK


def test_governor_formats_and_warning():
    # constructed: the snippet's 'driver:' + 'uniq -c' form, and the _dump form
    f = limits.parse({"cpufreq": "driver: intel_pstate\n     96 powersave\n     32 performance\n"})
    assert f.cpufreq_driver == "intel_pstate" and f.governors == {"powersave": 96, "performance": 32}
    g = by_check(limits.judge(f, node()))["limits.cpu_governor"]
    assert g.status == Status.WARN and "96 powersave" in g.message and "cpupower frequency-set -g performance" in g.fix
    dump = "==> /sys/devices/system/cpu/cpufreq/policy0/scaling_governor <==\nondemand\n\n" \
           "==> /sys/devices/system/cpu/cpufreq/policy1/scaling_governor <==\nondemand\n"
    assert limits.parse_governors(dump) == {"ondemand": 2}
    assert by_check(limits.judge(limits.parse({}), node()))["limits.cpu_governor"].status == Status.SKIP


def test_memlock_low_fails_with_rdma_passes_without_and_warns_when_unknown():
    # constructed ulimit section in the snippet's format
    raw = {"ulimit": "memlock soft 65536\nmemlock hard 65536\nnofile soft 1024\nnofile hard 1048576\n",
           "limits_conf": real.node_text(*CONF)}
    f = limits.parse(raw)
    assert (f.memlock_soft, f.memlock_hard, f.memlock_source) == (64 * MIB, 64 * MIB, "ulimit -l")
    assert (f.nofile_soft, f.nofile_hard) == (1024, 1048576)
    m = by_check(limits.judge(f, node(ports=8)))["limits.memlock"]
    assert m.status == Status.FAIL and "64 MiB" in m.message and m.expected == "unlimited"
    assert "* soft memlock unlimited" in m.fix and "LimitMEMLOCK=infinity" in m.fix
    assert "UsePAM" in m.fix  # limits.conf says unlimited, the session does not get it
    assert any("memlock" in e and "unlimited" in e for e in m.evidence)
    none = by_check(limits.judge(f, node(ports=0)))["limits.memlock"]  # no RDMA NIC: nothing needs memory pinned
    assert none.status == Status.OK and "64 MiB" in none.message and "no RDMA NIC" in none.message
    assert by_check(limits.judge(f, node()))["limits.memlock"].status == Status.WARN  # not known


def test_memlock_unlimited_ok():
    f = limits.parse({"ulimit": "memlock soft unlimited\nmemlock hard unlimited\n"})
    m = by_check(limits.judge(f, node(ports=8)))["limits.memlock"]
    assert m.status == Status.OK and f.memlock_soft == "unlimited"
    assert limits.summarize(f)["memlock"] == "unlimited"


def test_service_memlock_from_systemd_or_pid1():
    f = limits.parse({"ulimit": "memlock soft unlimited\nmemlock hard unlimited\nDefaultLimitMEMLOCK=8388608\n"})
    assert f.systemd_memlock == 8 * MIB
    s = by_check(limits.judge(f, node(ports=8)))["limits.memlock_services"]
    assert s.status == Status.WARN and "8 MiB" in s.message
    g = limits.parse({"ulimit": "memlock soft unlimited\n", "proc_limits": "==> /proc/1/limits <==\n" + real.node_text(*PROC1)})
    s = by_check(limits.judge(g, node(ports=8)))["limits.memlock_services"]
    assert "PID 1" in s.message and "64 MiB" in s.message
    assert "limits.memlock_services" not in by_check(limits.judge(g, node(ports=0)))
    h = limits.parse({"ulimit": "DefaultLimitMEMLOCK=infinity\n"})
    assert h.systemd_memlock == "unlimited"
    assert "limits.memlock_services" not in by_check(limits.judge(h, node(ports=8)))


def test_shm_size():
    # constructed df -Pk lines
    small = limits.parse({"shm": "shm                  65536       0     65536   0% /dev/shm\n"})
    assert small.shm_bytes == 64 * MIB
    s = by_check(limits.judge(small, node()))["limits.shm"]
    assert s.status == Status.WARN and "--shm-size" in s.fix
    big = limits.parse({"shm": "tmpfs 263852452 0 263852452 0% /dev/shm\n"})
    assert by_check(limits.judge(big, node()))["limits.shm"].status == Status.OK
    assert by_check(limits.judge(limits.parse({}), node()))["limits.shm"].status == Status.SKIP


@pytest.mark.parametrize("raw", [{}, {"ulimit": None}, {"ulimit": "memlock soft\nnofile hard lots\n"},
                                 {"proc_limits": "Max locked memory\n"}, {"shm": "Filesystem 1024-blocks Used\n"}])
def test_tolerates_missing_and_odd_sections(raw):
    f = limits.parse(raw)
    assert f.memlock_soft is None and f.shm_bytes is None
    found = by_check(limits.judge(f, node(ports=1)))
    assert found["limits.memlock"].status == Status.SKIP
    limits.summarize(f)
    assert limits.judge(None, node())[0].status == Status.SKIP


def test_tabs_and_truncation():
    text = real.node_text(*CONF)
    assert len(limits.parse_limits_conf(text.replace(" ", "\t"))) == 6
    assert len(limits.parse_limits_conf(text[: text.index("*               hard    memlock")])) == 2
    half = real.node_text(*PROC1)[:700]
    f = limits.parse({"proc_limits": half})
    assert f.memlock_soft is None and f.nofile_soft == 1048576


def test_snippets_run_against_a_fixture_tree(tmp_path):
    root = tmp_path / "root"
    (root / "proc/1").mkdir(parents=True)
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/1/limits").write_text(real.node_text(*PROC1))
    (root / "etc/security/limits.d").mkdir(parents=True)
    (root / "etc/security/limits.conf").write_text(real.node_text(*CONF))
    (root / "etc/security/limits.d/90-nproc.conf").write_text("# constructed\n*          soft    nproc     4096\n")
    # constructed cpufreq tree: four policies
    for i, g in enumerate(["performance", "performance", "powersave", "performance"]):
        d = root / f"sys/devices/system/cpu/cpufreq/policy{i}"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(g + "\n")
        (d / "scaling_driver").write_text("intel_pstate\n")
    (root / "dev/shm").mkdir(parents=True)
    env = {"NCCLDIAG_ROOT": str(root), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["sh", "-s"], input=build_script(limits.SOURCES), capture_output=True, text=True,
                         env=env, timeout=60).stdout
    secs, rcs, truncated = split_sections(out)
    assert not truncated and set(secs) == {"ulimit", "proc_limits", "limits_conf", "cpufreq", "shm"}
    assert secs["limits_conf"].startswith("==> /etc/security/limits.conf <==\n* soft memlock unlimited\n")
    assert "==> /etc/security/limits.d/90-nproc.conf <==" in secs["limits_conf"]
    assert "#" not in secs["limits_conf"]
    f = limits.parse(secs)
    assert f.memlock_soft is not None and f.memlock_source == "ulimit -l"  # this shell's own limit
    assert f.proc_limits["1"]["memlock"]["soft"] == 64 * MIB
    assert len([c for c in f.conf if c.item == "memlock"]) == 4
    assert f.cpufreq_driver == "intel_pstate" and f.governors == {"performance": 3, "powersave": 1}
    assert isinstance(f.shm_bytes, int) and f.shm_bytes > 0
    assert by_check(limits.judge(f, node()))["limits.cpu_governor"].status == Status.WARN


def test_cpufreq_snippet_silent_without_cpufreq(tmp_path):
    out = subprocess.run(["sh", "-s"], input=build_script([s for s in limits.SOURCES if s.name in ("cpufreq", "shm")]),
                         capture_output=True, text=True, env={"NCCLDIAG_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         timeout=30).stdout
    secs, rcs, _ = split_sections(out)
    assert secs == {"cpufreq": "", "shm": ""} and rcs == {"cpufreq": 0, "shm": 0}


# ---- hand-captured formats ------------------------------------------------------------------------------

# Written for this test, in bash's `ulimit -a` layout (the one hand-built bundles carry).
ULIMIT_A = """\
real-time non-blocking time  (microseconds, -R) unlimited
core file size              (blocks, -c) 0
data seg size               (kbytes, -d) unlimited
max locked memory           (kbytes, -l) 64
max memory size             (kbytes, -m) unlimited
open files                          (-n) 1024
pipe size                (512 bytes, -p) 8
"""


def test_ulimit_a_gives_memlock_and_nofile():
    f = limits.parse({"ulimit": ULIMIT_A})
    assert (f.memlock_soft, f.nofile_soft, f.memlock_source) == (64 * 1024, 1024, "ulimit -l")
    mem = by_check(limits.judge(f, node(ports=2)))["limits.memlock"]
    assert mem.status == Status.FAIL and "64 KiB" in mem.message
    assert any("max locked memory" in e for e in mem.evidence)


def test_ulimit_a_unlimited_memlock_is_ok():
    f = limits.parse({"ulimit": ULIMIT_A.replace("(kbytes, -l) 64", "(kbytes, -l) unlimited")})
    assert by_check(limits.judge(f, node(ports=2)))["limits.memlock"].status == Status.OK


# Written for this test: `grep . /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`, one line per CPU.
GREP_GOV = "".join(f"/sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor:powersave\n" for i in range(4))


def test_grep_dot_scaling_governor_lines():
    f = limits.parse({"cpufreq": GREP_GOV})
    assert f.governors == {"powersave": 4}
    g = by_check(limits.judge(f, node()))["limits.cpu_governor"]
    assert g.status == Status.WARN and "4 powersave" in g.message


def test_governor_skip_reasons_say_what_happened():
    def reason(raw):
        return by_check(limits.judge(limits.parse(raw), node()))["limits.cpu_governor"].message

    assert reason({}) == "cpufreq governors not collected"
    assert "VM, or frequency managed by firmware" in reason({"cpufreq": ""})
    assert reason({"cpufreq": "Permission denied\n"}) == "cpufreq output collected but unreadable"
