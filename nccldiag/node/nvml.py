"""An NVML snapshot of this node through nvidia-ml-py: driver, CUDA, each GPU (PCI, memory, PCIe link, NVLink states), P2P status.

Run by the gpu area of ``nccldiag check`` as ``python -c`` where the NVIDIA
driver is loaded (the text of this file travels inside shell single quotes:
no single quote in it). Prints one JSON object and never fails: a missing
module or a failing nvmlInit is reported in the object.
"""
import json
out = {}
try:
    import pynvml as N
except Exception as e:
    print(json.dumps({"error": "nvidia-ml-py not importable: %s" % e}))
    raise SystemExit(0)
def s(v):
    return v.decode() if isinstance(v, bytes) else v
def g(fn, *a):
    try:
        return s(getattr(N, fn)(*a))
    except Exception:
        return None
try:
    N.nvmlInit()
except Exception as e:
    print(json.dumps({"error": "nvmlInit failed: %s" % e}))
    raise SystemExit(0)
try:
    out["driver"] = g("nvmlSystemGetDriverVersion")
    out["cuda"] = g("nvmlSystemGetCudaDriverVersion")
    hs = [N.nvmlDeviceGetHandleByIndex(i) for i in range(N.nvmlDeviceGetCount())]
    gpus = []
    for i, h in enumerate(hs):
        pci = g("nvmlDeviceGetPciInfo", h)
        mem = g("nvmlDeviceGetMemoryInfo", h)
        links = []
        for l in range(getattr(N, "NVML_NVLINK_MAX_LINKS", 18)):
            st = g("nvmlDeviceGetNvLinkState", h, l)
            if st is None:
                break
            links.append(int(st))
        gpus.append({"index": i, "name": g("nvmlDeviceGetName", h), "uuid": g("nvmlDeviceGetUUID", h),
            "bus_id": s(pci.busId) if pci is not None else None,
            "memory_mib": mem.total // 1048576 if mem is not None else None,
            "gen": g("nvmlDeviceGetCurrPcieLinkGeneration", h), "gen_max": g("nvmlDeviceGetMaxPcieLinkGeneration", h),
            "width": g("nvmlDeviceGetCurrPcieLinkWidth", h), "width_max": g("nvmlDeviceGetMaxPcieLinkWidth", h),
            "nvlink": links})
    out["gpus"] = gpus
    p2p = {}
    for a in range(len(hs)):
        for b in range(len(hs)):
            if a != b:
                for cap, idx in (("read", 0), ("write", 1)):
                    v = g("nvmlDeviceGetP2PStatus", hs[a], hs[b], idx)
                    if v is not None:
                        p2p.setdefault(cap, {})["%d,%d" % (a, b)] = int(v)
    out["p2p"] = p2p
finally:
    try:
        N.nvmlShutdown()
    except Exception:
        pass
print(json.dumps(out))
