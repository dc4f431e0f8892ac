"""Python area: the interpreter probe snippet (run for real here), parsing its JSON lines, judgement."""
import dataclasses
import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from nccldiag.areas import python as py
from nccldiag.areas.base import NodeFacts
from nccldiag.collect.script import build_script
from nccldiag.collect.sections import split_sections
from nccldiag.model.findings import Status


class Gpu:
    def __init__(self, n):
        self.gpus = list(range(n))


def node(gpus=None):
    n = NodeFacts("h")
    if gpus is not None:
        n.facts["gpu"] = Gpu(gpus)
    return n


def lines(*dicts):
    return "".join(json.dumps(d) + "\n" for d in dicts)


START = {"stage": "start", "python": "3.10.12", "executable": "/usr/bin/python3"}
# constructed results in the format the snippet prints (a GPU node with a CUDA build of torch)
CUDA_DONE = dict(START, stage="done", torch="2.3.1+cu121", cuda_build="12.1", cuda_available=True, device_count=8,
                 nccl="2.20.5", distributed=True, backend_gloo=True, backend_nccl=True, backend_mpi=False, mpi4py="3.1.6")


def run_snippet(env, timeout=90):
    # the snippet as the node runs it, with its node-side bound raised to this test's: a torch import on a busy
    # machine can take longer than the node's 30 s, and what these tests read is the snippet's output
    sources = [dataclasses.replace(s, timeout=timeout - 10) for s in py.SOURCES]
    out = subprocess.run(["sh", "-s"], input=build_script(sources), capture_output=True, text=True,
                         env=env, timeout=timeout).stdout
    secs, rcs, truncated = split_sections(out)
    assert not truncated and set(secs) == {"python_env"}
    return secs, rcs


HAS_NVIDIA = Path("/proc/driver/nvidia/gpus").is_dir() and any(Path("/proc/driver/nvidia/gpus").iterdir())


@pytest.mark.skipif(HAS_NVIDIA, reason="this machine has NVIDIA GPUs: the snippet always imports torch")
def test_snippet_locates_torch_without_importing_it_on_a_gpu_less_node():
    secs, rcs = run_snippet({"NCCLDIAG_PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    assert rcs["python_env"] == 0
    f = py.parse(secs)
    import torch

    assert f.done and f.torch == torch.__version__
    assert f.cuda_build == torch.version.cuda  # read from torch/version.py, not from an import
    assert f.cuda_available is False and f.device_count == 0
    assert f.backends == {}  # not imported, so torch.distributed was not asked
    assert f.other == []


def fake_torch(root, version_py, dist_version):
    """A torch that cannot be imported, laid out as the wheel installs it (written for this test, in the format
    of the torch wheels on PyPI: their ``torch/version.py`` has the local part, their METADATA ``Version`` not)."""
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (root / "torch" / "version.py").write_text(version_py)
    info = root / f"torch-{dist_version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {dist_version}\n")
    return {"NCCLDIAG_PYTHON": sys.executable, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}


PYPI_VERSION_PY = ("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
                   "__version__ = '2.14.1+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n"
                   "git_version = '0000000000000000000000000000000000000000'\nhip: Optional[str] = None\n")


@pytest.mark.skipif(HAS_NVIDIA, reason="this machine has NVIDIA GPUs: the snippet always imports torch")
def test_located_torch_version_is_torch_own_with_its_local_part(tmp_path):
    # the version torch.__version__ gives, CUDA build included: a GPU node (torch imported) and a GPU-less one
    # (torch located) must report like strings, or the consistency check sees a difference that is not there
    secs, rcs = run_snippet(fake_torch(tmp_path, PYPI_VERSION_PY, "2.14.1"))
    f = py.parse(secs)
    assert rcs["python_env"] == 0 and f.done and f.torch_error is None
    assert f.torch == "2.14.1+cu130" and f.cuda_build == "13.0"


@pytest.mark.skipif(HAS_NVIDIA, reason="this machine has NVIDIA GPUs: the snippet always imports torch")
def test_located_torch_without_a_version_in_version_py_reads_the_package_metadata(tmp_path):
    secs, _ = run_snippet(fake_torch(tmp_path, "cuda = None\n", "2.1.0"))
    f = py.parse(secs)
    assert f.done and f.torch == "2.1.0" and f.cuda_build is None


def test_snippet_runs_this_interpreter():
    secs, rcs = run_snippet({"NCCLDIAG_PYTHON": sys.executable, "NCCLDIAG_IMPORT_TORCH": "1",
                             "PATH": "/usr/bin:/bin"})
    assert rcs["python_env"] == 0
    f = py.parse(secs)
    assert f.done and f.python == platform.python_version() and f.executable == sys.executable
    assert f.torch  # torch is part of this environment
    assert f.backends.get("gloo") is True
    assert f.cuda_available in (True, False) and isinstance(f.device_count, int)
    assert f.other == []
    found = {x.check: x for x in py.judge(f, node(gpus=0))}
    assert found["python.interpreter"].status == Status.OK
    assert found["python.torch"].status == Status.OK and f.torch in found["python.torch"].message


def test_snippet_reports_a_missing_interpreter():
    secs, rcs = run_snippet({"NCCLDIAG_PYTHON": "no-such-python-nccldiag", "PATH": "/usr/bin:/bin"})
    f = py.parse(secs)
    assert f.missing == "no-such-python-nccldiag" and rcs["python_env"] == 0
    [x] = py.judge(f, node())
    assert x.status == Status.FAIL and x.check == "python.interpreter" and "NCCLDIAG_PYTHON" in x.fix


def test_snippet_interpreter_that_dies_after_start(tmp_path):
    # a stand-in interpreter that prints the start line and then crashes, like a broken CUDA import
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho '" + json.dumps(START) + "'\nkill -SEGV $$\n")
    fake.chmod(0o755)
    secs, rcs = run_snippet({"NCCLDIAG_PYTHON": str(fake), "PATH": "/usr/bin:/bin"})
    assert rcs["python_env"] != 0
    f = py.parse(secs)
    assert f.started and not f.done and f.python == "3.10.12"
    [x] = py.judge(f, node(gpus=8))
    assert x.status == Status.FAIL and "did not finish" in x.message
    assert py.summarize(f) == {}


def test_gpu_node_with_cuda_torch():
    f = py.parse({"python_env": lines(START, CUDA_DONE)})
    assert (f.torch, f.cuda_build, f.nccl, f.device_count, f.mpi4py) == ("2.3.1+cu121", "12.1", "2.20.5", 8, "3.1.6")
    assert f.backends == {"gloo": True, "nccl": True, "mpi": False}
    found = {x.check: x for x in py.judge(f, node(gpus=8))}
    assert found["python.torch"].status == Status.OK and "8 CUDA devices" in found["python.torch"].message
    assert py.summarize(f) == {"python": "3.10.12", "torch": "2.3.1+cu121", "cuda": "12.1", "nccl": "2.20.5"}


def test_cpu_torch_on_gpu_node_fails():
    done = dict(START, stage="done", torch="2.3.1+cpu", cuda_build=None, cuda_available=False, device_count=0,
                nccl_error="AttributeError: module has no attribute _nccl_version", backend_gloo=True, backend_nccl=False)
    f = py.parse({"python_env": lines(START, done)})
    found = {x.check: x for x in py.judge(f, node(gpus=8))}
    x = found["python.torch_cuda"]
    assert x.status == Status.FAIL and "CPU-only build" in x.message and "download.pytorch.org" in x.fix
    # without GPUs a CPU build is fine
    assert {x.check: x for x in py.judge(f, node(gpus=0))}["python.torch"].status == Status.OK


def test_cuda_build_that_cannot_see_gpus():
    done = dict(CUDA_DONE, cuda_available=False, device_count=0)
    f = py.parse({"python_env": lines(START, done)})
    x = {x.check: x for x in py.judge(f, node(gpus=8))}["python.torch_cuda"]
    assert x.status == Status.FAIL and "CUDA 12.1" in x.message


def test_fewer_cuda_devices_than_gpus_warns():
    f = py.parse({"python_env": lines(START, dict(CUDA_DONE, device_count=4))})
    x = {x.check: x for x in py.judge(f, node(gpus=8))}["python.cuda_devices"]
    assert x.status == Status.WARN and x.actual == 4 and x.expected == 8


def test_torch_missing_warns_with_install_hint():
    done = dict(START, stage="done", torch_error="ModuleNotFoundError: No module named 'torch'", mpi4py_error="x")
    f = py.parse({"python_env": lines(START, done)})
    found = {x.check: x for x in py.judge(f, node(gpus=8))}
    assert found["python.torch"].status == Status.WARN
    assert "pip install 'nccldiag[probe]'" in found["python.torch"].fix
    assert "probe cannot run here" in found["python.torch"].message


def test_stray_stdout_lines_are_kept_apart():
    text = "Warning: something printed by sitecustomize\n" + lines(START) + "{not json\n" + lines(CUDA_DONE)
    f = py.parse({"python_env": text})
    assert f.done and f.other == ["Warning: something printed by sitecustomize", "{not json"]


def test_a_line_of_the_snippets_cut_short_is_an_error_with_the_reason_never_a_skip():
    f = py.parse({"python_env": lines(START)[:30]})
    assert not f.done and f.unreadable.startswith("not JSON")
    [x] = py.judge(f, node(gpus=1))
    assert (x.check, x.status) == ("python.output", Status.ERROR) and "could not be read: not JSON" in x.message
    assert py.summarize(f) == {}


@pytest.mark.parametrize("raw", [{}, {"python_env": None}, {"python_env": ""}, {"python_env": "[1, 2]\n"}])
def test_tolerates_missing_and_odd_sections(raw):
    f = py.parse(raw)
    assert not f.done
    [x] = py.judge(f, node(gpus=1))
    assert x.status == Status.SKIP
    assert py.summarize(f) == {}
    assert py.judge(None, node())[0].status == Status.SKIP


def test_indented_output_still_parses():
    f = py.parse({"python_env": "\t" + lines(START) + "    " + lines(CUDA_DONE)})
    assert f.done and f.nccl == "2.20.5"


def test_probe_text_fits_in_single_quotes():
    assert "'" not in py._PROBE
    assert py.SOURCES[0].timeout == 30


# ---- an interpreter that cannot import nccldiag --------------------------------------------------------------
# real: the snippet (py.SOURCES) run by CPython 3.11.7 on a GPU-less machine, from a directory where nccldiag is not
# importable, from the repository (nccldiag importable), and there under 'python -S' (no site-packages: neither torch
# nor mpi4py)
NO_NCCLDIAG = (
    '{"stage": "start", "python": "3.11.7", "executable": "/root/.pyenv/versions/3.11.7/bin/python3"}\n'
    '{"stage": "done", "python": "3.11.7", "executable": "/root/.pyenv/versions/3.11.7/bin/python3", "imported": false, '
    '"torch": "2.13.0+cpu", "cuda_build": null, "cuda_available": false, "device_count": 0, "mpi4py": "4.1.2", '
    '"nccldiag_error": "ModuleNotFoundError: No module named \'nccldiag\'"}\n')
WITH_NCCLDIAG = NO_NCCLDIAG.replace('"nccldiag_error": "ModuleNotFoundError: No module named \'nccldiag\'"',
                                    '"nccldiag": "0.1.0"')
NO_SITE = (
    '{"stage": "start", "python": "3.11.7", "executable": "/root/.pyenv/versions/3.11.7/bin/python3"}\n'
    '{"stage": "done", "python": "3.11.7", "executable": "/root/.pyenv/versions/3.11.7/bin/python3", "imported": false, '
    '"torch_error": "ImportError: No module named torch", "mpi4py_error": "ImportError: No module named mpi4py", '
    '"nccldiag": "0.1.0"}\n')
# real: what 'python3 -c "import nccldiag"' prints in that directory, as a job's output holds it
JOB_IMPORT_FAILED = ('Traceback (most recent call last):\n  File "<string>", line 1, in <module>\n'
                     "ModuleNotFoundError: No module named 'nccldiag'\n")


def test_an_interpreter_that_cannot_import_nccldiag_warns_the_probe_cannot_start_there():
    found = {x.check: x for x in py.judge(py.parse({"python_env": NO_NCCLDIAG}), node())}
    x = found["python.nccldiag"]
    assert x.status == Status.WARN and "ModuleNotFoundError: No module named 'nccldiag'" in x.message
    assert "probe's ranks cannot start here" in x.message and "nccldiag check' runs without it" in x.fix
    assert found["python.interpreter"].status == Status.OK
    # nccldiag imported, or an older snippet's output that does not say: no such finding
    assert "python.nccldiag" not in {x.check for x in py.judge(py.parse({"python_env": WITH_NCCLDIAG}), node())}
    assert "python.nccldiag" not in {x.check for x in py.judge(py.parse({"python_env": lines(START, CUDA_DONE)}),
                                                               node(gpus=8))}


def test_the_snippets_import_errors_are_the_python_areas_to_judge_in_a_check():
    from nccldiag.check.engine import failure_lines
    from nccldiag.model.raw import RawNode

    for text in (NO_NCCLDIAG, WITH_NCCLDIAG, NO_SITE):
        assert failure_lines(RawNode("n1", {"python_env": text}), [py]) == [], text
    no_site = {x.check: x for x in py.judge(py.parse({"python_env": NO_SITE}), node())}
    assert no_site["python.torch"].status == Status.WARN
    assert "(ImportError: No module named torch)" in no_site["python.torch"].message


def test_the_snippets_output_given_to_log_is_the_python_areas_and_a_jobs_import_error_is_not(tmp_path):
    from click.testing import CliRunner

    from nccldiag.cli.log import log as log_command

    def verdict(text):
        f = tmp_path / "out.txt"
        f.write_text(text)
        res = CliRunner().invoke(log_command, [str(f)])
        return res.exit_code, res.output

    code, out = verdict(NO_NCCLDIAG)
    assert out.startswith("Verdict: WARN") and "python.nccldiag" in out and "python_env" in out, out
    code, out = verdict(WITH_NCCLDIAG)
    assert code == 0 and out.startswith("Verdict: nothing broken"), out
    code, out = verdict(NO_SITE)
    assert out.startswith("Verdict: WARN") and "python.torch" in out, out
    # the same import error printed by a job is a failure the lexicon reads
    code, out = verdict(JOB_IMPORT_FAILED)
    assert code != 0 and out.startswith("Verdict: FAIL Unexplained failure"), out
    code, out = verdict(WITH_NCCLDIAG + JOB_IMPORT_FAILED)
    assert code != 0 and out.startswith("Verdict: FAIL Unexplained failure"), out
