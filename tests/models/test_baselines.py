"""The rule of thumb and the roofline printed beside every external score."""
from __future__ import annotations

import warnings

import pytest

from perfmodel.datasets import gpu_spec
from perfmodel.step.baselines import attention_flops_per_token, matmul_params, roofline_step_time, rule_of_thumb_step_time

LLAMA = dict(model_type="llama", vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256, tie_word_embeddings=False)


def test_rule_of_thumb_is_6n_plus_12lhs_per_token_at_40_percent_of_peak():
    from perfmodel.step.trace import model_input

    net = model_input(LLAMA, (128,), None)[0]
    n = matmul_params(net)
    # per layer: q, k, v, o (4 h^2), gate/up/down (3 h f), two norms (2 h); the final norm h; the head h·V (untied)
    h, f, V, L = 64, 128, 1000, 2
    assert n == L * (4 * h * h + 3 * h * f + 2 * h) + h + h * V
    r = rule_of_thumb_step_time(LLAMA, ["H100", "A100"], input_shape=(128,), batch_size=8).set_index("gpu")
    flops = (6 * n + 12 * L * h * 128) * 128 * 8
    assert r.loc["H100", "flops_per_step"] == flops
    assert r.loc["H100", "step_time_s"] == pytest.approx(flops / (989.4e12 * 0.4))
    assert r.loc["A100", "step_time_s"] == pytest.approx(flops / (312e12 * 0.4))
    assert "6·N + 12·L·h·s" in r.loc["H100", "basis"]
    # spread over GPUs, FP8 counted against the BF16 peak, inference is a third of the work
    r8 = rule_of_thumb_step_time(LLAMA, "H100", input_shape=(128,), batch_size=8, n_gpus=8, precision="fp8")
    assert r8["step_time_s"].item() == pytest.approx(r.loc["H100", "step_time_s"] / 8)
    ri = rule_of_thumb_step_time(LLAMA, "H100", input_shape=(128,), batch_size=8, inference=True)
    assert ri["flops_per_step"].item() == flops / 3


def test_attention_flops_per_token_is_the_rules_12lhs_term():
    h, L, s = 64, 2, 128
    assert attention_flops_per_token(LLAMA, (s,)) == 12 * L * h * s
    assert attention_flops_per_token(LLAMA, (s,), inference=True) == 4 * L * h * s
    r = rule_of_thumb_step_time(LLAMA, "H100", input_shape=(s,), batch_size=1).iloc[0]
    from perfmodel.step.trace import model_input

    n = matmul_params(model_input(LLAMA, (s,), None)[0])
    assert r["flops_per_step"] == (6 * n + attention_flops_per_token(LLAMA, (s,))) * s
    with pytest.raises(ValueError, match="counts attention FLOPs only for a model of token sequences"):
        attention_flops_per_token("resnet-32", (3, 32, 32))


def test_rule_of_thumb_for_a_cnn_and_bad_arguments():
    r = rule_of_thumb_step_time("resnet-32", "V100", input_shape=(3, 32, 32), batch_size=64, precision="fp16")
    assert r["basis"].item().startswith("rule of thumb: 3 x the forward FLOPs per sample")
    assert r["step_time_s"].item() == pytest.approx(r["flops_per_step"].item() / (gpu_spec("V100").fp16_peak_tflops * 1e12 * 0.4))
    with pytest.raises(ValueError, match=r"mfu must be a share of the peak in \(0, 1\]; got 40"):
        rule_of_thumb_step_time(LLAMA, "H100", input_shape=(128,), batch_size=8, mfu=40)
    with pytest.raises(ValueError, match="batch_size must be a positive integer; got 0"):
        rule_of_thumb_step_time(LLAMA, "H100", input_shape=(128,), batch_size=0)


def test_roofline_is_below_perfmodel():
    import perfmodel as pm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = pm.predict_step_time(LLAMA, ["H100", "L4"], input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam")
    roof = roofline_step_time(LLAMA, ["H100", "L4"], input_shape=(128,), batch_size=8, precision="bf16")
    assert (roof["step_time_s"].to_numpy() < p["step_time_s"].to_numpy()).all()
    assert (roof["compute_bound_s"] + roof["memory_bound_s"]).to_numpy() == pytest.approx(roof["step_time_s"].to_numpy())
