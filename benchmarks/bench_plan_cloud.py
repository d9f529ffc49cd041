"""Benchmark of ``perfmodel.planning.plan_cloud``: GPT-2-large fine-tuning over A100/H100/L4 x 1/2/4/8 GPUs x three
global batches x dp/fsdp/tp/pp x spot/on-demand.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_plan_cloud.py``. Prints the time to import the
model code (torch, transformers' GPT-2) and load the fitted per-operator model, then the wall time of the first plan
(every operator trace, step-time and memory prediction computed), of a second identical plan (the memoised
predictions reused), and of a plan over the shipped price table (every provider, region and instance type of
A100/H100/L4, with the traces already made); goal < 5 s; and the number of candidates. Last, the README's example
as a new user runs it: ``perfmodel plan-cloud gpt2.json --deadline-h 2`` (GPT-2-large's config, the shipped price
table) in a fresh process with an empty cache folder, the whole process timed; goal ≤ 5 s, and the import
floor under it (``import torch`` and transformers' GPT-2 modeling module in a fresh process).

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
    from perfmodel.step.op_latency import default_op_model  # the shipped fitted model
    from perfmodel.step.trace import model_and_layout

    model_and_layout(cfg, (1024,))  # imports transformers' GPT-2 and builds the model on meta
    default_op_model()  # the fitted per-operator model, read from the package
    setup = time.perf_counter() - t
    t = time.perf_counter()
    f = plan_cloud(cfg, **kw)
    first = time.perf_counter() - t
    t = time.perf_counter()
    f = plan_cloud(cfg, **kw)
    again = time.perf_counter() - t
    print(f"GPT-2-large plan: {len(f)} candidates ({len(f.attrs['skipped'])} skipped), {int(f['fits'].sum())} fit in memory")
    t = time.perf_counter()
    shipped = plan_cloud(cfg, **{**kw, "prices": None, "gpus": gpus})
    real = time.perf_counter() - t
    print(f"import and load: {setup:.1f} s; first plan: {first:.1f} s; second plan (memoised predictions): {again:.2f} s; "
          f"shipped price table ({len(shipped)} candidates): {real:.2f} s (goal < 5 s)")
    print(cheapest_within_deadline(f, float(f.loc[f['fits'], 'time_h'].median()))["why"])
    cold_cli(cfg)


def cold_cli(cfg) -> None:
    """The README's ``perfmodel plan-cloud gpt2.json --deadline-h 2`` in a fresh process, empty cache, whole process timed."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gpt2.json")
        with open(path, "w") as f:
            json.dump(cfg, f)
        env = {**os.environ, "PERFMODEL_CACHE": os.path.join(tmp, "cache")}
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "perfmodel", "plan-cloud", path, "--deadline-h", "2", "--quiet"],
                             env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
    if out.returncode != 0:
        print(f"cold `perfmodel plan-cloud gpt2.json --deadline-h 2` failed (exit {out.returncode}): {out.stderr.strip()[-300:]}")
        return
    verdict = "met" if wall <= 5 else "NOT met"
    print(f"cold `perfmodel plan-cloud gpt2.json --deadline-h 2` (fresh process, empty cache): {wall:.1f} s "
          f"(goal ≤ 5 s: {verdict})")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch; from transformers.models.gpt2 import modeling_gpt2"], check=True,
                   capture_output=True)
    print(f"import floor (torch and transformers' GPT-2 modeling module, fresh process): {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
