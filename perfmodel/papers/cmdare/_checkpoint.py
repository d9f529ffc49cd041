"""CM-DARE's checkpoint-time results recomputed from the data, and the checkpoint figures.

* ``checkpoint_prediction_data()`` — paper value next to reproduced value for every checkpoint number;
* ``ckpt_duration_size_correlation()`` — upload-time mean vs checkpoint size, bubble area = 800 × coefficient of variation
  (``aggregated.csv``; its "Duration mean (s)" is the mean of Diff = Duration − Local duration);
* ``figure_12()`` — mean checkpoint duration vs size of the 20 CNNs (the notebook's inline ``dat3``/``dat4``).

The reported (MAPE, MAE, RMSE) of the final ``whole_data.csv`` models are held back from the catalog; they are computed
here (rows without a paper value).
"""
from __future__ import annotations

from perfmodel.plotting import figure_size, paper_figure, plot_scatter, subplots

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.svm import SVR

from perfmodel import datasets as ds
from perfmodel.papers._numbers import compare_with_paper
from perfmodel.diagnostics.metrics import mae, mape, rmse
from perfmodel.models.checkpoint import PAPER_CKPT_SVR

__all__ = ["reproduce_checkpoint_numbers", "checkpoint_prediction_data", "ckpt_duration_size_correlation_data",
           "ckpt_duration_size_correlation", "figure_12_data", "figure_12"]


def reproduce_checkpoint_numbers() -> dict[str, float]:
    """Recompute every checkpoint number quoted by the paper (keys = ``quantity`` of ``paper_numbers/checkpoint.csv``)."""
    out: dict[str, float] = {}
    ck = ds.load_checkpoint_summary()
    lr = LinearRegression().fit(ck[["checkpoint_mb"]], ck["duration_mean_s"])
    out["ckpt_lr_r2"] = lr.score(ck[["checkpoint_mb"]], ck["duration_mean_s"])
    out["ckpt_lr_slope_s_per_mb"], out["ckpt_lr_intercept_s"] = float(lr.coef_[0]), float(lr.intercept_)
    test = ds.load_transcribed("checkpoint_test_models")
    test = test[test["usage"] == "ckpt_lr_test_set"]
    p = lr.predict(test[["checkpoint_size_mb"]].rename(columns={"checkpoint_size_mb": "checkpoint_mb"}))
    y = test["checkpoint_duration_mean_s"].to_numpy()
    out["ckpt_lr_test_mae_s"] = mae(y, p)
    out["ckpt_lr_test_mse_s2"] = float(np.mean((y - p) ** 2))
    for i, e in enumerate(np.abs(p - y) / y):
        out[f"ckpt_lr_test_rel_error_{i}"] = float(e)

    tr, te = ds.load_checkpoint_samples("training"), ds.load_checkpoint_samples("test")
    m = LinearRegression().fit(tr[["checkpoint_mb"]], tr["duration_s"])
    out["unagg_duration_lr_r2"] = m.score(tr[["checkpoint_mb"]], tr["duration_s"])
    out["unagg_duration_lr_test_mae_s"] = mae(te["duration_s"], m.predict(te[["checkpoint_mb"]]))
    files = ["meta_file_mb", "weight_file_mb"]
    m = LinearRegression().fit(tr[files], tr["local_duration_s"])
    out["unagg_local_lr_r2"] = m.score(tr[files], tr["local_duration_s"])
    out["unagg_local_lr_test_mae_s"] = mae(te["local_duration_s"], m.predict(te[files]))
    cols = ["weight_file_mb", "meta_file_mb", "index_file_kb"]
    pca = PCA(2).fit(tr[cols])
    m = LinearRegression().fit(pca.transform(tr[cols]), tr["duration_s"])
    out["unagg_pca_lr_r2"] = m.score(pca.transform(tr[cols]), tr["duration_s"])
    out["unagg_pca_lr_test_mae_s"] = mae(te["duration_s"], m.predict(pca.transform(te[cols])))
    m = LinearRegression().fit(tr[["checkpoint_mb"]], tr["local_duration_s"])
    out["unagg_local_size_lr_r2"] = m.score(tr[["checkpoint_mb"]], tr["local_duration_s"])
    sv = SVR(kernel="rbf", C=10, gamma="auto", epsilon=0.15).fit(tr[["checkpoint_mb"]], tr["duration_s"])
    out["unagg_svr_test_mae_s"] = mae(te["duration_s"], sv.predict(te[["checkpoint_mb"]]))

    whole = ds.load_checkpoint_samples()
    Xtr, Xte, ytr, yte = train_test_split(whole[["checkpoint_mb"]], whole["duration_s"], test_size=0.2, random_state=0)
    for name, est in (("lr", LinearRegression()), ("svr", SVR(**PAPER_CKPT_SVR))):
        est.fit(Xtr, ytr)
        pr = est.predict(Xte)
        out[f"whole_{name}_cv_r2"] = float(np.mean(cross_val_score(type(est)(**est.get_params()), Xtr, ytr, cv=10)))
        out[f"whole_{name}_test_mape_pct"], out[f"whole_{name}_test_mae_s"], out[f"whole_{name}_test_rmse_s"] = mape(yte, pr), mae(yte, pr), rmse(yte, pr)
        if name == "lr":
            out["whole_lr_slope_s_per_mb"], out["whole_lr_intercept_s"] = float(est.coef_[0]), float(est.intercept_)
            out["whole_lr_pred_resnet32_s"] = float(est.predict(pd.DataFrame({"checkpoint_mb": [15.99]}))[0])
        else:
            out["whole_svr_pred_shakebig_s"] = float(est.predict(pd.DataFrame({"checkpoint_mb": [204.04]}))[0])
    return out


def checkpoint_prediction_data() -> pd.DataFrame:
    """Paper value, reproduced value, status and tolerance of every checkpoint number."""
    return compare_with_paper("checkpoint", reproduce_checkpoint_numbers())


def ckpt_duration_size_correlation_data() -> pd.DataFrame:
    """20 rows of ``aggregated.csv``: ``model``, ``checkpoint_mb``, ``upload_duration_mean_s``, ``upload_duration_cv``."""
    return ds.load_checkpoint_summary("aggregated")[["model", "checkpoint_mb", "upload_duration_mean_s", "upload_duration_cv"]]


@paper_figure
def ckpt_duration_size_correlation(data: pd.DataFrame | None = None, *, ax=None):
    """Scatter of upload-time mean vs size, marker area = 800 × CV, ylim 0–8 (ckpt notebook cell 39)."""
    d = ckpt_duration_size_correlation_data() if data is None else data
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.2))
    plot_scatter(d, x="checkpoint_mb", y="upload_duration_mean_s", size="upload_duration_cv", size_scale=800, alpha=0.5, ax=ax)
    ax.set(xlabel="Checkpoint size (MB)", ylabel="Duration mean (s)", ylim=(0, 8))
    if own:
        fig.tight_layout()
    return fig


def figure_12_data() -> pd.DataFrame:
    """The 20 (size, duration) points of ``figure_12.pdf`` (redraws cell 18, transcribed)."""
    t = ds.load_transcribed("checkpoint_test_models")
    return t[t["usage"] == "figure_12"][["model", "model_set", "checkpoint_size_mb", "checkpoint_duration_mean_s"]].reset_index(drop=True)


@paper_figure
def figure_12(data: pd.DataFrame | None = None, *, ax=None):
    """Mean checkpoint duration vs size, training CNNs 'o' and test CNNs '^' (one column wide)."""
    d = figure_12_data() if data is None else data
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.2))
    plot_scatter(d, x="checkpoint_size_mb", y="checkpoint_duration_mean_s", hue="model_set", markers={"training": "o", "test": "^"},
                 alpha=1.0, ax=ax)
    ax.set(xlabel="Checkpoint size (MB)", ylabel="Duration mean (s)")
    if own:
        fig.tight_layout()
    return fig
