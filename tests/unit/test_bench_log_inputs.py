"""The inputs scripts/bench_log writes: its job stdout is whole lines, NCCL's among a training loop's progress lines."""
import importlib.machinery
import importlib.util
import re
from pathlib import Path

from tests import real

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_log"
# the progress line the script writes (its own text, not a capture)
PROGRESS = re.compile(rb"epoch 3 step \d+/500000 loss 2\.\d{4} lr 0\.0003 grad_norm 1\.\d{3} tokens/s 18\d{3}")


def _script():
    loader = importlib.machinery.SourceFileLoader("bench_log", str(SCRIPT))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_log", loader))
    loader.exec_module(module)
    return module


def test_the_job_stdout_interleaves_whole_lines(tmp_path):
    real.require()
    bench = _script()
    blob = bench.excerpts()  # the real NCCL log excerpts of ../shared/fixtures/nccl-logs
    bench.write_sparse(tmp_path / "stdout.log", blob, 1 << 20)
    lines = (tmp_path / "stdout.log").read_bytes().split(b"\n")
    assert lines[-1] == b""  # it ends with a whole line
    nccl = set(blob.split(b"\n"))
    progress = [line for line in lines[:-1] if PROGRESS.fullmatch(line)]
    # every line is an excerpt's line as written, or a whole progress line: nothing glued, nothing cut
    assert all(line in nccl or PROGRESS.fullmatch(line) for line in lines[:-1])
    kept = [line for line in lines[:-1] if not PROGRESS.fullmatch(line)]
    assert len(progress) == bench.PROGRESS_PER_LINE * len(kept)
