"""FSDP2's all-gather copy-out: after each unit's all-gather the compute stream copies the gathered buffer into the
parameters' unsharded tensors (``foreach_all_gather_copy_out``), a kernel reading and writing the unit's gathered
bytes — per layer in the forward pass and again in the backward pass (not the last layer nor the root, which stay
unsharded), once per step with a pipeline; and the copies PyTorch's sequence-parallel collectives make of the
whole tensor (the sequence in dim 1)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.datasets import gpu_spec
from perfmodel.models import ExtrapolationWarning
from perfmodel.step import kernels as kn
from perfmodel.step.one_gpu import add_recompute
from perfmodel.step.parallel import FSDP_COPY_OUT_OP, layout_step, rank_work, resolve_links
from perfmodel.step.prediction import resolve_run

MODEL = dict(model_type="llama", vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=512, tie_word_embeddings=False)


def _rank(strategy, n=4, m=None):
    w = pm.Workload(MODEL, input_shape=(256,), batch_size=8, precision="bf16", optimizer="adam-fused")
    c = pm.Cluster("H100", n_gpus=n, interconnect="nvlink")
    w, c, p = resolve_run(w, c, pm.Parallelism(strategy, micro_batches=m))
    r = rank_work(w, p, n)
    links = resolve_links(c.interconnect, c.spec, degrees=p.degrees(n), gpus_per_node=c.gpus_per_node,
                          nics_per_node=c.nics_per_node)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        t = np.asarray(kn.kernel_seconds(r.work, c.spec, "bf16"), float)
    return r, t, links


def _layer_params(lay):
    per = np.zeros(lay.n_layers)
    for k, v in lay.param_numel.items():
        if 0 <= lay.param_layer[k] < lay.n_layers:
            per[lay.param_layer[k]] += v
    return per


def test_each_gathered_unit_is_copied_out_once_per_gather():
    r, t, links = _rank("fsdp4")
    lay, copy = r.lay, (r.work["op"] == FSDP_COPY_OUT_OP).to_numpy()
    fwd, bwd = copy & (r.phase == "forward"), copy & (r.phase == "backward")
    per = _layer_params(lay)
    # the forward pass gathers every parameter (the layers and the root), the backward pass every layer but the last
    assert r.work.loc[fwd, "bytes"].sum() == pytest.approx(2 * 2 * lay.params, rel=1e-12)
    assert r.work.loc[bwd, "bytes"].sum() == pytest.approx(2 * 2 * per[:-1].sum(), rel=1e-12)
    assert sorted(r.layer[bwd]) == list(range(lay.n_layers - 1)) and not r.is_opt[copy].any()
    assert r.per_step is None and (r.work["op_class"][copy] == "elementwise").all()
    # they run on the compute stream: the step's passes hold their time
    s = layout_step(r, t, links)
    without = layout_step(r, np.where(copy, 0.0, t), links)
    assert s.forward - without.forward == pytest.approx(float(t[fwd].sum()), rel=1e-9)
    assert s.backward - without.backward == pytest.approx(float(t[bwd].sum()), rel=1e-9)


def test_a_pipeline_gathers_once_per_step_and_tensor_parallel_ranks_their_share():
    r, _, _ = _rank("fsdp2-pp2", m=4)
    copy = (r.work["op"] == FSDP_COPY_OUT_OP).to_numpy()
    assert copy.any() and not (copy & (r.phase == "backward")).any()  # nothing resharded after the forward
    assert r.per_step is not None and (r.per_step == copy).all()
    tp, _, _ = _rank("fsdp2-tp2")
    flat, _, _ = _rank("fsdp4")
    moved = [x.work.loc[(x.work["op"] == FSDP_COPY_OUT_OP).to_numpy(), "bytes"].sum() for x in (tp, flat)]
    assert moved[0] < moved[1]  # a tensor-parallel rank gathers its share of the split weights
    ddp, _, _ = _rank("dp4")
    assert not (ddp.work["op"] == FSDP_COPY_OUT_OP).any()  # DDP gathers nothing


@pytest.mark.parametrize("strategy,m", [("fsdp4", None), ("fsdp2-pp2", 4)])
def test_checkpointing_recomputes_the_layers_not_the_copy_outs(strategy, m):
    """A recomputed layer reads the parameters gathered for its backward pass: full checkpointing adds the forward
    pass less its copy-outs (``forward_copy_out_s``), whatever the layout."""
    run = dict(input_shape=(256,), batch_size=8, precision="bf16", optimizer="adam-fused", n_gpus=4, strategy=strategy,
               micro_batches=m, interconnect="nvlink")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = pm.predict_step_time(MODEL, "H100", **run).iloc[0]
        full = pm.predict_step_time(MODEL, "H100", activation_checkpointing="full", **run).iloc[0]
    kept = float(plain["forward_copy_out_s"])
    assert 0 < kept < float(plain["forward_s"])
    assert full["backward_s"] - plain["backward_s"] == pytest.approx(plain["forward_s"] - kept, rel=1e-9)
    assert full["forward_copy_out_s"] == pytest.approx(kept, rel=1e-12)


def test_pytorch_sequence_parallelism_copies_around_each_collective_megatron_does_not():
    """PyTorch's SP shards dim 1 of [batch, sequence, hidden] and its functional collectives gather and scatter along
    dim 0: a copy of the whole tensor (read and written) per all-gather and reduce-scatter — four per layer and pass,
    two at the root in each — and, under asynchronous TP, only around the collectives it does not fuse."""
    from perfmodel.step.parallel import SP_CHUNK_CAT_OP

    def copies(compile_scope=None, **kw):
        # asynchronous TP is torch.compile's pass: its step is compiled, here as torchtitan compiles it unless a scope
        # is given (each layer, the embedding and output projection eager)
        comp = dict(compile=True, compile_scope=compile_scope or "layers") if kw.get("async_tp") else {}
        w = pm.Workload(MODEL, input_shape=(256,), batch_size=8, precision="bf16", optimizer="adam-fused", **comp)
        c = pm.Cluster("H100", n_gpus=4, interconnect="nvlink")
        w, c, p = resolve_run(w, c, pm.Parallelism("fsdp2-tp2", **kw))
        r = rank_work(w, p, 4)
        return r, (r.work["op"] == SP_CHUNK_CAT_OP).to_numpy()

    r, sp = copies()
    L, tokens = r.lay.n_layers, 8 // 2 * 256  # the rank's micro-batch: 4 sequences of 256 tokens, gathered whole
    assert sp.sum() == 2 * (4 * L + 2) and (r.phase[sp] == "forward").sum() == 4 * L + 2
    assert r.work.loc[sp, "bytes"].to_numpy() == pytest.approx(2 * tokens * r.lay.hidden * 2)  # BF16, read and written
    assert not r.is_opt[sp].any() and sorted(set(r.layer[sp])) == [-1, *range(L), L]
    assert "copies the whole tensor once" in _basis(r)
    fused, sp_async = copies(async_tp=True)
    # asynchronous TP: the backward reduce-scatters of the inputs summed from Q, K, V and from gate, up, the
    # embedding's two and the output projection's two (torch.compile's pass fuses only what it compiles; torchtitan
    # leaves the output projection eager)
    assert sp_async.sum() == 2 * L + 4 and (fused.phase[sp_async] == "backward").sum() == 2 * L + 2
    assert sorted(set(fused.layer[sp_async])) == [-1, *range(L), L]
    # the whole model compiled: the output projection's collectives fused too
    model_rank, whole = copies(async_tp=True, compile_scope="model")
    assert whole.sum() == 2 * L + 2 and sorted(set(model_rank.layer[whole])) == [-1, *range(L)]
    assert not copies(sequence_parallel=False)[1].any()
    w = pm.Workload(MODEL, input_shape=(256,), batch_size=8, precision="bf16", optimizer="adam-fused")
    c = pm.Cluster("H100", n_gpus=4, interconnect="nvlink")
    w, c, p = resolve_run(w, c, pm.Parallelism("dp2-tp2", framework="megatron"))
    assert not (rank_work(w, p, 4).work["op"] == SP_CHUNK_CAT_OP).any()  # sequence first: gathered along dim 0


def test_async_tp_runs_its_shard_copies_and_sums_its_partials_on_the_compute_stream():
    """torch's fused all-gather-matmul copies the rank's shard into its symmetric buffer first (1/tp of the tokens,
    read and written); its fused matmul-reduce-scatter ends with a sum over the tp partials (all the tokens read, the
    shard written), timed at the cited share of the memory bandwidth and not recomputed by the selective policy."""
    from perfmodel.step.parallel import (ASYNC_TP_COPY_IN_OP, ASYNC_TP_REDUCE_BANDWIDTH_SHARE, ASYNC_TP_REDUCE_OP,
                                         _timed_reductions)

    w = pm.Workload(MODEL, input_shape=(256,), batch_size=8, precision="bf16", optimizer="adam-fused", compile=True)
    c = pm.Cluster("H100", n_gpus=4, interconnect="nvlink")
    w, c, p = resolve_run(w, c, pm.Parallelism("fsdp2-tp2", async_tp=True))
    r = rank_work(w, p, 4)
    op = r.work["op"].to_numpy()
    L, h, tokens = r.lay.n_layers, r.lay.hidden, 8 // 2 * 256
    copy_in, red = op == ASYNC_TP_COPY_IN_OP, op == ASYNC_TP_REDUCE_OP
    # two blocks a layer: a gather each in both passes; a reduce-scatter each forward, none backward (the inputs'
    # gradients are sums of Q, K, V and of gate, up: not fused)
    assert copy_in.sum() == 4 * L and (r.phase[copy_in] == "backward").sum() == 2 * L
    assert red.sum() == 2 * L and (r.phase[red] == "forward").all() and (r.tp_reduce == red).all()
    assert r.work.loc[copy_in, "bytes"].to_numpy() == pytest.approx(2 * tokens / 2 * h * 2)
    assert r.work.loc[red, "bytes"].to_numpy() == pytest.approx(tokens * h * 2 * 1.5)
    assert sorted(set(r.layer[red])) == list(range(L)) and not r.is_opt[red | copy_in].any()
    assert "fused reduce-scatters summing the partials last" in _basis(r)
    t = _timed_reductions(r, np.ones(len(r.work)), gpu_spec("H100"))
    assert t[red] == pytest.approx(tokens * h * 2 * 1.5 / (ASYNC_TP_REDUCE_BANDWIDTH_SHARE * 3350e9))
    assert (t[~red] == 1.0).all()
    # vanilla TP and Megatron's userbuffers run none of these
    w2, c2, p2 = resolve_run(pm.Workload(MODEL, input_shape=(256,), batch_size=8, precision="bf16"), c,
                             pm.Parallelism("fsdp2-tp2"))
    assert not np.isin(rank_work(w2, p2, 4).work["op"], [ASYNC_TP_COPY_IN_OP, ASYNC_TP_REDUCE_OP]).any()
    w3, c3, p3 = resolve_run(pm.Workload(MODEL, input_shape=(256,), batch_size=8, precision="bf16"), c,
                             pm.Parallelism("dp2-tp2", framework="megatron", async_tp=True))
    assert not np.isin(rank_work(w3, p3, 4).work["op"], [ASYNC_TP_COPY_IN_OP, ASYNC_TP_REDUCE_OP]).any()
    # the step: full checkpointing recomputes the reductions with their layers, the selective policy does not
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = pm.predict_step_time(MODEL, "H100", input_shape=(256,), batch_size=8, precision="bf16",
                                     optimizer="adam-fused", n_gpus=4, strategy="fsdp2-tp2", async_tp=True, compile=True,
                                     interconnect="nvlink")
    plain = frame.iloc[0]
    assert 0 < plain["forward_tp_reduce_s"] < plain["forward_s"]
    for mode, kept in (("full", 0.0), ("selective", plain["forward_tp_reduce_s"])):
        rec = add_recompute(frame, fraction=1.0, mode=mode, detail=True).iloc[0]
        assert rec["recompute_s"] == pytest.approx(plain["forward_s"] - plain["forward_copy_out_s"] - kept, rel=1e-9)


def _basis(r):
    from perfmodel.step.parallel import _execution_basis

    return _execution_basis(r)
