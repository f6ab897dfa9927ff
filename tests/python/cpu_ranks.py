"""Runs a worker script as the ranks of a gloo world on the CPU, one process each, and returns what
each rank wrote (OUT/rank<R>.json). Used by the tests of tandem.torch beyond one process."""
import json
import os
import subprocess
import sys


def run_cpu_ranks(worker, world_size, out, timeout_s=240):
    """`python WORKER RANK WORLD_SIZE OUT/store OUT` for every rank; every rank must exit 0."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    processes = [subprocess.Popen([sys.executable, str(worker), str(rank), str(world_size), str(out / "store"),
                                   str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for rank in range(world_size)]
    outputs = []
    try:
        for p in processes:
            outputs.append(p.communicate(timeout=timeout_s)[0])
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait()
    for rank, (p, text) in enumerate(zip(processes, outputs)):
        assert p.returncode == 0, f"rank {rank} exited with {p.returncode}:\n{text}"
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world_size)]
