"""A mixture-of-experts model's experts run as one grouped GEMM (``aten._grouped_mm``, as Hugging Face's Mixtral,
Qwen-MoE and gpt-oss layers call them): it is counted (``2·M·K·N`` of the whole operands), timed as one GEMM per
expert over an even share of the routed tokens, refused under tensor parallelism (which perfmodel does not model for
experts; expert parallelism is tests/models/test_expert_parallel.py's), and the rule of thumb counts the parameters a
token passes through."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.features._counting import EXTRA_FORMULAS
from perfmodel.step.strategy import StrategyError

#: a small Mixtral: 8 experts, 2 per token
MIXTRAL = dict(model_type="mixtral", architectures=["MixtralForCausalLM"], hidden_size=128, intermediate_size=256,
               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, num_local_experts=8,
               num_experts_per_tok=2, vocab_size=512, max_position_embeddings=512, tie_word_embeddings=False)
SEQ, BATCH = 128, 4


def _brute_force_flops(a, b, offs):
    """2 x the multiply-adds of a grouped GEMM, group by group, with the groups ``offs`` cuts."""
    ends = [int(x) for x in offs]
    starts = [0, *ends[:-1]]
    total = 0
    for g, (lo, hi) in enumerate(zip(starts, ends)):
        if a.dim() == 2 and b.dim() == 3:  # rows of a cut
            total += 2 * (hi - lo) * a.shape[1] * b.shape[2]
        elif a.dim() == 2 and b.dim() == 2:  # the reduction cut
            total += 2 * a.shape[0] * (hi - lo) * b.shape[1]
        elif a.dim() == 3 and b.dim() == 2:  # the columns of b cut
            total += 2 * a.shape[1] * a.shape[2] * (hi - lo)
    if a.dim() == 3 and b.dim() == 3:
        total = 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
    return total


@pytest.mark.parametrize("a_shape,b_shape,offs", [
    ((48, 16), (3, 16, 32), (5, 30, 48)),       # the experts' forward: 48 routed tokens, uneven over 3 experts
    ((16, 48), (48, 32), (5, 30, 48)),          # their weight gradients: one token range per expert
    ((3, 16, 32), (32, 48), (8, 40, 48)),       # the columns cut
    ((3, 16, 32), (3, 32, 24), (16, 32, 48)),   # batched
])
def test_a_grouped_gemm_counts_every_row_reduction_and_column_once(a_shape, b_shape, offs):
    import torch

    a, b = torch.empty(a_shape), torch.empty(b_shape)
    formula = EXTRA_FORMULAS[torch.ops.aten._grouped_mm]
    assert formula(a_shape, b_shape, (len(offs),)) == _brute_force_flops(a, b, torch.tensor(offs))


def _work(strategy_free_model=MIXTRAL):
    from perfmodel.step import trace as wl

    net, shape, in_dtype, vocab, _, lay = wl.model_and_layout(strategy_free_model, (SEQ,), None)
    return wl.step_work(net, shape, in_dtype, vocab, batch_size=BATCH, prec="bf16", optimizer="adam-fused",
                        inference=False), lay


def test_the_experts_grouped_gemms_are_counted_and_timed_one_gemm_per_expert():
    work, lay = _work()
    assert lay.experts == 8
    g = work[work["op"] == "aten._grouped_mm"]
    tokens, k, h, ffn, layers = BATCH * SEQ, 2, 128, 256, 2
    # forward: the gate and up projections (h -> 2 ffn) and the down projection (ffn -> h) of every routed token
    forward = 2 * tokens * k * (h * 2 * ffn + ffn * h) * layers
    assert g.loc[g["phase"] == "forward", "flops"].sum() == forward
    assert g.loc[g["phase"] == "backward", "flops"].sum() == 2 * forward  # input and weight gradients
    fwd = g[g["phase"] == "forward"]
    assert (fwd["dim_b"] == 8).all() and (fwd["dim_m"] == tokens * k / 8).all()  # even routing, one GEMM per expert
    assert np.allclose(g["flops"], 2 * g["dim_b"] * g["dim_m"] * g["dim_n"] * g["dim_k"])


def test_a_mixture_of_experts_step_counts_its_experts_and_keeps_them_whole_beside_tensor_parallelism():
    from perfmodel.features._extract import UnsupportedOpsWarning
    from perfmodel.planning.layouts import layout_candidates

    kw = dict(input_shape=(SEQ,), batch_size=8, precision="bf16", optimizer="adam-fused")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        one = pm.predict_step_time(MIXTRAL, "H100", **kw).iloc[0]
        fsdp = pm.predict_step_time(MIXTRAL, "H100", n_gpus=8, strategy="fsdp", **kw).iloc[0]
    assert not [w for w in seen if issubclass(w.category, UnsupportedOpsWarning)]  # no compute left uncounted
    assert one["step_time_s"] > 0 and fsdp["step_time_s"] > 0
    for row in (one, fsdp):  # basis says how the experts were timed
        assert "the experts' grouped GEMMs timed as 8 GEMMs, one per expert, over an even share of the routed tokens" in row["basis"]
    dense = pm.predict_step_time(dict(MIXTRAL, model_type="mistral", architectures=["MistralForCausalLM"]), "H100", **kw).iloc[0]
    assert "grouped GEMMs" not in dense["basis"]
    with warnings.catch_warnings():  # tensor parallel beside whole experts (expert tensor parallelism 1)
        warnings.simplefilter("ignore")
        two_d = pm.predict_step_time(MIXTRAL, "H100", n_gpus=8, strategy="fsdp4-tp2", **kw).iloc[0]
    assert "each routed expert whole on its rank beside tensor parallelism over 2" in two_d["basis"]
    with pytest.raises(StrategyError, match=r"is a mixture of experts \(8 routed experts\).*sequence parallelism"):
        pm.predict_step_time(MIXTRAL, "H100", n_gpus=8, strategy="dp4-tp2", **kw)  # PyTorch's DDP + TP: none
    cands = layout_candidates(pm.Workload(MIXTRAL, **kw), pm.Cluster("H100", n_gpus=8))
    assert any(pm.step.strategy.parse_strategy(p.strategy, 8)["tp"] > 1 for p in cands)


def test_the_rule_of_thumb_counts_the_parameters_a_token_passes_through():
    from perfmodel.step import trace as wl
    from perfmodel.step.baselines import matmul_params

    net = wl.model_and_layout(MIXTRAL, (SEQ,), None)[0]
    experts = sum(p.numel() for n, p in net.named_parameters() if ".experts." in n)
    embedding = MIXTRAL["vocab_size"] * MIXTRAL["hidden_size"]
    dense = sum(p.numel() for p in net.parameters()) - experts - embedding
    assert experts > 0 and matmul_params(net) == dense + experts * 2 // 8


def test_the_shipped_mixtral_example_is_counted_at_its_active_parameters():
    """examples/mixtral-8x7b.json (Mixtral 8x7B's published shape): the rule of thumb's N is the weights a token
    passes through, two of the eight experts of every layer, about 12.7 of its 46.7 billion."""
    import json
    from pathlib import Path

    from perfmodel.step import trace as wl
    from perfmodel.step.baselines import matmul_params

    cfg = json.loads((Path(__file__).resolve().parents[2] / "examples" / "mixtral-8x7b.json").read_text())
    h, ffn = cfg["hidden_size"], cfg["intermediate_size"]
    kv = cfg["num_key_value_heads"] * (h // cfg["num_attention_heads"])
    attention = 2 * h * h + 2 * h * kv
    experts = cfg["num_experts_per_tok"] * 3 * h * ffn
    router, norms = h * cfg["num_local_experts"], 2 * h
    active = cfg["num_hidden_layers"] * (attention + experts + router + norms) + h + h * cfg["vocab_size"]
    net = wl.model_and_layout(cfg, (128,), None)[0]
    assert matmul_params(net) == active

