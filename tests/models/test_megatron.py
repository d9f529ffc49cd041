"""Megatron-Core's execution next to PyTorch's: the distributed optimizer, sequence parallelism, data x context
parallel without FSDP, any number of interleaved model chunks, and Megatron's bytes per parameter."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel._errors import UnknownNameError
from perfmodel.models import ExtrapolationWarning
from perfmodel.step.collectives import allgather_time, allreduce_time, reduce_scatter_time
from perfmodel.step.parallel import MEGATRON_BUCKET_ELEMENTS, exposed_bucket_gather, megatron_bucket_bytes
from perfmodel.step.step_time import OutOfMemoryWarning
from perfmodel.step.strategy import StrategyError, check_framework, pipeline_virtual_stages, resolve_execution, resolve_interconnect

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=8,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)


#: A layer wide enough that its norms, elementwise kernels and optimizer update take more than the 5 µs launch-bound
#: floor of an eager kernel on an H100 (at LLAMA's width every one of them is at the floor, and splitting it changes
#: nothing).
WIDE = {**LLAMA, "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 2, "num_attention_heads": 8,
        "num_key_value_heads": 8}


def _t(model=LLAMA, **kw):
    kw = {"input_shape": (64,), "batch_size": 8, "precision": "bf16", "optimizer": "adam-fused", **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", OutOfMemoryWarning)
        return pm.predict_step_time(model, "H100", **kw).iloc[0]


def _mem(**kw):
    kw = {"input_shape": (64,), "batch_size": 8, "precision": "bf16", "optimizer": "adam", **kw}
    return pm.predict_memory(LLAMA, "H100", **kw).iloc[0]


def test_framework_names_and_defaults():
    assert check_framework("Megatron-LM") == check_framework("mcore") == check_framework("nemo") == "megatron"
    assert check_framework("torchtitan") == "pytorch"
    with pytest.raises(UnknownNameError, match=r"Unknown framework 'deepspeed'\. Expected one of: 'pytorch'"):
        check_framework("deepspeed")
    deg = dict(tp=4, fsdp=False, name="dp2-tp4")
    assert resolve_execution("megatron", deg) == dict(framework="megatron", distributed_optimizer=True, sequence_parallel=True,
                                                      overlap_tp_backward=True, shard_gradients=False,
                                                      expert_tensor_parallel=4)  # Megatron-Core's default: tp
    assert resolve_execution("megatron", dict(deg, tp=1)) == dict(framework="megatron", distributed_optimizer=True,
                                                                  sequence_parallel=False, overlap_tp_backward=False,
                                                                  shard_gradients=False, expert_tensor_parallel=1)
    assert resolve_execution("pytorch", deg)["expert_tensor_parallel"] == 1  # torchtitan's default
    assert resolve_execution("pytorch", deg)["sequence_parallel"] is False
    assert resolve_execution("pytorch", deg)["overlap_tp_backward"] is False
    assert resolve_execution("pytorch", dict(deg, fsdp=True))["sequence_parallel"] is True  # torchtitan's 2D
    assert resolve_execution("megatron", deg, distributed_optimizer=False, sequence_parallel=False,
                             overlap_tp_backward=False) == dict(
        framework="megatron", distributed_optimizer=False, sequence_parallel=False, overlap_tp_backward=False,
        shard_gradients=False, expert_tensor_parallel=4)


def test_what_a_framework_cannot_run_is_refused_with_the_fix():
    with pytest.raises(StrategyError, match=r"framework='megatron': Megatron-Core shards the optimizer .* Spell the "
                                            r"data-parallel factor dp \(e\.g\. 'dp2-tp4-pp8'\)"):
        _t(n_gpus=4, strategy="fsdp4", framework="megatron")
    with pytest.raises(StrategyError, match=r"distributed_optimizer=True is Megatron-Core's"):
        _t(n_gpus=4, strategy="dp4", distributed_optimizer=True)
    with pytest.raises(StrategyError, match=r"sequence_parallel=True .* strategy='dp' has no tensor parallelism"):
        _t(n_gpus=4, strategy="dp", framework="megatron", sequence_parallel=True)
    with pytest.raises(TypeError, match=r"distributed_optimizer must be True, False or None"):
        pm.Parallelism("dp2-tp2", framework="megatron", distributed_optimizer="yes")
    with pytest.raises(ValueError, match=r"virtual_stages=3 model chunks per pipeline rank need the interleaved schedule"):
        pm.Parallelism("dp2-pp2", virtual_stages=3)
    with pytest.raises(ValueError, match=r"runs at least 2 model chunks per pipeline rank; got virtual_stages=1"):
        pipeline_virtual_stages("interleaved-1f1b", 1)
    with pytest.raises(StrategyError, match=r"2 ranks x 5 model chunks need at least 10 layers; .* has 8"):
        _t(n_gpus=2, strategy="pp2", micro_batches=2, pipeline_schedule="interleaved-1f1b", virtual_stages=5)
    with pytest.raises(UnknownNameError, match=r"Unknown framework"):
        pm.Parallelism("dp2", framework="jax")


def test_megatron_sequence_parallel_needs_a_sequence_that_divides_over_the_tensor_parallel_ranks():
    """Megatron-Core scatters the hidden states along the sequence and asserts it divides over tp: 66 tokens over 4
    ranks (or 132 over 2 context-parallel ranks, 66 each) are refused, in time and memory alike; without sequence
    parallelism, or under PyTorch (DTensor shards unevenly), the same layout is predicted."""
    why = r"sequence parallelism splits each sequence's 66 tokens .* over the 4 tensor-parallel ranks, and 66 is not"
    for shape, layout in (((66,), "dp2-tp4"), ((132,), "cp2-tp4")):
        with pytest.raises(StrategyError, match=why):
            _t(WIDE, n_gpus=8, input_shape=shape, strategy=layout, framework="megatron")
        with pytest.raises(StrategyError, match=why):
            pm.predict_memory(WIDE, "H100", input_shape=shape, batch_size=8, precision="bf16", optimizer="adam",
                              n_gpus=8, strategy=layout, framework="megatron")
    # the step time's own check (rank_work, without the memory), on the share of a context-parallel rank: 132 tokens
    # divide over 4, their 66 per rank do not
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run

    for shape, layout in (((66,), "dp2-tp4"), ((132,), "cp2-tp4")):
        w = pm.Workload(WIDE, input_shape=shape, batch_size=8, precision="bf16", optimizer="adam-fused")
        for sp in (None, False):
            run, _, how = resolve_run(w, pm.Cluster("H100", n_gpus=8),
                                      pm.Parallelism(layout, framework="megatron", sequence_parallel=sp))
            if sp is None:
                with pytest.raises(StrategyError, match=why):
                    rank_work(run, how, 8)
            else:
                assert rank_work(run, how, 8).tp == 4
    assert _t(WIDE, n_gpus=8, input_shape=(66,), strategy="dp2-tp4", framework="megatron",
              sequence_parallel=False)["step_time_s"] > 0
    assert _t(WIDE, n_gpus=8, input_shape=(66,), strategy="fsdp2-tp4")["step_time_s"] > 0
    assert _t(WIDE, n_gpus=8, input_shape=(68,), strategy="dp2-tp4", framework="megatron")["step_time_s"] > 0


def test_megatron_bytes_per_parameter_are_18_or_6_plus_12_over_d():
    """Megatron's distributed-optimizer guide: BF16 parameters with FP32 main gradients and Adam keep 18 bytes per
    parameter, 6 + 12/d with the optimizer sharded over d data-parallel ranks."""
    one = _mem(n_gpus=4, strategy="dp4", framework="megatron", distributed_optimizer=False)
    four = _mem(n_gpus=4, strategy="dp4", framework="megatron")
    torch_dp = _mem(n_gpus=4, strategy="dp4", stack="te")  # Megatron-Core's default modules, to compare activations
    P = one["params_bytes"] / 2
    assert (one["params_bytes"] + one["grads_bytes"] + one["optimizer_bytes"]) == pytest.approx(18 * P)
    assert (four["params_bytes"] + four["grads_bytes"] + four["optimizer_bytes"]) == pytest.approx((6 + 12 / 4) * P)
    assert torch_dp["grads_bytes"] == pytest.approx(2 * P) and torch_dp["optimizer_bytes"] == pytest.approx(12 * P)
    assert four["activations_bytes"] == one["activations_bytes"] == torch_dp["activations_bytes"]
    # context-parallel ranks hold shards of the optimizer too: d = dp x cp
    cp = _mem(n_gpus=4, strategy="dp2-cp2", framework="megatron")
    assert cp["optimizer_bytes"] == pytest.approx(four["optimizer_bytes"])
    assert "distributed optimizer over 4 ranks" in cp["basis"]


def test_sequence_parallel_splits_every_activation_and_the_replicated_kernels():
    sp = _mem(n_gpus=4, strategy="dp2-tp2", framework="megatron")
    no = _mem(n_gpus=4, strategy="dp2-tp2", framework="megatron", sequence_parallel=False)
    assert sp["activations_bytes"] < no["activations_bytes"]
    assert "sequence parallel over 2" in sp["basis"]
    t_sp = _t(WIDE, n_gpus=4, strategy="dp2-tp2", framework="megatron", input_shape=(512,))
    t_no = _t(WIDE, n_gpus=4, strategy="dp2-tp2", framework="megatron", sequence_parallel=False, input_shape=(512,))
    assert t_sp["forward_s"] < t_no["forward_s"] and t_sp["flops"] == pytest.approx(t_no["flops"], rel=0.02)
    assert bool(t_sp["sequence_parallel"]) and not bool(t_no["sequence_parallel"])


def test_distributed_optimizer_reduce_scatters_gradients_and_gathers_parameters():
    link = resolve_interconnect("nvlink", "H100")
    ddp = _t(WIDE, n_gpus=4, strategy="dp4", overlap_grad_reduce=False)
    dist = _t(WIDE, n_gpus=4, strategy="dp4", framework="megatron", overlap_grad_reduce=False)
    plain = _t(WIDE, n_gpus=4, strategy="dp4", framework="megatron", distributed_optimizer=False, overlap_grad_reduce=False)
    P = pm.predict_memory(WIDE, "H100", input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam", n_gpus=4,
                          strategy="dp4").iloc[0]["params_bytes"] / 2
    # without overlap: one all-reduce of FP32 gradients (DDP), or reduce-scatter of FP32 gradients + all-gather of
    # BF16 parameters (Megatron's distributed optimizer, one bucket when nothing overlaps)
    assert ddp["comm_total_s"] == pytest.approx(allreduce_time(4 * P, 4, link), rel=1e-9)
    assert dist["comm_total_s"] == pytest.approx(reduce_scatter_time(4 * P, 4, link) + allgather_time(2 * P, 4, link),
                                                 rel=1e-9)
    assert plain["comm_total_s"] == pytest.approx(ddp["comm_total_s"], rel=1e-9)
    assert dist["optimizer_s"] < plain["optimizer_s"]  # a quarter of the parameters updated
    assert "Megatron-Core execution with the distributed optimizer" in dist["basis"]


def test_megatron_buckets_and_the_parameter_gather_overlapped_with_the_forward_pass():
    assert megatron_bucket_bytes(4, 8) == 4 * MEGATRON_BUCKET_ELEMENTS
    assert megatron_bucket_bytes(2, 64) == 2 * 64_000_000
    link = resolve_interconnect("infiniband-ndr", "H100")
    nbytes = 5 * 2 * MEGATRON_BUCKET_ELEMENTS
    one = allgather_time(2 * MEGATRON_BUCKET_ELEMENTS, 8, link)
    ex, tot = exposed_bucket_gather(10.0, nbytes, 8, link, bucket_bytes=2 * MEGATRON_BUCKET_ELEMENTS)
    assert tot == pytest.approx(5 * one) and ex == pytest.approx(one)  # a long forward pass hides all but the first
    ex0, _ = exposed_bucket_gather(0.0, nbytes, 8, link, bucket_bytes=2 * MEGATRON_BUCKET_ELEMENTS)
    assert ex0 == pytest.approx(tot)
    off, _ = exposed_bucket_gather(10.0, nbytes, 8, link, overlap=False, bucket_bytes=2 * MEGATRON_BUCKET_ELEMENTS)
    assert off == pytest.approx(tot)


def test_data_and_context_parallel_without_fsdp():
    link = resolve_interconnect("nvlink", "H100")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        pr = pm.predict(pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam-fused"),
                        pm.Cluster("H100", n_gpus=4), pm.Parallelism("dp2-cp2", overlap_grad_reduce=False))
    P = _mem(n_gpus=4, strategy="dp4")["params_bytes"] / 2
    assert pr.comm_total_s["dp"] == pytest.approx(allreduce_time(4 * P, 4, link), rel=1e-9)  # over dp x cp = 4 ranks
    assert pr.comm_total_s["cp"] > 0 and pr.comm_exposed_s["cp"] > 0


def test_more_virtual_stages_shrink_the_bubble():
    kw = dict(n_gpus=2, strategy="pp2", micro_batches=4, framework="megatron")
    one = _t(**kw)
    two = _t(**kw, pipeline_schedule="interleaved-1f1b")
    four = _t(**kw, pipeline_schedule="interleaved-1f1b", virtual_stages=4)
    assert one["bubble_s"] > two["bubble_s"] > four["bubble_s"] > 0
    assert int(four["virtual_stages"]) == 4 and "interleaved 1F1B with 4 model chunks" in four["basis"]
    # the interleaved warm-up runs more chunk forwards ahead of their backwards than 1F1B's: more in flight, on the
    # first rank p (1 + (p-1)/(p v)) micro-batches' worth, fewer with more chunks (pipeline_in_flight: the last
    # rank's count grows with them instead)
    base = _mem(n_gpus=2, strategy="pp2", micro_batches=4)
    m2 = _mem(n_gpus=2, strategy="pp2", micro_batches=4, pipeline_schedule="interleaved-1f1b")
    m4 = _mem(n_gpus=2, strategy="pp2", micro_batches=4, pipeline_schedule="interleaved-1f1b", virtual_stages=4)
    assert m2["activations_bytes"] > base["activations_bytes"] and m4["activations_bytes"] > base["activations_bytes"]


def test_a_pipeline_gpu_counts_its_share_of_the_flops():
    """MFU of a pipeline: each GPU runs its stage, 1/pp of the model's FLOPs on average."""
    dp = _t(n_gpus=2, strategy="dp2")
    pp = _t(n_gpus=2, strategy="pp2", micro_batches=4)
    # the same samples per GPU in micro-batches of 2 instead of one of 4: equal but for the few per-micro-batch kernels
    assert pp["flops"] == pytest.approx(dp["flops"], rel=1e-3)


def test_the_seventy_billion_layouts_of_the_issue_are_one_call_each():
    cfg = dict(model_type="llama", hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
               num_attention_heads=64, num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192,
               tie_word_embeddings=False)
    w = pm.Workload(cfg, input_shape=(8192,), batch_size=128, precision="bf16", optimizer="adam-fused")
    links = {"intra": "nvlink", "inter": "infiniband-ndr"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", OutOfMemoryWarning)
        mega = pm.predict(w, pm.Cluster("H100", n_gpus=64, interconnect=links),
                          pm.Parallelism("dp2-tp4-pp8", micro_batches=64, framework="megatron",
                                         pipeline_schedule="interleaved-1f1b", virtual_stages=5))
        cp = pm.predict(w, pm.Cluster("H100", n_gpus=1024, interconnect=links),
                        pm.Parallelism("dp8-cp2-tp8-pp8", micro_batches=16, framework="megatron"))
    rank_params = mega.memory["params_bytes"] / 2
    assert mega.memory["optimizer_bytes"] == pytest.approx(12 * rank_params / 2)
    assert mega.memory["grads_bytes"] == pytest.approx(4 * rank_params)
    assert 0 < mega.mfu < 1 and 0 < cp.mfu < 1
    assert "Megatron-Core" in mega.basis and "5 model chunks" in mega.basis
    assert mega.to_frame()["framework"].iloc[0] == "megatron"


def test_transformer_engine_fp8_fuses_its_casts_and_casts_each_weight_once():
    from perfmodel.step.trace import TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT, model_input, step_work

    net, shape, in_dtype, vocab, _ = model_input(LLAMA, (64,), None)
    kw = dict(batch_size=4, prec="fp8", optimizer="adam-fused", inference=False)
    te = step_work(net, shape, in_dtype, vocab, compile="te", **kw)
    ao = step_work(net, shape, in_dtype, vocab, **kw)
    assert (ao["op"] == "float8_cast").any() and not (te["op"] == "float8_cast").any()
    casts = te[te["op"] == "te_fp8_weight_cast"]
    # one cast per linear weight of the layers (q, k, v, o, gate, up, down), the vocabulary projection excepted
    linear = sum(p.numel() for n, p in net.named_parameters() if n.endswith("proj.weight"))
    assert len(casts) == 7 * LLAMA["num_hidden_layers"]
    assert casts["bytes"].sum() == pytest.approx(TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT * linear)
    assert te["fp8"].sum() == ao["fp8"].sum() > 0  # the same GEMMs at the FP8 rate
    big = dict(LLAMA, hidden_size=2048, intermediate_size=8192, num_attention_heads=16, num_key_value_heads=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        t = {(p, s): pm.predict_step_time(big, "H100", input_shape=(2048,), batch_size=8, precision=p, stack=s,
                                           optimizer="adam-fused")["step_time_s"].iloc[0]
             for p in ("bf16", "fp8") for s in ("eager", "te")}
    assert t["fp8", "te"] < t["bf16", "te"] and t["fp8", "te"] < t["fp8", "eager"]


def test_the_largest_pipeline_stage_is_chosen_by_megatrons_own_bytes(monkeypatch):
    """An uneven pipeline: the first stage holds two layers and the embedding, the last one layer, the head and the
    logits. PyTorch's 16 bytes per parameter make the first stage the largest; under Megatron's FP32 main gradients
    and distributed optimizer (7.5 bytes per parameter over 8 data-parallel ranks) the last one is."""
    from perfmodel.step import memory

    cfg = dict(model_type="llama", vocab_size=32000, hidden_size=2048, intermediate_size=8192, num_hidden_layers=3,
               num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=4096, tie_word_embeddings=False)
    seen = []
    framework_parts = memory._framework_parts

    def spy(part, deg, size, **kw):
        seen.append((part, framework_parts(part, deg, size, **kw)))
        return seen[-1][1]

    monkeypatch.setattr(memory, "_framework_parts", spy)
    got = pm.predict_memory(cfg, "H100", batch_size=64, n_gpus=16, strategy="dp8-pp2", precision="bf16",
                            optimizer="adam", input_shape=(2048,), framework="megatron", micro_batches=8,
                            activation_checkpointing="full", stack="eager").iloc[0]  # eager's FP32 log-softmax
    assert len(seen) == 2
    pytorch_totals = [sum(p) for p, _ in seen]
    megatron_totals = [sum(q) for _, q in seen]
    assert int(np.argmax(pytorch_totals)) == 0 and int(np.argmax(megatron_totals)) == 1
    assert got["total_bytes"] == pytest.approx(max(megatron_totals), rel=1e-12)
    assert got["grads_bytes"] == pytest.approx(seen[1][1][1], rel=1e-12)


# -- the micro-batch as the frameworks' configs say it ------------------------------------------------------------------

def test_micro_batch_size_is_the_rank_s_batch_over_micro_batches_and_the_pipeline_default_is_one():
    cfg = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
    w = pm.Workload(cfg, input_shape=(64,), batch_size=16, precision="bf16", optimizer="adam")
    c = pm.Cluster("H100", n_gpus=8)

    def run(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pm.predict(w, c, pm.Parallelism("dp2-tp2-pp2", framework="megatron", **kw))

    two = run(micro_batch_size=2)  # each of the 2 data-parallel ranks holds 8 sequences: 4 micro-batches of 2
    four = run(micro_batches=4)
    assert two.step_time_s == four.step_time_s and two.memory == four.memory
    assert run().step_time_s == run(micro_batch_size=1).step_time_s == run(micro_batches=8).step_time_s
    assert run().memory == run(micro_batches=8).memory
    # without a pipeline nothing changes unsaid: the rank's batch in one pass
    flat = pm.Parallelism("dp2-tp4", framework="megatron")
    assert flat.with_micro_batches(16, 8) is flat
    assert flat.with_micro_batches(16, 8).micro_batches is None
    assert pm.Parallelism("dp2-tp4", micro_batch_size=4).with_micro_batches(16, 8).micro_batches == 2
    with pytest.raises(StrategyError, match=r"micro_batch_size=3 does not divide the data-parallel rank's batch 8 "
                                            r"\(batch_size 16 / dp 2\)\. Use one of \[1, 2, 4, 8\]"):
        run(micro_batch_size=3)
    with pytest.raises(ValueError, match=r"micro_batches=4 and micro_batch_size=2 both say how the batch is cut; say one"):
        pm.Parallelism("pp", micro_batches=4, micro_batch_size=2)
    with pytest.raises(ValueError, match=r"micro_batch_size must be a positive int \(sequences per micro-batch, or None\); "
                                         r"got 0"):
        pm.Parallelism("pp", micro_batch_size=0)


def test_megatron_runs_transformer_engine_s_modules_unless_the_workload_names_a_stack():
    cfg = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
    c = pm.Cluster("H100", n_gpus=4)
    how = pm.Parallelism("dp2-tp2", framework="megatron")

    def run(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pm.predict(pm.Workload(cfg, input_shape=(64,), batch_size=8, precision="fp8", optimizer="adam", **kw), c, how)

    unsaid, te, eager = run(), run(stack="te"), run(stack="eager")
    assert unsaid.step_time_s == te.step_time_s and unsaid.memory == te.memory
    assert "kernels: Transformer Engine" in unsaid.basis and "delayed-scaling recipe" in unsaid.basis
    assert eager.step_time_s != te.step_time_s and "kernels: eager PyTorch" in eager.basis
    assert "torch.compile" in run(compile=True).basis  # a kernel family the workload names is kept
    # torchtitan's PyTorch layouts keep eager PyTorch unsaid
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = pm.predict(pm.Workload(cfg, input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam"), c,
                           pm.Parallelism("fsdp2-tp2"))
        kw = pm.predict_step_time(cfg, "H100", input_shape=(64,), batch_size=8, precision="fp8", optimizer="adam",
                                  n_gpus=4, strategy="dp2-tp2", framework="megatron").iloc[0]
    assert "kernels: eager PyTorch" in plain.basis
    assert kw["step_time_s"] == unsaid.step_time_s  # the keyword face answers the same


def test_basis_names_model_chunks_the_layers_do_not_divide_evenly_into():
    """8 layers over 2 ranks x 3 chunks: chunks of 2, 2 and 1 layers, as evenly as they go; Megatron-Core runs such a
    split only as a stated layout, and ``basis`` says so. An even split says nothing."""
    kw = dict(n_gpus=2, strategy="pp2", micro_batches=4, pipeline_schedule="interleaved-1f1b")
    uneven = _t(framework="megatron", virtual_stages=3, **kw)["basis"]
    assert "transformer layers per model chunk 2 x 2, 1 x 4 (Megatron-Core runs chunks" in uneven
    assert "per model chunk 2 x 2, 1 x 4" in _t(virtual_stages=3, **kw)["basis"]
    assert "per model chunk" not in _t(framework="megatron", virtual_stages=2, **kw)["basis"]
    # Megatron's own flags that count the embedding and the loss as layers: a split it runs, said
    said = pm.predict(pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="bf16", optimizer="adam-fused"),
                      pm.Cluster("H100", n_gpus=2),
                      pm.Parallelism("pp2", micro_batches=4, framework="megatron", pipeline_schedule="interleaved-1f1b",
                                     virtual_stages=5, pipeline_layers={"embedding": True, "loss": True})).basis
    assert "transformer layers per model chunk 0, 1 x 8, 0" in said and "runs chunks its layers" not in said
