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


# -- every head trains ------------------------------------------------------------------------------------------------
from transformers.models.auto import modeling_auto  # noqa: E402

from perfmodel._errors import ModelConfigError  # noqa: E402

#: tiny configs (2 layers, hidden 32) of the model types whose heads are walked
TINY = {
    "bert": dict(model_type="bert", num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=64,
                 vocab_size=VOCAB, max_position_embeddings=64),
    "gpt2": dict(model_type="gpt2", n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=64),
    "t5": dict(model_type="t5", num_layers=2, num_decoder_layers=2, d_model=32, d_kv=8, d_ff=64, num_heads=4,
               vocab_size=VOCAB),
    "bart": dict(model_type="bart", encoder_layers=2, decoder_layers=2, d_model=32, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=VOCAB,
                 max_position_embeddings=64),
    "llama": dict(model_type="llama", num_hidden_layers=2, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=64),
}

#: every class of these model types in transformers' auto-model mappings (base models, LM, classification, QA ...)
HEADS = sorted({(mt, arch) for name in dir(modeling_auto) if name.startswith("MODEL") and name.endswith("_MAPPING_NAMES")
                for mt in TINY for arch in [getattr(modeling_auto, name).get(mt)] if isinstance(arch, str)})

#: parameters a head never uses in its forward, with the reason (every other trainable parameter must get a gradient)
UNUSED = {
    # the decoder of BART alone: its cross-attention runs only with encoder_hidden_states, which a causal LM has not
    "BartForCausalLM": r"\.encoder_attn(_layer_norm)?\.",
}


def test_the_walk_covers_every_kind_of_head():
    kinds = {hf.head_kind(getattr(transformers, arch)) for _, arch in HEADS}
    assert kinds == set(hf.HEAD_KINDS)
    assert len(HEADS) >= 25


@pytest.mark.parametrize("model_type, arch", HEADS, ids=[a for _, a in HEADS])
def test_every_head_trains_every_parameter(model_type, arch):
    import re

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step = hf.build({**TINY[model_type], "architectures": [arch]}, device="cpu")
        assert type(step.model).__name__ == arch and step.training
        x = torch.randint(0, VOCAB, (2, 8), generator=torch.Generator().manual_seed(0))
        loss = step(x)
    assert loss.dim() == 0 and loss.requires_grad and torch.isfinite(loss)
    loss.backward()
    unused = UNUSED.get(arch)
    missing = [n for n, p in step.named_parameters() if p.requires_grad and p.grad is None
               and not (unused and re.search(unused, n))]
    assert missing == []
    if unused:  # the exception is needed, and only for what it names
        assert any(re.search(unused, n) and p.grad is None for n, p in step.named_parameters())


@pytest.mark.parametrize("arch, labels", [
    ("BertForQuestionAnswering", {"start_positions": (3,), "end_positions": (3,)}),
    ("BertForSequenceClassification", {"labels": (3,)}),
    ("BertForTokenClassification", {"labels": (3, SEQ)}),
    ("BertForPreTraining", {"labels": (3, SEQ), "next_sentence_label": (3,)}),
])
def test_heads_get_labels_of_their_shape_and_trace_a_backward_on_meta(arch, labels):
    step = hf.build({**TINY["bert"], "architectures": [arch]})
    seen = {}
    handle = step.model.register_forward_pre_hook(
        lambda mod, args, kwargs: seen.update({k: tuple(v.shape) for k, v in kwargs.items() if k != "input_ids"}),
        with_kwargs=True)
    try:
        row = extract(step, (SEQ,), batch_size=3, input_dtype=torch.long, input_high=VOCAB).iloc[0]
    finally:
        handle.remove()
    assert seen == labels
    assert row["backward_flops"] > row["forward_flops"] > 0


def test_sequence_classification_labels_follow_the_problem_type():
    for problem, shape, dtype in [("regression", (2, 3), torch.float32), ("multi_label_classification", (2, 3), torch.float32),
                                  ("single_label_classification", (2,), torch.long)]:
        step = hf.build({**TINY["bert"], "architectures": ["BertForSequenceClassification"], "num_labels": 3,
                         "problem_type": problem}, device="cpu")
        got = {}
        step.model.register_forward_pre_hook(lambda m, a, kw: got.update(kw), with_kwargs=True)
        step(torch.zeros(2, 8, dtype=torch.long)).backward()
        assert (tuple(got["labels"].shape), got["labels"].dtype) == (shape, dtype)


def test_a_head_without_a_loss_is_refused_not_traced_forward_only():
    with pytest.raises(ModelConfigError, match=r"cannot build a training loss for GPT2DoubleHeadsModel.*Expected "
                                               r"'architectures' naming such a class"):
        hf.build({**TINY["gpt2"], "architectures": ["GPT2DoubleHeadsModel"]})
    step = hf.build({**TINY["bert"], "architectures": ["BertForQuestionAnswering"]})
    step.kind = "causal-lm"  # a model that returns no loss for the labels it is given
    with pytest.raises(ModelConfigError, match=r"BertForQuestionAnswering returned no loss when called with labels "
                                               r"\(kind 'causal-lm'\), so its step would have no backward pass"):
        step(torch.zeros(2, 8, dtype=torch.long, device="meta"))
    with pytest.raises(ModelConfigError, match=r"BartForSequenceClassification pools each sequence at its <eos> token.*"
                                               r"device='cpu'"):
        hf.build({**TINY["bart"], "architectures": ["BartForSequenceClassification"]})


# -- sequences longer than the position table, bad configs ------------------------------------------------------------
def test_a_sequence_longer_than_the_position_table_is_refused():
    step = hf.build(transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=1024))
    with pytest.raises(ModelConfigError, match=r"GPT2LMHeadModel was given sequences of 4096 tokens, but its config holds "
                                               r"positions for 1024 .*Expected seq_len <= 1024.*raise max_position_embeddings"):
        extract(step, (4096,), batch_size=1, input_dtype=torch.long, input_high=VOCAB)
    with pytest.raises(ModelConfigError, match=r"4096 tokens"):
        extract(step, (4096,), batch_size=1, input_dtype=torch.long, input_high=VOCAB, per_op=True)
    assert extract(step, (1024,), batch_size=1, input_dtype=torch.long, input_high=VOCAB).iloc[0]["forward_flops"] > 0
    assert hf.max_positions(transformers.T5Config()) is None  # relative positions: no table, no limit


@pytest.mark.parametrize("config, match", [
    ([], r"needs a Hugging Face config: a dict \(a config.json object\) with 'model_type'.*got list \[\]"),
    (None, r"needs a Hugging Face config.*got NoneType null"),
    ({"model_type": "gpt2", "n_layer": -2}, r"of model_type 'gpt2' has n_layer = -2; expected a positive int.*Fix n_layer"),
    ({"model_type": "bert", "num_attention_heads": 0}, r"has num_attention_heads = 0; expected a positive int"),
    ({"model_type": "gpt2", "n_layer": "12"}, r"has n_layer = '12'; expected a positive int"),
    ({"model_type": "gpt2", "n_embd": 30, "n_head": 4}, r"transformers could not build GPT2LMHeadModel from this config "
                                                         r"\(ValueError: .*divisible.*fix the config values it names"),
    ({"model_type": ["gpt2"]}, r"model_type must be a string such as 'gpt2'; got \['gpt2'\]"),
    ({"model_type": "gpt2", "architectures": ["NoSuchModel"]}, r"'architectures' = \['NoSuchModel'\] names no class"),
])
def test_bad_config_json_gives_one_clear_project_error(config, match):
    with pytest.raises(ModelConfigError, match=match) as info:
        hf.build(config)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


def test_predict_model_input_refuses_json_null_and_lists_with_the_project_error():
    from perfmodel.step import step_time as ost
    from perfmodel.step import trace as wl
    for bad, shown in (([], r"list \[\]"), (None, r"null \(None\)")):
        with pytest.raises(ModelConfigError, match=rf"model must be a zoo id.*got {shown}\. Pass one of these"):
            wl.model_input(bad, (16,), None)
    with pytest.raises(ModelConfigError, match=r"n_layer = -2"):
        wl.model_input({"model_type": "gpt2", "n_layer": -2}, (16,), None)


def test_a_config_without_an_sdpa_path_falls_back_to_eager_and_says_so():
    """transformers has no SDPA path for Switch Transformers: a config that names no attention kernel is traced with
    eager attention (as transformers itself falls back), and ``basis`` says so; a config that asks for SDPA is refused."""
    import warnings

    import perfmodel as pm
    from perfmodel._errors import ModelConfigError

    cfg = transformers.SwitchTransformersConfig(num_layers=2, num_decoder_layers=2, d_model=64, d_ff=128, num_heads=4,
                                                d_kv=16, num_experts=4, vocab_size=512)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = pm.predict_step_time(cfg, "H100", input_shape=(32,), batch_size=2, precision="bf16")
    assert r["step_time_s"].item() > 0
    assert "attention: eager (the config names no attention kernel and transformers has no SDPA path" in r["basis"].item()
    assert "scaled_dot_product_attention" not in r["basis"].item()  # the kernel family says the attention is eager too
    assert "attention eager: softmax(QKᵀ)V" in r["basis"].item()
    asked = dict(cfg.to_dict(), attn_implementation="sdpa")
    with pytest.raises(ModelConfigError, match="scaled_dot_product_attention"):
        pm.predict_step_time(asked, "H100", input_shape=(32,), batch_size=2)
    gpt2 = dict(model_type="gpt2", n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        basis = pm.predict_step_time(gpt2, "H100", input_shape=(16,), batch_size=2)["basis"].item()
        assert "attention: eager" not in basis and "attention through scaled_dot_product_attention" in basis
        eager = pm.predict_step_time(dict(gpt2, attn_implementation="eager"), "H100", input_shape=(16,),
                                     batch_size=2)["basis"].item()
        assert "attention eager: softmax(QKᵀ)V" in eager and "scaled_dot_product_attention" not in eager


def test_config_dict_keeps_a_pretrained_configs_attention_kernel_and_copies():
    import transformers

    from perfmodel.zoo.hf import config_dict

    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, attn_implementation="eager")
    d = config_dict(cfg)
    assert d["model_type"] == "gpt2" and d["n_layer"] == 2 and d["attn_implementation"] == "eager"
    given = {"model_type": "gpt2", "n_layer": 2}
    out = config_dict(given)
    assert out == given and out is not given
    assert config_dict("gpt2-small") is None and config_dict(None) is None
