"""Error metrics with the conventions of CM-DARE's notebooks.

``mape`` is ``mean(|(y_true − y_pred) / y_true|) × 100`` (the notebooks' helper; in percent, unlike scikit-learn's
``mean_absolute_percentage_error`` which returns a fraction). Inputs are validated: NaN/inf, mismatched lengths,
empty input and (for MAPE) zero true values raise ``ValueError`` naming the problem.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["mape", "mae", "rmse", "r2", "regression_report", "ape", "percent_error"]


def _arrays(y_true, y_pred, name: str) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(y_true, dtype=float).ravel()
    p = np.asarray(y_pred, dtype=float).ravel()
    if t.shape != p.shape:
        raise ValueError(f"{name}: y_true and y_pred must have the same length; got {t.size} and {p.size}.")
    if t.size == 0:
        raise ValueError(f"{name}: got empty input; expected at least one value.")
    for label, a in (("y_true", t), ("y_pred", p)):
        bad = ~np.isfinite(a)
        if bad.any():
            raise ValueError(f"{name}: {label} holds {int(bad.sum())} NaN/inf value(s) (first at position {int(np.argmax(bad))}); "
                             "drop or impute them before scoring.")
    return t, p


def mape(y_true, y_pred) -> float:
    """Mean absolute percentage error in **percent**: ``mean(|(y_true − y_pred)/y_true|) × 100``."""
    t, p = _arrays(y_true, y_pred, "mape")
    if (t == 0).any():
        raise ValueError(f"mape: y_true holds {int((t == 0).sum())} zero(s); a percentage error is undefined there.")
    return float(np.mean(np.abs((t - p) / t)) * 100)


def ape(y_true, y_pred) -> np.ndarray:
    """Absolute percentage error of each prediction, in percent: ``|(y_pred − y_true) / y_true| × 100`` (validated like
    :func:`mape`; ``mape(t, p) == ape(t, p).mean()``)."""
    return np.abs(percent_error(y_true, y_pred))


def percent_error(y_true, y_pred) -> np.ndarray:
    """Signed percentage error of each prediction, in percent: ``(y_pred / y_true − 1) × 100`` (positive: over-predicted).

    Raises ``ValueError`` on NaN/inf, mismatched lengths, empty input or a zero true value."""
    t, p = _arrays(y_true, y_pred, "percent_error")
    if (t == 0).any():
        raise ValueError(f"percent_error: y_true holds {int((t == 0).sum())} zero(s) (first at position {int(np.argmax(t == 0))}); "
                         "a percentage error is undefined there.")
    return (p - t) / t * 100


def mae(y_true, y_pred) -> float:
    """Mean absolute error, in the unit of ``y``."""
    t, p = _arrays(y_true, y_pred, "mae")
    return float(np.mean(np.abs(t - p)))


def rmse(y_true, y_pred) -> float:
    """Root mean squared error, in the unit of ``y``."""
    t, p = _arrays(y_true, y_pred, "rmse")
    return float(np.sqrt(np.mean((t - p) ** 2)))


def r2(y_true, y_pred) -> float:
    """Coefficient of determination (scikit-learn's definition; 1 − SS_res / SS_tot)."""
    t, p = _arrays(y_true, y_pred, "r2")
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    if ss_tot == 0:
        raise ValueError("r2: y_true is constant; R² is undefined.")
    return float(1 - np.sum((t - p) ** 2) / ss_tot)


def regression_report(y_true, y_pred) -> pd.Series:
    """``mape_pct``, ``mae``, ``rmse``, ``r2`` (r2 NaN when fewer than 2 distinct true values) and ``n``."""
    t, p = _arrays(y_true, y_pred, "regression_report")
    r = r2(t, p) if np.unique(t).size > 1 else np.nan
    return pd.Series({"mape_pct": mape(t, p), "mae": mae(t, p), "rmse": rmse(t, p), "r2": r, "n": int(t.size)})
