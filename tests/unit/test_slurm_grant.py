"""What a Slurm allocation grants per node, from the variables salloc/sbatch set, and the probe's ranks per node."""
import pytest

from nccldiag.slurm import grant

# the variables of `salloc -N 2` (no --exclusive) on scripts/vslurm's cluster (CPUs=4 per node, CR_CPU), as
# `echo $SLURM_JOB_CPUS_PER_NODE $SLURM_TASKS_PER_NODE` printed them in tests/integration/test_slurm.py
DEFAULT = {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "ncdl[01-02]", "SLURM_JOB_CPUS_PER_NODE": "1(x2)",
           "SLURM_TASKS_PER_NODE": "1(x2)", "SLURM_NNODES": "2"}


@pytest.mark.parametrize("text,counts", [
    ("4(x2)", [4, 4]), ("1", [1]), ("4(x2),8", [4, 4, 8]), ("72,36(x3),1", [72, 36, 36, 36, 1]),
])
def test_per_node_counts_expand_in_node_list_order(text, counts):
    assert grant.expand_counts(text) == counts


@pytest.mark.parametrize("text", ["", "4(x)", "x2", "4(2)", "4,,2", "-1"])
def test_a_count_that_is_not_one_is_refused_by_name(text):
    with pytest.raises(ValueError, match="not a Slurm per-node count"):
        grant.expand_counts(text)


@pytest.mark.parametrize("text,n", [("4", 4), ("a100:4", 4), ("gpu:a100:8", 8), ("a100:2,v100:2", 4), ("a100", None)])
def test_gpus_per_node(text, n):
    assert grant.gpu_count(text) == n


def test_default_allocation_grants_one_task_per_node():
    g = grant.read(DEFAULT, "7")
    assert g.tasks == {"ncdl01": 1, "ncdl02": 1} and g.asked is None and g.gpus is None
    assert g.most(["ncdl01", "ncdl02"]) == 1
    assert "SLURM_JOB_CPUS_PER_NODE=1(x2)" in g.source


def test_another_job_or_no_counts_is_no_grant():
    assert grant.read(DEFAULT, "8") is None  # nccldiag asked for its own allocation: not this environment's
    assert grant.read({k: v for k, v in DEFAULT.items() if k != "SLURM_JOB_CPUS_PER_NODE"}, "7") is None
    assert grant.read(dict(DEFAULT, SLURM_JOB_CPUS_PER_NODE="garbled"), "7") is None


def test_cpus_per_task_divide_and_counts_bind_to_their_nodes():
    env = dict(DEFAULT, SLURM_JOB_NODELIST="gpu[001-003]", SLURM_JOB_CPUS_PER_NODE="16(x2),8",
               SLURM_CPUS_PER_TASK="4")
    g = grant.read(env, "7")
    assert g.tasks == {"gpu001": 4, "gpu002": 4, "gpu003": 2}
    assert g.most(["gpu001", "gpu002"]) == 4 and g.most(["gpu002", "gpu003"]) == 2
    assert g.most(["elsewhere"]) == 2  # a node not in the list: the smallest count bounds it


def test_default_ranks_follow_the_grant_and_say_so():
    g = grant.read(DEFAULT, "7")
    r = grant.ranks_per_node(g, ["ncdl01", "ncdl02"], 2, explicit=False)
    assert r.count == 1
    assert "SLURM_JOB_CPUS_PER_NODE=1(x2)" in r.note and "--ntasks-per-node=2" in r.note


def test_explicit_ranks_beyond_the_grant_are_refused_with_what_to_ask_salloc_for():
    g = grant.read(DEFAULT, "7")
    with pytest.raises(ValueError) as e:
        grant.ranks_per_node(g, ["ncdl01", "ncdl02"], 2, explicit=True)
    assert "salloc -N 2 --ntasks-per-node=2" in str(e.value) and "--nproc-per-node 1" in str(e.value)
    assert grant.ranks_per_node(g, ["ncdl01", "ncdl02"], 1, explicit=True).count == 1


def test_whole_nodes_leave_the_default_as_it_is():
    g = grant.read(dict(DEFAULT, SLURM_JOB_CPUS_PER_NODE="4(x2)"), "7")
    r = grant.ranks_per_node(g, ["ncdl01", "ncdl02"], 2, explicit=False)
    assert (r.count, r.note) == (2, "")


def test_the_allocation_asked_for_tasks_and_gpus_per_node_sets_the_default():
    env = dict(DEFAULT, SLURM_JOB_CPUS_PER_NODE="64(x2)", SLURM_NTASKS_PER_NODE="4")
    r = grant.ranks_per_node(grant.read(env, "7"), ["ncdl01", "ncdl02"], 8, explicit=False)
    assert r.count == 4 and "SLURM_NTASKS_PER_NODE=4" in r.note
    env = dict(DEFAULT, SLURM_JOB_CPUS_PER_NODE="64(x2)", SLURM_GPUS_PER_NODE="a100:2")
    r = grant.ranks_per_node(grant.read(env, "7"), ["ncdl01", "ncdl02"], 8, explicit=False)
    assert r.count == 2 and "GPUs per node" in r.note


def test_probe_and_isolate_refuse_a_count_the_allocation_cannot_hold_as_a_usage_error(monkeypatch):
    from nccldiag.model.errors import UsageError
    from nccldiag.isolate import run as isolate_run
    from nccldiag.probe import session
    from nccldiag.probe.launchers import srun

    for k, v in DEFAULT.items():
        monkeypatch.setenv(k, v)
    opts = isolate_run.IsolateOptions(launcher="srun", slurm_job="7", nproc_per_node=2)
    granted = srun.allocation_grant(opts)
    node = type("N", (), {"slurm_name": "ncdl01", "name": "10.0.0.1"})()
    with pytest.raises(UsageError, match="--ntasks-per-node=2"):
        srun.fit_allocation(granted, [node], 2, True)
    assert srun.fit_allocation(granted, [node], 2, False)[0] == 1
    with pytest.raises(UsageError, match="--ntasks-per-node=2"):
        srun.LAUNCHER.refuse(opts, [], [node])  # before any node is contacted
    assert srun.allocation_grant(session.ProbeOptions(launcher="srun", slurm_job="8")) is None
