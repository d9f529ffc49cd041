"""Properties of the step model across precisions and GPUs, over every GPU of the catalog.

* Lower precision is never slower on the same GPU: fp16/bf16 ≤ tf32 ≤ fp32 for every model, and each speed-up is no
  larger than the ratio of the peaks that bound it (the half-precision step cannot beat the TF32 step by more than the
  BF16 peak over the TF32 peak, nor by more than the 2x fewer bytes, whichever is larger).
* FP8 (torchao's tensorwise recipe, eager casts) is no slower than BF16 where the GEMMs are large enough for FP8 to pay
  (a Llama-3-8B-shaped layer); on small models its casts cost more than the GEMMs save, as torchao's own tables show,
  and perfmodel says so rather than hiding it.
* In half precision, no GPU whose every spec (rates, bandwidth, L2) is at least another's is predicted slower,
  for transformers (GEMMs from the pooled half-precision model, memory-bound kernels from the bandwidth model). At
  FP32/TF32, and for convolutions in half precision, the trees learned on NeuSight's microbenchmarks still violate it
  between near-identical parts (V100 SXM2 against PCIe, A100 SXM4 against PCIe, L40S against L40): not held.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.datasets import gpu_spec, load_gpu_catalog

LLAMA = dict(model_type="llama", vocab_size=32000, hidden_size=512, intermediate_size=1376, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=1024, tie_word_embeddings=False)
BERT = dict(model_type="bert", vocab_size=30522, hidden_size=512, intermediate_size=2048, num_hidden_layers=4,
            num_attention_heads=8, max_position_embeddings=512)
MODELS = {"resnet-32": ("resnet-32", dict(input_shape=(3, 32, 32), batch_size=128)),
          "llama": (LLAMA, dict(input_shape=(512,), batch_size=8)),
          "bert": (BERT, dict(input_shape=(512,), batch_size=8))}
#: what "every spec at least another's" compares: the rates, the bandwidth and the cache. Not the SM count: at an equal
#: peak, more SMs means a lower rate per SM (GB300 against GB200), not a faster GPU.
SPEC_FIELDS = ("fp32_peak_tflops", "tf32_peak_tflops", "fp16_peak_tflops", "bf16_peak_tflops", "fp8_peak_tflops",
               "memory_bandwidth_gb_per_s", "l2_mib")


#: GPUs whose FP32/TF32 kernels come from trees of their own (NeuSight's training GPUs): their FP32 step and their
#: half-precision step (pooled models) rest on different fits, and the P100s' FP16 speed-up comes out at 2.1-2.2x
#: against a bound of 2 (their FP32 memory-bound kernels are slower by their own trees than by the pooled bandwidth
#: model). Every other GPU is held to the bound.
OWN_FP32_TREES = ("P4", "P100", "P100-SXM2", "T4", "V100-PCIe-32GB", "A100-PCIe-40GB")


def _has(g, p):
    s = gpu_spec(g)
    return p == "fp32" or not math.isnan(getattr(s, f"{p}_peak_tflops"))


@pytest.fixture(scope="module")
def grid():
    gpus = list(load_gpu_catalog()["gpu"])
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (model, kw) in MODELS.items():
            for p in ("fp32", "tf32", "fp16", "bf16"):
                ok = [g for g in gpus if _has(g, p)]
                r = pm.predict_step_time(model, ok, precision=p, optimizer="adam", **kw)
                rows += [(name, g, p, t) for g, t in zip(r["gpu"], r["step_time_s"])]
    return pd.DataFrame(rows, columns=["model", "gpu", "precision", "t"]).pivot_table(
        index=["model", "gpu"], columns="precision", values="t")


def test_lower_precision_is_never_slower_and_the_speedup_is_bounded_by_the_peaks(grid):
    assert len(grid) == len(MODELS) * len(load_gpu_catalog())
    for (model, g), r in grid.iterrows():
        s = gpu_spec(g)
        for half in ("fp16", "bf16"):
            if not np.isnan(r[half]):
                ref = r["tf32"] if not np.isnan(r["tf32"]) else r["fp32"]
                ref_peak = s.matmul_peak_tflops("tf32" if not np.isnan(r["tf32"]) else "fp32")
                assert r[half] <= ref * (1 + 1e-9), (model, g, half, r[half], ref)
                bound = max(s.matmul_peak_tflops(half) / ref_peak, 2.0)
                if g not in OWN_FP32_TREES:
                    assert ref / r[half] <= bound * (1 + 1e-9), (model, g, half, ref / r[half], bound)
        if not np.isnan(r["tf32"]):
            assert r["tf32"] <= r["fp32"] * (1 + 1e-9), (model, g, r["tf32"], r["fp32"])
            assert r["fp32"] / r["tf32"] <= s.matmul_peak_tflops("tf32") / s.matmul_peak_tflops("fp32") * (1 + 1e-9)


def test_no_gpu_with_every_spec_at_least_another_is_predicted_slower_in_half_precision(grid):
    specs = {g: gpu_spec(g) for g in grid.index.get_level_values("gpu").unique()}

    def dominates(a, b):  # at least as good everywhere, better somewhere (equal parts may differ in their SMs)
        ge = all(getattr(specs[a], f) >= getattr(specs[b], f) or math.isnan(getattr(specs[b], f)) for f in SPEC_FIELDS)
        gt = any(getattr(specs[a], f) > getattr(specs[b], f) for f in SPEC_FIELDS)
        return a != b and ge and gt

    pairs = [(a, b) for a in specs for b in specs if dominates(a, b)]
    assert ("B200", "H100") in pairs and ("MI325X", "MI300X") in pairs
    # transformers: GEMMs by the pooled half-precision model, memory-bound kernels by the bandwidth model. A CNN's
    # convolutions in half precision still take the FP32-learned trees at the half peak, which are not monotone in
    # the peak (resnet-32: L40S 16.15 ms against the L40's 16.02 with twice its BF16 rate): not held here.
    for model in ("llama", "bert"):
        t = grid.loc[model]["bf16"].dropna()
        for a, b in pairs:
            if a in t.index and b in t.index:
                assert t[a] <= t[b] * (1 + 1e-9), (model, a, t[a], b, t[b])
    # the case that failed before: an H200 (more bandwidth, same compute) no slower than an H100
    assert grid.loc[("llama", "H200"), "bf16"] < grid.loc[("llama", "H100"), "bf16"]


def test_fp8_pays_where_the_gemms_are_large():
    big = dict(LLAMA, hidden_size=4096, intermediate_size=14336, num_hidden_layers=2, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192)
    gpus = ["H100", "H200", "B200", "L40S", "MI300X"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bf = pm.predict_step_time(big, gpus, input_shape=(2048,), batch_size=4, precision="bf16", optimizer="adam")
        f8 = pm.predict_step_time(big, gpus, input_shape=(2048,), batch_size=4, precision="fp8", optimizer="adam")
    assert (f8["step_time_s"].to_numpy() < bf["step_time_s"].to_numpy()).all()
    # and never by more than the FP8 peak over the BF16 peak
    ratio = bf["step_time_s"].to_numpy() / f8["step_time_s"].to_numpy()
    assert (ratio <= np.array([gpu_spec(g).fp8_peak_tflops / gpu_spec(g).bf16_peak_tflops for g in gpus])).all()


def test_the_cases_that_failed_before():
    """GPT-2 medium in BF16 was predicted slower than in TF32 on the H100; a CNN in BF16 was 2.8x its TF32 time on the
    GPU the half-precision model had trees of its own for (the A100-PCIe-80GB)."""
    gpt2 = dict(model_type="gpt2", n_layer=24, n_embd=1024, n_head=16, n_positions=1024, vocab_size=50257)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for g in ("H100", "H100-NVL", "A100-PCIe-80GB"):
            tf = pm.predict_step_time(gpt2, g, input_shape=(1024,), batch_size=8, precision="tf32", optimizer="adam")
            bf = pm.predict_step_time(gpt2, g, input_shape=(1024,), batch_size=8, precision="bf16", optimizer="adam")
            assert bf["step_time_s"].item() < 0.9 * tf["step_time_s"].item(), g  # 1.35x, 1.21x, 1.39x (published AMP: 1.5-2.5x)
        for model in ("shake-shake-big", "resnet-32"):
            t = {p: pm.predict_step_time(model, ["A100-PCIe-80GB", "A100-PCIe-40GB"], batch_size=128, precision=p)["step_time_s"]
                 for p in ("tf32", "bf16")}
            assert (t["bf16"] < t["tf32"]).all(), model
            assert t["bf16"].iloc[0] <= 1.1 * t["bf16"].iloc[1]  # the 80 GB card is no slower than the 40 GB one
