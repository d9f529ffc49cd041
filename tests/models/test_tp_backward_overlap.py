"""Megatron's backward overlap of the tensor-parallel collectives: each column-parallel linear issues its input
gradient's reduce-scatter (all-reduce without sequence parallelism) under its weight-gradient GEMM and, with sequence
parallelism, gathers its input shard again under its input-gradient GEMM (Parallelism(overlap_tp_backward=...))."""
from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.models import ExtrapolationWarning
from perfmodel.step.collectives import OVERLAP_SLOWDOWN, allgather_time
from perfmodel.step.parallel import TP_COLUMN, TP_NONE, TP_ROW, _overlapped_tp_backward
from perfmodel.step.step_time import OutOfMemoryWarning
from perfmodel.step.strategy import StrategyError, resolve_interconnect

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=1024, intermediate_size=2816, num_hidden_layers=2,
             num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=1024, tie_word_embeddings=False)


def _layer(gemm_s: float, *, sequence_parallel: bool, n_layers: int = 2):
    """A stand-in for one rank's work: per layer, an attention and an MLP block, each with a column-parallel linear
    whose two backward GEMMs take ``gemm_s`` each and a row-parallel one."""
    role, block, phase, t = [], [], [], []
    for _ in range(n_layers):
        for b in ("self_attn", "mlp"):
            role += [TP_COLUMN, TP_ROW, TP_COLUMN, TP_COLUMN, TP_ROW, TP_ROW]
            block += [b] * 6
            phase += ["forward", "forward", "backward", "backward", "backward", "backward"]
            t += [gemm_s, gemm_s, gemm_s, gemm_s, gemm_s, gemm_s]
    role.append(TP_NONE), block.append(""), phase.append("backward"), t.append(1.0)  # e.g. the loss: no role
    r = types.SimpleNamespace(lay=types.SimpleNamespace(n_layers=n_layers), phase=np.array(phase),
                              tp_role=np.array(role, dtype=np.int8), tp_block=np.array(block, dtype=object),
                              sequence_parallel=sequence_parallel, tp_blocks=2.0)
    return r, np.array(t)


def test_each_collective_is_exposed_only_where_it_outlasts_its_gemm():
    ag, rs, ar = 3.0, 2.0, 5.0
    # long GEMMs: with sequence parallelism only the row-parallel output gradient's gather is left, twice a layer;
    # the two re-gathers of the inputs are counted, hidden
    r, t = _layer(100.0, sequence_parallel=True)
    assert _overlapped_tp_backward(r, t, ag, rs, ar) == pytest.approx((2 * ag, 2 * ag))
    # without sequence parallelism the input gradient's all-reduce hides under the weight-gradient GEMM
    r, t = _layer(100.0, sequence_parallel=False)
    assert _overlapped_tp_backward(r, t, ag, rs, ar) == pytest.approx((0.0, 0.0))
    # GEMMs shorter than the collectives: what they do not cover stays exposed
    r, t = _layer(1.0, sequence_parallel=True)
    assert _overlapped_tp_backward(r, t, ag, rs, ar)[0] == pytest.approx(2 * (ag + (ag - 1.0) + (rs - 1.0)))
    r, t = _layer(1.0, sequence_parallel=False)
    assert _overlapped_tp_backward(r, t, ag, rs, ar)[0] == pytest.approx(2 * (ar - 1.0))
    # no GEMM at all: vanilla TP's count (one all-reduce's worth per block) and the re-gathers on top
    r, t = _layer(0.0, sequence_parallel=True)
    assert _overlapped_tp_backward(r, t, ag, rs, ar)[0] == pytest.approx(2 * (2 * ag + rs))
    # linears without roles (no module names): vanilla TP's count, nothing gathered again
    r.tp_role[:] = TP_NONE
    assert _overlapped_tp_backward(r, t, ag, rs, ar, 4.5) == (9.0, 0.0)
    assert _overlapped_tp_backward(r, t, ag, rs, ar) == (2 * (ag + rs), 0.0)


def _predict(**how):
    w = pm.Workload(LLAMA, input_shape=(1024,), batch_size=8, precision="bf16", optimizer="adam-fused", stack="te")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        warnings.simplefilter("ignore", OutOfMemoryWarning)
        return pm.predict(w, pm.Cluster("H100", n_gpus=4), pm.Parallelism(**how))


@pytest.mark.parametrize("sp", [True, False], ids=["sequence-parallel", "all-reduce"])
def test_megatron_hides_the_backward_collectives_of_its_column_parallel_linears(sp):
    kw = dict(strategy="dp2-tp2", framework="megatron", sequence_parallel=sp)
    on, off = _predict(**kw), _predict(**kw, overlap_tp_backward=False)
    assert on.comm_exposed_s["tp"] < off.comm_exposed_s["tp"] and on.step_time_s < off.step_time_s
    assert off.comm_exposed_s["tp"] == pytest.approx(off.comm_total_s["tp"], rel=1e-12)  # in order: all exposed
    if sp:  # the inputs gathered again in the backward pass: more bytes moved, hidden
        link = resolve_interconnect("nvlink", "H100")
        act = 4 * 1024 * LLAMA["hidden_size"] * 2  # a rank's 4 sequences of 1,024 tokens, BF16
        regather = LLAMA["num_hidden_layers"] * 2 * allgather_time(act, 2, link)
        assert on.comm_total_s["tp"] == pytest.approx(off.comm_total_s["tp"] + regather, rel=1e-9)
    else:
        assert on.comm_total_s["tp"] == pytest.approx(off.comm_total_s["tp"], rel=1e-12)
    hidden = on.breakdown["comm_total"] - on.breakdown["comm_exposed"]
    assert hidden > 0 and on.breakdown["overlap_slowdown"] == pytest.approx(
        OVERLAP_SLOWDOWN * min(hidden, on.breakdown["compute"]), rel=1e-9)
    assert on.breakdown["compute"] == pytest.approx(off.breakdown["compute"], rel=1e-12)
    assert "weight-gradient GEMM" in on.basis and "weight-gradient GEMM" not in off.basis


def test_the_overlap_is_megatrons_and_needs_tensor_parallelism():
    assert "weight-gradient GEMM" not in _predict(strategy="fsdp2-tp2").basis  # PyTorch's TP: in order
    with pytest.raises(StrategyError, match=r"overlap_tp_backward=True is Megatron-Core's .* Use framework='megatron', "
                                            r"or async_tp=True"):
        _predict(strategy="fsdp2-tp2", overlap_tp_backward=True)
    with pytest.raises(StrategyError, match=r"overlap_tp_backward=True .* strategy='dp' has no tensor parallelism"):
        _predict(strategy="dp4", framework="megatron", overlap_tp_backward=True)
    with pytest.raises(TypeError, match=r"overlap_tp_backward must be True, False or None"):
        pm.Parallelism("dp2-tp2", framework="megatron", overlap_tp_backward="yes")
    # a layout without tp under Megatron: nothing to overlap, nothing said
    assert "weight-gradient GEMM" not in _predict(strategy="dp4", framework="megatron").basis
    # asynchronous TP (Megatron's --tp-comm-overlap) fuses the collectives with their matmuls instead
    both = _predict(strategy="dp2-tp2", framework="megatron", async_tp=True)
    assert "weight-gradient GEMM" not in both.basis
