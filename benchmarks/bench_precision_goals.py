"""The goals of the half-precision work, measured: each printed met or not, with the number.

* properties over every catalog GPU x every zoo CNN and three Hugging Face configs (GPT-2, Llama, BERT): fp16/bf16 <=
  tf32 <= fp32 where the GPU has those units; fp8 <= bf16 (torchao's eager recipe: reported, not expected on small
  models); no GPU whose every rate (FP32 GEMMs at the rate they run at), bandwidth and L2 is at least another's predicted
  slower (per precision, FP32 to FP8);
* Vidur's H100 operators <= 10 % time-weighted; NeuSight's training labels <= 7.3 %; torchtitan's compile rows <= 10 %,
  each beside the rule of thumb.

Run: ``PERFMODEL_DATA=../shared/datasets python benchmarks/bench_precision_goals.py`` (minutes; a benchmark, not a test).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

import perfmodel as pm
from perfmodel.datasets import gpu_spec, load_gpu_catalog
from perfmodel.zoo import MODEL_IDS

HF = {"gpt2": dict(model_type="gpt2", n_layer=12, n_embd=768, n_head=12, n_positions=1024, vocab_size=50257),
      "llama": dict(model_type="llama", vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=8,
                    num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048),
      "bert": dict(model_type="bert", vocab_size=30522, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                   num_attention_heads=12, max_position_embeddings=512)}
FIELDS = ("fp32_peak_tflops", "fp32_gemm_tflops", "tf32_peak_tflops", "fp16_peak_tflops", "bf16_peak_tflops",
          "fp8_peak_tflops", "memory_bandwidth_gb_per_s", "l2_mib")


def _field(spec, f):
    """A spec-sheet quantity; ``fp32_gemm_tflops`` is the rate FP32 GEMMs run at (AMD CDNA: the matrix cores)."""
    return spec.matmul_peak_tflops("fp32") if f == "fp32_gemm_tflops" else getattr(spec, f)


def _grid() -> pd.DataFrame:
    gpus = list(load_gpu_catalog()["gpu"])
    rows = []
    cases = [(m, m, dict(input_shape=(3, 32, 32), batch_size=128)) for m in MODEL_IDS]
    cases += [(k, v, dict(input_shape=(512,), batch_size=8)) for k, v in HF.items()]
    for name, model, kw in cases:
        for p in ("fp32", "tf32", "fp16", "bf16", "fp8"):
            ok = [g for g in gpus if p == "fp32" or not math.isnan(getattr(gpu_spec(g), f"{p}_peak_tflops"))]
            r = pm.predict_step_time(model, ok, precision=p, optimizer="adam", **kw)
            rows += [(name, g, p, t, n) for g, t, n in zip(r["gpu"], r["step_time_s"], r["n_kernels"])]
    long = pd.DataFrame(rows, columns=["model", "gpu", "precision", "t", "n_kernels"])
    return (long.pivot_table(index=["model", "gpu"], columns="precision", values="t"),
            long.pivot_table(index=["model", "gpu"], columns="precision", values="n_kernels"))


def main() -> None:
    warnings.simplefilter("ignore")
    from perfmodel.step.op_latency import KERNEL_MIN_S

    d, nk = _grid()
    tol = 1 + 1e-9
    ref = d["tf32"].fillna(d["fp32"])
    nref = nk["tf32"].fillna(nk["fp32"])
    order, launches = 0, 0
    for h in ("fp16", "bf16"):
        slow = d[h] > ref * tol
        # a half-precision step slower only by the launches of autocast's extra kernels (a launch-bound step)
        within = slow & (d[h] - ref <= (nk[h] - nref) * KERNEL_MIN_S)
        order += int((slow & ~within).sum())
        launches += int(within.sum())
    order += int((d["tf32"] > d["fp32"] * tol).sum())
    fp8 = (d["fp8"] > d["bf16"] * tol).sum()
    specs = {g: gpu_spec(g) for g in d.index.get_level_values("gpu").unique()}
    dom = {p: 0 for p in ("fp32", "tf32", "fp16", "bf16", "fp8")}
    for a in specs:
        for b in specs:
            ge = all(_field(specs[a], f) >= _field(specs[b], f) or math.isnan(_field(specs[b], f)) for f in FIELDS)
            if a == b or not ge or not any(_field(specs[a], f) > _field(specs[b], f) for f in FIELDS):
                continue
            for p in dom:
                t = d[p].unstack("gpu")
                if a in t and b in t:
                    dom[p] += int((t[a] > t[b] * tol).sum())
    print(f"precision order fp16/bf16 <= tf32 <= fp32: {order} violations of {len(d)} (model, GPU) pairs -> "
          f"{'met' if order == 0 else 'NOT met'}; {launches} half-precision steps slower only by the launches of "
          f"autocast's extra cast kernels (launch-bound steps, as mixed precision is there)")
    print(f"fp8 <= bf16 (torchao eager casts): {fp8} of {d['fp8'].notna().sum()} pairs slower in fp8")
    for p, n in dom.items():
        print(f"spec dominance at {p}: {n} violations -> {'met' if n == 0 else 'NOT met'}")
    from perfmodel.papers.external import neusight_benchmark, torchtitan_runs, vidur_h100_ops

    v = vidur_h100_ops.data()
    v = v[(v["protocol"] == "leave-h100-out") & (v["operator"] == "all")].set_index("predictor")["time_weighted_ape_pct"]
    print(f"Vidur H100 operators: {v['half_precision']:.1f} % (goal 10 %: {'met' if v['half_precision'] <= 10 else 'NOT met'}); "
          f"roofline {v['roofline']:.1f} %, rule of thumb {v['rule_of_thumb']:.1f} %")
    n = neusight_benchmark.numbers().set_index("quantity")["reproduced"]
    print(f"NeuSight training labels: {n['train_all_perfmodel_mape_pct']:.2f} % (goal <= 7.3 %: "
          f"{'met' if n['train_all_perfmodel_mape_pct'] <= 7.3 else 'NOT met'}); rule of thumb {n['train_all_rule_of_thumb_mape_pct']:.1f} %")
    t = torchtitan_runs.data()
    t = t[t["skipped"] == ""]
    c = t[t["compile"]]
    print(f"torchtitan: all {t['tokens_abs_error_pct'].mean():.1f} % (rule {t['rule_of_thumb_tokens_abs_error_pct'].mean():.1f} %), "
          f"compile rows {c['tokens_abs_error_pct'].mean():.1f} % (goal 10 %: "
          f"{'met' if c['tokens_abs_error_pct'].mean() <= 10 else 'NOT met'}; rule {c['rule_of_thumb_tokens_abs_error_pct'].mean():.1f} %)")


if __name__ == "__main__":
    main()
