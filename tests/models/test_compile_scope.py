"""``compile_scope``: what ``torch.compile`` compiles of a step — the whole step (``"model"``), each transformer layer
on its own with the rest eager (``"layers"``, torchtitan's per-block compile until April 2025), or the layers and the
loss (``"layers+loss"``, torchtitan since) — in time (:func:`perfmodel.step.trace.compile_regions`,
:func:`~perfmodel.step.trace.compiled_work`) and in memory (a compiled cross-entropy saves the logits at the training
precision, not their FP32 log-softmax)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import perfmodel as pm
from perfmodel._errors import UnknownNameError
from perfmodel._workload import COMPILE_SCOPES
from perfmodel.step.trace import (_FUSABLE, compile_regions, loss_rows, model_input, model_layout, op_layer, step_ops,
                                  step_work, work_from_ops)

LLAMA = dict(model_type="llama", vocab_size=32000, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=False)
B, S = 2, 256


class _TwoLinears(torch.nn.Module):
    """No repeated layers: nothing for a per-layer compile to compile."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(64, 64), torch.nn.Linear(64, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _pred(scope=None, compile=True, **kw):
    w = pm.Workload(LLAMA, input_shape=(S,), batch_size=B, precision="bf16", optimizer="adam-fused", compile=compile,
                    **({"compile_scope": scope} if scope else {}), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(w, pm.Cluster("H100"), pm.Parallelism("dp"))


def _work(scope):
    net, shape, dt, vocab, _ = model_input(LLAMA, (S,), None)
    return step_work(net, shape, dt, vocab, batch_size=B, prec="bf16", optimizer="adam-fused", inference=False,
                     compile=(True, scope))


def test_the_scope_is_a_field_of_the_workload_checked_when_it_is_made():
    assert COMPILE_SCOPES == ("model", "layers", "layers+loss")
    assert pm.Workload(LLAMA, compile=True).filled().compile_scope == "model"
    assert pm.Workload(LLAMA).filled().compile_scope is None  # eager: nothing compiled
    assert pm.Workload(LLAMA, compile=True, compile_scope="Layers").compile_scope == "layers"
    with pytest.raises(UnknownNameError, match="compile_scope must be one of 'model', 'layers', 'layers\\+loss'"):
        pm.Workload(LLAMA, compile=True, compile_scope="blocks")
    with pytest.raises(ValueError, match="which is not compiled. Pass compile=True"):
        pm.Workload(LLAMA, compile=False, compile_scope="layers")
    with pytest.raises(ValueError, match="which is not compiled"):
        pm.Workload(LLAMA, stack="te", compile_scope="layers")
    with pytest.raises(ValueError, match="which is not compiled"):  # said without the kernel family: refused when read
        _pred("layers", compile=False)
    # only pm.predict reads it: the keyword functions name the way out
    with pytest.raises(ValueError, match="no use for the workload's compile_scope='layers'.*pm.predict"):
        pm.predict_step_time(pm.Workload(LLAMA, compile=True, compile_scope="layers", input_shape=(S,)), "H100")


def test_the_regions_are_the_layers_and_the_loss_and_the_rest_runs_eager():
    net, shape, dt, vocab, _ = model_input(LLAMA, (S,), None)
    ops = step_ops(net, shape, dt, vocab, batch_size=B, prec="bf16", optimizer="adam-fused", inference=False)
    n = model_layout(net).n_layers
    layer = op_layer(ops, n)
    op = ops["op"].astype(str).to_numpy()
    assert (compile_regions(ops, n, "model") == 0).all()
    r = compile_regions(ops, n, "layers")
    inside = (layer >= 0) & (layer < n)
    assert (r[inside] == layer[inside]).all() and (r[~inside] == -1).all()
    loss = loss_rows(ops, n)
    assert {"aten._log_softmax", "aten.nll_loss_forward", "aten._log_softmax_backward_data"} <= set(op[loss])
    assert not ({"aten.mm", "aten.embedding", "fused_adam"} & set(op[loss]))  # not the head, embedding or optimizer
    r2 = compile_regions(ops, n, "layers+loss")
    assert (r2[loss] == n).all() and (r2[~loss] == r[~loss]).all()
    with pytest.raises(ValueError, match="finds no repeated layers"):
        pm.predict(pm.Workload(_TwoLinears(), input_shape=(64,), batch_size=8, precision="bf16", compile=True,
                               compile_scope="layers"), pm.Cluster("H100"))


def test_outside_the_compiled_graphs_the_kernels_are_eagers_and_no_chain_crosses_two_layers():
    net, shape, dt, vocab, _ = model_input(LLAMA, (S,), None)
    eager = step_work(net, shape, dt, vocab, batch_size=B, prec="bf16", optimizer="adam-fused", inference=False)
    whole, layers, with_loss = _work("model"), _work("layers"), _work("layers+loss")
    n = LLAMA["num_hidden_layers"]

    def loss_kernels(w):
        return w[loss_rows(w, n) & (w["op"].astype(str) != "aten.mm")][["op", "bytes"]].reset_index(drop=True)

    # eager loss: the same kernels, moving the same bytes, as the eager step's
    assert loss_kernels(layers).equals(loss_kernels(eager))
    # compiled loss: fewer kernels moving less
    assert len(loss_kernels(with_loss)) < len(loss_kernels(eager))
    assert loss_kernels(with_loss)["bytes"].sum() < loss_kernels(eager)["bytes"].sum()

    def fused_kernels(w, phase):
        return int(((w["phase"].astype(str) == phase) & w["op_class"].isin(_FUSABLE)).sum())

    # one graph per layer: the residual add that ends a layer and the norm that starts the next are two kernels
    for phase in ("forward", "backward"):
        assert fused_kernels(with_loss, phase) >= fused_kernels(whole, phase) + (n - 1)
    t = [_pred(s).step_time_s for s in (None, "layers+loss", "layers")]
    assert t[0] < t[1] < t[2] < _pred(compile=False).step_time_s


def test_a_compiled_loss_saves_the_logits_at_the_training_precision_not_their_fp32_log_softmax():
    """AOTAutograd saves a compiled cross-entropy's BF16 input and recomputes the softmax in the backward kernel, which
    writes the BF16 gradient; eager keeps the FP32 log-softmax and holds its two FP32 gradients."""
    tokens, V = B * S, LLAMA["vocab_size"]
    eager_loss = 3 * tokens * V * 4 + tokens * V * 2  # and the BF16 logits' block the allocator keeps idle beside them
    compiled_loss = 2 * tokens * V * 2
    layers, whole, with_loss = _pred("layers"), _pred("model"), _pred("layers+loss")
    assert layers.memory["activations_bytes"] == pytest.approx(_pred(compile=False).memory["activations_bytes"],
                                                               rel=1e-12)
    assert layers.memory["activations_bytes"] - whole.memory["activations_bytes"] == pytest.approx(
        eager_loss - compiled_loss, rel=1e-9)
    assert with_loss.memory == whole.memory


def test_torchtitans_runs_are_predicted_with_what_each_version_compiled():
    from perfmodel.datasets import load_torchtitan_runs
    from perfmodel.papers.external.torchtitan_runs import TORCHTITAN_COMPILE_SCOPE

    runs = load_torchtitan_runs()
    compiled = set(runs.loc[runs["compile"].fillna(False).astype(bool), "source_file"])
    assert compiled <= set(TORCHTITAN_COMPILE_SCOPE)
    assert set(TORCHTITAN_COMPILE_SCOPE.values()) <= set(COMPILE_SCOPES)
    assert TORCHTITAN_COMPILE_SCOPE["benchmarks/llama3_h100_202412_torchtitan.md"] == "layers"  # loss compile off
    assert all(v == "layers+loss" for k, v in TORCHTITAN_COMPILE_SCOPE.items() if "2025" in k)
    assert len(compiled) == 3


def test_the_command_line_says_the_scope_and_refuses_it_without_compile(tmp_path, capsys):
    import json

    from perfmodel.cli import main

    cfg = tmp_path / "llama.json"
    cfg.write_text(json.dumps(LLAMA))
    run = ["predict", str(cfg), "--gpus", "H100", "--input-shape", str(S), "--batch-size", str(B), "--precision", "bf16",
           "--optimizer", "adam-fused"]
    assert main([*run, "--compile", "--compile-scope", "layers"]) == 0
    out = capsys.readouterr().out
    assert "compiled: each transformer layer its own graph" in out
    assert main([*run, "--compile-scope", "layers"]) != 0
    err = capsys.readouterr().err
    assert "which is not compiled" in err and len(err.strip().splitlines()) == 1
    assert main(["layouts", str(cfg), "--n-gpus", "2", "--input-shape", str(S), "--batch-size", "4", "--stack", "compile",
                 "--compile-scope", "layers+loss"]) == 0
    assert "each transformer layer and the loss their own graphs" in capsys.readouterr().out
