"""perfmodel.zoo.hf: Hugging Face models from configs on the meta device, counted per op without downloading."""
from __future__ import annotations

import warnings

import pytest
import torch

from perfmodel.features import DataDependentOpsError, extract

transformers = pytest.importorskip("transformers")  # a test dependency: CI always has it
from perfmodel.zoo import hf  # noqa: E402

SEQ, VOCAB = 16, 100


def tiny(kind):
    if kind == "gpt2":
        return transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=64)
    if kind == "bert":  # as in NeuSight's bert_large.json: a dict with architectures
        return {"model_type": "bert", "architectures": ["BertLMHeadModel"], "num_hidden_layers": 2, "hidden_size": 64,
                "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": VOCAB, "is_decoder": True}
    if kind == "opt":
        return transformers.OPTConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, ffn_dim=128,
                                      vocab_size=VOCAB, word_embed_proj_dim=64)
    return transformers.SwitchTransformersConfig(
        num_layers=2, num_decoder_layers=2, d_model=64, d_ff=128, d_kv=16, num_heads=4, num_experts=4, vocab_size=VOCAB,
        num_sparse_encoder_layers=1, num_sparse_decoder_layers=1, expert_capacity=3,
    )


def step_ops(step, batch, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=UserWarning)  # no unsupported-op warning either
        warnings.filterwarnings("ignore", message=".*(token_id|loss_type).*")
        return extract(step, (SEQ,), batch_size=batch, input_dtype=torch.long, input_high=VOCAB, per_op=True, **kw)


@pytest.mark.parametrize("kind, cls", [("gpt2", "GPT2LMHeadModel"), ("bert", "BertLMHeadModel"), ("opt", "OPTForCausalLM"),
                                       ("switch", "SwitchTransformersForConditionalGeneration")])
def test_configs_build_on_meta_and_count_a_training_step(kind, cls):
    step = hf.build(tiny(kind))
    assert type(step.model).__name__ == cls and step.training
    assert {p.device.type for p in step.parameters()} == {"meta"}
    ops = step_ops(step, 3, optimizer="adam")
    row = extract(step, (SEQ,), batch_size=3, input_dtype=torch.long, input_high=VOCAB).iloc[0]
    assert ops.attrs["device"] == row.attrs["device"] == "meta"
    by = ops.groupby("phase", observed=False)["flops"].sum()
    assert (by["forward"], by["backward"]) == (row["forward_flops"], row["backward_flops"]) and row["forward_flops"] > 0
    # the loss on labels = inputs is part of the forward (cross-entropy over the vocabulary)
    fwd = ops[ops["phase"] == "forward"]
    assert fwd["op"].str.contains("log_softmax").any() and fwd["op"].str.contains("nll_loss").any()
    opt = ops[ops["phase"] == "optimizer"]
    assert opt["bytes_written"].max() == 4 * row["trainable_params"]


def test_gpt2_counts_match_the_hand_formula():
    """Linear layers of GPT-2 (Conv1D = addmm) + LM head, forward: 2 * tokens * (12 L d^2 + d V) + attention."""
    step = hf.build(tiny("gpt2"))
    batch, d, layers = 2, 64, 2
    ops = step_ops(step, batch)
    tokens = batch * SEQ
    dense = 2 * tokens * (12 * layers * d * d + d * VOCAB)
    attention = layers * 2 * 2 * batch * SEQ * SEQ * d  # QK^T and AV
    assert ops.loc[ops["phase"] == "forward", "flops"].sum() == dense + attention


def test_explicit_attn_implementations_run_on_meta():
    for impl in ("eager", "sdpa"):
        step = hf.build(tiny("gpt2"), attn_implementation=impl)
        assert step.model.config._attn_implementation == impl
        assert step_ops(step, 2)["flops"].sum() > 0


def test_switch_uniform_routing_gives_each_expert_its_share():
    step = hf.build(tiny("switch"))
    batch, capacity, experts = 3, 3, 4
    ops = step_ops(step, batch)
    fwd = ops[(ops["phase"] == "forward") & ops["module"].str.contains(r"experts\.expert_\d\.wi$")]
    per_expert = fwd.groupby("module")["flops"].sum()
    # 16 tokens per sequence round-robin over 4 experts = 4 each, capped at the capacity 3; one sparse layer per stack
    assert len(per_expert) == 2 * experts
    assert (per_expert == 2 * batch * min(SEQ // experts, capacity) * 64 * 128).all()


def test_switch_with_its_own_routing_is_refused_with_the_fix():
    step = hf.build(tiny("switch"), moe_routing="model")
    with pytest.raises(DataDependentOpsError, match=r"aten.nonzero.*perfmodel.zoo.hf.build gives Switch Transformers uniform routing"):
        extract(step, (SEQ,), batch_size=2, input_dtype=torch.long, input_high=VOCAB, per_op=True)


def test_the_caller_config_is_not_modified():
    cfg = tiny("switch")
    hf.build(cfg)
    assert getattr(cfg, "decoder_start_token_id", None) is None


def test_bad_configs_say_what_and_how():
    with pytest.raises(ValueError, match=r"needs its 'model_type'.*Add model_type"):
        hf.build({"n_layer": 2})
    with pytest.raises(ValueError, match=r"Unknown Hugging Face model_type 'gpt9'"):
        hf.build({"model_type": "gpt9"})
    with pytest.raises(TypeError, match=r"needs a Hugging Face config.*got str"):
        hf.build("gpt2")
    with pytest.raises(ValueError, match=r"moe_routing must be one of 'uniform', 'model'; got 'random'"):
        hf.build(tiny("gpt2"), moe_routing="random")


class _InitOps(torch.utils._python_dispatch.TorchDispatchMode):
    """Counts the weight-initialisation kernels run while a model is built."""

    INIT = ("normal_", "uniform_", "fill_", "zero_", "erfinv_")

    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += func._overloadpacket.__name__ in self.INIT
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("kind", ["gpt2", "bert", "opt", "switch"])
def test_build_skips_initialising_meta_weights_and_builds_the_same_model(kind, monkeypatch):
    with _InitOps() as counted:
        step = hf.build(tiny(kind))
    assert counted.n == 0  # no normal_ / uniform_ / fill_ kernels on tensors without values

    class Plain:  # the same build with every initialisation kernel run
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(hf, "_SkipMetaInit", Plain)
    with _InitOps() as counted:
        ref = hf.build(tiny(kind))
    assert counted.n > 0

    def layout(net):
        params = [(n, tuple(p.shape), p.dtype, p.requires_grad, p.device.type) for n, p in net.named_parameters()]
        buffers = [(n, tuple(b.shape), b.dtype, b.device.type) for n, b in net.named_buffers()]
        return params, buffers, [type(m).__name__ for m in net.modules()]

    assert layout(step) == layout(ref)
    if kind == "gpt2":  # weight tying survives
        assert step.model.lm_head.weight is step.model.transformer.wte.weight
    assert step_ops(step, 2).equals(step_ops(ref, 2))
