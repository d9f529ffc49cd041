"""Per-op rows of deep stacks of identical layers from a shallow copy: the same rows as the full trace, or the full trace."""
from __future__ import annotations

import re
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from perfmodel.features import FeatureExtractionError, extract
from perfmodel.features import _repeats as R
from perfmodel.step.trace import compiled_work, work_from_ops

SEQ, VOCAB = 8, 64


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _both(net, shape, **kw):
    """(fast, full) per-op frames of ``net`` on meta."""
    kw = dict(per_op=True, device="meta", **kw)
    return _quiet(extract, net, shape, **kw), _quiet(extract, net, shape, full_trace=True, **kw)


def _assert_same(fast, full):
    keys = ["phase", "op", "op_class"]
    count = lambda d: d.groupby(keys, observed=True).size()  # noqa: E731
    sums = lambda d: d.groupby(keys, observed=True)[["flops", "bytes_read", "bytes_written"]].sum()  # noqa: E731
    assert count(fast).equals(count(full))
    assert sums(fast).equals(sums(full))
    # row by row, modules and shapes included
    rows = lambda d: d.drop(columns="dataflow").reset_index(drop=True)  # noqa: E731
    assert rows(fast).equals(rows(full))
    # the dataflow is relative to each row: a copied layer's is its model's, except how far back a tensor of the
    # model's root (read by every layer) lies; what is computed from it — the kernels a compiler fuses — is the same
    compiled = lambda d: compiled_work(work_from_ops(d)).drop(columns="dataflow")  # noqa: E731
    assert compiled(fast).equals(compiled(full))


# ------------------------------------------------------------------------------------------------- Hugging Face
transformers = pytest.importorskip("transformers")
from perfmodel.zoo import hf  # noqa: E402


def _config(kind, layers):
    if kind == "gpt2":
        return transformers.GPT2Config(n_layer=layers, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=32)
    if kind == "bert":
        return {"model_type": "bert", "architectures": ["BertLMHeadModel"], "num_hidden_layers": layers, "hidden_size": 32,
                "num_attention_heads": 2, "intermediate_size": 64, "vocab_size": VOCAB, "is_decoder": True}
    if kind == "opt":
        return transformers.OPTConfig(num_hidden_layers=layers, hidden_size=32, num_attention_heads=2, ffn_dim=64,
                                      vocab_size=VOCAB, word_embed_proj_dim=32)
    # Switch: block 0 holds the relative position bias, then dense and sparse blocks alternate (period 2)
    return transformers.SwitchTransformersConfig(
        num_layers=layers, num_decoder_layers=layers, d_model=32, d_ff=64, d_kv=16, num_heads=2, num_experts=2,
        vocab_size=VOCAB, num_sparse_encoder_layers=layers // 2, num_sparse_decoder_layers=layers // 2, expert_capacity=3,
    )


# (family, layers, expected description of the stacks): GPT-2/BERT/OPT repeat every layer; Switch after its first
# block, every two blocks, with one block left over at the end of each stack
CASES = [
    ("gpt2", 7, ["model.transformer.h: 7 layers = 0 + 7 x 1 + 0, traced 4"]),
    ("bert", 6, ["model.bert.encoder.layer: 6 layers = 0 + 6 x 1 + 0, traced 4"]),
    ("opt", 6, ["model.model.decoder.layers: 6 layers = 0 + 6 x 1 + 0, traced 4"]),
    ("switch", 12, ["model.encoder.block: 12 layers = 1 + 5 x 2 + 1, traced 10",
                    "model.decoder.block: 12 layers = 1 + 5 x 2 + 1, traced 10"]),
]


@pytest.mark.parametrize("kind, layers, stacks", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("batch, optimizer", [(1, None), (3, "adam")])
def test_shallow_trace_gives_the_rows_of_the_full_trace(kind, layers, stacks, batch, optimizer):
    step = _quiet(hf.build, _config(kind, layers))
    kw = dict(batch_size=batch, input_dtype=torch.long, input_high=VOCAB, optimizer=optimizer)
    fast, full = _both(step, (SEQ,), **kw)
    assert fast.attrs["repeated_stacks"] == stacks  # the shallow copy was used ...
    assert full.attrs["repeated_stacks"] == []
    _assert_same(fast, full)  # ... and gives the same rows
    # every layer's module names are there, and the per-phase totals are the one-row summary's
    for s in stacks:
        path, n = s.split(":")[0], int(s.split(": ")[1].split()[0])
        layers = {m[len(path) + 1:].split(".")[0] for m in fast["module"] if m.startswith(path + ".")}
        assert layers == {str(i) for i in range(n)}
    row = _quiet(extract, step, (SEQ,), batch_size=batch, input_dtype=torch.long, input_high=VOCAB, device="meta").iloc[0]
    by = fast.groupby("phase", observed=False)["flops"].sum()
    assert (by["forward"], by["backward"]) == (row["forward_flops"], row["backward_flops"])
    if optimizer:
        opt = fast[fast["phase"] == "optimizer"]
        assert opt["bytes_written"].max() == 4 * row["trainable_params"]  # every parameter of every layer is updated


def test_the_default_per_op_path_uses_it_and_sgd_momentum_too():
    step = _quiet(hf.build, _config("gpt2", 6))
    kw = dict(batch_size=2, input_dtype="int64", input_high=VOCAB, per_op=True, optimizer="sgd-momentum")
    fast = _quiet(extract, step, (SEQ,), **kw)  # device=None: meta for a module built on meta
    full = _quiet(extract, step, (SEQ,), full_trace=True, **kw)
    assert fast.attrs["repeated_stacks"] and fast.attrs["device"] == "meta"
    _assert_same(fast, full)


# --------------------------------------------------------------------------------------- stacks it must not expand
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


class Stacked(nn.Module):
    """``n`` blocks in a ModuleList; ``mode`` makes the stack not a plain repetition in various ways."""

    def __init__(self, n=7, d=8, mode="plain"):
        super().__init__()
        self.mode = mode
        widths = [d] * n
        self.blocks = nn.ModuleList(Block(w) for w in widths)
        if mode == "tied":  # one weight shared by two layers
            self.blocks[3].fc.weight = self.blocks[1].fc.weight
        self.n = n
        self.extra = nn.Linear(d, d)

    def forward(self, x):
        if self.mode == "by-count":  # indexes the list by a count fixed at construction: the copy cannot run
            for i in range(self.n):
                x = self.blocks[i](x)
            return x
        blocks = list(self.blocks)
        if self.mode == "reversed":
            blocks = blocks[::-1]
        for i, b in enumerate(blocks):
            x = b(x)
            if self.mode == "position" and i == 2:  # one more op after the third layer only
                x = self.extra(x)
            if self.mode == "twice" and i == 1:  # the second layer runs twice
                x = b(x)
        return x


def _meta(mode, **kw):
    with torch.device("meta"):
        return Stacked(mode=mode, **kw)


def test_a_plain_custom_stack_is_expanded_exactly():
    fast, full = _both(_meta("plain"), (8,), batch_size=2, optimizer="adam")
    assert fast.attrs["repeated_stacks"] == ["blocks: 7 layers = 0 + 7 x 1 + 0, traced 4"]
    _assert_same(fast, full)


@pytest.mark.parametrize("mode", ["position", "reversed", "twice", "by-count", "tied"])
def test_falls_back_to_the_full_trace_when_the_stack_is_not_provably_repeated(mode):
    net = _meta(mode)
    # the layers look alike (but for the tied weight): the trace of the copy is what refuses them
    assert [s.path for s in R.find_stacks(net)] == ([] if mode == "tied" else ["blocks"])
    fast, full = _both(net, (8,), batch_size=2, optimizer="sgd-momentum")
    assert fast.attrs["repeated_stacks"] == []  # the full trace was used
    _assert_same(fast, full)
    if mode == "position":  # the extra op is there once, after layer 2
        fwd = fast[(fast["phase"] == "forward") & (fast["op"] == "aten.addmm")]
        assert list(fwd["module"]) == ["blocks.0.fc", "blocks.1.fc", "blocks.2.fc", "extra", *[f"blocks.{i}.fc" for i in range(3, 7)]]


def test_layers_that_differ_are_not_a_stack():
    net = _meta("plain")
    with torch.device("meta"):
        net.blocks[4] = Block(8)
        net.blocks[4].fc = nn.Linear(8, 8, bias=False)  # one layer without a bias
    assert R.find_stacks(net) == []
    net.blocks[4].fc = net.blocks[3].fc.__class__(8, 8, device="meta")
    assert [s.path for s in R.find_stacks(net)] == ["blocks"]
    short = _meta("plain", n=4)  # too few layers to save anything
    assert R.find_stacks(short) == []


def test_shallow_copy_leaves_the_model_untouched():
    net = _meta("plain")
    (s,) = R.find_stacks(net)
    small = R.shallow_copy(net, [s])
    assert len(small.blocks) == 4 and len(net.blocks) == 7
    assert small.blocks[3] is net.blocks[3] and small.extra is net.extra


@settings(max_examples=40, deadline=None)
@given(head=st.integers(0, 3), period=st.integers(1, 4), units=st.integers(5, 9), tail=st.integers(0, 3),
       data=st.data())
def test_split_finds_a_repetition_that_explains_the_layers(head, period, units, tail, data):
    tail = min(tail, period - 1)
    unit = [f"u{k}" for k in range(period)]
    sigs = [f"h{k}" for k in range(head)] + unit * units + [f"t{k}" for k in range(tail)]
    h, p, c, t = R._split(sigs)
    assert h + c * p + t == len(sigs) and c > R.UNITS
    assert all(sigs[i] == sigs[i + p] for i in range(h, h + (c - 1) * p))
    assert h + R.UNITS * p + t <= head + R.UNITS * period + tail  # the cheapest one
    stack = R.Stack("s", len(sigs), h, p, c, t)
    kept = stack.kept
    # every layer of the full stack is stood for by a kept layer with the same signature
    for i in range(len(sigs)):
        assert sigs[kept[stack.shallow_index(i)]] == sigs[i]


# ---------------------------------------------------------------------------------------------------- input dtypes
@pytest.mark.parametrize("name", ["int64", "long", "torch.int64", "torch.long", " int64 "])
def test_input_dtype_accepts_names(name):
    net = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2))
    by_name = _quiet(extract, net, (5,), input_dtype=name, input_high=10, batch_size=2)
    by_dtype = _quiet(extract, net, (5,), input_dtype=torch.long, input_high=10, batch_size=2)
    assert by_name.equals(by_dtype) and by_name["forward_flops"].iloc[0] == 2 * 2 * 5 * 4 * 2


def test_float_dtype_names():
    net = nn.Linear(4, 2)
    half = _quiet(extract, net, (4,), dtype="float16", input_dtype="float16", device="meta").iloc[0]
    assert half["param_bytes"] == 2 * 10 and half["param_bytes_by_dtype"] == "float16:20"
    f32 = _quiet(extract, net, (4,), input_dtype="float32").iloc[0]
    assert f32["param_bytes"] == 4 * 10


@pytest.mark.parametrize("bad", ["int65", "Tensor", "", 64, str])
def test_input_dtype_errors_say_what_and_how(bad):
    net = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 2))
    with pytest.raises(FeatureExtractionError, match=r"input_dtype must be a torch.dtype or the name of one \('int64', "
                       r"'long'.*got " + re.escape(repr(bad)) + r"\. Pass e.g. input_dtype=torch.long"):
        extract(net, (5,), input_dtype=bad)
    with pytest.raises(FeatureExtractionError, match="dtype must be a torch.dtype .* got 'float33'"):
        extract(net, (5,), dtype="float33")


class CachingBlock(Block):
    """A layer that keeps state of its last call on itself (as Switch Transformers' router keeps its input dtype)."""

    def forward(self, x):
        self.last_dtype = x.dtype
        return super().forward(x)


def test_state_cached_by_layers_as_they_run_does_not_hide_the_stack():
    net = _meta("plain")
    with torch.device("meta"):
        net.blocks = nn.ModuleList(CachingBlock(8) for _ in range(7))
    first = _quiet(extract, net, (8,), batch_size=2, per_op=True, device="meta")
    # only the kept layers ran: layers 4-6 lack the attribute the others now have; still the same stack
    assert [hasattr(b, "last_dtype") for b in net.blocks] == [True] * 4 + [False] * 3
    second, full = _both(net, (8,), batch_size=2)
    assert first.attrs["repeated_stacks"] == second.attrs["repeated_stacks"] == ["blocks: 7 layers = 0 + 7 x 1 + 0, traced 4"]
    _assert_same(second, full)


# ------------------------------------------------------------------------------------------------- saved tensors
def _saved_both(net, x):
    from perfmodel.step import memory

    return memory._saved_repeated(net, x), memory._saved_tensors(net, x)


@pytest.mark.parametrize("kind, layers, stacks", CASES, ids=[c[0] for c in CASES])
def test_the_tensors_autograd_saves_come_from_the_shallow_copy_too(kind, layers, stacks):
    """The memory model's saved tensors of a deep stack: the shallow copy's rows, one unit copied to the full depth,
    are the full model's, row by row (module, bytes, shape)."""
    step = _quiet(hf.build, _config(kind, layers)).to("meta")
    x = torch.empty((3, SEQ), dtype=torch.long, device="meta")
    fast, full = _saved_both(step, x)
    assert fast is not None and fast.equals(full)
    for s in stacks:
        path, n = s.split(":")[0], int(s.split(": ")[1].split()[0])
        assert {m[len(path) + 1:].split(".")[0] for m in fast["module"] if m.startswith(path + ".")} == {str(i) for i in range(n)}


@pytest.mark.parametrize("mode", ["plain", "position", "reversed", "twice", "by-count"])
def test_saved_tensors_of_a_stack_not_provably_repeated_come_from_the_full_model(mode):
    """A plain stack is expanded exactly; an extra module after one layer, layers run in reverse, a layer run twice,
    or a forward pass the copy cannot run make :func:`_saved_repeated` refuse (None), and the full model runs."""
    from perfmodel.step import memory

    net, x = _meta(mode), torch.empty((2, 8), device="meta")
    fast, full = _saved_both(net, x)
    if mode == "plain":
        assert fast is not None and fast.equals(full)
    else:
        assert fast is None
    saved, _ = memory._saved_for(net, torch.float32, (2, 8), torch.float32)
    assert saved.equals(full)
