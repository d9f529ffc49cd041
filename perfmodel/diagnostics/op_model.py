"""How well the operator latency model transfers to a GPU it never saw.

* :func:`op_model_errors` — leave-one-GPU-out over NeuSight's five training GPUs (each GPU's microbenchmarks predicted
  by a model fitted on the other four), and the default model (fitted on all five) on the ``test`` split of every
  GPU NeuSight measured, A100-80GB, L4 and H100 included: per GPU and operator class, the mean absolute percentage
  error of single operators (``mape_pct``) and the time-weighted error ``Σ|pred − meas| / Σ meas`` (``weighted_pct``,
  what a sum of many operators feels).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.diagnostics.metrics import mape

__all__ = ["op_model_errors"]


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
