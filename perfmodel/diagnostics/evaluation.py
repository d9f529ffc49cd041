"""Evaluation protocols for step-time (and other) regressors, each returning a tidy frame of errors.

* :func:`paper_split` — CM-DARE's: ``shuffle(data, random_state=0)``, then ``train_test_split(test_size=0.2,
  random_state=0)``, plus ``cross_val_score(cv=10)`` (unshuffled KFold) on the training part. Rows of one CNN land in
  both parts, so the test error says little about an unseen CNN (it leaks).
* :func:`kfold_cv` — k-fold CV over rows, as the notebooks ran it (unshuffled) or shuffled.
* :func:`unseen_model_test` — train on some CNNs, test on others (CM-DARE: 16 train / 4 held out).
* :func:`leave_one_model_out` — each CNN in turn is the test set; no sample of it is in training.
* :func:`cross_gpu` — train on some GPUs, predict another.

Every function takes a DataFrame with a target column (default ``step_time_s``), an unfitted scikit-learn estimator
(cloned per fold), and feature columns; errors are from :mod:`perfmodel.diagnostics.metrics`. A held-out model or GPU
lies outside the training data by design: the estimators' :class:`~perfmodel.models.ExtrapolationWarning` is silenced
inside the protocols (the error they measure is what it warns about).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import KFold, cross_val_score, train_test_split
from sklearn.utils import shuffle

from perfmodel.diagnostics.metrics import percent_error, regression_report


def _protocol(func):
    """Run an evaluation protocol with the estimators' extrapolation warnings silenced (held-out data is outside the
    fitted range by design)."""
    import functools
    import warnings

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from perfmodel.models import ExtrapolationWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtrapolationWarning)
            return func(*args, **kwargs)

    return wrapper

__all__ = ["paper_split", "kfold_cv", "unseen_model_test", "leave_one_model_out", "cross_gpu", "predictions_frame"]


def _check(data: pd.DataFrame, features, target: str, group: str | None = None) -> list[str]:
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"evaluation protocols take a pandas DataFrame; got {type(data).__name__}.")
    cols = [features] if isinstance(features, str) else list(features)
    need = [*cols, target] + ([group] if group else [])
    missing = [c for c in need if c not in data.columns]
    if missing:
        raise ValueError(f"data lacks the column(s) {missing}; it has {list(map(str, data.columns))}.")
    bad = data[[*cols, target]].isna().any()
    if bad.any():
        raise ValueError(f"data has NaN in {list(bad[bad].index)}; drop or impute those rows first.")
    if (data[target] <= 0).any():
        raise ValueError(f"{target} must be positive (times in seconds); {int((data[target] <= 0).sum())} value(s) are <= 0.")
    return cols


def _row(protocol: str, y, p, **extra) -> dict:
    rep = regression_report(y, p)
    return {"protocol": protocol, **extra, "n_test": int(rep["n"]), "mape_pct": rep["mape_pct"], "mae": rep["mae"], "rmse": rep["rmse"], "r2": rep["r2"]}


@_protocol
def predictions_frame(data, estimator, features, *, target="step_time_s", train_mask=None) -> pd.DataFrame:
    """Fit on ``train_mask`` rows and predict the others: the test rows with ``predicted`` and ``error_pct`` (signed)."""
    cols = _check(data, features, target)
    train = data[train_mask] if train_mask is not None else data
    test = data[~train_mask] if train_mask is not None else data
    est = clone(estimator).fit(train[cols], train[target])
    out = test.copy()
    out["predicted"] = est.predict(test[cols])
    out["error_pct"] = percent_error(out[target], out["predicted"])
    return out


@_protocol
def paper_split(data, estimator, features, *, target="step_time_s", random_state=0, test_size=0.2, cv=10) -> pd.DataFrame:
    """CM-DARE's protocol (sp2 cells 22–38): shuffle rows (``random_state``), 80/20 split (same seed), ``cv``-fold CV R².

    Returns a one-row frame: ``protocol``, ``n_train``, ``n_test``, ``mape_pct``, ``mae``, ``rmse``, ``r2`` (test),
    ``cv_r2_mean`` (mean of ``cross_val_score`` on the training part, unshuffled KFold), and the fitted estimator in
    ``frame.attrs["estimator"]``.
    """
    cols = _check(data, features, target)
    d = shuffle(data, random_state=random_state)
    X, y = d[cols], d[target]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, random_state=random_state)
    est = clone(estimator).fit(Xtr, ytr)
    p = est.predict(Xte)
    row = _row("paper_split", yte, p, n_train=len(ytr))
    row["cv_r2_mean"] = float(np.mean(cross_val_score(clone(estimator), Xtr, ytr, cv=cv))) if cv else np.nan
    out = pd.DataFrame([row])
    out.attrs["estimator"] = est
    return out


@_protocol
def kfold_cv(data, estimator, features, *, target="step_time_s", n_splits=10, shuffle_rows=False, random_state=None) -> pd.DataFrame:
    """K-fold cross-validation over rows: one row per fold plus a ``fold == "all"`` row pooling every test prediction."""
    cols = _check(data, features, target)
    kf = KFold(n_splits=n_splits, shuffle=shuffle_rows, random_state=random_state if shuffle_rows else None)
    rows, ys, ps = [], [], []
    for i, (tr, te) in enumerate(kf.split(data)):
        est = clone(estimator).fit(data.iloc[tr][cols], data.iloc[tr][target])
        p = est.predict(data.iloc[te][cols])
        y = data.iloc[te][target].to_numpy()
        rows.append(_row("kfold", y, p, fold=str(i)))
        ys.append(y)
        ps.append(p)
    rows.append(_row("kfold", np.concatenate(ys), np.concatenate(ps), fold="all"))
    return pd.DataFrame(rows)


@_protocol
def unseen_model_test(train, test, estimator, features, *, target="step_time_s") -> pd.DataFrame:
    """Train on one frame, test on another (CM-DARE: 16 training CNNs → the 4 held-out CNNs); one row per test model + ``all``."""
    cols = _check(train, features, target)
    _check(test, features, target)
    overlap = set(train.get("model", pd.Series(dtype=str)).astype(str)) & set(test.get("model", pd.Series(dtype=str)).astype(str))
    if overlap:
        raise ValueError(f"unseen_model_test: models {sorted(overlap)} are in both train and test; that is not an unseen-model test.")
    est = clone(estimator).fit(train[cols], train[target])
    p = est.predict(test[cols])
    rows = []
    if "model" in test:
        for m, idx in test.groupby(test["model"].astype(str)).groups.items():
            sel = test.index.get_indexer(idx)
            rows.append(_row("unseen_model", test[target].to_numpy()[sel], p[sel], model=m))
    rows.append(_row("unseen_model", test[target], p, model="all"))
    return pd.DataFrame(rows)


@_protocol
def leave_one_model_out(data, estimator, features, *, target="step_time_s", group="model") -> pd.DataFrame:
    """Each model in turn is the test set (no sample of it in training); one row per model plus a pooled ``all`` row."""
    cols = _check(data, features, target, group)
    groups = data[group].astype(str)
    if groups.nunique() < 2:
        raise ValueError(f"leave_one_model_out needs at least two distinct values of {group!r}; got {groups.nunique()}.")
    rows, ys, ps = [], [], []
    for m in pd.unique(groups):
        te = groups == m
        est = clone(estimator).fit(data.loc[~te, cols], data.loc[~te, target])
        p = est.predict(data.loc[te, cols])
        y = data.loc[te, target].to_numpy()
        rows.append(_row("leave_one_model_out", y, p, model=m))
        ys.append(y)
        ps.append(p)
    rows.append(_row("leave_one_model_out", np.concatenate(ys), np.concatenate(ps), model="all"))
    return pd.DataFrame(rows)


@_protocol
def cross_gpu(train, test, estimator, features, *, target="step_time_s") -> pd.DataFrame:
    """Train on some GPUs, predict others (``gpu`` column): one row per test GPU and model, plus ``all``."""
    cols = _check(train, features, target, "gpu")
    _check(test, features, target, "gpu")
    shared = set(train["gpu"].astype(str)) & set(test["gpu"].astype(str))
    if shared:
        raise ValueError(f"cross_gpu: GPU(s) {sorted(shared)} are in both train and test; that is not a cross-GPU test.")
    est = clone(estimator).fit(train[cols], train[target])
    p = est.predict(test[cols])
    rows = []
    keys = ["gpu", "model"] if "model" in test else ["gpu"]
    for key, idx in test.groupby([test[k].astype(str) for k in keys]).groups.items():
        sel = test.index.get_indexer(idx)
        key = key if isinstance(key, tuple) else (key,)
        rows.append(_row("cross_gpu", test[target].to_numpy()[sel], p[sel], **dict(zip(keys, key))))
    rows.append(_row("cross_gpu", test[target], p, **{k: "all" for k in keys}))
    return pd.DataFrame(rows)
