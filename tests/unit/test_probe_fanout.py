"""The probe's work on many nodes goes --fanout nodes at a time: staging, log fetching, clean-up.

The nodes are this machine under several names (LocalNode runs each command for real with sh); each
command records how many of them run at once.
"""
import threading

from nccldiag.probe import runner
from nccldiag.transport.nodes import LocalNode


class CountingNode(LocalNode):
    live = 0
    peak = 0
    lock = threading.Lock()

    def run(self, command, timeout, stdin=None):
        with CountingNode.lock:
            CountingNode.live += 1
            CountingNode.peak = max(CountingNode.peak, CountingNode.live)
        try:
            return super().run("sleep 0.2; " + command, timeout, stdin=stdin)
        finally:
            with CountingNode.lock:
                CountingNode.live -= 1


def nodes(n):
    CountingNode.live = CountingNode.peak = 0
    return [CountingNode(f"n{i}") for i in range(n)]


def test_staging_fetching_and_cleanup_honour_fanout(tmp_path):
    ns = nodes(6)
    prep = runner.prepare(ns, "python3", None, str(tmp_path), timeout=60, stage=False, fanout=2)
    assert prep.problems == {} and CountingNode.peak == 2
    CountingNode.peak = 0
    (tmp_path / "nccl.a.log").write_text("x\n")
    logs = runner.fetch_logs(ns, f"{tmp_path}/nccl.*.log", fanout=3)
    assert len(logs) == 6 and CountingNode.peak == 3
    CountingNode.peak = 0
    rundir = tmp_path / "nccldiag-test"
    rundir.mkdir()
    assert runner.cleanup(ns, str(rundir), fanout=1) == {} and CountingNode.peak == 1
    assert not rundir.exists()


class Deaf(LocalNode):
    """A launcher on this machine that does not stop on the run's cancel (written for this test): only the reap,
    which kills every process carrying the run's marker, ends it, as it can end srun."""

    def stream(self, command, timeout, on_line, cancel):
        from nccldiag.transport.stream import run_streaming

        return run_streaming(["sh", "-c", command], timeout + 60, on_line, None, host=self.name)


def test_a_launcher_killed_by_the_reap_at_the_deadline_is_reported_as_stopped_by_it():
    from nccldiag.probe import analysis
    from nccldiag.probe.plan import Setting

    run_id = "nccldiag-test-deaf-1"
    setting = Setting("deaf", {}, "")
    sr = runner.run_setting([LocalNode("here")], {"srun": f"exec env NCCLDIAG_RUN={run_id} sleep 6141"}, setting,
                            1.5, grace=1.0, run_id=run_id, launchers=[Deaf("srun")])
    assert sr.timed_out and sr.nodes["srun"].rc is not None and sr.nodes["srun"].rc < 0
    assert sr.nodes["srun"].error["kind"] == "command-timeout"
    assert sr.elapsed < 1.5 + 20
    rep = analysis.job_report(setting, sr, 1.5)
    checks = {f.check for f in rep.findings}
    assert "probe.timeout" in checks and "probe.launch" not in checks
    assert rep.status == "hang"
