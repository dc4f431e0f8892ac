"""What the Python of the probe can do on this node: interpreter, torch, CUDA, NCCL, backends, mpi4py.

Run by the python area of ``nccldiag check`` as ``python -c`` (the text of
this file travels inside shell single quotes: no single quote in it). Runs
under any python3 and python2: no f-strings. Prints a JSON line at the start
and one at the end, so a crash in between still says which interpreter ran.
"""
import json, platform, sys
def out(d):
    sys.stdout.write(json.dumps(d) + "\n"); sys.stdout.flush()
def err(e):
    return ("%s: %s" % (type(e).__name__, e))[:300]
d = {"stage": "start", "python": platform.python_version(), "executable": sys.executable}
out(d)
import os
try:
    gpus = os.listdir("/proc/driver/nvidia/gpus")
except Exception:
    gpus = []
d["imported"] = bool(gpus) or os.environ.get("NCCLDIAG_IMPORT_TORCH") == "1"
try:
    if not d["imported"]:
        # no GPU here: locate torch without importing it (an import costs seconds of CPU)
        import importlib.util
        spec = importlib.util.find_spec("torch")
        if spec is None:
            raise ImportError("No module named torch")
        # torch.__version__ is the __version__ of torch/version.py, local part included (2.5.1+cu124);
        # the package metadata of the wheels on PyPI lacks it (2.5.1), so it is only the fallback
        for line in open(os.path.join(os.path.dirname(spec.origin), "version.py")):
            if "=" not in line:
                continue
            name, v = line.split("=", 1)
            name = name.split(":")[0].strip()
            v = v.strip().strip("\x27\x22")
            if name == "cuda":
                d["cuda_build"] = None if v in ("None", "") else v
            elif name == "__version__" and v:
                d["torch"] = v
        if not d.get("torch"):
            try:
                from importlib import metadata
                d["torch"] = metadata.version("torch")
            except Exception:
                d["torch"] = "?"
        d["cuda_available"] = False
        d["device_count"] = 0
        raise StopIteration
    import torch
    d["torch"] = str(torch.__version__)
    d["cuda_build"] = getattr(torch.version, "cuda", None)
    try:
        d["cuda_available"] = bool(torch.cuda.is_available())
        d["device_count"] = int(torch.cuda.device_count())
    except Exception as e:
        d["cuda_error"] = err(e)
    try:
        v = torch.cuda.nccl.version()
        d["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception as e:
        d["nccl_error"] = err(e)
    try:
        import torch.distributed as dist
        d["distributed"] = bool(dist.is_available())
        for b in ("gloo", "nccl", "mpi"):
            fn = getattr(dist, "is_" + b + "_available", None)
            d["backend_" + b] = bool(fn()) if fn else None
    except Exception as e:
        d["distributed_error"] = err(e)
except StopIteration:
    pass
except Exception as e:
    d["torch_error"] = err(e)
try:
    import importlib.util
    if not importlib.util.find_spec("mpi4py"):
        raise ImportError("No module named mpi4py")
    import mpi4py
    d["mpi4py"] = str(mpi4py.__version__)
except Exception as e:
    d["mpi4py_error"] = err(e)
try:
    import nccldiag
    d["nccldiag"] = str(getattr(nccldiag, "__version__", "?"))
except Exception as e:
    d["nccldiag_error"] = err(e)
d["stage"] = "done"
out(d)
