"""Cluster speed of asynchronous parameter-server (PS) training as a function of workers and parameter servers.

Per-run cluster speeds (:func:`perfmodel.datasets.cluster_speeds`) come from the 96 TensorBoard exports (mean of the
samples with ``step >= 2000``). :class:`ClusterSpeedModel` predicts speed (steps/s) from the
number of workers ``n`` and of parameter servers ``p``:

* ``kind="linear"`` — the paper's baseline ``S(n) = n · S(1)``;
* ``kind="ps"`` — an Optimus-style throughput model (Peng et al., EuroSys'18, adapted to asynchronous training):
  the time per global step is a non-negative combination

  ``1/S(n, p) = θ_c / n + θ_t / p + θ_q · n / p + θ_o``

  of per-worker compute (``θ_c``: seconds of computation per step per worker, shared by ``n`` workers), PS transfer
  work (``θ_t``: PS-seconds per step, shared by ``p`` servers), PS queueing/contention growing with workers per PS
  (``θ_q``) and a fixed per-step overhead (``θ_o``), fitted with ``scipy.optimize.nnls`` on relative errors.
  As ``n → ∞`` the speed tends to ``p / θ_q`` at best: the PS saturation that makes P100 clusters plateau.

Parameters have units (seconds per step) and bootstrap intervals (:meth:`ClusterSpeedModel.parameters`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from perfmodel import datasets as ds
from perfmodel.datasets.derived import cluster_speeds

__all__ = ["cluster_speeds", "ClusterSpeedModel", "PS_TERMS", "fit_cluster_speed_model", "SHARED_PS_TERMS",
           "fit_shared_ps_terms", "predict_cluster_speed"]

#: Terms of the PS model: name → (feature of (n, p), unit of the coefficient, meaning).
PS_TERMS = {
    "compute_s": (lambda n, p: 1 / n, "s/step", "computation per step of one worker (shared by n workers)"),
    "ps_transfer_s": (lambda n, p: 1 / p, "s/step", "PS work per step (shared by p servers): pull + push of the model"),
    "ps_contention_s": (lambda n, p: n / p, "s/step per worker/PS", "queueing at the PS, growing with workers per server"),
    "overhead_s": (lambda n, p: np.ones_like(n), "s/step", "fixed per-step overhead"),
}


#: Columns of ``X`` by name (a DataFrame with these columns is read by name, in any order).
NPS_COLUMNS = ["n_workers", "n_ps"]


def _check_nps(X, name="X"):
    X = np.asarray(X, dtype=float)
    if X.ndim == 2 and (X < 0).any():
        raise ValueError(f"Negative values in data passed to ClusterSpeedModel ({name}): worker and PS counts are ≥ 1; got min "
                         f"{np.nanmin(X):g}.")
    if X.ndim != 2 or X.shape[1] != 2:
        got = f"{X.shape[1]} feature(s) (shape {X.shape})" if X.ndim == 2 else f"shape {X.shape}"
        raise ValueError(f"{name} must have two columns (n_workers, n_ps); got {got}. Pass a DataFrame with columns "
                         "'n_workers' and 'n_ps' or an array [[n_workers, n_ps], ...].")
    if not np.isfinite(X).all() or (X < 1).any():
        raise ValueError(f"{name}: worker and PS counts must be finite and ≥ 1; got min {np.nanmin(X)}. A cluster has at "
                         "least one worker and one parameter server.")
    return X


def _by_name(X, names=NPS_COLUMNS):
    """The ``names`` columns of a DataFrame that has them all (in that order); anything else unchanged."""
    if isinstance(X, pd.DataFrame) and set(names) <= set(X.columns):
        return X[list(names)]
    return X


class ClusterSpeedModel(RegressorMixin, BaseEstimator):
    """Cluster speed (steps/s) from ``X = [[n_workers, n_ps], ...]``.

    ``X`` is a DataFrame with columns ``n_workers`` and ``n_ps`` (read by name, in any order; other columns are
    ignored) or an array with those two columns in that order. Counts are ≥ 1; speeds ``y`` are positive.

    Parameters
    ----------
    kind : {'ps', 'linear'}, default 'ps'
        Optimus-style PS model (NNLS) or the linear baseline ``n · S(1)``.
    n_bootstrap : int, default 200
        Bootstrap resamples for :meth:`parameters` intervals.
    random_state : int, optional

    Attributes
    ----------
    coef_ : ndarray — the ``PS_TERMS`` coefficients (s/step) for ``kind='ps'``
    single_worker_speed_ : float — ``S(1)`` for ``kind='linear'`` (mean of the n = 1 rows, or fitted slope)
    n_features_in_ : int — 2
    feature_names_in_ : ndarray of str — the column names when fitted on a DataFrame
    """

    def __init__(self, kind="ps", n_bootstrap=200, random_state=None):
        self.kind = kind
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def _design(self, X):
        n, p = X[:, 0], X[:, 1]
        return np.column_stack([f(n, p) for f, _, _ in PS_TERMS.values()])

    def fit(self, X, y):
        """Fit on worker/PS counts ``X`` and measured cluster speeds ``y`` (steps/s, positive)."""
        if self.kind not in ("ps", "linear"):
            raise ValueError(f"The 'kind' parameter of ClusterSpeedModel must be one of {{'ps','linear'}}. Got {self.kind!r}.")
        if isinstance(self.n_bootstrap, bool) or not isinstance(self.n_bootstrap, (int, np.integer)) or self.n_bootstrap < 0:
            raise ValueError(f"The 'n_bootstrap' parameter of ClusterSpeedModel must be an int ≥ 0. Got {self.n_bootstrap!r}.")
        X, y = validate_data(self, _by_name(X), y, dtype=np.float64, y_numeric=True)
        if self.kind == "ps" and X.shape[0] < 2:
            raise ValueError(f"the PS model needs runs of at least two cluster sizes; got n_samples={X.shape[0]}.")
        X = _check_nps(X)
        if not np.isfinite(y).all() or (y <= 0).any():
            raise ValueError(f"cluster speeds must be positive steps/s (no zeros, negatives or NaN); got {int(np.sum(~(y > 0)))} "
                             "value(s) ≤ 0.")
        sizes = np.unique(X[:, 0])
        if self.kind == "ps" and len(sizes) < 2:
            raise ValueError(f"the PS model needs at least two cluster sizes; got n_workers = {sizes.tolist()}.")
        if self.kind == "linear":
            self.single_worker_speed_ = float(np.sum(y * X[:, 0]) / np.sum(X[:, 0] ** 2))  # least squares through the origin
        else:
            self.coef_ = self._nnls(X, y)
        self._X, self._y = X, y
        return self

    def _need_ps(self, what):
        check_is_fitted(self, "_X")
        if self.kind != "ps":
            raise ValueError(f"ClusterSpeedModel.{what} needs the PS terms of kind='ps'; this model is kind={self.kind!r} "
                             "(speed = n x single_worker_speed_, no PS saturation).")

    def _nnls(self, X, y):
        A = self._design(X)
        from scipy.optimize import nnls

        w = y  # weights → relative errors of 1/S
        coef, _ = nnls(A * w[:, None], np.ones_like(y))  # (1/y)·y = 1
        if not np.any(coef > 0):  # pragma: no cover - degenerate data
            raise ValueError("NNLS found no positive term; check the speeds.")
        return coef

    def predict(self, X):
        """Predicted cluster speed (steps/s)."""
        check_is_fitted(self, "_X")
        names = getattr(self, "feature_names_in_", None)
        if names is not None and list(names) == NPS_COLUMNS and not hasattr(X, "columns") and np.ndim(X) == 2 and np.shape(X)[1] == 2:
            X = pd.DataFrame(np.asarray(X, dtype=float), columns=NPS_COLUMNS)  # the documented array order (n_workers, n_ps)
        X = _check_nps(validate_data(self, _by_name(X, NPS_COLUMNS if names is None else list(names)), reset=False, dtype=np.float64))
        if self.kind == "linear":
            return self.single_worker_speed_ * X[:, 0]
        return 1 / (self._design(X) @ self.coef_)

    def predict_heterogeneous(self, worker_speeds, n_ps: int = 1) -> float:
        """Speed (steps/s) of a cluster of workers with different single-worker speeds (e.g. mixed GPUs).

        The compute term ``θ_c / n`` of a homogeneous cluster is the inverse of its aggregate compute rate
        ``n / θ_c``; for mixed workers it becomes ``1 / Σ v_i`` with ``v_i`` each worker's own speed (steps/s, from the
        step-time model or a measurement). The PS terms are this model's, fitted on the same CNN: the PS caps the sum.
        """
        self._need_ps("predict_heterogeneous")
        v = np.asarray(worker_speeds, dtype=float).ravel()
        if v.size == 0 or not np.isfinite(v).all() or (v <= 0).any():
            raise ValueError("worker_speeds must be one positive speed (steps/s) per worker.")
        if n_ps < 1:
            raise ValueError(f"n_ps must be ≥ 1; got {n_ps}.")
        n, p = float(v.size), float(n_ps)
        _, t, q, o = self.coef_
        return float(1 / (1 / v.sum() + t / p + q * n / p + o))

    def parameters(self, alpha: float = 0.05) -> pd.DataFrame:
        """The fitted terms with units, meaning, estimate and a bootstrap ``1 − alpha`` interval (resampling rows).

        ``kind='ps'``: the :data:`PS_TERMS`; ``kind='linear'``: one term, ``single_worker_speed`` (steps/s). The
        interval is NaN when ``n_bootstrap=0`` or no resample was usable; ``n_bootstrap`` says how many were used.
        """
        from perfmodel.models.step_time import _check_alpha

        _check_alpha(alpha, "ClusterSpeedModel.parameters")
        check_is_fitted(self, "_X")
        rng = np.random.default_rng(self.random_state)
        boots = []
        for _ in range(self.n_bootstrap):
            idx = rng.integers(0, len(self._y), len(self._y))
            if self.kind == "ps":
                if len(np.unique(self._X[idx, 0])) < 2:
                    continue
                boots.append(self._nnls(self._X[idx], self._y[idx]))
            else:
                xs, ys = self._X[idx, 0], self._y[idx]
                boots.append([np.sum(ys * xs) / np.sum(xs**2)])
        if self.kind == "ps":
            terms = [(name, unit, meaning) for name, (_, unit, meaning) in PS_TERMS.items()]
            est = self.coef_
        else:
            terms = [("single_worker_speed", "steps/s", "speed of one worker; the linear baseline is n times it")]
            est = [self.single_worker_speed_]
        b = np.array(boots, dtype=float).reshape(len(boots), len(terms))
        rows = []
        for i, (name, unit, meaning) in enumerate(terms):
            lo, hi = (float(np.quantile(b[:, i], alpha / 2)), float(np.quantile(b[:, i], 1 - alpha / 2))) if len(b) else (np.nan, np.nan)
            rows.append(dict(term=name, unit=unit, meaning=meaning, estimate=float(est[i]), lower=lo, upper=hi, n_bootstrap=len(b)))
        return pd.DataFrame(rows)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True  # worker and PS counts (≥ 1)
        tags.target_tags.positive_only = True  # speeds (steps/s > 0)
        return tags

    def saturation_speed(self, n_ps: int) -> float:
        """Upper bound of speed as workers grow: ``p / θ_q`` (∞ when there is no contention term)."""
        self._need_ps("saturation_speed")
        q = self.coef_[2]
        return float(n_ps / q) if q > 0 else float("inf")

    def saturation_workers(self, n_ps: int, *, max_workers: int = 64, gain: float = 0.05) -> int:
        """Smallest n after which one more worker adds less than ``gain`` (fraction) of speed."""
        check_is_fitted(self, "_X")
        n = np.arange(1, max_workers + 1, dtype=float)
        s = self.predict(np.column_stack([n, np.full_like(n, n_ps)]))
        rel = np.diff(s) / s[:-1]
        below = np.nonzero(rel < gain)[0]
        return int(n[below[0]]) if len(below) else max_workers


def fit_cluster_speed_model(speeds: pd.DataFrame | None = None, *, gpu: str, model: str, n_ps: int | None = None,
                            train_sizes=None, kind: str = "ps", random_state: int | None = 0) -> ClusterSpeedModel:
    """Fit :class:`ClusterSpeedModel` on the runs of one GPU and CNN (all PS counts unless ``n_ps``).

    Parameters
    ----------
    speeds : DataFrame, optional
        Per-run speeds (default :func:`cluster_speeds`).
    gpu, model : str
        Any spelling (``"p100"``, ``"Res15"``).
    n_ps : int, optional
        Keep one parameter-server count.
    train_sizes : iterable of int, optional
        Worker counts to fit on (default: all).
    """
    d = cluster_speeds() if speeds is None else speeds
    g, m = ds.canonical_gpu(gpu), ds.canonical_model(model)
    sel = (d["gpu"].astype(str) == g) & (d["model"].astype(str) == m)
    if n_ps is not None:
        sel &= d["n_ps"] == n_ps
    if train_sizes is not None:
        sel &= d["n_workers"].isin(list(train_sizes))
    rows = d[sel]
    if rows.empty:
        raise ValueError(f"No cluster runs for {g} / {m}{f' / {n_ps} PS' if n_ps else ''}; available: "
                         f"{sorted(set(zip(d['gpu'].astype(str), d['model'].astype(str))))}.")
    return ClusterSpeedModel(kind=kind, random_state=random_state).fit(rows[NPS_COLUMNS].astype(float), rows["speed_mean_steps_per_s"].to_numpy())


#: Shared PS terms of :func:`fit_shared_ps_terms`, per MiB of trainable parameters (pull + push traffic).
SHARED_PS_TERMS = ("ps_transfer_s_per_mib", "ps_contention_s_per_mib", "overhead_s")


def fit_shared_ps_terms(gpu: str, speeds: pd.DataFrame | None = None) -> pd.Series:
    """PS terms of one GPU shared by every CNN, scaled by the CNN's parameter size, fitted on all its cluster runs.

    Joint non-negative least squares (relative errors of ``1/S``) over every (CNN, n_workers, n_ps) run of ``gpu``:
    ``1/S = θ_c[CNN] / n + a_t · M / p + a_q · M · n / p + a_o``, with ``M`` the CNN's trainable parameters in MiB
    (what a worker pulls and pushes every step) and one compute term ``θ_c`` per CNN. The shared ``a_t``, ``a_q``,
    ``a_o`` let the PS model be applied to a CNN that was never run on a cluster.

    Returns
    -------
    Series
        ``ps_transfer_s_per_mib``, ``ps_contention_s_per_mib``, ``overhead_s``, plus ``mape_pct`` of the joint fit
        and ``n_runs``.
    """
    from scipy.optimize import nnls

    from perfmodel.features import load_zoo_features

    d = cluster_speeds() if speeds is None else speeds
    g = ds.canonical_gpu(gpu)
    d = d[d["gpu"].astype(str) == g]
    if d.empty:
        raise ValueError(f"No cluster runs for {g}; the CM-DARE cluster data has {sorted(set(cluster_speeds()['gpu']))}.")
    z = load_zoo_features().set_index("model")
    models = sorted(set(d["model"].astype(str)))
    mib = d["model"].astype(str).map(z["param_bytes"] / 2**20).to_numpy(float)
    n, p = d["n_workers"].to_numpy(float), d["n_ps"].to_numpy(float)
    onehot = np.column_stack([(d["model"].astype(str) == m).to_numpy(float) / n for m in models])
    A = np.column_stack([onehot, mib / p, mib * n / p, np.ones_like(n)])
    y = d["speed_mean_steps_per_s"].to_numpy(float)
    coef, _ = nnls(A * y[:, None], np.ones_like(y))
    pred = 1 / (A @ coef)
    out = pd.Series(dict(zip(SHARED_PS_TERMS, coef[-3:])), name=g)
    out["mape_pct"] = float(np.mean(np.abs(pred / y - 1)) * 100)  # the fit's own training error (models do not import diagnostics)
    out["n_runs"] = len(y)
    return out


def predict_cluster_speed(model, gpu: str, *, workers=range(1, 9), n_ps=(1, 2), input_shape=(3, 32, 32), batch_size: int = 128,
                          single_worker_step_s: float | None = None, ps_terms_gpu: str | None = None,
                          speeds: pd.DataFrame | None = None) -> pd.DataFrame:
    """Predicted cluster speed (steps/s) of a CNN on ``n`` workers of one GPU type with ``p`` parameter servers.

    * A CNN and GPU with cluster runs in CM-DARE (ResNet-15/32, Shake-Shake small/big on K80/P100) at CM-DARE's
      batch of 128: the PS model fitted on its own runs (:func:`fit_cluster_speed_model`).
    * Otherwise: ``1/S = t₁ / n + a_t · M / p + a_q · M · n / p + a_o`` with the shared, size-scaled PS terms of
      :func:`fit_shared_ps_terms` (of ``ps_terms_gpu``: the GPU itself when it has cluster runs, else P100 — the PS
      and network, not the worker GPU, set these terms; an assumption) and the compute term ``t₁`` from the
      single-worker step time (``single_worker_step_s`` or :func:`perfmodel.models.predict_cmdare_step_time`) minus the PS
      terms at ``n = p = 1`` (floored at half the step time).

    ``batch_size`` is per worker and step (default 128, CM-DARE's); another batch uses the second form with the
    single-worker step time at that batch. ``speeds`` (default :func:`cluster_speeds`) are the runs both fits use. Leave-one-CNN-out accuracy of the
    size-scaled terms: :func:`perfmodel.diagnostics.shared_ps_terms_errors`.

    Returns
    -------
    DataFrame
        ``model``, ``gpu``, ``n_workers``, ``n_ps``, ``speed_steps_per_s``, ``step_time_s`` (per global step),
        ``single_worker_speed_steps_per_s`` (the single-worker speed of :func:`predict_cmdare_step_time`, or of
        ``single_worker_step_s``), ``measured_speed_steps_per_s`` (mean of the CM-DARE cluster run of that
        configuration, NaN where there is none) and ``basis``. With the PS model fitted on a CNN's own runs, the
        1 worker / 1 PS speed is that fit's and can differ from ``single_worker_speed_steps_per_s`` (e.g. ResNet-32 on
        P100: the PS model gives 13.7 steps/s at 1 worker, its 1-worker run measured 11.5 and the single-worker
        prediction is 11.3); ``basis`` says by how much. An :class:`~perfmodel.models.ExtrapolationWarning` is raised for worker or PS counts beyond the measured
        ones (1–8 workers, 1–2 PS).
    """
    from perfmodel.models.step_time import model_features, predict_cmdare_step_time

    g = ds.canonical_gpu(gpu)
    workers = [int(w) for w in workers]
    n_ps = [int(q) for q in ([n_ps] if np.isscalar(n_ps) else n_ps)]
    if not workers or min(workers) < 1 or not n_ps or min(n_ps) < 1:
        raise ValueError(f"workers and n_ps must be positive counts; got workers={workers}, n_ps={n_ps}.")
    feats = model_features(model, input_shape=input_shape)
    name = str(feats["model"].iloc[0])
    grid = np.array([(w, q) for q in n_ps for w in workers], dtype=float)
    d = cluster_speeds() if speeds is None else speeds
    have = d[(d["gpu"].astype(str) == g) & (d["model"].astype(str) == name)]
    _warn_beyond_measured(d, workers, n_ps, name, g)
    if len(have) and set(n_ps) <= set(have["n_ps"]) and single_worker_step_s is None and batch_size == 128:
        speed = fit_cluster_speed_model(d, gpu=g, model=name).predict(grid)
        s1 = 1 / float(predict_cmdare_step_time(feats, g)["step_time_s"].iloc[0])
        own1 = float(speed[0]) if (grid[0] == 1).all() else float(fit_cluster_speed_model(d, gpu=g, model=name).predict([[1, 1]])[0])
        run1 = have[(have["n_workers"] == 1) & (have["n_ps"] == 1)]["speed_mean_steps_per_s"]
        meas = f"the 1-worker run measured {float(run1.iloc[0]):.4g} steps/s, " if len(run1) else ""
        basis = (f"PS model fitted on the {len(have)} CM-DARE cluster runs of {name} on {g}; its 1 worker / 1 PS speed "
                 f"({own1:.4g} steps/s) is that fit's over 1-{int(have['n_workers'].max())} workers ({meas}see "
                 f"measured_speed_steps_per_s) and differs by {(own1 / s1 - 1) * 100:+.0f} % from the single-worker prediction "
                 f"({s1:.4g} steps/s, single_worker_speed_steps_per_s; fitted on CM-DARE's single-worker samples)")
        measured = have.groupby(["n_workers", "n_ps"])["speed_mean_steps_per_s"].mean()
    else:
        src = ps_terms_gpu or (g if g in set(d["gpu"].astype(str)) else "P100")
        terms = fit_shared_ps_terms(src, d)
        mib = float(feats["param_bytes"].iloc[0]) / 2**20 if "param_bytes" in feats.columns else float(feats["params"].iloc[0]) * 4 / 2**20
        t1 = (float(predict_cmdare_step_time(feats, g, batch_size=batch_size)["step_time_s"].iloc[0]) if single_worker_step_s is None
              else float(single_worker_step_s))
        if not np.isfinite(t1) or t1 <= 0:
            raise ValueError(f"single_worker_step_s must be a positive number of seconds; got {single_worker_step_s!r}.")
        s1 = 1 / t1
        measured = pd.Series(dtype=float)
        ps_part = terms["ps_transfer_s_per_mib"] * mib + terms["ps_contention_s_per_mib"] * mib + terms["overhead_s"]
        tc = max(t1 - ps_part, 0.5 * t1)
        n, p = grid[:, 0], grid[:, 1]
        speed = 1 / (tc / n + terms["ps_transfer_s_per_mib"] * mib / p + terms["ps_contention_s_per_mib"] * mib * n / p + terms["overhead_s"])
        basis = f"size-scaled PS terms of {src} ({mib:.1f} MiB of parameters) + single-worker step time {t1:.4g} s"
        if batch_size != 128:
            basis += f" at batch {batch_size}"
        if tc > t1 - ps_part:
            basis += " (PS terms above half the step time: compute floored at half of it, so 1 worker / 1 PS is slower than that)"
    out = pd.DataFrame({"model": name, "gpu": g, "n_workers": grid[:, 0].astype(int), "n_ps": grid[:, 1].astype(int),
                        "speed_steps_per_s": speed})
    out["step_time_s"] = 1 / out["speed_steps_per_s"]
    out["single_worker_speed_steps_per_s"] = s1
    out["measured_speed_steps_per_s"] = [float(measured.get((int(w), int(q)), np.nan)) for w, q in grid]
    out["basis"] = basis
    return out


def _warn_beyond_measured(d, workers, n_ps, name, gpu):
    """An :class:`ExtrapolationWarning` when worker or PS counts lie beyond those of the CM-DARE cluster runs."""
    import warnings

    from perfmodel._extrapolation import ExtrapolationWarning, how_far_outside

    far = []
    for label, asked, col in (("workers", workers, "n_workers"), ("parameter servers", n_ps, "n_ps")):
        lo, hi = float(d[col].min()), float(d[col].max())
        msg = how_far_outside(f"{max(asked)} {label}", float(max(asked)), lo, hi, what=f"measured count ({lo:g}-{hi:g})")
        if msg:
            far.append(msg)
    if far:
        warnings.warn(f"predict_cluster_speed extrapolates for {name} on {gpu}: {'; '.join(far)} in the CM-DARE cluster runs; "
                      "the PS model there is not backed by measurements.", ExtrapolationWarning, stacklevel=3)
