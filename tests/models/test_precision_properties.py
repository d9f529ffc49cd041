"""Properties of the step model across precisions and GPUs, over every GPU of the catalog.

* Lower precision is never slower on the same GPU: fp16/bf16 ≤ tf32 ≤ fp32 for every model, and each speed-up is no
  larger than the ratio of the peaks that bound it (the half-precision step cannot beat the TF32 step by more than the
  BF16 peak over the TF32 peak, nor by more than the 2x fewer bytes, whichever is larger).
* FP8 (torchao's tensorwise recipe, eager casts) is no slower than BF16 where the GEMMs are large enough for FP8 to pay
  (a Llama-3-8B-shaped layer); on small models its casts cost more than the GEMMs save, as torchao's own tables show,
  and perfmodel says so rather than hiding it.
* No GPU whose every spec (rates, bandwidth, L2) is at least another's is predicted slower, at any precision and for
  every model (CNNs and transformers): held by construction, each kernel no slower than on the catalog GPUs it
  dominates (:func:`perfmodel.step.kernels.dominated_gpus`). Before, the trees learned on NeuSight's microbenchmarks put
  near-identical parts apart (the V100 SXM2 34-47 % slower than the V100 PCIe at FP32, the H200 17 % slower than the
  H100 NVL at TF32).
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
GPT2 = dict(model_type="gpt2", n_layer=4, n_embd=512, n_head=8, n_positions=1024, vocab_size=50257)
MODELS = {"resnet-32": ("resnet-32", dict(input_shape=(3, 32, 32), batch_size=128)),
          "shake-shake-small": ("shake-shake-small", dict(input_shape=(3, 32, 32), batch_size=64)),
          "llama": (LLAMA, dict(input_shape=(512,), batch_size=8)),
          "gpt2": (GPT2, dict(input_shape=(512,), batch_size=8)),
          "bert": (BERT, dict(input_shape=(512,), batch_size=8))}
#: what "every spec at least another's" compares: the rates (FP32 GEMMs at the matrix rate where AMD's BLAS uses it),
#: the bandwidth and the cache. Not the SM count: at an equal peak, more SMs means a lower rate per SM (GB300 against
#: GB200), not a faster GPU.
SPEC_FIELDS = ("fp32_peak_tflops", "fp32_gemm_tflops", "tf32_peak_tflops", "fp16_peak_tflops", "bf16_peak_tflops",
               "fp8_peak_tflops", "memory_bandwidth_gb_per_s", "l2_mib")


def _field(spec, f):
    return spec.matmul_peak_tflops("fp32") if f == "fp32_gemm_tflops" else getattr(spec, f)


def dominance_pairs(gpus, precision: str = "fp32"):
    """(a, b): GPU ``a`` at least as good as ``b`` in every :data:`SPEC_FIELDS` (a rate ``b`` lacks is no matter) and
    better in one, each GPU's rates those a training step at ``precision`` runs it at (the sustained share of its clock
    where :data:`perfmodel.step.kernels.SUSTAINED_CLOCK_SHARE` publishes one: a 700 W H200 at BF16 runs below an
    H200 NVL's datasheet FP32 rate, so it no longer dominates it there)."""
    from perfmodel.step.kernels import at_sustained_clock, training_clock

    specs = {g: at_sustained_clock(g, training_clock(g, precision)) for g in gpus}

    def dominates(a, b):
        ge = all(_field(specs[a], f) >= _field(specs[b], f) or math.isnan(_field(specs[b], f)) for f in SPEC_FIELDS)
        return a != b and ge and any(_field(specs[a], f) > _field(specs[b], f) for f in SPEC_FIELDS)

    return [(a, b) for a in specs for b in specs if dominates(a, b)]


#: GPUs whose FP32/TF32 kernels come from trees of their own (NeuSight's training GPUs): their FP32 step and their
#: half-precision step (pooled models) rest on different fits, and the P100s' FP16 speed-up comes out at 2.1-2.2x
#: against a bound of 2 (their FP32 memory-bound kernels are slower by their own trees than by the pooled bandwidth
#: model). Every other GPU is held to the bound.
OWN_FP32_TREES = ("P4", "P100", "P100-SXM2", "T4", "V100-PCIe-32GB", "A100-PCIe-40GB")

#: GPUs whose reference step (TF32, else FP32) runs its GEMMs at the efficiency learned on NeuSight's FP32
#: microbenchmarks: those without TF32 units (AMD's, the V100) and those whose TF32 tensor rate is no higher than their
#: FP32 rate (GA102/Ada/Blackwell parts whose FP32 rate counts dual-issued FP32: there the TF32 step is the FP32 step).
#: Their half-precision GEMMs run at the tensor-core efficiency learned on Vidur's FP16 GEMMs (about 65 % of the peak on
#: a 4-layer Llama, against about 35 % for the A10G's FP32 GEMMs), so the half-precision step can beat the reference by
#: more than the peak ratio: the A10G's Llama by 2.20x and the MI100's by 2.11x, against 2. Held to 1.15x the bound.
REF_AT_FP32_EFFICIENCY = tuple(g for g in load_gpu_catalog()["gpu"]
                               if math.isnan(gpu_spec(g).tf32_peak_tflops)
                               or gpu_spec(g).tf32_peak_tflops <= gpu_spec(g).fp32_peak_tflops)


def _has(g, p):
    s = gpu_spec(g)
    return p == "fp32" or not math.isnan(getattr(s, f"{p}_peak_tflops"))


@pytest.fixture(scope="module")
def long():
    gpus = list(load_gpu_catalog()["gpu"])
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (model, kw) in MODELS.items():
            for p in ("fp32", "tf32", "fp16", "bf16"):
                ok = [g for g in gpus if _has(g, p)]
                r = pm.predict_step_time(model, ok, precision=p, optimizer="adam", **kw)
                rows += [(name, g, p, t, n) for g, t, n in zip(r["gpu"], r["step_time_s"], r["n_kernels"])]
    return pd.DataFrame(rows, columns=["model", "gpu", "precision", "t", "n_kernels"])


@pytest.fixture(scope="module")
def grid(long):
    return long.pivot_table(index=["model", "gpu"], columns="precision", values="t")


@pytest.fixture(scope="module")
def kernels(long):
    return long.pivot_table(index=["model", "gpu"], columns="precision", values="n_kernels")


def test_lower_precision_is_never_slower_and_the_speedup_is_bounded_by_the_peaks(grid, kernels):
    """Half precision is never slower than TF32/FP32, except by the launches of autocast's extra kernels (its weight
    casts) on a step the host's launches bound: GPT-2 of 4 x 512 at 8 x 512 tokens on a GB200/GB300 runs 382 kernels
    in BF16 against 344 in TF32, each at least ``KERNEL_MIN_S``, and comes out 0.04 % slower (as mixed precision is on
    a launch-bound step). The excess is held to those launches."""
    from perfmodel.step.op_latency import KERNEL_MIN_S

    assert len(grid) == len(MODELS) * len(load_gpu_catalog())
    excused = []
    for (model, g), r in grid.iterrows():
        s = gpu_spec(g)
        for half in ("fp16", "bf16"):
            if not np.isnan(r[half]):
                at = "tf32" if not np.isnan(r["tf32"]) else "fp32"
                ref, ref_peak = r[at], s.matmul_peak_tflops(at)
                if r[half] > ref * (1 + 1e-9):
                    extra = kernels.loc[(model, g), half] - kernels.loc[(model, g), at]
                    assert r[half] - ref <= extra * KERNEL_MIN_S, (model, g, half, r[half], ref, extra)
                    excused.append((model, g, half))
                bound = max(s.matmul_peak_tflops(half) / ref_peak, 2.0)
                if g in REF_AT_FP32_EFFICIENCY and g not in OWN_FP32_TREES:
                    assert ref / r[half] <= 1.15 * bound, (model, g, half, ref / r[half], bound)
                elif g not in OWN_FP32_TREES:
                    assert ref / r[half] <= bound * (1 + 1e-9), (model, g, half, ref / r[half], bound)
        if not np.isnan(r["tf32"]):
            assert r["tf32"] <= r["fp32"] * (1 + 1e-9), (model, g, r["tf32"], r["fp32"])
            assert r["fp32"] / r["tf32"] <= s.matmul_peak_tflops("tf32") / s.matmul_peak_tflops("fp32") * (1 + 1e-9)
    assert len(excused) <= 8, excused  # the launch-bound exception stays an exception


def test_no_gpu_with_every_spec_at_least_another_is_predicted_slower(grid):
    gpus = grid.index.get_level_values("gpu").unique()
    pairs = dominance_pairs(gpus)
    assert ("B200", "H100") in pairs and ("MI325X", "MI300X") in pairs and ("V100", "V100-PCIe-32GB") in pairs
    assert ("MI250", "MI210") not in pairs  # one MI250 die's FP32 matrix rate (45.25 TFLOPS) is below the MI210's 45.3
    at = {p: dominance_pairs(gpus, p) for p in ("fp32", "tf32", "fp16", "bf16")}
    assert ("H200", "H200-NVL") in at["fp32"] and ("H200", "H200-NVL") not in at["bf16"]
    checked = 0
    for model in MODELS:
        for p in ("fp32", "tf32", "fp16", "bf16"):
            t = grid.loc[model][p].dropna()
            for a, b in at[p]:
                if a in t.index and b in t.index:
                    assert t[a] <= t[b] * (1 + 1e-9), (model, p, a, t[a], b, t[b])
                    checked += 1
    assert checked > 1000
    # the cases that failed before: an H200 (more bandwidth, same compute) no slower than an H100; the V100 SXM2 no
    # slower than the V100 PCIe (the GPU the trees were fitted on) at FP32; the H200 no slower than the H100 NVL at TF32
    assert grid.loc[("llama", "H200"), "bf16"] < grid.loc[("llama", "H100"), "bf16"]
    for model in MODELS:
        assert grid.loc[(model, "V100"), "fp32"] <= grid.loc[(model, "V100-PCIe-32GB"), "fp32"]
        assert grid.loc[(model, "H200"), "tf32"] <= grid.loc[(model, "H100-NVL"), "tf32"]


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


def test_the_gpus_a_gpu_is_held_to():
    """dominated_gpus: every catalog GPU with no more of any rate, bandwidth or L2; a training GPU's own trees are
    reached only within its architecture (the T4's never lower the P100), pooled GPUs pass them on (the V100 SXM2
    takes the V100 PCIe's, and the A100 SXM4 the V100 SXM2's)."""
    from perfmodel.datasets import gpu_spec
    from perfmodel.step.kernels import _comparable_gpus, dominated_gpus
    from perfmodel.step.op_latency import default_op_model

    names = lambda specs: {s.gpu for s in specs}  # noqa: E731
    h200 = names(dominated_gpus(gpu_spec("H200"), "bf16"))
    assert {"H100", "H100-NVL", "A100"} <= h200 and not {"B200", "H200", "MI300X"} & h200
    assert "T4" in names(dominated_gpus(gpu_spec("P100"), "fp32"))
    m = default_op_model()
    assert "T4" not in names(_comparable_gpus(gpu_spec("P100"), "fp32", m))
    assert "V100-PCIe-32GB" in names(_comparable_gpus(gpu_spec("V100"), "fp32", m))
    assert {"V100", "V100-PCIe-32GB", "A100-PCIe-40GB"} <= names(_comparable_gpus(gpu_spec("A100"), "fp32", m))
    # a GPU without units for the precision is held to nothing and holds nothing
    assert dominated_gpus(gpu_spec("V100"), "bf16") == ()
    assert "V100" not in names(dominated_gpus(gpu_spec("H100"), "bf16"))


def test_basis_says_when_a_step_is_held_to_a_gpu_it_dominates():
    from perfmodel.step.kernels import source_phrase

    gpt2 = dict(model_type="gpt2", n_layer=4, n_embd=512, n_head=8, n_positions=1024, vocab_size=50257)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = pm.predict_step_time(gpt2, ["V100", "V100-PCIe-32GB"], input_shape=(512,), batch_size=8, precision="fp32")
        two = pm.predict_step_time(gpt2, "V100", input_shape=(512,), batch_size=8, precision="fp32", n_gpus=2, strategy="dp")
    said = "kernels as on the V100-PCIe-32GB (no more of any rate, bandwidth or L2 than this GPU, and predicted faster"
    assert said in one["basis"].iloc[0] and said in two["basis"].iloc[0]
    assert "kernels as on" not in one["basis"].iloc[1]  # its own trees
    assert one["step_time_s"].iloc[0] == one["step_time_s"].iloc[1]
    assert source_phrase(None) == ""
    assert source_phrase("FP32:") == "; kernels as in FP32 (a TF32 step is never slower than in FP32)"
    assert source_phrase("FP32:H100-NVL").startswith("; kernels as in FP32 (a TF32 step is never slower than in FP32), as on the H100-NVL (")
