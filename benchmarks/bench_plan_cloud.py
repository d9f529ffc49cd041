"""Benchmark of ``perfmodel.planning.plan_cloud``: GPT-2-large fine-tuning over A100/H100/L4 x 1/2/4/8 GPUs x three
global batches x dp/fsdp/tp/pp x spot/on-demand.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_plan_cloud.py``. Prints the wall time of the first
plan (every step-time and memory prediction computed) and of a second identical plan (the memoised predictions
reused; goal < 5 s), and the number of candidates.

The price table here is a timing fixture, not a quote: every GPU at 1 $/GPU-hour on demand and 0.4 on spot, one
8-GPU instance type per GPU, so that the timing does not move with the shipped table
(``perfmodel.datasets.reference.load_gpu_prices``, real dated prices that change).
"""
from __future__ import annotations

import time
import warnings

import pandas as pd


def main() -> None:
    from perfmodel.datasets import neusight_model_config
    from perfmodel.planning import cheapest_within_deadline, plan_cloud

    warnings.simplefilter("ignore")
    gpus = ["A100", "H100", "L4"]
    prices = pd.DataFrame(dict(provider="bench", region="any", instance_type=[f"{g.lower()}x8" for g in gpus], gpu=gpus,
                               gpus_per_instance=8, on_demand_usd_per_h=8.0, spot_usd_per_h=3.2, price_date="timing fixture"))
    cfg = neusight_model_config("gpt2_large")
    kw = dict(prices=prices, input_shape=(1024,), steps=10000, n_gpus=(1, 2, 4, 8), batch_sizes=(8, 16, 32),
              strategies=("dp", "fsdp", "tp", "pp"), spot=(True, False), precision="bf16", optimizer="adam")
    t = time.perf_counter()
    f = plan_cloud(cfg, **kw)
    first = time.perf_counter() - t
    t = time.perf_counter()
    f = plan_cloud(cfg, **kw)
    again = time.perf_counter() - t
    print(f"GPT-2-large plan: {len(f)} candidates ({len(f.attrs['skipped'])} skipped), {int(f['fits'].sum())} fit in memory")
    print(f"first plan: {first:.1f} s; second plan (memoised predictions): {again:.2f} s (goal < 5 s)")
    print(cheapest_within_deadline(f, float(f.loc[f['fits'], 'time_h'].median()))["why"])


if __name__ == "__main__":
    main()
