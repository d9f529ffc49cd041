"""FP8 recipes (``Workload(fp8_recipe=...)``): torchao's tensorwise and rowwise scaling, Transformer Engine's delayed,
current, MXFP8, block (DeepSeek-V3's) and NVFP4 scaling — each a stated model of the kernels it adds, checked where the
hardware can run it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import perfmodel as pm
from perfmodel._errors import UnknownNameError
from perfmodel.datasets import UnsupportedPrecisionError
from perfmodel.step.trace import (TE_AMAX_BYTES_PER_ELEMENT, TE_AMAX_OP, TE_CAST_OP, TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT,
                                  TE_FP8_ROWWISE_CAST_BYTES_PER_ELEMENT, TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT,
                                  TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT, TE_GATHERED_CAST_OP,
                                  TE_BLOCKWISE_CAST_BYTES_PER_ELEMENT, TE_MXFP8_CAST_BYTES_PER_ELEMENT,
                                  TE_NVFP4_CAST_BYTES_PER_ELEMENT,
                                  TE_NVFP4_QUANTIZE_BYTES_PER_ELEMENT,
                                  TE_NVFP4_WEIGHT_CAST_BYTES_PER_ELEMENT, TE_SEQUENCE_AMAX_OP, TE_SEQUENCE_CAST_OP,
                                  TE_TRANSPOSE_OP,
                                  model_input, step_work)

LLAMA = dict(model_type="llama", vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)
H, F, KV, L = 64, 128, 32, 4
TOKENS = 4 * 64  # not the vocabulary size (a GEMM with a vocabulary-sized dimension stays in BF16)


def _work(stack, recipe=None):
    net, shape, dtype, vocab, _ = model_input(LLAMA, (64,), None)
    return step_work(net, shape, dtype, vocab, batch_size=4, prec="fp8", optimizer=None, inference=False, compile=stack,
                     recipe=recipe)


def _pred(gpu="H100", n_gpus=1, strategy="dp", **fields):
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=4 * n_gpus, precision="fp8", optimizer="adam-fused", **fields)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(w, pm.Cluster(gpu, n_gpus=n_gpus), pm.Parallelism(strategy))


def test_the_default_recipes_are_the_ones_the_families_ran_before():
    for stack, default in (("eager", "tensorwise"), ("compile", "tensorwise"), ("te", "delayed")):
        assert _work(stack).equals(_work(stack, default))
        assert pm.Workload(LLAMA, precision="fp8", stack=stack).filled().fp8_recipe == default
        assert _pred(stack=stack).step_time_s == _pred(stack=stack, fp8_recipe=default).step_time_s
    assert pm.Workload(LLAMA, precision="bf16").filled().fp8_recipe is None


def test_te_current_scaling_reads_each_tensor_for_its_maximum_before_the_cast():
    """Current per-tensor scaling casts what delayed scaling casts, each tensor first read for its maximum by a kernel
    of its own (TE_AMAX_BYTES_PER_ELEMENT) but the norms' outputs, whose maximum the norm takes; those are cast by a
    kernel of their own (the norm writes BF16), where delayed scaling's norm writes FP8 and only transposes."""
    delayed, current = _work("te"), _work("te", "current")
    by = current.groupby(["phase", "op"])["bytes"].sum()
    # forward: o's and down's inputs read for their maximum; q's and gate's maxima from the norms
    assert by[("forward", TE_AMAX_OP)] == pytest.approx(TE_AMAX_BYTES_PER_ELEMENT * TOKENS * (H + F) * L)
    assert by[("forward", TE_GATHERED_CAST_OP)] == pytest.approx(TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT * TOKENS
                                                                  * 2 * H * L)
    assert by[("forward", TE_CAST_OP)] == pytest.approx(TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT * TOKENS * (H + F) * L)
    # backward: every output gradient read for its maximum, then cast
    assert (by[("backward", TE_AMAX_OP)] + by[("backward", TE_SEQUENCE_AMAX_OP)]
            == pytest.approx(TE_AMAX_BYTES_PER_ELEMENT * TOKENS * (H + 2 * KV + 2 * F + 2 * H) * L))
    kernels = lambda w: w["op"].astype(str).str.startswith("te_fp8_").sum()  # noqa: E731
    assert kernels(current) > kernels(delayed)
    assert not current["op"].isin([TE_TRANSPOSE_OP]).any()
    # the weight casts are delayed scaling's
    w_d, w_c = (x[x["op"] == "te_fp8_weight_cast"]["bytes"].sum() for x in (delayed, current))
    assert w_d == w_c == pytest.approx(TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT * L * (2 * H * H + 2 * H * KV + 3 * H * F))
    assert _pred(stack="te", fp8_recipe="current").step_time_s > _pred(stack="te").step_time_s
    # on a model whose casts move more than a launch's worth of bytes (the tiny model's kernels are launch-bound)
    assert _wide("H100", "current").step_time_s > _wide("H100", "delayed").step_time_s
    assert "current per-tensor scaling" in _pred(stack="te", fp8_recipe="current").basis


def test_torchao_rowwise_casts_the_weights_per_micro_batch_and_gathers_them_in_bf16():
    comp, row = _work("compile"), _work("compile", "rowwise")
    extra = row[row["op"] == "te_fp8_weight_cast"]
    assert not (comp["op"] == "te_fp8_weight_cast").any()
    assert extra["bytes"].sum() == pytest.approx(TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT * L * (2 * H * H + 2 * H * KV + 3 * H * F))
    assert _work("eager", "rowwise").equals(_work("eager"))  # eager: the same casts, per row or per tensor
    t, r = _pred(n_gpus=8, strategy="fsdp", compile=True), _pred(n_gpus=8, strategy="fsdp", compile=True, fp8_recipe="rowwise")
    assert r.comm_total_s["dp"] > t.comm_total_s["dp"]  # no FP8 all-gather
    assert "enable_fsdp_float8_all_gather" in t.basis and "enable_fsdp_float8_all_gather" not in r.basis
    assert "rowwise scaling" in r.basis and "row-wise microbenchmark" in r.basis
    assert r.memory["params_bytes"] > t.memory["params_bytes"]
    with pytest.raises(ValueError, match="rowwise-scaled weights in BF16"):
        w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="fp8", compile=True, fp8_recipe="rowwise")
        pm.predict(w, pm.Cluster("H100", n_gpus=8), pm.Parallelism("fsdp", fp8_param_gather=True))


def test_torchao_tensorwise_casts_each_weight_per_micro_batch_unless_fsdp_gathers_it_in_fp8():
    """Compiled tensorwise Float8 (torchao's matmul_with_hp_or_float8_args): each FP8 weight cast in the forward pass
    (its maximum read, then read and written as FP8) and copied column-major for the input-gradient GEMM in the backward
    pass; under FSDP's FP8 all-gather the cast runs on the rank's shard, the copy on the whole weight."""
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run
    from perfmodel.step.trace import (FP8_WEIGHT_CAST_COMPILED_BYTES_PER_ELEMENT, FP8_WEIGHT_CAST_OP,
                                      FP8_WEIGHT_TRANSPOSE_BYTES_PER_ELEMENT, FP8_WEIGHT_TRANSPOSE_OP)

    weights = L * (2 * H * H + 2 * H * KV + 3 * H * F)  # q, o, k, v and gate, up, down of each layer
    comp = _work("compile")
    cast, copy = comp[comp["op"] == FP8_WEIGHT_CAST_OP], comp[comp["op"] == FP8_WEIGHT_TRANSPOSE_OP]
    assert (cast["phase"] == "forward").all() and (copy["phase"] == "backward").all() and len(cast) == len(copy) == 7 * L
    assert cast["bytes"].sum() == pytest.approx(FP8_WEIGHT_CAST_COMPILED_BYTES_PER_ELEMENT * weights)
    assert copy["bytes"].sum() == pytest.approx(FP8_WEIGHT_TRANSPOSE_BYTES_PER_ELEMENT * weights)
    # eager casts every operand per GEMM already; rowwise casts its weights its own way
    for other in (_work("eager"), _work("compile", "rowwise")):
        assert not other["op"].isin([FP8_WEIGHT_CAST_OP, FP8_WEIGHT_TRANSPOSE_OP]).any()

    def rank(strategy, n, **par):
        w = pm.Workload(LLAMA, input_shape=(64,), batch_size=4 * n, precision="fp8", optimizer="adam-fused", compile=True)
        r = rank_work(*resolve_run(w, pm.Cluster("H100", n_gpus=n), pm.Parallelism(strategy, **par))[::2], n)
        return (r.work.loc[r.work["op"] == op, "bytes"].sum() for op in (FP8_WEIGHT_CAST_OP, FP8_WEIGHT_TRANSPOSE_OP))

    assert tuple(rank("dp", 4)) == pytest.approx((cast["bytes"].sum(), copy["bytes"].sum()))
    assert tuple(rank("fsdp", 4)) == pytest.approx((cast["bytes"].sum() / 4, copy["bytes"].sum()))
    assert tuple(rank("fsdp", 4, fp8_param_gather=False)) == pytest.approx((cast["bytes"].sum(), copy["bytes"].sum()))


def test_te_delayed_scaling_casts_what_no_norm_writes_in_fp8():
    """Delayed scaling as Megatron-Core's TE layers run it (TE d0067d0): the norm writes the FP8 input of q/k/v and of
    gate/up, a transpose kernel its column-wise copy (2 bytes an element, once per shared input); the output
    projection's and the down projection's BF16 inputs and every linear's output gradient are cast with their
    transposes by kernels of their own (4 bytes an element)."""
    w = _work("te")
    by = w.groupby(["phase", "op"])["bytes"].sum()
    assert by[("forward", TE_TRANSPOSE_OP)] == pytest.approx(TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT * TOKENS * (H + H) * L)
    assert by[("forward", TE_CAST_OP)] == pytest.approx(TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT * TOKENS * (H + F) * L)
    # output gradients: q, k, v (H + 2 KV) and gate, up (2 F) split by TP; o and down (H each) on the hidden state
    assert by[("backward", TE_CAST_OP)] == pytest.approx(TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT * TOKENS
                                                          * (H + 2 * KV + 2 * F) * L)
    assert by[("backward", TE_GATHERED_CAST_OP)] == pytest.approx(TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT * TOKENS
                                                                        * 2 * H * L)
    assert not w["op"].isin([TE_SEQUENCE_CAST_OP, TE_AMAX_OP, TE_SEQUENCE_AMAX_OP]).any()
    # MXFP8: the same tensors, each cast to row-wise and column-wise MXFP8, the norms' outputs too (not fused)
    mx = _work("te", "mxfp8").groupby(["phase", "op"])["bytes"].sum()
    assert mx[("forward", TE_SEQUENCE_CAST_OP)] == pytest.approx(TE_MXFP8_CAST_BYTES_PER_ELEMENT * TOKENS * 2 * H * L)
    assert mx[("backward", TE_SEQUENCE_CAST_OP)] == pytest.approx(TE_MXFP8_CAST_BYTES_PER_ELEMENT * TOKENS * 2 * H * L)
    assert mx[("forward", TE_CAST_OP)] == pytest.approx(TE_MXFP8_CAST_BYTES_PER_ELEMENT * TOKENS * (H + F) * L)
    # the casts cost time: delayed-scaling FP8 of a GEMM-bound model is slower than its GEMMs alone would make it
    bf16 = pm.predict(pm.Workload(WIDE, input_shape=(2048,), batch_size=4, precision="bf16", optimizer="adam-fused",
                                  stack="te"), pm.Cluster("H100"))
    fp8 = _wide("H100", "delayed")
    assert 1.0 < bf16.step_time_s / fp8.step_time_s < 2.0


@pytest.mark.parametrize("sp", [True, False])
def test_te_casts_on_a_tensor_parallel_rank(sp):
    """Under TP each cast is sized from the single GPU's: a cast of a split tensor 1/tp, the transpose of a gathered
    (or, without sequence parallelism, whole) norm output whole, a row-parallel output gradient cast row-wise on the
    sequence shard and its gathered copy transposed whole with sequence parallelism, cast whole without it."""
    from perfmodel.step.prediction import resolve_run
    from perfmodel.step.parallel import rank_work

    tp = 2  # the key/value heads
    w, _, how = resolve_run(pm.Workload(LLAMA, input_shape=(64,), batch_size=4, precision="fp8", optimizer=None,
                                        stack="te"), pm.Cluster("H100", n_gpus=tp),
                            pm.Parallelism(f"tp{tp}", framework="megatron", sequence_parallel=sp))
    by = rank_work(w, how, tp).work.groupby(["phase", "op"])["bytes"].sum()
    one = _work("te").groupby(["phase", "op"])["bytes"].sum()
    assert by[("forward", TE_TRANSPOSE_OP)] == pytest.approx(one[("forward", TE_TRANSPOSE_OP)])
    assert by[("forward", TE_CAST_OP)] == pytest.approx(one[("forward", TE_CAST_OP)] / tp)
    assert by[("backward", TE_CAST_OP)] == pytest.approx(one[("backward", TE_CAST_OP)] / tp)
    per_el = ((TE_FP8_ROWWISE_CAST_BYTES_PER_ELEMENT / tp + TE_FP8_TRANSPOSE_BYTES_PER_ELEMENT) if sp
              else TE_FP8_CAST_TRANSPOSE_BYTES_PER_ELEMENT)
    assert by[("backward", TE_GATHERED_CAST_OP)] == pytest.approx(TOKENS * 2 * H * L * per_el)


def test_mxfp8_runs_where_the_gpu_has_block_scaled_fp8_and_is_refused_elsewhere():
    b200 = _pred("B200", stack="te", fp8_recipe="mxfp8")
    assert np.isfinite(b200.step_time_s) and b200.step_time_s > 0
    assert "MXFP8 block scaling" in b200.basis
    with pytest.raises(UnsupportedPrecisionError, match="H100 lack"):
        _pred("H100", stack="te", fp8_recipe="mxfp8")


def test_te_nvfp4_runs_the_linears_gemms_at_the_fp4_rate_with_current_style_casts():
    """NVFP4 (TE's NVFP4BlockScaling): the GEMMs that run in FP8 under the other recipes run at the FP4 rate (``fp4``);
    each activation operand is read for its per-tensor maximum, then cast with its column-wise copy (random Hadamard
    transform fused), as current scaling selects them, at TE_NVFP4_CAST_BYTES_PER_ELEMENT; each weight cast to
    16x16-block FP4 with its transpose at TE_NVFP4_WEIGHT_CAST_BYTES_PER_ELEMENT."""
    current, nvfp4 = _work("te", "current"), _work("te", "nvfp4")
    assert "fp4" in nvfp4.columns and "fp4" not in current.columns
    gemms = nvfp4[nvfp4["fp4"].to_numpy(bool)]
    assert len(gemms) and gemms["fp8"].all() and gemms["op"].isin(["aten.mm", "aten.addmm"]).all()
    assert nvfp4["fp4"].sum() == current["fp8"].sum()  # the same GEMMs, at the FP4 rate
    by = nvfp4.groupby("op")["bytes"].sum()
    casts = by[[TE_CAST_OP, TE_SEQUENCE_CAST_OP]].sum()
    amax = by[[TE_AMAX_OP, TE_SEQUENCE_AMAX_OP]].sum()
    per_layer = (H + H + H + F) + (H + 2 * KV + H + 2 * F + H)  # inputs (q, o, gate, down), then output gradients
    assert casts == pytest.approx(TE_NVFP4_QUANTIZE_BYTES_PER_ELEMENT * TOKENS * per_layer * L)
    # every tensor read for its maximum first but the norms' outputs (q's and gate's inputs): the maximum in the norm
    assert casts + amax == pytest.approx(TE_NVFP4_CAST_BYTES_PER_ELEMENT * TOKENS * per_layer * L
                                         - TE_AMAX_BYTES_PER_ELEMENT * TOKENS * 2 * H * L)
    assert not nvfp4["op"].isin([TE_TRANSPOSE_OP, TE_GATHERED_CAST_OP]).any()  # block-scaled: no FP8 transposes
    assert not (nvfp4["op"] == "te_fp8_weight_cast").any()
    weights = nvfp4[nvfp4["op"] == "te_nvfp4_weight_cast"]["bytes"].sum()
    assert weights == pytest.approx(TE_NVFP4_WEIGHT_CAST_BYTES_PER_ELEMENT * L * (2 * H * H + 2 * H * KV + 3 * H * F))
    assert TE_NVFP4_WEIGHT_CAST_BYTES_PER_ELEMENT < TE_FP8_WEIGHT_CAST_BYTES_PER_ELEMENT  # half a byte, not one


WIDE = dict(LLAMA, hidden_size=4096, intermediate_size=14336, num_hidden_layers=2, num_attention_heads=32,
            num_key_value_heads=8, vocab_size=1000, max_position_embeddings=2048)  # Llama 3 8B's layers: GEMM-bound


def _wide(gpu, recipe, n_gpus=1, strategy="dp"):
    w = pm.Workload(WIDE, input_shape=(2048,), batch_size=4 * n_gpus, precision="fp8", optimizer="adam-fused", stack="te",
                    fp8_recipe=recipe)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.predict(w, pm.Cluster(gpu, n_gpus=n_gpus), pm.Parallelism(strategy))


def _nvfp4_gpus() -> list[str]:
    """The catalog's GPUs with NVIDIA FP4 tensor cores (an FP4 rate, NVIDIA)."""
    from perfmodel.datasets.reference import load_gpu_catalog

    c = load_gpu_catalog()
    return sorted(c.loc[c["fp4_peak_tflops"].notna() & (c["vendor"] == "NVIDIA"), "gpu"])


@pytest.mark.parametrize("gpu", _nvfp4_gpus())
def test_nvfp4_is_faster_than_mxfp8_on_blackwell_and_no_more_than_the_peak_ratio(gpu):
    """On a GPU with FP4 tensor cores a GEMM-bound step under NVFP4 beats MXFP8 (its GEMMs at the FP4 rate), by no
    more than the FP4-to-FP8 peak ratio; with tensor parallelism too (the FP4 marks survive the sharding)."""
    from perfmodel.datasets import gpu_spec

    spec = gpu_spec(gpu)
    for n, strategy in ((1, "dp"), (2, "tp2")):
        mx, f4 = _wide(gpu, "mxfp8", n, strategy), _wide(gpu, "nvfp4", n, strategy)
        assert f4.step_time_s < mx.step_time_s
        assert f4.step_time_s >= mx.step_time_s * spec.fp8_peak_tflops / spec.fp4_peak_tflops
        assert "NVFP4" in f4.basis and "FP4 rate" in f4.basis


def test_nvfp4_is_refused_where_the_gpu_has_no_nvfp4_tensor_cores():
    with pytest.raises(UnsupportedPrecisionError, match="H100 lack"):
        _pred("H100", stack="te", fp8_recipe="nvfp4")
    with pytest.raises(UnsupportedPrecisionError, match="MI355X"):
        _pred("MI355X", stack="te", fp8_recipe="nvfp4")


def test_nvfp4_refuses_fp8_parameter_gather():
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="fp8", stack="te", fp8_recipe="nvfp4")
    with pytest.raises(ValueError, match="nvfp4"):
        pm.predict(w, pm.Cluster("B200", n_gpus=2), pm.Parallelism("dp2", framework="megatron", fp8_param_gather=True))


@pytest.mark.parametrize("fields, error, match", [
    (dict(precision="bf16", fp8_recipe="rowwise"), ValueError, "precision='bf16'"),
    (dict(precision="fp8", stack="te", fp8_recipe="rowwise"), ValueError, "torchao's"),
    (dict(precision="fp8", compile=True, fp8_recipe="mxfp8"), ValueError, "Transformer Engine's"),
    (dict(precision="fp8", stack="eager", fp8_recipe="nvfp4"), ValueError, "Transformer Engine's"),
    (dict(precision="fp8", fp8_recipe="block"), UnknownNameError, "fp8_recipe must be one of"),
])
def test_a_recipe_that_does_not_fit_the_step_is_refused_when_the_workload_is_made(fields, error, match):
    with pytest.raises(error, match=match):
        pm.Workload(LLAMA, **fields)


def test_the_keyword_face_says_where_the_recipe_is_taken():
    w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="fp8", fp8_recipe="rowwise")
    with pytest.raises(ValueError, match="fp8_recipe='rowwise'.*pm.predict"):
        pm.predict_step_time(w, "H100")


def test_tensorwise_float8_under_pytorch_tp_casts_gathered_operands_on_the_shard_and_copies_them_transposed_whole():
    """torchtitan's Float8 TP: a block's input cast once on the rank's sequence shard and all-gathered in FP8 (the key,
    value and up projections reuse the query's and gate's), its transposed copy made of the whole gathered tensor in
    the backward pass; a row-parallel linear's output gradient cast on the shard and copied transposed whole."""
    from perfmodel.step.parallel import rank_work
    from perfmodel.step.prediction import resolve_run
    from perfmodel.step.trace import FP8_CAST_COMPILED_BYTES_PER_ELEMENT, model_input, step_work

    tp, shape, batch = 2, (64,), 4
    w = pm.Workload(LLAMA, input_shape=shape, batch_size=batch, precision="fp8", optimizer="adam-fused", compile=True)
    w, _, par = resolve_run(w, pm.Cluster("H100", n_gpus=4), pm.Parallelism(f"fsdp2-tp{tp}"))
    r = rank_work(w, par, 4)
    net, s, dt, vocab, _ = model_input(LLAMA, shape, None)
    whole = step_work(net, s, dt, vocab, batch_size=batch // 2, prec="fp8", optimizer="adam-fused", inference=False,
                      compile=True)

    def bytes_of(work, op, phase, suffix):
        m = ((work["op"] == op) & (work["phase"] == phase) & work["module"].astype(str).str.endswith(suffix)).to_numpy()
        return work.loc[m, "bytes"].to_numpy(float)

    L = LLAMA["num_hidden_layers"]
    el_q = bytes_of(whole, "float8_cast", "forward", "q_proj") / FP8_CAST_COMPILED_BYTES_PER_ELEMENT
    el_o = bytes_of(whole, "float8_cast", "backward", "o_proj") / FP8_CAST_COMPILED_BYTES_PER_ELEMENT
    assert len(el_q) == len(el_o) == L
    np.testing.assert_allclose(bytes_of(r.work, "float8_cast", "forward", "q_proj"), el_q * 3 / tp)
    np.testing.assert_allclose(bytes_of(r.work, "float8_transpose", "backward", "q_proj"), el_q * 2)
    np.testing.assert_allclose(bytes_of(r.work, "float8_cast", "backward", "o_proj"), el_o * (3 / tp + 2))
    for shared in ("k_proj", "v_proj", "up_proj"):  # cast once for the block
        assert not len(bytes_of(r.work, "float8_cast", "forward", shared))
    assert len(bytes_of(r.work, "float8_transpose", "backward", "gate_proj")) == L
    # the shard's own operands (a row-parallel input, a column-parallel output gradient) stay split
    np.testing.assert_allclose(bytes_of(r.work, "float8_cast", "forward", "o_proj"),
                               bytes_of(whole, "float8_cast", "forward", "o_proj") / tp)
    assert len(r.layer) == len(r.work) == len(r.tp_role) == len(r.is_opt)
    # rowwise runs regular TP (gathered in BF16): none of this
    wr = pm.Workload(LLAMA, input_shape=shape, batch_size=batch, precision="fp8", optimizer="adam-fused", compile=True,
                     fp8_recipe="rowwise")
    wr, _, par = resolve_run(wr, pm.Cluster("H100", n_gpus=4), pm.Parallelism(f"fsdp2-tp{tp}"))
    assert not (rank_work(wr, par, 4).work["op"] == "float8_transpose").any()


def test_te_block_scaling_casts_as_mxfp8_casts_with_fp32_scales_per_128_and_splits_every_gemm_s_accumulation():
    """Transformer Engine's Float8BlockScaling (DeepSeek-V3's recipe): the tensors MXFP8 casts, the norms' outputs
    included, each to a row-wise and a column-wise copy with an FP32 scale per 1x128 block, in one kernel; the weights
    as delayed scaling casts them; and every FP8 GEMM, the forward one too, with split accumulation — on Hopper that
    costs the forward pass what it costs the backward pass under the other recipes."""
    from perfmodel.step import op_latency as ol

    assert TE_BLOCKWISE_CAST_BYTES_PER_ELEMENT == 2 + 2 * (1 + 4 / 128)
    bw = _work("te", "blockwise")
    by = bw.groupby(["phase", "op"])["bytes"].sum()
    mx = _work("te", "mxfp8").groupby(["phase", "op"])["bytes"].sum()
    for key in (("forward", TE_SEQUENCE_CAST_OP), ("backward", TE_SEQUENCE_CAST_OP), ("forward", TE_CAST_OP),
                ("backward", TE_CAST_OP)):
        assert by[key] == pytest.approx(mx[key] / TE_MXFP8_CAST_BYTES_PER_ELEMENT * TE_BLOCKWISE_CAST_BYTES_PER_ELEMENT)
    assert not bw["op"].isin([TE_AMAX_OP, TE_SEQUENCE_AMAX_OP, TE_TRANSPOSE_OP]).any()  # block maxima in the cast
    delayed = _work("te", "delayed")
    weights = lambda w: w.loc[w["op"].astype(str).str.contains("weight_cast"), "bytes"].sum()  # noqa: E731
    assert weights(delayed) > 0 and weights(bw) == pytest.approx(weights(delayed))
    code = ol.low_precision_rates(bw)
    fp8 = bw["fp8"].to_numpy(bool)
    assert fp8.any() and (code[fp8] == ol.FP8_SPLIT_ACCUMULATION_RATE).all()
    # Hopper: the forward pass slower than delayed scaling's by its split accumulation (and its norms' casts)
    big = dict(LLAMA, hidden_size=2048, intermediate_size=8192, num_attention_heads=16, num_key_value_heads=8,
               max_position_embeddings=1024, num_hidden_layers=2)

    def run(gpu, recipe):
        w = pm.Workload(big, input_shape=(1024,), batch_size=8, precision="fp8", optimizer=None, stack="te",
                        fp8_recipe=recipe)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pm.predict(w, pm.Cluster(gpu))

    h_bw, h_d = run("H100", "blockwise"), run("H100", "delayed")
    assert h_bw.breakdown["forward"] > h_d.breakdown["forward"]
    assert "FP8 block scaling" in h_bw.basis
    # as modelled on Blackwell (full-precision accumulation; the bytes per element are MXFP8's, whose GEMMs TE runs
    # after converting the block scales, a conversion not counted): the same step
    assert run("B200", "blockwise").step_time_s == pytest.approx(run("B200", "mxfp8").step_time_s, rel=1e-12)


def _moe_work(recipe):
    net, shape, dtype, vocab, _ = model_input(dict(model_type="mixtral", vocab_size=1000, hidden_size=64,
                                                   intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                   num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                                                   max_position_embeddings=256, tie_word_embeddings=False), (64,), None)
    return step_work(net, shape, dtype, vocab, batch_size=4, prec="fp8", optimizer=None, inference=False, compile="te",
                     recipe=recipe)


def test_block_scaling_reaches_the_experts_grouped_gemms_their_casts_and_the_tensor_parallel_gathers():
    from perfmodel.step import op_latency as ol
    from perfmodel.step.memory import te_fp8_weight_bytes
    from perfmodel.step.parallel import _tp_gather_bytes
    from perfmodel.step.trace import GROUPED_GEMM_OP, in_experts_module

    bw, mx = _moe_work("blockwise"), _moe_work("mxfp8")
    grouped = (bw["op"] == GROUPED_GEMM_OP).to_numpy() & bw["fp8"].to_numpy(bool)
    assert grouped.any() and (ol.low_precision_rates(bw)[grouped] == ol.FP8_SPLIT_ACCUMULATION_RATE).all()
    casts = lambda w: w.loc[(w["op"] == TE_CAST_OP).to_numpy() & in_experts_module(w["module"]), "bytes"].sum()  # noqa: E731
    assert casts(mx) > 0 and casts(bw) == pytest.approx(casts(mx) / TE_MXFP8_CAST_BYTES_PER_ELEMENT
                                                        * TE_BLOCKWISE_CAST_BYTES_PER_ELEMENT)
    assert _tp_gather_bytes("fp8", "megatron", "te", "blockwise", 2) == pytest.approx(1 + 4 / 128)
    # a weight kept quantized takes an FP32 scale per 128x128 block, not per 1x128
    assert te_fp8_weight_bytes("blockwise") == 1 + 4 / 128**2 and te_fp8_weight_bytes("mxfp8") == 1 + 1 / 32


@pytest.mark.parametrize("gpu", ["L40S", "A100", "MI300X"])
def test_block_scaling_is_refused_before_hopper_and_off_nvidia(gpu):
    with pytest.raises(UnsupportedPrecisionError, match="fp8|FP8"):
        _pred(gpu, stack="te", fp8_recipe="blockwise")


def test_backward_fp8_gemms_run_with_split_accumulation_on_hopper_and_ada_only():
    """torchao (every recipe) and Transformer Engine run the forward FP8 GEMM with fast accumulation and the input- and
    weight-gradient GEMMs with split accumulation, which on Ada and Hopper (limited-precision FP8 accumulators) costs
    FP8_SPLIT_ACCUMULATION_SLOWDOWN on the FP8 rate; Blackwell and AMD accumulate in full precision."""
    from perfmodel.datasets import gpu_spec
    from perfmodel.step import op_latency as ol
    from perfmodel.step.baselines import roofline_step_time

    for stack, recipe in (("compile", "tensorwise"), ("compile", "rowwise"), ("te", "delayed")):
        w = _work(stack, recipe)
        code = ol.low_precision_rates(w)
        fp8 = w["fp8"].to_numpy(bool)
        back = (w["phase"] == "backward").to_numpy()
        assert (code[fp8 & back] == ol.FP8_SPLIT_ACCUMULATION_RATE).all() and (fp8 & back).any()
        assert (code[fp8 & ~back] == ol.FP8_RATE).all() and (code[~fp8] == 0).all()
        for gpu, slower in (("H100", True), ("L40S", True), ("B200", False), ("MI300X", False)):
            spec = gpu_spec(gpu)
            X = ol.step_design(w, spec, "fp8", code)
            peak = X["peak_flops_per_s"].to_numpy(float)
            f8 = spec.matmul_peak_tflops("fp8") * 1e12
            split = code == ol.FP8_SPLIT_ACCUMULATION_RATE
            assert np.allclose(peak[code == ol.FP8_RATE], f8)
            assert np.allclose(peak[split], f8 / ol.FP8_SPLIT_ACCUMULATION_SLOWDOWN if slower else f8), gpu
    assert 1.1 <= ol.FP8_SPLIT_ACCUMULATION_SLOWDOWN <= 1.2  # the published range (github.com/pytorch/ao/issues/2377)
    # a step (GEMMs large enough to be bound by the rate): only the backward pass slows, and the roofline keeps every
    # FP8 GEMM at the datasheet peak
    big = dict(LLAMA, hidden_size=2048, intermediate_size=8192, num_attention_heads=16, num_key_value_heads=8,
               max_position_embeddings=1024, num_hidden_layers=2)

    def both():
        from perfmodel.step.kernels import clear_trace_cache

        clear_trace_cache()
        r = roofline_step_time(LLAMA, ["H100"], input_shape=(64,), batch_size=4, precision="fp8", optimizer=None)
        w = pm.Workload(big, input_shape=(1024,), batch_size=8, precision="fp8", optimizer=None, stack="te")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pm.predict(w, pm.Cluster("H100")), float(r["step_time_s"].iloc[0])

    split, roof = both()
    before = ol.FP8_SPLIT_ACCUMULATION_SLOWDOWN
    try:
        ol.FP8_SPLIT_ACCUMULATION_SLOWDOWN = 1.0
        fast, roof_fast = both()
    finally:
        ol.FP8_SPLIT_ACCUMULATION_SLOWDOWN = before
        both()
    assert split.breakdown["forward"] == pytest.approx(fast.breakdown["forward"], rel=1e-12)
    assert split.breakdown["backward"] > fast.breakdown["backward"]
    assert roof == roof_fast


def test_an_fp8_gemm_gets_no_larger_a_share_of_its_peak_than_in_bf16():
    """The GEMM model learned on FP16 GEMMs only; at FP8's doubled peak its trees can put an FP8 GEMM above its BF16
    twin's efficiency (Llama 3.1 8B's MLP under TP 8: 98,304 tokens, 4096 -> 1792). kernel_seconds holds each FP8 GEMM
    to the share of the peak the same GEMM gets in BF16, split accumulation included in the backward pass."""
    import pandas as pd

    from perfmodel.datasets import gpu_spec
    from perfmodel.step import kernels as kn
    from perfmodel.step import op_latency as ol

    shapes = pd.DataFrame({"m": [98304, 98304, 1792, 4096, 1024], "n": [1792, 4096, 4096, 16384, 1024],
                           "k": [4096, 1792, 98304, 8192, 2048]})
    for gpu in ("H100", "B200", "L40S"):
        spec = gpu_spec(gpu)
        work = kn.gemm_work(shapes.assign(precision="fp8"))
        for phase, code in (("forward", ol.FP8_RATE), ("backward", ol.FP8_SPLIT_ACCUMULATION_RATE)):
            w = work.assign(phase=phase)
            fp8 = ol.low_precision_rates(w)
            assert (fp8 == code).all()
            t = np.asarray(kn.kernel_seconds(w, spec, "fp8"), float)
            learned, _ = kn._least_of_dominated(w, fp8, spec, "fp8", ol.default_op_model())
            twin, _ = kn._least_of_dominated(w, np.zeros_like(fp8), spec, "fp8", ol.default_op_model())
            split = ol.fp8_split_accumulation_slowdown(spec) if phase == "backward" else 1.0
            bound = twin * spec.matmul_peak_tflops("bf16") / spec.matmul_peak_tflops("fp8") * split
            assert (t >= bound * (1 - 1e-12)).all() and (t >= learned).all(), (gpu, phase)
            assert np.allclose(t, np.maximum(learned, bound), rtol=1e-12, atol=0), (gpu, phase)
            if gpu == "H100" and phase == "forward":  # the trees' FP8 MLP GEMM, faster than its twin allows, is held
                assert learned[0] < bound[0] and t[0] == pytest.approx(bound[0], rel=1e-12)
    # a BF16 step is untouched
    bf = kn.gemm_work(shapes)
    assert np.array_equal(kn.kernel_seconds(bf, gpu_spec("H100"), "bf16"),
                          kn._least_of_dominated(bf, ol.low_precision_rates(bf), gpu_spec("H100"), "bf16",
                                                 ol.default_op_model())[0])


@pytest.mark.parametrize("recipe,per_el", [("delayed", 1.0), ("mxfp8", 1 + 1 / 32), ("blockwise", 1 + 4 / 128)])
def test_te_fp8_linears_save_their_inputs_quantized(recipe, per_el):
    """Under TE's FP8 each linear saves its input as the quantized column-wise copy its weight-gradient GEMM reads
    (q/k/v's and gate/up's shared inputs, the down projection's), not in BF16; the output projection saves its own
    quantized copy beside the attention kernel's BF16 output."""
    def act(precision, fp8_recipe=None):
        w = pm.Workload(LLAMA, input_shape=(64,), batch_size=4, precision=precision, optimizer="adam", stack="te",
                        fp8_recipe=fp8_recipe)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pm.predict(w, pm.Cluster("B200"), pm.Parallelism("dp")).memory["activations_bytes"]

    saved_inputs = TOKENS * (H + H + F) * L  # q (k, v share it), gate (up shares it), down
    own_copy = TOKENS * H * L  # the output projection's
    assert act("bf16") - act("fp8", recipe) == pytest.approx(saved_inputs * (2 - per_el) - own_copy * per_el)


@pytest.mark.parametrize("optimizer", ["adam-fused", "adam"])
def test_a_half_precision_optimizer_steps_fp32_masters(optimizer):
    """Mixed precision's optimizer moves FP32 bytes (master weights, states, gradients: what predict_memory counts), and
    the gradients are copied into the masters' (2 + 4 bytes a parameter) and the masters back into the parameters
    (4 + 2) by a kernel each; Megatron's weight-gradient GEMMs accumulate into FP32 main gradients: no gradient copy."""
    from perfmodel.step.trace import MASTER_GRAD_CAST_OP, MASTER_PARAM_COPY_OP

    net, shape, dtype, vocab, _ = model_input(LLAMA, (64,), None)
    n = sum(p.numel() for p in net.parameters() if p.requires_grad)

    def opt_rows(prec):
        w = step_work(net, shape, dtype, vocab, batch_size=4, prec=prec, optimizer=optimizer, inference=False)
        return w[w["phase"] == "optimizer"]

    half, full = opt_rows("bf16"), opt_rows("fp32")
    casts = half[half["op"].isin([MASTER_GRAD_CAST_OP, MASTER_PARAM_COPY_OP])]
    assert list(casts["op"]) == [MASTER_GRAD_CAST_OP, MASTER_PARAM_COPY_OP]
    assert casts["bytes"].tolist() == pytest.approx([6 * n, 6 * n])
    assert half.drop(casts.index)["bytes"].sum() == pytest.approx(full["bytes"].sum())  # the step itself: FP32 bytes
    assert not full["op"].isin([MASTER_GRAD_CAST_OP, MASTER_PARAM_COPY_OP]).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = pm.Workload(LLAMA, input_shape=(64,), batch_size=8, precision="bf16", optimizer=optimizer)
        from perfmodel.step.prediction import resolve_run
        from perfmodel.step.parallel import rank_work

        for framework, grad_copy in (("megatron", False), ("pytorch", True)):
            ww, _, how = resolve_run(w, pm.Cluster("H100", n_gpus=2), pm.Parallelism("dp2", framework=framework))
            ops = rank_work(ww, how, 2).work["op"]
            assert (ops == MASTER_GRAD_CAST_OP).any() == grad_copy and (ops == MASTER_PARAM_COPY_OP).any()
