"""Bottleneck diagnostics for parameter-server clusters and single-worker speed time series.

:func:`diagnose_cluster` reads per-run cluster speeds (1..N workers, 1 or more PS) and returns, per configuration,
the scaling efficiency, where speed stops growing, a verdict and a recommendation, with the numbers behind them:

* **compute-bound** — efficiency ``S(n_max) / (n_max · S(1)) ≥ 0.9``: workers scale; adding more helps;
* **PS-bound** — speed stops growing and the configuration with more parameter servers is faster by ≥ 15 % at its
  best (or, without such data, efficiency < 0.7): add a parameter server;
* **communication-bound** — speed stops growing and more parameter servers do not help (< 15 %): the per-step
  transfer itself limits (model size vs network); stop adding workers;
* **noisy** — the samples of a run vary too much (median coefficient of variation > 0.1) for a verdict;
* otherwise **sub-linear** — scales, with losses.

Speed "stops growing" after the first n where one more worker adds less than a quarter of one worker's speed.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["diagnose_cluster", "diagnose_timeseries"]

_KEYS = ["gpu", "model", "n_ps"]


def _check_runs(runs: pd.DataFrame) -> pd.DataFrame:
    need = ["n_workers", "speed_mean_steps_per_s"]
    missing = [c for c in need if c not in runs.columns]
    other_units = [c for c in runs.columns if str(c).startswith("speed_mean_") and c != "speed_mean_steps_per_s"]
    if "speed_mean_steps_per_s" in missing and other_units:
        raise ValueError(
            f"diagnose_cluster expects speeds in steps per second (column 'speed_mean_steps_per_s'); got {other_units}. "
            "Convert the unit (e.g. steps/min ÷ 60) and rename the column."
        )
    if missing:
        raise ValueError(
            f"diagnose_cluster needs per-run speeds with columns {need} (+ optional gpu, model, n_ps, speed_std_steps_per_s); "
            f"missing {missing}. Use perfmodel.models.cluster_speeds() for the CM-DARE runs."
        )
    r = runs.copy()
    for k, default in (("gpu", "?"), ("model", "?"), ("n_ps", 1)):
        if k not in r:
            r[k] = default
    if (r["speed_mean_steps_per_s"] <= 0).any() or r["speed_mean_steps_per_s"].isna().any():
        raise ValueError("cluster speeds must be positive steps/s (no zeros, negatives or NaN).")
    sizes = r.groupby(_KEYS, observed=True)["n_workers"].nunique()
    if (sizes < 2).any():
        bad = sizes[sizes < 2].index[0]
        raise ValueError(f"configuration {dict(zip(_KEYS, bad))} has fewer than two cluster sizes; a scaling diagnosis needs at least two.")
    if "n_workers" in r and (r["n_workers"] < 1).any():
        raise ValueError("n_workers must be ≥ 1.")
    return r


def diagnose_cluster(runs: pd.DataFrame, *, efficiency_ok: float = 0.9, ps_gain: float = 0.15, noise_cv: float = 0.1) -> pd.DataFrame:
    """One row per (gpu, model, n_ps) configuration: ``efficiency`` (at the largest size), ``stops_growing_after``
    (workers; <NA> if it keeps growing), ``best_speed_steps_per_s``, ``more_ps_gain_pct`` (best speed with the next
    larger PS count vs this one; NaN when no such data), ``median_cv``, ``verdict``, ``evidence``, ``recommendation``."""
    r = _check_runs(runs)
    best = r.groupby(_KEYS, observed=True)["speed_mean_steps_per_s"].max()
    rows = []
    for key, g in r.groupby(_KEYS, observed=True, sort=True):
        g = g.sort_values("n_workers")
        n, s = g["n_workers"].to_numpy(float), g["speed_mean_steps_per_s"].to_numpy(float)
        s1 = s[n == n.min()][0] / n.min()
        eff = s[-1] / (n[-1] * s1)
        gains = np.diff(s)
        stop = next((int(n[i]) for i, d in enumerate(gains) if d < 0.25 * s1), None)
        gpu, model, ps = key
        more = [p for (g2, m2, p) in best.index if g2 == gpu and m2 == model and p > ps]
        fewer = [p for (g2, m2, p) in best.index if g2 == gpu and m2 == model and p < ps]
        gain = (best[(gpu, model, min(more))] / best[key] - 1) * 100 if more else np.nan
        # the largest PS count: judge by what its extra PS bought over the next smaller count
        gain_from_fewer = (best[key] / best[(gpu, model, max(fewer))] - 1) * 100 if fewer else np.nan
        cv = (g["speed_std_steps_per_s"] / g["speed_mean_steps_per_s"]).median() if "speed_std_steps_per_s" in g else np.nan
        if np.isfinite(cv) and cv > noise_cv:
            verdict, rec = "noisy", "repeat the measurement: the samples vary too much for a verdict"
        elif eff >= efficiency_ok:
            verdict, rec = "compute-bound", f"near-linear scaling up to {int(n[-1])} workers: add workers"
        elif stop is not None and np.isfinite(gain) and gain >= ps_gain * 100:
            verdict, rec = "PS-bound", f"add a parameter server (+{gain:.0f} % at best); beyond {stop} workers one PS saturates"
        elif stop is not None and np.isfinite(gain):
            verdict, rec = "communication-bound", f"stop adding workers after {stop}: more parameter servers gain only {gain:.0f} %; the per-step transfer limits"
        elif stop is not None and np.isfinite(gain_from_fewer) and gain_from_fewer < ps_gain * 100:
            verdict, rec = "communication-bound", (f"stop adding workers after {stop}: this PS count is only {gain_from_fewer:.0f} % faster "
                                                   "than one PS less; the per-step transfer limits")
        elif stop is not None and eff < 0.7:
            verdict, rec = "PS-bound", f"speed stops growing after {stop} workers (efficiency {eff:.2f}); try another parameter server"
        else:
            verdict, rec = "sub-linear", "scales with losses: weigh the marginal speed of each worker against its price"
        evidence = (f"S(1)={s1:.3g}, S({int(n[-1])})={s[-1]:.3g} steps/s, efficiency {eff:.2f}; "
                    + (f"gain of one more worker < {0.25 * s1:.3g} steps/s after {stop}; " if stop else "keeps growing; ")
                    + (f"more PS: {gain:+.1f} % best speed" if np.isfinite(gain) else "no data with more PS")
                    + (f"; vs fewer PS: {gain_from_fewer:+.1f} %" if np.isfinite(gain_from_fewer) else ""))
        rows.append(dict(gpu=gpu, model=model, n_ps=ps, max_workers=int(n[-1]), efficiency=eff, stops_growing_after=stop,
                         best_speed_steps_per_s=best[key], more_ps_gain_pct=gain, median_cv=cv, verdict=verdict, evidence=evidence,
                         recommendation=rec))
    out = pd.DataFrame(rows)
    out["stops_growing_after"] = out["stops_growing_after"].astype("Int64")
    return out


def diagnose_timeseries(ts: pd.DataFrame, *, warmup_frac: float = 0.9, outlier_mads: float = 4.0, outlier_frac: float = 0.05,
                        unstable_cv: float = 0.05) -> pd.DataFrame:
    """Warm-up, instability and outliers of single-worker speed time series (one row per model and GPU).

    ``warmup_samples``: leading samples below ``warmup_frac`` × the median (excluding an origin row at step 0);
    ``outliers``: steps of samples more than ``outlier_mads`` robust standard deviations (1.4826 × MAD) **and** more than
    ``outlier_frac`` of the median away from the median (after warm-up);
    ``cv``: coefficient of variation after warm-up; ``verdict``: ``stable`` / ``warm-up`` / ``unstable`` / ``outliers``.
    """
    need = ["model", "gpu", "step", "speed_steps_per_s"]
    missing = [c for c in need if c not in ts.columns]
    if missing:
        raise ValueError(f"diagnose_timeseries needs columns {need}; missing {missing}.")
    rows = []
    for (model, gpu), g in ts.groupby(["model", "gpu"], observed=True, sort=True):
        g = g[g["step"] > 0].sort_values("step")
        v = g["speed_steps_per_s"].to_numpy(float)
        if len(v) < 3:
            raise ValueError(f"{model} on {gpu}: a time series needs at least 3 samples; got {len(v)}.")
        med = np.median(v)
        warm = 0
        while warm < len(v) and v[warm] < warmup_frac * med:
            warm += 1
        rest, steps = v[warm:], g["step"].to_numpy()[warm:]
        mad = np.median(np.abs(rest - np.median(rest))) or 1e-12
        dev = np.abs(rest - np.median(rest))
        out_idx = (dev > outlier_mads * 1.4826 * mad) & (dev > outlier_frac * np.median(rest))
        cv = float(np.std(rest, ddof=1) / np.mean(rest))
        verdict = "unstable" if cv > unstable_cv else "outliers" if out_idx.any() else "warm-up" if warm else "stable"
        rows.append(dict(model=model, gpu=gpu, n_samples=len(v), warmup_samples=warm, mean_after_warmup_steps_per_s=float(np.mean(rest)),
                         cv=cv, outliers=";".join(str(int(s)) for s in steps[out_idx]), verdict=verdict))
    return pd.DataFrame(rows)
