"""What a probe costs at the least, and a plain all_reduce timing loop (run by scripts/bench_probe
under one torchrun per node with static rendezvous on the first node's address).

``floor``: init_process_group + barrier + destroy, nothing else; each rank prints as JSON the wall-clock times
(``time.time()``) at which its imports were done, its process group was up, and it was about to exit.
``allreduce BYTES ITERS``: a plain dist.all_reduce loop on float32 tensors,
timed like nccl-tests (warm-up, barrier, the slowest rank's time), printing
the bus bandwidth as JSON on rank 0.
"""
import json
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

IMPORTED = time.time()


def main() -> None:
    mode = sys.argv[1]
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    ready = time.time()
    if mode == "allreduce":
        nbytes, iters = int(sys.argv[2]), int(sys.argv[3])
        t = torch.ones(nbytes // 4, dtype=torch.float32)
        for _ in range(2):
            dist.all_reduce(t)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        elapsed = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        n = dist.get_world_size()
        algbw = nbytes / elapsed.item() / 1e9
        if dist.get_rank() == 0:
            print(json.dumps({"bytes": nbytes, "time_us": elapsed.item() * 1e6, "algbw": algbw,
                              "busbw": algbw * 2 * (n - 1) / n}), flush=True)
    else:
        dist.barrier()
    rank = dist.get_rank()
    dist.destroy_process_group()
    if mode == "floor":
        print(json.dumps({"rank": rank, "imported": IMPORTED, "ready": ready, "done": time.time()}), flush=True)


if __name__ == "__main__":
    main()
