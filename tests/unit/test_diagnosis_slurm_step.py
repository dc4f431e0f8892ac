"""Slurm refusing the job step: the verdict names it and what to ask the allocation for, from the probe's launch
finding and from srun's line pasted to ``nccldiag log``; a probe whose step Slurm created gets no such verdict."""
from typing import List

import pytest

from nccldiag.diagnosis import Inputs, diagnose
from nccldiag.nccl import checks as nccl_checks
from nccldiag.nccl import parser as nccllog
from nccldiag.probe import analysis
from nccldiag.probe.plan import Setting
from nccldiag.probe.runner import NodeRun, SettingRun

from .test_diagnosis import GOOD, records
from .test_probe_analysis import RUN_ID, SRUN_REFUSED, command


def alarms(diags) -> List:
    return [d for d in diags if d.severity in ("fail", "warn")]


def probe_report(stderr: str = "", recs=None, rc: int = 1, hosts=("n1", "n2")):
    run = SettingRun(setting=Setting("default"), commands={"srun": command(0)}, run_id=RUN_ID, records=recs or [])
    run.nodes["srun"] = NodeRun("srun", rc=rc, stderr_tail=stderr)
    return analysis.analyze(runs=[run], settings=[Setting("default", {})], backend="gloo", require_ib=False,
                            launcher="srun", hosts=list(hosts), unreachable={}, problems={}, loopback={},
                            ifnames={}, nproc_per_node=2)


def log_verdict(text: str):
    facts = nccllog.parse(text, "job.log")
    return diagnose(Inputs(logs=facts, log_findings=nccl_checks.judge(facts)))


def test_the_probe_step_slurm_refused_is_the_verdict_not_unexplained():
    diags = alarms(diagnose(Inputs(probe=probe_report(SRUN_REFUSED))))
    d = diags[0]
    assert d.id == "slurm-step-refused" and d.severity == "fail", [(x.id, x.summary) for x in diags]
    assert "unexplained" not in [x.id for x in diags]
    assert "More processors requested than permitted" in d.summary
    assert "--ntasks-per-node" in d.fix and "--nproc-per-node" in d.fix and "--exclusive" in d.fix
    assert d.figures["srun_reason"] == "More processors requested than permitted"


def test_srun_line_pasted_to_log_is_the_verdict():
    (d, *_) = alarms(log_verdict(SRUN_REFUSED))
    assert d.id == "slurm-step-refused" and d.category == "other:slurm-step-refused"
    assert "--ntasks-per-node" in d.fix


# written for this test, each in the format of the thread named: srun's refusal with other reasons
@pytest.mark.parametrize("text,reason,words", [
    # eth-cscs/DLA-Future#337 (Piz Daint): srun waits, then refuses for memory
    ("srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)\n"
     "srun: Job 4242 step creation still disabled, retrying (Requested nodes are busy)\n"
     "srun: error: Unable to create step for job 4242: Memory required by task is not available\n",
     "Memory required by task is not available", ["--mem"]),
    # radical-cybertools/radical.pilot#2109 and DragonHPC/dragon#61: a node layout the allocation lacks
    ("srun: error: Unable to create step for job 17: Requested node configuration is not available\n",
     "Requested node configuration is not available", ["--ntasks-per-node", "--cpus-per-task"]),
    # radical-cybertools/radical.pilot#2109: GPUs the allocation does not hold
    ("srun: error: Unable to create step for job 17: Invalid generic resource (gres) specification\n",
     "Invalid generic resource (gres) specification", ["--gpus-per-node"]),
    # SchedMD/slurm#6: the older wording without the job id
    ("srun: error: Unable to create job step: Requested node configuration is not available\n",
     "Requested node configuration is not available", ["--ntasks-per-node"]),
])
def test_other_refusals_name_their_reason_and_fix(text, reason, words):
    (d, *_) = alarms(log_verdict(text))
    assert d.id == "slurm-step-refused" and d.figures["srun_reason"] == reason
    for w in words:
        assert w in d.fix, (w, d.fix)


def test_srun_waiting_for_step_creation_is_not_a_refusal():
    # written for this test, in the format of eth-cscs/DLA-Future#337: srun waited, then the step ran
    text = "srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)\n" \
           "srun: Step created for StepId=4242.1\n"
    assert "slurm-step-refused" not in [d.id for d in log_verdict(text)]


def test_a_probe_inside_an_allocation_that_worked_gets_no_such_verdict():
    # the worker's own records of a healthy run (all ranks on one machine, 'vm'), the step created by srun
    rep = probe_report("", records(GOOD), rc=0, hosts=["vm"])
    assert rep.settings[0].status == "ok"
    assert diagnose(Inputs(probe=rep)) == []


# the UC Davis HPCCF documentation's sbatch refusals (ucdavis/hpccf-docs at d7a5266, docs/general/troubleshooting.md and
# docs/software/ondemand.md), as posted
@pytest.mark.parametrize("text,words", [
    ("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n",
     ["-A ACCOUNT", "sacctmgr show assoc"]),
    ("sbatch: error: QOSMaxMemoryPerJob\n"
     "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size "
     "and/or time limits)\n", ["--mem", "sacctmgr show qos"]),
    ("sbatch: error: Batch job submission failed: Requested node configuration is not available\n",
     ["--gpus-per-node", "sinfo -p PARTITION"]),
])
def test_a_batch_job_slurm_refused_is_the_verdict_with_the_fix_of_its_reason(text, words):
    (d, *_) = alarms(log_verdict(text))
    assert d.id == "slurm-request-refused" and d.category == "other:slurm-request-refused" and d.severity == "fail"
    assert d.figures["slurm_reason"] in text
    for w in words:
        assert w in d.fix, (w, d.fix)


def test_a_batch_job_slurm_accepted_gets_no_such_verdict():
    # sbatch's answer to a job it accepted (src/sbatch/sbatch.c: 'Submitted batch job %u'), as the UC Davis HPCCF
    # documentation shows it (docs/scheduler/commands.md at d7a5266)
    assert "slurm-request-refused" not in [d.id for d in log_verdict("Submitted batch job 629\n")]
