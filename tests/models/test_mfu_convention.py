"""MFU of an FP8 run is counted against the BF16 peak, as torchtitan and Megatron-LM report FP8 runs and as the rule of
thumb's 40 % is counted: the same convention in ``pm.predict``, ``search_layouts``, ``plan_cloud`` and the rule."""
from __future__ import annotations

import warnings

import pytest

import perfmodel as pm
from perfmodel.datasets import UnknownNameError, mfu_peak_tflops, mfu_precision, peak_tflops

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=4096, tie_word_embeddings=False)


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


@pytest.mark.parametrize("given,want", [("fp8", "bf16"), ("float8", "bf16"), ("e4m3", "bf16"), ("bf16", "bf16"),
                                        ("fp16", "fp16"), ("half", "fp16"), ("tf32", "tf32"), ("fp32", "fp32")])
def test_the_peak_an_mfu_is_counted_against(given, want):
    assert mfu_precision(given) == want
    assert mfu_peak_tflops("H100", given) == peak_tflops("H100", want)


def test_an_unknown_precision_is_refused_by_name():
    with pytest.raises(UnknownNameError, match="Unknown precision 'fp6'. Expected one of: fp32, tf32, fp16, bf16, fp8"):
        mfu_precision("fp6")
    with pytest.raises(pm.datasets.UnsupportedPrecisionError, match="cannot run bf16"):
        mfu_peak_tflops("V100", "bf16")


@pytest.mark.parametrize("precision,stack", [("fp8", "te"), ("fp8", "eager"), ("bf16", "eager"), ("tf32", "eager")])
def test_predict_counts_an_fp8_step_against_the_bf16_peak(precision, stack):
    w = pm.Workload(LLAMA, input_shape=(1024,), batch_size=8, precision=precision, optimizer="adam-fused", stack=stack)
    r = _quiet(pm.predict, w, pm.Cluster("H100", n_gpus=1))
    at = "bf16" if precision == "fp8" else precision
    assert r.mfu == pytest.approx(r.flops / (r.step_time_s * peak_tflops("H100", at) * 1e12), rel=1e-12)
    assert f"MFU {r.mfu * 100:.3g} %{' of the BF16 peak' if precision == 'fp8' else ''}\n" in repr(r)


def test_layouts_and_plans_carry_the_same_fp8_mfu():
    w = pm.Workload(LLAMA, input_shape=(1024,), batch_size=16, precision="fp8", optimizer="adam-fused", stack="te")
    c = pm.Cluster("H100", n_gpus=8)
    one = _quiet(pm.predict, w, c, pm.Parallelism("fsdp"))
    assert one.mfu == pytest.approx(one.flops / (one.step_time_s * peak_tflops("H100", "bf16") * 1e12), rel=1e-12)
    rows = _quiet(pm.planning.search_layouts, w, c, frameworks=("pytorch",), tensor_parallel=(1,), pipeline_parallel=(1,),
                  context_parallel=(1,))
    row = rows[(rows["strategy"] == "fsdp8") & (rows["activation_checkpointing"].astype(str) == "False")]
    assert len(row) == 1 and row["mfu"].iloc[0] == pytest.approx(one.mfu, rel=1e-12)
    from perfmodel.datasets.reference import load_gpu_prices
    from perfmodel.planning import plan_cloud
    from perfmodel.planning.cloud import instance_cluster

    prices = load_gpu_prices()
    plan = _quiet(plan_cloud, LLAMA, gpus=["H100"], n_gpus=(8,), strategies=("fsdp",), input_shape=(1024,),
                  samples=16000, batch_sizes=(16,), spot=False, precision="fp8", optimizer="adam-fused",
                  prices=prices[prices["instance_type"] == "p5.48xlarge"])
    on = _quiet(pm.predict, pm.Workload(LLAMA, input_shape=(1024,), batch_size=16, precision="fp8",
                                        optimizer="adam-fused"), instance_cluster("p5.48xlarge", 8), "fsdp")
    assert on.mfu == pytest.approx(on.flops / (on.step_time_s * peak_tflops("H100", "bf16") * 1e12), rel=1e-12)
    assert plan["mfu"].iloc[0] == pytest.approx(on.mfu, rel=1e-12)
