"""The kernel family a run uses (``stack=``): eager PyTorch, torch.compile, NVIDIA Transformer Engine."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.step.kernels import FUSED_ATTENTION_EFFICIENCY, TE_FUSED_ATTENTION_EFFICIENCY, fused_attention_floor_s
from perfmodel.step.trace import model_input, step_ops, step_work, te_ops

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
GPT2 = dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0, eos_token_id=0)
KW = dict(input_shape=(64,), batch_size=4, precision="bf16", optimizer="adam-fused")


def _predict(model, gpu="H100", **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict_step_time(model, gpu, **{**KW, **kw})


def test_stack_compile_is_compile_true_and_eager_is_the_default():
    a, b = _predict(LLAMA, compile=True), _predict(LLAMA, stack="compile")
    assert a["step_time_s"].iloc[0] == b["step_time_s"].iloc[0] and a["basis"].iloc[0] == b["basis"].iloc[0]
    e = _predict(LLAMA)
    assert e["step_time_s"].iloc[0] == _predict(LLAMA, stack="eager")["step_time_s"].iloc[0]
    assert "kernels: eager PyTorch" in e["basis"].iloc[0] and "kernels: torch.compile" in a["basis"].iloc[0]


@pytest.mark.parametrize("kw,err,match", [
    (dict(stack="te", compile=True), ValueError, "ask for two kernel families"),
    (dict(stack="jax"), ValueError, "stack must be one of"),
    (dict(stack=True), TypeError, "stack must be a name"),
])
def test_bad_stacks_are_refused(kw, err, match):
    with pytest.raises(err, match=match):
        _predict(LLAMA, **kw)


@pytest.mark.parametrize("model", [LLAMA, GPT2], ids=["llama", "gpt2"])
@pytest.mark.parametrize("gpu", ["H100", "A100"])
def test_transformer_engine_runs_fewer_kernels_and_is_no_slower_than_eager(model, gpu):
    e, t = _predict(model, gpu), _predict(model, gpu, stack="te")
    assert t["n_kernels"].iloc[0] < e["n_kernels"].iloc[0]
    assert t["step_time_s"].iloc[0] < e["step_time_s"].iloc[0]
    assert "kernels: Transformer Engine" in t["basis"].iloc[0]
    assert t["flops"].iloc[0] == e["flops"].iloc[0]  # the same arithmetic, other kernels


def _ops(model, prec="bf16"):
    net, shape, dt, vocab, _ = model_input(model, (64,), None)
    return step_ops(net, shape, dt, vocab, batch_size=4, prec=prec, optimizer="adam-fused", inference=False), net, shape, dt, vocab


def test_fused_modules_move_what_their_kernels_read_and_write():
    ops, *_ = _ops(LLAMA)
    te = te_ops(ops)
    n, h, s = 4 * 64 * 64, 4 * 64 * 128, 2  # tokens x hidden, tokens x intermediate, bf16
    norm = te[(te["op"] == "te.norm") & (te["module"] == "model.model.layers.0.input_layernorm")]
    assert norm.set_index("phase")[["bytes_read", "bytes_written"]].to_dict("index") == {
        "forward": {"bytes_read": n * s, "bytes_written": n * s}, "backward": {"bytes_read": 2 * n * s, "bytes_written": n * s}}
    act = te[(te["op"] == "te.mlp_act") & te["module"].str.startswith("model.model.layers.0.mlp")]
    assert act.set_index("phase")[["bytes_read", "bytes_written"]].to_dict("index") == {  # SwiGLU: gated
        "forward": {"bytes_read": 2 * h * s, "bytes_written": h * s}, "backward": {"bytes_read": 3 * h * s, "bytes_written": 2 * h * s}}
    q, k = 4 * 4 * 64 * 16, 4 * 2 * 64 * 16  # rotated q and k: batch x heads x tokens x head dim
    rope = te[(te["op"] == "te.attention_prep") & (te["module"] == "model.model.layers.0.self_attn")]
    assert set(rope["bytes_read"]) == set(rope["bytes_written"]) == {(q + k) * s} and len(rope) == 2
    ce = te[te["op"] == "te.cross_entropy"].set_index("phase")
    logits = 4 * 64 * 512
    assert ce.loc["forward", "bytes_read"] == logits * s and ce.loc["backward", "bytes_written"] == logits * s
    assert not ops["op"].str.startswith("te.").any()  # the eager trace itself is untouched
    # no eager kernel of a fused module survives
    assert not te["op"].isin(["aten._log_softmax", "aten.rsqrt", "aten.silu", "aten.neg"]).any()


def test_gpt2_has_no_rotary_kernel_under_transformer_engine():
    ops, *_ = _ops(GPT2)
    te = te_ops(ops)
    assert (te["op"] == "te.norm").sum() == 2 * (2 * 2 + 1)  # ln_1, ln_2 per layer and ln_f, forward and backward
    assert not (te["op"] == "te.attention_prep").any()


@pytest.mark.parametrize("prec", ["fp32", "bf16"])
def test_an_attention_that_materialises_its_scores_keeps_their_kernels_under_transformer_engine(prec):
    # Hugging Face's eager attention: two matmuls with the scaling, mask, softmax and dropout of the scores between
    # them. TE fuses none of them into a layout kernel (its fused and flash attention take FP16/BF16 and are not what
    # this code calls); the rotary embedding before the first matmul is still TE's one kernel.
    for model in (dict(GPT2, attn_implementation="eager"), dict(LLAMA, attn_implementation="eager")):
        ops, *_ = _ops(model, prec)
        te = te_ops(ops)
        for phase in ("forward", "backward"):
            def scores(rows):  # the softmax kernels of the scores, batch x heads x 64 x 64 (not the loss's)
                shape = rows["output_shapes"].astype(str).str.split(";").str[0]
                return rows[(rows["phase"] == phase) & (rows["op_class"] == "softmax") & shape.str.endswith("x64x64")]

            eager, kept = scores(ops), scores(te)
            assert len(eager) == 2 and len(kept) == 2  # one per layer
            assert list(kept["bytes_read"]) == list(eager["bytes_read"])
        dropout = ops[ops["op"] == "aten.native_dropout"]
        assert len(te[te["op"] == "aten.native_dropout"]) == len(dropout)
        if model["model_type"] == "llama":
            assert (te["op"] == "te.attention_prep").sum() == 2 * 2  # the rotation, forward and backward, per layer
    # an attention through scaled_dot_product_attention has no score kernels to keep: TE's fused kernel runs it
    sdpa, *_ = _ops(dict(LLAMA, attn_implementation="sdpa"))
    assert not (te_ops(sdpa)["op_class"] == "softmax").any()


def test_fused_attention_at_flashattention3s_rate_on_hopper_only_under_transformer_engine():
    from perfmodel.datasets import gpu_spec, matmul_peak_tflops

    _, net, shape, dt, vocab = _ops(LLAMA)
    for gpu in ("H100", "A100"):
        spec = gpu_spec(gpu)
        peak = matmul_peak_tflops(spec, "bf16") * 1e12
        for stack, table in (("eager", FUSED_ATTENTION_EFFICIENCY), ("te", TE_FUSED_ATTENTION_EFFICIENCY)):
            w = step_work(net, shape, dt, vocab, batch_size=4, prec="bf16", optimizer="adam-fused", inference=False,
                          compile=stack).reset_index(drop=True)
            floor = fused_attention_floor_s(w, spec, "bf16")
            att = w["op"].str.contains("scaled_dot_product").to_numpy()
            rates = table["Hopper" if gpu == "H100" else "default"]
            eff = np.where(w["phase"].to_numpy() == "backward", rates["backward"], rates["forward"])
            assert att.any() and np.allclose(floor[att], w["flops"].to_numpy(float)[att] / (eff[att] * peak))
            assert (w["phase"][att] == "backward").any() and (w["phase"][att] == "forward").any()
    for phase in ("forward", "backward"):
        assert TE_FUSED_ATTENTION_EFFICIENCY["Hopper"][phase] > FUSED_ATTENTION_EFFICIENCY["Hopper"][phase]


def test_hopper_attention_rates_are_the_flashattention3_papers():
    """FlashAttention-3's Figures 5-6 on an H100 SXM5 (head dim 128, sequence 8k): FlashAttention-2's causal forward
    333 TFLOPS, cuDNN's 529; the causal backward the non-causal one (318, 518) times the forward's causal share."""
    fa2, cudnn = FUSED_ATTENTION_EFFICIENCY["Hopper"], TE_FUSED_ATTENTION_EFFICIENCY["Hopper"]
    assert fa2["forward"] * 989.4 == pytest.approx(333.0)
    assert fa2["backward"] * 989.4 == pytest.approx(318.0 * 333.0 / 370.0)
    assert cudnn["forward"] * 989.4 == pytest.approx(529.0)
    assert cudnn["backward"] * 989.4 == pytest.approx(518.0 * 529.0 / 600.0)
    for rates in (fa2, cudnn):  # the backward pass of a fused attention kernel is the slower one on Hopper
        assert rates["backward"] < rates["forward"]


def test_a_cnn_under_transformer_engine_keeps_its_layers():
    e, t = _predict("resnet-32", "A100", input_shape=None, batch_size=32), _predict("resnet-32", "A100", input_shape=None,
                                                                                  batch_size=32, stack="te")
    assert t["n_kernels"].iloc[0] <= e["n_kernels"].iloc[0]
    assert t["step_time_s"].iloc[0] <= e["step_time_s"].iloc[0]


def test_predict_memory_takes_the_same_stack_argument():
    a = pm.predict_memory(LLAMA, "H100", batch_size=4, input_shape=(64,), precision="bf16", stack="te")
    b = pm.predict_memory(LLAMA, "H100", batch_size=4, input_shape=(64,), precision="bf16")
    c = pm.predict_memory(LLAMA, "H100", batch_size=4, input_shape=(64,), precision="bf16", stack="compile")
    assert a["total_bytes"].iloc[0] < b["total_bytes"].iloc[0]  # TE's fused modules save less (tests/models/test_liger.py)
    # torch.compile: the tensors autograd saves, as eager's, but for the compiled loss, which keeps the BF16 logits
    # and writes their BF16 gradient where eager keeps the FP32 log-softmax and holds two FP32 gradients (and the
    # BF16 logits' block the allocator cannot reuse for them)
    tokens, V = 4 * 64, LLAMA["vocab_size"]
    assert b["total_bytes"].iloc[0] - c["total_bytes"].iloc[0] == 3 * tokens * V * 4 + tokens * V * 2 - 2 * tokens * V * 2
    with pytest.raises(ValueError, match="ask for two kernel families"):
        pm.predict_memory(LLAMA, "H100", batch_size=4, input_shape=(64,), precision="bf16", stack="te", compile=True)
