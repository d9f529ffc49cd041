"""CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out.

The figure refits on the measurements, so it takes no ``data`` frame (``perfmodel.figures.cpu_lomo(steps=...)`` takes other
measurements).

The paper's method on a device it never saw: CM-DARE-style step-time regressions fitted on perfmodel's own CPU
measurements of the twenty zoo CNNs (``datasets/measurements/``, :mod:`perfmodel.measure`), evaluated
leave-one-model-out.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from perfmodel.diagnostics.evaluation import leave_one_model_out
from perfmodel.models import ExtrapolationWarning
from perfmodel.models.step_time import StepTimeRegressor
from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.plotting import figure_size, paper_figure, plot_parity, subplots

ITEM = Item(
    paper="perfmodel",
    number="beyond CM-DARE prediction models",
    title="CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out",
    upstream="-",
    sources=("datasets/measurements (perfmodel's own CPU step times)",),
    procedure=("Leave-one-model-out evaluation of CM-DARE's step-time regressors on perfmodel's CPU measurements, "
               "per feature set."),
    status="perfmodel analysis",
    legacy_id="cpu_lomo",
    notebook="notebooks/10-cpu-measurements.ipynb",
    test="tests/papers/test_cpu_measurements.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


#: Feature sets compared (columns of :func:`cpu_step_times`), each with the linear and the log-log linear fit.
CPU_FEATURE_SETS = {
    "FLOPs (the paper's single feature)": ["train_step_gflops"],
    "FLOPs + trainable tensors": ["train_step_gflops", "trainable_tensors"],
    "FLOPs + activations + trainable tensors": ["train_step_gflops", "activation_mib", "trainable_tensors"],
}


def cpu_step_times(steps: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean step time per (model, batch size, threads) over the timed steps (warm-up and flagged outliers left out),
    joined with the model's graph features at that batch size.

    Parameters
    ----------
    steps : DataFrame, optional
        Rows of :func:`perfmodel.measure.measure_step_time` (default: the bundled ``cpu_steps`` measurements).

    Returns
    -------
    DataFrame
        ``model``, ``batch_size``, ``threads``, ``step_time_s``, ``n_steps``, ``train_step_gflops``,
        ``activation_mib``, ``trainable_tensors``, ``params_m``.
    """
    from perfmodel.features import load_zoo_features, scale_to_batch

    if steps is None:
        from perfmodel.datasets import load_cpu_measurements

        steps = load_cpu_measurements("steps")
    need = {"model", "batch_size", "threads", "warmup", "outlier", "step_time_s"}
    missing = sorted(need - set(steps.columns))
    if missing:
        raise ValueError(f"cpu_step_times needs the columns of perfmodel.measure.measure_step_time; missing {missing}.")
    timed = steps[~steps["warmup"].astype(bool) & ~steps["outlier"].astype(bool)]
    g = timed.groupby(["model", "batch_size", "threads"], as_index=False).agg(step_time_s=("step_time_s", "mean"), n_steps=("step_time_s", "size"))
    z = load_zoo_features().set_index("model")
    unknown = sorted(set(g["model"]) - set(z.index))
    if unknown:
        raise ValueError(f"No graph features for {unknown}: cpu_step_times joins the zoo table; measure zoo CNNs or pass their features.")
    f = z.loc[g["model"]]
    scaled = scale_to_batch(f[["train_step_flops", "activation_bytes"]], g["batch_size"].to_numpy(int))
    g["train_step_gflops"] = scaled["train_step_flops"].to_numpy(float) / 1e9
    g["activation_mib"] = scaled["activation_bytes"].to_numpy(float) / 2**20
    g["trainable_tensors"] = f["trainable_tensors"].to_numpy(float)
    g["params_m"] = f["params"].to_numpy(float) / 1e6
    return g


def cpu_lomo_data(steps: pd.DataFrame | None = None) -> pd.DataFrame:
    """Leave-one-model-out MAPE / MAE / RMSE per (batch size, threads, feature set, fit): one regression per
    configuration, each CNN predicted by a model fitted on the other nineteen."""
    d = cpu_step_times(steps)
    rows = []
    for (b, t), grp in d.groupby(["batch_size", "threads"]):
        grp = grp.reset_index(drop=True)
        if grp["model"].nunique() < 3:
            continue
        for label, cols in CPU_FEATURE_SETS.items():
            for log in (False, True):
                r = leave_one_model_out(grp, StepTimeRegressor(method="linear", log_transform=log), cols).query("model == 'all'").iloc[0]
                rows.append(dict(batch_size=int(b), threads=int(t), features=label, fit="log-log linear" if log else "linear",
                                 n_models=grp["model"].nunique(), mape_pct=float(r["mape_pct"]), mae_s=float(r["mae"]), rmse_s=float(r["rmse"])))
    return pd.DataFrame(rows)


@paper_figure
def cpu_lomo(steps: pd.DataFrame | None = None, *, features: str = "FLOPs + activations + trainable tensors", log: bool = True, ax=None):
    """Predicted (leave-one-model-out) vs measured CPU step time of every CNN, one colour per (batch, threads)."""
    if features not in CPU_FEATURE_SETS:
        raise ValueError(f"features must be one of {list(CPU_FEATURE_SETS)}; got {features!r}.")
    d = cpu_step_times(steps)
    cols = CPU_FEATURE_SETS[features]
    fig, ax, own = subplots(ax, figsize=figure_size("column", 3.0))
    parts = []
    for (b, t), grp in d.groupby(["batch_size", "threads"]):
        grp = grp.reset_index(drop=True)
        pred = np.empty(len(grp))
        for i in range(len(grp)):
            tr = grp.index != i
            est = StepTimeRegressor(method="linear", log_transform=log).fit(grp.loc[tr, cols], grp.loc[tr, "step_time_s"])
            with warnings.catch_warnings():  # leave-one-model-out: the held-out CNN is outside the fit by design
                warnings.simplefilter("ignore", ExtrapolationWarning)
                pred[i] = est.predict(grp.loc[[i], cols])[0]
        parts.append(pd.DataFrame({"measured": grp["step_time_s"].to_numpy(float), "predicted": pred,
                                   "configuration": f"batch {b}, {t} thread{'s' if t > 1 else ''}"}))
    plot_parity(pd.concat(parts, ignore_index=True), x="measured", y="predicted", hue="configuration", log=log, s=12, alpha=1.0, ax=ax)
    ax.set(xlabel="Measured CPU step time (s)", ylabel="Predicted, leave-one-model-out (s)")
    if own:
        fig.tight_layout()
    return fig


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.cpu_lomo_data``)."""
    return cpu_lomo_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: the leave-one-model-out MAPE per batch size, threads, feature set and fit
    (``COMPARISON_COLUMNS``, no paper value, status ``PERFMODEL-RESULT``, the protocol in ``reason``), from :func:`data`."""
    rows = []
    for r in data().itertuples(index=False):
        threads = f"{r.threads} thread{'s' if r.threads > 1 else ''}"
        rows.append(dict(quantity=f"lomo_mape_pct (batch {r.batch_size}, {threads}, {r.features}, {r.fit})", unit="pct", value=r.mape_pct,
                         protocol=f"leave-one-model-out over the {r.n_models} zoo CNNs timed on perfmodel's CPU at batch {r.batch_size}, "
                                  f"{threads}: each CNN predicted by a {r.fit} StepTimeRegressor fitted on the others, features "
                                  f"{', '.join(CPU_FEATURE_SETS[r.features])}; MAPE from perfmodel.diagnostics.metrics"))
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return cpu_lomo(ax=ax)
