"""ZeRO-2 (``Parallelism(shard_gradients=True)``): every micro-batch's gradients reduce-scattered into the rank's
shard — the gradients' memory sharded, one reduce-scatter per micro-batch instead of one per step."""
from __future__ import annotations

import warnings

import pytest

import perfmodel as pm
from perfmodel.models import ExtrapolationWarning
from perfmodel.step.collectives import reduce_scatter_time
from perfmodel.step.memory import FSDP_REDUCE_BYTES, memory_frame
from perfmodel.step.parallel import (exposed_bucket_collective, megatron_bucket_bytes, rank_work,
                                     resolve_links)
from perfmodel.step.prediction import resolve_run
from perfmodel.step.step_time import OutOfMemoryWarning
from perfmodel.step.strategy import StrategyError, resolve_execution

#: wide enough that a pipeline stage's FP32 gradients (~100 M parameters) outweigh one of Megatron's 40 M-element
#: buckets, so that sharding them shows
MODEL = dict(model_type="llama", vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=8,
             num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=512, tie_word_embeddings=False)


def _predict(strategy, link="nvlink", n=16, **kw):
    w = pm.Workload(MODEL, input_shape=(256,), batch_size=64, precision="bf16", optimizer="adam-fused")
    c = pm.Cluster("H100", n_gpus=n, gpus_per_node=8, interconnect=link)
    p = pm.Parallelism(strategy, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", OutOfMemoryWarning)
        return pm.predict(w, c, p), w, c, p


def _one_reduce(w, c, p, params):
    """One micro-batch's reduce-scatter of ``params`` parameters' gradients, as the rank's own layout moves it."""
    w, c, p = resolve_run(w, c, p)
    r = rank_work(w, p.with_micro_batches(w.batch_size, c.n_gpus), c.n_gpus)
    link = resolve_links(c.interconnect, c.spec, degrees=p.degrees(c.n_gpus), gpus_per_node=c.gpus_per_node,
                         nics_per_node=c.nics_per_node)["dp"]
    if r.fsdp:
        return r, reduce_scatter_time(params * r.grad_bytes, r.dp_ranks, link)
    bucket, first = r.bucket_bytes(r.grad_bytes)
    return r, exposed_bucket_collective(0.0, params * r.grad_bytes, r.dp_ranks, link, collective=reduce_scatter_time,
                                        bucket_bytes=bucket, first_bucket_bytes=first)[1]


def test_defaults_follow_the_frameworks():
    deg = pm.Parallelism("fsdp8").degrees(8)
    assert resolve_execution("pytorch", deg)["shard_gradients"] is True  # FSDP reduce-scatters every micro-batch
    assert pm.Parallelism("fsdp2-pp4").execution(8)["shard_gradients"] is False  # torchtitan: whole until the last
    assert pm.Parallelism("dp2-tp4-pp2", framework="megatron").execution(16)["shard_gradients"] is False
    assert pm.Parallelism("dp2-pp4", framework="megatron", shard_gradients=True).execution(8)["shard_gradients"] is True
    assert pm.Parallelism("fsdp2-pp4", shard_gradients=True).execution(8)["shard_gradients"] is True


def test_what_cannot_shard_its_gradients_is_refused_with_the_fix():
    with pytest.raises(StrategyError, match=r"needs the optimizer sharded with them.*Shard with fsdp"):
        pm.Parallelism("dp8", shard_gradients=True).execution(8)
    with pytest.raises(StrategyError, match="needs the optimizer sharded"):
        pm.Parallelism("dp8", framework="megatron", distributed_optimizer=False, shard_gradients=True).execution(8)
    with pytest.raises(StrategyError, match=r"strategy='tp' has none\. Add a dp or fsdp factor"):
        pm.Parallelism("tp8", framework="megatron", shard_gradients=True).execution(8)
    with pytest.raises(StrategyError, match="FSDP without a pipeline reduce-scatters every micro-batch"):
        pm.Parallelism("fsdp8", shard_gradients=False).execution(8)
    with pytest.raises(TypeError, match=r"shard_gradients must be True, False or None .*got 'yes'"):
        pm.Parallelism("dp8", shard_gradients="yes")
    with pytest.raises(StrategyError, match="has none"):  # one GPU: nothing to shard over
        pm.predict(pm.Workload(MODEL, input_shape=(256,), batch_size=4, precision="bf16"), pm.Cluster("H100"),
                   pm.Parallelism(framework="megatron", shard_gradients=True))


def test_megatron_keeps_the_shard_and_one_bucket_of_fp32_gradients():
    whole, *_ = _predict("dp8-pp2", framework="megatron")
    zero2, *_ = _predict("dp8-pp2", framework="megatron", shard_gradients=True)
    g = whole.memory["grads_bytes"]  # the largest stage's FP32 main gradients, whole
    assert g > megatron_bucket_bytes(4, 8)
    assert zero2.memory["grads_bytes"] == pytest.approx(g / 8 + megatron_bucket_bytes(4, 8))
    for k in ("params_bytes", "optimizer_bytes", "activations_bytes"):
        assert zero2.memory[k] == whole.memory[k]
    assert "gradients sharded over 8 ranks, reduce-scattered after every micro-batch (ZeRO-2)" in zero2.basis
    w, c, p = resolve_run(pm.Workload(MODEL, input_shape=(256,), batch_size=64, precision="bf16",
                                      optimizer="adam-fused"), pm.Cluster("H100", n_gpus=16),
                          pm.Parallelism("dp8-pp2", framework="megatron", shard_gradients=True))
    mem = memory_frame(w, [c], p).iloc[0]
    assert "gradients sharded over 8 ranks (ZeRO-2)" in mem["basis"]
    assert mem["grads_bytes"] == zero2.memory["grads_bytes"]


def test_fsdp_with_a_pipeline_keeps_the_shard_and_one_layer_unsharded():
    whole, *_ = _predict("fsdp8-pp2")
    zero2, *_ = _predict("fsdp8-pp2", shard_gradients=True)
    # torchtitan's: the shard at BF16 and the stage's whole gradients in FP32; ZeRO-2: the shard in FP32 and one
    # layer's unsharded gradients until its reduce-scatter
    h, f = MODEL["hidden_size"], MODEL["intermediate_size"]
    layer = 4 * h * h + 3 * h * f + 2 * h
    stage = (whole.memory["grads_bytes"]) / (2 / 8 + FSDP_REDUCE_BYTES)
    assert zero2.memory["grads_bytes"] == pytest.approx(stage / 8 * FSDP_REDUCE_BYTES + layer * FSDP_REDUCE_BYTES)
    assert zero2.memory["grads_bytes"] < whole.memory["grads_bytes"]


@pytest.mark.parametrize("strategy,kw", [("dp8-pp2", dict(framework="megatron")), ("fsdp8-pp2", {})])
def test_a_pipeline_reduce_scatters_every_micro_batch(strategy, kw):
    whole, w, c, p = _predict(strategy, **kw)
    zero2, *_ = _predict(strategy, shard_gradients=True, **kw)
    r, rs = _one_reduce(w, c, p, 0.0)
    r, rs = _one_reduce(w, c, p, float(r.stage_rank.max()))
    m = r.micro_batches
    assert m == 8
    # the same last reduce-scatter and gather; m - 1 more reduce-scatters of the largest stage's gradients
    assert zero2.comm_total_s["dp"] == pytest.approx(whole.comm_total_s["dp"] + (m - 1) * rs, rel=1e-9)
    assert zero2.step_time_s >= whole.step_time_s


def test_a_stage_whose_reduce_scatter_outlasts_its_micro_batch_is_paced_by_it():
    fast, *_ = _predict("dp8-pp2", framework="megatron", shard_gradients=True)
    whole, w, c, p = _predict("dp8-pp2", link="ethernet-25g", framework="megatron")
    slow, *_ = _predict("dp8-pp2", link="ethernet-25g", framework="megatron", shard_gradients=True)
    r, rs = _one_reduce(w, c, p, 0.0)
    r, rs = _one_reduce(w, c, p, float(r.stage_rank.max()))
    # on a 25 Gb/s link each micro-batch's reduce-scatter takes longer than the micro-batch's work: the pipeline runs
    # at the reduce-scatter's pace, (m + p - 1) slots of it at least
    assert rs > whole.step_time_s / r.micro_batches
    assert slow.step_time_s >= (r.micro_batches + r.pp - 1) * rs
    assert slow.comm_exposed_s["dp"] > whole.comm_exposed_s["dp"]
    assert fast.comm_exposed_s["dp"] < slow.comm_exposed_s["dp"]


def test_flat_megatron_reduce_scatters_each_gradient_accumulation_step():
    whole, w, c, p = _predict("dp16", framework="megatron", micro_batches=4)
    zero2, *_ = _predict("dp16", framework="megatron", micro_batches=4, shard_gradients=True)
    r, _ = _one_reduce(w, c, p, 0.0)
    r, rs = _one_reduce(w, c, p, float(r.rank_params))
    assert zero2.comm_total_s["dp"] == pytest.approx(whole.comm_total_s["dp"] + 3 * rs, rel=1e-9)
    one, *_ = _predict("dp16", framework="megatron", micro_batches=1, shard_gradients=True)
    one_whole, *_ = _predict("dp16", framework="megatron", micro_batches=1)
    assert one.step_time_s == one_whole.step_time_s  # one micro-batch: the same one reduce-scatter
    assert one.memory["grads_bytes"] < one_whole.memory["grads_bytes"]

