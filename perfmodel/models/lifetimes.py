"""Transient-server lifetimes: the paper's time-between-failures fit, per-server lifetimes behind published CDFs, and
censoring-aware fitters (lifelines) compared by likelihood.

Preemptible GCE VMs end at 24 h: a server alive at 24 h was not revoked — its lifetime is right-censored there.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import datasets as ds
from perfmodel.models._survival import as_flags

__all__ = ["fit_icac_lifetimes", "time_between_failures_fit", "lifetimes_from_cdf", "fit_lifetimes", "fit_cdf_lifetimes", "MAX_LIFETIME_H",
           "as_flags"]

#: Preemptible VMs are terminated after 24 hours.
MAX_LIFETIME_H = 24.0


def time_between_failures_fit(times_s=None, *, bins: int = 128) -> float:
    """CM-DARE's exponential fit of the time between failures, ``F(t) = 1 − exp(−a·t)`` with ``t`` in **minutes**.

    The notebook's procedure (S2020 cells 25–27): a ``bins``-bin cumulative histogram of the inter-failure times in
    seconds, bin right edges converted to minutes, ``scipy.optimize.curve_fit`` from ``p0 = 0.001``. It treats the 84
    values censored at 24 h as observations (see :func:`fit_lifetimes` for a censoring-aware fit).

    Returns ``a`` per minute (paper: 0.00033254, i.e. a mean time between failures ≈ 50 h).
    """
    from scipy.optimize import curve_fit

    t = ds.load_transcribed("time_between_failures")["time_between_failures_s"].to_numpy(float) if times_s is None else np.asarray(times_s, float)
    if t.size < 2 or not np.isfinite(t).all() or (t < 0).any():
        raise ValueError("times_s must hold at least two finite, non-negative inter-failure times in seconds.")
    if np.unique(t).size < 2:
        raise ValueError(f"time_between_failures_fit: all {t.size} inter-failure times equal {t[0]:g} s; the cumulative histogram is a "
                         "single step and the failure rate is not identifiable. Pass measured times that differ (in seconds).")
    counts, edges = np.histogram(t, bins=bins)
    cdf = np.cumsum(counts) / counts.sum()
    (a,), _ = curve_fit(lambda x, a: 1 - np.exp(-a * x), edges[1:] / 60, cdf, p0=0.001)
    return float(a)


def lifetimes_from_cdf(gpu: str | None = None, region: str | None = None) -> pd.DataFrame:
    """Per-server lifetimes implied by CM-DARE's lifetime CDF arrays (``k80_cdf``/``p100_cdf``/``v100_cdf``).

    Each array gives the fraction of ``n`` servers revoked within 1, 2, … 24 hours (n from the denominators
    of the fractions). Server counts per hour bin are the differences × n (rounded; the test checks they are integers); a server
    revoked in (h − 1, h] gets lifetime ``h − 0.5`` hours (bin midpoint: the arrays are interval-censored to the hour);
    servers alive at 24 h are right-censored at 24 h.

    Returns
    -------
    DataFrame
        ``gpu``, ``region``, ``server``, ``lifetime_h``, ``revoked`` (False = censored at 24 h), ``n_servers``.
    """
    cdf = ds.load_transcribed("lifetime_cdf")
    if gpu is not None:
        cdf = cdf[cdf["gpu"] == ds.canonical_gpu(gpu)]
    if region is not None:
        cdf = cdf[cdf["region"] == ds.canonical_region(region)]
    if cdf.empty:
        raise ValueError(f"No lifetime CDF for gpu={gpu!r}, region={region!r}; available: "
                         f"{sorted(set(zip(ds.load_transcribed('lifetime_cdf')['gpu'], ds.load_transcribed('lifetime_cdf')['region'])))}.")
    rows = []
    for (g, r), a in cdf.groupby(["gpu", "region"], sort=False):
        a = a.sort_values("hour")
        n = int(a["n_servers"].iloc[0])
        frac = a.loc[a["hour"] <= MAX_LIFETIME_H, "fraction_revoked"].to_numpy(float)
        counts = np.diff(np.concatenate([[0.0], frac])) * n
        k = np.rint(counts).astype(int)
        if np.abs(counts - k).max() > 1e-6 or (k < 0).any():
            raise ValueError(f"{g} {r}: the CDF × {n} servers does not give whole server counts per hour.")
        sid = 0
        for h, c in enumerate(k, start=1):
            for _ in range(c):
                rows.append(dict(gpu=g, region=r, server=sid, lifetime_h=h - 0.5, revoked=True, n_servers=n))
                sid += 1
        for _ in range(n - sid):
            rows.append(dict(gpu=g, region=r, server=sid, lifetime_h=MAX_LIFETIME_H, revoked=False, n_servers=n))
            sid += 1
    return pd.DataFrame(rows)


def fit_lifetimes(durations_h, revoked=None, *, label: str = "", max_lifetime_h: float | None = MAX_LIFETIME_H) -> pd.DataFrame:
    """Fit lifetime models with right-censoring and compare them by likelihood (lifelines).

    Parameters
    ----------
    durations_h : array-like
        Lifetimes in hours (≥ 0). Zero-length lifetimes are moved to 1e-6 h (parametric likelihoods need t > 0).
    revoked : array-like of bool, optional
        True where the server was revoked (event observed); default: ``durations_h < max_lifetime_h``. Booleans, 0/1
        or the strings ``"True"``/``"False"`` (:func:`as_flags`).
    label : str
        Copied into the output.
    max_lifetime_h : float or None, default 24
        The cap of the servers' lifetime (GCE preemptible VMs: 24 h). A lifetime above it is an error (clip it and
        mark it censored); ``None`` for servers without a cap.

    Raises
    ------
    ValueError
        Empty, non-finite, negative or all-zero lifetimes; lifetimes above ``max_lifetime_h``; flags that are not
        booleans or of another length.

    Notes
    -----
    A parametric model that cannot be fitted is kept as a row with NaN numbers and a ``params`` that says why:
    ``"no revocation observed: rate 0"``, ``"not identifiable: ..."`` (fewer than two distinct lifetimes) or
    ``"did not converge: <error>"``.

    Returns
    -------
    DataFrame
        One row per model (``kaplan_meier``, ``exponential``, ``weibull``, ``bathtub`` — Kadupitiya et al.,
        :class:`perfmodel.models.bathtub.BathtubFitter`): ``params`` (lifelines names: λ in hours, ρ shape; A, τ₁,
        τ₂ in hours), ``log_likelihood``, ``aic`` (NaN for the non-parametric Kaplan–Meier), ``median_lifetime_h``
        (inf when fewer than half are revoked), ``p_revoked_24h`` (model CDF at 24 h), ``n``, ``n_revoked``.
    """
    import warnings

    from lifelines import ExponentialFitter, KaplanMeierFitter, WeibullFitter
    from lifelines.exceptions import StatisticalWarning

    from perfmodel.models.bathtub import BathtubFitter

    t = np.asarray(durations_h, dtype=float).ravel()
    if t.size == 0 or not np.isfinite(t).all():
        raise ValueError("durations_h must be a non-empty array of finite lifetimes in hours.")
    if (t < 0).any():
        raise ValueError(f"lifetimes must be ≥ 0 hours; got {int((t < 0).sum())} negative value(s) (min {t.min():.3g}).")
    if (t == 0).all():
        raise ValueError(f"all {t.size} lifetimes are 0 h: nothing can be fitted. Check the unit (hours) and that the end times "
                         "were recorded.")
    cap = np.inf if max_lifetime_h is None else float(max_lifetime_h)
    if (t > cap + 1e-9).any():
        raise ValueError(f"{int((t > cap + 1e-9).sum())} lifetime(s) above the {cap:g} h cap of preemptible VMs (max {t.max():.4g} h): "
                         f"a preemptible VM is terminated at {cap:g} h. Clip them to {cap:g} h and mark them censored "
                         "(revoked=False), or pass max_lifetime_h=None for servers without a cap.")
    e = (t < cap) if revoked is None else as_flags(revoked)
    if e.shape != t.shape:
        raise ValueError(f"revoked must have one flag per lifetime; got {e.size} flags for {t.size} lifetimes.")
    t = np.where(t <= 0, 1e-6, t)
    distinct = np.unique(t)
    rows = []
    km = KaplanMeierFitter().fit(t, e)
    surv24 = float(km.survival_function_at_times(MAX_LIFETIME_H - 1e-9).iloc[0])
    rows.append(dict(model="kaplan_meier", params="", log_likelihood=np.nan, aic=np.nan, median_lifetime_h=float(km.median_survival_time_),
                     p_revoked_24h=1 - surv24))
    if e.any() and distinct.size < 2:
        why = (f"not identifiable: all {t.size} lifetime(s) equal {distinct[0]:.4g} h; a parametric fit needs at least two "
               "distinct lifetimes")
        for name in ("exponential", "weibull", "bathtub"):
            rows.append(dict(model=name, params=why, log_likelihood=np.nan, aic=np.nan, median_lifetime_h=np.nan, p_revoked_24h=np.nan))
    elif e.any():
        for name, fitter in (("exponential", ExponentialFitter()), ("weibull", WeibullFitter()), ("bathtub", BathtubFitter())):
            try:
                with warnings.catch_warnings():  # the bathtub's variance matrix can be singular on hourly-binned data:
                    warnings.simplefilter("ignore", StatisticalWarning)  # only point estimates and likelihoods are reported
                    f = fitter.fit(t, e)
            except Exception as exc:  # lifelines raises ConvergenceError and friends; report, do not hide the other models
                rows.append(dict(model=name, params=f"did not converge: {type(exc).__name__}: {exc}"[:200], log_likelihood=np.nan, aic=np.nan,
                                 median_lifetime_h=np.nan, p_revoked_24h=np.nan))
                continue
            params = ", ".join(f"{k}={v:.4g}" for k, v in f.params_.items())
            median = f.median_survival_time_  # None (lifelines) when the model CDF never reaches 1/2
            rows.append(dict(model=name, params=params, log_likelihood=float(f.log_likelihood_), aic=float(f.AIC_),
                             median_lifetime_h=np.inf if median is None else float(median),
                             p_revoked_24h=float(1 - f.survival_function_at_times(MAX_LIFETIME_H).iloc[0])))
    else:  # no revocation at all: the MLE rate is 0; parametric fits are undefined
        for name in ("exponential", "weibull", "bathtub"):
            rows.append(dict(model=name, params="no revocation observed: rate 0", log_likelihood=0.0, aic=np.nan, median_lifetime_h=np.inf,
                             p_revoked_24h=0.0))
    out = pd.DataFrame(rows)
    out.insert(0, "label", label)
    out["n"], out["n_revoked"] = t.size, int(e.sum())
    return out


def fit_cdf_lifetimes(gpu: str) -> pd.DataFrame:
    """:func:`fit_lifetimes` on the lifetimes reconstructed from CM-DARE's CDF arrays, per region and pooled (``all``)."""
    lt = lifetimes_from_cdf(gpu)
    frames = [fit_lifetimes(g["lifetime_h"], g["revoked"], label=str(r)) for r, g in lt.groupby("region", sort=False)]
    frames.append(fit_lifetimes(lt["lifetime_h"], lt["revoked"], label="all"))
    return pd.concat(frames, ignore_index=True).rename(columns={"label": "region"}).assign(gpu=ds.canonical_gpu(gpu))


def fit_icac_lifetimes() -> pd.DataFrame:
    """:func:`fit_lifetimes` on the true per-VM lifetimes of ICAC'19's February-2019 study (``lifetime/lifetime.csv``,
    section ``feb2019``: 64 K80, 40 P100, 48 V100 VMs), per GPU and region and pooled per GPU (``region='all'``); VMs
    that lived the full 24 h are right-censored (``lived_24h``).

    The file's earlier section (348 CPU and 64 K80 VMs) is left out: its VMs all end before 24 h although ICAC'19 Fig. 3
    counts only 17.5 % (CPU) of them as revoked — the end of a record there is not a revocation, and the file does not
    say which are.
    """
    lt = ds.load_vm_lifetimes()
    lt = lt[lt["section"] == "feb2019"]
    frames = []
    for stype, g in lt.groupby("server_type", sort=True):
        for region, r in g.groupby("region", sort=True):
            frames.append(fit_lifetimes(r["lifetime_h"].clip(upper=MAX_LIFETIME_H), ~r["lived_24h"].astype(bool), label=str(region))
                          .assign(server_type=str(stype)))
        frames.append(fit_lifetimes(g["lifetime_h"].clip(upper=MAX_LIFETIME_H), ~g["lived_24h"].astype(bool), label="all")
                      .assign(server_type=str(stype)))
    return pd.concat(frames, ignore_index=True).rename(columns={"label": "region"})
