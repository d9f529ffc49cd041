"""torch.compile as a dataflow model: what each fused kernel reads and writes, computed from the trace's dataflow
(:mod:`perfmodel.features._dataflow`, :func:`perfmodel.step.trace.compiled_work`), on modules whose fused bytes
can be written down by hand."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from perfmodel.features import extract
from perfmodel.step.trace import _FUSABLE, compiled_work, work_from_ops

B, D = 4, 256  # a batch of 4 rows of 256 FP32 features: one activation is N = 4 KiB
N = B * D * 4


def _fused(net, phase="forward"):
    """(eager rows, fused rows) of the memory-bound kernels of ``phase`` of one training step of ``net``, in its
    modules (not the summed loss the step appends)."""
    ops = extract(net, (D,), batch_size=B, per_op=True, device="meta")
    work = work_from_ops(ops).reset_index(drop=True)
    fused = compiled_work(work)
    mem = lambda w: w[(w["phase"].astype(str) == phase) & w["op_class"].isin(_FUSABLE) & (w["module"] != "")]  # noqa: E731
    return mem(work), mem(fused)


class _Gate(nn.Module):
    """relu(h)·sigmoid(h) + h after a linear layer: four pointwise kernels eager; fused, one that reads h once."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(D, D)
        self.out = nn.Linear(D, D)

    def forward(self, x):
        h = self.lin(x)
        return self.out(torch.relu(h) * torch.sigmoid(h) + h)


def test_a_fused_chain_reads_its_input_once_and_writes_only_what_is_read_after_it():
    eager, fused = _fused(_Gate())
    assert len(eager) == 4 and len(fused) == 1
    # eager: relu (read h, write) 2N, sigmoid 2N, mul 3N, add 3N
    assert eager["bytes"].sum() == 10 * N
    # fused: h read once, the sum written once (the next GEMM reads it); relu and sigmoid only for the backward pass
    # are recomputed there, not written
    assert fused["bytes"].sum() == 2 * N
    # the widest member alone (the old description) would have been 3N
    assert fused["bytes"].sum() < eager["bytes"].max()


class _Halves(nn.Module):
    """The two halves of one tensor multiplied: the fused kernel reads the tensor once, not each slice plus it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(D, D)
        self.out = nn.Linear(D // 2, D)

    def forward(self, x):
        h = self.lin(x)
        a, b = h[:, : D // 2], h[:, D // 2:]
        return self.out(torch.tanh(a) * b)


def test_slices_of_one_tensor_read_in_one_kernel_count_the_bytes_they_cover():
    _, fused = _fused(_Halves())
    assert len(fused) == 1
    assert fused["bytes"].sum() == N + N // 2  # h read once (both halves), the product (half the width) written


class _SwiGLU(nn.Module):
    """silu(gate(x)) · up(x): the up projection runs between the two pointwise ops but does not read silu's output."""

    def __init__(self):
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)

    def forward(self, x):
        return self.down(nn.functional.silu(self.gate(x)) * self.up(x))


def test_a_chain_joins_the_previous_one_across_a_gemm_that_does_not_read_it():
    eager, fused = _fused(_SwiGLU())
    assert len(eager) == 2 and len(fused) == 1
    assert fused["bytes"].sum() == 3 * N  # gate and up read, the product written; silu's output stays on chip


class _Dependent(nn.Module):
    """gelu(x) feeds the GEMM between it and the next pointwise op: two kernels, gelu's output written."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)

    def forward(self, x):
        g = nn.functional.gelu(self.a(x))
        return self.c(torch.tanh(self.b(g)) * g)


def test_a_gemm_that_reads_a_chains_output_keeps_the_chains_apart():
    _, fused = _fused(_Dependent())
    assert len(fused) == 2
    # gelu: reads a's output, writes g (read by the GEMM b); tanh·g: reads b's output and g, writes the product
    assert fused["bytes"].to_list() == [2 * N, 3 * N]


@pytest.mark.parametrize("phase", ["forward", "backward"])
def test_every_fused_kernel_moves_no_more_than_its_eager_kernels(phase):
    transformers = pytest.importorskip("transformers")
    from perfmodel.zoo import hf

    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=512)
    net = hf.build(cfg)
    ops = extract(net, (32,), batch_size=2, per_op=True, device="meta", input_dtype=torch.long, input_high=512)
    work = work_from_ops(ops).reset_index(drop=True)
    fused = compiled_work(work)
    mem = lambda w: w[(w["phase"].astype(str) == phase) & w["op_class"].isin(_FUSABLE)]  # noqa: E731
    assert 0 < mem(fused)["bytes"].sum() < mem(work)["bytes"].sum()
    assert len(mem(fused)) < len(mem(work))
    assert np.isfinite(mem(fused)["bytes"]).all() and (mem(fused)["bytes"] > 0).all()


def test_a_work_frame_without_dataflow_falls_back_to_the_widest_member():
    ops = extract(_Gate(), (D,), batch_size=B, per_op=True, device="meta")
    work = work_from_ops(ops).drop(columns=["dataflow"]).reset_index(drop=True)
    fused = compiled_work(work)
    fwd = fused[(fused["phase"].astype(str) == "forward") & fused["op_class"].isin(_FUSABLE) & (fused["module"] != "")]
    assert fwd["bytes"].to_list() == [3 * N]
