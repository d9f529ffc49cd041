"""Combinations of parallel strategies (Megatron's dp x tp x pp): the spelling and its errors, identity with the single
strategies, the communication of each group on hand-computed cases, a link per group, memory of the combinations, the
explorer, and the compute-only limit of an infinitely fast link."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import perfmodel as pm
from perfmodel.datasets import UnknownNameError, neusight_model_config
from perfmodel.models import ExtrapolationWarning
from perfmodel.step.one_gpu import add_recompute
from perfmodel.step.collectives import Interconnect, allgather_time, allreduce_time, p2p_time, resolve_interconnect
from perfmodel.step.strategy import (StrategyError, check_strategy_name, parse_strategy, resolve_links,
                                       strategy_combinations)
from perfmodel.step.trace import model_layout
from perfmodel.planning import explore_strategies, plot_strategies

#: 4 layers, 4 heads: tp up to 4, pp up to 4
TINY_GPT2 = dict(model_type="gpt2", n_layer=4, n_embd=64, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0,
                 eos_token_id=0)
SHAPE = (32,)
# per layer: what tensor parallelism splits (c_attn 64x192 + 192, attn c_proj 64x64 + 64, c_fc 64x256 + 256, mlp c_proj
# 256x64 + 64) and what it keeps whole (two layer norms); outside: the token embedding (vocabulary-parallel, tied with the
# output) split, the position embedding and the final norm whole
SPLIT = 4 * (64 * 192 + 192 + 64 * 64 + 64 + 64 * 256 + 256 + 256 * 64 + 64) + 512 * 64
WHOLE = 4 * (2 * 2 * 64) + 128 * 64 + 2 * 64
#: a link with round numbers: 100 GB/s per direction, 10 us per step, no efficiency loss
LINK = Interconnect("test", 100.0, 1e-5, efficiency=1.0)


def _step(strategy, n_gpus=4, **kw):
    kw.setdefault("input_shape", SHAPE)
    kw.setdefault("batch_size", 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        return pm.predict_step_time(kw.pop("model", TINY_GPT2), kw.pop("gpus", "A100"), n_gpus=n_gpus, strategy=strategy, **kw)


def _mem(strategy, n_gpus=4, **kw):
    kw.setdefault("input_shape", SHAPE)
    kw.setdefault("batch_size", 8)
    return pm.predict_memory(TINY_GPT2, kw.pop("gpu", "L4"), n_gpus=n_gpus, strategy=strategy, **kw).iloc[0]


# -- the spelling ---------------------------------------------------------------------------------------------------

def test_parse_strategy_spellings():
    assert parse_strategy("dp2-tp2-pp2", 8) == dict(dp=2, tp=2, pp=2, cp=1, fsdp=False, name="dp2-tp2-pp2", ep=1)
    assert parse_strategy("tp4-pp2", 8) == dict(dp=1, tp=4, pp=2, cp=1, fsdp=False, name="tp4-pp2", ep=1)
    # order, case and separators do not matter; the factor without a degree takes the rest
    assert parse_strategy("PP2_TP2 dp", 8) == dict(dp=2, tp=2, pp=2, cp=1, fsdp=False, name="dp2-tp2-pp2", ep=1)
    assert parse_strategy("dp-tp2", 8) == dict(dp=4, tp=2, pp=1, cp=1, fsdp=False, name="dp4-tp2", ep=1)
    assert parse_strategy({"dp": 2, "tp": 2}, 4)["name"] == "dp2-tp2"
    assert parse_strategy({"tp": 2, "dp": None}, 8)["name"] == "dp4-tp2"
    # a bare name spans all the GPUs; a single factor spelled with all the GPUs is that strategy
    assert parse_strategy("tp", 4) == dict(dp=1, tp=4, pp=1, cp=1, fsdp=False, name="tp", ep=1)
    assert parse_strategy("fsdp", 4) == dict(dp=4, tp=1, pp=1, cp=1, fsdp=True, name="fsdp", ep=1)
    for spelled, bare in (("dp4", "dp"), ("tp4", "tp"), ("pp4", "pp"), ("dp1-tp4", "tp"), ("fsdp4", "fsdp"), ({"pp": 4}, "pp")):
        assert parse_strategy(spelled, 4)["name"] == bare
    assert parse_strategy("dp1-tp1", 1)["name"] == "dp" and parse_strategy("pp", 1)["name"] == "pp"
    # check_strategy_name: the spelling only, canonical order, bare names unchanged
    assert check_strategy_name(" TP ") == "tp"
    assert check_strategy_name("pp2-tp2-dp") == "dp-tp2-pp2"
    assert check_strategy_name({"pp": 2, "dp": 2}) == "dp2-pp2"


def test_parse_strategy_errors():
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy 'zero'\. Expected one of: dp, fsdp, tp, pp .* such as "
                                               r"'dp2-tp2-pp2'"):
        check_strategy_name("zero")
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy 'dp2-sp2': factor 'sp2' is not one of dp, fsdp, cp, ep, tp, pp"):
        parse_strategy("dp2-sp2", 4)
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy \{'dp': 2, 'sp': 2\}: key 'sp' is not one of"):
        parse_strategy({"dp": 2, "sp": 2}, 4)
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy \{\}: an empty dict"):
        check_strategy_name({})
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy 4"):
        check_strategy_name(4)
    with pytest.raises(StrategyError, match=r"strategy='dp2-tp2': the degrees multiply to dp2 x tp2 = 4, but n_gpus = 8\. Make "
                                            r"their product n_gpus, or leave one factor without a degree .* \(e\.g\. 'dp-tp2'\)"):
        parse_strategy("dp2-tp2", 8)
    with pytest.raises(StrategyError, match=r"strategy='dp-tp4' on 6 GPUs: the fixed degrees \(tp4 = 4\) do not divide n_gpus = 6"):
        parse_strategy("dp-tp4", 6)
    with pytest.raises(StrategyError, match=r"names tp more than once"):
        check_strategy_name("tp2-tp2")
    with pytest.raises(StrategyError, match=r"combines dp and fsdp"):
        check_strategy_name("dp2-fsdp2")
    # fsdp combines with pp (torchtitan's 3D); cp with fsdp (its parameters sharded over dp x cp) or with dp (DDP or
    # Megatron's distributed optimizer reduce the gradients over dp x cp)
    assert parse_strategy("fsdp2-pp2", 4) == dict(dp=2, tp=1, pp=2, cp=1, fsdp=True, name="fsdp2-pp2", ep=1)
    assert parse_strategy("fsdp1-cp8", 8) == dict(dp=1, tp=1, pp=1, cp=8, fsdp=True, name="fsdp1-cp8", ep=1)
    assert parse_strategy("pp8-tp8-cp2-fsdp4", 512)["name"] == "fsdp4-cp2-tp8-pp8"
    assert parse_strategy("dp2-cp2", 4) == dict(dp=2, tp=1, pp=1, cp=2, fsdp=False, name="dp2-cp2", ep=1)
    assert parse_strategy("cp", 8) == dict(dp=1, tp=1, pp=1, cp=8, fsdp=False, name="dp1-cp8", ep=1)
    assert parse_strategy("dp8-cp2-tp8-pp8", 1024)["name"] == "dp8-cp2-tp8-pp8"
    assert parse_strategy("fsdp2-tp2", 4) == dict(dp=2, tp=2, pp=1, cp=1, fsdp=True, name="fsdp2-tp2", ep=1)
    with pytest.raises(StrategyError, match=r"leaves more than one degree open"):
        check_strategy_name("dp-tp")
    with pytest.raises(StrategyError, match=r"factor 'tp0' has degree 0; degrees must be positive"):
        check_strategy_name("dp2-tp0")
    with pytest.raises(StrategyError, match=r"the degree of 'tp' must be a positive int .*; got 2\.5"):
        check_strategy_name({"dp": 2, "tp": 2.5})
    with pytest.raises(ValueError, match=r"n_gpus must be a positive int; got 0\."):
        parse_strategy("dp", 0)


@pytest.mark.parametrize("n", [1, 2, 6, 8, 12, 16])
def test_strategy_combinations_are_every_factorisation(n):
    combos = strategy_combinations(n)
    assert len(set(combos)) == len(combos)
    triples = {(d, t, n // d // t) for d in range(1, n + 1) for t in range(1, n + 1) if n % d == 0 and (n // d) % t == 0}
    expected = {tr for tr in triples if sum(k > 1 for k in tr) >= 2}
    got = set()
    for c in combos:
        deg = parse_strategy(c, n)
        assert deg["dp"] * deg["tp"] * deg["pp"] == n and deg["name"] == c
        got.add((deg["dp"], deg["tp"], deg["pp"]))
    assert got == expected


# -- identity with the single strategies -----------------------------------------------------------------------------

@pytest.mark.parametrize("spelled, bare, m", [("dp4", "dp", 2), ("tp4", "tp", 1), ("pp4", "pp", 4), ({"tp": 4}, "tp", 2),
                                              ("dp4-tp1-pp1", "dp", 1), ("fsdp4", "fsdp", 1), ("dp1-pp4", "pp", 2)])
def test_a_single_strategy_spelled_with_its_degree_is_that_strategy_to_the_bit(spelled, bare, m):
    kw = dict(micro_batches=m, optimizer="adam-fused", gpus=["A100", "T4"], overlap_grad_reduce=False)
    pd.testing.assert_frame_equal(_step(spelled, **kw), _step(bare, **kw), check_exact=True)
    for part in ("params_bytes", "activations_bytes", "total_bytes"):
        assert _mem(spelled, micro_batches=m)[part] == _mem(bare, micro_batches=m)[part]


# -- communication of each group --------------------------------------------------------------------------------------

def test_dp2_tp2_has_the_tp_comm_of_tp2_and_a_dp_all_reduce_of_half_the_split_parameters():
    lay = model_layout(__import__("perfmodel.zoo.hf", fromlist=["build"]).build(TINY_GPT2))
    assert sum(v for k, v in lay.param_numel.items() if lay.param_split[k]) == SPLIT and lay.params == SPLIT + WHOLE
    m = 2
    r = _step("dp2-tp2", interconnect=LINK, micro_batches=m, overlap_grad_reduce=False).iloc[0]
    # each replica: batch 8 / 2 = 4, micro-batch 2, tokens 2 x 32; 4 all-reduces per layer + 2 of tokens x hidden FP32
    tp = m * (4 * 4 + 2) * allreduce_time(2 * 32 * 64 * 4, 2, LINK)
    dp = allreduce_time((SPLIT / 2 + WHOLE) * 4, 2, LINK)
    assert r["comm_s"] == pytest.approx(tp + dp, rel=1e-12) and r["comm_total_s"] == pytest.approx(tp + dp, rel=1e-12)
    assert allreduce_time((SPLIT + WHOLE) * 4 / 2, 2, LINK) <= dp < allreduce_time((SPLIT + WHOLE) * 4, 2, LINK)
    assert r["step_time_s"] == pytest.approx(r["compute_s"] + r["comm_s"], rel=1e-12)
    # the tensor-parallel compute of one GPU is that of tp2 on 2 GPUs at the replica's batch
    tp2 = _step("tp", n_gpus=2, batch_size=4, interconnect=LINK, micro_batches=m, overlap_grad_reduce=False).iloc[0]
    assert r["compute_s"] == pytest.approx(tp2["compute_s"], rel=1e-12)
    assert tp2["comm_s"] == pytest.approx(tp, rel=1e-12)
    # overlapped with the backward pass (DDP buckets): never more than after it
    over = _step("dp2-tp2", interconnect=LINK, micro_batches=m).iloc[0]
    assert tp <= over["comm_s"] <= r["comm_s"]


def test_pipeline_combinations_send_split_activations_and_reduce_each_stage():
    m = 4
    tp_pp = _step("tp2-pp2", interconnect=LINK, micro_batches=m).iloc[0]
    pp = _step("pp", n_gpus=2, interconnect=LINK, micro_batches=m).iloc[0]
    # tensor parallel inside each stage: each GPU computes half the split work. This tiny model is launch-bound (every
    # kernel near the floor), where halving a 64-wide GEMM saves no time — the trees fitted on the A100-PCIe-40GB's
    # own measurements (which the A100 SXM4 is no slower than) give tp2-pp2 0.5 % more — so its time is checked on a
    # model whose GEMMs bound the step
    assert tp_pp["bubble_s"] > 0 and tp_pp["flops"] < 0.51 * pp["flops"]
    wide = dict(TINY_GPT2, n_embd=1024, n_head=16)
    assert (_step("tp2-pp2", model=wide, input_shape=(128,), batch_size=32, interconnect=LINK, micro_batches=m).iloc[0]["compute_s"]
            < 0.6 * _step("pp", model=wide, n_gpus=2, input_shape=(128,), batch_size=32, interconnect=LINK, micro_batches=m).iloc[0]["compute_s"])
    act = 2 * 32 * 64 * 4  # micro-batch 8 / 4 = 2 samples of 32 tokens, hidden 64, FP32
    hop = p2p_time(act / 2, LINK) + allgather_time(act, 2, LINK)
    # per micro-batch of each stage: 2 layers x 4 all-reduces + the embedding's (first) or the vocabulary projection's (last)
    tp_per_stage = (4 * 2 + 1) * allreduce_time(act, 2, LINK)
    tied = allreduce_time(512 * 64 * 4 / 2, 2, LINK)
    assert tp_pp["comm_s"] == pytest.approx(2 * hop * (1 + (m - 1)) + tied + (2 + (m - 1)) * tp_per_stage, rel=1e-9)
    # dp over two pipelines: the gradients of the slowest stage all-reduced after its last backward pass
    dp_pp = _step("dp2-pp2", interconnect=LINK, micro_batches=2, overlap_grad_reduce=False).iloc[0]
    pp2 = _step("pp", n_gpus=2, batch_size=4, interconnect=LINK, micro_batches=2, overlap_grad_reduce=False).iloc[0]
    assert dp_pp["bubble_s"] == pytest.approx(pp2["bubble_s"], rel=1e-12)
    assert dp_pp["step_time_s"] > pp2["step_time_s"]
    stage_largest = max(2 * (SPLIT - 512 * 64 + WHOLE - 128 * 64 - 2 * 64) / 4 + 512 * 64 + 128 * 64,
                        2 * (SPLIT - 512 * 64 + WHOLE - 128 * 64 - 2 * 64) / 4 + 512 * 64 + 2 * 64)
    assert dp_pp["step_time_s"] - pp2["step_time_s"] <= allreduce_time(stage_largest * 4, 2, LINK) * (1 + 1e-9)
    # more micro-batches: a smaller bubble share
    one = _step("tp2-pp2", interconnect=LINK, micro_batches=1).iloc[0]
    assert tp_pp["bubble_s"] / tp_pp["step_time_s"] < one["bubble_s"] / one["step_time_s"]


def test_a_link_per_group():
    same = _step("dp2-tp2", interconnect={"tp": "pcie4", "pp": "pcie4", "dp": "pcie4"})
    pd.testing.assert_frame_equal(same, _step("dp2-tp2", interconnect="pcie4"), check_exact=True)
    fast_tp = _step("dp2-tp2", interconnect={"tp": "nvlink", "dp": "ethernet-25g"}, overlap_grad_reduce=False).iloc[0]
    slow_all = _step("dp2-tp2", interconnect="ethernet-25g", overlap_grad_reduce=False).iloc[0]
    fast_all = _step("dp2-tp2", interconnect="nvlink", overlap_grad_reduce=False).iloc[0]
    assert fast_all["comm_s"] < fast_tp["comm_s"] < slow_all["comm_s"]
    # the dict's tp link carries exactly the tp all-reduces, its dp link the gradients
    nv, eth = resolve_interconnect("nvlink", "A100"), resolve_interconnect("ethernet-25g")
    tp = (4 * 4 + 2) * allreduce_time(4 * 32 * 64 * 4, 2, nv)
    assert fast_tp["comm_s"] == pytest.approx(tp + allreduce_time((SPLIT / 2 + WHOLE) * 4, 2, eth), rel=1e-12)
    assert "tp: nvlink (A100)" in fast_tp["interconnect"] and "dp: ethernet-25g" in fast_tp["interconnect"]
    # a single strategy takes its own group's link from the dict
    pd.testing.assert_frame_equal(_step("tp", interconnect={"tp": "pcie4", "dp": "ethernet-25g"}), _step("tp", interconnect="pcie4"))
    assert resolve_links(None, "A100")["pp"].name == "nvlink (A100)"
    with pytest.raises(UnknownNameError, match=r"interconnect dict has unknown group\(s\) \['sp'\]; expected keys among"):
        _step("dp2-tp2", interconnect={"sp": "nvlink"})
    with pytest.raises(UnknownNameError, match=r"Unknown interconnect 'warp'"):
        _step("dp2-tp2", interconnect={"tp": "warp"})
    with pytest.raises(TypeError, match=r"resolve_interconnect gives one link; a dict of links per process group"):
        resolve_interconnect({"tp": "nvlink"}, "A100")


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(["dp2-tp2", "dp4", "tp4", "dp2-pp2", "tp2-pp2", "dp-tp2-pp2"]), st.sampled_from([1, 2]),
       st.booleans())
def test_an_infinitely_fast_link_leaves_the_compute(strategy, m, overlap):
    n = 8 if strategy.count("-") == 2 else 4
    instant = Interconnect("instant", 1e12, 0.0, efficiency=1.0)
    r = _step(strategy, n_gpus=n, batch_size=16, interconnect=instant, micro_batches=m, overlap_grad_reduce=overlap).iloc[0]
    assert r["comm_s"] == pytest.approx(0.0, abs=1e-9 * r["step_time_s"])
    assert r["step_time_s"] == pytest.approx(r["compute_s"] + r["bubble_s"], rel=1e-9)
    slow = _step(strategy, n_gpus=n, batch_size=16, interconnect="ethernet-25g", micro_batches=m, overlap_grad_reduce=overlap).iloc[0]
    assert slow["step_time_s"] > r["step_time_s"]
    if "pp" not in strategy:  # (a pipeline's bubble_s holds the first micro-batch's sends: compute_s moves with the link)
        assert slow["compute_s"] == pytest.approx(r["compute_s"], rel=1e-9)


def test_activation_checkpointing_of_a_pipeline_combination_grows_every_slot():
    r = _step("dp2-tp2-pp2", n_gpus=8, micro_batches=2)
    c = add_recompute(r).iloc[0]
    f, m, p = r["forward_s"].iloc[0], 2, 2
    assert c["step_time_s"] - r["step_time_s"].iloc[0] == pytest.approx((m + p - 1) * f / m, rel=1e-12)
    assert c["bubble_s"] - r["bubble_s"].iloc[0] == pytest.approx((p - 1) * f / m, rel=1e-12)
    flat = _step("dp2-tp2", micro_batches=2)
    assert add_recompute(flat)["step_time_s"].iloc[0] - flat["step_time_s"].iloc[0] == pytest.approx(flat["forward_s"].iloc[0])


def test_step_time_errors_of_combinations():
    with pytest.raises(StrategyError, match=r"strategy='dp4-tp2': the global batch 6 does not split over its 4 data-parallel "
                                            r"replicas\. Use a batch_size that is a multiple of 4 \(e\.g\. 4 or 8\)\."):
        _step("dp-tp2", n_gpus=8, batch_size=6)
    with pytest.raises(StrategyError, match=r"strategy='dp2-tp2': the per-replica batch 4 \(batch_size / dp\) does not split "
                                            r"into micro_batches=3"):
        _step("dp2-tp2", micro_batches=3)
    with pytest.raises(StrategyError, match=r"strategy='tp2-pp2': the global batch 8 does not split into micro_batches=3"):
        _step("tp2-pp2", micro_batches=3)
    with pytest.raises(StrategyError, match=r"strategy='tp8-pp2': tensor parallel over 8 GPUs does not divide gpt2: attention "
                                            r"heads = 4 not divisible by 8\. Use a tp degree that divides them\."):
        _step("tp8-pp2", n_gpus=16)
    with pytest.raises(StrategyError, match=r"strategy='dp2-pp8': 8 pipeline stages need at least 8 layers; gpt2 has 4"):
        _step("dp2-pp8", n_gpus=16, batch_size=16)
    with pytest.raises(StrategyError, match=r"the degrees multiply to dp2 x tp2 = 4, but n_gpus = 8"):
        _step("dp2-tp2", n_gpus=8)
    with pytest.raises(StrategyError, match=r"strategy='dp2-tp2' splits attention heads and hidden columns, but resnet-32 has "
                                            r"no config"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            pm.predict_step_time("resnet-32", "A100", n_gpus=4, strategy="dp2-tp2", batch_size=8)


# -- memory -------------------------------------------------------------------------------------------------------------

def test_memory_of_combinations_on_hand_computed_parts():
    r = _mem("dp2-tp2", optimizer="adam")
    rank = SPLIT / 2 + WHOLE
    assert r["params_bytes"] == 4 * rank == r["grads_bytes"] and r["optimizer_bytes"] == 8 * rank
    assert r["strategy"] == "dp2-tp2"
    # dp replicates: the parameters of tp2 on 2 GPUs, the activations of its per-replica batch
    tp2 = _mem("tp", n_gpus=2, batch_size=4, optimizer="adam")
    assert r["params_bytes"] == tp2["params_bytes"] and r["activations_bytes"] == tp2["activations_bytes"]
    # tp2-pp2: the largest stage's parameters with the split ones halved
    t = _mem("tp2-pp2", optimizer="adam")
    p = _mem("pp", n_gpus=2, optimizer="adam")
    assert t["params_bytes"] < p["params_bytes"] < _mem("dp", optimizer="adam")["params_bytes"]
    assert _mem("dp2-pp2", micro_batches=2)["params_bytes"] == _mem("pp", n_gpus=2, batch_size=4, micro_batches=2)["params_bytes"]


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(["dp2-tp2", "dp2-pp2", "tp2-pp2", "dp-tp2-pp2"]), st.integers(1, 3), st.integers(1, 3))
def test_memory_of_combinations_is_monotone(strategy, a, b):
    n = 8 if strategy.count("-") == 2 else 4
    small, large = sorted((a, b))
    m1 = _mem(strategy, n_gpus=n, batch_size=2 * n * small)
    m2 = _mem(strategy, n_gpus=n, batch_size=2 * n * large)
    assert m1["total_bytes"] <= m2["total_bytes"] and m1["activations_bytes"] <= m2["activations_bytes"]
    # never more parameter memory than plain data parallelism on the same GPUs
    dp = _mem("dp", n_gpus=n, batch_size=2 * n * small)
    assert m1["params_bytes"] < dp["params_bytes"] and m1["optimizer_bytes"] < dp["optimizer_bytes"]
    # more micro-batches in the pipeline: never more activation memory
    if "pp" in strategy:
        one = _mem(strategy, n_gpus=n, batch_size=2 * n * small, micro_batches=1)
        more = _mem(strategy, n_gpus=n, batch_size=2 * n * small, micro_batches=2)
        assert more["activations_bytes"] <= one["activations_bytes"]
        # unsaid, a pipeline runs micro-batches of one sequence (the frameworks' default): the fewest activations
        assert m1["activations_bytes"] <= more["activations_bytes"]


def test_tp2_pp2_fits_a_large_model_where_dp4_does_not():
    cfg = neusight_model_config("gpt2_large")  # 36 layers, hidden 1280, 20 heads: about 774 M parameters
    kw = dict(input_shape=(1024,), batch_size=4, n_gpus=4, optimizer="adam")
    dp = pm.predict_memory(cfg, "T4", strategy="dp", **kw).iloc[0]
    combo = pm.predict_memory(cfg, "T4", strategy="tp2-pp2", micro_batches=4, **kw).iloc[0]
    assert not dp["fits"] and combo["fits"]
    assert dp["total_bytes"] > dp["capacity_bytes"] > combo["total_bytes"]
    # each GPU keeps about a quarter of the parameters (a stage of 18 layers, the split ones halved; embeddings on the ends)
    assert 0.2 < combo["params_bytes"] / dp["params_bytes"] < 0.35


def test_memory_errors_of_combinations():
    with pytest.raises(StrategyError, match=r"strategy='dp2-tp2': the global batch 3 does not split over its 2 data-parallel"):
        _mem("dp2-tp2", batch_size=3)
    with pytest.raises(StrategyError, match=r"strategy='dp2-pp2': micro_batches=3 does not divide the per-replica batch 4"):
        _mem("dp2-pp2", micro_batches=3)
    with pytest.raises(StrategyError, match=r"strategy='tp8-pp2': tensor parallel over 8 GPUs does not divide gpt2"):
        _mem("tp8-pp2", n_gpus=16, batch_size=16)
    with pytest.raises(StrategyError, match=r"strategy='tp2-pp8': 8 pipeline stages need at least 8 layers; gpt2 has 4"):
        _mem("tp2-pp8", n_gpus=16, batch_size=16)
    with pytest.raises(StrategyError, match=r"the degrees multiply to tp2 x pp2 = 4, but n_gpus = 8"):
        _mem("tp2-pp2", n_gpus=8)


# -- the explorer ---------------------------------------------------------------------------------------------------------

def test_explorer_tries_every_factorisation_and_plots_them():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        f = explore_strategies(TINY_GPT2, "A100", 8, batch_size=16, input_shape=SHAPE, micro_batches=(1, 2),
                               activation_checkpointing=False, usd_per_gpu_h=2.0)
    sk = pd.DataFrame(f.attrs["skipped"])
    tried = set(f["strategy"]) | set(sk["strategy"])
    assert set(strategy_combinations(8)) | {"dp", "fsdp", "tp", "pp"} == tried
    # 4 heads and 4 layers: tp over 8 GPUs and 8 stages are skipped with their reason; tp4 / pp4 run
    assert {"tp", "pp", "dp4-tp2", "dp2-tp2-pp2", "tp4-pp2", "tp2-pp4", "dp2-tp4"} <= tried
    assert {"dp4-tp2", "dp2-tp2-pp2", "tp4-pp2", "tp2-pp4", "dp2-tp4", "dp2-pp4"} <= set(f["strategy"])
    reasons = sk.drop_duplicates("strategy").set_index("strategy")["reason"]
    assert "not divisible by 8" in reasons["tp"] and "needs at least 8 layers" in reasons["pp"]
    # every row is the model's own prediction
    r = f[(f["strategy"] == "dp2-tp2-pp2") & (f["micro_batches"] == 2)].iloc[0]
    t = _step("dp2-tp2-pp2", n_gpus=8, batch_size=16, micro_batches=2, optimizer="adam").iloc[0]
    assert r["step_time_s"] == pytest.approx(t["step_time_s"], rel=1e-12)
    assert r["memory_per_gpu_bytes"] == _mem("dp2-tp2-pp2", n_gpus=8, batch_size=16, micro_batches=2, gpu="A100")["total_bytes"]
    assert f["pareto"].any()
    import matplotlib.pyplot as plt

    ax = plot_strategies(f)
    by_label = {c.get_label(): c for c in ax.collections}
    assert {"dp2-tp2-pp2", "tp4-pp2", "Pareto set"} <= set(by_label)
    points = np.concatenate([np.asarray(c.get_offsets()) for lab, c in by_label.items() if lab != "Pareto set"])
    assert len(points) == len(f)

    plt.close(ax.figure)


def test_explorer_skips_a_combination_for_another_gpu_count():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        f = explore_strategies(TINY_GPT2, "A100", 4, batch_size=8, input_shape=SHAPE, micro_batches=(1,),
                               activation_checkpointing=False, strategies=("dp2-tp2", {"tp": 2, "pp": 2}, "dp2-tp4", "tp4"))
    assert list(f["strategy"].sort_values()) == ["dp2-tp2", "tp", "tp2-pp2"]  # "tp4" on 4 GPUs is "tp"
    sk = pd.DataFrame(f.attrs["skipped"])
    assert list(sk["strategy"]) == ["dp2-tp4"] and "multiply to dp2 x tp4 = 8, but n_gpus = 4" in sk["reason"].iloc[0]
    assert math.isfinite(f["step_time_s"].max())


def test_pipeline_compute_does_not_move_with_the_link():
    """The first micro-batch's sends are communication, not bubble: compute + comm + bubble = step, and the compute of
    a pipeline is the same on a slow and a fast link."""
    cfg = dict(model_type="gpt2", n_layer=4, n_embd=128, n_head=4, vocab_size=500, n_positions=64, bos_token_id=0, eos_token_id=0)
    rows = [pm.predict_step_time(cfg, "A100", input_shape=(64,), batch_size=8, n_gpus=4, strategy="pp", micro_batches=4,
                                 interconnect=link).iloc[0] for link in ("nvlink", "ethernet-25g")]
    for r in rows:
        assert r["step_time_s"] == pytest.approx(r["compute_s"] + r["comm_s"] + r["bubble_s"], rel=1e-12)
    assert rows[0]["compute_s"] == pytest.approx(rows[1]["compute_s"], rel=1e-12)
    assert rows[0]["bubble_s"] == pytest.approx(rows[1]["bubble_s"], rel=1e-12)
    assert rows[1]["comm_s"] > rows[0]["comm_s"]


def test_a_combination_over_more_gpus_is_an_error_on_one_gpu():
    net = __import__("torch").nn.Linear(8, 8)
    assert pm.predict_step_time(net, "A100", input_shape=(8,), batch_size=4, strategy="tp")["step_time_s"].iloc[0] > 0
    with pytest.raises(pm.step.parallel.StrategyError, match=r"multiply to dp2 x tp2 = 4, but n_gpus = 1"):
        pm.predict_step_time(net, "A100", input_shape=(8,), batch_size=4, strategy="dp2-tp2")


def test_models_without_repeated_layers_still_run_data_parallel():
    """A CNN or an MLP has no transformer layers: dp / fsdp over several GPUs and one GPU work; only a pipeline needs
    layers."""
    torch = __import__("torch")
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    for n, strat in ((1, "dp"), (2, "dp"), (2, "fsdp")):
        assert pm.predict_memory(net, "A100", input_shape=(8,), batch_size=4, n_gpus=n, strategy=strat)["fits"].all()
        assert pm.predict_step_time(net, "A100", input_shape=(8,), batch_size=4, n_gpus=n, strategy=strat)["step_time_s"].iloc[0] > 0
    with pytest.raises(pm.step.parallel.StrategyError, match="needs at least 2 layers"):
        pm.predict_memory(net, "A100", input_shape=(8,), batch_size=4, n_gpus=2, strategy="pp")
    with pytest.raises(pm.step.parallel.StrategyError, match=r"multiply to dp2 x tp2 = 4, but n_gpus = 1"):
        pm.predict_memory(net, "A100", input_shape=(8,), batch_size=4, strategy="dp2-tp2")


def test_fsdp_with_tp_shards_the_tensor_parallel_share_and_pays_both_collectives():
    """torchtitan's 2D parallelism: fsdp over dp replicas of tp groups. One tp degree gives fsdp to the bit; the memory
    of the parameters is the tp rank's share over dp; the exposed communication holds the tp all-reduces."""
    import warnings

    import perfmodel as pm
    from perfmodel.models import ExtrapolationWarning

    cfg = dict(model_type="llama", hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
               num_key_value_heads=8, vocab_size=1000, max_position_embeddings=256)
    kw = dict(input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        plain = pm.predict_step_time(cfg, "H100", strategy="fsdp", **kw).iloc[0]
        same = pm.predict_step_time(cfg, "H100", strategy="fsdp8-tp1", **kw).iloc[0]
        two = pm.predict_step_time(cfg, "H100", strategy="fsdp4-tp2", **kw).iloc[0]
    assert same["step_time_s"] == plain["step_time_s"] and same["comm_total_s"] == plain["comm_total_s"]
    assert two["strategy"] == "fsdp4-tp2" and two["comm_total_s"] > 0 and two["step_time_s"] > 0
    m1 = pm.predict_memory(cfg, "H100", strategy="fsdp", **{k: v for k, v in kw.items()}).iloc[0]
    m2 = pm.predict_memory(cfg, "H100", strategy="fsdp4-tp2", **{k: v for k, v in kw.items()}).iloc[0]
    # the optimizer states: the tp rank's share (split weights / 2, norms whole) over 4 replicas, more than 1/8 of all
    assert m1["optimizer_bytes"] < m2["optimizer_bytes"] < 2 * m1["optimizer_bytes"]
    assert m2["activations_bytes"] < 2 * m1["activations_bytes"]  # twice the tokens per rank, the split ones halved


def test_fsdp_memory_holds_the_head_whole_at_the_backward_s_start():
    """When the activations peak (the backward's start) FSDP holds the head whole — FSDP2 does not reshard the root
    after the forward — with its gradient whole until its reduce-scatter, beside one gathered layer; otherwise two
    layers (the one running and the one prefetched)."""
    import perfmodel as pm

    cfg = dict(model_type="llama", hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=8,
               num_key_value_heads=8, vocab_size=1000, max_position_embeddings=256, tie_word_embeddings=False)
    kw = dict(input_shape=(128,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=8, strategy="fsdp")
    for vocab in (1000, 4000):
        m = pm.predict_memory(dict(cfg, vocab_size=vocab), "H100", **kw).iloc[0]
        layer = 4 * 256 * 256 + 3 * 256 * 512 + 2 * 256
        head = vocab * 256 + 256  # the output projection and the final norm
        P = 4 * layer + head + vocab * 256
        assert m["grads_bytes"] == pytest.approx(2 * P / 8 + 2 * head, rel=1e-12)
        assert m["params_bytes"] == pytest.approx(2 * P / 8 + 2 * max(2 * layer, layer + head), rel=1e-12)
    assert 1000 * 256 + 256 < layer < 4000 * 256 + 256  # the two cases: two layers gathered, then the head and a layer
    # a CNN has no language-model head: its gradients are its shard
    cnn = pm.predict_memory("resnet-32", "V100", batch_size=128, n_gpus=4, strategy="fsdp", optimizer="adam").iloc[0]
    assert 2 * cnn["grads_bytes"] == pytest.approx(cnn["optimizer_bytes"], rel=1e-12)  # the shard: FP32 4 B, Adam 8 B
