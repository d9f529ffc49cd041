"""Transformer Engine's FP8 weight casts under Megatron-Core: once per step, not once per micro-batch. Megatron marks
each model chunk's first micro-batch (``set_is_first_microbatch``) and TE keeps the FP8 weights and their transposes
from it to the step's last micro-batch; a TE model trained by another loop recasts every forward."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel.models import ExtrapolationWarning
from perfmodel.step import kernels as kn
from perfmodel.step.parallel import ONCE_PER_STEP_OPS, layout_step, rank_work, resolve_links
from perfmodel.step.prediction import resolve_run

MODEL = dict(model_type="llama", vocab_size=32000, hidden_size=1024, intermediate_size=4096, num_hidden_layers=4,
             num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=512, tie_word_embeddings=False)


def _rank(strategy, m, framework="megatron", precision="fp8", n=4, **kw):
    w = pm.Workload(MODEL, input_shape=(256,), batch_size=8, precision=precision, optimizer="adam-fused", stack="te")
    c = pm.Cluster("H100", n_gpus=n, interconnect="nvlink")
    w, c, p = resolve_run(w, c, pm.Parallelism(strategy, framework=framework, micro_batches=m, **kw))
    r = rank_work(w, p, n)
    links = resolve_links(c.interconnect, c.spec, degrees=p.degrees(n), gpus_per_node=c.gpus_per_node,
                          nics_per_node=c.nics_per_node)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        t = np.asarray(kn.kernel_seconds(r.work, c.spec, precision), float)
    return r, t, links


@pytest.mark.parametrize("strategy", ["dp2-tp2", "dp1-tp2-pp2"])
def test_megatron_casts_each_fp8_weight_once_per_step(strategy):
    m = 4
    r, t, links = _rank(strategy, m)
    casts = r.work["op"].astype(str).isin(ONCE_PER_STEP_OPS).to_numpy()
    assert r.per_step is not None and (r.per_step == casts).all() and casts.sum() > 4  # every FP8 linear's weight
    once = layout_step(r, t, links)
    every = layout_step(dataclasses.replace(r, per_step=None), t, links)  # as a loop without the cache runs it
    cast_s = float(t[casts].sum())
    assert cast_s > 0
    # the step's forward passes hold the casts once instead of m times (over the pipeline's stages where it has any)
    stages = r.pp if r.pipelined else 1
    assert every.forward - once.forward == pytest.approx((m - 1) * cast_s / stages, rel=1e-9)
    assert once.step < every.step
    assert once.backward == every.backward and once.optimizer == every.optimizer


def test_the_cache_is_megatrons_and_needs_micro_batches():
    assert _rank("dp2-tp2", 1)[0].per_step is None  # one micro-batch: once per step already
    assert _rank("dp2-tp2", 4, precision="bf16")[0].per_step is None  # no FP8 weight to cast
    assert _rank("fsdp2-tp2", 4, framework="pytorch")[0].per_step is None  # TE under another loop recasts every time


@pytest.mark.parametrize("strategy", ["dp2-tp2", "dp1-tp2-pp2"])
def test_the_cache_holds_two_quantized_copies_of_each_fp8_weight(strategy):
    """Megatron's TE linears keep each FP8 weight's row-wise copy and its transpose for the whole run: two bytes per
    element of the rank's FP8 linears' weights beyond BF16's parameters; one with --fp8-param-gather, whose FP8
    weight is the row-wise copy (so its parameters weigh as BF16's); none for a TE model under PyTorch's loop."""
    from perfmodel.step.trace import fp8_linear_weights, model_and_layout, rank_share

    def mem(precision, framework="megatron", strat=strategy, **kw):
        w = pm.Workload(MODEL, input_shape=(256,), batch_size=8, precision=precision, optimizer="adam-fused",
                        stack="te")
        p = pm.Parallelism(strat, framework=framework, micro_batches=4, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pm.predict(w, pm.Cluster("H100", n_gpus=4, interconnect="nvlink"), p).memory

    net, _, _, vocab, _, lay = model_and_layout(MODEL, (256,), None)
    fp8 = rank_share(lay, fp8_linear_weights(net, lay, vocab), 2)  # the tensor-parallel rank's FP8 weights
    if "pp2" in strategy:  # the stage that needs the most holds half the layers' (the 4 layers split 2 + 2)
        fp8 = fp8 / 2
    bf16, cached, gathered = mem("bf16"), mem("fp8"), mem("fp8", fp8_param_gather=True)
    assert cached["params_bytes"] - bf16["params_bytes"] == pytest.approx(2 * fp8, rel=1e-9)
    assert gathered["params_bytes"] == pytest.approx(bf16["params_bytes"], rel=1e-9)
    torch_bf16, torch_fp8 = (mem(p, framework="pytorch", strat="fsdp2-tp2") for p in ("bf16", "fp8"))
    assert torch_fp8["params_bytes"] == torch_bf16["params_bytes"]
