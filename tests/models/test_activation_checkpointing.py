"""Activation checkpointing in the step-time model: the forward pass recomputed in the backward pass (one more forward
per micro-batch; the pipeline's slots grow by it), nothing else changed, and clear errors."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import perfmodel as pm
from perfmodel.models import ExtrapolationWarning
from perfmodel.step.kernels import conformal_interval
from perfmodel.step.one_gpu import add_recompute
from perfmodel.step.step_time import STACK_BASIS

TINY_GPT2 = dict(model_type="gpt2", n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128, bos_token_id=0,
                 eos_token_id=0)


def _t(model=TINY_GPT2, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        return pm.predict_step_time(model, "A100", input_shape=(32,), batch_size=4, **kw).iloc[0]


def test_one_gpu_adds_one_forward_pass():
    plain, ckpt = _t(), _t(activation_checkpointing=True)
    assert ckpt["step_time_s"] == pytest.approx(plain["step_time_s"] + plain["forward_s"], rel=1e-12)
    assert ckpt["backward_s"] == pytest.approx(plain["backward_s"] + plain["forward_s"], rel=1e-12)
    assert ckpt["forward_s"] == plain["forward_s"] and ckpt["optimizer_s"] == plain["optimizer_s"]
    q, _ = conformal_interval(0.2)
    assert ckpt["lower_s"] == pytest.approx(plain["lower_s"] + plain["forward_s"] * np.exp(-q), rel=1e-12)
    assert ckpt["upper_s"] == pytest.approx(plain["upper_s"] + plain["forward_s"] * np.exp(q), rel=1e-12)
    assert ckpt["basis"].endswith("activation checkpointing: the forward pass recomputed in the backward pass; "
                                  "kernels: " + STACK_BASIS["eager"])
    # the columns of the single-GPU frame are unchanged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        a = pm.predict_step_time(TINY_GPT2, "A100", input_shape=(32,), batch_size=4)
        b = pm.predict_step_time(TINY_GPT2, "A100", input_shape=(32,), batch_size=4, activation_checkpointing=True)
    assert list(a.columns) == list(b.columns)


@pytest.mark.parametrize("strategy", ["dp", "fsdp", "tp"])
def test_data_and_tensor_parallel_add_the_forward_of_every_micro_batch(strategy):
    """The forward pass of every micro-batch again (FSDP2's all-gather copy-outs aside: a recomputed layer reads the
    parameters gathered for its backward pass); under tensor parallelism its layers' collectives too (each layer's
    two, exposed as the forward pass exposes them), counted as communication, not compute."""
    plain = _t(n_gpus=2, strategy=strategy, micro_batches=2)
    ckpt = _t(n_gpus=2, strategy=strategy, micro_batches=2, activation_checkpointing=True)
    again = plain["comm_tp_forward_s"]
    assert (again > 0) == (strategy == "tp") and plain["comm_cp_forward_s"] == 0
    assert (plain["forward_copy_out_s"] > 0) == (strategy == "fsdp")
    rec = plain["forward_s"] - plain["forward_copy_out_s"]  # what is recomputed
    assert ckpt["step_time_s"] == pytest.approx(plain["step_time_s"] + rec + again, rel=1e-12)
    assert ckpt["compute_s"] == pytest.approx(plain["compute_s"] + rec, rel=1e-12)
    assert ckpt["comm_s"] == pytest.approx(plain["comm_s"] + again, rel=1e-12) and ckpt["bubble_s"] == plain["bubble_s"] == 0
    # the interval is on the compute only: the re-run communication shifts both ends by itself
    q, _ = conformal_interval(0.2)
    assert ckpt["lower_s"] == pytest.approx(plain["lower_s"] + rec * np.exp(-q) + again, rel=1e-12)
    if strategy == "tp":
        # the two collectives per layer of the vanilla forward pass (the embedding's is not in a checkpointed layer):
        # 2 x 2 layers of the (2 x 2 + 1) the forward pass runs, every micro-batch
        tp_forward = plain["comm_s"] / 2 * 4 / 5  # comm_s: forward and backward, each 2 layers x 2 + 1
        assert again == pytest.approx(tp_forward, rel=1e-9)
        assert "tensor-parallel collectives of what it recomputes run again" in ckpt["basis"]


def test_what_each_checkpointing_mode_runs_again_under_tensor_parallelism():
    """Full: every layer's collectives; torchtitan's per-operator policy keeps the reduce-scatters' outputs, so with
    sequence parallelism half (the all-gathers); Megatron's core-attention recomputation none; every other layer half."""
    model = dict(TINY_GPT2, n_layer=4)
    kw = dict(model=model, n_gpus=2, strategy="fsdp1-tp2")
    plain = _t(**kw)
    again = plain["comm_tp_forward_s"]
    assert bool(plain["sequence_parallel"]) and again > 0
    grown = {mode: _t(**kw, activation_checkpointing=mode)["comm_s"] - plain["comm_s"]
             for mode in ("full", "selective", "layer", "attention")}
    assert grown["full"] == pytest.approx(again, rel=1e-9)
    assert grown["selective"] == pytest.approx(again / 2, rel=1e-9)
    assert grown["layer"] == pytest.approx(again / 2, rel=1e-9)  # layers 2 and 4 of 4
    assert grown["attention"] == pytest.approx(0.0, abs=1e-15)


def test_recompute_comm_refuses_an_unknown_mode_and_bad_seconds():
    from perfmodel.step.one_gpu import recompute_comm

    frame = pd.DataFrame([_t(n_gpus=2, strategy="tp")])
    with pytest.raises(ValueError, match=r"unknown checkpointing mode 'sometimes'; expected 'full', 'selective'"):
        recompute_comm(frame, "sometimes", 2)
    with pytest.raises(ValueError, match=r"mode 'layer:2' checkpoints every N-th layer and needs the model's layer count"):
        recompute_comm(frame, "layer:2")
    with pytest.raises(ValueError, match=r"comm_rerun must be finite seconds >= 0"):
        add_recompute(frame, comm_rerun={"tp": -1.0})


@pytest.mark.parametrize("v", [1, 2, 4])
def test_pipeline_slots_grow_by_the_stage_forward(v):
    """1F1B: every slot grows by the stage's forward; interleaved over v chunks per rank, the fill and drain are v
    times shorter (the rank's v chunks, not a fixed two)."""
    m, p = 4, 2
    kw = dict(n_gpus=p, strategy="pp", micro_batches=m)
    if v > 1:  # p x v chunks of at least one layer each
        kw.update(model=dict(TINY_GPT2, n_layer=8))
        kw.update(pipeline_schedule="interleaved-1f1b", virtual_stages=v)
    plain = _t(**kw)
    ckpt = _t(**kw, activation_checkpointing=True)
    f = plain["forward_s"] / m  # one micro-batch's forward on the slowest stage
    assert plain["comm_tp_forward_s"] == 0  # no tensor parallelism: nothing else runs again
    assert ckpt["step_time_s"] == pytest.approx(plain["step_time_s"] + (m + (p - 1) / v) * f, rel=1e-12)
    assert ckpt["bubble_s"] == pytest.approx(plain["bubble_s"] + (p - 1) / v * f, rel=1e-12)
    assert ckpt["compute_s"] == pytest.approx(plain["compute_s"] + m * f, rel=1e-12)
    # step = compute + exposed communication + bubble still holds
    assert ckpt["step_time_s"] == pytest.approx(ckpt["compute_s"] + ckpt["comm_s"] + ckpt["bubble_s"], rel=1e-9)


def test_errors():
    with pytest.raises(ValueError, match=r"activation_checkpointing must be False, True \(= 'full'\), 'full', 'selective' "
                                         r"\(torchtitan's per-operator policy; Megatron's core attention with "
                                         r"framework='megatron'\), 'attention' \(Megatron's selective recomputation of the "
                                         r"core attention\) or 'layer' / 'layer:N' \(every N-th layer "
                                         r"checkpointed, N >= 1; torchtitan's per-layer policy\); got 'yes'\."):
        _t(activation_checkpointing="yes")
    with pytest.raises(ValueError, match=r"or 'layer' / 'layer:N' .*; got 'layer:0'\."):
        _t(activation_checkpointing="layer:0")
    with pytest.raises(ValueError, match=r"activation_checkpointing recomputes the forward pass during the backward pass "
                                         r"of a training step; an inference pass has no backward pass\."):
        _t(activation_checkpointing=True, inference=True, optimizer=None)
    with pytest.raises(ValueError, match=r"add_recompute needs the frame of perfmodel.predict_step_time \(columns forward_s, "
                                         r"backward_s, step_time_s\)\."):
        add_recompute(pd.DataFrame({"step_time_s": [1.0]}))
    with pytest.raises(ValueError, match=r"add_recompute: an inference row has no backward pass to recompute in"):
        add_recompute(pd.DataFrame({"forward_s": [1.0], "backward_s": [0.0], "step_time_s": [1.0], "optimizer": ["inference"]}))


def test_selective_recomputes_part_of_the_forward_pass_and_keeps_part_of_the_activations():
    """torchtitan's per-operator policy: less recompute than full checkpointing, more memory than it, less than none."""
    plain, full, sel = _t(), _t(activation_checkpointing="full"), _t(activation_checkpointing="selective")
    assert plain["step_time_s"] < sel["step_time_s"] < full["step_time_s"]
    assert sel["forward_s"] == plain["forward_s"]
    assert "selective" in sel["basis"]
    mem = {a: pm.predict_memory(TINY_GPT2, "A100", input_shape=(32,), batch_size=4, activation_checkpointing=a).iloc[0]
           for a in (False, "full", "selective")}
    assert mem["full"]["activations_bytes"] < mem["selective"]["activations_bytes"] < mem[False]["activations_bytes"]
    assert mem["selective"]["activation_checkpointing"] == "selective" and not mem[False]["activation_checkpointing"]


def test_selective_mask_keeps_attention_and_every_other_matmul():
    from perfmodel.step.trace import selective_recompute_mask

    rows = pd.DataFrame({"op": ["aten.mm", "aten.add", "aten.mm", "aten._scaled_dot_product_flash_attention_for_cpu",
                                "aten.mm", "aten.mm", "aten.mm"],
                         "phase": ["forward"] * 6 + ["backward"]})
    layer = np.array([0, 0, 0, 0, 0, 1, 0])
    assert selective_recompute_mask(rows, layer, 2).tolist() == [False, True, True, False, False, False, False]


@pytest.mark.parametrize("mode", ["full", "selective", "layer:2", True])
def test_a_cnn_whose_blocks_are_nested_in_stages_is_refused_not_half_modelled(mode):
    """ResNet-32's 15 blocks sit in 3 stages (layers.0.*, layers.1.*, layers.2.*): the step time charged the whole
    forward pass (+36 %) while the memory checkpointed the first stage's 5 blocks only (+2 KiB). Both faces refuse it,
    with the reason; without checkpointing both answer."""
    for fn in (pm.predict_step_time, pm.predict_memory):
        with pytest.raises(ValueError, match=r"resnet-32 is not one: its blocks are nested in stages \(layers\.0\.\*"):
            fn("resnet-32", ["V100"], batch_size=32, activation_checkpointing=mode)
        assert len(fn("resnet-32", ["V100"], batch_size=32, activation_checkpointing=False)) == 1


def test_a_module_without_a_stack_of_layers_is_refused():
    import torch

    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    with pytest.raises(ValueError, match="it has no stack of repeated layers"):
        pm.predict_step_time(net, ["V100"], input_shape=(64,), batch_size=8, activation_checkpointing="full")


EAGER_GPT2 = dict(TINY_GPT2, attn_implementation="eager")


def test_core_attention_mask_spans_the_attention_module_from_its_first_matmul_to_its_last():
    """Megatron's selective recomputation: in each layer, the attention module's own operators from the query-key
    product to the product with the values (scaling, mask, softmax, attention dropout between them); the
    projections (children of the attention module), the head reshapes around the core and other modules stay."""
    from perfmodel.step.trace import core_attention_mask

    att, proj = "m.h.0.attn", "m.h.0.attn.c_attn"
    rows = pd.DataFrame({
        "op": ["aten.addmm", "aten.transpose", "aten.bmm", "aten.mul", "aten._softmax", "aten.bernoulli_", "aten.bmm",
               "aten.clone", "aten.addmm", "aten.addmm", "aten.bmm", "aten.bmm", "aten.bmm"],
        "module": [proj, att, att, att, att, att, att, att, "m.h.0.attn.c_proj", "m.h.0.mlp.c_fc", "m.h.1.attn",
                   "m.h.1.attn", "m.h.0.attn"],
        "phase": ["forward"] * 12 + ["backward"]})
    layer = np.array([0] * 10 + [1, 1, 0])
    assert core_attention_mask(rows, layer, 2).tolist() == [False, False, True, True, True, True, True, False, False,
                                                            False, True, True, False]
    # a fused attention kernel is the whole core
    fused = pd.DataFrame({"op": ["aten.mm", "aten._scaled_dot_product_flash_attention", "aten.mm"],
                          "module": ["m.h.0.self_attn.q_proj", "m.h.0.self_attn", "m.h.0.self_attn.o_proj"],
                          "phase": ["forward"] * 3})
    assert core_attention_mask(fused, np.zeros(3, int), 1).tolist() == [False, True, False]


def _mem(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        return pm.predict_memory(EAGER_GPT2, "A100", input_shape=(32,), batch_size=4, **kw).iloc[0]


def test_attention_recompute_drops_the_score_tensors_and_recomputes_the_core():
    """Korthikanti et al. 2022: the core attention's score-shaped tensors (softmax output, dropout mask, dropped-out
    probabilities: b·a·s² elements each per layer, the mask one byte each as a GPU's fused dropout keeps it) are not
    kept, everything else is; the step grows by the core's forward."""
    b, a, s, layers, size = 4, 4, 32, 2, 4  # FP32
    plain, att, full = _mem(), _mem(activation_checkpointing="attention"), _mem(activation_checkpointing="full")
    assert plain["activations_bytes"] - att["activations_bytes"] == pytest.approx(layers * (2 * size + 1) * b * a * s * s)
    assert full["activations_bytes"] < att["activations_bytes"] < plain["activations_bytes"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        t = {m: pm.predict_step_time(EAGER_GPT2, "A100", input_shape=(32,), batch_size=4,
                                     activation_checkpointing=m).iloc[0] for m in (False, "attention", "full")}
    assert t[False]["step_time_s"] < t["attention"]["step_time_s"] < t["full"]["step_time_s"]
    assert "Megatron's selective recomputation: each layer's core attention" in t["attention"]["basis"]


def test_selective_means_the_core_attention_under_megatron():
    """Megatron names its core-attention recomputation "selective": with framework="megatron" the word means it;
    with PyTorch it stays torchtitan's per-operator policy."""
    w = pm.Workload(EAGER_GPT2, input_shape=(32,), batch_size=8, precision="bf16", optimizer="adam")
    c = pm.Cluster("A100-SXM4-80GB", n_gpus=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        got = {(fw, ac): pm.predict(w, c, pm.Parallelism("tp2", framework=fw, activation_checkpointing=ac)).to_frame().iloc[0]
               for fw in ("megatron", "pytorch") for ac in ("selective", "attention")}
    for col in ("step_time_s", "activations_bytes"):
        assert got["megatron", "selective"][col] == got["megatron", "attention"][col]
        assert got["pytorch", "selective"][col] != got["pytorch", "attention"][col]
    assert pm.Parallelism(framework="megatron", activation_checkpointing="selective").checkpointing == "attention"
    assert pm.Parallelism(activation_checkpointing="core_attn").checkpointing == "attention"


def test_core_attention_is_found_in_bert_and_a_model_without_one_is_refused():
    """BERT keeps its core attention in ``attention.self``: recomputed there as in GPT-2's ``attn``. A stack of layers
    without an attention module is refused with what was looked for, never silently left as it was."""
    import torch

    bert = dict(model_type="bert", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                vocab_size=512, max_position_embeddings=128, attn_implementation="eager")
    w = pm.Workload(bert, input_shape=(32,), batch_size=4, precision="bf16", optimizer="adam")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        r = {ac: pm.predict(w, pm.Cluster("A100"), pm.Parallelism(activation_checkpointing=ac)) for ac in (False, "attention")}
    assert r["attention"].step_time_s > r[False].step_time_s
    assert r["attention"].memory["activations_bytes"] < r[False].memory["activations_bytes"]

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(64, 64)

        def forward(self, x):
            return x + torch.relu(self.fc(x))

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Block() for _ in range(3)])

        def forward(self, x):
            for blk in self.layers:
                x = blk(x)
            return x.sum()

    with pytest.raises(ValueError, match=r"activation_checkpointing='attention' recomputes each layer's core attention, "
                                         r"and no layer of this model has one"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            pm.predict_step_time(Stack(), "A100", input_shape=(64,), batch_size=8, activation_checkpointing="attention")
    with pytest.raises(ValueError, match=r"and no layer of this model has one perfmodel can find: no tensor is saved"):
        pm.predict_memory(Stack(), "A100", input_shape=(64,), batch_size=8, activation_checkpointing="attention")


def test_a_pipeline_with_tensor_parallelism_grows_its_slots_by_the_collectives_too():
    """Each 1F1B slot of the slowest stage grows by its forward pass and its layers' tensor-parallel collectives."""
    m, p = 4, 2
    kw = dict(model=dict(TINY_GPT2, n_layer=4), n_gpus=4, strategy="tp2-pp2", micro_batches=m)
    plain = _t(**kw)
    ckpt = _t(**kw, activation_checkpointing=True)
    f, x = plain["forward_s"] / m, plain["comm_tp_forward_s"] / m
    assert x > 0
    assert ckpt["step_time_s"] == pytest.approx(plain["step_time_s"] + (m + p - 1) * (f + x), rel=1e-12)
    assert ckpt["bubble_s"] == pytest.approx(plain["bubble_s"] + (p - 1) * (f + x), rel=1e-12)
    assert ckpt["comm_s"] == pytest.approx(plain["comm_s"] + m * x, rel=1e-12)
    assert ckpt["step_time_s"] == pytest.approx(ckpt["compute_s"] + ckpt["comm_s"] + ckpt["bubble_s"]
                                                + ckpt["overlap_slowdown_s"], rel=1e-9)
