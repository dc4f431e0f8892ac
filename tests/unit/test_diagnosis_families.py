"""Message families read from real pastes whatever tool printed them: the interface of a job the launcher spread
over nodes, a driver call's value in an MPI's help text, the loader's word size of libcuda, HIP's no-device error, the
NVIDIA container runtime's programs missing, Slurm with no configuration, Accelerate's consumer-GPU refusal, c10d's
store timeout quoted without its address. Each is read from the real case of tests/cases it came from, and each is
held quiet where the evidence that makes it is taken away."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest

from nccldiag.diagnosis import signs
from tests import realcases

CASES = Path(__file__).resolve().parents[1] / "cases"


def _alarms(text: str, tmp: Path):
    """The fail/warn diagnoses of 'nccldiag log' on ``text`` (the failure lexicon's lines included)."""
    path = tmp / "pasted.txt"
    path.write_text(text, encoding="utf-8")
    return realcases.alarms_of([path])


def categories(text: str, tmp: Path) -> List[str]:
    return [d.category for d in _alarms(text, tmp)]


def top(text: str, tmp: Path):
    found = _alarms(text, tmp)
    assert found, "no fail/warn diagnosis"
    return found[0]


def _text(case: str) -> str:
    folder = CASES / case
    meta = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    return "".join((folder / f).read_text(encoding="utf-8") for f in meta["files"])


LOOPBACK = "net-gaps70e-pytorch52916-two-nodes-nccl-socket-ifname-lo-bootstrap-127-0-0-1-connect-refused-retrying"


@pytest.mark.parametrize("line,nodes", [
    ("$ export NCCL_DEBUG=INFO ; python3 /home/u/.local/lib/python3.6/site-packages/torch/distributed/launch.py "
     "--nnode=2 --node_rank=1 --nproc_per_node=1 train.py", 2),
    ("torchrun --nnodes=4 --nproc-per-node=8 --rdzv-endpoint=n1:29500 train.py", 4),
    ("torchrun --nnodes 1:4 --nproc-per-node 8 train.py", 1),
    ("srun -N 2 --gpus-per-node=8 python train.py", 2),
    ("sbatch --nodes=16-32 job.sh", 16),
    ("deepspeed --num_nodes 2 --hostfile hosts train.py", 2),
    ("accelerate launch --num_machines 3 --machine_rank 0 train.py", 3),
    ("torchrun --nproc-per-node=8 train.py", None),  # no count: the launcher's default is one node
    ("python train.py --nnodes 2", None),  # a program's own option, no launcher
    ("step 10 loss 2.31 nodes=2", None),
])
def test_a_launchers_command_line_says_how_many_nodes(line, nodes):
    assert signs.launch_line(line) == nodes


def test_loopback_is_the_fault_where_the_launch_line_spreads_the_job_over_nodes(tmp_path):
    """The real rank's log of pytorch/pytorch#52916: NCCL_SOCKET_IFNAME=lo, bootstrap on 127.0.0.1, under
    'launch.py --nnode=2'. Without the launch line nothing in the text says the job spans nodes, and loopback is
    what a job on one node may use: no fault is named then."""
    text = _text(LOOPBACK)
    d = top(text, tmp_path)
    assert d.category == "socket_ifname_wrong" and d.severity == "fail"
    assert any("--nnode=2" in e.text for e in d.evidence)
    alone = "".join(text.splitlines(keepends=True)[1:])
    assert "socket_ifname_wrong" not in categories(alone, tmp_path)


def test_a_driver_calls_value_in_open_mpis_help_text_is_read_as_cudas_error(tmp_path):
    """Open MPI's 'cuIpcOpenMemHandle return value:   217' (the Open MPI users list, thread 21521) is
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED; 205 (CUDA_ERROR_MAP_FAILED, thread 19878) names no cause of the node by
    itself, and is not made a program's fault."""
    assert top(_text("list-gaps71d-openmpi-users-21521-cuda-ipc-gpus-on-two-iohs-cuipcopenmemhandle-217-peer-access-0")
               , tmp_path).category == "p2p_unsupported_gpu"
    got = categories(_text("list-gaps71d-openmpi-users-19878-six-c2070-two-iohs-cuipcopenmemhandle-205-failed-to-"
                           "register-remote-memory"), tmp_path)
    assert got and "other:gpu-application-fault" not in got


def test_a_32_bit_libcuda_found_first_is_the_driver_library_mismatch(tmp_path):
    text = _text("list-gaps71d-openmpi-users-26537-cuda-aware-disabled-libcuda-so-1-wrong-elf-class-elfclass32")
    assert top(text, tmp_path).category == "cuda_driver_mismatch"
    # another library of the other word size is the loader's failure line, no CUDA cause
    other = "/opt/app/lib/libfoo.so: wrong ELF class: ELFCLASS32\n"
    assert categories(other, tmp_path) and "cuda_driver_mismatch" not in categories(other, tmp_path)


@pytest.mark.parametrize("case,category", [
    ("gpu-gaps70d-lumi-hedgedoc-20230214-hello-jobstep-hiperrornodevice-no-gres-requested",
     "other:gpus-not-allocated-to-job"),
    ("node-gaps70c-renya-infra-tips-ja-docker-nvidia-container-runtime-hook-not-in-path-after-driver-purge",
     "other:container-runtime-without-gpu-support"),
    ("node-gaps70d-awslabs-hyperpod-tips-srun-dns-srv-lookup-failed-slurm-conf-deleted-slurmd-restart-headnode",
     "other:slurm-config-missing"),
    ("gpu-gaps70b-fluxgym283-accelerate-rtx-4000-series-p2p-ib-notimplementederror", "p2p_unsupported_gpu"),
    ("net-gaps71c-kubeflowsdk142-trainjob-multinode-c10d-client-socket-timed-out-900000ms-store",
     "rendezvous_unreachable"),
])
def test_a_message_family_is_named_by_its_cause(case, category, tmp_path):
    assert top(_text(case), tmp_path).category == category


def test_slurms_configless_lookup_is_no_host_name_of_the_job(tmp_path):
    """srun's 'resolve_ctls_from_dns_srv: res_nsearch error: Unknown host' is its configless fallback looking for
    the controller's DNS SRV record (no slurm.conf): not the job's hosts failing to resolve."""
    text = _text("node-gaps70d-awslabs-hyperpod-tips-srun-dns-srv-lookup-failed-slurm-conf-deleted-slurmd-restart-"
                 "headnode")
    assert "hostname_resolution" not in categories(text, tmp_path)
    only = "srun: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
    assert "hostname_resolution" not in categories(only, tmp_path)


def test_other_programs_not_found_are_not_the_container_runtime(tmp_path):
    text = 'docker: Error response from daemon: exec: "runc": executable file not found in $PATH.\n'
    assert "other:container-runtime-without-gpu-support" not in categories(text, tmp_path)


def test_hip_reporting_no_error_is_no_failure(tmp_path):
    assert categories("hipGetLastError: HIP error: no error\n", tmp_path) == []
