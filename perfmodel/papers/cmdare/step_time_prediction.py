"""Speed-prediction results: LR / SVR per GPU, GPU-agnostic, unseen models, sp1, supertable.

K80 LinearRegression MAPE 19.063 %, SVR(poly, degree 2, C=100, epsilon 0.01, coef0 1) 9.958 %; P100 LinearRegression 22.275 %.
The supertable design matrix is rank-deficient (4 model-level columns take only 4 distinct rows), so its coefficients are not unique:
``numpy.linalg.lstsq`` reproduces R2 0.80104, scikit-learn's LinearRegression does not. Stale stored outputs (the supertable split MAE,
``0latency_p100.csv`` after the file changed) are reported as differing with that reason. The README's "as low as 3.4 % MAPE" is
found in no notebook output. The figure is drawn from a fit, so it takes no ``data``.

CM-DARE's step-time prediction results: every number recomputed from the data.

``speed_prediction_data()`` → one row per reported quantity with the paper's value, the reproduced value, the
tolerance and a status; ``speed_prediction()`` → predicted vs measured step time of the paper's per-GPU models.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures
from sklearn.svm import SVR
from sklearn.utils import shuffle

from perfmodel import datasets as ds
from perfmodel.diagnostics.evaluation import paper_split
from perfmodel.diagnostics.metrics import mae, mape
from perfmodel.models.step_time import (
    PAPER_SVR_POLY,
    StepTimeRegressor,
    exponential_speed_fit,
    quadratic_fit,
)
from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers._numbers import compare_with_paper
from perfmodel.plotting import figure_size, paper_figure, plot_parity, subplots

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources (results likely a table)",
    title="Speed-prediction results: LR / SVR per GPU, GPU-agnostic, unseen models, sp1, supertable",
    upstream="sp2 cells 5-38, sp1 (Sigmetrics2020_speed_prediction.ipynb)",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/0latency_k80_new.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_p100_new2.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_norm_computation.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_data.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/0latency_k80_test.csv",
             "cake-lab/CM-DARE: data/processed_data/speed_data/speed_data_supertable.csv"),
    procedure=("Shuffle with random_state=0, then train_test_split(test_size=0.2, random_state=0); X = Normalized "
               "Model (per GPU) or Model/GPU (GPU-agnostic), y = Step Time (s); MAPE = mean(|(y - y_hat)/y|)*100; "
               "10-fold unshuffled KFold CV R2 on the training part. Unseen models: fit on the 16 K80 CNNs, test "
               "on the 4 held-out CNNs."),
    status="EXACT-DATA (one SVR grid result differs)",
    numbers_area="speed",
    legacy_id="speed_prediction",
    variants=({"gpu": "K80", "method": "linear"}, {"gpu": "P100", "method": "linear"}),
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_prediction_numbers.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def _split_block(prefix: str, data, est, cols, out: dict, *, coefs: bool) -> None:
    r = paper_split(data, est, cols).iloc[0]
    out[f"{prefix}_mape_pct"] = r["mape_pct"]
    out[f"{prefix}_mae_s"] = r["mae"]
    out[f"{prefix}_rmse_s"] = r["rmse"]
    out[f"{prefix}_cv_r2"] = r["cv_r2_mean"]
    if coefs:
        fitted = paper_split(data, est, cols, cv=0).attrs["estimator"]
        out[f"{prefix}_slope_s"] = float(fitted.coef_[0])
        out[f"{prefix}_intercept_s"] = float(fitted.intercept_)


def _sp1(name: str, col: str):
    d = ds.load_speed_file(name)
    X, y = d[[col]], d["step_time_s"]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
    m = LinearRegression().fit(Xtr, ytr)
    return m, X, y, Xte, yte


def reproduce_speed_numbers() -> dict[str, float]:
    """Recompute every speed-prediction number quoted by the paper from the data (keys = ``quantity`` of ``speed.csv``)."""
    out: dict[str, float] = {}
    svr = SVR(**PAPER_SVR_POLY)
    k80, p100 = ds.load_speed_file("k80_new"), ds.load_speed_file("p100_new2")
    _split_block("k80_lr", k80, LinearRegression(), ["normalized_model"], out, coefs=True)
    _split_block("k80_svr", k80, svr, ["normalized_model"], out, coefs=False)
    _split_block("p100_lr", p100, LinearRegression(), ["normalized_model"], out, coefs=True)
    _split_block("p100_svr", p100, svr, ["normalized_model"], out, coefs=False)
    nc = ds.load_speed_file("norm_computation")
    _split_block("agnostic_lr", nc, LinearRegression(), ["normalized_computation"], out, coefs=True)
    _split_block("two_feature_lr", nc, LinearRegression(), ["normalized_model", "gpu_tflops"], out, coefs=False)

    # unseen-model test (sp2 cells 7–13): train on the 16 K80 CNNs of 0latency_data.csv (the notebook's shuffled
    # frame, random_state 0, K80 rows), test on the 4 held-out CNNs
    data = ds.load_speed_file("data")
    train = shuffle(data, random_state=0)
    train = train[train["gpu"] == "K80"]
    test = ds.load_speed_file("k80_test")
    xtr, ytr = train["normalized_model"].to_numpy(), train["step_time_s"].to_numpy()
    xte, yte = test["normalized_model"].to_numpy(), test["step_time_s"].to_numpy()
    a, b, c = quadratic_fit(xtr, ytr)
    out.update(unseen_quadratic_a_s=a, unseen_quadratic_b_s=b, unseen_quadratic_c_s=c)
    quad = a + b * xte + c * xte**2
    out["unseen_quadratic_mae_s"] = mae(yte, quad)
    out["unseen_quadratic_mape_pct"] = mape(yte, quad)
    poly = make_pipeline(PolynomialFeatures(2), LinearRegression()).fit(train[["normalized_model"]], ytr)
    out["unseen_poly2_lr_mae_s"] = mae(yte, poly.predict(test[["normalized_model"]]))
    rbf = SVR(kernel="rbf", C=100, gamma="auto", epsilon=0.04)
    out["unseen_svr_rbf_cv_r2"] = float(np.mean(cross_val_score(clone(rbf), train[["normalized_model"]], ytr, cv=10)))
    pr = clone(rbf).fit(train[["normalized_model"]], ytr).predict(test[["normalized_model"]])
    out["unseen_svr_rbf_mae_s"] = mae(yte, pr)
    out["unseen_svr_rbf_mape_pct"] = mape(yte, pr)

    # exponential speed fit on all 416 rows (sp2 cell 5)
    ea, ej, ek = exponential_speed_fit(data["normalized_computation"], data["speed_steps_per_s"])
    out.update(exponential_a_steps_per_s=ea, exponential_j_steps_per_s=ej, exponential_k=ek)

    # earlier models (sp1): R² is the split model scored on all rows; signed errors use np.std (ddof=0)
    full = LinearRegression().fit(data[["normalized_computation"]], data["step_time_s"])
    out["sp1_full_r2"] = full.score(data[["normalized_computation"]], data["step_time_s"])
    out["sp1_slope_s"], out["sp1_intercept_s"] = float(full.coef_[0]), float(full.intercept_)
    m, X, y, Xte, yte1 = _sp1("data", "normalized_computation")
    p = m.predict(Xte)
    err = (p - yte1.to_numpy()) / yte1.to_numpy() * 100
    out.update(sp1_split_r2=m.score(X, y), sp1_split_mae_s=mae(yte1, p), sp1_signed_error_mean_pct=float(np.mean(err)),
               sp1_signed_error_std_pct=float(np.std(err)), sp1_rows_over_100pct=float(np.sum(err > 100)), sp1_abs_mape_pct=mape(yte1, p))
    Xtr2, Xte2, ytr2, yte2 = train_test_split(data[["normalized_gpu", "normalized_model"]], data["step_time_s"], test_size=0.2, random_state=0)
    out["sp1_two_feature_mae_s"] = mae(yte2, LinearRegression().fit(Xtr2, ytr2).predict(Xte2))
    for key, name, col in (("shake_p", "shake_p", "normalized_computation_subset"), ("k80", "k80", "normalized_model"), ("p100", "p100", "normalized_model")):
        m, X, y, Xte, yte3 = _sp1(name, col)
        out[f"sp1_{key}_r2"] = m.score(X, y)
        out[f"sp1_{key}_mae_s"] = mae(yte3, m.predict(Xte))

    # multi-feature supertable: rank-deficient, solved by least squares (numpy.linalg.lstsq)
    st = ds.load_speed_supertable()
    cols = ["gpu_tflops", "model_flops_alt", "latency_ms", "avg_tensor_mib", "max_tensor_mib", "n_params"]
    A = np.column_stack([st[cols].to_numpy(float), np.ones(len(st))])
    coef, *_ = np.linalg.lstsq(A, st["step_time_s"].to_numpy(), rcond=None)
    resid = st["step_time_s"].to_numpy() - A @ coef
    yy = st["step_time_s"].to_numpy()
    out["supertable_r2"] = float(1 - resid @ resid / ((yy - yy.mean()) @ (yy - yy.mean())))
    out["supertable_rank"] = float(np.linalg.matrix_rank(A))
    out["supertable_sklearn_r2"] = LinearRegression().fit(st[cols], st["step_time_s"]).score(st[cols], st["step_time_s"])
    return out


def speed_prediction_data() -> pd.DataFrame:
    """Paper value next to reproduced value for every speed-prediction number.

    Returns
    -------
    DataFrame
        ``quantity``, ``unit``, ``paper_value``, ``reproduced``, ``status`` (EXACT / SOLVER / STALE), ``rtol``,
        ``atol``, ``within_tolerance``, ``reason``, ``citation``; plus rows with no paper value (P100 SVR errors —
        held back —, re-run values of stale or solver-dependent numbers, MAPEs the paper does not print).
    """
    return compare_with_paper("speed", reproduce_speed_numbers())


@paper_figure
def speed_prediction(*, gpu: str = "K80", method: str = "linear", ax=None):
    """Predicted vs measured step time of CM-DARE's per-GPU model on the paper's 20 % test split.

    Returns a matplotlib Figure (measured on x, predicted on y, identity line).
    """
    data = ds.load_speed_file("k80_new" if ds.canonical_gpu(gpu) == "K80" else "p100_new2")
    est = StepTimeRegressor(method=method)
    fitted = paper_split(data, est, ["normalized_model"], cv=0).attrs["estimator"]
    d = shuffle(data, random_state=0)
    _, Xte, _, yte = train_test_split(d[["normalized_model"]], d["step_time_s"], test_size=0.2, random_state=0)
    fig, ax, own = subplots(ax, figsize=figure_size("column", 3.0))
    plot_parity(pd.DataFrame({"measured": yte.to_numpy(), "predicted": fitted.predict(Xte)}), x="measured", y="predicted", ax=ax)
    ax.set(xlabel="Measured step time (s)", ylabel="Predicted step time (s)", title=f"{ds.canonical_gpu(gpu)}, {method}")
    if own:
        fig.tight_layout()
    return fig


def data(gpu="K80", method="linear") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_prediction_data``)."""
    return speed_prediction_data(gpu=gpu, method=method)


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``speed`` area (rows of other items name them in ``item``)."""
    return speed_prediction_data()


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80", method="linear"):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return speed_prediction(gpu=gpu, method=method, ax=ax)
