"""Benchmark of ``perfmodel.planning.search_layouts``: every FSDP and Megatron layout of Llama 3 70B (sequence 8,192,
global batch 128, Transformer Engine FP8) on 64 H100s in nodes of 8, memory first, each layout that fits predicted.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_search_layouts.py``. Prints the number of candidates
and layouts, the wall time of the first search (every trace made) and of a second identical search (the traces
memoised), and the fastest layout of each framework. There is no goal yet: the issue asks for "one call"; the time is
what a user waits.
"""
from __future__ import annotations

import time
import warnings


def main() -> None:
    import perfmodel as pm
    from perfmodel.papers.external.torchtitan_runs import MODEL_CONFIGS

    warnings.simplefilter("ignore")
    run = pm.Workload(MODEL_CONFIGS["Llama 3 70B"], input_shape=(8192,), batch_size=128, precision="fp8",
                      optimizer="adam-fused", stack="te")
    cluster = pm.Cluster("H100", n_gpus=64, interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})
    n = len(pm.planning.layout_candidates(run, cluster))
    t = time.perf_counter()
    first = pm.planning.search_layouts(run, cluster)
    t1 = time.perf_counter() - t
    t = time.perf_counter()
    pm.planning.search_layouts(run, cluster)
    t2 = time.perf_counter() - t
    print(f"candidates {n}, layouts {len(first)} ({int(first['fits'].sum())} fit)")
    print(f"first search  {t1:.1f} s")
    print(f"second search {t2:.1f} s")
    best = first[first["fits"]].groupby("framework", sort=False).head(1)
    print(best[["framework", "strategy", "virtual_stages", "activation_checkpointing", "shard_gradients", "step_time_s",
                "memory_per_gpu_bytes"]].to_string(index=False))


if __name__ == "__main__":
    main()
