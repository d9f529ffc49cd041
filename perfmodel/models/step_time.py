"""Step-time models: CM-DARE's regressions (linear, SVR, curve fits) and a gradient-boosted alternative.

:class:`StepTimeRegressor` follows scikit-learn's estimator contract. Feature sets name columns of a DataFrame
(:data:`FEATURE_SETS`): the paper's (``normalized_model``; ``normalized_computation`` = min-max of model FLOPs / GPU
TFLOPS; ``[normalized_model, gpu_tflops]``) and perfmodel's graph features joined with GPU specs
(:func:`graph_feature_frame`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from perfmodel._extrapolation import ExtrapolationWarning, range_report

__all__ = [
    "StepTimeRegressor",
    "FEATURE_SETS",
    "graph_feature_frame",
    "quadratic_fit",
    "exponential_speed_fit",
    "PAPER_SVR_POLY",
    "model_features",
    "predict_cmdare_step_time",
    "predict_step_time",
    "PREDICTION_FLOOR_FRACTION",
]

#: Feature sets by name (column lists of the frames of :mod:`perfmodel.datasets` / :func:`graph_feature_frame`).
FEATURE_SETS: dict[str, list[str]] = {
    "paper_model": ["normalized_model"],
    "paper_computation": ["normalized_computation"],
    "paper_two_feature": ["normalized_model", "gpu_tflops"],
    "graph": ["ideal_compute_ms", "trainable_tensors"],
    "graph_full": ["train_step_gflops", "gpu_tflops", "params_m", "activation_mib", "trainable_tensors", "gpu_bandwidth_gb_per_s",
                   "ideal_compute_ms", "activation_mib_per_gb_s"],
}

#: CM-DARE's SVR (sp2 cells 22–29): SVR(kernel='poly', degree=2, C=100, gamma='auto', epsilon=0.01, coef0=1).
PAPER_SVR_POLY = dict(kernel="poly", degree=2, C=100.0, gamma="auto", epsilon=0.01, coef0=1.0)

_METHODS = ("linear", "svr", "gbm")

#: A raw-scale prediction (or interval bound) ≤ 0 s is replaced by this fraction of the smallest fitted target
#: (:attr:`StepTimeRegressor.prediction_floor_s_`), with an :class:`ExtrapolationWarning`.
PREDICTION_FLOOR_FRACTION = 0.01


class StepTimeRegressor(RegressorMixin, BaseEstimator):
    """Per-step training time (s) from model and GPU features.

    Parameters
    ----------
    method : {'linear', 'svr', 'gbm'}, default 'linear'
        Ordinary least squares; support-vector regression (``svr_params``, default :data:`PAPER_SVR_POLY`);
        gradient-boosted trees (xgboost, ``gbm_params``).
    features : str or list of str or None, default None
        Columns to use when ``X`` is a DataFrame: a key of :data:`FEATURE_SETS` or a list of column names. ``None``
        uses every column of ``X``.
    log_transform : bool, default False
        Fit on ``log(X)`` and ``log(y)`` (power-law model); predictions are transformed back. Needs positive values.
    svr_params, gbm_params : dict, optional
        Keyword arguments of :class:`sklearn.svm.SVR` / :class:`xgboost.XGBRegressor`.
    random_state : int, optional
        Seed of the gbm method (the other methods are deterministic).

    Attributes
    ----------
    estimator_ : fitted scikit-learn / xgboost estimator
    feature_names_used_ : list of str or None
    n_features_in_ : int
    coef_, intercept_ : linear method only (on the transformed scale when ``log_transform``)
    feature_min_, feature_max_ : ndarray
        Range of each feature in the fitted data; a prediction outside it warns (:class:`ExtrapolationWarning`) and
        says how far outside.
    prediction_floor_s_ : float
        :data:`PREDICTION_FLOOR_FRACTION` of the smallest fitted target (s).

    Notes
    -----
    Predictions are times, hence positive. With ``log_transform=True`` they are by construction. On the raw scale (the
    paper's regressors, kept for reproduction) a linear, SVR or GBM model can return a value ≤ 0 far from its data: such
    a value (and an interval bound ≤ 0) is replaced by ``prediction_floor_s_`` and an :class:`ExtrapolationWarning`
    says so. Fit with ``log_transform=True`` for predictions that are positive without truncation.
    """

    _feature_sets = FEATURE_SETS
    _target = "step times"
    _default_svr = PAPER_SVR_POLY

    def __init__(self, method="linear", features=None, log_transform=False, svr_params=None, gbm_params=None, random_state=None):
        self.method = method
        self.features = features
        self.log_transform = log_transform
        self.svr_params = svr_params
        self.gbm_params = gbm_params
        self.random_state = random_state

    # -- helpers ---------------------------------------------------------------------------------------------------
    def _columns(self, X):
        if self.features is None or not isinstance(X, pd.DataFrame):
            return X
        sets = self._feature_sets
        cols = sets[self.features] if isinstance(self.features, str) and self.features in sets else self.features
        if isinstance(cols, str):
            raise ValueError(
                f"The 'features' parameter of {type(self).__name__} must be one of {sorted(self._feature_sets)} or a list of column names. Got {cols!r}."
            )
        missing = [c for c in cols if c not in X.columns]
        if missing:
            raise ValueError(f"{type(self).__name__}: X lacks the feature column(s) {missing}; it has {list(map(str, X.columns))}.")
        return X[list(cols)]

    def _check_params(self):
        if self.method not in _METHODS:
            raise ValueError(f"The 'method' parameter of {type(self).__name__} must be one of {{'linear','svr','gbm'}}. Got {self.method!r}.")

    def _transform_x(self, X):
        if not self.log_transform:
            return X
        if np.any(X <= 0):
            raise ValueError(f"{type(self).__name__}(log_transform=True) needs positive features; X has values <= 0.")
        return np.log(X)

    def _make(self):
        if self.method == "linear":
            from sklearn.linear_model import LinearRegression

            return LinearRegression()
        if self.method == "svr":
            from sklearn.svm import SVR

            return SVR(**(self._default_svr if self.svr_params is None else self.svr_params))
        from xgboost import XGBRegressor

        params = dict(n_estimators=300, max_depth=3, learning_rate=0.1, subsample=1.0, n_jobs=1, tree_method="exact")
        params.update(self.gbm_params or {})
        return XGBRegressor(random_state=0 if self.random_state is None else self.random_state, **params)

    # -- API ---------------------------------------------------------------------------------------------------------
    def fit(self, X, y):
        """Fit on features ``X`` (DataFrame or array) and step times ``y`` (s, positive, finite)."""
        self._check_params()
        Xs = self._columns(X)
        self.feature_names_used_ = list(Xs.columns) if isinstance(Xs, pd.DataFrame) else None
        Xa, ya = validate_data(self, Xs, y, y_numeric=True, dtype=np.float64)
        if np.any(ya <= 0):
            raise ValueError(f"{type(self).__name__}: {self._target} must be positive seconds; got {int(np.sum(ya <= 0))} value(s) <= 0.")
        yt = np.log(ya) if self.log_transform else ya
        self.estimator_ = self._make().fit(self._transform_x(Xa), yt)
        if self.method == "linear":
            self.coef_ = self.estimator_.coef_
            self.intercept_ = self.estimator_.intercept_
        self._X_fit_ = self._transform_x(Xa)
        self._y_fit_ = yt
        self.feature_min_ = Xa.min(axis=0)
        self.feature_max_ = Xa.max(axis=0)
        self.prediction_floor_s_ = float(PREDICTION_FLOOR_FRACTION * ya.min())
        return self

    def _feature_labels(self):
        names = getattr(self, "feature_names_in_", None)
        return [str(c) for c in names] if names is not None else [f"feature {j}" for j in range(self.n_features_in_)]

    def _warn_outside(self, Xa):
        """Warn when rows of ``Xa`` lie outside the fitted feature range."""
        far = range_report(self._feature_labels(), Xa, self.feature_min_, self.feature_max_)
        if far:
            import warnings

            warnings.warn(f"{type(self).__name__} extrapolates: {'; '.join(far)} (fitted range). Its {self._target} there are "
                          "not backed by data.", ExtrapolationWarning, stacklevel=3)

    def _floor(self, values, what):
        """Replace values ≤ 0 by the documented floor, with a warning saying how many and how negative."""
        v = np.asarray(values, dtype=float)
        bad = ~(v > 0)
        if bad.any():
            import warnings

            warnings.warn(f"{type(self).__name__} (raw scale, method={self.method!r}) gives {int(bad.sum())} {what} ≤ 0 s "
                          f"(min {np.nanmin(v):.3g} s): replaced by the floor {self.prediction_floor_s_:.3g} s "
                          f"({PREDICTION_FLOOR_FRACTION:g} x the smallest fitted time). The input is far from the fitted data; "
                          "fit with log_transform=True for positive predictions.", ExtrapolationWarning, stacklevel=3)
            v = np.where(bad, self.prediction_floor_s_, v)
        return v

    def predict(self, X):
        """Predicted step time (s)."""
        check_is_fitted(self, "estimator_")
        Xa = validate_data(self, self._columns(X), reset=False, dtype=np.float64)
        self._warn_outside(Xa)
        p = self.estimator_.predict(self._transform_x(Xa))
        return np.exp(p) if self.log_transform else self._floor(p, "prediction(s)")

    def predict_interval(self, X, alpha: float = 0.05) -> pd.DataFrame:
        """Prediction intervals of the linear method (statsmodels OLS), in seconds.

        Returns a frame with ``predicted_s``, ``lower_s``, ``upper_s`` (``1 − alpha`` prediction interval for a new
        observation) and ``mean_lower_s`` / ``mean_upper_s`` (confidence interval of the mean); every column is
        positive and ``lower_s ≤ predicted_s ≤ upper_s``. With ``log_transform=True`` the interval is computed on the log
        scale (exact for log-normal errors); on the raw scale values ≤ 0 are replaced by ``prediction_floor_s_`` with an
        :class:`ExtrapolationWarning`.

        Parameters
        ----------
        alpha : float in (0, 1), default 0.05
            Miss probability of the interval (0.05 → 95 % interval).
        """
        _check_alpha(alpha, f"{type(self).__name__}.predict_interval")
        check_is_fitted(self, "estimator_")
        if self.method != "linear":
            raise ValueError(f"predict_interval needs method='linear' (OLS); this model uses {self.method!r}.")
        from statsmodels.regression.linear_model import OLS  # not statsmodels.api: it imports every model (≈ 0.5 s)
        from statsmodels.tools.tools import add_constant

        Xr = validate_data(self, self._columns(X), reset=False, dtype=np.float64)
        self._warn_outside(Xr)
        Xa = self._transform_x(Xr)
        ols = OLS(self._y_fit_, add_constant(self._X_fit_, has_constant="add")).fit()
        frame = ols.get_prediction(add_constant(Xa, has_constant="add")).summary_frame(alpha=alpha)
        out = pd.DataFrame({"predicted_s": frame["mean"], "lower_s": frame["obs_ci_lower"], "upper_s": frame["obs_ci_upper"],
                            "mean_lower_s": frame["mean_ci_lower"], "mean_upper_s": frame["mean_ci_upper"]})
        if self.log_transform:
            return np.exp(out)
        out = pd.DataFrame(self._floor(out.to_numpy(), "prediction or interval bound(s)"), columns=out.columns, index=out.index)
        for lo, hi in (("lower_s", "upper_s"), ("mean_lower_s", "mean_upper_s")):  # a floored prediction stays inside its bounds
            out[lo] = np.minimum(out[lo], out["predicted_s"])
            out[hi] = np.maximum(out[hi], out["predicted_s"])
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = True
        tags.input_tags.positive_only = bool(self.log_transform)
        return tags


def _check_alpha(alpha, where):
    """``alpha`` must be a real number strictly between 0 and 1."""
    import numbers

    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < float(alpha) < 1:
        raise ValueError(f"{where}: alpha must be a number in (0, 1), the miss probability of the interval (0.05 gives a 95 % "
                         f"interval); got {alpha!r}.")


#: The batch size of every CM-DARE measurement (tensor2tensor's image_cifar10 setting).
PAPER_BATCH_SIZE = 128


def graph_feature_frame(samples: pd.DataFrame, features: pd.DataFrame | None = None, gpus: pd.DataFrame | None = None, *,
                        batch_size: int = PAPER_BATCH_SIZE) -> pd.DataFrame:
    """Join per-sample rows (``model``, ``gpu``) with graph features of the model and specs of the GPU.

    Parameters
    ----------
    samples : DataFrame
        Needs ``model`` and ``gpu`` columns (e.g. :func:`perfmodel.datasets.load_speed_samples`).
    features : DataFrame, optional
        Graph features per model (default: the shipped zoo table, :func:`perfmodel.features.load_zoo_features`;
        counts at batch 1 are scaled to CM-DARE's batch of 128 where they grow with the batch).
    gpus : DataFrame, optional
        GPU catalog (default :func:`perfmodel.datasets.load_gpu_catalog`).
    batch_size : int
        Samples per training step the counts are scaled to (default CM-DARE's 128).

    Returns
    -------
    DataFrame
        ``samples`` plus the columns of ``FEATURE_SETS['graph_full']``: ``train_step_gflops`` (at ``batch_size``),
        ``gpu_tflops``, ``params_m``, ``activation_mib``, ``trainable_tensors``, ``gpu_bandwidth_gb_per_s``,
        ``ideal_compute_ms`` (step FLOPs / peak FLOP/s) and ``activation_mib_per_gb_s`` (activation traffic time, ms).
    """
    from perfmodel.datasets import canonical_gpu, load_gpu_catalog
    from perfmodel.features import load_zoo_features, scale_to_batch

    feats = load_zoo_features() if features is None else features
    cat = (load_gpu_catalog() if gpus is None else gpus).set_index("gpu")
    g = samples["gpu"].astype(str)
    unknown = sorted(set(g) - set(cat.index))
    if unknown:
        canonical_gpu(unknown[0])  # raises UnknownNameError listing the valid GPUs when the name is not a GPU at all
        raise ValueError(f"GPU(s) {unknown} have no row in the GPU catalog; known: {list(cat.index)}.")
    f = feats.set_index("model")
    m = samples["model"].astype(str)
    missing = sorted(set(m) - set(f.index))
    if missing:
        raise ValueError(f"graph_feature_frame: no graph features for model(s) {missing}; pass features= with a row per model.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int (samples per step); got {batch_size!r}.")
    batch = int(batch_size)
    out = samples.copy()
    scaled = scale_to_batch(f.loc[m, ["train_step_flops", "activation_bytes"]], batch)
    flops = scaled["train_step_flops"].to_numpy(float)
    tflops = cat.loc[g, "fp32_peak_tflops"].to_numpy(float)
    bw = cat.loc[g, "memory_bandwidth_gb_per_s"].to_numpy(float)
    act = scaled["activation_bytes"].to_numpy(float) / 2**20
    out["train_step_gflops"] = flops / 1e9
    out["gpu_tflops"] = tflops
    out["params_m"] = f.loc[m, "params"].to_numpy(float) / 1e6
    out["activation_mib"] = act
    out["trainable_tensors"] = f.loc[m, "trainable_tensors"].to_numpy(float)
    out["gpu_bandwidth_gb_per_s"] = bw
    out["ideal_compute_ms"] = flops / (tflops * 1e12) * 1e3  # step FLOPs at the batch / peak FLOP/s
    out["activation_mib_per_gb_s"] = act / bw  # ≈ ms to stream the activations once through GPU memory
    return out


def quadratic_fit(x, y) -> np.ndarray:
    """CM-DARE's quadratic ``a + b·x + c·x²`` (scipy ``curve_fit``, sp2 cell 7); returns ``[a, b, c]``."""
    x, y = _xy(x, y)
    from scipy.optimize import curve_fit

    popt, _ = curve_fit(lambda x, a, b, c: a + b * x + c * x**2, x, y)
    return popt


def exponential_speed_fit(x, speed) -> np.ndarray:
    """CM-DARE's speed model ``speed = a + j·exp(−k·x)`` (scipy ``curve_fit``, maxfev 1e5, sp2 cell 5); returns ``[a, j, k]``."""
    x, y = _xy(x, speed)
    from scipy.optimize import curve_fit

    popt, _ = curve_fit(lambda x, a, j, k: a + j * np.exp(-k * x), x, y, maxfev=100000)
    return popt


def _xy(x, y):
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"curve fits need x and y of the same length ≥ 3; got {x.size} and {y.size}.")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("curve fits need finite x and y (no NaN/inf).")
    return x, y


def model_features(model, *, input_shape=(3, 32, 32)) -> pd.DataFrame:
    """One row of graph features (batch 1) for a zoo id, a torch module, or an existing features row.

    Parameters
    ----------
    model : str, torch.nn.Module or DataFrame
        A zoo id (read from the shipped zoo table, no torch needed), a module (:func:`perfmodel.features.extract`),
        or a one-row frame with the columns of :data:`perfmodel.features.FEATURE_COLUMNS` (``model``,
        ``train_step_flops``, ``activation_bytes``, ``params``, ``trainable_tensors`` ... at batch 1).
    input_shape : tuple of int
        Shape of one sample for a module (default CIFAR-10's 3×32×32).
    """
    need = ["model", "train_step_flops", "activation_bytes", "params", "trainable_tensors"]
    if isinstance(model, pd.DataFrame):
        missing = [c for c in need if c not in model.columns]
        if len(model) != 1 or missing:
            raise ValueError(f"A features row must be a one-row frame with columns {need} (from perfmodel.features.extract at "
                             f"batch_size=1); got {len(model)} row(s), missing {missing}.")
        if "batch_size" in model.columns and int(model["batch_size"].iloc[0]) != 1:
            raise ValueError("The features row must be counted at batch_size=1 (counts are scaled to the training batch here); "
                             f"got batch_size={int(model['batch_size'].iloc[0])}.")
        return model.reset_index(drop=True)
    if isinstance(model, str):
        from perfmodel.datasets import canonical_model
        from perfmodel.features import load_zoo_features

        name = canonical_model(model)
        z = load_zoo_features()
        return z[z["model"] == name].reset_index(drop=True)
    from perfmodel.features import extract

    return extract(model, input_shape, batch_size=1)


def predict_cmdare_step_time(model, gpus=("K80", "P100"), *, input_shape=(3, 32, 32), batch_size: int = PAPER_BATCH_SIZE,
                      samples: pd.DataFrame | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Predicted single-worker step time (s) of a model on GPUs, from regressors fitted on CM-DARE's measurements.

    * A GPU with measurements (K80, P100 — or any GPU in ``samples``): linear :class:`StepTimeRegressor` on the
      ``graph`` features (ideal compute time of the training step at batch 128 on the GPU's peak FP32 rate, and
      trainable tensors) fitted on that GPU's samples — leave-one-model-out MAPE 4.1 % (K80) and 7.5 % (P100). Its
      interval is the ``1 − alpha`` prediction interval of the log-log fit on the same features and samples, as a
      ratio around the prediction: positive, and wider the farther the model is from the training CNNs.
    * Any other GPU of the catalog: the prediction of the measured GPU with the nearest peak FP32 rate, scaled by
      ``(TFLOPS_anchor / TFLOPS_gpu) ** b`` with ``b`` the exponent of a log-log regression of step time on the ideal
      compute time fitted on every GPU of the samples (b ≈ 0.72) — an extrapolation through the GPU's peak TFLOPS:
      10.4 % MAPE on the four CNNs CM-DARE ran on a V100 (the log-log fit alone: 11.9 %). Interval: the wider (as
      ratios) of the anchor's and of the log-log fit's.
    * Consistency across the catalog: a GPU with a higher peak FP32 rate is never predicted slower. The predictions
      of every catalog GPU are made together; where the fits of two measured GPUs disagree they are made
      non-increasing in peak TFLOPS by an isotonic regression of ``log(step_time_s)`` (measured GPUs weigh most); an
      adjusted row's prediction and interval are scaled by the same factor, stated in ``basis``.

    Every time is positive and ``lower_s ≤ step_time_s ≤ upper_s``. An :class:`ExtrapolationWarning` says how far
    outside what the fits saw a prediction lies: the model's FLOPs or trainable tensors beyond the training CNNs, a
    GPU without measurements (and its peak TFLOPS beyond the measured ones), a model without convolutions (the fits
    saw CNNs only).

    Parameters
    ----------
    model : str, torch.nn.Module or DataFrame
        See :func:`model_features`.
    gpus : str or sequence of str
        GPU ids of the GPU catalog (``perfmodel.datasets.load_gpu_catalog``).
    input_shape : tuple of int
        Shape of one sample when ``model`` is a module.
    batch_size : int
        Samples per training step (default 128, the batch of every CM-DARE sample). The model's graph features are
        scaled to it; any other batch is an extrapolation of fits made at 128 and says so (ExtrapolationWarning).
    samples : DataFrame, optional
        Training samples (``model``, ``gpu``, ``step_time_s``); default the 520 CM-DARE single-worker samples.
    alpha : float in (0, 1)
        Miss probability of the prediction interval (``1 − alpha`` interval, statsmodels OLS).

    Returns
    -------
    DataFrame
        ``model``, ``gpu``, ``step_time_s`` (predicted), ``lower_s`` / ``upper_s`` (prediction interval),
        ``speed_steps_per_s``, ``basis`` (which fit made the prediction, and any consistency adjustment).
    """
    import warnings

    from sklearn.isotonic import IsotonicRegression

    from perfmodel.datasets import canonical_gpu, load_gpu_catalog, load_speed_samples

    _check_alpha(alpha, "predict_cmdare_step_time")
    gpus = [canonical_gpu(g) for g in ([gpus] if isinstance(gpus, str) else gpus)]
    if not gpus:
        raise ValueError("gpus must name at least one GPU, e.g. ('K80', 'P100').")
    feats = model_features(model, input_shape=input_shape)
    name = str(feats["model"].iloc[0])
    train = graph_feature_frame(load_speed_samples() if samples is None else samples)
    measured = sorted(set(train["gpu"].astype(str)))
    catalog = load_gpu_catalog()
    tflops = dict(zip(catalog["gpu"].astype(str), catalog["fp32_peak_tflops"].astype(float)))
    every = list(dict.fromkeys([*catalog["gpu"].astype(str), *measured, *gpus]))  # the whole catalog, for consistency
    x_all = graph_feature_frame(pd.DataFrame({"model": [name] * len(every), "gpu": every}), features=feats.assign(model=name),
                                batch_size=batch_size)
    rows = {}
    with warnings.catch_warnings():  # the fits' own range warnings are summarised below, once
        warnings.simplefilter("ignore", ExtrapolationWarning)
        for i, g in enumerate(every):
            if g not in measured:
                continue
            x = x_all.iloc[[i]]
            tr = train[train["gpu"].astype(str) == g]
            lin = StepTimeRegressor(features="graph").fit(tr, tr["step_time_s"])
            point = float(lin.estimator_.predict(lin._columns(x).to_numpy(float))[0])  # raw, before any floor
            iv = StepTimeRegressor(features="graph", log_transform=True).fit(tr, tr["step_time_s"]).predict_interval(x, alpha=alpha).iloc[0]
            basis = f"linear on graph features, fitted on {len(tr)} {g} samples (interval: log-log fit on the same features, as a ratio)"
            if not point > 0:  # the line crosses zero this far from its data: the log-log fit alone
                point = float(iv["predicted_s"])
                basis = f"log-log on graph features, fitted on {len(tr)} {g} samples (the linear fit is ≤ 0 s for this model)"
            ratio = point / float(iv["predicted_s"])
            rows[g] = dict(model=name, gpu=g, step_time_s=point, lower_s=float(iv["lower_s"]) * ratio, upper_s=float(iv["upper_s"]) * ratio,
                           basis=basis)
        cross = StepTimeRegressor(features=["ideal_compute_ms"], log_transform=True).fit(train, train["step_time_s"])
        exponent = float(cross.coef_[0])
        for i, g in enumerate(every):
            if g in measured:
                continue
            # anchored on the measured GPU of the nearest peak rate, scaled by the cross-GPU power law of the ideal compute time
            anchor = min(measured, key=lambda m: abs(np.log(tflops[m] / tflops[g])))
            scale = (tflops[anchor] / tflops[g]) ** exponent
            a = rows[anchor]
            civ = cross.predict_interval(x_all.iloc[[i]], alpha=alpha).iloc[0]
            lo_ratio = min(a["lower_s"] / a["step_time_s"], float(civ["lower_s"] / civ["predicted_s"]))
            hi_ratio = max(a["upper_s"] / a["step_time_s"], float(civ["upper_s"] / civ["predicted_s"]))
            point = a["step_time_s"] * scale
            rows[g] = dict(model=name, gpu=g, step_time_s=point, lower_s=point * lo_ratio, upper_s=point * hi_ratio,
                           basis=f"{anchor} prediction x (peak TFLOPS {anchor}/{g})^{exponent:.3g}, the exponent of a log-log fit "
                                 f"on ideal compute time over {'+'.join(measured)} (interval: the wider of both)")
    rows = [rows[g] for g in every]
    out = pd.DataFrame(rows)
    if not (out[["step_time_s", "lower_s", "upper_s"]].to_numpy() > 0).all():  # pragma: no cover - guarded by the fits
        bad = out.loc[~(out["step_time_s"] > 0), "gpu"].tolist()
        raise ValueError(f"The step-time model gives a non-positive step time for {name} on {bad}: the model is far outside "
                         "the training CNNs. Measure it instead (perfmodel.measure).")
    # consistency: non-increasing in peak TFLOPS (GPUs without a catalog rate are left as they are)
    rated = out["gpu"].map(tflops).notna().to_numpy()
    if rated.sum() > 1:
        t = out.loc[rated, "gpu"].map(tflops).to_numpy(float)
        w = np.where(out.loc[rated, "gpu"].isin(measured), 1e6, 1.0)
        logt = np.log(out.loc[rated, "step_time_s"].to_numpy(float))
        fitted = IsotonicRegression(increasing=False).fit(t, logt, sample_weight=w).predict(t)
        factor = np.exp(fitted - logt)
        idx = out.index[rated]
        for j, f in zip(idx, factor):
            if abs(f - 1) > 1e-6:
                out.loc[j, ["step_time_s", "lower_s", "upper_s"]] *= f
                out.loc[j, "basis"] += (f"; scaled x{f:.3g} so that no GPU with a higher peak TFLOPS is predicted slower "
                                        "(isotonic in peak TFLOPS)")
    out = out.set_index("gpu").loc[gpus].reset_index()
    _warn_step_time_extrapolation(feats, name, gpus, measured, tflops, train, batch_size)
    out["speed_steps_per_s"] = 1 / out["step_time_s"]
    return out[["model", "gpu", "step_time_s", "lower_s", "upper_s", "speed_steps_per_s", "basis"]]


def _warn_step_time_extrapolation(feats, name, gpus, measured, tflops, train, batch_size=PAPER_BATCH_SIZE):
    """One :class:`ExtrapolationWarning` listing how far the model and the GPUs lie outside the training data."""
    import warnings

    from perfmodel.features import load_zoo_features
    from perfmodel._extrapolation import how_far_outside

    z = load_zoo_features().set_index("model")
    seen = z.loc[sorted(set(train["model"].astype(str)) & set(z.index))]
    far = []
    for col in ("train_step_flops", "trainable_tensors"):
        if col in feats.columns and len(seen):
            v = float(feats[col].iloc[0])
            msg = how_far_outside(col, v, float(seen[col].min()), float(seen[col].max()), what="fitted model")
            if msg:
                far.append(msg + " (per sample)" if col == "train_step_flops" else msg)
    if "n_conv" in feats.columns and float(feats["n_conv"].iloc[0]) == 0 and "n_conv" in seen.columns and (seen["n_conv"] > 0).all():
        far.append(f"{name} has no convolution layers, the fits saw only CNNs ({len(seen)} of them)")
    if int(batch_size) != PAPER_BATCH_SIZE:
        far.append(f"batch size {int(batch_size)} (the fits saw batch {PAPER_BATCH_SIZE} only; the model's counts are scaled to "
                   f"{int(batch_size)}, a {int(batch_size) / PAPER_BATCH_SIZE:.3g}x change)")
    rates = [tflops[g] for g in measured if g in tflops]
    for g in gpus:
        if g in measured:
            continue
        where = ""
        if g in tflops and rates:
            where = how_far_outside("its peak TFLOPS", tflops[g], min(rates), max(rates), what="measured GPU") or \
                f"its peak TFLOPS {tflops[g]:.3g} is within the measured {min(rates):.3g}-{max(rates):.3g}"
            where = ": " + where
        far.append(f"GPU {g} has no measurements, predicted through peak TFLOPS from {'+'.join(measured)}{where}")
    if far:
        warnings.warn(f"predict_cmdare_step_time extrapolates for {name}: " + "; ".join(far) + ". Measure it to be sure (perfmodel.measure).",
                      ExtrapolationWarning, stacklevel=3)


def predict_step_time(*args, **kwargs) -> pd.DataFrame:
    """Deprecated: the old name of :func:`predict_cmdare_step_time` (CM-DARE's regressor), which shared its name with
    :func:`perfmodel.predict_step_time` (the per-operator model). Warns and answers as the new name; it will be
    removed in perfmodel 0.2."""
    import warnings

    warnings.warn("perfmodel.models.predict_step_time (CM-DARE's regressor on K80/P100 measurements) is now named "
                  "perfmodel.models.predict_cmdare_step_time; perfmodel.predict_step_time is the per-operator model for any "
                  "GPU. The old name will be removed in perfmodel 0.2.", DeprecationWarning, stacklevel=2)
    return predict_cmdare_step_time(*args, **kwargs)
