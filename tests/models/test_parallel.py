"""Multi-GPU step time: the alpha-beta collectives on hand-computed cases, DDP's bucket overlap at its limits, the 1F1B
pipeline, the strategies through predict_step_time, every error message, and n_gpus=1 unchanged."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.datasets import UnknownNameError
from perfmodel.models import ExtrapolationWarning
from perfmodel.step.parallel import DDP_BUCKET_BYTES, bucket_sizes, exposed_bucket_allreduce, pipeline_time
from perfmodel.step.collectives import (Interconnect, allgather_time, allreduce_time, p2p_time, reduce_scatter_time,
                                          resolve_interconnect)
from perfmodel.step.strategy import StrategyError

TINY_GPT2 = dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128)
#: large enough that its kernels are above the launch floor (where splitting work saves time)
MID_GPT2 = dict(TINY_GPT2, n_embd=1024, n_head=16, vocab_size=4096, n_positions=512, bos_token_id=0, eos_token_id=0)
#: a link with round numbers: 100 GB/s per direction, 10 us per step, no efficiency loss
LINK = Interconnect("test", 100.0, 1e-5, efficiency=1.0)
MiB = 2**20

#: columns of the single-GPU frame before multi-GPU strategies existed
SINGLE_COLUMNS = ["model", "gpu", "batch_size", "precision", "optimizer", "step_time_s", "lower_s", "upper_s", "forward_s",
                  "backward_s", "optimizer_s", "n_kernels", "flops", "basis", "memory_per_gpu_bytes", "fits"]


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        return pm.predict_step_time(*args, **kwargs)


# -- collectives -------------------------------------------------------------------------------------------------------

def test_collectives_on_hand_computed_cases():
    # ring all-reduce of 1 GB over 4 GPUs: 2 * 3/4 * 1e9 / 1e11 s + 2 * 3 * 10 us
    assert allreduce_time(1e9, 4, LINK) == pytest.approx(0.015 + 6e-5, rel=1e-12)
    # tree: 2 * 1e9 / 1e11 + 2 * log2(4) * 10 us
    assert allreduce_time(1e9, 4, LINK, algorithm="tree") == pytest.approx(0.02 + 4e-5, rel=1e-12)
    # all-gather / reduce-scatter of 1 GB over 4: 3/4 * 0.01 + 3 * 10 us
    assert allgather_time(1e9, 4, LINK) == pytest.approx(0.0075 + 3e-5, rel=1e-12)
    assert reduce_scatter_time(1e9, 4, LINK) == allgather_time(1e9, 4, LINK)
    assert p2p_time(1e9, LINK) == pytest.approx(0.01 + 1e-5, rel=1e-12)
    # NCCL's efficiency divides the bandwidth
    half = Interconnect("half", 100.0, 0.0, efficiency=0.5)
    assert allreduce_time(1e9, 2, half) == pytest.approx(2 * 0.5 * 1e9 / 5e10, rel=1e-12)
    # one GPU or nothing to send costs nothing
    assert allreduce_time(1e9, 1, LINK) == 0 == allgather_time(0, 4, LINK) == p2p_time(0, LINK)


def test_collective_errors():
    with pytest.raises(UnknownNameError, match=r"Unknown all-reduce algorithm 'butterfly'\. Expected one of: nccl, ring, tree\."):
        allreduce_time(1e6, 4, LINK, algorithm="butterfly")
    with pytest.raises(ValueError, match=r"n \(GPUs in the collective\) must be a positive int; got 0\."):
        allreduce_time(1e6, 0, LINK)
    with pytest.raises(ValueError, match=r"Interconnect 'bad': bandwidth_gb_per_s must be a positive finite number; got 0\."):
        Interconnect("bad", 0)
    with pytest.raises(ValueError, match=r"Interconnect 'bad': efficiency must be in \(0, 1\]; got 1\.5\."):
        Interconnect("bad", 10, efficiency=1.5)


def test_ddp_buckets_and_overlap_limits():
    sizes = bucket_sizes(60 * MiB)
    assert list(sizes / MiB) == [1, 25, 25, 9]
    assert bucket_sizes(0).size == 0
    grads = 200 * MiB
    last = allreduce_time(bucket_sizes(grads)[-1], 4, LINK)
    total = sum(allreduce_time(s, 4, LINK) for s in bucket_sizes(grads))
    # a long backward pass hides every bucket but the last
    exposed, tot = exposed_bucket_allreduce(10.0, grads, 4, LINK)
    assert exposed == pytest.approx(last, rel=1e-9) and tot == pytest.approx(total, rel=1e-12)
    # no backward time to hide behind: everything is exposed
    exposed0, _ = exposed_bucket_allreduce(0.0, grads, 4, LINK)
    assert exposed0 == pytest.approx(total, rel=1e-12)
    # in between: more than the last bucket, less than all of them, and never more with a longer backward pass
    mid = [exposed_bucket_allreduce(b, grads, 4, LINK)[0] for b in (0.0, 0.001, 0.002, 0.004, 10.0)]
    assert all(a >= b - 1e-15 for a, b in zip(mid, mid[1:])) and last < mid[2] < total
    # without overlap: one all-reduce of every gradient after the backward pass
    no, no_tot = exposed_bucket_allreduce(10.0, grads, 4, LINK, overlap=False)
    assert no == no_tot == pytest.approx(allreduce_time(grads, 4, LINK), rel=1e-12)
    assert exposed_bucket_allreduce(1.0, grads, 1, LINK) == (0.0, 0.0)


def test_pipeline_bubble():
    step, bubble = pipeline_time([1.0] * 4, 1)
    assert step == 4 and bubble == 3  # one micro-batch: each stage idles while the other three work
    step, bubble = pipeline_time([1.0] * 4, 4)
    assert step == 7 and bubble / step == pytest.approx(3 / 7)  # (p-1)/(m+p-1)
    step, _ = pipeline_time([1.0, 2.0, 1.0], 5)
    assert step == 4 + 4 * 2  # the slowest stage paces the steady state
    step, _ = pipeline_time([1.0, 1.0], 3, p2p_s=0.1)
    assert step == pytest.approx(2 + 2 + 0.2 * (1 + 2))
    with pytest.raises(ValueError, match=r"micro_batches must be a positive int; got 0\."):
        pipeline_time([1.0], 0)
    with pytest.raises(ValueError, match=r"stage_s must be a non-empty sequence of non-negative seconds"):
        pipeline_time([], 1)


# -- interconnects -----------------------------------------------------------------------------------------------------

def test_interconnect_from_the_catalog_a_name_or_a_spec():
    h100 = resolve_interconnect(None, "H100")
    assert h100.name == "nvlink (H100)" and h100.bandwidth_gb_per_s == 450  # 900 GB/s both directions in the catalog
    assert resolve_interconnect(None, "L4").name == "pcie4"  # no NVLink: its PCIe generation
    assert resolve_interconnect("PCIe5").bandwidth_gb_per_s == 63.0
    assert resolve_interconnect("nvlink", "A100").bandwidth_gb_per_s == 300
    assert resolve_interconnect(LINK) is LINK
    with pytest.raises(UnknownNameError, match=r"Unknown interconnect 'warp-drive'\. Expected one of: nvlink, infinity-fabric, pcie3, pcie4, "
                                               r"pcie5, .*infiniband-ndr, an Interconnect\(name, bandwidth_gb_per_s, latency_s\), or a "
                                               r"link per level such as \{'intra': 'nvlink', 'inter': 'infiniband-ndr'\} \(on the "
                                               r"command line intra=nvlink,inter=infiniband-ndr\)\."):
        resolve_interconnect("warp-drive", "H100")
    with pytest.raises(UnknownNameError, match=r"interconnect 'nvlink': GPU L4 has no NVLink in the catalog .* Use its PCIe \('pcie4'\)"):
        resolve_interconnect("nvlink", "L4")
    # an AMD board's own link is named, and a part at its training clock by its catalog name
    from perfmodel.step.kernels import at_sustained_clock
    with pytest.raises(UnknownNameError, match=r"GPU MI300X has no NVLink in the catalog .* Use 'infinity-fabric' \(its board's link\)"):
        resolve_interconnect("nvlink", at_sustained_clock("MI300X", 0.675))
    with pytest.raises(ValueError, match=r"interconnect 'nvlink' takes its bandwidth from the GPU's catalog row: pass gpu="):
        resolve_interconnect("nvlink")
    with pytest.raises(TypeError, match=r"interconnect must be a name .* or an Interconnect; got int\."):
        resolve_interconnect(3, "H100")


# -- strategies through predict_step_time ----------------------------------------------------------------------------

def test_n_gpus_1_is_the_single_gpu_step_unchanged():
    base = _quiet(TINY_GPT2, ["A100", "T4"], input_shape=(64,), batch_size=4)
    assert list(base.columns) == SINGLE_COLUMNS
    for kw in (dict(n_gpus=1), dict(n_gpus=1, strategy="tp"), dict(n_gpus=1, strategy="pp", interconnect="pcie4")):
        pd.testing.assert_frame_equal(_quiet(TINY_GPT2, ["A100", "T4"], input_shape=(64,), batch_size=4, **kw), base)


def test_data_parallel_splits_the_batch_and_adds_the_exposed_all_reduce():
    one = _quiet(TINY_GPT2, "H100", input_shape=(64,), batch_size=2).iloc[0]
    dp = _quiet(TINY_GPT2, "H100", input_shape=(64,), batch_size=8, n_gpus=4, strategy="dp").iloc[0]
    assert dp["n_gpus"] == 4 and dp["strategy"] == "dp" and dp["interconnect"] == "nvlink (H100)"
    # each GPU runs the single-GPU step at batch 8 / 4 = 2; communication on top
    assert dp["compute_s"] == pytest.approx(one["step_time_s"], rel=1e-9)
    assert dp["step_time_s"] == pytest.approx(dp["compute_s"] + dp["comm_s"], rel=1e-12)
    assert 0 < dp["comm_s"] <= dp["comm_total_s"]
    # per layer: c_attn 64x192 + 192, attn c_proj 64x64 + 64, c_fc 64x256 + 256, mlp c_proj 256x64 + 64, two layer norms;
    # then the token (tied with the output) and position embeddings and the final layer norm
    layer = 64 * 192 + 192 + 64 * 64 + 64 + 64 * 256 + 256 + 256 * 64 + 64 + 2 * 2 * 64
    params = 2 * layer + 512 * 64 + 128 * 64 + 2 * 64
    link = resolve_interconnect(None, "H100")
    assert dp["comm_total_s"] >= allreduce_time(params * 4, 4, link)  # buckets cost at least one all-reduce of all grads
    late = _quiet(TINY_GPT2, "H100", input_shape=(64,), batch_size=8, n_gpus=4, strategy="dp", overlap_grad_reduce=False).iloc[0]
    assert late["comm_s"] == pytest.approx(allreduce_time(params * 4, 4, link), rel=1e-9)
    slow = _quiet(TINY_GPT2, "H100", input_shape=(64,), batch_size=8, n_gpus=4, strategy="dp", interconnect="ethernet-25g",
                  overlap_grad_reduce=False).iloc[0]
    assert slow["comm_s"] > late["comm_s"] and slow["interconnect"] == "ethernet-25g"


def test_tensor_parallel_splits_the_layers_and_all_reduces_activations():
    one = _quiet(TINY_GPT2, "A100", input_shape=(64,), batch_size=8, optimizer=None).iloc[0]
    tp = _quiet(TINY_GPT2, "A100", input_shape=(64,), batch_size=8, n_gpus=4, strategy="tp", optimizer=None).iloc[0]
    link = resolve_interconnect(None, "A100")
    # 4 all-reduces per layer (2 forward, 2 backward) + embedding + output projection, of tokens x hidden FP32 values
    assert tp["comm_total_s"] == pytest.approx((4 * 2 + 2) * allreduce_time(8 * 64 * 64 * 4, 4, link), rel=1e-12)
    assert tp["comm_s"] == tp["comm_total_s"]
    assert tp["flops"] < one["flops"] / 2  # the matmuls split four ways
    # a model large enough that its kernels are not at the launch floor: each GPU computes far less than one GPU alone
    one = _quiet(MID_GPT2, "A100", input_shape=(512,), batch_size=8, optimizer=None).iloc[0]
    tp = _quiet(MID_GPT2, "A100", input_shape=(512,), batch_size=8, n_gpus=4, strategy="tp", optimizer=None).iloc[0]
    assert one["step_time_s"] / 4 < tp["compute_s"] < one["step_time_s"] / 2


def test_fsdp_and_pipeline():
    fs = _quiet(MID_GPT2, "A100", input_shape=(128,), batch_size=8, n_gpus=2, strategy="fsdp", optimizer="adam").iloc[0]
    dp = _quiet(MID_GPT2, "A100", input_shape=(128,), batch_size=8, n_gpus=2, strategy="dp", optimizer="adam").iloc[0]
    assert fs["optimizer_s"] < dp["optimizer_s"]  # each GPU updates half the parameters
    assert fs["comm_total_s"] > 0 and fs["step_time_s"] >= fs["compute_s"]
    pp1 = _quiet(TINY_GPT2, "A100", input_shape=(64,), batch_size=8, n_gpus=2, strategy="pp", micro_batches=1).iloc[0]
    pp4 = _quiet(TINY_GPT2, "A100", input_shape=(64,), batch_size=8, n_gpus=2, strategy="pp", micro_batches=4).iloc[0]
    assert pp1["micro_batches"] == 1 and pp1["bubble_s"] > 0
    assert pp4["bubble_s"] / pp4["step_time_s"] < pp1["bubble_s"] / pp1["step_time_s"]  # more micro-batches, smaller bubble
    # unsaid, a pipeline runs micro-batches of one sequence (Megatron's and torchtitan's default micro-batch size)
    unsaid = _quiet(TINY_GPT2, "A100", input_shape=(64,), batch_size=8, n_gpus=2, strategy="pp").iloc[0]
    assert unsaid["micro_batches"] == 8


def test_fused_adam_moves_seven_parameter_sizes():
    from perfmodel.step import step_time as ost
    from perfmodel.step import trace as wl
    from perfmodel.zoo import hf

    net = hf.build(TINY_GPT2, attn_implementation="eager")
    import torch

    ops = wl.step_ops(net, (64,), torch.long, 512, batch_size=2, prec="fp32", optimizer="adam-fused", inference=False)
    fused = ops[ops["op"] == "fused_adam"]
    n = sum(p.numel() for p in net.parameters())
    assert len(fused) == 1 and int(fused["bytes_read"].iloc[0] + fused["bytes_written"].iloc[0]) == 7 * 4 * n
    r = _quiet(TINY_GPT2, "A100", input_shape=(64,), batch_size=2, optimizer="adam-fused").iloc[0]
    assert r["optimizer"] == "adam-fused" and r["optimizer_s"] > 0


def test_every_error_is_clear():
    kw = dict(input_shape=(64,), batch_size=8)
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy 'zero'\. Expected one of: dp, fsdp, tp, pp"):
        _quiet(TINY_GPT2, "A100", n_gpus=4, strategy="zero", **kw)
    with pytest.raises(UnknownNameError, match=r"Unknown parallel strategy 'zero'"):
        _quiet(TINY_GPT2, "A100", n_gpus=1, strategy="zero", **kw)
    with pytest.raises(StrategyError, match=r"strategy='tp' over 3 GPUs does not divide gpt2: attention heads = 4, hidden size = 64, "
                                            r"MLP size = 256 not divisible by 3\. Use n_gpus that divides them"):
        _quiet(TINY_GPT2, "A100", n_gpus=3, strategy="tp", input_shape=(64,), batch_size=9)
    with pytest.raises(StrategyError, match=r"strategy='pp' over 4 stages needs at least 4 layers; gpt2 has 2 repeated layers\. "
                                            r"Use fewer GPUs"):
        _quiet(TINY_GPT2, "A100", n_gpus=4, strategy="pp", **kw)
    with pytest.raises(StrategyError, match=r"strategy='dp': the global batch 6 does not split over 4 GPUs\. Use a batch_size "
                                            r"that is a multiple of n_gpus \(e\.g\. 4 or 8\)\."):
        _quiet(TINY_GPT2, "A100", n_gpus=4, strategy="dp", input_shape=(64,), batch_size=6)
    with pytest.raises(StrategyError, match=r"strategy='pp': the global batch 8 does not split into micro_batches=3"):
        _quiet(TINY_GPT2, "A100", n_gpus=2, strategy="pp", micro_batches=3, **kw)
    with pytest.raises(UnknownNameError, match=r"Unknown interconnect 'carrier-pigeon'"):
        _quiet(TINY_GPT2, "A100", n_gpus=2, interconnect="carrier-pigeon", **kw)
    with pytest.raises(UnknownNameError, match=r"Unknown interconnect 'carrier-pigeon'"):
        _quiet(TINY_GPT2, "A100", n_gpus=1, interconnect="carrier-pigeon", **kw)
    with pytest.raises(ValueError, match=r"n_gpus must be a positive int; got 0\."):
        _quiet(TINY_GPT2, "A100", n_gpus=0, **kw)
    with pytest.raises(ValueError, match=r"micro_batches must be a positive int or None \(1\); got 0\."):
        _quiet(TINY_GPT2, "A100", n_gpus=2, micro_batches=0, **kw)
    with pytest.raises(ValueError, match=r"inference=True predicts one forward pass on one GPU"):
        _quiet(TINY_GPT2, "A100", n_gpus=2, optimizer=None, inference=True, **kw)
    with pytest.raises(StrategyError, match=r"strategy='tp' splits attention heads and hidden columns, but resnet-32 has no config"):
        _quiet("resnet-32", "A100", n_gpus=2, strategy="tp", batch_size=8)
    with pytest.raises(ValueError, match=r"optimizer must be 'sgd-momentum', 'adam' or None \(forward \+ backward only\), or 'adam-fused' \(one fused kernel"):
        _quiet(TINY_GPT2, "A100", optimizer="lion", **kw)
