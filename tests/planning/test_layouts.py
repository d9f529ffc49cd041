"""One call searches the layouts of a large run: FSDP (torchtitan's 1D/2D/3D) and Megatron's data x context x tensor x
pipeline with interleaved chunks, memory first, the least recomputation that fits."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.planning import LAYOUT_COLUMNS, layout_candidates, search_layouts

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=16384, tie_word_embeddings=False)


def _run(seq=256, batch=16, **kw):
    return pm.Workload(LLAMA, input_shape=(seq,), batch_size=batch, precision="bf16", optimizer="adam-fused", **kw)


def test_candidates_keep_tensor_parallel_inside_a_node_and_split_the_batch():
    c = pm.Cluster("H100", n_gpus=16, gpus_per_node=4, interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})
    cands = layout_candidates(_run(), c, activation_checkpointing=(False,))
    degrees = [p.degrees(16) for p in cands]
    assert all(d["tp"] <= 4 and 16 % d["dp"] == 0 and d["dp"] * d["tp"] * d["pp"] * d["cp"] == 16 for d in degrees)
    assert all(d["cp"] == 1 for d in degrees)  # a short sequence: no context parallelism
    mega = [p for p in cands if p.framework == "megatron"]
    torch_ = [p for p in cands if p.framework == "pytorch"]
    assert mega and torch_ and all(p.degrees(16)["fsdp"] for p in torch_)
    for p in mega:
        d = p.degrees(16)
        assert p.micro_batches == 16 // d["dp"]  # one sample per micro-batch
        if d["pp"] in (2, 4):  # 8 layers: 2 stages of 2 x 2 chunks, 4 of 1 x 2; 8 stages have no second chunk
            assert p.pipeline_schedule == "interleaved-1f1b" and 8 % (d["pp"] * p.virtual_stages) == 0
        else:
            assert p.pipeline_schedule == "1f1b" and p.virtual_stages is None
        assert p.async_tp == (d["tp"] > 1)
    long = layout_candidates(_run(seq=8192), c, frameworks="megatron", activation_checkpointing=(False,))
    assert {p.degrees(16)["cp"] for p in long} == {1, 2}
    with pytest.raises(TypeError, match=r"pass a pm\.Workload and a pm\.Cluster"):
        layout_candidates(LLAMA, c)


def test_megatron_pipelines_are_ones_megatron_runs_when_the_layers_do_not_divide():
    """14 layers: over 2 and 4 ranks no chunk count divides them, so the candidates count the embedding and the loss
    as a layer each (16 layers' worth: 4 and 2 chunks per rank); over 8 ranks 1F1B with the same accounting."""
    from perfmodel.step.strategy import pipeline_chunks

    both = {"embedding": True, "loss": True}
    c = pm.Cluster("H100", n_gpus=8, gpus_per_node=8, interconnect={"intra": "nvlink", "inter": "infiniband-ndr"})
    w = pm.Workload(dict(LLAMA, num_hidden_layers=14), input_shape=(256,), batch_size=16, precision="bf16",
                    optimizer="adam-fused")
    got = {p.degrees(8)["pp"]: p for p in layout_candidates(w, c, frameworks="megatron", tensor_parallel=[1],
                                                            activation_checkpointing=(False,))}
    assert got[1].pipeline_layers is None
    assert (got[2].virtual_stages, got[2].pipeline_layers) == (4, both)
    assert (got[4].virtual_stages, got[4].pipeline_layers) == (2, both)
    assert (got[8].pipeline_schedule, got[8].virtual_stages, got[8].pipeline_layers) == ("1f1b", None, both)
    assert [len(x) for x in pipeline_chunks(14, 8, 1, both)] == [1, 2, 2, 2, 2, 2, 2, 1]
    found = search_layouts(w, c, candidates=[got[1], got[8]])
    assert sorted(found["pipeline_layers"]) == ["", "embedding,loss"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pm.predict(w, c, got[4])
    assert "transformer layers per pipeline rank 3, 4 x 2, 3" in r.basis


def test_asked_chunk_counts_and_micro_batch_sizes_are_each_a_layout_where_megatron_runs_them():
    """14 layers over 2 ranks: 1F1B, and 7 chunks (one layer each) divide them; 2 and 4 chunks only with the
    embedding and the loss counted as a layer each (16 layers' worth); 3 chunks in neither way, and 8 would leave the
    first chunk the embedding alone, so neither is tried. Micro-batches of 1 and 2 samples each make a layout; 3 does
    not divide a rank's 8 samples."""
    both = {"embedding": True, "loss": True}
    c = pm.Cluster("H100", n_gpus=4, gpus_per_node=4, interconnect="nvlink")
    w = pm.Workload(dict(LLAMA, num_hidden_layers=14), input_shape=(256,), batch_size=16, precision="bf16",
                    optimizer="adam-fused")
    cands = layout_candidates(w, c, frameworks="megatron", tensor_parallel=[1], pipeline_parallel=[2],
                              activation_checkpointing=(False,), shard_gradients=(None,),
                              virtual_stages=[1, 2, 3, 4, 7, 8], micro_batch_size=(1, 2, 3))
    got = sorted((p.virtual_stages or 1, repr(p.pipeline_layers), 8 // p.micro_batches) for p in cands)
    pipes = [(1, repr(None)), (2, repr(both)), (4, repr(both)), (7, repr(None))]
    assert got == sorted((k, split, mbs) for k, split in pipes for mbs in (1, 2))
    assert all(p.pipeline_schedule == ("interleaved-1f1b" if p.virtual_stages else "1f1b") for p in cands)
    # 1F1B where the layers divide over the ranks only with the embedding and the loss counted (30 over 4: 32), or
    # in neither way (31: split as evenly as they go)
    from perfmodel.planning.layouts import _megatron_pipelines

    assert _megatron_pipelines(30, 4, [1]) == [(None, both)] and _megatron_pipelines(31, 4, [1]) == [(None, None)]
    assert _megatron_pipelines(32, 4, [1, 2, 8]) == [(None, None), (2, None), (8, None)]
    # the default: the most chunks of 5, 4, 3, 2 that divide the layers (here with the embedding and the loss), one
    # sample per micro-batch
    default = layout_candidates(w, c, frameworks="megatron", tensor_parallel=[1], pipeline_parallel=[2],
                                activation_checkpointing=(False,), shard_gradients=(None,))
    assert [(p.virtual_stages, p.pipeline_layers, p.micro_batches) for p in default] == [(4, both, 8)]
    found = search_layouts(w, c, frameworks="megatron", tensor_parallel=[1], pipeline_parallel=[2],
                           activation_checkpointing=(False,), shard_gradients=(None,), virtual_stages=[1, 7],
                           micro_batch_size=[2])
    assert sorted(found["virtual_stages"].fillna(1).astype(int)) == [1, 7] and set(found["micro_batches"]) == {4}
    for bad in ([0], [2.5], [], [True], "2"):
        with pytest.raises(ValueError, match="virtual_stages must list positive whole numbers"):
            layout_candidates(w, c, virtual_stages=bad)
    # any sequence or set of counts, each once; a PyTorch layout is not repeated per Megatron option
    same = [repr(p) for p in cands]
    for counts, sizes in ((range(1, 9), np.array([1, 2, 3])), ({8, 1, 2, 4, 3, 7}, [1, 2, 2, 1, 3])):
        assert [repr(p) for p in layout_candidates(
            w, c, frameworks="megatron", tensor_parallel=[1], pipeline_parallel=[2], activation_checkpointing=(False,),
            shard_gradients=(None,), virtual_stages=counts, micro_batch_size=sizes)] == same
    from perfmodel.planning.layouts import _positive_ints

    assert _positive_ints({10, 2, 8}, "x", "") == [2, 8, 10] and _positive_ints(np.int64(3), "x", "") == [3]
    both_fw = layout_candidates(w, c, tensor_parallel=[1], pipeline_parallel=[1, 2], activation_checkpointing=(False,),
                                virtual_stages=[1, 2, 4], micro_batch_size=[1, 2])
    assert len({repr(p) for p in both_fw}) == len(both_fw)
    torch_ = [p for p in both_fw if p.framework == "pytorch"]
    assert [repr(p) for p in torch_] == [repr(p) for p in layout_candidates(
        w, c, frameworks="pytorch", tensor_parallel=[1], pipeline_parallel=[1, 2], activation_checkpointing=(False,))]
    with pytest.raises(ValueError, match="micro_batch_size must list positive whole numbers, e.g. \\(1, 2\\)"):
        layout_candidates(w, c, micro_batch_size=[-1])


def test_search_predicts_every_layout_that_fits_with_the_least_recomputation():
    c = pm.Cluster("H100", n_gpus=8, interconnect="nvlink")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = search_layouts(_run(), c, usd_per_gpu_h=2.0, tensor_parallel=[1, 2], pipeline_parallel=[1, 2])
    assert list(f.columns) == LAYOUT_COLUMNS and f["fits"].all()  # a small model fits everywhere
    assert (f["activation_checkpointing"] == "False").all()  # so nothing is recomputed
    assert np.all(np.diff(f["step_time_s"].to_numpy()) >= 0)
    assert f["cost_per_step_usd"].to_numpy() == pytest.approx(f["step_time_s"].to_numpy() * 8 * 2.0 / 3600)
    best = f.iloc[0]
    again = pm.predict(_run(), c, best["parallelism"])
    assert again.step_time_s == pytest.approx(best["step_time_s"], rel=1e-12)
    for _, row in f.iterrows():  # the memory checked first is the one pm.predict reports
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert pm.predict(_run(), c, row["parallelism"]).memory["total_bytes"] == row["memory_per_gpu_bytes"]
    assert set(f["framework"]) == {"pytorch", "megatron"} and f["strategy"].is_unique


def test_a_layout_that_fits_only_with_recomputation_gets_it_and_one_that_never_fits_says_so():
    c = pm.Cluster("L4", n_gpus=2, interconnect="pcie4")
    kw = dict(frameworks=("pytorch",), tensor_parallel=[1], pipeline_parallel=[1], context_parallel=[1])

    def mems(batch):
        return [pm.predict_memory(LLAMA, "L4", input_shape=(16384,), batch_size=batch, precision="bf16",
                                  optimizer="adam-fused", n_gpus=2, strategy="fsdp2", activation_checkpointing=a
                                  ).iloc[0]["total_bytes"] for a in (False, "selective", "full")]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = search_layouts(_run(seq=16384, batch=128), c, **kw)
        never = search_layouts(_run(seq=16384, batch=512), c, **kw)
    cap = f["capacity_bytes"].iloc[0]
    m128, m512 = mems(128), mems(512)
    assert m128[0] > cap >= m128[1] and m512[2] > cap  # the cases the test is about
    assert len(f) == 1 and bool(f["fits"].iloc[0]) and f["activation_checkpointing"].iloc[0] == "selective"
    assert f["memory_per_gpu_bytes"].iloc[0] == pytest.approx(m128[1]) and np.isfinite(f["step_time_s"].iloc[0])
    assert len(never) == 1 and not bool(never["fits"].iloc[0]) and np.isnan(never["step_time_s"].iloc[0])
    assert never["memory_per_gpu_bytes"].iloc[0] == pytest.approx(min(m512))
    with pytest.raises(ValueError, match=r"usd_per_gpu_h must be a positive price"):
        search_layouts(_run(), c, usd_per_gpu_h=-1)


def test_selective_is_each_frameworks_own_and_the_table_says_which():
    """A policy "selective" tried on a Megatron layout is Megatron's core-attention recomputation: the table says
    "attention", the row's Parallelism predicts what pm.predict does with it."""
    c = pm.Cluster("H100", n_gpus=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = search_layouts(_run(), c, frameworks=["megatron", "pytorch"], tensor_parallel=[2], pipeline_parallel=[1],
                           activation_checkpointing=["selective"])
        assert set(f["activation_checkpointing"]) == {"attention", "selective"}
        for r in f.itertuples():
            assert (r.activation_checkpointing == "attention") == (r.framework == "megatron")
            assert r.parallelism.checkpointing == r.activation_checkpointing
            assert pm.predict(_run(), c, r.parallelism).step_time_s == pytest.approx(r.step_time_s, rel=1e-12)


def test_a_layout_whose_whole_gradients_do_not_fit_shards_them_before_it_recomputes():
    """Megatron's distributed optimizer keeps whole FP32 gradients: 2.7B parameters over 8 L4s do not fit at 4096
    tokens without recomputation, but do with each micro-batch's gradients reduce-scattered into the shard (ZeRO-2),
    which the search tries before the next policy — and which the model predicts faster than full recomputation."""
    big = dict(LLAMA, vocab_size=32000, hidden_size=3072, intermediate_size=8192, num_hidden_layers=24,
               num_attention_heads=24, num_key_value_heads=8)
    w = pm.Workload(big, input_shape=(4096,), batch_size=16, precision="bf16", optimizer="adam-fused")
    c = pm.Cluster("L4", n_gpus=8, interconnect="pcie4")
    kw = dict(frameworks="megatron", tensor_parallel=[1], pipeline_parallel=[1], context_parallel=[1],
              activation_checkpointing=(False, "full"))
    cands = layout_candidates(w, c, **kw)
    assert [(p.checkpointing, p.shard_gradients) for p in cands] == [(None, None), (None, True), ("full", None),
                                                                      ("full", True)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = {(p.checkpointing, p.shard_gradients): pm.predict(w, c, p) for p in cands}
        f = search_layouts(w, c, **kw)
        whole = search_layouts(w, c, shard_gradients=(None,), **kw)
    assert not mem[(None, None)].fits and mem[(None, True)].fits and mem[("full", None)].fits  # the case
    row = f.iloc[0]
    assert len(f) == 1 and row["fits"] and row["shard_gradients"] and row["activation_checkpointing"] == "False"
    assert row["memory_per_gpu_bytes"] == mem[(None, True)].memory["total_bytes"]
    assert row["step_time_s"] == pytest.approx(mem[(None, True)].step_time_s, rel=1e-12)
    assert row["step_time_s"] < mem[("full", None)].step_time_s
    w_row = whole.iloc[0]
    assert not w_row["shard_gradients"] and w_row["activation_checkpointing"] == "full"
    # FSDP without a pipeline shards its gradients already: no second candidate, the table says True
    flat = layout_candidates(w, c, frameworks="pytorch", tensor_parallel=[1], pipeline_parallel=[1, 2],
                             context_parallel=[1], activation_checkpointing=(False,))
    assert [(p.degrees(8)["pp"], p.shard_gradients) for p in flat] == [(1, None), (2, None), (2, True)]
    with pytest.raises(ValueError, match=r"shard_gradients must list None .* and/or True"):
        layout_candidates(w, c, shard_gradients=(False,))
