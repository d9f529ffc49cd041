"""Evaluation protocols of the cluster-speed models (:mod:`perfmodel.models.cluster`) on CM-DARE's 96 cluster runs.

* :func:`cluster_model_errors` — per configuration (GPU, #PS, CNN): the PS model fitted on some cluster sizes and
  scored on all, each size predicted from the others (leave-one-size-out), and the paper's linear baseline
  ``S(n) = n · S(1)`` from the 1-worker run;
* :func:`shared_ps_terms_errors` — leave-one-CNN-out: a CNN's cluster speeds predicted from the other CNNs' runs and
  its own 1-worker step time, through the PS terms shared by every CNN of a GPU and scaled by parameter size.

Errors are absolute percentage errors (:func:`perfmodel.diagnostics.metrics.ape`) of speed, in steps/s.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.datasets import cluster_speeds
from perfmodel.diagnostics.metrics import ape
from perfmodel.models.cluster import ClusterSpeedModel, predict_cluster_speed

__all__ = ["cluster_model_errors", "shared_ps_terms_errors"]

_NEED = ["gpu", "n_ps", "model", "n_workers", "speed_mean_steps_per_s"]


def _speeds(speeds: pd.DataFrame | None, name: str) -> pd.DataFrame:
    d = cluster_speeds() if speeds is None else speeds
    missing = [c for c in _NEED if c not in d.columns]
    if missing:
        raise ValueError(f"{name}: speeds lacks {missing}; expected one row per cluster run with {_NEED} "
                         "(perfmodel.datasets.cluster_speeds()).")
    return d


def cluster_model_errors(speeds: pd.DataFrame | None = None, *, train_sizes=(1, 2, 4, 8)) -> pd.DataFrame:
    """Errors of the PS model and of the linear baseline per configuration (gpu, n_ps, model), by protocol.

    Parameters
    ----------
    speeds : DataFrame, optional
        Per-run speeds (default :func:`perfmodel.datasets.cluster_speeds`).
    train_sizes : iterable of int
        Cluster sizes the ``fit_sizes`` protocol fits on.

    Returns
    -------
    DataFrame
        ``gpu``, ``n_ps``, ``model``, ``protocol``, ``mape_pct``, ``max_ape_pct``. Protocols: ``fit_sizes`` — fitted
        on ``train_sizes`` workers, MAPE over all sizes 1..8; ``leave_one_size_out`` — each size predicted from the
        others, MAPE over the held-out predictions; ``linear_baseline`` — ``n · S(1)`` from the 1-worker run.
    """
    d = _speeds(speeds, "cluster_model_errors")
    rows = []
    for (gpu, ps, model), g in d.groupby(["gpu", "n_ps", "model"]):
        X = g[["n_workers", "n_ps"]].to_numpy(float)
        y = g["speed_mean_steps_per_s"].to_numpy(float)
        tr = np.isin(X[:, 0], list(train_sizes))
        if tr.sum() < 2:
            raise ValueError(f"cluster_model_errors: {gpu}/{ps} PS/{model} has {int(tr.sum())} run(s) at train_sizes {list(train_sizes)}; "
                             "the PS model needs at least 2 cluster sizes to fit.")
        e_fit = ape(y, ClusterSpeedModel().fit(X[tr], y[tr]).predict(X))
        held = [ClusterSpeedModel().fit(X[X[:, 0] != n], y[X[:, 0] != n]).predict(X[X[:, 0] == n])[0] for n in X[:, 0]]
        e_lo = ape(y, held)
        one = X[:, 0] == X[:, 0].min()
        e_lin = ape(y, ClusterSpeedModel(kind="linear").fit(X[one], y[one]).predict(X))
        for proto, e in (("fit_sizes", e_fit), ("leave_one_size_out", e_lo), ("linear_baseline", e_lin)):
            rows.append(dict(gpu=gpu, n_ps=ps, model=model, protocol=proto, mape_pct=float(e.mean()), max_ape_pct=float(e.max())))
    return pd.DataFrame(rows)


def shared_ps_terms_errors(speeds: pd.DataFrame | None = None) -> pd.DataFrame:
    """Leave-one-CNN-out check of the size-scaled PS terms (:func:`perfmodel.models.fit_shared_ps_terms`).

    Each CNN's cluster speeds (all sizes and PS counts of a GPU) are predicted by
    :func:`perfmodel.models.predict_cluster_speed` from the other CNNs' runs and its own measured 1-worker, 1-PS step
    time. Returns ``gpu``, ``model``, ``mape_pct``, ``max_ape_pct``, ``n_runs``.
    """
    d = _speeds(speeds, "shared_ps_terms_errors")
    rows = []
    for (g, m), te in d.groupby([d["gpu"].astype(str), d["model"].astype(str)]):
        tr = d[~((d["gpu"].astype(str) == g) & (d["model"].astype(str) == m))]
        one = te[(te["n_workers"] == 1) & (te["n_ps"] == 1)]
        if one.empty:
            raise ValueError(f"shared_ps_terms_errors: {g}/{m} has no 1-worker, 1-PS run; its single-worker step time anchors the prediction.")
        pred = predict_cluster_speed(m, g, workers=sorted(set(te["n_workers"])), n_ps=sorted(set(te["n_ps"])),
                                     single_worker_step_s=1 / float(one["speed_mean_steps_per_s"].iloc[0]), speeds=tr)
        mm = pred.merge(te, on=["n_workers", "n_ps"])
        e = ape(mm["speed_mean_steps_per_s"], mm["speed_steps_per_s"])
        rows.append(dict(gpu=g, model=m, mape_pct=float(e.mean()), max_ape_pct=float(e.max()), n_runs=len(mm)))
    return pd.DataFrame(rows)
