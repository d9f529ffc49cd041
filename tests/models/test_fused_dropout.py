"""An eager step's dropout is the one kernel a GPU runs (``native_dropout``: read the input, write the output and a
one-byte mask), not the decomposition the meta device traces (``bernoulli_``, ``div_``, ``mul``)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("transformers")

from perfmodel.step.trace import fused_dropout, model_input, step_ops, step_work  # noqa: E402

GPT2 = dict(model_type="gpt2", n_layer=2, n_embd=256, n_head=4, n_positions=256, vocab_size=1000)


@pytest.fixture(scope="module")
def traced():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net, shape, dt, vocab, _ = model_input(GPT2, (128,), None)
        return net, shape, dt, vocab


@pytest.mark.parametrize("prec, item", [("fp32", 4), ("bf16", 2)])
def test_each_dropout_is_one_kernel_moving_input_output_and_a_byte_mask(traced, prec, item):
    net, shape, dt, vocab = traced
    ops = step_ops(net, shape, dt, vocab, batch_size=2, prec=prec, optimizer="adam", inference=False)
    n_drop = int((ops["op"] == "aten.bernoulli_").sum())
    assert n_drop == 7  # embeddings; per layer the attention probabilities, the attention output and the MLP output
    f = fused_dropout(ops)
    d = f[f["op"] == "aten.native_dropout"]
    assert len(d) == n_drop and len(f) == len(ops) - 2 * n_drop
    assert not f["op"].isin(["aten.bernoulli_", "aten.div_"]).any()
    numel = d["input_shapes"].map(lambda s: float(np.prod([int(x) for x in s.split("x")]))).to_numpy()
    # the attention probabilities stay in FP32 under autocast (softmax runs in FP32), the rest in the step's dtype
    size = np.where(d["module"].str.endswith(".attn").to_numpy(), 4, item)
    np.testing.assert_array_equal(d["bytes_read"].to_numpy(float), numel * size)
    np.testing.assert_array_equal(d["bytes_written"].to_numpy(float), numel * size + numel)
    # the eager work has them; torch.compile's chains fuse the decomposed rows themselves
    w = step_work(net, shape, dt, vocab, batch_size=2, prec=prec, optimizer="adam", inference=False)
    assert int((w["op"] == "aten.native_dropout").sum()) == n_drop and not (w["op"] == "aten.bernoulli_").any()


def test_nothing_to_fuse_is_left_alone(traced):
    net, shape, dt, vocab = traced
    ops = step_ops(net, shape, dt, vocab, batch_size=2, prec="fp32", optimizer="adam", inference=True)
    assert not (ops["op"] == "aten.bernoulli_").any()  # no dropout in inference
    assert fused_dropout(ops).equals(ops)
    assert fused_dropout(ops.iloc[:0]).empty
