"""Held-out evaluation of lifetime models on spot preemption traces, beside the 2018–19 GCE lifetimes of CM-DARE.

:func:`spot_lifetime_heldout` scores, zone by zone, how well a lifetime distribution predicts the lives of spot
instances in a zone it was not fitted on: leave-one-zone-out over the single-node preemption traces of one cloud and
instance type (AWS ``p3.2xlarge`` V100: four zones, 2023), plus the same families fitted on CM-DARE's GCE V100
preemptible lifetimes (2018–19, 24-hour cap) as a transfer baseline. The score is the censoring-aware held-out
log-likelihood per life, ``(Σ_preempted log h(t) + Σ_all log S(t)) / n`` in log(1/hour) units — higher is better.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

__all__ = ["spot_lifetime_heldout", "LIFETIME_FAMILIES"]

#: lifelines parametric families compared (name → fitter class name).
LIFETIME_FAMILIES = {"exponential": "ExponentialFitter", "weibull": "WeibullFitter", "lognormal": "LogNormalFitter",
                     "loglogistic": "LogLogisticFitter"}


def _fit(name: str, t: np.ndarray, e: np.ndarray):
    import lifelines
    from lifelines.exceptions import StatisticalWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        return getattr(lifelines, LIFETIME_FAMILIES[name])().fit(np.maximum(t, 1e-6), e)


def _loglik(fitter, t: np.ndarray, e: np.ndarray) -> float:
    t = np.maximum(t, 1e-6)
    with np.errstate(divide="ignore"):
        log_s = np.log(fitter.survival_function_at_times(t).to_numpy(float))
        log_h = np.log(fitter.hazard_at_times(t).to_numpy(float))
    return float((log_s.sum() + log_h[e].sum()) / t.size)


def spot_lifetime_heldout(lifetimes: pd.DataFrame | None = None, *, families=tuple(LIFETIME_FAMILIES), baseline_gpu: str | None = "V100"):
    """Leave-one-zone-out held-out log-likelihood of lifetime families, per zone.

    Parameters
    ----------
    lifetimes : DataFrame, optional
        One row per life with ``zone``, ``lifetime_h``, ``preempted`` (default: the AWS V100 lives of
        :func:`perfmodel.datasets.spot_lifetimes`). At least two zones.
    families : sequence of str
        Among :data:`LIFETIME_FAMILIES`.
    baseline_gpu : str or None
        Also score the families fitted on CM-DARE's GCE lifetimes of this GPU (per-server lifetimes behind its
        published CDFs, censored at 24 h); None to skip.

    Returns
    -------
    DataFrame
        ``zone``, ``family``, ``fitted_on`` (``other zones`` or ``GCE 2018-19 <gpu>``), ``n_test``, ``n_preempted``,
        ``heldout_loglik_per_life``, ``median_h`` (the fitted model's median lifetime), ``test_median_h`` (Kaplan–Meier
        median of the held-out zone).
    """
    from lifelines import KaplanMeierFitter

    from perfmodel.datasets import spot_lifetimes

    d = spot_lifetimes(cloud="aws", gpu="V100") if lifetimes is None else lifetimes
    need = ["zone", "lifetime_h", "preempted"]
    missing = [c for c in need if c not in d.columns]
    if missing:
        raise ValueError(f"lifetimes lacks {missing}; expected one row per life with {need} (perfmodel.datasets.spot_lifetimes()).")
    unknown = [f for f in families if f not in LIFETIME_FAMILIES]
    if unknown:
        raise ValueError(f"Unknown lifetime famil{'y' if len(unknown) == 1 else 'ies'} {unknown}; expected some of {list(LIFETIME_FAMILIES)}.")
    zones = sorted(set(d["zone"].astype(str)))
    if len(zones) < 2:
        raise ValueError(f"Leave-one-zone-out needs lives from at least two zones; got {zones}.")
    t_all = d["lifetime_h"].to_numpy(float)
    if not np.isfinite(t_all).all() or (t_all < 0).any():
        raise ValueError("lifetime_h must be finite, non-negative hours.")
    base = {}
    if baseline_gpu is not None:
        from perfmodel.models.lifetimes import lifetimes_from_cdf

        b = lifetimes_from_cdf(baseline_gpu)
        bt, be = b["lifetime_h"].to_numpy(float), b["revoked"].to_numpy(bool)
        base = {f: _fit(f, bt, be) for f in families}
    rows = []
    for z in zones:
        te = d[d["zone"].astype(str) == z]
        tr = d[d["zone"].astype(str) != z]
        tt, et = te["lifetime_h"].to_numpy(float), te["preempted"].to_numpy(bool)
        km = KaplanMeierFitter().fit(np.maximum(tt, 1e-6), et)
        for f in families:
            fits = [("other zones", _fit(f, tr["lifetime_h"].to_numpy(float), tr["preempted"].to_numpy(bool)))]
            if f in base:
                fits.append((f"GCE 2018-19 {baseline_gpu}", base[f]))
            for label, m in fits:
                med = m.median_survival_time_
                rows.append(dict(zone=z, family=f, fitted_on=label, n_test=int(tt.size), n_preempted=int(et.sum()),
                                 heldout_loglik_per_life=_loglik(m, tt, et), median_h=np.inf if med is None else float(med),
                                 test_median_h=float(km.median_survival_time_)))
    return pd.DataFrame(rows)
