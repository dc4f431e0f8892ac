"""What the probe needs to know about a node before it launches: Python, torch, mpi4py, GPUs, a free port.

Sent by ``probe.runner.prepare`` as ``python -c``; prints one JSON line.
"""
import glob, importlib.util as u, json, sys
d = {"python": sys.version.split()[0], "executable": sys.executable}
d["torch"] = bool(u.find_spec("torch"))
d["mpi4py"] = bool(u.find_spec("mpi4py"))
d["gpus"] = len(glob.glob("/proc/driver/nvidia/gpus/*"))
import socket
s = socket.socket(); s.bind(("", 0)); d["free_port"] = s.getsockname()[1]; s.close()
print(json.dumps(d))
