"""Kernel times on a GPU: each kernel of a traced workload (:mod:`perfmodel.step.trace`) predicted from the
GPU's spec sheet by the operator models, and the step interval they are calibrated with.

FP32/TF32 kernels and convolutions: the operator model learned on NeuSight's microbenchmarks
(:func:`perfmodel.step.op_latency.default_op_model`). In half precision (BF16/FP16/FP8) a kernel is described as at
any precision — its FLOPs and its bytes at the element size — and only the peak and the learned efficiency differ:
GEMMs by the model learned on Vidur's FP16 GEMMs (:func:`perfmodel.step.half_precision.half_precision_op_model`,
pooled, no GPU identity), memory-bound kernels by the bandwidth model (:func:`perfmodel.step.bandwidth.bandwidth_model`),
convolutions by the FP32/TF32-learned model at the half-precision peak. Fused attention at no less than its published
efficiency (:func:`fused_attention_floor_s`); an FP8 GEMM at no larger a share of its peak than the same GEMM in BF16
(:func:`_fp8_within_bf16`). A GPU is never predicted slower than a GPU it dominates (no more of any
rate, bandwidth or L2): a step's kernels are those of the GPU, itself or one it dominates, whose kernels sum the least
(:func:`dominated_gpus`), and ``basis`` says so (:func:`source_phrase`). The interval is split conformal over GPUs
(:func:`conformal_interval`).
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from perfmodel.step import op_latency as _op_latency
from perfmodel.step.op_latency import FP4_RATE, step_design
from perfmodel.step.trace import _BUILT, _TRACES, _ZOO_TRACES

__all__ = ["conformal_scores", "gpu_specs", "conformal_interval", "FUSED_ATTENTION_EFFICIENCY", "TE_FUSED_ATTENTION_EFFICIENCY", "FA3_PAPER_H100_TFLOPS", "CLOCKED_RATES", "MAX_CLOCK_SHARE", "SUSTAINED_MATMUL_TFLOPS", "SUSTAINED_CLOCK_SHARE", "SUSTAINED_DIE", "expected_slowest", "chip_spread", "slowest_chip_clock", "SUSTAINED_PRECISIONS", "training_clock", "clocked_clusters", "name_clocked_rows", "at_sustained_clock", "gemm_work", "gemm_seconds", "sustained_clock", "burst_clock_share", "mamf_check", "grand_teton_h100_clock", "fused_attention_floor_s", "kernel_seconds", "HALF_MODEL_PRECISIONS", "half_model_applies", "MONOTONE_POINTS_PER_OCTAVE", "gpu_extrapolation", "learned_on", "clear_trace_cache", "dominated_gpus", "source_phrase"]


def conformal_scores() -> pd.Series:
    """Nonconformity ``|log(Σ predicted / Σ measured)|`` of each training GPU held out (leave-one-GPU-out on NeuSight's
    microbenchmarks), fitted once and cached with the default model
    (:func:`perfmodel.step.op_latency.fitted_bundle`)."""
    from perfmodel.step.op_latency import fitted_bundle

    return fitted_bundle()["scores"].copy()


def gpu_specs(gpus, prec):
    from perfmodel.datasets import gpu_spec, peak_tflops

    gpu_list = [gpus] if isinstance(gpus, str) or not hasattr(gpus, "__iter__") else list(gpus)
    if not gpu_list:
        raise ValueError("gpus must name at least one GPU, e.g. 'H100'.")
    specs = [gpu_spec(g) for g in gpu_list]
    for s in specs:
        peak_tflops(s, prec)  # UnsupportedPrecisionError before any work
    return specs


def conformal_interval(alpha):
    """(q, text): the half-width ``q`` of the interval in log space (``[t·e^-q, t·e^q]``) for miss rate ``alpha``.

    Split conformal over whole steps: the scores ``|log(predicted / measured)|`` of NeuSight's end-to-end labels on
    the training GPUs of :data:`perfmodel.step.op_latency.CALIBRATION_GPUS`, each predicted by the operator model fitted
    without its GPU (:func:`perfmodel.step.op_latency.step_calibration`); an artifact without them falls back to the
    per-GPU operator scores (:func:`conformal_scores`)."""
    from perfmodel.step.op_latency import _OVERRIDE, interval_step_scores

    steps = interval_step_scores()
    if _OVERRIDE and (steps is None or not len(steps)):
        return 0.0, "no interval: an operator model without step calibration (using_op_model)"
    if steps is not None and len(steps):
        scores = np.sort(steps["score"].to_numpy(float))
        what = f"{len(scores)} end-to-end labels of training GPUs held out ({', '.join(sorted(set(steps['gpu'])))})"
    else:
        scores = np.sort(conformal_scores().to_numpy())
        what = f"the {len(scores)} training GPUs held out"
    rank = int(np.ceil((1 - alpha) * (len(scores) + 1)))
    q = float(scores[min(rank, len(scores)) - 1])
    text = (f"split-conformal over {what}, 1-alpha = {1 - alpha:g}"
            + (" (rank beyond the scores: the widest one)" if rank > len(scores) else ""))
    return q, text


#: Kernel times memoised by (work rows, GPU spec, precision, operator model): strategies and planners ask for the same
#: work on the same GPU many times (dp and fsdp at one per-GPU batch, every price row of one GPU).
_KERNEL_MEMO: dict = {}


_KERNEL_MEMO_MAX = 512


#: Published speeds (TFLOPS) of fused attention on an H100 80GB SXM5 in BF16/FP16, head dimension 128, sequence 8k (the
#: plateau: 8k and 16k differ by at most 2 %), from Shah et al., "FlashAttention-3" (2024), Figure 5 (forward, with and
#: without the causal mask) and Figure 6 (backward, without it), per kernel: ``(forward causal, forward non-causal,
#: backward non-causal)``. FLOPs counted as the paper counts them: a causal mask halves them. FlashAttention-2 is what
#: PyTorch's ``scaled_dot_product_attention`` runs (it does not use Hopper's wgmma/TMA, which cuBLAS GEMMs do); cuDNN's
#: fused attention is what Transformer Engine's ``DotProductAttention`` runs on Hopper.
FA3_PAPER_H100_TFLOPS = {"flashattention-2": (333.0, 370.0, 318.0), "cudnn": (529.0, 600.0, 518.0)}

#: The H100 SXM5's dense BF16 tensor-core peak the paper's speeds are shares of (TFLOPS).
_H100_BF16_PEAK = 989.4


def _hopper_rates(kernel: str) -> dict:
    """Share of the dense peak per pass of a causal fused attention kernel on Hopper (:data:`FA3_PAPER_H100_TFLOPS`).
    The paper's backward figure has no causal panel: the causal backward is taken at the non-causal one times the
    forward's causal-to-non-causal ratio (0.90 for FlashAttention-2, 0.88 for cuDNN)."""
    fwd_causal, fwd_full, bwd_full = FA3_PAPER_H100_TFLOPS[kernel]
    return {"forward": fwd_causal / _H100_BF16_PEAK, "backward": bwd_full * (fwd_causal / fwd_full) / _H100_BF16_PEAK}


#: Best published efficiency of the fused attention kernel PyTorch's ``scaled_dot_product_attention`` runs in half
#: precision (its flash backend is FlashAttention-2), as a share of the dense BF16/FP16 tensor-core peak, per GPU
#: architecture and pass; a fused attention row is never predicted faster than this (:func:`fused_attention_floor_s`).
#: Hopper: FlashAttention-2's causal passes, head dim 128, sequence 8k (:data:`FA3_PAPER_H100_TFLOPS`: forward 333
#: TFLOPS, backward 286). Other GPUs: the top of "50-73% of the theoretical maximum FLOPs/s on A100" (Dao,
#: "FlashAttention-2", 2023, abstract), both passes. The forward rate serves a recomputed forward too.
FUSED_ATTENTION_EFFICIENCY = {"Hopper": _hopper_rates("flashattention-2"), "default": {"forward": 0.73, "backward": 0.73}}

#: The same for Transformer Engine's fused attention (``stack="te"``: cuDNN's fused attention on Hopper, causal, head dim
#: 128, sequence 8k: forward 529 TFLOPS, backward 457; :data:`FA3_PAPER_H100_TFLOPS`); elsewhere FlashAttention-2's.
TE_FUSED_ATTENTION_EFFICIENCY = {"Hopper": _hopper_rates("cudnn"), "default": {"forward": 0.73, "backward": 0.73}}


def fused_attention_floor_s(work: pd.DataFrame, spec, prec: str) -> np.ndarray:
    """Per work row: the least time a fused attention kernel can take (its FLOPs at
    :data:`FUSED_ATTENTION_EFFICIENCY` of the GPU's matrix peak), 0 for every other row and outside BF16/FP16/FP8."""
    from perfmodel.datasets import matmul_peak_tflops

    out = np.zeros(len(work))
    if prec not in HALF_MODEL_PRECISIONS or "op" not in work.columns:
        return out
    ops = work["op"].astype(str).to_numpy()
    codes, names = pd.factorize(ops)  # each operator's name tested once
    fused = np.array(["scaled_dot_product" in n for n in names], dtype=bool)[codes] if len(names) else np.zeros(len(work), bool)
    fused = np.flatnonzero(fused & (work["op_class"] == "matmul").to_numpy())  # the fused attention rows
    if len(fused):
        arch = "Hopper" if "hopper" in str(getattr(spec, "architecture", "")).lower() else "default"
        peak = matmul_peak_tflops(spec, "bf16" if prec == "fp8" else prec) * 1e12
        te = np.array([o.startswith("te.") for o in ops[fused]], dtype=bool)
        # the backward kernel's own rate; a forward (or recomputed forward) row the forward's
        back = (work["phase"].astype(str).to_numpy()[fused] == "backward" if "phase" in work.columns
                else np.zeros(len(fused), bool))
        mine, sdpa = TE_FUSED_ATTENTION_EFFICIENCY[arch], FUSED_ATTENTION_EFFICIENCY[arch]
        eff = np.where(te, np.where(back, mine["backward"], mine["forward"]),
                       np.where(back, sdpa["backward"], sdpa["forward"]))
        out[fused] = work["flops"].to_numpy(float)[fused] / (eff * peak)
    return out


def kernel_seconds(work: pd.DataFrame, spec, prec: str, op_model=None, *, with_source: bool = False):
    """Predicted in-stream time (s) of each work row on the GPU ``spec`` at precision ``prec`` (memoised); a fused
    attention row no faster than :func:`fused_attention_floor_s`, an FP8 GEMM at no larger a share of its peak than
    the same GEMM in BF16 (:func:`_fp8_within_bf16`).

    With ``with_source=True``, returns ``(times, source)``: where the times were taken from when not from ``spec``'s own
    learned times -- the GPU it dominates whose kernels of the work sum less (:func:`dominated_gpus`), or
    ``"FP32:<GPU>"`` for the FP32 step of a TF32 step (on that GPU; empty for ``spec``) -- None when they are
    ``spec``'s own. For ``basis`` (:func:`source_phrase`)."""
    from perfmodel.datasets import gpu_spec
    from perfmodel.step.op_latency import WORK_COLUMNS, default_op_model, low_precision_rates

    spec = gpu_spec(spec)  # a name, or a spec of one's own
    op_model = default_op_model() if op_model is None else op_model
    w = work[WORK_COLUMNS].reset_index(drop=True)
    fp8 = low_precision_rates(work)  # each GEMM's rate in an FP8 step: BF16, FP8 or FP4
    floor = fused_attention_floor_s(work.reset_index(drop=True), spec, prec)
    key = (pd.util.hash_pandas_object(w, index=False).to_numpy().tobytes(), fp8.tobytes(), floor.tobytes(), repr(spec), prec,
           id(op_model), _half_models_apply(op_model, prec))  # the same model object predicts differently under an override
    hit = _KERNEL_MEMO.get(key)
    if hit is not None and hit[0] is op_model:
        t, source = hit[1].copy(), hit[2]
    else:
        t, source = _least_of_dominated(w, fp8, spec, prec, op_model)
        t = np.maximum(_fp8_within_bf16(w, fp8, spec, prec, op_model, t), floor)
        if len(_KERNEL_MEMO) >= _KERNEL_MEMO_MAX:
            _KERNEL_MEMO.pop(next(iter(_KERNEL_MEMO)))
        _KERNEL_MEMO[key] = (op_model, t.copy(), source)
    return (t, source) if with_source else t


def _fp8_within_bf16(w: pd.DataFrame, fp8: np.ndarray, spec, prec: str, op_model, t: np.ndarray) -> np.ndarray:
    """``t`` with each FP8 GEMM row (:func:`perfmodel.step.op_latency.low_precision_rates`) at no larger a share of
    the FP8 peak than the same GEMM, timed by the step model at the BF16 rate, gets of the BF16 peak (slowed by split
    accumulation where the row runs with it, :func:`perfmodel.step.op_latency.fp8_split_accumulation_slowdown`).

    The GEMM model was learned on FP16 GEMMs only; at FP8's doubled peak its trees, outside what they saw, put some
    FP8 GEMMs above their BF16 twins' efficiency (the forward FP8 GEMMs of Llama 3.1 8B's MLP under TP 8 came out at 2.1
    times their BF16 speed, on a peak twice as high). No published FP8 GEMM does that: the best FP8 share of the FP8 peak is 0.88-0.99 of
    the best BF16 share of the BF16 peak on every Hopper and Blackwell part of stas00/ml-engineering's "Maximum
    Achievable Matmul FLOPS comparison table" (compute/accelerator/README.md; the H100 SXM 70.9 % against 80.3 %).
    Only the bound is applied, not that ratio: torchao's row-wise table (:mod:`perfmodel.step.float8_rowwise`)
    measures a float8 linear, its casts included, at 1.70-1.73 times its BF16 speed at its largest shapes, above the
    1.66 the ratio and split accumulation would leave its GEMMs alone."""
    from perfmodel.datasets import matmul_peak_tflops
    from perfmodel.step.op_latency import FP8_RATE, FP8_SPLIT_ACCUMULATION_RATE, fp8_split_accumulation_slowdown

    code = np.asarray(fp8)
    if prec != "fp8" or not len(code):
        return t
    sel = np.isin(code, (FP8_RATE, FP8_SPLIT_ACCUMULATION_RATE)) & w["op_class"].isin(["matmul", "conv"]).to_numpy()
    if not sel.any():
        return t
    bf16, _ = _least_of_dominated(w, np.zeros_like(code), spec, prec, op_model)
    scale = matmul_peak_tflops(spec, "bf16") / matmul_peak_tflops(spec, "fp8")
    split = np.where(code == FP8_SPLIT_ACCUMULATION_RATE, fp8_split_accumulation_slowdown(spec), 1.0)
    out = np.asarray(t, float).copy()
    out[sel] = np.maximum(out[sel], (bf16 * scale * split)[sel])
    return out


def source_phrase(source: str | None) -> str:
    """The ``basis`` phrase for the source :func:`kernel_seconds` returns with ``with_source=True`` (empty for a GPU's
    own times)."""
    if not source:
        return ""
    why = ("no more of any rate, bandwidth or L2 than this GPU, and predicted faster: a GPU is never predicted slower "
           "than one it dominates, dominated_gpus")
    if source.startswith("FP32:"):
        gpu = source[len("FP32:"):]
        return (f"; kernels as in FP32 (a TF32 step is never slower than in FP32)"
                + (f", as on the {gpu} ({why})" if gpu else ""))
    return f"; kernels as on the {source} ({why})"


def _spec_rates(spec, prec: str) -> np.ndarray | None:
    """The spec-sheet quantities a kernel at ``prec`` runs on (:func:`dominated_gpus`), or None where the GPU has no
    units for ``prec``: the peak at ``prec``, the FP32 peaks (vector and matrix: the units a tensor-core kernel is never
    slower than), the BF16 peak of an FP8 step (its other GEMMs), the memory bandwidth and the L2."""
    vals = [getattr(spec, f"{prec}_peak_tflops"), spec.fp32_peak_tflops, spec.matmul_peak_tflops("fp32"),
            spec.memory_bandwidth_gb_per_s, spec.l2_mib]
    if prec == "fp8":
        vals.append(spec.bf16_peak_tflops)
    v = np.asarray(vals, float)
    return v if np.isfinite(v).all() else None


_DOMINATED: dict = {}


def dominated_gpus(spec, prec: str) -> tuple:
    """The catalog GPUs (other than ``spec`` itself) whose every quantity of :func:`_spec_rates` — peak rates, memory
    bandwidth, L2 — is at most ``spec``'s: the GPUs that ``spec`` is never slower than.

    A GPU at least as fast in every spec is not slower at the same work, but the learned efficiencies do not know it:
    the trees learned on NeuSight's microbenchmarks give each GPU they were fitted on trees of its own and every other
    GPU the pooled ones, and put the V100 SXM2 (faster clocks, more bandwidth) 34-47 % slower than the V100 PCIe on a
    Llama or GPT-2 step at FP32, and the H200 up to 17 % slower than the H100 NVL at TF32 (8 of the catalog's 425 such
    pairs at FP32 on ResNet-32). :func:`kernel_seconds` therefore predicts a step's kernels on a GPU as those of the
    GPU, itself or one it dominates, whose kernels of the step sum the least — the projection of the learned times onto
    "more of every spec is never slower" from above, ``T(A) = min over B <= A of T_learned(B)``.

    Two choices, each made on the end-to-end labels of NeuSight's training GPUs (27 inference steps of the
    A100-PCIe-40GB, P100, P4 and T4; never a test GPU's), and stated as choices:

    * over the whole step, not kernel by kernel: the least of some 25 GPUs' estimates of each kernel is biased low
      (it takes every downward error). With every dominated GPU as a source (before the rule below): MAPE 13.1 %
      without a projection, 12.4 % per kernel, 12.7 % per step, 15.3 % raising the slower GPU instead
      (``T(B) = max over A >= B``); per kernel also took NeuSight's test steps from 6.8 % to 7.8 % (the A100-80GB and
      H100 predicted 2 points faster than measured), which is why per step was preferred to its 0.3 points.
    * a GPU with trees of its own is reached only from a GPU of its architecture (directly, or through GPUs that the
      pooled trees predict, :func:`_comparable_gpus`): its trees carry what its own host measured (a T4's launch
      latency, taken off its microbenchmarks, made its ResNet-32 steps at batch 32 faster than the P100's although it
      measured 1.4x slower than the P100 on the same convolutions), and taken across architectures it lowered the
      P100 30 % on that step. With the rule, the training labels' MAPE is 12.7 %, and NeuSight's test labels and
      CM-DARE's K80/P100 steps are predicted as without the projection; that step moves on the GPUs above a V100 PCIe
      (V100 SXM2 -15 %, A100-PCIe-40GB -20 %: to the V100 PCIe's own time, which the V100 SXM2 passes on).

    It holds exactly between a GPU and every GPU it reaches, and the test holds every pair of the catalog (CNNs and
    transformers, FP32 to BF16) to it; a pair it could miss is a training GPU of another architecture with no pooled
    GPU between the two.

    Not the SM count: at an equal peak, more SMs means a lower clock (GB300 against GB200), not a faster GPU. The
    published fused-attention floor (:func:`fused_attention_floor_s`) is applied after: a measurement of the GPU's
    own architecture."""
    key = (repr(spec), prec)
    hit = _DOMINATED.get(key)
    if hit is None:
        from perfmodel.datasets import gpu_spec
        from perfmodel.datasets.reference import load_gpu_catalog

        mine = _spec_rates(spec, prec)
        out = []
        if mine is not None:
            for g in load_gpu_catalog()["gpu"]:
                other = gpu_spec(g)
                theirs = _spec_rates(other, prec)
                if theirs is not None and repr(other) != repr(spec) and (theirs <= mine).all():
                    out.append(other)
        hit = _DOMINATED[key] = tuple(out)
    return hit


def _least_of_dominated(w: pd.DataFrame, fp8: np.ndarray, spec, prec: str, op_model,
                        rows=None) -> tuple[np.ndarray, str | None]:
    """(times, source): the kernel times of ``w`` on ``spec``, or on the GPU of :func:`dominated_gpus` whose kernels
    of ``w`` sum the least, if that is less (``source`` names it; None for ``spec``'s own): the work as a whole is
    never slower than on a GPU with no more of any spec. At TF32, each
    GPU's kernels are first held to its own FP32 kernels (:func:`_tf32_within_fp32`), and the FP32 step on ``spec`` is
    one more candidate: a TF32 step is never slower than the same step in FP32."""
    rows = _row_keys(w, fp8) if rows is None else rows
    gpus = [spec, *_comparable_gpus(spec, prec, op_model)]
    if prec == "fp8" and (np.asarray(fp8) == FP4_RATE).any():  # FP4 GEMMs: only GPUs with no more FP4 rate than spec's
        mine = float(getattr(spec, "fp4_peak_tflops", np.nan))
        gpus = [spec] + [g for g in gpus[1:] if np.isfinite(float(getattr(g, "fp4_peak_tflops", np.nan)))
                         and float(g.fp4_peak_tflops) <= mine]
    learned = _rows_seconds(w, fp8, gpus, prec, op_model, rows)  # the learned times on each GPU, in one prediction
    if prec == "tf32":
        learned = [_tf32_within_fp32(w, t, t32, s)
                   for t, t32, s in zip(learned, _rows_seconds(w, fp8, gpus, "fp32", op_model, rows), gpus)]
    t, source = learned[0], None
    best = t.sum()
    for other, u in zip(gpus[1:], learned[1:]):
        if u.sum() < best:
            t, best, source = u, u.sum(), other.gpu
    if prec == "tf32":
        u, src = _least_of_dominated(w, fp8, spec, "fp32", op_model, rows)
        if u.sum() < best:
            t, source = u, f"FP32:{src or ''}"
    return t, source


_COMPARABLE: dict = {}


def _comparable_gpus(spec, prec: str, op_model) -> tuple:
    """The GPUs whose times bound ``spec``'s from above (:func:`dominated_gpus`): those ``spec`` dominates, and theirs
    in turn, except that a GPU with trees of its own (a training GPU) is reached only from a GPU of its architecture."""
    key = (repr(spec), prec, id(op_model))
    hit = _COMPARABLE.get(key)
    if hit is None or hit[0] is not op_model:
        seen, out, todo = {repr(spec)}, [], [spec]
        while todo:
            x = todo.pop()
            for b in dominated_gpus(x, prec):
                if repr(b) in seen or (_family(b) != _family(x) and _has_own_trees(b, op_model)):
                    continue
                seen.add(repr(b))
                out.append(b)
                todo.append(b)
        hit = _COMPARABLE[key] = (op_model, tuple(out))
    return hit[1]


def _family(spec) -> str:
    """The architecture family of a GPU (the first word of its catalog ``architecture``: Volta, Ampere, Hopper, CDNA3)."""
    return str(getattr(spec, "architecture", "") or "").split(" ")[0].lower()


_OWN_TREES: dict = {}


def _has_own_trees(spec, op_model) -> bool:
    """Whether ``op_model`` predicts ``spec`` with trees fitted on that GPU's own measurements (a training GPU)."""
    key = (repr(spec), id(op_model))
    hit = _OWN_TREES.get(key)
    if hit is None or hit[0] is not op_model:
        from perfmodel.step.op_latency import op_work

        ok = hasattr(op_model, "measured_gpus")
        if ok:
            w = op_work(pd.DataFrame({"op_class": ["elementwise"], "b": [1024], "h": [1024]}))
            ok = bool(op_model.measured_gpus(step_design(w, spec, "fp32"))[0])
        hit = _OWN_TREES[key] = (op_model, ok)
    return hit[1]


def _tf32_within_fp32(work: pd.DataFrame, t: np.ndarray, t32: np.ndarray, spec) -> np.ndarray:
    """TF32 kernel times held to their FP32 kernels on the same GPU: TF32 is a math mode of FP32 GEMMs and
    convolutions (cuBLAS and cuDNN may still choose an FP32 algorithm), so every other kernel of a TF32 step is its
    FP32 kernel, and a GEMM or convolution takes no longer than in FP32 and no less than its FP32 time over the
    TF32-to-FP32 peak ratio."""
    gemm = work["op_class"].isin(["matmul", "conv"]).to_numpy()
    ratio = spec.matmul_peak_tflops("tf32") / spec.matmul_peak_tflops("fp32")
    return np.where(gemm, np.clip(t, t32 / max(ratio, 1.0), t32), t32)


#: Kernel times memoised by kernel (its work row and FP8 flag), per (GPU spec, precision, operator model): the layouts
#: of a plan share most of their kernels (fsdp and dp at one per-GPU batch differ in the optimizer's rows only).
_ROW_MEMO: dict = {}


_ROW_MEMO_MAX = 400_000


def _row_keys(w: pd.DataFrame, fp8: np.ndarray) -> tuple:
    """(distinct kernels, a row of each, each row's kernel): a kernel is its work row and FP8 flag."""
    index: dict = {}
    inv = np.fromiter((index.setdefault(k, len(index)) for k in zip(*(w[c].tolist() for c in w.columns), fp8.tolist())),
                      dtype=np.int64, count=len(w))
    first = np.zeros(len(index), dtype=np.int64)
    first[inv] = np.arange(len(w))  # a row of each kernel (its rows are equal: any one)
    return list(index), first, inv


def _rows_seconds(w: pd.DataFrame, fp8: np.ndarray, specs, prec: str, op_model, rows=None) -> list:
    """:func:`_kernel_seconds_uncached` of each row on each GPU of ``specs`` (a list; one array per GPU), each distinct
    kernel (its row and FP8 flag, compared exactly) predicted at most once per GPU and process: identical layers give
    identical rows, and a kernel's time depends on its own row only, so this gives the same bits as predicting every
    row. The kernels not yet predicted on any of the GPUs go to the operator model in one call (its per-call cost is
    most of a step's prediction). ``rows``: :func:`_row_keys` of ``w``, if known."""
    keys, first, inv = _row_keys(w, fp8) if rows is None else rows
    stores, todo = [], []
    for spec in specs:
        ctx = (repr(spec), prec, id(op_model), _half_models_apply(op_model, prec))
        held = _ROW_MEMO.get(ctx)
        if held is None or held[0] is not op_model:
            if sum(len(v[1]) for v in _ROW_MEMO.values()) >= _ROW_MEMO_MAX:
                _ROW_MEMO.clear()
            held = _ROW_MEMO[ctx] = (op_model, {})
        stores.append(held[1])
        todo.append([j for j, k in enumerate(keys) if k not in held[1]])  # each kernel not yet predicted on it
    if any(todo):
        at = np.concatenate([first[new] for new in todo if new]).astype(np.int64)
        on = np.empty(len(at), dtype=object)  # each row's GPU
        on[:] = [spec for spec, new in zip(specs, todo) for _ in new]
        t_new = _kernel_seconds_uncached(w.iloc[at].reset_index(drop=True), on, prec, op_model, fp8=fp8[at]).tolist()
        i = 0
        for store, new in zip(stores, todo):
            store.update(zip((keys[j] for j in new), t_new[i:i + len(new)]))
            i += len(new)
    return [np.array([store[k] for k in keys], dtype=float)[inv] for store in stores]


def _pick(spec, mask: np.ndarray):
    """The GPU(s) of the rows in ``mask``: ``spec`` itself when it is one GPU, else its entries there."""
    return spec[mask] if isinstance(spec, np.ndarray) else spec


#: precisions whose matmul, layer-norm and elementwise kernels are predicted by the half-precision model learned on
#: measured FP16 kernels (:mod:`perfmodel.step.half_precision`); FP8 GEMMs at the FP8 rate in its features.
HALF_MODEL_PRECISIONS = ("bf16", "fp16", "fp8")


def half_model_applies(op_model, prec: str) -> bool:
    """Whether the half-precision models predict this step's kernels: at BF16 / FP16 / FP8 with the operator model
    perfmodel predicts with — the shipped one, or a user's refit named by ``PERFMODEL_OP_MODEL``, whose BF16/FP16 rows
    refit the half-precision models beside it (:func:`perfmodel.step.half_precision.active_half_models`). A model
    given explicitly (``op_model``, :func:`perfmodel.step.op_latency.using_op_model`) predicts every precision."""
    from perfmodel.step.op_latency import _OVERRIDE, fitted_bundle

    if prec not in HALF_MODEL_PRECISIONS or _OVERRIDE:
        return False
    return op_model is fitted_bundle()["model"]


def _half_models_apply(op_model, prec: str) -> bool:
    """Whether the half-precision models take part in this step's kernels: at BF16/FP16/FP8 (:func:`half_model_applies`)
    and, for its GEMMs, at TF32 (:func:`_tf32_on_the_tensor_cores`). Part of every memo key: the same model object
    predicts differently under an override."""
    return half_model_applies(op_model, "bf16" if prec == "tf32" else prec)


def _kernel_seconds_uncached(work: pd.DataFrame, spec, prec: str, op_model, fp8=None) -> np.ndarray:
    if half_model_applies(op_model, prec):
        from perfmodel.step.bandwidth import MEMORY_BOUND_CLASSES
        from perfmodel.step.half_precision import active_half_models

        half, bandwidth, _ = active_half_models()
        cls = work["op_class"].astype(str)
        gemm = cls.isin(half.classes_).to_numpy()
        mem = cls.isin(MEMORY_BOUND_CLASSES).to_numpy()
        t = np.empty(len(work))
        if gemm.any():  # GEMMs: learned on measured FP16 GEMMs
            t[gemm] = half.predict_in_stream(step_design(work[gemm], _pick(spec, gemm), prec,
                                                         None if fp8 is None else fp8[gemm]))
        if mem.any():  # norms, softmax, elementwise, casts, optimizer: their bytes at the learned bandwidth efficiency
            t[mem] = bandwidth.predict_in_stream(step_design(work[mem], _pick(spec, mem), prec))
        rest = ~(gemm | mem)
        if rest.any():  # convolutions: never measured in half precision; the FP32/TF32-learned efficiency at this peak
            t[rest] = _default_kernel_seconds(work[rest].reset_index(drop=True), _pick(spec, rest), prec, op_model,
                                              None if fp8 is None else fp8[rest])
        return t
    if prec == "tf32" and _half_models_apply(op_model, prec):
        return _tf32_on_the_tensor_cores(work, spec, op_model)
    return _default_kernel_seconds(work, spec, prec, op_model, fp8)


def _tf32_on_the_tensor_cores(work: pd.DataFrame, spec, op_model) -> np.ndarray:
    """TF32 kernels: GEMMs by the tensor-core GEMM model (learned on Vidur's FP16 GEMMs,
    :mod:`perfmodel.step.half_precision`) at the TF32 tensor-core peak and their FP32 bytes, every other kernel as the
    default path predicts it; each GEMM no slower than the FP32-learned model's FP32 GEMM on the CUDA cores (as
    :func:`_no_slower_than_the_cuda_cores`). A fused attention row is a GEMM here too (PyTorch's FP32 SDPA kernels).

    TF32 is a tensor-core math mode: a GEMM is described as at any precision (FLOPs, bytes at 4 bytes an element) and
    only the peak differs. The FP32-learned trees, learned on CUDA-core microbenchmarks and given the TF32 peak, put a
    TF32 GEMM at about half the efficiency the tensor-core model learns for the same GEMM in FP16 (a 4-layer Llama's
    GEMMs 3.7x slower in TF32 than in BF16 on an H100 or an A10G, at a peak ratio of 2); no TF32 GEMM was measured, so
    the tensor-core efficiency learned in FP16 is the one used, and ``basis`` says so."""
    from perfmodel.step.half_precision import active_half_models

    return _default_kernel_seconds(work, spec, "tf32", op_model, gemms=active_half_models()[0])


def _default_kernel_seconds(work: pd.DataFrame, spec, prec: str, op_model, fp8=None, gemms=None) -> np.ndarray:
    """The operator model's kernel times of ``work`` on ``spec`` (one GPU, or an object array of one GPU per row:
    :func:`perfmodel.step.op_latency.step_design`); the rows of ``gemms``' classes by ``gemms`` instead, when given
    (TF32's GEMMs, :func:`_tf32_on_the_tensor_cores`), before the CUDA-core bound."""
    X = step_design(work, spec, prec, fp8)
    t = op_model.predict_in_stream(X)
    if gemms is not None:
        g = np.flatnonzero(X["op_class"].isin(gemms.classes_).to_numpy())
        if len(g):
            t[g] = gemms.predict_in_stream(X.iloc[g].reset_index(drop=True))
    conv = np.flatnonzero(X["op_class"].to_numpy() == "conv")
    if len(conv):
        t[conv] = _monotone_in_batch(X.iloc[conv].reset_index(drop=True), t[conv], op_model, prec)
    if prec != "fp32":
        t = _no_slower_than_the_cuda_cores(work, X, t, spec, prec, op_model)
    return t


def _no_slower_than_the_cuda_cores(work, X, t, spec, prec, op_model) -> np.ndarray:
    """GEMMs and convolutions on the tensor cores never slower than the same kernel on the CUDA cores / vector units.

    The FP32-learned efficiency is not monotone in the peak it is given: a convolution described at the TF32 peak of an
    RTX 6000 Ada (twice its FP32 rate) came out 1-2 % slower than at the FP32 rate. cuDNN and cuBLAS choose among
    algorithms with and without tensor cores (TF32 allowed, or half-precision data), so a kernel takes at most the time
    of the same kernel — the same bytes — at the FP32 vector (or FP32 matrix, AMD) rate: each row is the lesser of the
    two. Both are non-decreasing in the batch, so their minimum is too."""
    mm = np.flatnonzero(X["op_class"].isin(["matmul", "conv"]).to_numpy())
    if not len(mm):
        return t
    sub = work.iloc[mm].reset_index(drop=True)
    X32 = step_design(sub, _pick(spec, mm), "fp32")
    t32 = op_model.predict_in_stream(X32)
    conv = np.flatnonzero(X32["op_class"].to_numpy() == "conv")
    if len(conv):
        t32[conv] = _monotone_in_batch(X32.iloc[conv].reset_index(drop=True), t32[conv], op_model, prec)
    out = t.copy()
    out[mm] = np.minimum(t[mm], t32)
    return out


#: Points per doubling of a convolution's rows on the grid of :func:`_monotone_in_batch` (which starts at one row).
MONOTONE_POINTS_PER_OCTAVE = 4


def _monotone_in_batch(X: pd.DataFrame, t: np.ndarray, op_model, prec: str) -> np.ndarray:
    """Convolution times that never fall when the batch grows.

    The same kernel over more images cannot take less time than over fewer, but the learned efficiency of a
    convolution is not monotone in its size: on NeuSight's microbenchmarks, convolutions of few channels on few images
    measure 30-100 x their roofline (launch-bound cuDNN kernels), and the trees give a small convolution of a step on
    a fast GPU that factor while a larger one falls in a region of efficient kernels — shake-shake-16's 3x3
    convolutions of 16-32 channels on H100 came out at 170 µs at batch 64 and 88 µs at batch 256, and 16 of 120
    neighbouring batch sizes of five zoo CNNs on V100/A100/H100 were predicted faster at the larger batch (with the
    convolutions already described as the microbenchmarks' implicit GEMMs, :func:`work_from_ops`).

    Each convolution is an implicit GEMM of (batch x pixels) rows (``dim_m``), in-channels x taps (``dim_n``) and
    out-channels (``dim_k``); with its shape fixed, every feature of the model is a function of its rows. The model is
    evaluated on a fixed grid of row counts (:data:`MONOTONE_POINTS_PER_OCTAVE` per doubling, from one row to just above
    the row's count; FLOPs and activation bytes scale with the rows, the weights do not), the grid's times are replaced
    by their running maximum from below — the smallest non-decreasing function above them, the projection onto "more
    images never take less time" — and the row's time is that envelope interpolated log-linearly at its own count. The
    result is non-decreasing in the batch for every convolution, exactly.

    Of the two projections (raise a larger convolution to a smaller one's time, or lower the smaller one), this one
    was chosen after both were scored on the only measured CNN steps perfmodel has, CM-DARE's K80/P100 samples
    (``external.cmdare_op_model``: MAPE 41.5 % without either, 38.2 % raising, 44.2 % lowering): a choice made with
    that benchmark in view, stated as such."""
    from perfmodel.step.op_latency import _TILE

    L = MONOTONE_POINTS_PER_OCTAVE
    itemsize = 4.0 if prec in ("fp32", "tf32") else 2.0
    m = X["dim_m"].to_numpy(float)
    wbytes = np.minimum(itemsize * X["dim_n"].to_numpy(float) * X["dim_k"].to_numpy(float), X["bytes"].to_numpy(float) * 0.99)
    pos = L * np.log2(m)
    j0 = np.floor(pos).astype(int)
    counts = j0 + 2  # grid points 0 .. j0 + 1 (2**(j/L) rows)
    row = np.repeat(np.arange(len(X)), counts)
    j = np.concatenate([np.arange(0, a + 2) for a in j0])
    scale = 2.0 ** (j / L) / m[row]
    Y = X.iloc[row].reset_index(drop=True)
    Y["dim_m"] = m[row] * scale
    Y["flops"] = X["flops"].to_numpy(float)[row] * scale
    Y["bytes"] = wbytes[row] + (X["bytes"].to_numpy(float)[row] - wbytes[row]) * scale
    Y["tiles"] = np.ceil(Y["dim_m"] / _TILE) * np.ceil(Y["dim_k"] / _TILE)
    grid = op_model.predict_in_stream(Y)
    out = np.empty(len(X))
    ends = np.cumsum(counts)
    for i, e in enumerate(ends):
        env = np.maximum.accumulate(grid[e - counts[i]:e])  # running maximum from below: non-decreasing in rows
        x = pos[i] - j0[i]
        out[i] = env[-2] ** (1 - x) * env[-1] ** x
    return out


#: GPUs the half-precision GEMM model is fitted on (Vidur's A40 and A100-PCIe-80GB): their dense FP16 rates, TFLOPS.
_HALF_GEMM_PEAKS = (149.7, 312.0)


def _extrapolation_notes(spec, prec: str | None = None) -> list[str]:
    where = gpu_extrapolation(spec)
    if prec in HALF_MODEL_PRECISIONS:
        from perfmodel.datasets import matmul_peak_tflops

        at = "bf16" if prec == "fp8" else prec  # an FP8 step's other GEMMs run in BF16; its FP8 GEMMs at the FP8 peak
        peak = matmul_peak_tflops(spec, at)
        if peak > max(_HALF_GEMM_PEAKS) or peak < min(_HALF_GEMM_PEAKS):
            where = [*where, f"{at} GEMM peak {peak:.4g} TFLOPS, {peak / max(_HALF_GEMM_PEAKS):.2g}x the fastest GPU the "
                             f"half-precision GEMM model was fitted on (A100 {max(_HALF_GEMM_PEAKS):g})"]
    return [f"{spec.gpu}: " + ", ".join(where)] if where else []


def gpu_extrapolation(gpu) -> list[str]:
    """How a GPU's spec lies outside the GPUs the per-operator model was trained on (peak FP32 rate and memory
    bandwidth against :data:`perfmodel.step.op_latency.TRAINING_GPUS`): one phrase per quantity outside the
    trained range, empty when both lie inside it.

    Parameters
    ----------
    gpu : str or GPUSpec
        Anything :func:`perfmodel.datasets.gpu_spec` takes.
    """
    from perfmodel.datasets import gpu_spec, peak_tflops
    from perfmodel.step.op_latency import TRAINING_GPUS

    spec = gpu_spec(gpu)
    train_peaks = [peak_tflops(g, "fp32") for g in TRAINING_GPUS]
    train_bw = [gpu_spec(g).memory_bandwidth_gb_per_s for g in TRAINING_GPUS]
    where = []
    if spec.fp32_peak_tflops > max(train_peaks) or spec.fp32_peak_tflops < min(train_peaks):
        where.append(f"peak FP32 {spec.fp32_peak_tflops:.3g} TFLOPS outside the training GPUs' {min(train_peaks):.3g}-"
                     f"{max(train_peaks):.3g}")
    if spec.memory_bandwidth_gb_per_s > max(train_bw) or spec.memory_bandwidth_gb_per_s < min(train_bw):
        where.append(f"memory bandwidth {spec.memory_bandwidth_gb_per_s:.4g} GB/s outside their {min(train_bw):.4g}-"
                     f"{max(train_bw):.4g}")
    return where


def learned_on(prec: str) -> str:
    """What the kernel efficiencies of a step at ``prec`` were learned on, for the ``basis`` column."""
    from perfmodel.step.op_latency import TRAINING_GPUS, default_op_model

    fp32 = f"learned on NeuSight microbenchmarks of {', '.join(TRAINING_GPUS)} (FP32)"
    if prec in HALF_MODEL_PRECISIONS and half_model_applies(default_op_model(), prec):
        from perfmodel.step.half_precision import active_half_models

        mine = active_half_models()[2]
        at = "bf16" if prec == "fp8" else prec  # an FP8 step keeps its tensors, and every kernel but its FP8 GEMMs, in BF16
        return (f"GEMMs learned on Vidur's FP16 GEMMs of the A40 and A100 (pooled; fused attention no faster than "
                f"FlashAttention-2's published rates, forward and backward)"
                + ("; the FP8 GEMMs by the same model at the FP8 tensor-core peak (no FP8 GEMM measured), the "
                   "backward ones with split accumulation at that peak over "
                   f"{_op_latency.FP8_SPLIT_ACCUMULATION_SLOWDOWN:g} on Ada and Hopper (pytorch/ao #2377), each at no "
                   "larger a share of its peak than the same GEMM gets of the BF16 peak"
                   if prec == "fp8" else "")
                + f"; elementwise kernels and casts at their {at} bytes, the optimizer at FP32 bytes (mixed "
                f"precision: FP32 master weights, states and gradients, with the gradients' and the parameters' "
                f"copies between them), at the bandwidth efficiency "
                f"learned on PyTorch's FP16 elementwise kernel (Vidur's residual adds of the A40 and A100); norms and "
                f"softmax, never measured in half precision, at their {at} bytes and the bandwidth efficiency learned on "
                f"PyTorch's FP32 kernels (NeuSight microbenchmarks of {', '.join(TRAINING_GPUS)}); convolutions, never "
                f"measured in half precision, at the "
                f"efficiency learned for FP32/TF32 convolutions (NeuSight) at the {at} tensor-core peak"
                + (f"; {mine}" if mine else ""))
    user = default_op_model().provenance_
    if prec == "tf32" and half_model_applies(default_op_model(), "bf16"):
        fp32 += ("; TF32 GEMMs, never measured, by the tensor-core GEMM model learned on Vidur's FP16 GEMMs of the A40 "
                 "and A100 at the TF32 peak and their FP32 bytes, no slower than in FP32 and no faster than the FP32 GEMM "
                 "over the TF32-to-FP32 peak ratio")
    return fp32 if "user" not in user else f"{fp32}; refitted: {user}"


def _warn_extrapolation(far, prec):
    import warnings

    from perfmodel._extrapolation import ExtrapolationWarning

    from perfmodel.step.op_latency import default_op_model

    far = list(far)
    if prec in HALF_MODEL_PRECISIONS and half_model_applies(default_op_model(), prec):
        far.append(f"precision {prec}: GEMMs from the model learned on Vidur's A40 and A100 FP16 GEMMs (scored on the "
                   "held-out H100 by external.vidur_h100_ops), elementwise kernels from the bandwidth efficiency learned on "
                   "Vidur's FP16 adds of the A40 and A100, norms and softmax from the one learned on NeuSight's FP32 "
                   "microbenchmarks, convolutions from the FP32-learned model at the tensor-core peak"
                   + ("; FP8 linears extrapolated at the FP8 rate" if prec == "fp8" else ""))
        from perfmodel.step.half_precision import active_half_models

        mine = active_half_models()[2]
        if mine:
            far[-1] += f" ({mine})"
    elif prec == "tf32" and half_model_applies(default_op_model(), "bf16"):
        far.append("precision tf32: GEMMs from the tensor-core model learned on Vidur's A40 and A100 FP16 GEMMs at the "
                   "TF32 peak (no TF32 GEMM measured), every other kernel from the FP32 microbenchmarks")
    elif prec != "fp32":
        far.append(f"precision {prec}: the efficiencies were learned on FP32 CUDA-core microbenchmarks; tensor-core "
                   "matmuls are scaled by the tensor-core peak")
    if far:
        warnings.warn("predict_step_time extrapolates: " + "; ".join(far) + ".", ExtrapolationWarning, stacklevel=3)


def clear_trace_cache() -> None:
    """Forget everything memoised per module (:func:`module_memo`: traces, layouts, saved tensors) and the built
    config modules."""
    _TRACES.clear()
    _ZOO_TRACES.clear()
    _BUILT.clear()
    _KERNEL_MEMO.clear()
    _ROW_MEMO.clear()
    _COMPARABLE.clear()
    _OWN_TREES.clear()


# ------------------------------------------------------------------------------------- the clock a part sustains

#: The compute rates of a :class:`~perfmodel.datasets.GPUSpec` the clock sets (every rate the SMs deliver; the
#: memory bandwidth is the HBM's and stays).
CLOCKED_RATES = ("fp32_peak_tflops", "tf32_peak_tflops", "fp16_peak_tflops", "bf16_peak_tflops", "fp8_peak_tflops",
                 "fp32_matrix_tflops", "fp4_peak_tflops")

#: The largest share of its datasheet clock a part is run at (:func:`at_sustained_clock` takes a factor in
#: ``(0, MAX_CLOCK_SHARE]``; the command line's ``--sustained-clock`` checks the same range).
MAX_CLOCK_SHARE = 2.0

#: The published matmul throughputs the sustained shares rest on, TFLOPS BF16 on one node of 8 GPUs all computing at
#: once, the same GPUs, shape search and software (torch 2.14.0+cu130): the node's median GPU's boost-burst (MAMF) and
#: power-saturated (MSMF) throughput, and the slowest GPU's MSMF (stas00/ml-engineering,
#: compute/accelerator/benchmarks/README.md, "What was measured: alone vs all-8 concurrent" and the all-GPU run
#: beside it: "a node MSMF of 755 TFLOPS, the slowest GPU 745" on 8 H200s, "1439, the slowest GPU 1421" on 8 B200s).
SUSTAINED_MATMUL_TFLOPS = {"H200": dict(burst=852.1, sustained=755.5, slowest=745.0),
                           "B200": dict(burst=1746.7, sustained=1437.5, slowest=1421.0)}

#: The share of its datasheet clock a catalog part's median chip runs a training step at under the continuous
#: half-precision GEMM load of training, every GPU of its node busy, where it is published: its power-saturated over
#: its boost-burst matmul throughput (:data:`SUSTAINED_MATMUL_TFLOPS`; "the published node figure is the median GPU",
#: the source's words). A synchronous step runs at its slowest GPU's share, :func:`training_clock`: "a full-node
#: synchronous training run still waits on its slowest GPU, so the bottom of the 8-GPU range is what it gets"; the
#: chips, not the concurrency, set the GPUs apart (an MSMF range of 3.4 % over the H200 node's 40 GPU-runs, 4.9 % over
#: the B200's, each GPU in its own part of it). The H100 SXM5 and the H800 carry the H200's GH100 die at the same 700 W
#: (the source's MAMF table: "H200 is the same"). perfmodel's GEMM model reproduces burst measurements at the
#: datasheet clock (OpenXLA's H100 table, ``external.vidur_h100_ops``: a clock of 0.98 removes its bias), so a training
#: step on these parts runs at this share of it. An earlier revision of the same page (before its search walked K down
#: to the shapes that sustain best) read 698.6 / 823.9 = 0.848 and 1426.4 / 1751.2 = 0.815 (node means). Other parts:
#: no sustained measurement is published, they run at their datasheet clock (optimistic where they are power-limited).
SUSTAINED_CLOCK_SHARE = {g: SUSTAINED_MATMUL_TFLOPS[die]["sustained"] / SUSTAINED_MATMUL_TFLOPS[die]["burst"]
                         for g, die in (("H100", "H200"), ("H800", "H200"), ("H200", "H200"), ("B200", "B200"))}

#: The measured node whose chip-to-chip spread answers for each part of :data:`SUSTAINED_CLOCK_SHARE`.
SUSTAINED_DIE = {"H100": "H200", "H800": "H200", "H200": "H200", "B200": "B200"}


@functools.lru_cache(maxsize=None)
def expected_slowest(n: int) -> float:
    """How many standard deviations below their mean the slowest of ``n`` independent draws of a normal distribution
    is expected to be, ``-E[min]``: 0 for one draw, 1.42 for 8, 2.34 for 64, 3.25 for 1,024 (``∫₀^∞ 1 − Φ(t)ⁿ dt −
    ∫₀^∞ (1 − Φ(t))ⁿ dt``)."""
    from scipy import integrate, stats

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive number of GPUs; got {n!r}.")
    if n == 1:
        return 0.0
    below = integrate.quad(lambda t: -np.expm1(n * stats.norm.logcdf(t)), 0.0, 40.0, limit=200)[0]
    above = integrate.quad(lambda t: np.exp(n * stats.norm.logsf(t)), 0.0, 40.0, limit=200)[0]
    return float(below - above)


def chip_spread(gpu: str) -> float:
    """One standard deviation of the sustained matmul throughput over the chips of the catalog part ``gpu``, a share
    of the median chip's: the measured node's slowest GPU's shortfall (:data:`SUSTAINED_MATMUL_TFLOPS`) over the
    :func:`expected_slowest` of its 8 (H200 0.98 %, B200 0.81 %; the 40 GPU-runs' ranges, 3.4 % and 4.9 %, are 4.3 σ
    of 0.79 % and 1.13 %, run-to-run jitter included)."""
    t = SUSTAINED_MATMUL_TFLOPS[SUSTAINED_DIE[gpu]]
    return (1.0 - t["slowest"] / t["sustained"]) / expected_slowest(8)


#: The precisions whose training steps run at :data:`SUSTAINED_CLOCK_SHARE` by default: the tensor-core rates the
#: sustained measurements saturate (FP32 and TF32 steps, never measured sustained, keep the datasheet clock).
SUSTAINED_PRECISIONS = ("bf16", "fp16", "fp8")


def slowest_chip_clock(clock: float, gpu: str, n_gpus: int) -> float:
    """The share of its datasheet clock a synchronous step on ``n_gpus`` chips of ``gpu`` runs at when one chip of the
    part runs at ``clock`` — a clock measured on one GPU (its GEMMs timed alone, :func:`sustained_clock`) is a median
    chip's, and every step waits on the slowest of the ``n_gpus``: ``clock·(1 − chip_spread·expected_slowest(n))``
    (:func:`chip_spread`, :func:`expected_slowest`: 1.4 % below it on 8 Hopper GPUs, 2.5 % on 128, 3.0 % on 512).
    ``gpu`` is the catalog id whose measured node answers for the chip-to-chip spread (:data:`SUSTAINED_DIE`: H100,
    H800, H200, B200); for another part no spread is published and ``clock`` is returned unchanged (every chip at it).
    :func:`training_clock` applies the same to the part's published median share."""
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ValueError(f"slowest_chip_clock: n_gpus must be a positive number of GPUs; got {n_gpus!r}.")
    if isinstance(clock, bool) or not isinstance(clock, (int, float, np.floating)) or not 0 < float(clock) <= MAX_CLOCK_SHARE:
        raise ValueError(f"slowest_chip_clock: clock must be a share of the datasheet clock in (0, {MAX_CLOCK_SHARE:g}]; "
                         f"got {clock!r}.")
    if gpu not in SUSTAINED_DIE:
        return float(clock)
    return float(clock) * (1.0 - chip_spread(gpu) * expected_slowest(int(n_gpus)))


def training_clock(spec, precision: str, clock=None, n_gpus: int = 1) -> float:
    """The share of its datasheet clock a training step on ``n_gpus`` of ``spec`` runs at: ``clock`` where given (a
    :attr:`perfmodel.Cluster.clock`), else at the precisions of :data:`SUSTAINED_PRECISIONS` the share of the slowest
    of the step's ``n_gpus`` chips, which every synchronous step waits on: :data:`SUSTAINED_CLOCK_SHARE` (the median
    chip's) less :func:`expected_slowest` ``(n_gpus)`` standard deviations of the part's :func:`chip_spread` (chips drawn
    independently: 0.874 of the datasheet clock on 8 H100s, as the measured node's slowest GPU, 0.859 on 1,024); at
    those precisions a part with no sustained measurement runs at :func:`burst_clock_share` (below 1 only where the GEMM
    model at its datasheet clock is faster than its fastest published matmul: the AMD Instinct parts); else 1 (a part
    already clocked by :func:`at_sustained_clock` keeps its clock)."""
    from perfmodel.datasets import gpu_spec

    if clock is not None:
        return float(clock)
    gpu = gpu_spec(spec).gpu
    if precision not in SUSTAINED_PRECISIONS:
        return 1.0
    if gpu not in SUSTAINED_CLOCK_SHARE:  # a clocked part ("<gpu>@0.85clk") is in no table: it keeps its clock
        return burst_clock_share(gpu) if gpu in _mamf_parts() else 1.0
    return slowest_chip_clock(SUSTAINED_CLOCK_SHARE[gpu], gpu, int(n_gpus))


def clocked_clusters(precision: str, clusters) -> tuple[tuple, dict, dict]:
    """The clusters with each GPU at the clock a step at ``precision`` runs it at (:func:`training_clock`:
    :attr:`perfmodel.Cluster.clock`, else the sustained share where published), the clocked parts' names mapped back
    to the given ones, and the ``basis`` note of each given name: for :func:`name_clocked_rows`."""
    import dataclasses

    clocked, names, notes = [], {}, {}
    for c in clusters:
        asked = getattr(c, "clock", None)
        f = training_clock(c.spec, precision, asked, c.n_gpus)
        if f == 1.0:
            clocked.append(c)
            continue
        spec = at_sustained_clock(c.spec, f)
        names[spec.gpu] = c.spec.gpu
        notes[c.spec.gpu] = f"; the GPU at {f:.3g} of its datasheet clock ({_clock_reason(c, asked)})"
        clocked.append(dataclasses.replace(c, gpu=spec, clock=None))
    return tuple(clocked), names, notes


def _clock_reason(c, asked) -> str:
    """Why :func:`clocked_clusters` runs the cluster ``c`` at its clock, for its ``basis`` note."""
    if asked is not None:
        return "Cluster.clock"
    if c.spec.gpu not in SUSTAINED_CLOCK_SHARE:
        return ("the share at which the GEMM model reaches the part's fastest published matmul, a shape search's best "
                "on one GPU alone: perfmodel.step.kernels.burst_clock_share; sustained under training's continuous "
                "load it may run slower")
    return ((f"the share the slowest of its {c.n_gpus} chips is expected to sustain" if c.n_gpus > 1
             else "the share its median chip sustains")
            + " under training's continuous GEMM load, every GPU of the node busy: perfmodel.step.kernels.training_clock")


def name_clocked_rows(out: pd.DataFrame, names: dict, notes: dict) -> pd.DataFrame:
    """Rows of clocked clusters (:func:`clocked_clusters`) named as given, their clock said once in ``basis`` (the
    links it describes name the GPU as given too)."""
    if names:
        out["gpu"] = out["gpu"].replace(names)
        for col in ("basis", "interconnect"):
            if col in out.columns:
                text = out[col].astype(str)
                for clocked, given in names.items():
                    text = text.str.replace(f"({clocked})", f"({given})", regex=False)
                out[col] = text
        out["basis"] = out["basis"] + out["gpu"].map(notes).fillna("")
    return out


def at_sustained_clock(spec, factor: float):
    """``spec`` (a catalog name or a :class:`~perfmodel.datasets.GPUSpec`) running at ``factor`` of the clock its
    datasheet peaks are quoted at: every compute rate of :data:`CLOCKED_RATES` (and ``clock_ghz``) times ``factor``,
    the memory bandwidth unchanged, the name marked (``"<gpu>@0.85clk"``). A part held under its power limit by
    continuous GEMM load sustains less than the boost clock of its datasheet; :func:`sustained_clock` finds the factor
    from its measured GEMMs. The clocked part is a GPU of its own: a catalog GPU's own trees (the FP32 operator model's
    training GPUs) no longer answer for it, its spec sheet does; an MFU is then a share of the clocked rates."""
    import dataclasses

    from perfmodel.datasets import gpu_spec

    spec = gpu_spec(spec)
    if (isinstance(factor, bool) or not isinstance(factor, (int, float, np.floating))
            or not 0 < float(factor) <= MAX_CLOCK_SHARE):
        raise ValueError(f"factor must be a share of the datasheet clock in (0, {MAX_CLOCK_SHARE:g}]; got {factor!r}.")
    f = float(factor)
    rates = {c: float(getattr(spec, c)) * f for c in CLOCKED_RATES if hasattr(spec, c)}
    clock = float(getattr(spec, "clock_ghz", np.nan)) * f
    return dataclasses.replace(spec, gpu=f"{spec.gpu}@{f:.3g}clk", clock_ghz=clock, **rates)


def gemm_work(gemms: pd.DataFrame) -> pd.DataFrame:
    """Work rows (:func:`perfmodel.step.trace.work_from_ops`' convention) of measured GEMMs: ``m``, ``n``, ``k`` an
    ``m × k`` input times a ``k × n`` weight, 2-byte operands (4 at ``"fp32"``, 1 at ``"fp8"``, from the optional
    ``precision`` column), the FP8 rows marked for the FP8 rate."""
    need = {"m", "n", "k"}
    if not isinstance(gemms, pd.DataFrame) or not need <= set(gemms.columns) or not len(gemms):
        raise ValueError("gemms must be a DataFrame with one row per GEMM and columns m, n, k (an m x k input times a "
                         f"k x n weight); got {type(gemms).__name__} with columns "
                         f"{sorted(getattr(gemms, 'columns', []))}.")
    m, n, k = (pd.to_numeric(gemms[c], errors="coerce").to_numpy(float) for c in ("m", "n", "k"))
    if not (np.isfinite(m).all() and np.isfinite(n).all() and np.isfinite(k).all()) or min(m.min(), n.min(), k.min()) < 1:
        raise ValueError("gemms: m, n and k must be positive numbers on every row.")
    prec = gemms["precision"].astype(str).to_numpy() if "precision" in gemms.columns else np.full(len(gemms), "bf16")
    size = np.select([prec == "fp32", prec == "fp8"], [4.0, 1.0], 2.0)
    return pd.DataFrame({"op_class": "matmul", "flops": 2.0 * m * n * k, "bytes": size * (m * k + k * n) + 2.0 * m * n,
                         "tiles": np.ceil(m / 128) * np.ceil(k / 128), "dim_m": m, "dim_n": k, "dim_k": n, "dim_b": 1.0,
                         "op": "aten.mm", "phase": "forward", "fp8": prec == "fp8"})


def gemm_seconds(gemms: pd.DataFrame, spec) -> np.ndarray:
    """The GEMM model's time (s) of each row of ``gemms`` (``m``, ``n``, ``k``; an optional ``precision`` column, BF16
    without it) on ``spec``, each row at its own precision (:func:`gemm_work`, :func:`kernel_seconds`)."""
    work = gemm_work(gemms)
    prec = gemms["precision"].astype(str).to_numpy() if "precision" in gemms.columns else np.full(len(gemms), "bf16")
    t = np.empty(len(gemms))
    for p in pd.unique(prec):
        at = prec == p
        t[at] = np.asarray(kernel_seconds(work[at].reset_index(drop=True), spec, str(p)), dtype=float)
    return t


def _measured_seconds(gemms: pd.DataFrame) -> np.ndarray:
    if "ms" in gemms.columns:
        t = pd.to_numeric(gemms["ms"], errors="coerce").to_numpy(float) / 1e3
    elif "tflops" in gemms.columns:
        m, n, k = (pd.to_numeric(gemms[c], errors="coerce").to_numpy(float) for c in ("m", "n", "k"))
        t = 2.0 * m * n * k / (pd.to_numeric(gemms["tflops"], errors="coerce").to_numpy(float) * 1e12)
    else:
        raise ValueError("gemms needs the measured time of each GEMM: a column ms (milliseconds) or tflops.")
    if not (np.isfinite(t).all() and (t > 0).all()):
        raise ValueError("gemms: every measured time (ms or tflops) must be a positive number.")
    return t


def sustained_clock(spec, gemms: pd.DataFrame, precision: str = "bf16") -> float:
    """The share of its datasheet clock at which ``spec`` ran the measured ``gemms``: the factor ``f`` for which the
    GEMM model on :func:`at_sustained_clock` ``(spec, f)`` predicts their times with no bias (the mean of
    ``log(predicted / measured)`` over the rows of ``precision`` is 0; bisection in (0.2, 2)). Where the clocked part
    passes a catalog part it then dominates the model's times step (:func:`dominated_gpus`), and the bias left is
    that step's (under 1 % for FBGEMM's 500 W H100 GEMMs).

    Parameters
    ----------
    spec : str or GPUSpec
        The part as its datasheet gives it.
    gemms : DataFrame
        One row per GEMM: ``m``, ``n``, ``k`` and its time, ``ms`` or ``tflops`` (``2·m·n·k`` over the time);
        an optional ``precision`` column selects the rows of ``precision``.
    precision : str
        ``"bf16"`` (default), ``"fp16"``, ``"tf32"`` or ``"fp32"``: the rate the GEMMs ran at.

    Returns
    -------
    float
        The factor, to pass to :func:`at_sustained_clock`.

    Raises
    ------
    ValueError
        Malformed rows, no row of ``precision``, or times the model cannot reach between 0.2 and 2 times the datasheet
        clock (wrong units?).
    """
    from perfmodel.datasets import gpu_spec

    spec = gpu_spec(spec)
    if precision not in ("bf16", "fp16", "tf32", "fp32"):
        raise ValueError(f"precision must be 'bf16', 'fp16', 'tf32' or 'fp32' (the clock is found from GEMMs at one "
                         f"precision; check FP8 rows against the result); got {precision!r}.")
    rows = gemms if "precision" not in getattr(gemms, "columns", []) else gemms[gemms["precision"].astype(str) == precision]
    if isinstance(rows, pd.DataFrame) and not len(rows):
        raise ValueError(f"gemms has no row of precision {precision!r}.")
    work = gemm_work(rows.assign(precision=precision) if isinstance(rows, pd.DataFrame) else rows)
    measured = _measured_seconds(rows)

    def bias(f: float) -> float:
        return float(np.mean(np.log(kernel_seconds(work, at_sustained_clock(spec, f), precision) / measured)))

    lo, hi = 0.2, MAX_CLOCK_SHARE
    if bias(lo) < 0 or bias(hi) > 0:
        raise ValueError(f"the measured GEMMs are {'slower' if bias(lo) < 0 else 'faster'} than the GEMM model predicts "
                         f"for {spec.gpu} at {lo if bias(lo) < 0 else hi:g} times its datasheet clock: check that ms "
                         "are milliseconds (or tflops TFLOPS) and m, n, k the GEMM's sizes.")
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bias(mid) > 0 else (lo, mid)
    # the bias falls with the clock but may step (a part is never predicted slower than a catalog part it dominates,
    # :func:`dominated_gpus`): the end of the last bracket with the smaller bias
    return lo if abs(bias(lo)) <= abs(bias(hi)) else hi


@functools.lru_cache(maxsize=1)
def _mamf_parts() -> frozenset:
    """The catalog parts with a row in :func:`perfmodel.datasets.load_mamf_matmuls`."""
    from perfmodel.datasets import load_mamf_matmuls

    g = load_mamf_matmuls()["gpu"]
    return frozenset(g[g.notna()].astype(str))


@functools.lru_cache(maxsize=None)
def burst_clock_share(gpu: str) -> float:
    """The share of its datasheet clock at which the GEMM model reaches the fastest matmul published for the catalog
    part ``gpu`` (:func:`perfmodel.datasets.load_mamf_matmuls`: the best BF16 shape of a brute-force search, one GPU
    alone, its mean time), where the model at the datasheet clock is faster than that (:func:`sustained_clock` of the
    part's BF16 rows), else 1. No matmul runs faster than the fastest a search over shapes found, so a model faster
    than it at that very shape is too fast on the part: at its datasheet clock the model puts the MI300X's best shape
    at 975 TFLOPS, measured 668. The NVIDIA parts' best shapes run faster than the model predicts (a search's best
    beats a typical shape) and keep 1. A part with no BF16 row keeps 1."""
    from perfmodel.datasets import gpu_spec, load_mamf_matmuls

    name = gpu_spec(gpu).gpu
    rows = load_mamf_matmuls()
    rows = rows[(rows["gpu"].astype(str) == name) & (rows["precision"].astype(str) == "bf16")]
    if not len(rows):
        return 1.0
    return min(1.0, float(sustained_clock(name, rows[["m", "n", "k", "tflops"]], "bf16")))


def mamf_check() -> pd.DataFrame:
    """The GEMM model on every catalog part's fastest published matmul (:func:`perfmodel.datasets.load_mamf_matmuls`),
    at the part's datasheet clock and at the clock a one-GPU training step runs it at (:func:`training_clock`).

    Returns
    -------
    DataFrame
        One row per table row with a catalog part: ``accelerator``, ``gpu``, ``precision``, ``m``, ``n``, ``k``,
        ``measured_tflops``, ``predicted_tflops_datasheet``, ``predicted_over_measured`` (at the datasheet clock),
        ``training_clock`` and ``predicted_tflops_training_clock``.
    """
    from perfmodel.datasets import load_mamf_matmuls

    rows = load_mamf_matmuls()
    rows = rows[rows["gpu"].notna() & (rows["gpu"].astype(str) != "")].reset_index(drop=True)
    flops = 2.0 * rows["m"].to_numpy(float) * rows["n"].to_numpy(float) * rows["k"].to_numpy(float)
    out = []
    for i, r in rows.iterrows():
        gemm = rows.loc[[i], ["m", "n", "k", "precision"]]
        f = training_clock(r["gpu"], str(r["precision"]))
        at = float(gemm_seconds(gemm, r["gpu"])[0])
        clocked = float(gemm_seconds(gemm, at_sustained_clock(r["gpu"], f))[0]) if f != 1.0 else at
        out.append(dict(accelerator=r["accelerator"], gpu=r["gpu"], precision=r["precision"], m=int(r["m"]),
                        n=int(r["n"]), k=int(r["k"]), measured_tflops=float(r["tflops"]),
                        predicted_tflops_datasheet=flops[i] / at / 1e12,
                        predicted_over_measured=flops[i] / at / 1e12 / float(r["tflops"]), training_clock=f,
                        predicted_tflops_training_clock=flops[i] / clocked / 1e12))
    return pd.DataFrame(out)


@functools.lru_cache(maxsize=None)
def grand_teton_h100_clock() -> float:
    """The share of its datasheet clock one 500 W H100 of Meta's Grand Teton servers (96 GB HBM2e,
    :data:`perfmodel.datasets.llm_runs.GRAND_TETON_H100`) sustains under GEMM load: :func:`sustained_clock` of the part
    as :func:`perfmodel.datasets.llm_runs.torchtitan_gpu_spec` describes it on the BF16 GEMMs FBGEMM published for a
    500 W H100 (:func:`perfmodel.datasets.load_published_gemms`)."""
    from perfmodel.datasets import load_published_gemms
    from perfmodel.datasets.llm_runs import torchtitan_gpu_spec

    return sustained_clock(torchtitan_gpu_spec("H100 96GB HBM2e 500W power limit"), load_published_gemms(), "bf16")
