"""Half-precision (FP16 / BF16) kernel times learned from measured FP16 operators: Vidur's A40 and A100 profiles.

The default operator model (:mod:`perfmodel.step.op_latency`) is fitted on NeuSight's FP32 microbenchmarks; in BF16 /
FP16 the step predictor used to swap only the tensor-core peak
(:func:`perfmodel.datasets.matmul_peak_tflops`) into that FP32-learned model. This module fits the **same** estimator
(:class:`~perfmodel.step.op_latency.OpLatencyModel`, same features, default parameters) on measured FP16 kernels:
microsoft/vidur's per-operator profiles of one Llama-family transformer layer (:func:`perfmodel.datasets.llm_runs.load_vidur_operators`)
on the **A40 and A100 only**. Vidur's third GPU, the H100, is test data: it is predicted from its spec sheet and
scored (:func:`vidur_scores`, the external item ``vidur_h100_ops``), never fitted or tuned on.

What each Vidur operator computes (read from microsoft/vidur @ 7d47513, ``vidur/profiling/mlp/mlp_impl.py``, and the
layers it imports from microsoft/sarathi-serve, ``sarathi/model_executor/...``). ``T`` = ``num_tokens``, ``E`` =
``n_embd``, ``H`` / ``KV`` = ``n_head`` / ``n_kv_head``, ``d = E / H``, ``F`` = ``n_expanded_embd``, ``tp`` the
tensor-parallel degree; every tensor is FP16 (``model.to(dtype=torch.float16)``, ``mlp_wrapper.py``), 2 bytes an element:

=========================  =====================================================================  ========================
Vidur operator             what runs (upstream)                                                   work row (:func:`vidur_work`)
=========================  =====================================================================  ========================
attn_pre_proj              ``ColumnParallelLinear(E, (H + 2 KV) d)``: ``F.linear`` of the         ``aten.mm`` T×E · E×(H+2KV)d/tp
                           ``1/tp`` shard (bias for Qwen, phi-2; not counted: ``N`` elements)
attn_post_proj             ``RowParallelLinear(H d, E)``, ``reduce_results=False``: ``F.linear``  ``aten.mm`` T×(E/tp) · (E/tp)×E
                           without bias inside the timer, no all-reduce
mlp_up_proj                ``ColumnParallelLinear(E, 2F)`` when ``use_gated_mlp`` (gate and up    ``aten.mm`` T×E · E×(2F/tp)
                           fused), else ``(E, F)``                                                 (F/tp ungated)
mlp_down_proj              ``RowParallelLinear(F, E)``, no all-reduce                              ``aten.mm`` T×(F/tp) · (F/tp)×E
mlp_act                    ``SiluAndMul`` (one custom kernel: reads T×2F/tp, writes T×F/tp) when   elementwise, 6 (GELU 4)
                           gated, else ``torch.nn.GELU`` (reads and writes T×F/tp)                 bytes / output element
input_layernorm,           ``RMSNorm`` (sarathi's ``layernorm_ops.rms_norm``, one kernel: reads    layernorm, T rows of E
post_attention_layernorm   T×E and the E weights, writes T×E); phi-2: ``torch.nn.LayerNorm``
                           (weight and bias) and no post-attention norm
attn_rope                  sarathi's in-place ``pos_encoding_ops.rotary_embedding`` on q           elementwise, reads and
                           (T×H d/tp) and k (T×KV d/tp), reading the int64 positions and one       writes q and k
                           FP16 cos/sin row of ``d`` per token
add                        the MLP residual ``residual + hidden_states`` (T×E; the attention      elementwise T×E, 2 inputs;
                           residual add is not timed); phi-2: ``attn + ff + residual``, two adds  phi-2: 2 kernels
emb                        ``VocabParallelEmbedding``: only ``F.embedding`` is timed (a gather:   elementwise, reads the ids
                           T int64 ids, T rows of E read, T×E written)                             and T×E, writes T×E
=========================  =====================================================================  ========================

Each operator is described as the per-op row :func:`perfmodel.features.extract` (``per_op=True``) would give for it
(``op``, ``op_class``, bytes read and written, shapes) and turned into work rows by
:func:`perfmodel.step.step_time.work_from_ops` itself, so the rows the model learns from follow exactly the convention
of the rows it will be asked about in a step: a matmul is ``("matmul", 2·m·n·k, bytes, ⌈m/128⌉·⌈k/128⌉, m, n, k, 1)``
with ``n`` the reduction dimension; an elementwise operator that moves other than 8-12 bytes per output element (every
FP16 one) is the binary op over ``bytes / 12`` elements.

Times: Vidur's ``CudaTimer`` regions (``vidur/profiling/common/cuda_timer.py``). With the profiler's default
``--profile_method record_function`` (``vidur/profiling/mlp/main.py``) a region's time is the sum of the durations of
the CUDA kernels launched inside it, read from a PyTorch-profiler (Kineto) trace
(``vidur/profiling/utils/record_function_tracer.py``), over 20 repetitions of the block in one forward pass
(``mlp_wrapper.py``); with ``kineto`` it is the summed ``cuda_time_total`` of the region's kernels. Either way these are
**kernel times, without launch overhead**: exactly what :meth:`OpLatencyModel.predict_in_stream` predicts. (The
estimator still estimates a launch overhead per GPU and class as the fastest measurement less
:data:`~perfmodel.step.op_latency.KERNEL_MIN_S`; Vidur's fastest kernels are 1-2 µs, so it is 0 here.) Kernels
shorter than ``KERNEL_MIN_S`` (5 µs) are learned and predicted at 5 µs, the floor of an eager step: they weigh little in
time-weighted errors, but dominate the median error of the small operators of few tokens.

GPUs. ``a100`` is read as the A100 80GB PCIe (:data:`perfmodel.datasets.llm_runs.VIDUR_GPUS` gives the evidence). The
A40 is not in perfmodel's catalog: :data:`A40_SPEC` is its datasheet row. ``h100``: Vidur's device SKU for the H100
(``vidur/config/device_sku_config.py``, ``H100DeviceSKUConfig``) has ``fp16_tflops = 1000``, the SXM5 part's dense
989.4 TFLOPS (the PCIe card's is 756, the NVL's 835), and Vidur's H100 node types are an H100 DGX (SXM5) and a
"pairwise NVLink" node; but ``docs/profiling.md`` says compute profiles are shared by all nodes of a SKU and describes
``h100_pair_nvlink`` as "Azure internal VM with 4 80GB H100 NVL GPUs", so the card that produced ``compute/h100`` is not
named. We score against the catalog's ``H100`` (SXM5, as the loader does) and, as a sensitivity check only, against the
``H100-NVL`` row (:func:`vidur_scores`, ``h100_spec``).

BF16 is treated as FP16: the A100's and H100's dense BF16 tensor-core rates equal their FP16 rates (312 and 989.4
TFLOPS; the A40's 149.7 both) and the kernels move the same 2-byte elements; Vidur measured FP16 only.

Parameters. The model uses :class:`OpLatencyModel`'s defaults (300 boosting iterations, learning rate 0.1, 31 leaves,
``random_state=0``) pooled over its GPUs (``per_gpu=False``): no GPU has a model of its own, so a GPU enters only
through its spec sheet (with a per-GPU model, the A100-PCIe-80GB's own trees, fitted on transformer shapes, answered
for every norm and elementwise kernel of a CNN on that card: 121 ms of batch-norm where the A100-PCIe-40GB gets 13).
Nothing was tuned, with or without the H100 in view. GPU features follow the step predictor
(``_kernel_seconds_uncached``): matmul rows at the tensor-core peak of the precision
(:func:`~perfmodel.datasets.matmul_peak_tflops`), so that :func:`half_precision_kernel_seconds` sees the GPU as the
step predictor does.

Memory-bound kernels. Only the GEMMs are learned here (:data:`HALF_CLASSES`). A norm, softmax, elementwise, cast or
optimizer kernel is described the same way at any precision — the bytes it moves at that precision's element size —
and timed by the bandwidth model (:mod:`perfmodel.step.bandwidth`): its elementwise class learned on Vidur's residual
adds (PyTorch's own elementwise kernel, FP16) of the same two GPUs, its norm and softmax classes on NeuSight's FP32
microbenchmarks of PyTorch's kernels (no half-precision measurement of them exists). Vidur's norms, rotary, activation
and embedding operators are sarathi-serve's custom serving kernels (module table), not PyTorch's; they run at 0.4-0.6
of the bandwidth where PyTorch's add runs at 0.85-1.0, and they are never learned from. The choice was made on the
training GPUs only: each of the A40 and A100 predicted by trees fitted on the other misses those operators by
17-5,400 % (A40's norms from the A100's trees: 54×); the bandwidth model, its elementwise class learned on the other
GPU's adds, misses them by 9-45 % on the A40 and 9-81 % on the A100 (:func:`vidur_scores`, protocols
``a100-only-to-a40`` and ``a40-only-to-a100``; the custom embedding gather worst); the elementwise class learned
on the other GPU's adds misses each one's adds by 8.5-8.7 % where the one learned on NeuSight's FP32 rows missed them
by 13.7-24.7 % (:func:`perfmodel.step.bandwidth.elementwise_choice_scores`).

TF32. No TF32 GEMM is measured in the data: a TF32 GEMM is predicted by this model at the TF32 tensor-core peak and
its FP32 bytes (``kernels._tf32_on_the_tensor_cores``), held between the FP32 GEMM and the FP32 GEMM over the
TF32-to-FP32 peak ratio; ``basis`` says so.

Classes never measured in half precision: convolutions and softmax (Vidur's layer has neither; attention is profiled
apart, ``attention.csv``, not mirrored). A convolution takes the efficiency learned for convolutions at FP32/TF32
(NeuSight) at the tensor-core peak of the precision; softmax is memory-bound (above). ``basis`` says so.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd

from perfmodel.step.vidur import A40_SPEC, VIDUR_SPECS, vidur_profile_hashes, vidur_rows, vidur_work  # noqa: F401 - re-exported

__all__ = ["A40_SPEC", "VIDUR_SPECS", "TRAINING_SOURCE_GPUS", "HALF_PRECISIONS", "vidur_work", "half_precision_design",
           "HALF_CLASSES", "vidur_rows", "vidur_profile_hashes", "fit_half_bundle", "half_precision_op_model",
           "HALF_ARTIFACT", "HALF_SHA256", "half_artifact_path", "save_half_bundle", "load_half_bundle",
           "USER_HALF_PRECISIONS", "user_kernel_seconds", "split_user_rows", "fit_user_half_bundle", "companion_paths",
           "active_half_models"]

#: Vidur's GPUs the shipped half-precision model is fitted on; ``h100`` is held out.
TRAINING_SOURCE_GPUS = ("a40", "a100")

#: Precisions :func:`half_precision_kernel_seconds` serves (BF16 is treated as FP16).
HALF_PRECISIONS = ("fp16", "bf16")

#: Operator classes the half-precision model learns from Vidur's rows: the GEMMs. Vidur's norms and elementwise
#: operators are sarathi-serve's own kernels (``rms_norm``, in-place rotary, ``silu_and_mul``, the gather of the
#: embedding), not the kernels PyTorch runs in a training step; they stay test rows (:func:`vidur_scores` scores
#: them), and memory-bound kernels at every precision are predicted from the bandwidth efficiency learned on PyTorch's
#: own kernels (NeuSight's microbenchmarks; module docstring, "Memory-bound kernels").
HALF_CLASSES = ("matmul",)

def half_precision_design(work: pd.DataFrame, spec, prec: str = "fp16") -> pd.DataFrame:
    """Model inputs (:func:`~perfmodel.step.op_latency.op_design`) of work rows on one GPU, as the step predictor
    builds them: matmul and conv rows at the tensor-core peak of ``prec`` (:func:`~perfmodel.datasets.matmul_peak_tflops`),
    the others at the CUDA-core FP32 peak; bandwidth, SMs and L2 from the spec.

    Parameters
    ----------
    work : DataFrame
        :data:`~perfmodel.step.op_latency.WORK_COLUMNS` rows.
    spec : str or GPUSpec
        The GPU (catalog name, or a spec).
    prec : {"fp16", "bf16"}
        Precision of the matrix units.

    Returns
    -------
    DataFrame
        ``op_design`` columns, ``gpu`` the spec's name; index 0..n-1.
    """
    from perfmodel.datasets import gpu_spec
    from perfmodel.step.op_latency import step_design

    return step_design(work, gpu_spec(spec), prec)


# ----------------------------------------------------------------------------------------------------- fit and artifact

#: Version of this module's fitting code (mapping, features, parameters): part of the artifact's key.
HALF_MODEL_VERSION = "2"

#: The shipped A40+A100 half-precision model and the sha256 its bytes must have.
HALF_ARTIFACT = "fitted/op_latency_half.npz"
HALF_SHA256 = "52ffdb1cfa804797c0cabe2d668d2eea7fe312aad1ddebc92bc360f4ced45d1c"

_PROVENANCE = ("microsoft/vidur @ 7d47513 FP16 operator profiles (data/profiling/compute/{{a40,a100}}/*/*/mlp.csv), "
               "{n} GEMM rows of A40, A100-PCIe-80GB, pooled (no per-GPU model); no H100 row (Vidur's H100 is test data)")

_LOADED: dict = {}


def _half_key() -> str:
    """Hash of what the fit depends on: both code versions and the sha256 of every A40/A100 Vidur ``mlp.csv``."""
    from perfmodel.step.op_latency import MODEL_VERSION

    h = hashlib.sha256(f"op_latency={MODEL_VERSION};half={HALF_MODEL_VERSION}".encode())
    for k, sha in vidur_profile_hashes(TRAINING_SOURCE_GPUS, suffix="/mlp.csv"):
        h.update(f"{k}={sha};".encode())
    return h.hexdigest()[:16]


def _fit(X: pd.DataFrame, **params):
    """The half-precision estimator fitted on the :data:`HALF_CLASSES` rows of ``X`` (:func:`vidur_rows`), pooled over
    GPUs (``per_gpu=False``: no GPU identity; a GPU is known to the model through its spec sheet only)."""
    from perfmodel.step.op_latency import OpLatencyModel

    X = X[X["op_class"].isin(HALF_CLASSES).to_numpy()]
    return OpLatencyModel(**{"per_gpu": False, **params}).fit(X, X["kernel_s"])


def fit_half_bundle() -> dict:
    """Fit the half-precision model on Vidur's A40 and A100 rows, with its leave-one-GPU-out scores on them.

    Returns
    -------
    dict
        ``model`` (fitted :class:`~perfmodel.step.op_latency.OpLatencyModel`, default parameters), ``scores``
        (``|log(Σ predicted / Σ measured)|`` of each training GPU predicted by the model fitted on the other),
        ``logo_predictions`` (every training row's in-stream kernel time, s, with its GPU held out), ``key``
        (:func:`_half_key`) and ``sklearn_version``: what :func:`save_half_bundle` writes.
    """
    import sklearn

    X = vidur_rows(TRAINING_SOURCE_GPUS)
    X = X[X["op_class"].isin(HALF_CLASSES).to_numpy()].reset_index(drop=True)
    model = _fit(X)
    model.provenance_ = _PROVENANCE.format(n=len(X))
    gpus = X["gpu"].to_numpy()
    logo = np.empty(len(X))
    for g in sorted(set(gpus)):
        held = gpus == g
        logo[held] = _fit(X[~held]).predict_in_stream(X[held])
    t = X["kernel_s"].to_numpy(float)
    scores = pd.Series({g: abs(float(np.log(logo[gpus == g].sum() / t[gpus == g].sum()))) for g in sorted(set(gpus))},
                       name="abs_log_ratio")
    return {"model": model, "scores": scores, "logo_predictions": logo, "key": _half_key(), "sklearn_version": sklearn.__version__,
            # the name the artifact records (kept from before the step model had its own package: shipped files stay byte-identical; the old module path is an alias)
            "fitted_with": f"perfmodel.models.half_precision.fit_half_bundle v{HALF_MODEL_VERSION}"}


def half_artifact_path() -> Path:
    """Path of the shipped half-precision model inside the installed package."""
    return Path(__file__).resolve().parent / HALF_ARTIFACT


def save_half_bundle(bundle: dict, path) -> str:
    """Write a bundle of :func:`fit_half_bundle` as an artifact (same safe format as the default model: numbers and
    JSON only, deterministic bytes; ``<path>.sha256`` beside it). Returns its sha256."""
    from perfmodel.step import _artifact
    from perfmodel.step.op_latency import bundle_arrays

    header, arrays = bundle_arrays(bundle)
    return _artifact.save(path, header, arrays)


def load_half_bundle(path=None, *, sha256: str | None = None) -> dict:
    """Read a half-precision bundle: the shipped one (sha256 pinned in :data:`HALF_SHA256`) when ``path`` is None."""
    from perfmodel.step import _artifact
    from perfmodel.step.op_latency import bundle_from_arrays

    if path is None:
        path, sha256 = half_artifact_path(), HALF_SHA256
    return bundle_from_arrays(*_artifact.load(path, sha256=sha256))


def half_precision_op_model():
    """The shipped half-precision operator model: an :class:`~perfmodel.step.op_latency.OpLatencyModel` fitted on
    Vidur's measured FP16 operators of the A40 and A100 (never the H100), read from the package's artifact
    (``perfmodel/step/fitted/op_latency_half.npz``, sha256 pinned in :data:`HALF_SHA256`) — no data mirror, no fit.

    Returns
    -------
    OpLatencyModel
        Its ``predict_in_stream(X)`` gives in-stream kernel seconds of :func:`half_precision_design` rows; it knows the
        class ``matmul`` only (``classes_``, :data:`HALF_CLASSES`), pooled over its two GPUs: no model of its own for
        either (``per_gpu=False``).
    """
    if "shipped" not in _LOADED:
        _LOADED["shipped"] = load_half_bundle()["model"]
    return _LOADED["shipped"]


# ------------------------------------------------------------------------------------------------------------- scoring




# ------------------------------------------------------------------------------------- a user's half-precision rows

#: Precisions of a user's measured rows that refit the half-precision models (``perfmodel measure ops --precision``).
USER_HALF_PRECISIONS = ("bf16", "fp16")


def user_kernel_seconds(rows: pd.DataFrame) -> np.ndarray:
    """:func:`perfmodel.step.bandwidth.user_kernel_seconds` (the latency less the launch overhead of its GPU and
    class)."""
    from perfmodel.step.bandwidth import user_kernel_seconds as kernel_seconds

    return kernel_seconds(rows)


def split_user_rows(rows: pd.DataFrame) -> dict:
    """A user's measured rows by the model they refit: ``"fp32"`` (FP32/TF32 rows, or rows without a ``precision``
    column: the FP32-learned operator model), ``"half_gemm"`` (BF16/FP16 GEMMs: the half-precision GEMM model) and
    ``"half_memory"`` (BF16/FP16 norms, softmax and elementwise kernels: the bandwidth model). Half-precision
    convolutions are predicted from the FP32/TF32-learned model at the half-precision peak and refit nothing; they are
    returned as ``"half_unused"`` so that a caller can say so."""
    from perfmodel.step.bandwidth import MEMORY_BOUND_CLASSES

    prec = rows["precision"].astype(str).to_numpy() if "precision" in rows.columns else np.full(len(rows), "fp32")
    half = np.isin(prec, USER_HALF_PRECISIONS)
    cls = rows["op_class"].astype(str).to_numpy()
    gemm = half & np.isin(cls, HALF_CLASSES)
    mem = half & np.isin(cls, MEMORY_BOUND_CLASSES)
    take = {"fp32": ~half, "half_gemm": gemm, "half_memory": mem, "half_unused": half & ~gemm & ~mem}
    return {k: rows[m].reset_index(drop=True) for k, m in take.items()}


def fit_user_half_bundle(rows: pd.DataFrame, *, key: str) -> dict:
    """The half-precision GEMM model refitted with a user's measured BF16/FP16 GEMM rows (``split_user_rows(...)
    ["half_gemm"]``).

    Fitted on Vidur's A40 and A100 GEMM rows plus the user's, with a model of its own for each GPU
    (``per_gpu=True``): the user's GPU is predicted from its own rows, every other GPU from the pooled model and its
    spec sheet. This is the refit whose gain :func:`perfmodel.step.half_precision_scores.calibration_scores`
    measures (Vidur's H100 as the user). ``key`` ties it to the FP32 artifact it is written beside
    (:func:`perfmodel.step.op_fit.fit_op_model`).

    Returns
    -------
    dict
        A bundle :func:`save_half_bundle` writes: ``model``; ``scores`` (``|log(Σ shipped / Σ measured)|`` per measured
        GPU: how far the shipped model was from the user's rows); ``logo_predictions`` (the shipped model's kernel time
        of each user row, s); ``key`` and ``fitted_with`` (both ``key``); ``sklearn_version``.
    """
    import sklearn

    if not len(rows):
        raise ValueError("no half-precision GEMM rows to refit with: measure some with `perfmodel measure ops "
                         "--precision bf16` (linear or bmm).")
    U = rows.reset_index(drop=True).copy()
    U["kernel_s"] = user_kernel_seconds(U)
    X = vidur_rows(TRAINING_SOURCE_GPUS)
    X = X[X["op_class"].isin(HALF_CLASSES).to_numpy()].reset_index(drop=True)
    cols = [c for c in X.columns if c in U.columns]
    both = pd.concat([X[cols], U[cols]], ignore_index=True)
    model = _fit(both, per_gpu=True)
    gpus = sorted(set(U["gpu"].astype(str)))
    model.provenance_ = (_PROVENANCE.format(n=len(X)).replace(", pooled (no per-GPU model)", "")
                         + f"; plus {len(U)} measured half-precision GEMM rows of {', '.join(gpus)} (a user's, "
                         "perfmodel fit --with); a model of its own for each GPU")
    shipped = half_precision_op_model().predict_in_stream(U)
    t = U["kernel_s"].to_numpy(float)
    g = U["gpu"].astype(str).to_numpy()
    scores = pd.Series({k: abs(float(np.log(shipped[g == k].sum() / t[g == k].sum()))) for k in gpus}, name="abs_log_ratio")
    return {"model": model, "scores": scores, "logo_predictions": shipped, "key": key, "fitted_with": key,
            "sklearn_version": sklearn.__version__}


def companion_paths(path) -> dict:
    """Files a user's refit writes beside its FP32 artifact ``path`` when it has half-precision rows: ``"half"``
    (``<path>.half.npz``, the GEMM model, with its ``.sha256``) and ``"bandwidth"`` (``<path>.bandwidth.json``)."""
    path = Path(path)
    return {"half": path.with_name(path.name + ".half.npz"), "bandwidth": path.with_name(path.name + ".bandwidth.json")}


_USER: dict = {}


def active_half_models() -> tuple:
    """``(gemm_model, bandwidth_model, note)``: the models that time half-precision kernels.

    The shipped ones, or — with ``PERFMODEL_OP_MODEL`` naming a user's refit — the half-precision models refitted with
    that user's BF16/FP16 rows, written beside it (:func:`companion_paths`), where the refit had such rows. A companion
    must carry the key of the artifact it sits beside (``fitted_with``): a file left from another fit is refused.
    ``note`` says what the user's rows changed, for ``basis`` (empty for the shipped models)."""
    import os

    from perfmodel.step._artifact import ArtifactError
    from perfmodel.step.bandwidth import bandwidth_model, bandwidth_model_from_bundle, load_bandwidth_bundle
    from perfmodel.step.op_latency import ENV_OP_MODEL, fitted_bundle

    user = os.environ.get(ENV_OP_MODEL, "")
    if not user:
        return half_precision_op_model(), bandwidth_model(), ""
    paths = companion_paths(Path(user).expanduser())
    stamp = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None for p in paths.values())
    mem = (user, stamp)
    if mem not in _USER:
        key = fitted_bundle().get("fitted_with", "")
        gemm, bw, notes = half_precision_op_model(), bandwidth_model(), []
        if paths["half"].exists():
            b = load_half_bundle(paths["half"])
            if b.get("fitted_with") != key or not key:
                raise ArtifactError(f"{paths['half']} was written by another fit than {user} (their keys differ); refit "
                                    "with `perfmodel fit --with ...` to write both again, or delete it.")
            gemm = b["model"]
            notes.append("GEMMs refitted with your measured half-precision rows of " + ", ".join(sorted(b["scores"].index)))
        if paths["bandwidth"].exists():
            bb = load_bandwidth_bundle(paths["bandwidth"])
            if bb.get("fitted_with") != key or not key:
                raise ArtifactError(f"{paths['bandwidth']} was written by another fit than {user} (their keys differ); "
                                    "refit with `perfmodel fit --with ...` to write both again, or delete it.")
            bw = bandwidth_model_from_bundle(bb)
            notes.append("memory-bound kernels at the bandwidth efficiency of your measured rows on "
                         + ", ".join(sorted(bb.get("gpu", {}))))
        _USER.clear()
        _USER[mem] = (gemm, bw, "; ".join(notes))
    return _USER[mem]
