"""Everything under nccldiag/node runs on the nodes: the standard library and torch only, never the rest of nccldiag."""
import ast
import subprocess
import sys
from pathlib import Path

NODE = Path(__file__).resolve().parents[2] / "nccldiag" / "node"
ALLOWED_THIRD_PARTY = {"torch", "mpi4py", "pynvml"}  # pynvml: nvml.py, only where the NVIDIA driver is loaded


def imported_modules(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                yield a.name
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            yield n.module


def test_node_modules_import_only_stdlib_torch_and_each_other():
    bad = []
    for path in sorted(NODE.rglob("*.py")):
        for mod in imported_modules(path):
            top = mod.split(".")[0]
            if mod.startswith("nccldiag.node") or mod == "nccldiag" or top in ALLOWED_THIRD_PARTY:
                continue
            if top == "nccldiag" or top not in sys.stdlib_module_names:
                bad.append(f"{path.relative_to(NODE)}: {mod}")
    assert bad == []


def test_the_staged_files_run_alone(tmp_path):
    """Exactly the files the probe stages, in a directory of their own, import without the rest of nccldiag."""
    from nccldiag.probe.runner import worker_files

    for rel, src in worker_files().items():
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(Path(src).read_bytes())
    code = ("import nccldiag.node.worker, nccldiag.node.sizes, nccldiag.node.p2pcopy, nccldiag.node.collectives as c; "
            "[c.load(n) for n in c.NAMES]; import sys; "
            "print(sorted(m for m in sys.modules if m.startswith('nccldiag')))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = eval(r.stdout.strip().splitlines()[-1])
    assert all(m == "nccldiag" or m.startswith("nccldiag.node") for m in loaded), loaded
    assert not (tmp_path / "nccldiag" / "probe").exists()


def test_node_programs_run_as_python_c_here():
    """The programs sent as ``python -c`` run with this interpreter and print JSON."""
    import json

    from nccldiag.node import node_program

    for name in ("envprobe", "info", "nvml"):
        src = node_program(name)
        assert "'" not in src
        r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        last = json.loads(r.stdout.strip().splitlines()[-1])
        if name == "nvml":  # no GPU or no nvidia-ml-py here: the error is reported inside the object
            assert "gpus" in last or "error" in last
        else:
            assert last["python" if name == "info" else "stage"] == (sys.version.split()[0] if name == "info" else "done")
