"""Causes told by what surrounds an error rather than by the error's own words, each on the real case that shows it
and on real evidence where it must stay silent: a container started without its GPU option
(``container-gpu-option-missing``), NCCL's P2P chosen between ranks that each see only their own GPU
(``p2p-peer-gpu-hidden``).

The failing cases are the in-repo real cases of ``tests/cases`` (their sources in ``tests/cases/SOURCES.md``); the
healthy side is the shared fixtures, read in place, and the working runs of ``tests/cases``. Text written for a test
says so.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nccldiag.paste import ends, reader
from tests import real, realcases

CASES = Path(__file__).resolve().parents[1] / "cases"
CONTAINER = "container-gpu-option-missing"
HIDDEN = "p2p-peer-gpu-hidden"


diagnoses = realcases.alarms_of


def case(name: str):
    return realcases.alarms_of_case(CASES / name)


# ---- a container started without its GPU option -------------------------------------------------------------------

def test_singularity_exec_without_nv_is_the_container_not_the_driver():
    ds = case("node-ncar-docs-casper-singularity-exec-without-nv-nvml-driver-library-mismatch")
    assert ds[0].id == CONTAINER and ds[0].category == "other:container-runtime-without-gpu-support", \
        [(d.id, d.summary) for d in ds]
    assert ds[0].severity == "fail"
    assert any("singularity exec --cleanenv" in e.text for e in ds[0].evidence)
    assert "cuda-driver-mismatch" not in [d.id for d in ds]  # the version mismatch is the container's libraries


@pytest.mark.parametrize("line,command", [
    # written for this test: the shapes of the commands
    ("casper$ singularity exec --cleanenv ./c.sif nvidia-smi", "singularity exec --cleanenv ./c.sif nvidia-smi"),
    ("[user@node1 ~]$ docker run --rm img nvidia-smi", "docker run --rm img nvidia-smi"),
    ("(base) [u@h ~]$ sudo podman run img", "podman run img"),
    ("srun -N1 apptainer run x.sif python t.py", "apptainer run x.sif python t.py"),
    ("casper$ singularity exec --nv ./c.sif nvidia-smi", ""),  # the option is there
    ("$ docker run --gpus all img nvidia-smi", ""),
    ("$ docker run --runtime=nvidia img", ""),
    ("$ podman run --device nvidia.com/gpu=all img", ""),
    ("Run it with singularity exec and see", ""),  # prose, not a command
    ("hint: docker run img", ""),
])
def test_container_commands_without_a_gpu_option(line, command):
    assert ends.container_without_gpus(line) == command


def test_container_command_counts_only_with_a_gpu_failure_after_it():
    # written for this test: the command's own output decides
    failing = b"$ docker run --rm img nvidia-smi\nFailed to initialize NVML: Unknown Error\n$ ls\n"
    [(command, failure)] = reader.read(failing).container_no_gpu
    assert (command.lineno, failure.lineno) == (1, 2) and failure.text.startswith("Failed to initialize NVML")
    working = b"$ docker run --rm img python -c 'print(1)'\n1\n$ nvidia-smi\nFailed to initialize NVML: Unknown Error\n"
    assert reader.read(working).container_no_gpu == []  # the failure follows another prompt: another command


def _texts():
    roots = [real.ROOT] if real.ROOT.is_dir() else []
    out = [p for r in roots for p in r.rglob("*") if p.is_file() and p.suffix != ".json"]
    out += [p for c in CASES.iterdir() if c.is_dir() and json.loads((c / "case.json").read_text())["healthy"]
            for p in c.iterdir() if p.name != "case.json"]
    return out


def test_no_real_text_but_the_case_shows_a_container_without_gpus():
    found = []
    for path in _texts():
        if path.stat().st_size > 20_000_000:
            continue
        data = path.read_bytes()
        if any(w in data for w in (b"singularity", b"apptainer", b"docker", b"podman")):
            found += [(str(path), c.text) for c, _ in reader.read(data, str(path)).container_no_gpu]
    assert found == [], found


# ---- P2P chosen between ranks that each see only their own GPU -----------------------------------------------------

def test_nccl_ipc_217_between_ranks_of_one_gpu_each_is_the_visible_devices():
    ds = case("gpu-raylightning24-pid-prefixed-p2p-ipc-217-per-worker-visible-devices")
    assert ds[0].id == HIDDEN and ds[0].category == "other:per-worker-cuda-visible-devices", \
        [(d.id, d.summary) for d in ds]
    assert ds[0].nodes == ["z-pc"] and "p2p-unsupported" not in [d.id for d in ds]


def test_cuda_217_outside_nccls_p2p_choice_stays_gpus_without_p2p():
    # a framework's own CUDA call refused (no NCCL WARN): the GPUs themselves support no P2P ('topo -p2p' NS)
    ds = case("node-nemorl1683-g6-l4-topo-p2p-all-ns-cuda-217-anonymised-prompt")
    assert ds[0].category == "p2p_unsupported_gpu" and HIDDEN not in [d.id for d in ds], \
        [(d.id, d.summary) for d in ds]


# ---- nodes Slurm has taken out of service ------------------------------------------------------------------------

def test_sinfo_reasons_rendered_a_cell_a_line_name_the_nodes_out_of_service():
    ds = case("node-hpxc-manual-sinfo-r-memory-errors-not-responding-nodes")
    assert ds[0].id == "slurm-node-out-of-service" and ds[0].severity == "fail", [(d.id, d.summary) for d in ds]
    assert "dev[0,5] (Memory errors)" in ds[0].summary and "dev8 (Not Responding)" in ds[0].summary


@pytest.mark.parametrize("text,rows", [
    # written for this test: the shapes of sinfo -R's output
    (b"$ sinfo -R\nREASON               USER      TIMESTAMP           NODELIST\n"
     b"Not responding       slurm     2024-01-03T10:00:00 gpu[01-03]\n$ ls\n", [("Not responding", "gpu[01-03]")]),
    (b"# sinfo -Rl\nREASON   USER  TIMESTAMP            STATE  NODELIST\n"
     b"Kill task failed  root  2024-01-04T11:22:00  drain  gpu07\n", [("Kill task failed", "gpu07")]),
    (b"REASON               NODELIST\nMemory errors        dev[0,5]\n", [("Memory errors", "dev[0,5]")]),
    (b"$ sinfo -R\nREASON               USER      TIMESTAMP           NODELIST\n$ ls\n", []),  # none out of service
    (b"$ sinfo\nPARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ngpu*  up  infinite  2  idle gpu[01-02]\n", []),
])
def test_sinfo_reasons_reading(text, rows):
    assert [(r, n) for _, r, n in reader.read(text).slurm_reasons] == rows


def test_planned_drains_are_a_warning():
    # written for this test
    path_text = b"$ sinfo -R\nREASON               NODELIST\nscheduled maintenance  gpu[01-08]\n"
    from nccldiag.diagnosis.rules import slurm_reasons
    assert slurm_reasons.PLANNED.search("scheduled maintenance")
    assert [(r, n) for _, r, n in reader.read(path_text).slurm_reasons] == [("scheduled maintenance", "gpu[01-08]")]


def test_no_real_text_but_the_case_holds_sinfo_reasons():
    found = []
    for path in _texts():
        if path.stat().st_size > 20_000_000:
            continue
        data = path.read_bytes()
        if b"NODELIST" in data or b"sinfo" in data:
            found += [(str(path), x.text) for x, _, _ in reader.read(data, str(path)).slurm_reasons]
    assert found == [], found


# ---- no libibverbs provider ----------------------------------------------------------------------------------------

def test_ibverbs_without_providers_and_no_device_found_is_the_providers():
    ds = case("node-dsxinfra5251-scout-ibv-devinfo-no-ib-devices-ibverbs-providers-missing")
    assert ds[0].id == "ibverbs-provider-missing" and ds[0].category == "other:rdma-provider-missing", \
        [(d.id, d.summary) for d in ds]
    assert "unexplained" not in [d.category for d in ds]  # 'No IB devices found' is cited: explained


def test_the_provider_warnings_alone_are_no_fault(tmp_path):
    # written for this test: libibverbs' warnings as a program that links it prints them, and the job going on
    log = tmp_path / "written-for-test.log"
    log.write_text("libibverbs: Warning: couldn't open config directory '/etc/libibverbs.d'.\n"
                   "libibverbs: Warning: no userspace device-specific driver found for "
                   "/sys/class/infiniband_verbs/uverbs0\nEpoch 1: loss 0.52\n")
    assert diagnoses([log]) == []


def test_devices_without_a_provider_and_librdmacm_finding_none_are_the_providers():
    # libfabric's fi_info on usNIC devices no verbs provider claims: libibverbs' older warning, librdmacm's Fatal
    ds = case("net-node45-libfabric975-usnic-no-userspace-verbs-driver-fi-getinfo-enodev")
    assert ds[0].id == "ibverbs-provider-missing" and ds[0].category == "other:rdma-provider-missing", \
        [(d.id, d.summary) for d in ds]
    assert any("librdmacm: Fatal: no RDMA devices found" in e.text for e in ds[0].evidence)


def test_librdmacm_finding_no_device_on_a_node_without_rdma_is_no_fault():
    # the project's README: three MPI ranks report in, librdmacm's line and Open MPI's openib notice are okay
    assert case("node-node45-tigress-readme-librdmacm-no-rdma-devices-openmpi-tcp-healthy") == []


# ---- the GPU Operator's driver container not ready ------------------------------------------------------------------

def test_driver_daemonset_not_ready_is_named_behind_the_operands_in_init():
    ds = case("node-gpuoperator-docs-operand-pods-init-driver-daemonset-not-ready")
    assert ds[0].id == "gpu-driver-pod-not-ready" and ds[0].category == "other:gpu-driver-container-not-ready", \
        [(d.id, d.summary) for d in ds]
    assert "nvidia-driver-daemonset-4rtiu" in ds[0].summary and "unexplained" not in [d.category for d in ds]


def test_operator_pods_running_and_another_pod_failing_are_not_the_driver():
    assert case("node-gpuoperator-docs-getting-started-pods-running-validator-completed-healthy") == []
    ds = case("node-gpuoperator-docs-operator-pod-crashloop-memory-limit-large-cluster")  # the operator's own pod
    assert "gpu-driver-pod-not-ready" not in [d.id for d in ds], [(d.id, d.summary) for d in ds]


# ---- a pasted NCCL configuration file --------------------------------------------------------------------------------

NC48 = "net-gaps63c-jingchao-azure-nc48v4-etc-nccl-conf-graph-file-allreduce-busbw-57-not-225"


def test_a_graph_file_set_in_a_pasted_etc_nccl_conf_is_named():
    ds = case(NC48)
    assert ds[0].id == "nccl-env" and ds[0].category == "nccl_env_misconfig" and ds[0].severity == "warn", \
        [(d.id, d.summary) for d in ds]
    assert "NCCL_GRAPH_FILE=/opt/microsoft/ncv4/graph.xml" in ds[0].summary
    assert any(e.text == "NCCL_GRAPH_FILE=/opt/microsoft/ncv4/graph.xml" for e in ds[0].evidence)


@pytest.mark.parametrize("text,settings", [
    # written for this test: the shapes of a 'cat' of NCCL's configuration files (NVIDIA/nccl src/misc/param.cc,
    # setEnvFile: 'NAME=VALUE' lines, '#' lines skipped)
    (b"$ cat /etc/nccl.conf\nNCCL_TOPO_FILE=/opt/t.xml\nNCCL_GRAPH_FILE=/opt/g.xml\n$ ls\n",
     [("NCCL_TOPO_FILE", "/opt/t.xml"), ("NCCL_GRAPH_FILE", "/opt/g.xml")]),
    (b"root@node1:~# cat ~/.nccl.conf\nNCCL_IB_DISABLE=1\n\nNCCL_SOCKET_IFNAME=eth0\n",
     [("NCCL_IB_DISABLE", "1"), ("NCCL_SOCKET_IFNAME", "eth0")]),
    # a '# ' line after it is a root shell's next prompt as much as a comment of the file: the output ends there
    (b"# cat /etc/nccl.conf\nNCCL_IB_DISABLE=1\n# nvidia-smi\nNCCL_GRAPH_FILE=/opt/g.xml\n", [("NCCL_IB_DISABLE", "1")]),
    (b"$ cat /etc/nccl.conf\nNCCL_DEBUG=INFO\n#       size         count      type\n"
     b"           8             2     float     sum      -1    13.14    0.00    0.00      0\nNCCL_ALGO=Tree\n",
     [("NCCL_DEBUG", "INFO")]),  # the output ends at the first line no such file holds
    (b"$ cat /etc/nccl.conf\n$ export NCCL_GRAPH_FILE=/opt/g.xml\n", []),  # the file was empty
    (b"$ cat job.sh\nNCCL_GRAPH_FILE=/opt/g.xml\n", []),  # not NCCL's file
    (b"see /etc/nccl.conf\nNCCL_GRAPH_FILE=/opt/g.xml\n", []),  # prose, no command
])
def test_nccl_conf_reading(text, settings):
    assert [(n, v) for _, n, v in reader.read(text).nccl_conf] == settings


def test_no_real_text_but_the_case_holds_an_nccl_conf():
    found = []
    for path in _texts():
        if path.stat().st_size > 20_000_000:
            continue
        data = path.read_bytes()
        if b"nccl.conf" in data:
            found += [(str(path), x.text) for x, _, _ in reader.read(data, str(path)).nccl_conf]
    assert found == [], found
