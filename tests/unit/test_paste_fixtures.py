"""Every real node output under ../shared/fixtures/node, pasted as admins paste it, reads as the same output in a
bundle: the same failing and warning findings as ``check --bundle`` gives on a bundle holding that output.

Each capture is read in place and pasted alone, behind ``# `` quote marks, behind ``> `` quote marks, under a
shell prompt that runs its command, behind pdsh's ``host: `` prefix, behind a launcher's ``[default0]:`` label,
behind a timestamp per line, and in the middle of a real NCCL log. The bundle is written to disk and read back
as ``check --bundle`` reads it (``bundle.read_node``), then judged by the check engine. The decorations are
written by these tests around the real captures; the captures themselves are unchanged.
"""
import re
from pathlib import Path
from typing import Dict, List

import pytest

from nccldiag import bundle, paste
from nccldiag.areas import all_areas, kind as area_kind
from nccldiag.check.engine import analyze_node
from nccldiag.model.findings import Status
from nccldiag.model.raw import RawNode
from tests import real

# The command typed for each kind, where a paste shows it under its prompt.
COMMANDS = {
    "ibstat": "ibstat", "ibstatus": "ibstatus", "ibv_devinfo": "ibv_devinfo -v", "ibdev2netdev": "ibdev2netdev",
    "show_gids": "show_gids", "rdma_link": "rdma link", "nvidia-smi": "nvidia-smi", "nvidia-smi -q": "nvidia-smi -q",
    "nvidia-smi topo": "nvidia-smi topo -m", "nvidia-smi nvlink": "nvidia-smi nvlink -s",
    "nvidia-smi --query-gpu": "nvidia-smi --query-gpu=index,name --format=csv", "kernel log": "dmesg",
    "fabric manager log": "journalctl -u nvidia-fabricmanager", "lspci": "lspci -vvv", "lsmod": "lsmod",
    "/proc/PID/limits": "cat /proc/1/limits", "limits.conf": "cat /etc/security/limits.conf", "files":
    "head /sys/class/infiniband/*/ports/*/*", "mlnx_qos": "mlnx_qos -i eth0", "sysctl": "sysctl -a",
    "/proc/cmdline": "cat /proc/cmdline", "HCA firmware tools": "mlxup --query", "ethtool -S": "ethtool -S eth0",
}
# Captures found only under the command that prints them (their output alone names nothing).
BY_COMMAND = {"cpufreq-governor": "cat /sys/devices/system/cpu/cpufreq/policy0/scaling_governor"}
# Fixture kinds that hold no node output a paste is read for: the NCCL log reader reads them (benchmarks).
NOT_A_NODE_OUTPUT = ("nccl-tests", "perftest")
HOST = "gpu7"
NCCL_LOG = "net-ib-gdrdma-p2p-cumem-2node-4rank-nccltests.log"


def _captures() -> List:
    if not real.AVAILABLE:
        return [pytest.param(real.ABSENT, real.ABSENT, marks=pytest.mark.skip(reason=real.REASON))]
    return [pytest.param(p.parent.name, p.name, id=f"{p.parent.name}/{p.name}")
            for p in sorted(real.NODE.rglob("*.txt")) if p.parent.name not in NOT_A_NODE_OUTPUT
            and p.read_text(encoding="utf-8").strip()]


def _key(findings) -> List:
    return sorted((f.check, f.status.value, f.message) for f in findings if f.status in (Status.FAIL, Status.WARN))


def _collected(source: str, text: str) -> str:
    """``text`` as the source's command keeps it on a node, where the command keeps part of the kernel log: the
    grep stages, ``head`` and ``tail`` of its pipe (``dmesg | grep -iE 'peermem|...' | tail -n 50``), read from
    the command itself."""
    command = next(s.command for a in all_areas() for s in a.SOURCES if s.name == source)
    lines = text.splitlines()
    pipe = command.split("} |", 1)[1] if command.startswith("{ dmesg") and "} | grep" in command else ""
    for stage in re.findall(r"(?:grep [^|']*'[^']*'|head -n \d+|tail -n \d+)", pipe):
        m = re.match(r"\s*grep (-\w+ )?'([^']*)'", stage)
        n = re.match(r"\s*(head|tail) -n (\d+)", stage)
        if m:
            rx = re.compile(m.group(2), re.I if "i" in (m.group(1) or "") else 0)
            lines = [l for l in lines if bool(rx.search(l)) != ("v" in (m.group(1) or ""))]
        elif n:
            lines = lines[:int(n.group(2))] if n.group(1) == "head" else lines[-int(n.group(2)):]
    return "".join(l + "\n" for l in lines)


def _bundle_findings(tmp: Path, text: str, sources: List[str]) -> List:
    """The findings ``check --bundle`` gives on one node holding ``text`` as each of ``sources``."""
    node = RawNode(HOST, {s: _collected(s, text) for s in sources}, rcs={s: 0 for s in sources})
    node_dir = bundle.write_node(str(tmp), node)
    raw = bundle.read_node(node_dir)
    return _key(analyze_node(raw, [a for a in all_areas() if area_kind(a) == "node"]).findings)


def _variants(text: str, command: str) -> Dict[str, str]:
    lines = text.splitlines()
    log = real.nccl_log(NCCL_LOG).read_text(encoding="utf-8")
    return {
        "quoted": "".join(f"# {l}\n" if l else "#\n" for l in lines),
        "markdown": "".join(f"> {l}\n" if l else ">\n" for l in lines),
        "prompt": f"root@{HOST}:~# {command}\n{text}",
        "pdsh": "".join(f"{HOST}: {l}\n" for l in lines),
        "launcher": "".join(f"[default0]:{l}\n" for l in lines),
        "timestamps": "".join(f"2024-05-01T10:{i // 60 % 60:02d}:{i % 60:02d}.123Z {l}\n" for i, l in enumerate(lines)),
        "in a log": f"{log}[root@{HOST} ~]# {command}\n{text.rstrip()}\n[root@{HOST} ~]# exit\n{log}",
    }


@pytest.mark.parametrize("kind,name", _captures())
def test_a_capture_pasted_in_every_way_reads_as_the_same_output_in_a_bundle(kind, name, tmp_path):
    text = real.node_text(kind, name)
    alone = paste.scan(text, name) if kind not in BY_COMMAND else \
        paste.scan(f"$ {BY_COMMAND[kind]}\n{text}", name)
    sources = sorted({s for b in alone.blocks for s in b.sections})
    assert alone.blocks, f"{kind}/{name}: not found"
    expected = _bundle_findings(tmp_path / "b", text, sources)
    assert _key(alone.findings) == expected
    own = {b.host for b in alone.blocks if b.sections}  # the host the output names itself (a syslog line's), or None
    assert {f.host for f in alone.findings} <= own
    command = BY_COMMAND.get(kind) or COMMANDS.get(alone.blocks[0].kind, "cat output.txt")
    for how, pasted in _variants(text, command).items():
        if kind in BY_COMMAND and how not in ("prompt", "in a log"):
            continue  # found under its command only
        p = paste.scan(pasted, "paste.txt")
        assert sorted({s for b in p.blocks for s in b.sections}) == sources, how
        assert _key(p.findings) == expected, how
        hosts = {b.host for b in p.blocks if b.sections}
        if how == "pdsh":
            assert hosts == {HOST}, how  # the host before each line
        elif how in ("prompt", "in a log"):
            assert hosts == (own if own != {None} else {HOST}), how  # the output's own host, else the prompt's
        else:
            assert hosts == own, how
        assert {f.host for f in p.findings} <= hosts, how
