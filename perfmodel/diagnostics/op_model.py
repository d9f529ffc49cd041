"""How well the operator latency model transfers to a GPU it never saw.

* :func:`op_model_errors` — leave-one-GPU-out over NeuSight's five training GPUs (each GPU's microbenchmarks predicted
  by a model fitted on the other four), and the default model (fitted on all five) on the ``test`` split of every
  GPU NeuSight measured, A100-80GB, L4 and H100 included: per GPU and operator class, the mean absolute percentage
  error of single operators (``mape_pct``) and the time-weighted error ``Σ|pred − meas| / Σ meas`` (``weighted_pct``,
  what a sum of many operators feels).
* :func:`bandwidth_shares` — the memory-bound FP16 operators Vidur measured on the A100 80GB PCIe and the H100: the
  share of the spec-sheet bandwidth each achieves, measured and as the shipped model predicts it, by operator and
  size band.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.diagnostics.metrics import mape

__all__ = ["op_model_errors", "bandwidth_shares", "SIZE_BANDS"]


def _rows(frame: pd.DataFrame, pred: np.ndarray, protocol: str) -> list[dict]:
    f = frame.assign(pred=pred)
    out = []
    for (g, c), grp in f.groupby(["gpu", "op_class"], sort=True):
        t, p = grp["latency_s"].to_numpy(float), grp["pred"].to_numpy(float)
        out.append(dict(protocol=protocol, gpu=g, op_class=c, n_ops=len(grp), mape_pct=mape(t, p),
                        weighted_pct=float(np.abs(p - t).sum() / t.sum() * 100)))
    return out


def op_model_errors(op_classes=None, *, test_split: bool = True) -> pd.DataFrame:
    """Errors of :class:`perfmodel.step.op_latency.OpLatencyModel` per GPU and operator class.

    Parameters
    ----------
    op_classes : sequence of str, optional
        Restrict to these classes (default all of :data:`~perfmodel.step.op_latency.OP_CLASSES` that were measured).
    test_split : bool
        Also score the default model on NeuSight's ``test`` split of every GPU.

    Returns
    -------
    DataFrame
        ``protocol`` (``leave-one-GPU-out`` or ``test split``), ``gpu``, ``op_class``, ``n_ops``, ``mape_pct``,
        ``weighted_pct``; ``attrs["provenance"]`` says what the scored default model was fitted on.
    """
    from perfmodel.step.op_latency import TRAINING_GPUS, fitted_bundle, neusight_op_frame

    bundle = fitted_bundle()  # its leave-one-GPU-out fits are the ones scored here (fitted once, cached)
    X = neusight_op_frame("train", devices=TRAINING_GPUS).assign(pred=bundle["logo_predictions"])
    if op_classes is not None:
        X = X[X["op_class"].isin(list(op_classes))].reset_index(drop=True)
        if X.empty:
            raise ValueError(f"No microbenchmarks of the operator classes {list(op_classes)}.")
    rows = []
    for g in TRAINING_GPUS:
        held = X[X["gpu"] == g]
        rows += _rows(held, held["pred"].to_numpy(), "leave-one-GPU-out")
    out = pd.DataFrame(rows)
    model = bundle["model"]
    if test_split:
        T = neusight_op_frame("test")
        T = T[T["op_class"].isin(model.classes_ if op_classes is None else list(op_classes))].reset_index(drop=True)
        out = pd.concat([out, pd.DataFrame(_rows(T, model.predict(T), "test split"))], ignore_index=True)
    out.attrs["provenance"] = model.provenance_
    return out


#: size bands of :func:`bandwidth_shares`: (name, lowest bytes moved, highest), half-open
SIZE_BANDS = (("2-8 MB", 2e6, 8e6), ("8-32 MB", 8e6, 32e6), (">= 32 MB", 32e6, np.inf))


def bandwidth_shares(gpus=("a100", "h100"), *, prec: str = "bf16") -> pd.DataFrame:
    """Achieved share of the spec-sheet memory bandwidth of Vidur's memory-bound FP16 operators (residual add,
    embedding gather, RMSNorm, rotary embedding, SiLU-and-multiply; :func:`perfmodel.step.half_precision.vidur_rows`):
    measured (bytes moved over the measured kernel time, over the GPU's bandwidth) and as the shipped model predicts
    each kernel in half precision (:func:`perfmodel.step.kernels.kernel_seconds`, which floors a kernel at
    :data:`~perfmodel.step.op_latency.KERNEL_MIN_S`, the launch-bound time of an eager step: below a few MB the
    predicted share is that floor's, not a bandwidth).

    What it shows: on these two HBM GPUs each operator reaches about the same share of its bandwidth at the same size
    (the kernel, not the GPU, sets it). Up to version 1 of the bandwidth model, its elementwise class was learned on
    NeuSight's FP32 microbenchmarks, whose fixed cost of about 10 µs a kernel made PyTorch's residual add 1.3x (A100
    80GB) and 1.7x (H100) too slow at 32 MB and more, and 3.6x / 5.5x at 2-8 MB; since version 2 it is learned on
    Vidur's FP16 adds of the A40 and A100 (:mod:`perfmodel.step.bandwidth`) and the add's predicted share follows the
    measured one on both GPUs. Vidur's custom serving kernels (RMSNorm, rotary, SiLU-and-multiply, the embedding gather)
    reach less of the bandwidth than PyTorch's add and are predicted too fast: they are not the kernels of a PyTorch
    training step and are never learned from.

    Parameters
    ----------
    gpus : sequence of str
        Vidur's folders (``"a40"``, ``"a100"``, ``"h100"``).
    prec : str
        The precision the kernels are predicted at (``"bf16"`` or ``"fp16"``: the same bytes).

    Returns
    -------
    DataFrame
        One row per (GPU, operator, size band) with rows: ``gpu``, ``operator``, ``band``, ``n_rows``,
        ``measured_share`` and ``predicted_share`` (medians), ``predicted_over_measured_time`` (median of the
        per-kernel ratio).
    """
    from perfmodel.step.half_precision import VIDUR_SPECS, vidur_rows
    from perfmodel.step.kernels import kernel_seconds
    from perfmodel.step.op_latency import WORK_COLUMNS

    X = vidur_rows(tuple(gpus))
    X = X[X["op_class"] != "matmul"].reset_index(drop=True)
    rows = []
    for folder, grp in X.groupby("source_gpu", sort=True):
        g = str(grp["gpu"].iloc[0])
        t = kernel_seconds(grp[WORK_COLUMNS], VIDUR_SPECS[folder], prec)
        bw = grp["bandwidth_bytes_per_s"].to_numpy(float)
        b = grp["bytes"].to_numpy(float)
        meas, pred = b / grp["kernel_s"].to_numpy(float) / bw, b / t / bw
        for (name, lo, hi) in SIZE_BANDS:
            inband = (b >= lo) & (b < hi)
            for op in sorted(set(grp["operator"])):
                m = inband & (grp["operator"].to_numpy() == op)
                if m.any():
                    rows.append(dict(gpu=g, operator=op, band=name, n_rows=int(m.sum()),
                                     measured_share=float(np.median(meas[m])), predicted_share=float(np.median(pred[m])),
                                     predicted_over_measured_time=float(np.median(meas[m] / pred[m]))))
    return pd.DataFrame(rows)
