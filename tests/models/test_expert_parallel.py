"""Expert parallelism (``ep``, carved from the data- and tensor-parallel ranks): each rank holds ``experts / ep`` routed
experts and computes the tokens every rank of its group routes to them; two all-to-alls per MoE layer and pass dispatch
the tokens and combine the outputs; an expert's gradients are reduced over the ``tp·dp·cp/ep`` ranks that hold it;
memory holds ``experts / ep`` of the experts, the sharded optimizer ``1/(dp·cp)`` of every parameter's tensor-parallel
share. Beside tensor parallelism each expert stays whole on its rank (Megatron-Core's expert tensor parallelism 1):
the MoE blocks run on the rank's sequence shard, outside the tensor-parallel collectives."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.step.collectives import alltoall_time
from perfmodel.step.strategy import StrategyError, alltoall_across, parse_strategy, resolve_links

#: a small Mixtral: 8 experts, 2 per token, 2 layers
MIXTRAL = dict(model_type="mixtral", architectures=["MixtralForCausalLM"], hidden_size=128, intermediate_size=256,
               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, num_local_experts=8,
               num_experts_per_tok=2, vocab_size=512, max_position_embeddings=512, tie_word_embeddings=False)
SEQ = 128
LINKS = {"intra": "nvlink", "inter": "infiniband-ndr"}
#: the same shape, dense
DENSE = {k: v for k, v in dict(MIXTRAL, model_type="mistral", architectures=["MistralForCausalLM"]).items()
         if k not in ("num_local_experts", "num_experts_per_tok")}


def _work(model=MIXTRAL, **kw):
    return pm.Workload(model, input_shape=(SEQ,), precision="bf16", optimizer="adam-fused", **{"batch_size": 16, **kw})


def _predict(strategy, n=8, framework="megatron", gpus_per_node=8, parallel=None, **kw):
    """A prediction; each expert whole on its rank (expert tensor parallelism 1) unless ``parallel`` says otherwise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(_work(**kw), pm.Cluster("H100", n_gpus=n, gpus_per_node=gpus_per_node, interconnect=LINKS),
                          pm.Parallelism(strategy, framework=framework, micro_batch_size=1,
                                         **{"expert_tensor_parallel": 1, **(parallel or {})}))


def _rank(strategy, n=8, model=MIXTRAL, etp=1):
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run

    w, c, p = resolve_run(_work(model, batch_size=2 * n), pm.Cluster("H100", n_gpus=n),
                          pm.Parallelism(strategy, framework="megatron", micro_batch_size=1, expert_tensor_parallel=etp))
    return rank_work(w, p.with_micro_batches(w.batch_size, n), n)


def _expert_and_other_params():
    from perfmodel.step import trace as wl

    net = wl.model_and_layout(MIXTRAL, (SEQ,), None)[0]
    experts = sum(p.numel() for n, p in net.named_parameters() if ".experts." in n)
    return experts, sum(p.numel() for p in net.parameters()) - experts


def test_ep_is_carved_from_the_data_parallel_ranks_and_spelled_with_a_degree():
    assert parse_strategy("dp8-ep8", 8) == dict(dp=8, tp=1, pp=1, cp=1, fsdp=False, name="dp8-ep8", ep=8)
    assert parse_strategy("ep4-pp2-dp", 16)["name"] == "dp8-ep4-pp2"  # canonical order, the open degree takes the rest
    assert parse_strategy("fsdp4-cp2-ep8", 8)["ep"] == 8  # over the dp x cp ranks
    assert parse_strategy("dp8", 8)["ep"] == 1
    assert parse_strategy("dp2-ep4-tp2", 4)["ep"] == 4  # over the tp x dp ranks
    assert parse_strategy("tp2-ep2", 2)["name"] == "ep2-tp2"
    for bad, n, why in (("dp-ep", 8, "ep needs a degree"), ("ep8", 8, "has none. Add dp, fsdp or tp"),
                        ("dp6-ep4", 6, "ep4 does not divide the 6 ranks of a pipeline stage"),
                        ("dp2-ep8-tp2", 4, r"ep8 does not divide the 4 ranks .*tp x dp x cp = 2 x 2 x 1")):
        with pytest.raises(StrategyError, match=why):
            parse_strategy(bad, n)


def test_ep_needs_experts_that_split_over_its_ranks():
    dense = DENSE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(StrategyError, match=r"(?i)no .*experts.*leave ep out"):
            pm.predict_step_time(dense, "H100", input_shape=(SEQ,), batch_size=8, n_gpus=8, strategy="dp8-ep2",
                                 precision="bf16")
    with pytest.raises(StrategyError, match="ep16 does not divide mixtral's 8 routed experts"):
        _predict("dp16-ep16", n=16)


def test_a_rank_computes_its_experts_over_every_rank_s_tokens_at_the_same_flops():
    one, ep = (_rank(s) for s in ("dp8", "dp8-ep4"))
    g1, g4 = (r.work[r.work["op"] == "aten._grouped_mm"].reset_index(drop=True) for r in (one, ep))
    assert len(g1) == len(g4) and np.allclose(g1["flops"], g4["flops"])
    assert (g1["dim_b"] == 8).all() and (g4["dim_b"] == 2).all()
    fwd1, fwd4 = g1["phase"] == "forward", g4["phase"] == "forward"
    tokens = SEQ * 2 / 8  # one sequence per micro-batch, 2 experts per token, over 8 experts
    assert (g1.loc[fwd1, "dim_m"] == tokens).all() and (g4.loc[fwd4, "dim_m"] == 4 * tokens).all()
    assert np.allclose(g4["flops"], 2 * g4["dim_b"] * g4["dim_m"] * g4["dim_n"] * g4["dim_k"])
    assert (g4["bytes"] < g1["bytes"]).all()  # a quarter of the experts' weights
    experts, other = _expert_and_other_params()
    assert ep.rank_params == pytest.approx(other + experts / 4) and ep.expert_params == pytest.approx(experts / 4)
    assert ep.dispatch_bytes == SEQ * 2 * MIXTRAL["hidden_size"] * 2 and ep.moe_layers == 2


def test_every_moe_layer_dispatches_and_combines_in_each_pass_and_again_when_fully_recomputed():
    lk = resolve_links(LINKS, "H100", degrees=parse_strategy("dp8-ep8", 8))
    a2a = alltoall_time(SEQ * 2 * MIXTRAL["hidden_size"] * 2, 8, lk["ep"])  # one sequence's routed tokens, bf16
    m, layers = 2, 2  # 16 sequences over 8 ranks in micro-batches of one; 2 MoE layers
    plain, full = _predict("dp8-ep8"), _predict("dp8-ep8", activation_checkpointing="full")
    assert plain.comm_exposed_s["ep"] == pytest.approx(m * layers * 4 * a2a)
    assert full.comm_exposed_s["ep"] == pytest.approx(m * layers * 6 * a2a)
    assert _predict("dp8").comm_exposed_s["ep"] == 0.0
    assert "expert parallel over 8 of the 8 data-parallel ranks" in plain.basis
    assert ("grouped GEMMs timed as 1 GEMM, one per expert the rank holds, over an even share of the tokens the 8 "
            "expert-parallel ranks route to them") in plain.basis


def test_an_all_to_all_that_leaves_the_node_runs_at_the_gpu_s_share_of_its_nics():
    ndr = pm.step.collectives.resolve_interconnect("infiniband-ndr")
    nvlink = pm.step.collectives.resolve_interconnect("nvlink", "H100")
    deg = parse_strategy("dp16-ep8", 16)
    link = resolve_links(LINKS, "H100", degrees=deg, gpus_per_node=4)["ep"]
    assert link == alltoall_across(ndr, 1.0, 8, 4, nvlink.latency_s)
    nbytes = 64e6
    # each GPU sends 4 of its 8 shares off its node through its own NIC, the rest over NVLink at the same time; a
    # latency per peer, the network's for the 4 off the node, NVLink's for the 3 on it
    off_node = nbytes * 4 / 8 / (ndr.bandwidth_gb_per_s * 1e9 * ndr.efficiency)
    assert alltoall_time(nbytes, 8, link) == pytest.approx(off_node + 4 * ndr.latency_s + 3 * nvlink.latency_s)
    assert resolve_links(LINKS, "H100", degrees=deg, gpus_per_node=8)["ep"].name == "nvlink (H100)"
    across = _predict("dp16-ep8", n=16, gpus_per_node=4, batch_size=32)
    inside = _predict("dp16-ep8", n=16, gpus_per_node=8, batch_size=32)
    assert across.comm_exposed_s["ep"] > 3 * inside.comm_exposed_s["ep"]  # half the peers behind one NIC each


def test_an_expert_s_gradients_are_reduced_over_the_ranks_that_hold_it():
    experts, other = _expert_and_other_params()
    r = _rank("dp8-ep8")
    assert r.dp_reduced(r.rank_params, r.expert_params) == pytest.approx(other)  # no two ranks share an expert
    r2 = _rank("dp8-ep2")
    # an expert over 4 ranks: its bytes at (3/4) / (7/8) of the 8-rank ring's
    assert r2.dp_reduced(r2.rank_params, r2.expert_params) == pytest.approx(other + experts / 2 * (3 / 4) / (7 / 8))
    assert _predict("dp8-ep8").comm_total_s["dp"] < _predict("dp8").comm_total_s["dp"]
    # across nodes the ranks that share an expert are ep apart, one per node: their ring has one NIC, where the
    # data-parallel ring of 8 ranks per node has the node's 8
    lk = resolve_links(LINKS, "H100", degrees=parse_strategy("dp16-ep8", 16))
    assert lk["edp"].bandwidth_gb_per_s == 50.0 and lk["dp"].bandwidth_gb_per_s == 400.0
    r16 = _rank("dp16-ep8", 16)
    share = ((2 - 1) / 2) / ((16 - 1) / 16) * 8  # the 2-rank ring's bytes at the dp ring's rate over its own
    assert r16.dp_reduced(r16.rank_params, r16.expert_params, lk) == pytest.approx(other + experts / 8 * share)
    assert r16.dp_reduced(r16.rank_params, r16.expert_params) == pytest.approx(other + experts / 8 * share / 8)
    assert "edp" not in resolve_links(LINKS, "H100", degrees=parse_strategy("dp16", 16))


@pytest.mark.parametrize("strategy,framework", [("dp8", "megatron"), ("dp4-pp2", "megatron"), ("dp8", "pytorch"),
                                                ("fsdp8", "pytorch")])
def test_memory_holds_experts_over_ep_and_the_sharded_state_of_every_parameter(strategy, framework):
    experts, other = _expert_and_other_params()
    ep_strategy = strategy.replace("dp8", "dp8-ep4").replace("dp4-pp2", "dp4-ep4-pp2")
    base, ep = (_predict(s, framework=framework).memory for s in (strategy, ep_strategy))
    sharded = framework == "megatron" or strategy.startswith("fsdp")
    assert (ep["optimizer_bytes"] == pytest.approx(base["optimizer_bytes"])) == sharded
    if strategy == "dp8":  # one stage: every parameter held, the experts' a quarter of them
        assert base["params_bytes"] - ep["params_bytes"] == pytest.approx(experts * 3 / 4 * 2)
    if strategy == "dp8" and framework == "pytorch":  # unsharded Adam states: 8 B/parameter (two FP32 moments) + master
        assert ep["optimizer_bytes"] / base["optimizer_bytes"] == pytest.approx((other + experts / 4) / (other + experts))
    assert ep["total_bytes"] < base["total_bytes"]


def test_predict_memory_says_the_experts_are_spread():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = pm.predict_memory(MIXTRAL, "H100", batch_size=16, n_gpus=8, strategy="dp8-ep4", precision="bf16",
                                optimizer="adam", input_shape=(SEQ,), framework="megatron").iloc[0]
    assert "expert parallel over 4: each rank holds 1/4 of the routed experts" in row["basis"]


def test_the_layout_search_tries_expert_parallelism_for_a_mixture_of_experts_only():
    from perfmodel.planning.layouts import layout_candidates

    c = pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect=LINKS)
    cands = layout_candidates(_work(batch_size=32), c, expert_tensor_parallel=1)  # each expert whole on its rank
    eps = {parse_strategy(p.strategy, 16)["ep"] for p in cands}
    assert eps == {1, 8}  # none, the widest in a node (8 experts: also the widest)
    degs = [parse_strategy(p.strategy, 16) for p in cands]
    assert {d["tp"] for d in degs} == {1, 2}  # tensor parallelism beside whole experts (the heads: 4 and 2 for K, V)
    assert {(d["tp"], d["ep"]) for d in degs} >= {(2, 1), (2, 8)}
    # on 2 GPUs, 2 tensor-parallel ranks and no data-parallel ones hold whole experts only spread over both
    two = layout_candidates(_work(batch_size=32), pm.Cluster("H100", n_gpus=2), pipeline_parallel=[1],
                            expert_tensor_parallel=1)
    assert {(parse_strategy(p.strategy, 2)["tp"], parse_strategy(p.strategy, 2)["ep"]) for p in two} == {(1, 1), (1, 2),
                                                                                                       (2, 2)}
    dense = pm.Workload(DENSE, input_shape=(SEQ,), batch_size=32, precision="bf16")
    assert {parse_strategy(p.strategy, 16)["ep"] for p in layout_candidates(dense, c)} == {1}
    chosen = layout_candidates(_work(batch_size=32), c, expert_parallel=[2, 3])
    assert {parse_strategy(p.strategy, 16)["ep"] for p in chosen} == {2}  # 3 divides neither


def test_the_command_line_predicts_and_searches_expert_parallel_layouts(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    path = tmp_path / "moe.json"
    path.write_text(json.dumps(MIXTRAL))
    main(["predict", str(path), "--gpus", "H100", "--input-shape", str(SEQ), "--batch-size", "16", "--n-gpus", "8",
          "--strategy", "dp8-ep8", "--framework", "megatron", "--precision", "bf16"])
    out = capsys.readouterr().out
    assert "dp8-ep8" in out and "expert parallel over 8" in out
    main(["layouts", str(path), "--n-gpus", "16", "--input-shape", str(SEQ), "--batch-size", "32", "--ep", "2",
          "--frameworks", "megatron", "--pp", "1", "--activation-checkpointing", "none", "--quiet"])
    out = capsys.readouterr().out
    assert "dp16-cp1-ep2-tp1-pp1" in out and "ep8" not in out
    main(["predict", str(path), "--gpus", "H100", "--input-shape", str(SEQ), "--batch-size", "16", "--n-gpus", "8",
          "--strategy", "dp8-ep8", "--framework", "megatron", "--precision", "bf16", "--expert-load-imbalance", "1.2"])
    assert "receiving 1.2 times the mean routed tokens" in capsys.readouterr().out
    main(["layouts", str(path), "--n-gpus", "16", "--input-shape", str(SEQ), "--batch-size", "32", "--ep", "2",
          "--frameworks", "megatron", "--pp", "1", "--activation-checkpointing", "none", "--quiet",
          "--expert-load-imbalance", "1.2"])
    assert "receiving 1.2 times the mean routed tokens" in capsys.readouterr().out


def test_explore_strategies_tries_expert_parallelism_by_default_for_a_mixture_of_experts():
    from perfmodel.planning.strategies import explore_strategies

    kw = dict(input_shape=(SEQ,), batch_size=16, precision="bf16", micro_batches=(1,), activation_checkpointing=(False,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        moe = explore_strategies(MIXTRAL, "H100", 8, **kw)
        dense = explore_strategies(DENSE, "H100", 8, **kw)
    assert {"dp8-ep8", "fsdp8-ep8"} <= set(moe["strategy"])  # 8 experts over the 8 data-parallel ranks
    assert not dense["strategy"].str.contains("ep").any()
    row = moe.set_index("strategy").loc["dp8-ep8"]
    assert row["step_time_s"] == pytest.approx(_predict_plain("dp8-ep8"))


def _predict_plain(strategy):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(pm.predict_step_time(MIXTRAL, "H100", input_shape=(SEQ,), batch_size=16, precision="bf16",
                                          optimizer="adam", n_gpus=8, strategy=strategy).iloc[0]["step_time_s"])


def test_tensor_parallelism_keeps_each_expert_whole_and_runs_the_moe_block_on_the_sequence_shard():
    one, r = _rank("dp8"), _rank("dp4-ep4-tp2")
    whole = _rank("dp4-tp2")  # tensor parallel, every expert on every rank
    experts, _ = _expert_and_other_params()
    fwd1, fwd = (x.work[(x.work["phase"] == "forward")] for x in (one, r))
    # one sequence per micro-batch in both: the two tensor-parallel ranks share its work, FLOP for FLOP
    assert fwd["flops"].sum() == pytest.approx(fwd1["flops"].sum() / 2, rel=1e-9)
    g1, g = (x[x["op"] == "aten._grouped_mm"] for x in (fwd1, fwd))
    assert np.allclose(g["flops"].to_numpy(), g1["flops"].to_numpy() / 2)
    assert (g["dim_b"] == 2).all() and (g["dim_m"] == 4 / 2 * g1["dim_m"].to_numpy()).all()  # 4 ranks' tokens, half each
    router1, router = (x[x["module"].str.endswith("mlp.gate") & (x["op"] == "aten.mm")] for x in (fwd1, fwd))
    assert np.allclose(router["flops"].to_numpy(), router1["flops"].to_numpy() / 2)  # on the sequence shard
    assert (router["dim_n"] == router1["dim_n"]).all() and (router["dim_k"] == router1["dim_k"]).all()  # not split
    assert r.expert_params == pytest.approx(experts / 4) and whole.expert_params == pytest.approx(experts)
    assert r.rank_params == pytest.approx(whole.rank_params - experts * 3 / 4)
    assert r.tp_blocks == 1.0 and whole.tp_blocks == 1.0 and _rank("dp4-tp2").ep == 1  # the attention's block only
    dense = _rank("dp4-tp2", model=DENSE)
    assert dense.tp_blocks == 2.0
    # every tensor-parallel collective: a MoE layer has half a dense layer's (the attention's block), the embedding's
    # and the vocabulary projection's all-reduces alike
    lk = resolve_links(LINKS, "H100", degrees=parse_strategy("dp4-tp2", 8))
    tp_per = pm.step.collectives.allreduce_time(r.act_bytes, 2, lk["tp"])
    moe_tp, dense_tp = (_predict("dp4-ep4-tp2").comm_total_s["tp"],
                        _predict("dp4-tp2", model=DENSE).comm_total_s["tp"])
    m = 4  # 16 sequences over 4 replicas in micro-batches of one
    assert 2 * moe_tp == pytest.approx(dense_tp + 2 * m * tp_per)
    row = _predict("dp4-ep4-tp2")
    assert ("each routed expert whole on its rank beside tensor parallelism over 2 (Megatron-Core's expert tensor "
            "parallelism 1)") in row.basis and "expert parallel over 4 of the 8 tensor-, context- and" in row.basis


def test_tensor_parallelism_beside_experts_needs_sequence_parallelism_and_ranks_to_reduce_them():
    for strategy, n, framework, why in (
            ("dp4-tp2", 8, "pytorch", r"sequence parallelism.*Pass sequence_parallel=True"),
            ("tp2", 2, "megatron", r"hold the same experts 2 times over.*ep2.*'ep2-tp2'"),
            ("dp4-tp2", 8, "megatron-no-sp", r"sequence parallelism")):
        par = dict(framework="megatron", sequence_parallel=False) if framework == "megatron-no-sp" else dict(framework=framework)
        with pytest.raises(StrategyError, match=why), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pm.predict(_work(), pm.Cluster("H100", n_gpus=n, interconnect=LINKS),
                       pm.Parallelism(strategy, micro_batch_size=1, expert_tensor_parallel=1, **par))
    assert _predict("ep2-tp2", n=2).step_time_s > 0  # each expert on one of the 2 ranks: nothing to reduce
    assert _predict("fsdp4-tp2", framework="pytorch").step_time_s > 0  # torchtitan's 2D: sequence parallel


def test_the_ranks_that_share_an_expert_beside_tensor_parallelism_are_ep_apart():
    experts, _ = _expert_and_other_params()
    deg = parse_strategy("dp8-ep8-tp2", 16)
    assert pm.step.strategy.ranks_per_node(deg, 8)["ep"] == 8  # consecutive: the whole node
    lk = resolve_links(LINKS, "H100", degrees=deg)
    assert lk["ep"].name == "nvlink (H100)" and lk["edp"].bandwidth_gb_per_s == 50.0  # one per node, one NIC
    r = _rank("dp8-ep8-tp2", 16)
    # an expert over tp x dp / ep = 2 ranks, against the 8-rank data-parallel ring
    share = ((2 - 1) / 2) / ((8 - 1) / 8)
    assert r.dp_reduced(r.rank_params, r.expert_params) == pytest.approx(r.rank_params - experts / 8 * (1 - share))
    whole = _rank("dp4-tp2")  # every expert on both tensor-parallel ranks: reduced over all 8
    assert whole.dp_reduced(whole.rank_params, whole.expert_params) == pytest.approx(
        whole.rank_params - experts * (1 - ((8 - 1) / 8) / ((4 - 1) / 4)))


def test_memory_beside_tensor_parallelism_holds_whole_experts_and_shards_their_state_over_every_rank():
    experts, _ = _expert_and_other_params()
    whole, ep = (_predict(s).memory for s in ("dp4-tp2", "dp4-ep4-tp2"))
    assert whole["params_bytes"] - ep["params_bytes"] == pytest.approx(experts * 3 / 4 * 2)  # bf16
    assert ep["optimizer_bytes"] == pytest.approx(whole["optimizer_bytes"])  # the distributed optimizer's shard
    # the shard: 1/(dp·cp) of every parameter's tensor-parallel share, an expert's 1/(tp·dp·cp) of it — against
    # dp8-ep4's 1/8 of every parameter
    experts, other = _expert_and_other_params()
    dense_tp = _rank("dp4-tp2").rank_params - experts  # a tensor-parallel rank's share of the dense parameters
    plain = _predict("dp8-ep4").memory["optimizer_bytes"]
    assert ep["optimizer_bytes"] / plain == pytest.approx((dense_tp / 4 + experts / 8) / ((other + experts) / 8))


def test_beside_pytorch_s_sequence_parallelism_the_norm_before_a_whole_moe_block_is_not_gathered():
    """torchtitan's sequence parallelism keeps each norm output that feeds a tensor-parallel block whole besides its
    shard (the block all-gathers it); the MoE block, whole on its rank, runs on the shard and gathers nothing."""
    import torch

    from perfmodel.step import memory as mem
    from perfmodel.step import trace as wl

    picked = {}
    for key, cfg in (("moe", MIXTRAL), ("dense", DENSE)):
        net, _, _, _, _, lay = wl.model_and_layout(cfg, (SEQ,), None)
        saved, _ = mem._saved_for(net, torch.bfloat16, (1, SEQ), torch.long)
        layer = wl.op_layer(saved.assign(phase="forward"), lay.n_layers)
        picked[key] = [m.rsplit(".", 1)[-1] for m in saved.loc[mem._gathered_block_inputs(saved, layer, lay, 2), "module"]]
    assert picked["moe"] == ["input_layernorm"] * 2
    assert picked["dense"] == ["input_layernorm", "post_attention_layernorm"] * 2


def _fp8_rank(strategy, n=8, **kw):
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run

    w, c, p = resolve_run(pm.Workload(MIXTRAL, input_shape=(SEQ,), batch_size=2 * n, optimizer="adam-fused", stack="te", **kw),
                          pm.Cluster("H100", n_gpus=n), pm.Parallelism(strategy, framework="megatron", micro_batch_size=1,
                                                                      expert_tensor_parallel=1))
    return rank_work(w, p.with_micro_batches(w.batch_size, n), n)


def test_transformer_engine_s_fp8_runs_the_experts_grouped_gemms_in_fp8_with_their_casts():
    from perfmodel.step import trace as wl

    r = _fp8_rank("dp8-ep4", precision="fp8")
    w = r.work
    experts_mod = w["module"].astype(str).str.endswith(".experts")
    grouped = (w["op"] == wl.GROUPED_GEMM_OP).to_numpy()
    assert w.loc[grouped, "fp8"].all()  # TE's grouped linears
    router = (w["module"].astype(str).str.endswith("mlp.gate") & (w["op"] == "aten.mm")).to_numpy()
    assert router.any() and not w.loc[router, "fp8"].any()  # the router at the training precision
    assert w.loc[(w["module"].astype(str).str.endswith("q_proj") & (w["op"] == "aten.mm")).to_numpy(), "fp8"].all()
    fwd = w[grouped & (w["phase"] == "forward").to_numpy()]
    inputs = float((fwd["dim_b"] * fwd["dim_m"] * fwd["dim_n"]).sum())  # the routed tokens each GEMM reads
    outputs = float((fwd["dim_b"] * fwd["dim_m"] * fwd["dim_k"]).sum())  # ... and writes: their gradients cast too
    casts = w[(w["op"] == wl.TE_CAST_OP).to_numpy() & experts_mod.to_numpy()]
    per = wl.TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT  # delayed scaling: a cast with its transpose
    assert casts.loc[casts["phase"] == "forward", "bytes"].sum() == pytest.approx(per * inputs)
    assert casts.loc[casts["phase"] == "backward", "bytes"].sum() == pytest.approx(per * outputs)
    # each rank casts the weights of the experts it holds, whole beside tensor parallelism
    for strategy in ("dp8-ep4", "dp4-ep4-tp2"):
        rr = r if strategy == "dp8-ep4" else _fp8_rank(strategy, precision="fp8")
        held = wl.expert_weight_casts(rr.work)
        assert rr.work.loc[held, "bytes"].sum() == pytest.approx(wl.TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT * rr.expert_params)
    row = _predict_fp8("dp8-ep4")
    assert "at the FP8 rate as Transformer Engine's grouped linears run them" in row.basis
    # the FP8 weight cache Megatron-Core keeps: two FP8 copies of every FP8 weight the rank holds, experts included
    bf16 = _predict("dp8-ep4")
    assert row.memory["params_bytes"] - bf16.memory["params_bytes"] >= 2 * r.expert_params


def _predict_fp8(strategy, n=8):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(pm.Workload(MIXTRAL, input_shape=(SEQ,), batch_size=16, precision="fp8", optimizer="adam-fused",
                                      stack="te"),
                          pm.Cluster("H100", n_gpus=n, interconnect=LINKS),
                          pm.Parallelism(strategy, framework="megatron", micro_batch_size=1))


def test_torchao_s_float8_leaves_the_experts_at_the_training_precision_and_says_so():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = pm.predict(pm.Workload(MIXTRAL, input_shape=(SEQ,), batch_size=16, precision="fp8", optimizer="adam-fused"),
                         pm.Cluster("H100", n_gpus=8), pm.Parallelism("fsdp8"))
    assert "at the training precision (torchao's Float8 converts the linears only)" in row.basis


#: a small Qwen3-MoE: two dense layers, then two MoE layers without a shared expert
QWEN3_MOE = dict(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"], hidden_size=128, intermediate_size=256,
                 moe_intermediate_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                 num_experts=8, num_experts_per_tok=2, mlp_only_layers=[0, 1], decoder_sparse_step=1, vocab_size=512,
                 max_position_embeddings=512, tie_word_embeddings=False)
#: a small Qwen2-MoE: a shared expert with its gate beside the routed experts
QWEN2_MOE = dict(model_type="qwen2_moe", architectures=["Qwen2MoeForCausalLM"], hidden_size=128, intermediate_size=256,
                 moe_intermediate_size=64, shared_expert_intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, num_experts=8, num_experts_per_tok=2, vocab_size=512, max_position_embeddings=512,
                 tie_word_embeddings=False)


def test_a_pipeline_stage_counts_the_tensor_parallel_blocks_its_own_layers_have():
    r = _rank("dp2-ep4-tp2-pp2", model=QWEN3_MOE)
    assert r.tp_blocks == 1.5 and list(r.stage_tp_blocks) == [4.0, 2.0]  # 2 dense layers, then 2 MoE layers
    assert list(r.stage_blocks) == [4.0, 2.0] and list(_rank("dp2-tp2-pp2", model=DENSE).stage_blocks) == [2.0, 2.0]
    row = _predict("dp2-ep4-tp2-pp2", model=QWEN3_MOE)
    assert row.comm_total_s["tp"] > 0 and "1.5 tensor-parallel blocks per layer" in row.basis


def test_a_shared_expert_is_split_beside_whole_experts_and_its_gate_is_kept_whole():
    from perfmodel.step import trace as wl

    r = _rank("dp4-ep4-tp2", model=QWEN2_MOE)
    assert set(r.tp_block[r.tp_role > 0]) == {"self_attn", "mlp.shared_expert"} and r.tp_blocks == 2.0
    held = wl.expert_parallel_layout(r.lay, 4)
    gates = [k for k in held.param_split if k.endswith(("mlp.gate.weight", "shared_expert_gate.weight"))]
    assert len(gates) == 4 and not any(held.param_split[k] for k in gates)
    assert all(held.param_split[k] for k in held.param_split if ".shared_expert." in k and k.endswith("proj.weight"))


def test_whole_experts_beside_tensor_parallelism_are_reduced_on_the_ring_of_their_holders():
    lk = resolve_links(LINKS, "H100", degrees=dict(parse_strategy("dp8-tp2", 16), moe=True))
    # every expert on all 16 ranks, consecutive: 8 per node on the node's 8 NICs; the data-parallel ring 2 apart, 4
    assert lk["edp"].bandwidth_gb_per_s == 400.0 and lk["dp"].bandwidth_gb_per_s == 200.0
    assert "edp" not in resolve_links(LINKS, "H100", degrees=parse_strategy("dp8-tp2", 16))  # a dense model's


def test_a_mixture_of_experts_on_one_gpu_spelled_tp_needs_nothing_more():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = pm.predict_step_time(MIXTRAL, "H100", input_shape=(SEQ,), batch_size=2, precision="bf16", n_gpus=1,
                                   strategy="tp").iloc[0]
    assert row["step_time_s"] > 0


def test_torchao_s_rowwise_float8_keeps_the_router_on_the_sequence_shard():
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run

    def mlp_flops(strategy, n):
        w, c, p = resolve_run(pm.Workload(MIXTRAL, input_shape=(SEQ,), batch_size=4, precision="fp8", fp8_recipe="rowwise",
                                          compile=True),
                              pm.Cluster("H100", n_gpus=n), pm.Parallelism(strategy, micro_batches=1))
        r = rank_work(w, p.with_micro_batches(w.batch_size, n), n)
        mlp = r.work["module"].astype(str).str.contains(r"\.mlp(?:\.|$)").to_numpy() & ~r.is_opt
        return float(r.work.loc[mlp, "flops"].sum()), r

    # two sequences per replica: on one rank, or shared by two, FLOP for FLOP
    (one, _), (two, r) = mlp_flops("fsdp2", 2), mlp_flops("fsdp2-tp2", 4)
    assert r.tp == 2 and 2 * two == pytest.approx(one, rel=1e-9)


def test_the_busiest_expert_parallel_rank_sets_the_pace_of_an_uneven_routing():
    even, busy = _rank("dp8-ep4"), _rank_with("dp8-ep4", expert_load_imbalance=1.25)
    g0, g1 = (x.work[x.work["op"] == "aten._grouped_mm"] for x in (even, busy))
    assert np.allclose(g1["flops"].to_numpy(), 1.25 * g0["flops"].to_numpy())
    assert busy.dispatch_bytes == pytest.approx(1.25 * even.dispatch_bytes)  # the tokens it receives
    assert busy.rank_params == even.rank_params  # the experts it holds are the same
    rows = {f: _predict("dp8-ep4", parallel=dict(expert_load_imbalance=f)) for f in (1.0, 1.25)}
    assert rows[1.25].step_time_s > rows[1.0].step_time_s
    lk = resolve_links(LINKS, "H100", degrees=parse_strategy("dp8-ep4", 8))
    a2a = alltoall_time(1.25 * SEQ * 2 * MIXTRAL["hidden_size"] * 2, 4, lk["ep"])  # a quarter more tokens, bf16
    assert rows[1.25].comm_exposed_s["ep"] == pytest.approx(2 * 2 * 4 * a2a)  # 2 micro-batches, 2 MoE layers
    assert rows[1.25].memory["activations_bytes"] > rows[1.0].memory["activations_bytes"]
    assert "the busiest expert-parallel rank receiving 1.25 times the mean routed tokens" in rows[1.25].basis
    # without ep a rank computes every routed token: nothing to wait for
    assert _rank_with("dp8", expert_load_imbalance=1.25).work["flops"].sum() == _rank("dp8").work["flops"].sum()
    for bad in (0.9, float("nan"), True, "1.2"):
        with pytest.raises(ValueError, match="expert_load_imbalance must be a finite number of at least 1"):
            pm.Parallelism("dp8-ep4", expert_load_imbalance=bad)


def _rank_with(strategy, n=8, **par):
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run

    w, c, p = resolve_run(_work(batch_size=2 * n), pm.Cluster("H100", n_gpus=n),
                          pm.Parallelism(strategy, framework="megatron", micro_batch_size=1, **par))
    return rank_work(w, p.with_micro_batches(w.batch_size, n), n)


def test_megatron_s_ep_overlap_hides_the_all_to_alls_of_paired_passes():
    from perfmodel.step.parallel import _Comm, _ep_paired

    c = _Comm(0, 0, 0, 0, 0, 0, 0, ep_a2a=0.1)
    assert c.ep_exposed(2, 1.0, 1.0) == (0.4, 0.4)  # no overlap: 2 all-to-alls per MoE layer and pass
    # half the passes paired: theirs hidden under a layer of 1 s, the others' whole
    assert c.ep_exposed(2, 1.0, 1.0, 0.5) == pytest.approx((0.2, 0.2))
    # a backward layer of 0.05 s hides 0.05 of a forward layer's 0.2 s
    assert c.ep_exposed(2, 1.0, 0.05, 0.5) == pytest.approx((0.5 * 2 * 0.15 + 0.5 * 0.4, 0.2))

    def paired(m, pp=1, v=1, stage=None):
        import types

        r = types.SimpleNamespace(ep=4, overlap_moe_dispatch=True, micro_batches=m, virtual_stages=v, pp=pp)
        return _ep_paired(r, stage)

    assert paired(4) == pytest.approx(0.75)  # the first forward and the last backward alone
    assert paired(1) == 0.0  # one micro-batch: its backward needs its own forward
    assert list(paired(8, pp=4, stage=np.arange(4))) == pytest.approx([5 / 8, 6 / 8, 7 / 8, 7 / 8])  # the warm-ups
    assert paired(4, pp=2, v=2, stage=0) == pytest.approx(0.5)  # interleaved: 2(p-s-1) + (v-1)p warm-up chunks
    plain, over = (_predict("dp8-ep4", parallel=dict(overlap_moe_dispatch=o)) for o in (False, True))
    assert over.comm_exposed_s["ep"] < plain.comm_exposed_s["ep"]
    assert over.comm_total_s["ep"] == pytest.approx(plain.comm_total_s["ep"])  # the same all-to-alls, hidden
    assert "under Megatron-Core's EP overlap" in over.basis and "exposed (no dispatch overlap)" in plain.basis
    one = [_predict("dp8-ep4", batch_size=8, parallel=dict(overlap_moe_dispatch=o)) for o in (False, True)]
    assert one[1].comm_exposed_s["ep"] == one[0].comm_exposed_s["ep"]  # one micro-batch: nothing to pair
    with pytest.raises(StrategyError, match="overlap_moe_dispatch=True is Megatron-Core's EP overlap"):
        _predict("fsdp8-ep4", framework="pytorch", parallel=dict(overlap_moe_dispatch=True))


def test_megatron_splits_each_expert_over_the_tensor_parallel_ranks_by_default():
    """Megatron-Core's --expert-tensor-parallel-size unset takes the TP size: each expert's linears split over the tp
    ranks, which gather the tokens they route; ep is carved from the dp·cp ranks."""
    one, whole, split = _rank("dp8"), _rank("dp4-ep2-tp2"), _rank("dp4-ep2-tp2", etp=2)
    assert _rank_with("dp4-ep2-tp2").etp == 2  # Megatron's default
    assert whole.etp == 1 and split.etp == 2 and _rank("dp4-tp2", model=DENSE, etp=2).etp == 1  # dense: no experts
    experts, _ = _expert_and_other_params()
    g1, g = (x.work[(x.work["op"] == "aten._grouped_mm") & (x.work["phase"] == "forward")] for x in (one, split))
    assert np.allclose(g["flops"].to_numpy(), g1["flops"].to_numpy() / 2)  # half of every expert's width
    assert (g["dim_b"] == 4).all() and (g["dim_m"] == 2 * g1["dim_m"].to_numpy()).all()  # 2 ranks' tokens, all of them
    widths = g[["dim_n", "dim_k"]].to_numpy()
    assert sorted(widths.max(axis=1)) == sorted(g1[["dim_n", "dim_k"]].to_numpy().max(axis=1) / 2)
    assert (np.sort(widths, axis=1)[:, 0] == 128).all()  # the hidden size unsplit; the experts' width halved
    router1, router = (x.work[x.work["module"].str.endswith("mlp.gate") & (x.work["op"] == "aten.mm")
                              & (x.work["phase"] == "forward")] for x in (one, split))
    assert np.allclose(router["flops"].to_numpy(), router1["flops"].to_numpy() / 2)  # on the sequence shard still
    assert split.expert_params == pytest.approx(experts / 4) and whole.expert_params == pytest.approx(experts / 2)
    assert split.rank_params == pytest.approx(whole.rank_params - experts / 4)
    assert split.tp_blocks == 1.0  # the attention's block; the experts' own collectives are the dispatcher's
    routed = SEQ * 2 * 128 * 2  # a micro-batch's tokens, 2 experts each, at the hidden size in BF16
    assert split.etp_gather_bytes == routed and split.dispatch_bytes == routed / 2 == whole.dispatch_bytes


def test_split_experts_gather_their_tokens_over_the_tensor_parallel_ranks_in_each_moe_layer_and_pass():
    from perfmodel.step.collectives import allgather_time, reduce_scatter_time

    whole, split = (_predict("dp4-ep2-tp2", parallel={"expert_tensor_parallel": e}) for e in (1, 2))
    lk = resolve_links(LINKS, "H100", degrees=parse_strategy("dp4-ep2-tp2", 8))
    nbytes = SEQ * 2 * 128 * 2
    per_layer = allgather_time(nbytes, 2, lk["tp"]) + reduce_scatter_time(nbytes, 2, lk["tp"])
    m, layers = 4, 2  # 16 sequences over 4 replicas in micro-batches of one; 2 MoE layers, each in both passes
    assert split.comm_total_s["ep"] - whole.comm_total_s["ep"] == pytest.approx(2 * m * layers * per_layer)
    assert split.comm_exposed_s["ep"] - whole.comm_exposed_s["ep"] == pytest.approx(2 * m * layers * per_layer)
    assert split.comm_total_s["tp"] == pytest.approx(whole.comm_total_s["tp"])  # the attention's blocks alike
    assert ("each routed expert split over the 2 tensor-parallel ranks as a dense MLP is (Megatron-Core's expert "
            "tensor parallelism 2)") in split.basis and "expert parallel over 2 of the 4 context- and" in split.basis
    # without ep the tensor-parallel ranks still gather the routed tokens; the experts' shards reduced over dp
    alone = _predict("dp4-tp2", parallel={"expert_tensor_parallel": 2})
    assert alone.comm_total_s["ep"] == pytest.approx(2 * m * layers * per_layer)


def test_split_experts_are_placed_ep_ranks_tp_apart_and_reduced_over_the_ranks_that_hold_their_shard():
    experts, _ = _expert_and_other_params()
    deg = parse_strategy("dp8-ep4-tp2", 16)
    assert pm.step.strategy.ranks_per_node(deg, 8)["ep"] == 4 and pm.step.strategy.ranks_per_node(dict(deg, etp=2), 8)["ep"] == 4
    wide = parse_strategy("dp8-ep8-tp2", 16)
    assert not pm.step.strategy.crosses_nodes(wide, 8)["ep"] and pm.step.strategy.crosses_nodes(dict(wide, etp=2), 8)["ep"]
    assert pm.step.strategy.ranks_per_node(dict(wide, etp=2), 8)["ep"] == 4  # 2 apart: half of them on a node
    lk = resolve_links(LINKS, "H100", degrees=dict(deg, etp=2, moe=True))
    assert lk["edp"].bandwidth_gb_per_s == 50.0  # a shard's 2 holders 8 ranks apart: one per node, one NIC
    r = _rank("dp8-ep4-tp2", 16, etp=2)
    share = ((2 - 1) / 2) / ((8 - 1) / 8)  # each shard over dp / ep = 2 ranks, against the 8-rank ring
    assert r.expert_params == pytest.approx(experts / 8)
    assert r.dp_reduced(r.rank_params, r.expert_params) == pytest.approx(r.rank_params - experts / 8 * (1 - share))


def test_memory_of_split_experts_holds_their_shard_and_the_tokens_they_gather():
    experts, _ = _expert_and_other_params()
    whole, split = (_predict("dp4-ep2-tp2", parallel={"expert_tensor_parallel": e}).memory for e in (1, 2))
    assert whole["params_bytes"] - split["params_bytes"] == pytest.approx(experts / 4 * 2)  # bf16: half the experts held
    assert split["optimizer_bytes"] == pytest.approx(whole["optimizer_bytes"])  # each expert's 1/(tp·dp·cp) either way
    assert split["activations_bytes"] > whole["activations_bytes"]  # the gathered tokens the experts save
    row = pm.predict_memory(MIXTRAL, "H100", batch_size=16, n_gpus=8, strategy="dp4-ep2-tp2", precision="bf16",
                            input_shape=(SEQ,), framework="megatron").iloc[0]
    assert "each routed expert split over the 2 tensor-parallel ranks (expert tensor parallelism 2)" in row["basis"]


def test_expert_tensor_parallelism_is_1_or_tp_and_its_ep_divides_the_data_parallel_ranks():
    for par, why in ((dict(strategy="dp4-ep8-tp2", framework="megatron"),
                      r"ep8 is carved from the 4 data- and context-parallel ranks.*expert_tensor_parallel=1"),
                     (dict(strategy="dp4-ep2-tp2", framework="megatron", expert_tensor_parallel=4), "Pass 1 or 2"),
                     (dict(strategy="fsdp4-ep2-tp2", framework="pytorch", expert_tensor_parallel=2),
                      "torchtitan's expert tensor parallelism is not modelled")):
        with pytest.raises(StrategyError, match=why), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pm.predict(_work(), pm.Cluster("H100", n_gpus=8, interconnect=LINKS), pm.Parallelism(micro_batch_size=1, **par))
    with pytest.raises(ValueError, match="expert_tensor_parallel must be a positive int"):
        pm.Parallelism("dp4-ep2-tp2", expert_tensor_parallel=0)
    # split experts need no data-parallel ranks to reduce them: tp2 alone is a layout, as for a dense model
    assert _predict("tp2", n=2, parallel={"expert_tensor_parallel": 2}).step_time_s > 0


def test_the_layout_search_tries_split_experts_for_megatron_only():
    from perfmodel.planning.layouts import layout_candidates, search_layouts

    c = pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect=LINKS)
    cands = layout_candidates(_work(batch_size=32), c)
    split = [p for p in cands if p.expert_tensor_parallel and p.expert_tensor_parallel > 1]
    assert split and {p.framework for p in split} == {"megatron"}
    for p in split:  # ep over the dp·cp ranks
        d = parse_strategy(p.strategy, 16)
        assert p.expert_tensor_parallel == d["tp"] and (d["dp"] * d["cp"]) % d["ep"] == 0
    only = layout_candidates(_work(batch_size=32), c, expert_tensor_parallel="tp")
    assert all(p.expert_tensor_parallel == parse_strategy(p.strategy, 16)["tp"] for p in only
               if parse_strategy(p.strategy, 16)["tp"] > 1)
    with pytest.raises(ValueError, match="expert_tensor_parallel must be None"):
        layout_candidates(_work(batch_size=32), c, expert_tensor_parallel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = search_layouts(_work(batch_size=32), c, frameworks=("megatron",), tensor_parallel=[2],
                               pipeline_parallel=[1], context_parallel=[1], activation_checkpointing=(False,),
                               shard_gradients=(None,))
    assert set(found["expert_tensor_parallel"]) == {1, 2}
    assert len(found) == len(found.drop_duplicates(["strategy", "expert_tensor_parallel"]))


def test_the_command_line_says_the_expert_tensor_parallelism(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    path = tmp_path / "moe.json"
    path.write_text(json.dumps(MIXTRAL))
    base = ["predict", str(path), "--gpus", "H100", "--input-shape", str(SEQ), "--batch-size", "16", "--n-gpus", "8",
            "--strategy", "dp4-ep2-tp2", "--framework", "megatron", "--precision", "bf16"]
    main(base)
    assert "Megatron-Core's expert tensor parallelism 2" in capsys.readouterr().out  # Megatron's default
    main(base + ["--expert-tensor-parallel", "1"])
    assert "Megatron-Core's expert tensor parallelism 1" in capsys.readouterr().out
    main(["layouts", str(path), "--n-gpus", "16", "--input-shape", str(SEQ), "--batch-size", "32", "--tp", "2",
          "--frameworks", "megatron", "--pp", "1", "--cp", "1", "--activation-checkpointing", "none", "--quiet",
          "--expert-tensor-parallel", "tp"])
    out = capsys.readouterr().out
    assert "expert_tensor_parallel" in out


def test_split_experts_run_their_hidden_size_kernels_on_the_gathered_tokens_and_their_width_ones_split():
    whole, split = _rank("dp4-ep2-tp2"), _rank("dp4-ep2-tp2", etp=2)
    mods = whole.work["module"].astype(str)
    in_experts = mods.str.split(".").map(lambda q: "experts" in q).to_numpy()
    other = in_experts & (whole.work["op_class"] != "matmul").to_numpy() & (whole.work["phase"] != "optimizer").to_numpy()
    hidden = whole.work["dim_k"].to_numpy(float) == MIXTRAL["hidden_size"]
    w_b, s_b = whole.work["bytes"].to_numpy(float), split.work["bytes"].to_numpy(float)
    assert (mods.to_numpy() == split.work["module"].astype(str).to_numpy()).all()  # the same rows, split otherwise
    # on the hidden size: the tokens the 2 tensor-parallel ranks gather, twice the sequence shard's
    assert np.allclose(s_b[other & hidden], 2 * w_b[other & hidden])
    assert np.allclose(s_b[other & ~hidden], w_b[other & ~hidden])  # on the experts' width: half as wide, all tokens


def test_split_experts_in_a_pipeline_count_their_gathers_and_hold_half_of_each_expert():
    experts, _ = _expert_and_other_params()
    whole, split = (_predict("dp2-tp2-pp2", parallel={"expert_tensor_parallel": e}) for e in (1, 2))
    assert whole.comm_total_s["ep"] == 0.0 and split.comm_total_s["ep"] > 0.0  # no ep: only the tp gathers
    assert split.comm_exposed_s["ep"] == pytest.approx(split.comm_total_s["ep"])  # exposed, in the dispatcher
    assert split.step_time_s > whole.step_time_s
    ep = [_predict("dp2-ep2-tp2-pp2", parallel={"expert_tensor_parallel": e}) for e in (1, 2)]
    # a pipeline rank holds its stage's layer's experts: 4 of 8 whole with ep2 over tp x dp, or 4 of 8 halved with ep2
    # over dp
    assert ep[0].memory["params_bytes"] - ep[1].memory["params_bytes"] == pytest.approx(experts / 2 / 4 * 2)
    assert whole.memory["params_bytes"] - split.memory["params_bytes"] == pytest.approx(experts / 2 / 2 * 2)


def test_the_memory_of_split_experts_keeps_their_hidden_size_activations_whole():
    import torch

    from perfmodel.step import memory as mem
    from perfmodel.step import trace as wl

    net, _, _, _, _, lay = wl.model_and_layout(MIXTRAL, (SEQ,), None)
    saved, _ = mem._saved_for(net, torch.bfloat16, (1, SEQ), torch.long)
    # what Megatron-Core's default Transformer Engine modules save (its grouped MLP: the first GEMM's input is the
    # experts' one hidden-wide tensor)
    layer = wl.op_layer(saved.assign(phase="forward"), lay.n_layers)
    saved, _, _ = mem._fused_saved(saved, layer, lay, 2, SEQ, "te")
    in_experts = saved["module"].astype(str).str.split(".").map(lambda q: "experts" in q).to_numpy()
    hidden = saved["shape"].astype(str).str.split("x").str[-1].to_numpy() == str(MIXTRAL["hidden_size"])
    gathered = float(saved.loc[in_experts & hidden, "bytes"].sum())  # one micro-batch, every layer
    whole, split = (_predict("dp4-ep2-tp2", parallel={"expert_tensor_parallel": e}).memory for e in (1, 2))
    # the sequence shard's half of those tensors, now whole
    assert split["activations_bytes"] - whole["activations_bytes"] == pytest.approx(gathered / 2)


def test_transformer_engine_s_fp8_casts_a_split_expert_s_share_of_its_weights():
    from perfmodel.step import trace as wl
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run

    def rank(etp):
        w, c, p = resolve_run(pm.Workload(MIXTRAL, input_shape=(SEQ,), batch_size=16, optimizer="adam-fused", stack="te",
                                          precision="fp8"),
                              pm.Cluster("H100", n_gpus=8), pm.Parallelism("dp4-ep2-tp2", framework="megatron",
                                                                          micro_batch_size=1, expert_tensor_parallel=etp))
        return rank_work(w, p.with_micro_batches(w.batch_size, 8), 8)

    whole, split = rank(1), rank(2)
    casts = [wl.expert_weight_casts(x.work) for x in (whole, split)]
    assert casts[1].sum() == casts[0].sum() > 0
    assert split.work.loc[casts[1], "bytes"].sum() == pytest.approx(whole.work.loc[casts[0], "bytes"].sum() / 2)


def test_megatron_s_ep_overlap_pairs_the_gathers_of_split_experts_with_their_all_to_alls():
    from perfmodel.step.parallel import _Comm

    c = _Comm(0, 0, 0, 0, 0, 0, 0, ep_a2a=0.1, etp_moe=0.05)
    assert c.ep_pass(2) == pytest.approx(0.5)  # per MoE layer and pass: two all-to-alls, a gather and a scatter
    assert c.ep_exposed(2, 1.0, 0.2, 0.5) == pytest.approx((0.5 * 2 * 0.05 + 0.5 * 0.5, 0.0 + 0.5 * 0.5))
    plain, over = (_predict("dp4-ep2-tp2", parallel=dict(overlap_moe_dispatch=o, expert_tensor_parallel=2))
                   for o in (False, True))
    assert over.comm_exposed_s["ep"] < plain.comm_exposed_s["ep"]
    assert over.comm_total_s["ep"] == pytest.approx(plain.comm_total_s["ep"])


def test_split_experts_gather_on_the_tensor_parallel_link_while_their_all_to_all_leaves_the_node():
    from perfmodel.step.collectives import allgather_time, alltoall_time, reduce_scatter_time

    r = _rank("dp8-ep8-tp2", 16, etp=2)
    deg = dict(parse_strategy("dp8-ep8-tp2", 16), etp=2, moe=True)
    lk = resolve_links(LINKS, "H100", degrees=deg)
    assert lk["tp"].name == "nvlink (H100)" and "off the node" in lk["ep"].name  # 8 ranks 2 apart: two nodes
    per_layer = (2 * alltoall_time(r.dispatch_bytes, 8, lk["ep"]) + allgather_time(r.etp_gather_bytes, 2, lk["tp"])
                 + reduce_scatter_time(r.etp_gather_bytes, 2, lk["tp"]))
    m, layers = 2, 2  # 32 sequences over 8 replicas... of 16 GPUs: 4 per replica, in micro-batches of one
    row = _predict("dp8-ep8-tp2", n=16, batch_size=16, parallel={"expert_tensor_parallel": 2})
    assert row.comm_total_s["ep"] == pytest.approx(2 * m * layers * per_layer)


def test_experts_as_wide_as_the_hidden_size_stay_whole_beside_tensor_parallelism():
    wide = dict(MIXTRAL, intermediate_size=MIXTRAL["hidden_size"])
    with pytest.raises(StrategyError, match=r"as wide as the hidden size \(128\).*expert_tensor_parallel=1"):
        _predict("dp4-ep2-tp2", model=wide, parallel={"expert_tensor_parallel": 2})
    assert _predict("dp4-ep2-tp2", model=wide).step_time_s > 0  # whole experts: the sizes need not differ


def test_the_layout_search_keeps_split_experts_ep_group_in_a_node():
    from perfmodel.planning.layouts import layout_candidates

    c = pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect=LINKS)
    split = [parse_strategy(p.strategy, 16)["ep"] for p in layout_candidates(_work(batch_size=32), c, tensor_parallel=[2],
                                                                           pipeline_parallel=[1], context_parallel=[1],
                                                                           expert_tensor_parallel="tp")]
    assert sorted(set(split)) == [1, 4, 8]  # none, the widest whose ranks, 2 apart, stay in a node, the widest


#: a small DeepSeek-V3: 32 routed experts in 4 groups, 8 per token from 2 groups, a shared expert, one dense layer
DEEPSEEK = dict(model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"], hidden_size=256, intermediate_size=512,
                moe_intermediate_size=128, num_hidden_layers=3, first_k_dense_replace=1, num_attention_heads=4,
                num_key_value_heads=4, n_routed_experts=32, n_shared_experts=1, num_experts_per_tok=8, n_group=4,
                topk_group=2, kv_lora_rank=64, q_lora_rank=96, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
                vocab_size=512, max_position_embeddings=1024, tie_word_embeddings=False)


def test_a_token_s_destinations_under_even_and_group_limited_routing():
    from perfmodel.step.collectives import routed_spread

    rng = np.random.default_rng(0)

    def drawn(E, k, units, G=None, M=None, n=20000):
        hit_units = 0
        for _ in range(n):
            pool = (np.concatenate([np.arange(g * (E // G), (g + 1) * (E // G)) for g in rng.choice(G, M, replace=False)])
                    if G else np.arange(E))
            hit_units += len(set(rng.choice(pool, k, replace=False) // (E // units)))
        return hit_units / n

    # units of whole groups, groups over several units, and units across group boundaries (neither divides the other)
    for args in ((256, 8, 8), (256, 8, 8, 8, 4), (256, 8, 64, 8, 4), (32, 8, 2, 4, 2), (64, 6, 16, 4, 1),
                 (96, 8, 4, 6, 2), (60, 6, 10, 4, 2)):
        assert routed_spread(*args) == pytest.approx(drawn(*args), rel=0.02)
    assert routed_spread(8, 2, 8) == 2.0  # two experts, always on two ranks
    assert routed_spread(256, 8, 8, 8, 4) < routed_spread(256, 8, 8)  # DeepSeek-V3: 4 nodes at most, 3.63 on average
    with pytest.raises(ValueError, match="split evenly"):
        routed_spread(10, 2, 4)


def test_deepep_sends_a_token_once_per_node_over_rdma_and_once_per_rank_over_nvlink():
    from perfmodel.step.collectives import (DEEPEP_INTERNODE_GB_PER_S, Interconnect, alltoall_time, deepep_rdma_share,
                                            deepep_time)

    rates = [x for pair in DEEPEP_INTERNODE_GB_PER_S.values() for x in pair]
    assert deepep_rdma_share() == pytest.approx(sum(rates) / len(rates) / 50.0)
    nvl, nic = Interconnect("nvl", 450.0, 3e-6, 0.7), Interconnect("nic", 50.0 * deepep_rdma_share(), 10e-6, 1.0)
    nbytes = 8e6  # a rank's 8 copies of each token
    # one node: one kernel sends 7/8 of the token copies it makes, one per rank, at NVLink's rate, with one latency
    assert deepep_time(nbytes, 8, 8, 1.0, 5.0, nvl) == pytest.approx(7 / 8 * 1e6 * 5 / nvl.bytes_per_s + 3e-6)
    assert deepep_time(nbytes, 8, 8, 1.0, 5.0, nvl) < alltoall_time(nbytes, 8, nvl)
    assert deepep_time(nbytes, 64, 8, 3.6, 7.4, nvl, nic, 8) == pytest.approx(
        max(1e6 * 3.6 / nic.bytes_per_s + 10e-6, 1e6 * 7.4 / nvl.bytes_per_s + 3e-6))
    assert deepep_time(nbytes, 1, 8, 1.0, 1.0, nvl) == 0.0


def _deepseek(strategy, n, dispatcher, model=DEEPSEEK, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(pm.Workload(model, input_shape=(SEQ,), precision="bf16", optimizer="adam-fused", batch_size=n),
                          pm.Cluster("H100", n_gpus=n, gpus_per_node=8, interconnect=LINKS),
                          pm.Parallelism(strategy, framework="megatron", micro_batch_size=1, moe_dispatcher=dispatcher, **kw))


def test_deepep_across_nodes_sends_each_token_to_the_nodes_of_its_experts_group_limited():
    from perfmodel.step.collectives import deepep_rdma_share, deepep_time, routed_spread

    plain, deep = (_deepseek("dp16-ep16", 16, d) for d in ("alltoall", "deepep"))
    deg = dict(parse_strategy("dp16-ep16", 16), moe=True, deepep=True)
    lk = resolve_links(LINKS, "H100", degrees=deg)
    assert lk["ep_rdma"].bandwidth_gb_per_s == pytest.approx(50.0 * deepep_rdma_share())  # one NDR NIC per GPU
    routed = SEQ * 8 * 256 * 2  # a micro-batch's tokens, 8 copies each, at the hidden size in BF16
    nodes, ranks = routed_spread(32, 8, 2, 4, 2), routed_spread(32, 8, 16, 4, 2)
    one = deepep_time(routed, 16, 8, nodes, ranks, lk["ep_nvl"], lk["ep_rdma"], 2)
    m, layers = 1, 2  # one sequence per replica; 2 MoE layers, a dispatch and a combine in each pass
    assert deep.comm_total_s["ep"] == pytest.approx(2 * m * layers * 2 * one)
    assert deep.comm_total_s["ep"] < plain.comm_total_s["ep"]
    assert ("DeepEP's dispatch and combine (Megatron-Core's flex dispatcher) in each pass, over 2 nodes: each token sent "
            f"once over RDMA to each of the {nodes:.3g} nodes") in deep.basis
    assert "from 2 of 4 groups (group-limited routing)" in deep.basis
    # without group-limited routing a token reaches more of the 4 nodes of 32 GPUs
    free = {k: v for k, v in DEEPSEEK.items() if k not in ("n_group", "topk_group")}
    assert _deepseek("dp32-ep32", 32, "deepep", model=free).comm_total_s["ep"] > _deepseek(
        "dp32-ep32", 32, "deepep").comm_total_s["ep"]


def test_deepep_on_one_node_sends_a_token_once_per_rank():
    from perfmodel.step.collectives import deepep_time

    lk = resolve_links(LINKS, "H100", degrees=dict(parse_strategy("dp8-ep4", 8), moe=True, deepep=True))
    routed = SEQ * 2 * 128 * 2  # a micro-batch's tokens, 2 copies each, at the hidden size in BF16
    m, layers = 2, 2  # 16 sequences over 8 replicas in micro-batches of one; 2 MoE layers, both passes
    for strategy, ep, ranks in (("dp8-ep8", 8, 2.0), ("dp8-ep4", 4, 4 * (1 - 15 / 28))):  # 2 of 8 experts, 2 a rank
        plain, deep = (_predict(strategy, parallel={"moe_dispatcher": d}) for d in ("alltoall", "deepep"))
        assert deep.comm_total_s["ep"] == pytest.approx(2 * m * layers * 2 * deepep_time(routed, ep, 2, 1.0, ranks,
                                                                                         lk["ep"]))
        assert deep.comm_total_s["ep"] < plain.comm_total_s["ep"]
    assert "on one node: each token sent once to each of the 1.86 ranks" in deep.basis


def test_deepep_needs_megatron_ep_and_whole_experts():
    for par, n, why in ((dict(strategy="fsdp8-ep8", framework="pytorch"), 8, "framework='megatron'"),
                        (dict(strategy="dp8", framework="megatron"), 8, "Add an ep factor"),
                        (dict(strategy="dp4-ep2-tp2", framework="megatron"), 8, "expert_tensor_parallel=1")):
        with pytest.raises(StrategyError, match=f"moe_dispatcher='deepep'.*{why}"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pm.predict(_work(), pm.Cluster("H100", n_gpus=n, interconnect=LINKS),
                       pm.Parallelism(micro_batch_size=1, moe_dispatcher="deepep", **par))
    with pytest.raises(ValueError, match="moe_dispatcher must be one of alltoall, deepep"):
        pm.Parallelism("dp8-ep8", moe_dispatcher="deep-ep")


def test_the_layout_search_and_the_command_line_take_deepep(tmp_path, capsys):
    import json

    from perfmodel.cli import main
    from perfmodel.planning.layouts import layout_candidates

    c = pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect=LINKS)
    cands = layout_candidates(_work(batch_size=32), c, moe_dispatcher="deepep")
    deep = {(p.framework, parse_strategy(p.strategy, 16)["ep"], p.expert_tensor_parallel or 1) for p in cands
            if p.moe_dispatcher == "deepep"}
    assert deep and all(fw == "megatron" and e > 1 and etp == 1 for fw, e, etp in deep)
    path = tmp_path / "moe.json"
    path.write_text(json.dumps(MIXTRAL))
    main(["predict", str(path), "--gpus", "H100", "--input-shape", str(SEQ), "--batch-size", "16", "--n-gpus", "8",
          "--strategy", "dp8-ep4", "--framework", "megatron", "--precision", "bf16", "--moe-dispatcher", "deepep"])
    assert "DeepEP's dispatch and combine" in capsys.readouterr().out


def test_deepep_counts_the_nodes_its_links_were_resolved_with_and_refuses_what_it_cannot_run_on():
    wide = dict(MIXTRAL, num_local_experts=144)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for gpus_per_node in (8, 72):  # GB200's reference network: NVLink domains of 72, whatever the node says
            row = pm.predict(pm.Workload(wide, input_shape=(SEQ,), precision="bf16", optimizer="adam-fused",
                                         batch_size=144),
                             pm.Cluster("GB200", n_gpus=144, gpus_per_node=gpus_per_node),
                             pm.Parallelism("dp144-ep144", framework="megatron", micro_batch_size=1,
                                            moe_dispatcher="deepep"))
            assert "over 2 nodes" in row.basis and "ep: 1 x infiniband-ndr per GPU at DeepEP's published rate" in row.basis
    sixteen = dict(MIXTRAL, num_local_experts=16)
    for cluster, strategy, why in (
            (pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect="infiniband-ndr"), "dp16-ep16",
             "say the links per level"),
            (pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect={"intra": "nvlink", "inter": "ethernet-100g"}),
             "dp16-ep16", "over InfiniBand"),
            (pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect="infiniband-ndr"), "dp16-ep8",
             "over NVLink inside a node"),  # in one node, on the one link given for everything
            (pm.Cluster("L40S", n_gpus=8), "dp8-ep8", "over NVLink inside a node"),
            (pm.Cluster("H100", n_gpus=12, gpus_per_node=8, interconnect=LINKS), "dp12-ep4", None)):
        w = _work(sixteen, batch_size=cluster.n_gpus)
        par = pm.Parallelism(strategy, framework="megatron", micro_batch_size=1, moe_dispatcher="deepep")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if why is None:  # 12 GPUs over nodes of 8: each ep group of 4 within a node, fine
                assert pm.predict(w, cluster, par).step_time_s > 0
                continue
            with pytest.raises(StrategyError, match=why):
                pm.predict(w, cluster, par)


def test_deepep_over_nodes_that_split_its_ranks_unevenly_is_refused_and_the_search_goes_on():
    from perfmodel.planning.layouts import search_layouts

    twenty = dict(MIXTRAL, num_local_experts=20)
    c = pm.Cluster("H100", n_gpus=40, gpus_per_node=8, interconnect=LINKS)
    w = pm.Workload(twenty, input_shape=(SEQ,), precision="bf16", optimizer="adam-fused", batch_size=40)
    with pytest.raises(StrategyError, match="unevenly over the nodes"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pm.predict(w, c, pm.Parallelism("dp40-ep20", framework="megatron", micro_batch_size=1, moe_dispatcher="deepep"))
    found = search_layouts(w, c, frameworks=("megatron",), tensor_parallel=[1], pipeline_parallel=[1],
                           context_parallel=[1], expert_parallel=[4, 20], activation_checkpointing=(False,),
                           shard_gradients=(None,), moe_dispatcher="deepep")
    assert list(found["strategy"]) == ["dp40-cp1-ep4-tp1-pp1"]
    assert any("unevenly over the nodes" in r["reason"] for r in found.attrs["refused"])


def test_the_layout_search_tries_each_dispatcher_and_says_which():
    from perfmodel.planning.layouts import layout_candidates, search_layouts

    c = pm.Cluster("H100", n_gpus=16, gpus_per_node=8, interconnect=LINKS)
    sixteen = _work(dict(MIXTRAL, num_local_experts=16), batch_size=32)
    opts = dict(frameworks=("megatron",), tensor_parallel=[1], pipeline_parallel=[1], context_parallel=[1],
                expert_parallel=[16], activation_checkpointing=(False,), shard_gradients=(None,))
    assert {p.moe_dispatcher for p in layout_candidates(sixteen, c, moe_dispatcher=None, **opts)} == {"alltoall", "deepep"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = search_layouts(sixteen, c, moe_dispatcher=None, **opts).set_index("moe_dispatcher")
    assert set(found.index) == {"alltoall", "deepep"}  # the same layout once per dispatcher, each predicted
    assert found.loc["deepep", "comm_s"] < found.loc["alltoall", "comm_s"]  # across the 2 nodes: once per node
    with pytest.raises(ValueError, match="moe_dispatcher must be 'alltoall', 'deepep' or None"):
        layout_candidates(sixteen, c, moe_dispatcher="both")


def test_latent_attention_with_a_value_head_size_of_its_own_is_traced_as_a_fused_kernel():
    """DeepSeek's multi-head latent attention: 48-wide queries and keys (32 + 16 rotary), 32-wide values. The CPU's
    fused kernel refuses them, a GPU's memory-efficient and cuDNN kernels take them: one fused row per layer and pass,
    not the math path's score matrix (bmm's and a softmax)."""
    from perfmodel.step import trace as wl

    net, shape, dt, vocab, _, lay = wl.model_and_layout(DEEPSEEK, (SEQ,), None)
    work = wl.step_work(net, shape, dt, vocab, batch_size=1, prec="bf16", optimizer="adam-fused", inference=False)
    attn = work[work["op"].astype(str).str.contains("scaled_dot_product")]
    assert len(attn) == 2 * DEEPSEEK["num_hidden_layers"] and (attn["op_class"] == "matmul").all()
    in_attention = work["module"].astype(str).str.contains("self_attn").to_numpy()
    assert not ((work["op"] == "aten.bmm").to_numpy() & in_attention).any()
    assert not work["op"].astype(str).str.contains("softmax").to_numpy()[in_attention].any()
    heads, qk, v = DEEPSEEK["num_attention_heads"], 32 + 16, DEEPSEEK["v_head_dim"]
    fwd = attn[attn["phase"] == "forward"]
    # QKᵀ and PV, the causal mask's half, as the fused rows of dense models count them
    assert np.allclose(fwd["flops"].to_numpy(), 2 * heads * SEQ * SEQ * (qk + v) / 2)
    dense = wl.step_work(*wl.model_and_layout(DENSE, (SEQ,), None)[:4], batch_size=1, prec="bf16", optimizer="adam-fused",
                         inference=False)
    d = dense[dense["op"].astype(str).str.contains("scaled_dot_product") & (dense["phase"] == "forward")]
    assert np.allclose(d["flops"].to_numpy(), 2 * 4 * SEQ * SEQ * (32 + 32) / 2)  # 4 heads of 32


def test_the_fused_trace_of_latent_attention_takes_only_the_inputs_the_fused_kernels_take():
    import torch

    from perfmodel.features._counting import MetaSDPAMode

    def traced(qs, ks, vs):
        q, k, v = (torch.empty(*s, device="meta", requires_grad=True) for s in (qs, ks, vs))
        ops = []

        class Seen(torch.utils._python_dispatch.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                ops.append(str(func))
                return func(*args, **(kwargs or {}))

        with MetaSDPAMode(), Seen():
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            out.sum().backward()
        return tuple(out.shape), any("efficient_attention" in o for o in ops)

    assert traced((2, 4, 16, 48), (2, 4, 16, 48), (2, 4, 16, 32)) == ((2, 4, 16, 32), True)
    # 3-D and 5-D inputs, a query broadcast over the batch: the math path, as before (no fused kernel takes them)
    assert traced((4, 16, 48), (4, 16, 48), (4, 16, 32)) == ((4, 16, 32), False)
    assert traced((2, 2, 4, 16, 48), (2, 2, 4, 16, 48), (2, 2, 4, 16, 32)) == ((2, 2, 4, 16, 32), False)
    assert traced((1, 4, 16, 48), (2, 4, 16, 48), (2, 4, 16, 32)) == ((2, 4, 16, 32), False)


# ------------------------------------------------------------------ what Transformer Engine's grouped MLP saves


def _saved(model, prec_bytes=2, mb=2):
    import torch

    from perfmodel.step import memory as mem
    from perfmodel.step import trace as wl

    net, shape, in_dtype, _v, _n, lay = wl.model_and_layout(model, (SEQ,), None)
    saved, _ = mem._saved_for(net, torch.bfloat16, (mb, SEQ), in_dtype)
    layer = wl.op_layer(saved.assign(phase="forward"), lay.n_layers)
    return net, lay, saved, layer


def _fused(model, family="te", fp8=False):
    import torch

    from perfmodel.step import memory as mem

    net, lay, saved, layer = _saved(model)
    linears = {k for k, m in net.named_modules() if isinstance(m, torch.nn.Linear)} if fp8 else None
    out, _, _ = mem._fused_saved(saved, layer, lay, 2, 2 * SEQ, family, fp8_input_bytes=1.0 if fp8 else None,
                                 linears=linears)
    return lay, saved, out


def _expert_rows(frame):
    return frame[frame["module"].astype(str).str.contains(r"\.experts(?:\.|$)")]


@pytest.mark.parametrize("model", [MIXTRAL, QWEN3_MOE, DEEPSEEK], ids=["mixtral", "qwen3_moe", "deepseek_v3"])
def test_transformer_engine_s_grouped_mlp_saves_its_gemms_inputs_and_output_not_the_product_s_operands(model):
    """Megatron-Core's TEGroupedMLP saves per routed token the first GEMM's input (hidden), its output (2·ffn, the
    fused SwiGLU's input) and the SwiGLU's output weighted by the routing probability (ffn, the second GEMM's input);
    eager Hugging Face experts save besides the activation's output and the second GEMM's output (for their product
    with the probabilities): an ffn-wide and a hidden-wide row per MoE layer go."""
    lay, saved, out = _fused(model)
    f, h = lay.expert_ffn, lay.hidden
    before, after = _expert_rows(saved), _expert_rows(out)
    moe_layers = int(before["module"].astype(str).str.endswith(".experts.act_fn").sum())
    assert moe_layers >= 1
    routed = 2 * SEQ * lay.experts_per_token
    assert len(before) - len(after) == 2 * moe_layers
    assert before["bytes"].sum() - after["bytes"].sum() == pytest.approx(moe_layers * routed * (f + h) * 2, rel=1e-12)
    wide = after[after["shape"].astype(str).str.fullmatch(rf"{routed}x(?:{f}|{2 * f}|{h})")]
    # per MoE layer: one hidden-wide, one 2·ffn-wide and one ffn-wide row of the routed tokens
    assert wide["bytes"].sum() == pytest.approx(moe_layers * routed * (h + 3 * f) * 2, rel=1e-12)
    # the row that goes is the activation's output: the experts module's first ffn-wide row after the activation's
    mods = saved["module"].astype(str)
    for act in np.flatnonzero(mods.str.endswith(".experts.act_fn").to_numpy()):
        parent = mods.iloc[act].rsplit(".", 1)[0]
        after_act = [i for i in range(act + 1, len(saved)) if mods.iloc[i] == parent
                     and str(saved["shape"].iloc[i]) == f"{routed}x{f}"]
        assert len(after_act) >= 2
        kept = out["module"].astype(str).eq(parent) & out["shape"].astype(str).eq(f"{routed}x{f}")
        assert int(kept.sum()) == 1  # the product, the second GEMM's input
    # Liger has no grouped MLP: eager's rows stay
    _, _, liger = _fused(model, "liger")
    assert _expert_rows(liger)["bytes"].sum() == before["bytes"].sum()


def test_experts_as_wide_as_the_hidden_size_save_as_te_s_grouped_mlp_too():
    wide = dict(MIXTRAL, intermediate_size=MIXTRAL["hidden_size"])  # expert_ffn == hidden
    lay, saved, out = _fused(wide)
    routed = 2 * SEQ * lay.experts_per_token
    assert _expert_rows(saved)["bytes"].sum() - _expert_rows(out)["bytes"].sum() == pytest.approx(
        2 * routed * 2 * lay.expert_ffn * 2, rel=1e-12)  # 2 MoE layers: the activation's and the second GEMM's output


def test_under_te_fp8_the_experts_gemms_keep_their_inputs_quantized():
    import torch

    from perfmodel.step import memory as mem

    lay, saved, bf16 = _fused(MIXTRAL)
    _, _, fp8 = _fused(MIXTRAL, fp8=True)
    routed, f, h = 2 * SEQ * lay.experts_per_token, lay.expert_ffn, lay.hidden
    # each of the 2 MoE layers: the first GEMM's input (hidden) and the second's (ffn) at a byte an element
    assert _expert_rows(bf16)["bytes"].sum() - _expert_rows(fp8)["bytes"].sum() == pytest.approx(
        2 * routed * (h + f) * (2 - 1), rel=1e-12)
    # the hidden-wide row kept, quantized, is the first GEMM's input: the second GEMM's output eager saves after the
    # activation for the probabilities' product is gone
    mods, shapes = fp8["module"].astype(str), fp8["shape"].astype(str)
    hidden_rows = fp8[mods.str.endswith(".experts") & shapes.eq(f"{routed}x{h}")]
    assert hidden_rows["bytes"].tolist() == [routed * h * 1.0] * 2
    acts = fp8.index[mods.str.endswith(".experts.act_fn")]
    assert len(acts) == 2 and all(r < a for r, a in zip(sorted(hidden_rows.index), sorted(acts)))  # saved before it
    # MXFP8's bytes per element (an E8M0 scale per 32 elements) where delayed scaling's is one byte
    net, lay, saved, layer = _saved(MIXTRAL)
    linears = {k for k, m in net.named_modules() if isinstance(m, torch.nn.Linear)}
    b = mem.te_fp8_saved_bytes("mxfp8")
    mx, _, _ = mem._fused_saved(saved, layer, lay, 2, 2 * SEQ, "te", fp8_input_bytes=b, linears=linears)
    assert _expert_rows(bf16)["bytes"].sum() - _expert_rows(mx)["bytes"].sum() == pytest.approx(
        2 * routed * (h + f) * (2 - b), rel=1e-12)


def test_gpt_oss_s_clamped_experts_keep_eager_s_rows_and_a_shared_expert_is_a_fused_mlp():
    gpt_oss = dict(model_type="gpt_oss", architectures=["GptOssForCausalLM"], hidden_size=128, intermediate_size=128,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_local_experts=8,
                   num_experts_per_tok=2, vocab_size=512, max_position_embeddings=512,
                   layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=False)
    _, saved, out = _fused(gpt_oss)
    assert _expert_rows(out)["bytes"].sum() == _expert_rows(saved)["bytes"].sum()
    # DeepSeek's shared experts and Qwen2-MoE's shared expert: Megatron-Core's TE MLP, whose fused SwiGLU recomputes
    # the activation; Liger, which patches a model's own MLP classes, leaves them eager
    for model, name in ((DEEPSEEK, "shared_experts.act_fn"), (QWEN2_MOE, "shared_expert.act_fn")):
        _, saved, out = _fused(model)
        assert saved["module"].astype(str).str.endswith(name).any()
        assert not out["module"].astype(str).str.endswith(name).any()
        _, _, liger = _fused(model, "liger")
        assert liger["module"].astype(str).str.endswith(name).any()


def test_a_mixture_of_experts_under_megatron_and_te_holds_less_than_eager_experts_save(monkeypatch):
    from perfmodel.step import memory as mem
    from perfmodel.step.kernels import clear_trace_cache

    kw = dict(model=MIXTRAL, batch_size=2, stack="te")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        te = pm.predict(_work(**kw), pm.Cluster("H100", n_gpus=1), pm.Parallelism("dp", framework="megatron"))
        monkeypatch.setattr(mem, "_te_expert_rows", lambda *a, **k: ([], []))
        clear_trace_cache()  # the saved rows as the fused modules keep them are memoised per module
        eager_experts = pm.predict(_work(**kw), pm.Cluster("H100", n_gpus=1), pm.Parallelism("dp", framework="megatron"))
    routed = 2 * SEQ * 2  # 2 sequences of SEQ tokens, 2 experts each
    assert eager_experts.memory["activations_bytes"] - te.memory["activations_bytes"] == pytest.approx(
        2 * routed * (256 + 128) * 2, rel=1e-9)  # 2 MoE layers x the routed tokens x (ffn + hidden) x 2 bytes
    assert te.step_time_s == eager_experts.step_time_s  # the time is not what this changes


def test_under_te_the_experts_swiglu_runs_as_one_fused_kernel_in_each_pass():
    """Megatron-Core's grouped MLP runs the experts' SwiGLU weighted by the routing probabilities as one kernel
    (weighted_bias_swiglu_impl): the activation and its product with the up projection between the two grouped GEMMs,
    forward (reads gate and up, writes the product) and backward (reads them and the gradient, writes both halves'
    gradients); eager's products with the probabilities after the second GEMM and its concatenation of the halves'
    gradients run inside it. Liger, which has no grouped MLP, leaves the experts eager."""
    from perfmodel.step import trace as wl

    net, shape, in_dtype, _v, _n, lay = wl.model_and_layout(MIXTRAL, (SEQ,), None)
    ops = wl.step_ops(net, shape, in_dtype, "bfloat16", batch_size=2, prec="bf16", optimizer=None, inference=False)
    te = wl.te_ops(ops)
    experts = te["module"].astype(str).str.contains(r"\.experts(?:\.|$)")
    fused = te[experts & (te["op"] == "te.mlp_act")]
    n = 2 * SEQ * lay.experts_per_token * lay.expert_ffn  # the routed tokens' activation elements of one MoE layer
    assert sorted(zip(fused["phase"], fused["bytes_read"], fused["bytes_written"])) == (
        [("backward", 3.0 * n * 2, 2.0 * n * 2)] * 2 + [("forward", 2.0 * n * 2, 1.0 * n * 2)] * 2)
    assert not te["op"].isin(["aten.silu", "aten.silu_backward"]).any()
    routed_h = f"{2 * SEQ * lay.experts_per_token}x{lay.hidden}"
    probs = lambda f: f[f["module"].astype(str).str.endswith(".experts") & (f["op"] == "aten.mul")  # noqa: E731
                        & (f["output_shapes"].astype(str) == routed_h)]
    assert len(probs(ops)) == 3 * 2 and len(probs(te)) == 0  # forward 1, backward 2, in each of the 2 MoE layers
    cats = lambda f: f[f["module"].astype(str).str.endswith(".experts") & (f["op"] == "aten.cat")]  # noqa: E731
    assert len(cats(ops)) == 2 and len(cats(te)) == 0
    liger = wl.te_ops(ops, family="liger")
    assert liger["op"].eq("aten.silu").sum() == ops["op"].eq("aten.silu").sum() == 2


def test_the_experts_swiglu_keeps_to_its_activation_s_pass_and_window():
    import pandas as pd

    from perfmodel.step import trace as wl

    e = "model.layers.0.mlp.experts"
    d = pd.DataFrame([("forward", e, "aten._grouped_mm", "matmul", "8x12"),
                      ("forward", e + ".act_fn", "aten.silu", "elementwise", "8x6"),
                      ("forward", e, "aten.mul", "elementwise", "8x6"),
                      ("backward", e, "aten.mul", "elementwise", "8x6"),
                      ("forward", e, "aten._grouped_mm", "matmul", "8x4"),
                      ("forward", e, "aten.mul", "elementwise", "8x4"),  # the routing probabilities' product
                      ("forward", e, "aten.mul", "elementwise", "4x4")],  # another shape: not the routed tokens
                     columns=["phase", "module", "op", "op_class", "output_shapes"])
    fused, folded = wl._experts_swiglu(d)
    assert fused.tolist() == [False, True, True, False, False, False, False]
    assert folded.tolist() == [False, False, False, False, False, True, False]
