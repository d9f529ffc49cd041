"""Memory per GPU: parts on hand-computed cases, monotone in the batch, sharding never adds parameter memory, fits
against the catalog, and clear errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel as pm
from perfmodel.datasets import GPUSpec, UnknownNameError
from perfmodel.step.strategy import StrategyError

TINY_GPT2 = dict(model_type="gpt2", n_layer=4, n_embd=64, n_head=4, vocab_size=512, n_positions=128)
# per layer: c_attn 64x192 + 192, c_proj 64x64 + 64, c_fc 64x256 + 256, c_proj 256x64 + 64, two layer norms; embeddings
# (token 512x64 tied with the output, position 128x64) and the final norm
PARAMS = 4 * (64 * 192 + 192 + 64 * 64 + 64 + 64 * 256 + 256 + 256 * 64 + 64 + 4 * 64) + 512 * 64 + 128 * 64 + 2 * 64


def _mem(**kw):
    kw.setdefault("input_shape", (32,))
    return pm.predict_memory(TINY_GPT2, "L4", **kw).iloc[0]


def test_parts_on_one_gpu():
    r = _mem(batch_size=2)
    assert r["params_bytes"] == 4 * PARAMS == r["grads_bytes"]
    assert r["optimizer_bytes"] == 8 * PARAMS  # Adam: two FP32 moments
    assert r["total_bytes"] == pytest.approx(r[["params_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes"]].sum())
    assert r["capacity_bytes"] == 24 * 2**30 and r["fits"]
    assert _mem(batch_size=2, optimizer="sgd-momentum")["optimizer_bytes"] == 4 * PARAMS
    half = _mem(batch_size=2, precision="bf16")
    assert half["params_bytes"] == 2 * PARAMS and half["optimizer_bytes"] == (8 + 4) * PARAMS  # plus the FP32 master copy
    assert half["activations_bytes"] < r["activations_bytes"]
    ckpt = _mem(batch_size=2, activation_checkpointing=True)
    assert 0 < ckpt["activations_bytes"] < r["activations_bytes"]


def test_fits_against_the_gpu_memory():
    tiny_gpu = GPUSpec("tiny", fp32_peak_tflops=1.0, memory_bandwidth_gb_per_s=100.0, memory_gib=0.001, sm_count=1)
    r = pm.predict_memory(TINY_GPT2, ["L4", tiny_gpu], input_shape=(32,), batch_size=2)
    assert list(r["fits"]) == [True, False] and r["capacity_bytes"].iloc[1] == 0.001 * 2**30


@settings(max_examples=4, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(["dp", "fsdp", "tp", "pp"]))
def test_memory_is_monotone_in_the_batch(a, b, strategy):
    small, large = sorted((a, b))
    m1 = _mem(batch_size=2 * small, n_gpus=2, strategy=strategy)
    m2 = _mem(batch_size=2 * large, n_gpus=2, strategy=strategy)
    assert m1["total_bytes"] <= m2["total_bytes"] and m1["activations_bytes"] <= m2["activations_bytes"]


@settings(max_examples=4, deadline=None)
@given(st.sampled_from([2, 4]), st.sampled_from(["fsdp", "tp", "pp"]), st.integers(1, 2))
def test_sharding_never_uses_more_parameter_memory_than_dp(n, strategy, per_gpu):
    dp = _mem(batch_size=n * per_gpu, n_gpus=n, strategy="dp")
    other = _mem(batch_size=n * per_gpu, n_gpus=n, strategy=strategy)
    assert other["params_bytes"] <= dp["params_bytes"] and other["optimizer_bytes"] <= dp["optimizer_bytes"]


def test_errors():
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy 'zero3'"):
        _mem(batch_size=4, n_gpus=2, strategy="zero3")
    with pytest.raises(StrategyError, match=r"strategy='dp': the global batch 3 does not split over 2 GPUs"):
        _mem(batch_size=3, n_gpus=2)
    with pytest.raises(StrategyError, match=r"strategy='tp' over 3 GPUs does not divide gpt2: attention heads = 4, hidden size = 64"):
        _mem(batch_size=3, n_gpus=3, strategy="tp")
    with pytest.raises(StrategyError, match=r"strategy='pp' over 8 stages needs at least 8 layers; gpt2 has 4"):
        _mem(batch_size=8, n_gpus=8, strategy="pp")
    with pytest.raises(ValueError, match=r"optimizer must be one of \['adam', 'adam-fused', 'sgd-momentum', 'sgd', None\]; got 'lion'"):
        _mem(batch_size=2, optimizer="lion")
    with pytest.raises(StrategyError, match=r"micro_batches=3 does not divide the per-GPU batch 2"):
        _mem(batch_size=2, micro_batches=3)


def test_pytorch_sequence_parallelism_keeps_each_blocks_gathered_input():
    """PyTorch's sequence parallelism (torchtitan's fsdp x tp) all-gathers a block's input before its column-parallel
    linears and their matmuls save it whole; Megatron saves the shard and gathers it again in the backward pass."""
    import torch

    from perfmodel.step.memory import _gathered_block_inputs, _saved_for
    from perfmodel.step.trace import model_and_layout, op_layer

    net, shape, in_dtype, _, _, lay = model_and_layout(TINY_GPT2, (32,), None)
    saved, _ = _saved_for(net, torch.bfloat16, (2, *shape), in_dtype)
    layer = op_layer(saved.assign(phase="forward"), lay.n_layers)
    g = _gathered_block_inputs(saved, layer, lay, 2)
    mods = saved["module"].astype(str)[g]
    # one per norm before a block (ln_1, ln_2) per layer, each the bf16 hidden-sized output
    assert len(mods) == 2 * lay.n_layers and all(m.rsplit(".", 1)[-1] in ("ln_1", "ln_2") for m in mods)
    assert (saved["bytes"][g] == 2 * 32 * 64 * 2).all()

def test_the_gathered_block_inputs_add_their_whole_size(monkeypatch):
    from perfmodel.step import memory
    from perfmodel.step.kernels import clear_trace_cache
    from perfmodel.step.trace import model_and_layout

    lay = model_and_layout(TINY_GPT2, (32,), None)[-1]
    kw = dict(input_shape=(32,), batch_size=4, precision="bf16", n_gpus=4, strategy="fsdp2-tp2")
    with_gather = pm.predict_memory(TINY_GPT2, "H100", **kw).iloc[0]
    monkeypatch.setattr(memory, "_gathered_block_inputs", lambda saved, *a: np.zeros(len(saved), dtype=bool))
    clear_trace_cache()  # the saved rows and what is derived from them are memoised per module
    shard_only = pm.predict_memory(TINY_GPT2, "H100", **kw).iloc[0]
    # the rank's micro-batch (4 sequences over dp 2) of 32 tokens x 64 in BF16, once per norm before a block, whole
    extra = 2 * lay.n_layers * 2 * 32 * 64 * 2
    assert with_gather["activations_bytes"] - shard_only["activations_bytes"] == pytest.approx(extra)
