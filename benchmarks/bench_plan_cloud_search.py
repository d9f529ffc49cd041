"""Benchmark of ``perfmodel.planning.plan_cloud(strategies="search")``: Llama 3 70B (sequence 8,192, global batch 128,
BF16) on 64 and 128 GPUs of A100 80GB, H100 and H200, every FSDP and Megatron layout searched on each (GPU, count) and
the fastest that fits planned.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_plan_cloud_search.py``. Prints the wall time of the
first plan (every trace, memory check and prediction made), of a second identical plan (memoised), and the layout
chosen on each GPU and count with its step time and memory. There is no goal: the time is what a user planning a
large run waits, six searches of a few hundred layouts each.

The price table is a timing fixture, not a quote: every GPU at 1 $/GPU-hour on demand, one 8-GPU instance type per
GPU, InfiniBand NDR between instances (a rail per GPU).
"""
from __future__ import annotations

import time
import warnings

import pandas as pd


def main() -> None:
    from perfmodel.papers.external.torchtitan_runs import MODEL_CONFIGS
    from perfmodel.planning import plan_cloud
    from perfmodel.planning.cloud import clear_plan_cache

    warnings.simplefilter("ignore")
    gpus = ["A100-SXM4-80GB", "H100", "H200"]
    prices = pd.DataFrame(dict(provider="bench", region="r", instance_type=[f"{g}x8" for g in gpus], gpu=gpus,
                               gpus_per_instance=8, on_demand_usd_per_h=8.0, spot_usd_per_h=float("nan"),
                               price_date="fixture"))
    kw = dict(gpus=gpus, n_gpus=(64, 128), batch_sizes=(128,), strategies="search", spot=False, prices=prices,
              input_shape=(8192,), precision="bf16", optimizer="adam-fused", samples=128 * 1000,
              interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})
    clear_plan_cache()
    t = time.perf_counter()
    f = plan_cloud(MODEL_CONFIGS["Llama 3 70B"], **kw)
    t1 = time.perf_counter() - t
    t = time.perf_counter()
    plan_cloud(MODEL_CONFIGS["Llama 3 70B"], **kw)
    t2 = time.perf_counter() - t
    print(f"first plan  {t1:.1f} s ({len(f)} rows, {len(f.attrs['skipped'])} skipped)")
    print(f"second plan {t2:.2f} s")
    f = f.assign(mem_gib=f["memory_per_gpu_bytes"] / 2**30)
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        print(f[["gpu", "n_gpus", "strategy", "step_time_s", "mem_gib", "time_h", "cost_usd"]].to_string(index=False))


if __name__ == "__main__":
    main()
