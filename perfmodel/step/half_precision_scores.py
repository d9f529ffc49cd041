"""The half-precision operator model scored on Vidur's held-out GPU (item ``external.vidur_h100_ops``): the model's
kernel seconds as the step predictor uses them, the baseline it replaced, and the protocols.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.step.half_precision import (HALF_PRECISIONS, TRAINING_SOURCE_GPUS, VIDUR_SPECS, _fit,
                                             half_precision_design, half_precision_op_model, vidur_rows)

__all__ = ["half_precision_kernel_seconds", "baseline_kernel_seconds", "PROTOCOLS", "vidur_scores", "calibration_scores"]


def half_precision_kernel_seconds(work: pd.DataFrame, spec, prec: str, op_model=None) -> np.ndarray:
    """In-stream time (s) of each work row on a GPU at FP16 / BF16, with the half-precision model.

    The step predictor makes the same choice (``kernels._kernel_seconds_uncached`` with
    :func:`perfmodel.step.step_time.half_model_applies`).

    Parameters
    ----------
    work : DataFrame
        Work rows as :func:`perfmodel.step.step_time.work_from_ops` returns them
        (:data:`~perfmodel.step.op_latency.WORK_COLUMNS`; other columns are ignored).
    spec : str or GPUSpec
        The GPU.
    prec : {"fp16", "bf16"}
        BF16 is treated as FP16 (same tensor-core rate on A100 / H100, same element size).
    op_model : OpLatencyModel, optional
        The half-precision GEMM model (default :func:`half_precision_op_model`).

    Returns
    -------
    ndarray
        Seconds per row, in ``work``'s order. GEMM rows by ``op_model``; every other row as the step predictor
        predicts it (``kernels.kernel_seconds``): memory-bound kernels by the bandwidth model
        (:func:`perfmodel.step.bandwidth.bandwidth_model`), convolutions by the default FP32-learned model
        (:func:`~perfmodel.step.op_latency.default_op_model`) at the tensor-core peak.

    Raises
    ------
    ValueError
        ``prec`` is not a half precision.
    """
    from perfmodel.step.kernels import kernel_seconds

    if prec not in HALF_PRECISIONS:
        raise ValueError(f"half_precision_kernel_seconds predicts at {HALF_PRECISIONS}; got {prec!r}. Use the default "
                         "operator model for fp32 / tf32.")
    model = half_precision_op_model() if op_model is None else op_model
    work = work.reset_index(drop=True)
    out = np.empty(len(work))
    known = work["op_class"].isin(model.classes_).to_numpy()
    if known.any():
        out[known] = model.predict_in_stream(half_precision_design(work[known], spec, prec))
    if (~known).any():
        out[~known] = kernel_seconds(work[~known].reset_index(drop=True), spec, prec)
    return out


def baseline_kernel_seconds(work: pd.DataFrame, spec, prec: str = "fp16") -> np.ndarray:
    """What the step predictor gives today at half precision: the default FP32-learned model with the tensor-core
    peak for matmul and conv rows (``kernels._default_kernel_seconds``, what the step predictor gave before the
    half-precision model), seconds per work row."""
    from perfmodel.step.op_latency import default_op_model
    from perfmodel.step.kernels import _default_kernel_seconds

    return _default_kernel_seconds(work.reset_index(drop=True), spec, prec, default_op_model())


#: Scoring protocols of :func:`vidur_scores`: (name, Vidur GPU scored, Vidur GPUs fitted on). The first is the shipped
#: model's; the next two are context (the H100 is in their training set, never in their test set); the last two hold out
#: one training GPU of the shipped model with the other alone — the only protocols a choice could be made by.
PROTOCOLS = (("leave-h100-out", "h100", ("a40", "a100")),
             ("leave-a40-out", "a40", ("a100", "h100")),
             ("leave-a100-out", "a100", ("a40", "h100")),
             ("a100-only-to-a40", "a40", ("a100",)),
             ("a40-only-to-a100", "a100", ("a40",)))


def _errors(frame: pd.DataFrame, pred: np.ndarray, by: str = "operator") -> pd.DataFrame:
    from perfmodel.step.op_latency import KERNEL_MIN_S

    meas = frame["measured_s"].to_numpy(float)
    big = frame["kernel_s"].to_numpy(float) >= KERNEL_MIN_S
    d = pd.DataFrame({by: frame[by].to_numpy(), "meas": meas, "abs": np.abs(pred - meas), "ape": np.abs(pred - meas) / meas,
                      "pred": pred, "big": big})
    rows = []
    for key, g in [*d.groupby(by, sort=True), ("all", d)]:
        b = g[g["big"]]
        rows.append({by: key, "n_rows": len(g), "measured_s": g["meas"].sum(), "predicted_s": g["pred"].sum(),
                     "time_weighted_ape_pct": 100 * g["abs"].sum() / g["meas"].sum(),
                     "median_ape_pct": 100 * float(np.median(g["ape"])),
                     "time_weighted_ape_ge_5us_pct": 100 * b["abs"].sum() / b["meas"].sum() if len(b) else np.nan})
    return pd.DataFrame(rows)


def vidur_scores(*, h100_spec=None, protocols=PROTOCOLS) -> pd.DataFrame:
    """Held-out errors on Vidur's operators, of this module's model and of the current approach on the same rows.

    Every half-precision GEMM model is fitted here on the GEMM rows of the GPUs of its protocol (:data:`PROTOCOLS`;
    :class:`OpLatencyModel` defaults, pooled: a held-out GPU is predicted from its spec sheet), except the
    leave-H100-out one, which is the shipped model (:func:`half_precision_op_model`, fitted on the same A40 and A100
    rows); the other operators are predicted as the step predictor predicts them
    (:func:`half_precision_kernel_seconds`: the bandwidth efficiency learned on NeuSight's microbenchmarks). The
    baseline is the default FP32-learned model for every operator, with the tensor-core peak
    (:func:`baseline_kernel_seconds`): fitted on NeuSight's FP32 microbenchmarks, never on Vidur.

    Parameters
    ----------
    h100_spec : str or GPUSpec, optional
        Spec of Vidur's H100 (default the catalog's SXM5 ``"H100"``; ``"H100-NVL"`` for the sensitivity check).
    protocols : sequence of (str, str, tuple of str)
        (name, scored GPU, training GPUs), Vidur's folder names.

    Returns
    -------
    DataFrame
        One row per (``protocol``, ``held_out``, ``trained_on``, ``predictor``, ``operator``) — the ten operators and
        ``"all"`` — with ``n_rows``, ``measured_s``, ``predicted_s`` (sums, s), ``time_weighted_ape_pct``
        (100 · Σ|pred − meas| / Σ meas), ``median_ape_pct`` and ``time_weighted_ape_ge_5us_pct`` (the same over the
        rows whose measured kernel takes at least ``KERNEL_MIN_S``, the floor of every prediction). ``predictor`` is
        ``"half_precision"`` (the step predictor's choice), ``"baseline"`` (the FP32-learned model alone),
        ``"roofline"`` (each kernel at the FP16 peak or the bandwidth, whichever binds) or ``"rule_of_thumb"`` (the
        kernel's FLOPs at 40 % of the FP16 peak: the practitioner's rule, :mod:`perfmodel.step.baselines`).
    """
    from perfmodel.datasets import matmul_peak_tflops
    from perfmodel.step.baselines import RULE_OF_THUMB_MFU
    from perfmodel.step.op_latency import _roofline_s

    X = vidur_rows(("a40", "a100", "h100"), h100_spec=h100_spec)
    src = X["source_gpu"].to_numpy()
    n_k = X["n_kernels"].to_numpy(float)
    out = []
    for name, held, train in protocols:
        test = src == held
        # the leave-H100-out model is the shipped one (fitted on the A40 and A100 rows): scored as shipped, not refitted
        model = half_precision_op_model() if sorted(train) == sorted(TRAINING_SOURCE_GPUS) else _fit(X[np.isin(src, list(train))])
        T = X[test].reset_index(drop=True)
        spec = h100_spec if (held == "h100" and h100_spec is not None) else VIDUR_SPECS[held]
        pred = half_precision_kernel_seconds(T, spec, "fp16", op_model=model) * n_k[test]
        base = baseline_kernel_seconds(T, spec) * n_k[test]
        roof = _roofline_s(T) * n_k[test]
        rule = T["flops"].to_numpy(float) / (RULE_OF_THUMB_MFU * matmul_peak_tflops(spec, "fp16") * 1e12) * n_k[test]
        trained = {"half_precision": "+".join(train), "baseline": "NeuSight FP32 (default model)",
                   "roofline": "nothing (spec sheet)", "rule_of_thumb": "nothing (spec sheet)"}
        for who, p in (("half_precision", pred), ("baseline", base), ("roofline", roof), ("rule_of_thumb", rule)):
            e = _errors(T, p)
            e.insert(0, "predictor", who)
            e.insert(0, "trained_on", trained[who])
            e.insert(0, "held_out", str(T["gpu"].iloc[0]))
            e.insert(0, "protocol", name)
            out.append(e)
    return pd.concat(out, ignore_index=True)


def calibration_scores() -> pd.DataFrame:
    """How much a user's own half-precision measurements of one GPU improve its GEMMs: Vidur's H100 as that user.

    For each model family Vidur profiles on the H100, the GEMM rows of that family play the user's measurements
    (``perfmodel measure ops --precision bf16`` on their GPU, then ``perfmodel fit --with``): the GEMM model is fitted
    on the A40 and A100 rows plus those H100 rows, with a model of its own for the measured GPU (what a user's refit
    does: ``per_gpu=True``), and scored on the H100 GEMM rows of every *other* family, next to the shipped model
    (A40 and A100 only) on the same rows. No row is both measured and scored.

    Returns
    -------
    DataFrame
        One row per measured family and one ``"mean"`` row: ``measured_family``, ``n_measured`` and ``n_scored`` (rows),
        ``measured_s`` (Σ of the scored kernels, s), ``shipped_time_weighted_ape_pct`` and
        ``calibrated_time_weighted_ape_pct`` (100 · Σ|pred − meas| / Σ meas over the scored rows).
    """
    from perfmodel.step.half_precision import HALF_CLASSES

    X = vidur_rows(("a40", "a100", "h100"))
    X = X[X["op_class"].isin(HALF_CLASSES).to_numpy()].reset_index(drop=True)
    src = X["source_gpu"].to_numpy()
    h = src == "h100"
    shipped = half_precision_op_model()  # fitted on the A40 and A100 rows, as X[~h]
    rows = []
    for fam in sorted(set(X.loc[h, "model"])):
        mine = h & (X["model"] == fam).to_numpy()
        test = h & ~mine
        T = X[test].reset_index(drop=True)
        calibrated = _fit(X[~h | mine], per_gpu=True)
        meas = T["kernel_s"].to_numpy(float)

        def twape(pred, meas=meas):
            return float(100 * np.abs(pred - meas).sum() / meas.sum())

        rows.append(dict(measured_family=fam, n_measured=int(mine.sum()), n_scored=int(test.sum()), measured_s=float(meas.sum()),
                         shipped_time_weighted_ape_pct=twape(shipped.predict_in_stream(T)),
                         calibrated_time_weighted_ape_pct=twape(calibrated.predict_in_stream(T))))
    out = pd.DataFrame(rows)
    mean = dict(measured_family="mean", n_measured=int(out["n_measured"].mean()), n_scored=int(out["n_scored"].mean()),
                measured_s=float(out["measured_s"].mean()),
                shipped_time_weighted_ape_pct=float(out["shipped_time_weighted_ape_pct"].mean()),
                calibrated_time_weighted_ape_pct=float(out["calibrated_time_weighted_ape_pct"].mean()))
    return pd.concat([out, pd.DataFrame([mean])], ignore_index=True)
