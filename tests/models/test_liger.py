"""``stack="liger"``: eager PyTorch with Liger Kernel's fused modules (RMSNorm / LayerNorm, rotary embedding, SwiGLU /
GeGLU, fused linear cross-entropy), as ``transformers``' ``use_liger_kernel=True`` patches a model — a stated model of
what those kernels read and write and what they save for the backward pass; nothing measured."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.step.trace import model_input, step_ops, te_ops

LLAMA = dict(model_type="llama", vocab_size=32000, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=False)
GPT2 = dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0, eos_token_id=0)
B, S = 2, 256


def _ops(model, shape=(S,)):
    net, shape, dt, vocab, _ = model_input(model, shape, None)
    return step_ops(net, shape, dt, vocab, batch_size=B, prec="bf16", optimizer="adam-fused", inference=False)


def _pred(model, stack=None, gpu="H100", shape=(S,), precision="bf16", **kw):
    w = pm.Workload(model, input_shape=shape, batch_size=B, precision=precision, optimizer="adam-fused", stack=stack, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(w, pm.Cluster(gpu), pm.Parallelism("dp"))


def test_liger_is_a_kernel_family_of_its_own():
    from perfmodel._workload import STACKS

    assert "liger" in STACKS
    assert pm.Workload(LLAMA, stack="liger").filled().stack == "liger"
    with pytest.raises(ValueError, match="ask for two kernel families"):
        pm.Workload(LLAMA, stack="liger", compile=True)


def test_liger_fuses_norms_rotary_swiglu_and_the_loss_and_keeps_pytorchs_attention():
    ops = _ops(LLAMA)
    lig, te = te_ops(ops, family="liger"), te_ops(ops)
    ops_l = lig["op"].astype(str)
    for role in ("norm", "mlp_act", "attention_prep", "cross_entropy"):
        assert (ops_l == f"liger.{role}").any(), role
    assert not ops_l.str.startswith("te.").any()
    # PyTorch's flash attention kernels stay (FlashAttention-2's rate), not TE's
    assert ops_l.str.contains("scaled_dot_product").sum() == 2 * LLAMA["num_hidden_layers"]
    # the loss: no log-softmax, no NLL kernel, no FP32 copy of the logits; one forward kernel, none in the backward pass
    assert not ops_l.isin(["aten._log_softmax", "aten._log_softmax_backward_data", "aten.nll_loss_forward"]).any()
    ce = lig[ops_l == "liger.cross_entropy"]
    assert list(ce["phase"].astype(str)) == ["forward"]
    logits = B * S * LLAMA["vocab_size"]
    assert ce["bytes_read"].iloc[0] == ce["bytes_written"].iloc[0] == logits * 2  # in place, in BF16
    # the contiguous copies around attention are Liger's too: only the rotary embedding is fused
    clones = lambda f: int(((f["op"].astype(str) == "aten.clone") & f["module"].astype(str).str.endswith("self_attn")).sum())
    assert clones(lig) == clones(ops) > clones(te)


def test_an_ungated_mlp_and_a_model_without_rotary_keep_their_eager_kernels():
    """GPT-2: Liger has no fused GELU MLP and there is no rotary embedding; its LayerNorms and its loss are fused."""
    ops = _ops(GPT2, (64,))
    lig = te_ops(ops, family="liger")
    names = lig["op"].astype(str)
    assert (names == "liger.norm").any() and (names == "liger.cross_entropy").any()
    assert not (names == "liger.mlp_act").any() and not (names == "liger.attention_prep").any()
    mlp = lambda f: int((f["module"].astype(str).str.contains(r"\.mlp") & (f["op_class"] == "elementwise")).sum())
    assert mlp(lig) == mlp(ops)


@pytest.mark.parametrize("gpu", ["H100", "A100"])
def test_liger_runs_fewer_kernels_than_eager_and_is_faster(gpu):
    e, lg = _pred(LLAMA, gpu=gpu), _pred(LLAMA, "liger", gpu=gpu)
    assert lg.step_time_s < e.step_time_s
    assert lg._row["n_kernels"] < e._row["n_kernels"] and lg.flops == e.flops
    assert "Liger" in lg.basis


def test_on_hopper_transformer_engines_attention_beats_ligers_at_long_sequences():
    """Liger keeps PyTorch's FlashAttention-2 kernels; TE's cuDNN attention runs at FlashAttention-3's rate on Hopper."""
    long = dict(LLAMA, max_position_embeddings=8192)
    assert _pred(long, "te", shape=(8192,)).step_time_s < _pred(long, "liger", shape=(8192,)).step_time_s


def test_liger_saves_less_than_eager_the_fused_loss_most_of_it():
    """Memory: Liger's RMSNorm saves its input and the per-row statistics, its SwiGLU the gate and up projections, and
    the fused linear cross-entropy neither the logits nor their FP32 log-softmax: it saves the hidden states' gradient
    and holds one chunk of logits at a time."""
    e, lg = _pred(LLAMA), _pred(LLAMA, "liger")
    logits_fp32 = B * S * LLAMA["vocab_size"] * 4
    saved = e.memory["activations_bytes"] - lg.memory["activations_bytes"]
    assert saved > logits_fp32  # at least the log-softmax output, and its two gradients at the start of the backward pass
    assert lg.memory["params_bytes"] == e.memory["params_bytes"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        basis = pm.predict_memory(LLAMA, "H100", input_shape=(S,), batch_size=B, precision="bf16", optimizer="adam-fused",
                                  stack="liger")["basis"].iloc[0]
    assert "Liger" in basis


def test_liger_at_fp8_is_torchaos_float8_and_refuses_transformer_engines_recipes():
    w = pm.Workload(LLAMA, input_shape=(S,), batch_size=B, precision="fp8", optimizer="adam-fused", stack="liger")
    assert w.filled().fp8_recipe == "tensorwise"
    from perfmodel.step.trace import step_work

    net, shape, dt, vocab, _ = model_input(LLAMA, (S,), None)
    work = step_work(net, shape, dt, vocab, batch_size=B, prec="fp8", optimizer=None, inference=False, compile="liger")
    assert work["fp8"].any() and (work["op"] == "float8_cast").any()  # torchao's casts, one per FP8 GEMM
    assert (work["op"] == "liger.cross_entropy").any()
    with pytest.raises(ValueError, match="Transformer Engine's"):
        pm.Workload(LLAMA, precision="fp8", stack="liger", fp8_recipe="delayed")


def test_the_command_line_takes_stack_liger(tmp_path, capsys):
    from perfmodel.cli import main

    cfg = tmp_path / "llama.json"
    cfg.write_text(json.dumps(LLAMA))
    assert main(["predict", str(cfg), "--gpus", "H100", "--input-shape", str(S), "--batch-size", str(B), "--precision",
                 "bf16", "--optimizer", "adam-fused", "--stack", "liger"]) == 0
    assert "Liger" in capsys.readouterr().out


def test_transformer_engines_fused_modules_save_less_than_eager_and_keep_the_logits_at_the_activations_size():
    """TE: the norms' FP32 copies and a gated MLP's activation are not saved, the loss keeps the BF16 logits (not the
    FP32 log-softmax) and its gradient is the transient; Liger keeps no logits at all."""
    e, t, lg = _pred(LLAMA), _pred(LLAMA, "te"), _pred(LLAMA, "liger")
    H, F, L, V = LLAMA["hidden_size"], LLAMA["intermediate_size"], LLAMA["num_hidden_layers"], LLAMA["vocab_size"]
    tokens = B * S
    fp32_norm_copies = (2 * L + 1) * tokens * H * 4  # two norms a layer and the final one
    activation_outputs = L * tokens * F * 2
    # the FP32 log-softmax, and its two gradients at the start of the backward pass, beside the BF16 logits' block
    eager_loss = 3 * tokens * V * 4 + tokens * V * 2
    te_loss = 2 * tokens * V * 2  # the BF16 logits, and their gradient
    assert e.memory["activations_bytes"] - t.memory["activations_bytes"] == pytest.approx(
        fp32_norm_copies + activation_outputs + eager_loss - te_loss, rel=1e-9)
    assert lg.memory["activations_bytes"] < t.memory["activations_bytes"]


@pytest.mark.parametrize("stack", ["te", "liger"])
def test_a_model_without_fused_modules_keeps_eagers_time_and_memory(stack):
    """A CNN has no norm, gated MLP or language-model loss that TE or Liger fuse: its step and memory are eager's."""
    kw = dict(batch_size=32, precision="bf16", optimizer="adam")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = pm.predict_memory("resnet-32", "H100", **kw)
        f = pm.predict_memory("resnet-32", "H100", stack=stack, **kw)
        te = pm.predict_step_time("resnet-32", "H100", **kw)
        tf = pm.predict_step_time("resnet-32", "H100", stack=stack, **kw)
    assert f["total_bytes"].iloc[0] == e["total_bytes"].iloc[0]
    assert tf["step_time_s"].iloc[0] == te["step_time_s"].iloc[0]


def test_liger_is_refused_under_megatron_and_a_layout_search_leaves_megatrons_layouts_out():
    from perfmodel.step.strategy import StrategyError

    w = pm.Workload(LLAMA, input_shape=(S,), batch_size=8, precision="bf16", optimizer="adam-fused", stack="liger")
    with pytest.raises(StrategyError, match="Liger Kernel patches Hugging Face models"):
        pm.predict(w, pm.Cluster("H100", n_gpus=4), pm.Parallelism("dp2-tp2", framework="megatron"))
    with pytest.raises(StrategyError, match="Liger Kernel patches Hugging Face models"):
        pm.predict_memory(LLAMA, "H100", input_shape=(S,), batch_size=8, n_gpus=4, strategy="dp2-tp2", framework="megatron",
                          stack="liger")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from perfmodel.planning import search_layouts

        found = search_layouts(w, pm.Cluster("H100", n_gpus=4))
    assert set(found["framework"]) == {"pytorch"}
    assert any("Liger" in r["reason"] for r in found.attrs["refused"])
