"""perfmodel.features — graph features of any PyTorch module from shapes alone: FLOPs, parameters, bytes, tensors.

>>> import perfmodel as pm
>>> pm.features.extract("resnet-32", (3, 32, 32), batch_size=128)        # one-row frame      # doctest: +SKIP

Conventions (stated because every FLOP counter differs):

* ``forward_macs`` counts multiply–accumulates of the matmul-like ops (convolutions incl. grouped / depthwise /
  dilated / transposed, linear / mm / addmm / bmm / baddbmm / einsum via bmm, scaled-dot-product attention);
  ``forward_flops = 2 × forward_macs`` — torch's FlopCounterMode counts an FMA as 2 FLOPs, fvcore as 1.
* ``backward_flops`` is **counted op by op** with torch's backward formulas (``convolution_backward`` with its output
  mask, the mm's of linear layers...), not assumed to be 2 × forward: the first layer computes no input gradient
  (its input does not require grad), so backward is slightly less than twice the forward.
* ``train_step_flops = forward_flops + backward_flops`` (optimizer update not counted). CM-DARE's published
  ``Model FLOPs`` (TensorFlow's profiler on the training graph, per image) also counts norms, activations, adds and
  the optimizer; the zoo's ``train_step_flops`` at batch 1 is 0.97–0.99 of it.
* Deliberately not counted (as in FlopCounterMode and fvcore): elementwise ops and activations, reductions, norms
  (BatchNorm, LayerNorm ...), pooling, softmax, dropout, embedding lookups, copies, views and indexing — the ops torch
  tags ``pointwise`` / ``reduction`` / random, views, and the explicit list ``_counting.KNOWN_FREE``. Every other op
  without a FLOP formula (``cdist``, ``sparse.mm``, ``mv``/``dot``, ``linalg_*``, FFTs, sorting, bilinear upsampling,
  a custom operator ...) is listed in one :class:`UnsupportedOpsWarning` and in the ``unsupported_ops`` column — never
  a silent 0. The ops inside a custom ``autograd.Function``'s forward and backward are counted or reported like any.
  Recurrent layers (LSTM, GRU, RNN) are counted through torch's cell-by-cell kernels (oneDNN's fused kernel is
  turned off while counting), so CPU and meta agree.
* The numbers equal ``torch.utils.flop_counter.FlopCounterMode`` run on real tensors at the requested batch size
  (tested: convolutions of every kind, linear, matmul, bmm, einsum, attention, the zoo), with one deliberate
  difference: on CPU, FlopCounterMode counts 0 for the fused attention kernel
  ``_scaled_dot_product_flash_attention_for_cpu`` and its backward; perfmodel counts them with torch's own SDPA
  formulas (those FlopCounterMode applies to the CUDA kernels). On ``device="meta"`` attention is routed to the kernel
  the CPU would choose, so meta and CPU counts agree.

How it stays cheap and exact: the training step runs with real CPU tensors at batch 1 and 2, but the counted ops are
not computed — they return zero tensors of the right shape (:class:`~perfmodel.features._counting.ShapeOnlyMode`).
Every op's FLOPs (and every module's output bytes) is recorded at both batches; when each is either unchanged or
doubled (a parameter-only matmul; an op on the batch), the counts at any batch size follow exactly, so the cost does
not grow with the batch. Otherwise (e.g. a B×B similarity matrix, batch-dependent control flow) the step is counted
again at the real batch on the ``meta`` device. ``device="meta"`` analyses models too large to instantiate; a CPU step
that would need more than ``max_memory_bytes`` (default: three quarters of the available memory) moves to meta by
itself, and is refused with the memory it needs only when the model cannot run on meta.

Per operator (``per_op=True``): one row per aten op of the training step — phase (forward incl. the loss, backward,
and with ``optimizer="sgd-momentum"`` / ``"adam"`` one steady-state optimizer step in torch's ``foreach`` form), op and
op class, module scope, FLOPs (same convention; the rows sum to the totals), bytes read and written, dtype, shapes —
counted once at the real batch, on ``meta`` unless the model cannot run there. Token models take
``input_dtype=torch.long`` and ``input_high`` (the vocabulary size); modules built on meta (e.g. Hugging Face configs
via :func:`perfmodel.zoo.hf.build`) are counted on meta by default. Ops whose output shapes depend on values
(``nonzero``, ``masked_select``, ``unique`` ...) are refused with :class:`DataDependentOpsError` on stand-in values,
never counted from all-zero data.

The module passed in is never modified: it runs through ``torch.func.functional_call`` on stand-in tensors, so its
weights, gradients and BatchNorm running statistics are left untouched, and ``dtype`` is applied to the stand-ins.
"""
from __future__ import annotations

import pandas as pd

from perfmodel.datasets.derived import load_zoo_features

from perfmodel.features._extract import (
    FEATURE_COLUMNS,
    OPTIMIZERS,
    PER_LAYER_COLUMNS,
    PER_OP_COLUMNS,
    DataDependentOpsError,
    FeatureExtractionError,
    UnsupportedOpsWarning,
    extract,
)

__all__ = [
    "extract",
    "features_table",
    "compare_with_published",
    "load_zoo_features",
    "scale_to_batch",
    "BATCH_SCALED_COLUMNS",
    "FeatureExtractionError",
    "DataDependentOpsError",
    "UnsupportedOpsWarning",
    "FEATURE_COLUMNS",
    "PER_LAYER_COLUMNS",
    "PER_OP_COLUMNS",
    "OPTIMIZERS",
]

_MIB = 2**20


def features_table(target: str, input_shape, **kwargs) -> pd.DataFrame:
    """Features of a zoo CNN or of any importable module class — the ``perfmodel features`` command.

    Parameters
    ----------
    target : str
        A zoo id (``"resnet-32"``, any upstream spelling) or ``"package.module:ClassName"``: the class is imported and
        instantiated with no arguments.
    input_shape : sequence of int
        Shape of one sample without the batch dimension, e.g. ``(3, 32, 32)``.
    **kwargs
        Passed to :func:`extract` (``batch_size``, ``per_layer``, ``device``, ``dtype`` ...).

    Returns
    -------
    DataFrame
        As :func:`extract`.

    Raises
    ------
    FeatureExtractionError
        ``target`` is malformed, cannot be imported or instantiated, is not a torch module or zoo id, or the model
        fails to run (the original exception is chained).
    """
    from perfmodel._errors import UnknownNameError
    from perfmodel.datasets.names import MODEL_IDS
    from perfmodel.zoo import load_model

    try:
        model = load_model(target)
    except UnknownNameError as exc:
        raise FeatureExtractionError(
            f"Unknown target {target!r}. Expected a zoo id ({', '.join(MODEL_IDS[:3])}, ...) or 'package.module:ClassName', "
            f"e.g. 'torchvision.models:resnet18' or 'mypkg.nets:Net'. ({exc})"
        ) from exc
    except ValueError as exc:
        raise FeatureExtractionError(str(exc)) from exc
    return extract(model, input_shape, **kwargs)


#: Feature columns that grow in proportion to the batch (counted at batch 1, scaled by :func:`scale_to_batch`).
BATCH_SCALED_COLUMNS = ("forward_macs", "forward_flops", "backward_flops", "train_step_flops", "activation_bytes")


def scale_to_batch(features: pd.DataFrame, batch_size) -> pd.DataFrame:
    """Features counted at batch 1 (e.g. :func:`load_zoo_features`), scaled to ``batch_size`` samples per step.

    The columns of :data:`BATCH_SCALED_COLUMNS` present in ``features`` are multiplied by ``batch_size``; parameters,
    tensors and layer counts do not depend on the batch and are kept. This is exact for networks whose every
    computing op works on the batch (the zoo CNNs: convolutions, linear layers, norms on a batch of images); for a
    model with batch-independent ops (an optimizer step counted in ``train_step_flops``, a B×B similarity) count
    it at the batch instead: ``perfmodel.features.extract(model, shape, batch_size=B)``.

    Parameters
    ----------
    features : DataFrame
        Rows counted at batch 1; a ``batch_size`` column, if any, must be 1 everywhere.
    batch_size : int or array-like of int
        Samples per step: one for all rows, or one per row.

    Returns
    -------
    DataFrame
        A copy with the scaled columns (float) and ``batch_size`` set.
    """
    import numpy as np

    if not isinstance(features, pd.DataFrame):
        raise TypeError(f"scale_to_batch needs a DataFrame of features at batch 1; got {type(features).__name__}.")
    b = np.asarray(batch_size)
    if b.dtype == bool or not np.issubdtype(b.dtype, np.integer) or (b < 1).any() or b.ndim > 1 or (b.ndim == 1 and len(b) != len(features)):
        raise ValueError(f"batch_size must be a positive int or one positive int per row ({len(features)} rows); got {batch_size!r}.")
    if "batch_size" in features.columns and (pd.to_numeric(features["batch_size"], errors="coerce") != 1).any():
        bad = sorted(set(features["batch_size"].tolist()) - {1})
        raise ValueError(f"scale_to_batch scales counts made at batch 1; these rows were counted at batch {bad}. Count them at "
                         "batch 1 (perfmodel.features.extract(..., batch_size=1)) or at the batch you need.")
    present = [c for c in BATCH_SCALED_COLUMNS if c in features.columns]
    if not present:
        raise ValueError(f"scale_to_batch found none of the batch-dependent columns {list(BATCH_SCALED_COLUMNS)} in {list(features.columns)}.")
    out = features.copy()
    for c in present:
        out[c] = out[c].to_numpy(float) * b
    out["batch_size"] = b if b.ndim else int(b)
    return out


def compare_with_published() -> pd.DataFrame:
    """Zoo features next to the published CM-DARE values, one row per CNN.

    Columns: ``model``, ``n_params`` / ``params`` (published / ours), ``n_trainable_tensors`` / ``trainable_tensors``,
    ``max_tensor_mib`` (published) / ``max_tensor_mib_ours``, ``model_flops`` (published, TF profiler) /
    ``train_step_flops`` (ours, batch 1) and their ratio ``flops_ratio``, ``weight_file_mb`` (published, MiB) /
    ``checkpoint_mib_estimate`` (ours). Reads the shipped feature table (no torch).
    """
    from perfmodel.datasets import load_reported_cnns

    ours = load_zoo_features()
    pub = load_reported_cnns()
    df = pub[["model", "n_params", "n_trainable_tensors", "max_tensor_mib", "model_flops", "weight_file_mb"]].merge(
        ours[["model", "params", "trainable_tensors", "max_tensor_mib", "forward_macs", "train_step_flops", "checkpoint_bytes_estimate"]],
        on="model", suffixes=("", "_ours"), validate="one_to_one",
    )
    df["flops_ratio"] = df["train_step_flops"] / df["model_flops"]
    df["checkpoint_mib_estimate"] = df.pop("checkpoint_bytes_estimate") / _MIB
    return df
