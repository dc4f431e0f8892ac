"""Golden end-to-end test: ``python -m nccldiag check --json -`` on assembled nodes, compared with a committed file.

In the manner of Prometheus node_exporter's ``end-to-end-test.sh`` and
``e2e-output.txt``: each case builds, in ``tmp_path``,

- a fixture root (``/etc``, ``/proc``, ``/sys`` files) that the collection
  script reads through ``NCCLDIAG_ROOT``, and
- a directory of stand-in commands put first on ``PATH``, each printing a real
  captured output (read in place from ``../shared/fixtures/node``, see
  ``tests/real.py`` and its SOURCES.md) or, where nothing was captured, a
  constructed one (marked ``CONSTRUCTED`` where it is defined, most of them
  shared with :mod:`tests.unit.bundles`),

then runs the real CLI in a subprocess in local mode (no hostfile: the real
collection script, run by the local transport, split into sections, parsed,
judged and reported) and compares the normalised JSON report with
``tests/golden/check-<case>.json``. Any change in a finding, a status, the exit
code or a parsed fact shows as a unified diff; a wanted change is approved by
regenerating the files and committing them::

    NCCLDIAG_UPDATE_GOLDEN=1 python3 -m pytest tests/unit/test_golden.py

What is normalised, because it varies between runs and machines:

- ``nccldiag_version``, ``generated_at``, ``elapsed_s`` (report and nodes) and
  the collection time in the ``ssh.collect`` message;
- the node's host name, which local mode takes from this machine
  (``socket.gethostname()``; the ``hostname`` command the script runs is a
  stand-in): replaced by ``<local>`` in ``nodes[].host`` and ``findings[].host``;
- the ``tmp_path`` prefix, replaced by ``<tmp>`` wherever it appears.

What the test cannot take from the fixture root and pins instead: the
``ulimit`` source prints the limits of the shell the script runs in, i.e. of
the CLI process. A process may lower its limits but needs privilege to raise
them, so the test sets RLIMIT_MEMLOCK to 64 KiB and RLIMIT_NOFILE to 1024
(soft and hard) in the child: the same on every machine, and therefore
``limits.memlock`` fails in both cases (an RDMA node with a 64 KiB memlock
limit). Every other source is a file under the fixture root or a stand-in
command. ``python3`` is a stand-in too (the python_env snippet would report
this machine's interpreter and torch, and reads ``/proc/driver/nvidia/gpus``
outside the root). The commands the script runs and that no case provides
(``rdma``, ``ibv_devinfo``, ``show_gids``, ``ibdev2netdev``, ``ibstatus``,
``df``, ``journalctl``, ``ofed_info``, ``dpkg-query``, ``rpm``,
``nv-fabricmanager``) are shadowed by stand-ins that print nothing, so this
machine's own tools never answer. ``/proc/driver/nvidia`` is not created, so
the NVML snippet does not run, and ``/dev/shm`` is not created, so ``df`` is
not asked (``limits.shm`` skips).
"""
from __future__ import annotations

import difflib
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from tests import real
from tests.trees import write_tree

from . import bundles as B

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
UPDATE = os.environ.get("NCCLDIAG_UPDATE_GOLDEN") == "1"
KIB = 1024
MEMLOCK = 64 * KIB
NOFILE = 1024


# ---- assembling a node -------------------------------------------------------------------------


class Node:
    """A fixture root and a directory of stand-in commands under ``tmp_path``."""

    def __init__(self, base: Path):
        self.base = base
        self.root = base / "root"
        self.bin = base / "bin"
        self.out = base / "out"  # texts the stand-ins print that are not read in place
        for d in (self.root, self.bin, self.out):
            d.mkdir(parents=True)

    def file(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def text(self, name: str, text: str) -> Path:
        """A text for a stand-in to print (constructed, or assembled from captures)."""
        path = self.out / name
        path.write_text(text, encoding="utf-8")
        return path

    def command(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + body.rstrip("\n") + "\n", encoding="utf-8")
        path.chmod(0o755)

    def prints(self, name: str, path: Path, rc: int = 0) -> None:
        """``name`` prints the file at ``path`` whatever its arguments."""
        self.command(name, f"cat '{path}'\nexit {rc}")

    def dispatch(self, name: str, cases: Dict[str, Optional[Path]]) -> None:
        """``name`` prints the file of its argument string; other arguments (or None) print nothing, exit 2."""
        lines = ['case "$*" in']
        for args, path in cases.items():
            lines.append(f"  {_sh_pattern(args)}) " + (f"cat '{path}';;" if path else "exit 2;;"))
        lines += ['  *) echo "stand-in $0: no output for: $*" >&2; exit 2;;', "esac"]
        self.command(name, "\n".join(lines))


def _sh_pattern(args: str) -> str:
    return args if args.endswith("*") and "'" not in args[:-1] else "'" + args.replace("'", "'\"'\"'") + "'"


# Commands the collection script may find on this machine and that no case provides: stand-ins that print
# nothing and succeed, so that neither this machine's tools nor its kernel log answer (CONSTRUCTED: empty).
SILENT = ("rdma", "ibv_devinfo", "show_gids", "ibdev2netdev", "ibstatus", "journalctl", "df", "ofed_info", "dpkg-query",
          "rpm", "nv-fabricmanager")


def system_node(n: Node, host: str, addr: str) -> None:
    """The system area: stand-in commands and root files from :func:`bundles.system_sources`.

    CONSTRUCTED (no fixture captured these): host name, kernel, OS release,
    CPU and memory, interfaces, name resolution; ``systemd-detect-virt`` says
    bare metal.
    """
    src = B.system_sources(host, addr)
    hostname = src["hostname"].splitlines()
    n.command("hostname", f'if [ "$1" = -f ]; then echo {hostname[1]}; else echo {hostname[0]}; fi')
    n.prints("uname", n.text("uname", src["uname"]))
    n.file("etc/os-release", src["os_release"])
    # CONSTRUCTED /proc/cpuinfo: the model line and processor count of system_sources' cpuinfo
    model = src["cpuinfo"].splitlines()[0]
    cpus = int(src["cpuinfo"].split("processors:")[1])
    n.file("proc/cpuinfo", "".join(f"processor\t: {i}\n{model}\nflags\t\t: fpu vme de pse\n\n" for i in range(cpus)))
    n.file("proc/meminfo", src["meminfo"])
    n.dispatch("ip", {"-o addr show": n.text("ip_addr", src["ip_addr"]),
                      "-o link show": n.text("ip_link", src["ip_link"])})
    n.command("getent", f"[ \"$2\" = {host} ] && cat '{n.text('getent', src['resolve_self'])}'")
    n.command("systemd-detect-virt", "echo none\nexit 1")
    for name in SILENT:
        n.command(name, "exit 0")


def dmesg(n: Node, *captures: str) -> None:
    """One kernel log for the three ``dmesg`` sources: captures one after the other (each area greps its lines)."""
    n.prints("dmesg", n.text("dmesg", B.fixtures(*captures)))


def nvidia_smi(n: Node, query_csv: str, q: str, nvlink: str, topo_m: str, p2p_r: str) -> None:
    """``nvidia-smi``: captured ``-q``, ``nvlink --status``, ``topo -m``, ``topo -p2p r``.

    CONSTRUCTED: the ``--query-gpu`` CSV (:func:`bundles.h100_query_csv`, without
    the line the snippet appends) and the index list of the probe query.
    ``topo -p2p w`` was never captured on an H100: the stand-in prints nothing
    and exits 2.
    """
    csv = "".join(l + "\n" for l in query_csv.splitlines() if not l.startswith("nccldiag:"))
    count = len(csv.splitlines()) - 1
    n.dispatch("nvidia-smi", {
        "--query-gpu=index --format=csv,noheader": n.text("smi_index", "".join(f"{i}\n" for i in range(count))),
        "--query-gpu=*": n.text("smi_csv", csv),
        "-q": real.node(q),
        "nvlink --status": real.node(nvlink),
        "topo -m": real.node(topo_m),
        "topo -p2p r": real.node(p2p_r),
        "topo -p2p w": None,
        "nvlink -e": real.node("nvidia-smi-nvlink/mleng-h100-nvlink-e-error-counters-elided.txt"),
    })


def cpufreq(n: Node, capture: str) -> None:
    """One cpufreq policy per governor named in the capture (its "..." elision dropped)."""
    govs = [l.strip() for l in B.fixture(capture).splitlines() if l.strip() and l.strip() != "..."]
    for i, g in enumerate(govs):
        n.file(f"sys/devices/system/cpu/cpufreq/policy{i}/scaling_governor", g + "\n")


def python_env(n: Node, **result) -> None:
    """CONSTRUCTED: the python_env snippet's two JSON lines, as a training interpreter prints them."""
    start = {"stage": "start", "python": "3.10.12", "executable": "/opt/venv/bin/python3"}
    done = dict(start, stage="done", **result)
    n.prints("python3", n.text("python_env", json.dumps(start) + "\n" + json.dumps(done) + "\n"))


TORCH_CUDA = dict(imported=True, torch="2.3.1+cu121", cuda_build="12.1", cuda_available=True, device_count=8,
                  nccl="2.20.5", distributed=True, backend_gloo=True, backend_nccl=True, backend_mpi=False,
                  mpi4py_error="ImportError: No module named mpi4py", nccldiag="0.1.0")
TORCH_CPU = dict(TORCH_CUDA, torch="2.3.1+cpu", cuda_build=None, cuda_available=False, device_count=0,
                 nccl=None, backend_nccl=False, nccl_error="RuntimeError: NCCL is not available")


# ---- the cases -----------------------------------------------------------------------------------


def healthy_h100(n: Node) -> None:
    """The composite healthy 8x H100 node of :func:`bundles.healthy_h100`, as a live node's tree and tools."""
    system_node(n, "gpu001", "10.0.0.11")
    n.file("proc/cmdline", B.fixture("proc-cmdline/hotsos-openstack-vm-no-iommu-flags.txt"))
    # the H100 host's mlx5 firmware and cable lines stand in for the rest of its kernel log (no Xid, no AER)
    dmesg(n, "dmesg-iommu/hotsos-kvm-guest-only-default-domain-line.txt",
          "firmware/gpud-h100-dmesg-mlx5-firmware-version-cx7-cx6dx-12-funcs-selected.txt",
          "link-flaps/gpud-h100-dmesg-mlx5-port-module-cable-plugged-unplugged-selected.txt")
    n.prints("lspci", real.node("lspci/gpud-h100-dell-pex890xx-gpu0-path-acs-off.txt"))
    write_tree(B.fixture("sysfs-infiniband/gpud-h100-ndr400-8ib-plus-bond-ethernet.txt"), str(n.root))
    n.prints("ibstat", real.node("ibstat/gpud-h100-ib-ndr-all-active-space-indented.txt"))
    # an lsmod capture stands for /proc/modules (the gdr parser reads both formats)
    n.file("proc/modules", B.fixture("lsmod-modules/azhpc-lsmod-centos-nv_peer_mem-mlx5.txt"))
    nvidia_smi(n, B.h100_query_csv(), "nvidia-smi-q/gpud-8x-h100-535-truncated-invalid.txt",
               "nvidia-smi-nvlink/mleng-h100-nvlink-status-elided.txt",
               "nvidia-smi-topo-m/mleng-8x-h100-nv18-spaces.txt",
               "nvidia-smi-topo-p2p/mleng-8x-h100-p2p-r-all-ok.txt")
    # CONSTRUCTED: systemd's DefaultLimitMEMLOCK line, as in bundles.ULIMIT_UNLIMITED
    n.command("systemctl", "echo DefaultLimitMEMLOCK=infinity")
    n.file("etc/security/limits.conf", B.fixture("limits-ulimit/azhpc-limits-conf-memlock-unlimited.txt"))
    cpufreq(n, "cpufreq-governor/hotsos245-policy-scaling-governor-performance-elided.txt")
    python_env(n, **TORCH_CUDA)


def failing_h100(n: Node) -> None:
    """The healthy node with real failing captures in place of the healthy ones.

    IOMMU translating (AMD-Vi, no passthrough option) with RDMA ports; a PCIe
    link limited by a Gen4 switch; ACS redirect on a root port that may lead
    to the GPUs; RoCE ports Down/Polling and Disabled (no sysfs tree: ibstat
    only); no peer-memory module and peermem errors in the kernel log; V100
    NVLink status with inactive links; PID 1's memlock 64 MiB with no systemd
    line; a CPU-only torch (CONSTRUCTED, as for the healthy node); Xid 48/94
    and corrected AER events in the kernel log; an H100 report whose GPUs
    are all in HW Power Brake Slowdown; NVSwitch errors in the fabric
    manager's log.
    """
    healthy_h100(n)
    dmesg(n, "dmesg-iommu/amd-vi-unknown-option-on-blockquoted.txt",
          "dmesg-pcie/mleng-h100-pcie-bandwidth-limited-by-gen4-switch.txt",
          "lsmod-modules/gpud-dmesg-nvidia-peermem-invalid-context-errors.txt",
          "kernel-xid/gpud-dmesg-iso-xid48-dbe-xid63-remap-xid94-peermem.txt",
          "pcie-aer/popos3363-amd-1022-1453-rootport-correctable-timeout-badtlp-journal.txt")
    n.file("var/log/fabricmanager.log", B.fixture("fabric-manager/gpud-hgx-h100-fm-535-nvswitch-nonfatal-12028-errors.txt"))
    n.prints("lspci", real.node("lspci/rccl547-epyc-matisse-gpp-bridge-acs-enabled-elided.txt"))
    subprocess.run(["rm", "-r", str(n.root / "sys" / "class" / "infiniband")], check=True)
    n.prints("ibstat", real.node("ibstat/gpud-h100-roce400g-down-polling-disabled.txt"))
    n.file("proc/modules", B.fixture("lsmod-modules/azhpc-lsmod-nvidia-mlx4-no-peermem.txt"))
    nvidia_smi(n, B.h100_query_csv(), "gpu-throttle/gpud-8x-h100-535.161.08-hw-power-brake-slowdown-active-full-q.txt",
               "nvidia-smi-nvlink/azhpc-v100-8gpu-inactive-links.txt",
               "nvidia-smi-topo-m/mleng-8x-h100-nv18-spaces.txt",
               "nvidia-smi-topo-p2p/mleng-8x-h100-p2p-r-all-ok.txt")
    n.command("systemctl", "exit 0")
    n.file("proc/1/limits", B.fixture("limits-ulimit/hotsos-proc-1-limits-memlock-64MiB.txt"))
    python_env(n, **TORCH_CPU)


CASES = {"h100": healthy_h100, "h100-failing": failing_h100}


# ---- running and comparing ---------------------------------------------------------------------


def _pin_limits() -> None:
    """In the child: limits every process may set, so that ``ulimit`` prints the same everywhere."""
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (MEMLOCK, MEMLOCK))
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def run_check(n: Node, hash_seed: str = "0") -> dict:
    env = {
        "PATH": f"{n.bin}:/usr/bin:/bin",
        "NCCLDIAG_ROOT": str(n.root),
        "PYTHONPATH": str(REPO),
        "PYTHONHASHSEED": hash_seed,
        "HOME": str(n.base),
        "LC_ALL": "C",
        "NO_COLOR": "1",
    }
    res = subprocess.run([sys.executable, "-m", "nccldiag", "check", "--json", "-"], env=env, cwd=str(n.base),
                         capture_output=True, text=True, timeout=300, preexec_fn=_pin_limits)
    assert res.returncode in (0, 1, 3), res.stderr
    report = json.loads(res.stdout)
    assert report["exit_code"] == res.returncode
    return report


_ELAPSED = re.compile(r"(collected in |connect )\d+(?:\.\d+)? s")


def normalise(report: dict, tmp: Path) -> dict:
    local = {n["host"] for n in report["nodes"]}
    report = dict(report, nccldiag_version="<version>", generated_at="<time>", elapsed_s="<elapsed>")
    nodes = []
    for node in report["nodes"]:
        node = dict(node, host="<local>", elapsed_s="<elapsed>")
        findings = []
        for f in node["findings"]:
            f = dict(f, host="<local>") if f.get("host") in local else dict(f)
            if f["check"] == "ssh.collect":
                f["message"] = _ELAPSED.sub(r"\1<elapsed> s", f["message"])
            findings.append(f)
        node["findings"] = findings
        nodes.append(node)
    report["nodes"] = nodes
    for key in ("diagnoses", "diagnosis_summary"):
        # diagnoses name the node in their words too: every whole-word mention becomes <local>
        part = json.dumps(report.get(key), ensure_ascii=False)
        for host in local:
            part = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w.-])", "<local>", part)
        report[key] = json.loads(part)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    return json.loads(text.replace(json.dumps(str(tmp))[1:-1], "<tmp>"))


def render(report: dict) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def golden_text(case: str, tmp: Path, hash_seed: str = "0") -> str:
    n = Node(tmp / case)
    CASES[case](n)
    return render(normalise(run_check(n, hash_seed), tmp))


def compare(case: str, actual: str) -> None:
    path = GOLDEN / f"check-{case}.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.is_file(), f"{path} missing: run NCCLDIAG_UPDATE_GOLDEN=1 python3 -m pytest tests/unit/test_golden.py"
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            f"{path.relative_to(REPO)} (expected)", "nccldiag check (actual)"))
        pytest.fail(f"the report of case {case} differs from {path.relative_to(REPO)}; if the change is wanted, "
                    f"approve it with NCCLDIAG_UPDATE_GOLDEN=1 python3 -m pytest tests/unit/test_golden.py "
                    f"and commit the file\n{diff}", pytrace=False)


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_matches_golden_file(tmp_path, case):
    real.require()
    compare(case, golden_text(case, tmp_path))


def test_report_is_the_same_under_another_hash_seed(tmp_path):
    """Nothing in the report depends on set or dict order that varies between runs."""
    real.require()
    assert golden_text("h100-failing", tmp_path / "a", "0") == golden_text("h100-failing", tmp_path / "b", "4242")


def statuses(report: dict) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for f in report["nodes"][0]["findings"]:
        out.setdefault(f["check"], []).append(f["status"])
    return out


def test_healthy_golden_agrees_with_the_bundle_test():
    """The live healthy node is judged as the healthy bundle is, but for what only a live run differs in.

    Local mode reports ``ssh.collect`` without SSH, the shell's memlock limit
    is the one the test pins, and the python_env source is present here.
    """
    from .test_bundles import HEALTHY, KMSG_CHECKS

    golden = statuses(json.loads((GOLDEN / "check-h100.json").read_text(encoding="utf-8")))
    want = {k: v for k, v in HEALTHY.items() if not k.startswith("python.")}
    want.update({"limits.memlock": ["fail"], "python.interpreter": ["ok"], "python.torch": ["ok"]})
    # the kernel log, the NVLink counters, the sysfs port counters and the whole nvidia-smi -q are read live only
    want.update({"pcie_errors.kernel_log": ["ok"], "xid.events": ["ok"], "ibcounters.link_flaps": ["ok"],
                 "ibcounters.link": ["warn"], "ibcounters.transport": ["ok"],
                 "nvlink.errors": ["ok"], "firmware.inforom": ["ok"], "gpuhealth.ecc": ["skip"],
                 "gpuhealth.row_remap": ["skip"], "gpuhealth.reset": ["ok"], "gpuhealth.clocks": ["ok"],
                 "firmware.gpu": ["ok"], "pcie_errors.replays": ["ok"]})
    want.update({c: ["ok"] for c in KMSG_CHECKS})
    assert golden == want
