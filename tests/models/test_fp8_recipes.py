"""FP8 recipes (``Workload(fp8_recipe=...)``): torchao's tensorwise and rowwise scaling, Transformer Engine's delayed,
current and MXFP8 scaling — each a stated model of the kernels it adds, checked where the hardware can run it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel._errors import UnknownNameError
from perfmodel.datasets import UnsupportedPrecisionError
from perfmodel.step.trace import (TE_CURRENT_CAST_BYTES_PER_ELEMENT, TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT, model_input,
                                  step_work)

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
H, F, KV, L = 64, 128, 32, 4
TOKENS = 4 * 64  # not the vocabulary size (a GEMM with a vocabulary-sized dimension stays in BF16)


def _work(stack, recipe=None):
    net, shape, dtype, vocab, _ = model_input(LLAMA, (64,), None)
    return step_work(net, shape, dtype, vocab, batch_size=4, prec="fp8", optimizer=None, inference=False, compile=stack,
                     recipe=recipe)


def _pred(gpu="H100", n_gpus=1, strategy="dp", **fields):
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=4 * n_gpus, precision="fp8", optimizer="adam-fused", **fields)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(w, pm.Cluster(gpu, n_gpus=n_gpus), pm.Parallelism(strategy))


def test_the_default_recipes_are_the_ones_the_families_ran_before():
    for stack, default in (("eager", "tensorwise"), ("compile", "tensorwise"), ("te", "delayed")):
        assert _work(stack).equals(_work(stack, default))
        assert pm.Workload(LLAMA, precision="fp8", stack=stack).filled().fp8_recipe == default
        assert _pred(stack=stack).step_time_s == _pred(stack=stack, fp8_recipe=default).step_time_s
    assert pm.Workload(LLAMA, precision="bf16").filled().fp8_recipe is None


def test_te_current_scaling_casts_each_activation_operand_by_kernels_of_its_own():
    """Current per-tensor scaling reads each activation for its maximum, then casts it: the input of each forward FP8
    GEMM (once for q, k and v, once for gate and up: TE's fused LayerNormLinear) and the output gradient of each
    input-gradient GEMM, at TE_CURRENT_CAST_BYTES_PER_ELEMENT bytes per element; delayed scaling fuses them."""
    delayed, current = _work("te"), _work("te", "current")
    casts = current[current["op"] == "te_fp8_current_cast"]
    assert not (delayed["op"] == "te_fp8_current_cast").any()
    fwd = casts[casts["phase"] == "forward"]
    per_layer_inputs = H + H + H + F  # q (k, v share it), o, gate (up shares it), down
    assert fwd["bytes"].sum() == pytest.approx(TE_CURRENT_CAST_BYTES_PER_ELEMENT * TOKENS * per_layer_inputs * L)
    assert len(casts[casts["phase"] == "backward"]) == 7 * L  # q, k, v, o, gate, up, down: each its own gradient
    # the weight casts are delayed scaling's
    w_d, w_c = (x[x["op"] == "te_fp8_weight_cast"]["bytes"].sum() for x in (delayed, current))
    assert w_d == w_c == pytest.approx(TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT * L * (2 * H * H + 2 * H * KV + 3 * H * F))
    assert _pred(stack="te", fp8_recipe="current").step_time_s > _pred(stack="te").step_time_s
    assert "current per-tensor scaling" in _pred(stack="te", fp8_recipe="current").basis


def test_torchao_rowwise_casts_the_weights_per_micro_batch_and_gathers_them_in_bf16():
    comp, row = _work("compile"), _work("compile", "rowwise")
    extra = row[row["op"] == "te_fp8_weight_cast"]
    assert not (comp["op"] == "te_fp8_weight_cast").any()
    assert extra["bytes"].sum() == pytest.approx(TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT * L * (2 * H * H + 2 * H * KV + 3 * H * F))
    assert _work("eager", "rowwise").equals(_work("eager"))  # eager: the same casts, per row or per tensor
    t, r = _pred(n_gpus=8, strategy="fsdp", compile=True), _pred(n_gpus=8, strategy="fsdp", compile=True, fp8_recipe="rowwise")
    assert r.comm_total_s["dp"] > t.comm_total_s["dp"]  # no FP8 all-gather
    assert "enable_fsdp_float8_all_gather" in t.basis and "enable_fsdp_float8_all_gather" not in r.basis
    assert "rowwise scaling" in r.basis and "lower bound" in r.basis
    assert r.memory["params_bytes"] > t.memory["params_bytes"]
    with pytest.raises(ValueError, match="rowwise-scaled weights in BF16"):
        w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="fp8", compile=True, fp8_recipe="rowwise")
        pm.predict(w, pm.Cluster("H100", n_gpus=8), pm.Parallelism("fsdp", fp8_param_gather=True))


def test_mxfp8_runs_where_the_gpu_has_block_scaled_fp8_and_is_refused_elsewhere():
    b200 = _pred("B200", stack="te", fp8_recipe="mxfp8")
    assert np.isfinite(b200.step_time_s) and b200.step_time_s > 0
    assert "MXFP8 block scaling" in b200.basis
    with pytest.raises(UnsupportedPrecisionError, match="H100 lack"):
        _pred("H100", stack="te", fp8_recipe="mxfp8")


@pytest.mark.parametrize("fields, error, match", [
    (dict(precision="bf16", fp8_recipe="rowwise"), ValueError, "precision='bf16'"),
    (dict(precision="fp8", stack="te", fp8_recipe="rowwise"), ValueError, "torchao's"),
    (dict(precision="fp8", compile=True, fp8_recipe="mxfp8"), ValueError, "Transformer Engine's"),
    (dict(precision="fp8", fp8_recipe="block"), UnknownNameError, "fp8_recipe must be one of"),
])
def test_a_recipe_that_does_not_fit_the_step_is_refused_when_the_workload_is_made(fields, error, match):
    with pytest.raises(error, match=match):
        pm.Workload(LLAMA, **fields)


def test_the_keyword_face_says_where_the_recipe_is_taken():
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="fp8", fp8_recipe="rowwise")
    with pytest.raises(ValueError, match="fp8_recipe='rowwise'.*pm.predict"):
        pm.predict_step_time(w, "H100")
